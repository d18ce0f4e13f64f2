//! How results look in a terminal and as JSON.
//!
//! Tables are plain text, aligned with spaces, readable without colour. JSON output is a
//! stable interface: its field names only ever grow.

use std::collections::{BTreeSet, HashMap};
use std::io::Write;

use mindrune_core::{SharingBar, VersionStanding, version_for_siblings};
use mindrune_engine::MirrorOutcome;
use mindrune_engine::Recorded;
use mindrune_engine::{Offer, TurnReport};
use mindrune_engine::{WrapUp, outcome_unknown_summary};
use mindrune_engine::{points, when};
use mindrune_store::{
    FailedRun, HeaderState, SharingChange, SharingKind, Skill, SkillEntry, Version, VersionId,
};
use serde_json::{Value, json};

/// How many of a skill's latest failures `skill show` lists with their cause.
pub(crate) const FAILURES_SHOWN: usize = 5;

/// Totals over a `mindrune record` run.
#[derive(Debug, Default)]
pub(crate) struct RecordSummary {
    pub uses: usize,
    pub runs: usize,
    pub snippet_uses: usize,
    pub retries: usize,
    pub new_versions: usize,
    pub skills: BTreeSet<String>,
    pub detached_or_skipped: usize,
    /// Lines read that were not blank: recorded ones and rejected ones.
    pub lines: usize,
    pub rejected: usize,
    /// What the family sees that changed, in order.
    pub sharing: Vec<SharingChange>,
}

impl RecordSummary {
    pub(crate) fn add(&mut self, recorded: &Recorded) {
        self.lines += 1;
        for run in &recorded.runs {
            if let Some(change) = &run.sharing {
                self.sharing.push(change.clone());
            }
            if run.added {
                self.uses += 1;
                self.runs += 1;
                self.skills.insert(run.skill.clone());
                if run.new_version {
                    self.new_versions += 1;
                }
            } else {
                self.retries += 1;
            }
        }
        if let Some(snippet) = &recorded.snippet {
            if snippet.added {
                self.uses += 1;
                self.snippet_uses += 1;
            } else {
                self.retries += 1;
            }
        }
        if recorded.runs.is_empty() && recorded.snippet.is_none() {
            self.detached_or_skipped += 1;
        }
    }
}

pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    plural(n, one, many)
}

/// A span of milliseconds as a person says it: `40 s`, `12 min`, `5 h`, `3 d`.
pub(crate) fn age(millis: i64) -> String {
    let secs = millis.max(0) / 1000;
    match secs {
        s if s < 120 => format!("{s} s"),
        s if s < 2 * 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} d", s / 86_400),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(crate) fn record_summary(out: &mut impl Write, s: &RecordSummary) -> std::io::Result<()> {
    writeln!(
        out,
        "Recorded {}: {} of {}, {}.",
        plural(s.uses, "use", "uses"),
        plural(s.runs, "run", "runs"),
        plural(s.skills.len(), "script", "scripts"),
        plural(s.snippet_uses, "inline snippet run", "inline snippet runs"),
    )?;
    if s.new_versions > 0 {
        writeln!(
            out,
            "{} seen for the first time.",
            plural(s.new_versions, "new version was", "new versions were")
        )?;
    }
    if s.retries > 0 {
        writeln!(
            out,
            "{} already recorded (same event id): not counted again.",
            plural(s.retries, "use was", "uses were")
        )?;
    }
    if s.detached_or_skipped > 0 {
        writeln!(
            out,
            "{} recorded nothing (no script run, or sent to the background).",
            plural(s.detached_or_skipped, "call", "calls")
        )?;
    }
    for change in &s.sharing {
        writeln!(out, "{}", sharing_line(change))?;
    }
    if s.rejected > 0 {
        let see = if s.rejected == 1 {
            "see the error above"
        } else {
            "see the errors above"
        };
        let recorded = s.lines.saturating_sub(s.rejected);
        if recorded == 0 {
            let rejected = if s.rejected == 1 {
                "The line was rejected".to_string()
            } else {
                format!("All {} lines were rejected", s.rejected)
            };
            writeln!(out, "{rejected} ({see}); nothing was recorded.")?;
        } else {
            writeln!(
                out,
                "{} rejected ({see}); the other {} recorded.",
                plural(s.rejected, "line was", "lines were"),
                plural(recorded, "line was", "lines were")
            )?;
        }
    }
    Ok(())
}

/// `v8 · 7 versions`: the shown version and how many the skill has.
fn version_label(number: i64, count: i64) -> String {
    format!(
        "v{number} · {}",
        plural(count as usize, "version", "versions")
    )
}

