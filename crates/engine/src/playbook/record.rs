//! `playbook_record`: how each skill has done, from the usage log. It writes nothing.
//!
//! For each skill: how often it was read (and how many reads did not go through), how often a
//! use of it was reported as going wrong, in how many turns, and whether its live revision has
//! done better or worse than the one it replaced. That last answer is Fisher's exact test,
//! one-sided, on corrections per read of the two revisions (`mindrune_core::playbook::fisher`); with
//! fewer than `MIN_READS` reads on either side it is too early to say.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use mindrune_core::Status;
use mindrune_core::{Comparison, MIN_READS, Verdict, compare_revisions};

use super::cost;
use super::layout;
use super::{PlaybookError, Playbooks};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RevisionRecord {
    pub version: u32,
    /// Reads that went through.
    pub reads: u64,
    pub failed_reads: u64,
    pub corrections: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SkillRecord {
    pub name: String,
    pub status: Option<Status>,
    pub live_version: Option<u32>,
    pub reads: u64,
    pub failed_reads: u64,
    pub corrections: u64,
    /// Distinct turns (as the host named them) the skill was read in.
    pub turns: usize,
    /// Newest first.
    pub revisions: Vec<RevisionRecord>,
    /// The version the live one replaced.
    pub previous_version: Option<u32>,
    pub comparison: Option<Comparison>,
    pub evidence: usize,
    /// Reports the fixer stopped on without a revision, and what it said.
    pub fixer_notes: Vec<(i64, String)>,
    /// The fields the live file owes (left out, or blank).
    pub owed: Vec<&'static str>,
    /// What the turns the skill was read in cost, as far as the host's records say.
    pub cost: cost::Cost,
}

impl Playbooks {
    /// The record of every live skill (or one).
    pub fn record(&self, only: Option<&str>) -> Result<Vec<SkillRecord>, PlaybookError> {
        let skills = layout::list(&layout::skills_dir(&self.workspace))?;
        let mut records = Vec::new();
        for skill in skills {
            if only.is_some_and(|only| only != skill.name) {
                continue;
            }
            let usage = self.ledger.usage(Some(&skill.name))?;
            let mut revisions: BTreeMap<u32, RevisionRecord> = BTreeMap::new();
            let mut turns = BTreeSet::new();
            let mut fixer_notes = Vec::new();
            let (mut reads, mut failed_reads, mut corrections) = (0, 0, 0);
            for line in &usage {
                let version = line.revision.unwrap_or(0);
                let entry = revisions.entry(version).or_insert_with(|| RevisionRecord {
                    version,
                    ..RevisionRecord::default()
                });
                match (line.kind.as_str(), line.ok) {
                    ("read", true) => {
                        reads += 1;
                        entry.reads += 1;
                        if let Some(turn) = &line.turn {
                            turns.insert(turn.clone());
                        }
                    }
                    ("read", false) => {
                        failed_reads += 1;
                        entry.failed_reads += 1;
                    }
                    _ => {
                        corrections += 1;
                        entry.corrections += 1;
                    }
                }
            }
            for (id, note) in self
                .ledger
                .read(|connection| super::ledger::fixer_notes(connection, &skill.name))?
            {
                fixer_notes.push((id, note));
            }
            let live_version = skill.version();
            let previous_version = live_version.and_then(|live| {
                (1..live).rev().find(|version| {
                    layout::history_dir(&self.workspace, &skill.name, *version).exists()
                })
            });
            let comparison = match (live_version, previous_version) {
                (Some(live), Some(previous)) => {
                    let live = revisions.get(&live).cloned().unwrap_or_default();
                    let previous = revisions.get(&previous).cloned().unwrap_or_default();
                    Some(compare_revisions(
                        live.reads,
                        live.corrections,
                        previous.reads,
                        previous.corrections,
                    ))
                }
                _ => None,
            };
            let owed = skill
                .parsed
                .as_ref()
                .map(mindrune_core::owed_fields)
                .unwrap_or_default();
            let cost = cost::of_turns(turns.iter().map(String::as_str), &self.workspace);
            records.push(SkillRecord {
                owed,
                cost,
                status: skill.status(),
                live_version,
                reads,
                failed_reads,
                corrections,
                turns: turns.len(),
                revisions: revisions.into_values().rev().collect(),
                previous_version,
                comparison,
                evidence: self.ledger.evidence(&skill.name)?.len(),
                fixer_notes,
                name: skill.name,
            });
        }
        Ok(records)
    }
}

/// The record as text, one block per skill: what `playbook_record` answers and `mindrune
/// playbook record` prints.
pub fn render(records: &[SkillRecord]) -> String {
    if records.is_empty() {
        return "No skills yet.\n".to_string();
    }
    let mut out = String::new();
    for record in records {
        let status = record.status.map(Status::as_str).unwrap_or("unreadable");
        let version = record
            .live_version
            .map(|v| format!("v{v}"))
            .unwrap_or_else(|| "v?".into());
        let _ = writeln!(out, "{} ({version}, {status})", record.name);
        if !record.owed.is_empty() {
            let _ = writeln!(
                out,
                "  owes: {} (left out; the skill still loads)",
                record.owed.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "  reads: {}{}, corrections: {}, turns: {}{}",
            record.reads,
            if record.failed_reads > 0 {
                format!(" ({} more did not go through)", record.failed_reads)
            } else {
                String::new()
            },
            record.corrections,
            record.turns,
            if record.evidence > 0 {
                format!(", evidence added: {}", record.evidence)
            } else {
                String::new()
            }
        );
        for revision in &record.revisions {
            let name = if revision.version == 0 {
                "unversioned".to_string()
            } else {
                format!("v{}", revision.version)
            };
            let _ = writeln!(
                out,
                "  {name}: {} reads, {} corrections",
                revision.reads, revision.corrections
            );
        }
        let verdict = match (
            &record.comparison,
            record.previous_version,
            record.live_version,
        ) {
            (Some(comparison), Some(previous), Some(live)) => {
                let p = comparison
                    .p_value
                    .map(|p| format!(", p = {p:.3}"))
                    .unwrap_or_default();
                let said = match comparison.verdict {
                    Verdict::Better => {
                        format!("v{live} did better than v{previous}, the one it replaced")
                    }
                    Verdict::Worse => {
                        format!("v{live} did worse than v{previous}, the one it replaced")
                    }
                    Verdict::NoClearDifference => {
                        format!("no clear difference between v{live} and v{previous} yet")
                    }
                    Verdict::TooEarly => format!(
                        "too early to say whether v{live} did better than v{previous} (each needs {} reads)",
                        MIN_READS
                    ),
                };
                format!("{said} ({}{p})", comparison.test)
            }
            _ => "no earlier revision to compare with".to_string(),
        };
        let _ = writeln!(out, "  {verdict}");
        if record.turns > 0 {
            let _ = writeln!(out, "  {}", record.cost.render(record.turns));
        }
        for (report, note) in &record.fixer_notes {
            let _ = writeln!(out, "  report #{report}: the fixer stopped: {note}");
        }
    }
    out
}