pub(crate) fn when_json(millis: Option<i64>) -> Value {
    millis
        .and_then(|m| {
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(m) * 1_000_000).ok()
        })
        .and_then(|at| {
            at.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .map_or(Value::Null, Value::String)
}

/// Writes rows as columns separated by two spaces; numeric columns are right-aligned.
fn table(
    out: &mut impl Write,
    header: &[&str],
    right: &[bool],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let pad = widths[i] - cell.chars().count();
            if i > 0 {
                text.push_str("  ");
            }
            if right[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                if i + 1 < cells.len() {
                    text.push_str(&" ".repeat(pad));
                }
            }
        }
        text
    };
    writeln!(out, "{}", line(header.to_vec()))?;
    for row in rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// `mindrune attention`: one paragraph per item, most harmful first, each with what to do next.
pub(crate) fn attention(
    out: &mut impl Write,
    items: &[mindrune_engine::AttentionItem],
    now: i64,
) -> std::io::Result<()> {
    use mindrune_engine::AttentionItem;
    use mindrune_engine::ago;
    if items.is_empty() {
        return writeln!(
            out,
            "Nothing needs attention: no script is failing now and no avatar is quieter than usual."
        );
    }
    for item in items {
        match item {
            AttentionItem::Failing(f) => {
                writeln!(
                    out,
                    "✗ {} failing: {} in a row since {} (last {}){}",
                    f.label,
                    f.streak,
                    ago(f.first_seen, now),
                    ago(f.last_seen, now),
                    if f.family { ", a family skill" } else { "" }
                )?;
                writeln!(
                    out,
                    "  cause: {} ({} of {})",
                    f.cause, f.cause_count, f.streak
                )?;
                if !f.failing_for.is_empty() {
                    writeln!(out, "  failing for {} sibling(s) too", f.failing_for.len())?;
                }
            }
            AttentionItem::Quiet(q) => writeln!(
                out,
                "… {} quiet: its last run was {}",
                q.agent_name,
                ago(q.last_run, now)
            )?,
            AttentionItem::RunnerStopped(r) => writeln!(
                out,
                "✗ {}'s runner stopped {} with {} event(s) still in its spool",
                r.agent_name,
                ago(r.last_contact, now),
                r.backlog
            )?,
        }
        writeln!(out, "  next: {}", item.next_step())?;
    }
    Ok(())
}

pub(crate) fn skills_table(out: &mut impl Write, entries: &[SkillEntry]) -> std::io::Result<()> {
    if entries.is_empty() {
        writeln!(
            out,
            "No skills yet: a script's first recorded run makes it one."
        )?;
        return Ok(());
    }
    // ALL RUNS differs from RUNS only for a skill with runs of older versions; when no skill
    // has any, it would print the RUNS column a second time, so it is left out.
    let all_runs = entries.iter().any(|e| e.total_runs != e.version.uses);
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|e| {
            let mut row = vec![
                format!("{}/{}", e.skill.agent_name, e.skill.name),
                sharing_label(e).to_string(),
                version_label(e.version.number, e.version_count),
                points(e.version.score).to_string(),
                e.version.uses.to_string(),
                e.version.ok.to_string(),
            ];
            if all_runs {
                row.push(e.total_runs.to_string());
            }
            row.push(when(e.version.last_used_at));
            row
        })
        .collect();
    let mut header = vec!["SKILL", "SHARING", "VERSION", "SCORE", "RUNS", "OK"];
    let mut right = vec![false, false, false, true, true, true];
    if all_runs {
        header.push("ALL RUNS");
        right.push(true);
    }
    header.push("LAST USED (UTC)");
    right.push(false);
    table(out, &header, &right, &rows)?;
    let agents: BTreeSet<&str> = entries
        .iter()
        .map(|e| e.skill.agent_name.as_str())
        .collect();
    writeln!(
        out,
        "\n{} of {}. Score, runs and ok are the shown version's{}.",
        plural(entries.len(), "skill", "skills"),
        plural(agents.len(), "agent", "agents"),
        if all_runs {
            "; all runs counts every version"
        } else {
            ""
        }
    )
}

pub(crate) fn skills_json(entries: &[SkillEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                json!({
                    "skill": format!("{}/{}", e.skill.agent_name, e.skill.name),
                    "agent": e.skill.agent_name,
                    "name": e.skill.name,
                    "path": e.skill.path,
                    "version": e.version.number,
                    "versions": e.version_count,
                    "digest": e.version.digest,
                    "score": e.version.score,
                    "runs": e.version.uses,
                    "ok": e.version.ok,
                    "total_runs": e.total_runs,
                    "last_used": when_json(e.version.last_used_at),
                    "best": e.best.map(|(version, score)| json!({"version": version, "score": score})),
                    "sharing": sharing_value(e),
                })
            })
            .collect(),
    )
}

fn lineage_label(v: &Version, parents: &HashMap<VersionId, String>) -> String {
    match (v.parent, v.lineage) {
        (Some(parent), Some(lineage)) => {
            format!(
                "{} ({})",
                parents.get(&parent).cloned().unwrap_or_else(|| "?".into()),
                lineage.as_str()
            )
        }
        _ => "-".into(),
    }
}

/// The best older version, when it scored higher than the current one.
fn best_other<'a>(skill: &Skill, versions: &'a [Version]) -> Option<&'a Version> {
    let current = versions
        .iter()
        .find(|v| Some(v.id) == skill.current_version)?;
    mindrune_engine::best_other(versions, current)
}

/// Where a skill stands with the family, in a sentence for its owner.
fn sharing_sentence(skill: &Skill, versions: &[Version], bar: SharingBar) -> String {
    let shared: Vec<String> = versions
        .iter()
        .filter(|v| v.shared_at.is_some())
        .map(|v| format!("v{}", v.number))
        .collect();
    let current = versions
        .iter()
        .find(|v| Some(v.id) == skill.current_version);
    match skill.header.state {
        _ if skill.deleted_at.is_some() => {
            "🔒 private: its file is gone (deleted or renamed); history is kept".into()
        }
        HeaderState::Skill if !shared.is_empty() => {
            let standings: Vec<VersionStanding> = versions.iter().map(Into::into).collect();
            let siblings_get = version_for_siblings(&standings, bar)
                .map(|i| format!("; siblings get v{}", versions[i].number))
                .unwrap_or_default();
            format!(
                "👪 family skill (shared versions: {}{siblings_get})",
                shared.join(", ")
            )
        }
        // `x.ts: 3/5 runs, score 540/600 — not shared yet`, as the wrap-up says it.
        HeaderState::Skill => match current {
            Some(v) => bar.progress(&format!("{}.ts", skill.name), v.uses, v.score),
            None => format!("{}.ts: {NOT_SHARED_YET}", skill.name),
        },
        HeaderState::Private => "🔒 private (@private in its header)".into(),
        HeaderState::None => "🔒 private (no @skill header)".into(),
    }
}

pub(crate) fn skill_detail(
    out: &mut impl Write,
    skill: &Skill,
    versions: &[Version],
    parents: &HashMap<VersionId, String>,
    failures: &[FailedRun],
    bar: SharingBar,
) -> std::io::Result<()> {
    let current = versions
        .iter()
        .find(|v| Some(v.id) == skill.current_version);
    match current {
        Some(v) => writeln!(
            out,
            "{}/{}  {}  score {}  ({})",
            skill.agent_name,
            skill.name,
            version_label(v.number, versions.len() as i64),
            points(v.score),
            skill.path
        )?,
        None => writeln!(out, "{}/{}  ({})", skill.agent_name, skill.name, skill.path)?,
    }
    if let Some(best) = best_other(skill, versions) {
        writeln!(out, "best: v{}, {}", best.number, points(best.score))?;
    }
    writeln!(out, "{}", sharing_sentence(skill, versions, bar))?;
    writeln!(out)?;
    let rows: Vec<Vec<String>> = versions
        .iter()
        .map(|v| {
            vec![
                format!(
                    "v{}{}",
                    v.number,
                    if Some(v.id) == skill.current_version {
                        "*"
                    } else {
                        ""
                    }
                ),
                v.uses.to_string(),
                v.ok.to_string(),
                points(v.score).to_string(),
                if v.shared_at.is_some() { "yes" } else { "-" }.to_string(),
                when(v.last_used_at),
                lineage_label(v, parents),
                v.digest.chars().take(19).collect(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "VERSION",
            "RUNS",
            "OK",
            "SCORE",
            "SHARED",
            "LAST USED (UTC)",
            "BUILT ON",
            "DIGEST",
        ],
        &[false, true, true, true, false, false, false, false],
        &rows,
    )?;
    writeln!(out, "\n* the version the file has now.")?;
    if !failures.is_empty() {
        writeln!(out, "\nLatest failures (newest first):")?;
        for failed in failures {
            writeln!(
                out,
                "  v{}  {}  {}",
                failed.version,
                when(Some(failed.at)),
                failed.failure.as_deref().unwrap_or("(no cause recorded)")
            )?;
        }
    }
    Ok(())
}

pub(crate) fn skill_json(
    skill: &Skill,
    versions: &[Version],
    parents: &HashMap<VersionId, String>,
    failures: &[FailedRun],
    bar: SharingBar,
) -> Value {
    let current = versions
        .iter()
        .find(|v| Some(v.id) == skill.current_version);
    json!({
        "skill": format!("{}/{}", skill.agent_name, skill.name),
        "path": skill.path,
        "version": current.map(|v| v.number),
        "score": current.map(|v| v.score),
        // The score its last run left (what sharing decided on); `score` is as of the clock.
        "score_at_last_use": current.and_then(|v| v.breakdown.as_ref().map(|b| b.total)),
        "best": best_other(skill, versions).map(|b| json!({"version": b.number, "score": b.score})),
        "header": skill.header.state,
        "sharing": sharing_sentence(skill, versions, bar),
        "versions": versions.iter().map(|v| json!({
            "version": v.number,
            "digest": v.digest,
            "runs": v.uses,
            "ok": v.ok,
            "score": v.score,
            "score_at_last_use": v.breakdown.as_ref().map(|b| b.total),
            "last_used": when_json(v.last_used_at),
            "created": when_json(Some(v.created_at)),
            "built_on": v.parent.map(|p| json!({
                "version": parents.get(&p),
                "lineage": v.lineage.map(|l| l.as_str()),
            })),
            "inherited": v.inherited,
            "shared": v.shared_at.is_some(),
            "breakdown": v.breakdown,
        })).collect::<Vec<_>>(),
        "failures": failures.iter().map(|f| json!({
            "version": f.version,
            "at": when_json(Some(f.at)),
            "cause": f.failure,
        })).collect::<Vec<_>>(),
    })
}

/// How a skill stands with the family, for JSON: `family` (shared), `headed` (has the header,
/// not proven yet) or `private`. JSON values are a stable interface, so `headed` stays.
fn sharing_value(entry: &SkillEntry) -> &'static str {
    match (entry.family, entry.skill.header.state) {
        (true, _) => "family",
        (false, HeaderState::Skill) => "headed",
        _ => "private",
    }
}

/// The same for a person: a headed script that has not cleared the bar is "not shared yet",
/// the spec's words, as the wrap-up, `skill show` and the dashboard say it.
fn sharing_label(entry: &SkillEntry) -> &'static str {
    match sharing_value(entry) {
        "headed" => NOT_SHARED_YET,
        other => other,
    }
}

/// The one name for a script with an `@skill` header that has not cleared the family's bar.
const NOT_SHARED_YET: &str = "not shared yet";

/// One change in what the family sees, as a sentence.
pub(crate) fn sharing_line(change: &SharingChange) -> String {
    match change.kind {
        SharingKind::Shared => format!(
            "👪 {}{} is a family skill now: {}.",
            change.label,
            change.version.map(|v| format!(" v{v}")).unwrap_or_default(),
            change.reason
        ),
        SharingKind::Unshared => format!(
            "🔒 {} is private again: {}. Its runs, score and versions are kept.",
            change.label, change.reason
        ),
    }
}

pub(crate) fn turn_report(
    out: &mut impl Write,
    report: &TurnReport,
    start: bool,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{}: {} ({} in bots/{}/ checked).",
        report.agent,
        if start { "starting" } else { "turn ended" },
        plural(report.checked, "script", "scripts"),
        report.agent
    )?;
    for line in &report.checked_headers {
        writeln!(out, "  checked  {line}")?;
    }
    for name in &report.new_skills {
        writeln!(out, "  new skill  {name}")?;
    }
    for name in &report.new_versions {
        writeln!(out, "  new version  {name}")?;
    }
    for change in &report.sharing {
        writeln!(out, "  {}", sharing_line(change))?;
    }
    for line in &report.progress {
        writeln!(out, "  {line}")?;
    }
    for line in &report.sibling_copies {
        writeln!(out, "  {line}")?;
    }
    for offer in &report.offers {
        offer_text(out, offer, "  ", "      ")?;
    }
    let lessons = &report.lessons;
    if !lessons.added.is_empty() || !lessons.removed.is_empty() {
        writeln!(
            out,
            "  lessons: {} shared, {} un-shared, {} as before",
            lessons.added.len(),
            lessons.removed.len(),
            lessons.kept
        )?;
    }
    for diagnostic in &report.diagnostics {
        writeln!(out, "  warning: {diagnostic}")?;
    }
    for line in &report.unrecorded {
        writeln!(out, "  not recorded: {line}")?;
    }
    mirror_outcome(out, &report.mirror)
}

pub(crate) fn mirror_outcome(out: &mut impl Write, outcome: &MirrorOutcome) -> std::io::Result<()> {
    match outcome {
        MirrorOutcome::Refreshed {
            dir,
            written,
            removed,
            unchanged,
        } => {
            write!(
                out,
                "  {dir}: {} written, {} removed, {} unchanged",
                written.len(),
                removed.len(),
                unchanged
            )?;
            if !written.is_empty() {
                write!(out, " (wrote {})", written.join(", "))?;
            }
            writeln!(out, ".")
        }
        MirrorOutcome::Skipped { reason } => {
            writeln!(out, "  family-skills/ not refreshed: {reason}.")
        }
    }
}

/// A proven script without a header, offered with the header to paste.
fn offer_text(
    out: &mut impl Write,
    offer: &Offer,
    lead: &str,
    indent: &str,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{lead}{} proved itself ({} runs, score {}) but has no header, so it stays private. To share it with your family, put this at its top:",
        offer.file,
        offer.runs,
        points(offer.score)
    )?;
    for line in offer.header.lines() {
        writeln!(out, "{indent}{line}")?;
    }
    Ok(())
}

/// What the wrap-up tells an agent whose runs went to the background: how many, why they do
/// not count, and how to keep a run countable.
fn unrecorded_background_advice(count: usize) -> String {
    format!(
        "{} since the last wrap-up went unrecorded: {} in the background (`… &`, `run_in_background`, or past the Bash timeout, when Claude Code moves a command to the background), and MindRune cannot see how a detached run ends. To keep a run countable, let it finish in the foreground within the timeout, or pass a longer `timeout` to Bash (up to 600000 ms).",
        if count == 1 {
            "1 of your runs".to_string()
        } else {
            format!("{count} of your runs")
        },
        if count == 1 { "it ran" } else { "they ran" }
    )
}

/// What to do so the next runs are measured: the rest of a wrap-up's "not measured" line.
fn unmeasured_advice(reason: &str, agent: &str) -> String {
    match reason {
        "output cut by tail" => ". `| tail` kept no Skills or Inventory, so what was gained is unknown (not zero): run the file without `| tail`.".to_owned(),
        "no state printed before it" => format!(
            ". No call before printed the bot's state in the same turn, so what was gained is unknown (not zero): look first with `bun sdk/cli.ts {agent}`."
        ),
        _ => ".".to_owned(),
    }
}

pub(crate) fn wrap_up(out: &mut impl Write, wrap: &WrapUp) -> std::io::Result<()> {
    writeln!(out, "{}: wrap-up", wrap.agent)?;
    writeln!(out, "\n{}", wrap.lesson_prompt)?;
    if !wrap.became_family.is_empty() {
        writeln!(out, "\nBecame family skills since the last wrap-up:")?;
        for change in &wrap.became_family {
            writeln!(out, "  {}", sharing_line(change))?;
        }
    }
    if !wrap.not_shared_yet.is_empty() {
        writeln!(
            out,
            "\nHeaded scripts not shared yet (the family's bar: {} runs of the current version, score {}):",
            wrap.bar.runs,
            points(wrap.bar.score)
        )?;
        for line in &wrap.not_shared_yet {
            writeln!(out, "  {line}")?;
        }
    }
    for line in &wrap.sibling_copies {
        writeln!(out, "\n  {line}")?;
    }
    for offer in &wrap.offers {
        offer_text(out, offer, "\n", "    ")?;
    }
    for advice in &wrap.suggestions {
        writeln!(out, "\n{}", advice.message)?;
        for line in advice.quote.lines() {
            writeln!(out, "    {line}")?;
        }
    }
    if wrap.unrecorded_background > 0 {
        writeln!(
            out,
            "\n{}",
            unrecorded_background_advice(wrap.unrecorded_background)
        )?;
    }
    for unmeasured in &wrap.unmeasured {
        writeln!(
            out,
            "\n{} since the last wrap-up{}",
            unmeasured.summary(),
            unmeasured_advice(&unmeasured.reason, &wrap.agent)
        )?;
    }
    if wrap.outcome_unknown > 0 {
        writeln!(
            out,
            "\n{}.",
            outcome_unknown_summary(wrap.outcome_unknown as i64)
        )?;
    }
    for diagnostic in &wrap.diagnostics {
        writeln!(out, "\nwarning: {diagnostic}")?;
    }
    Ok(())
}
