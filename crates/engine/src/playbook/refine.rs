//! `skill_refine`: the one way an existing skill changes. `report` records a correction and
//! starts the fixer; `revise`, `revert` and `retire` each file a card.

use mindrune_core::Status;
use mindrune_core::{Act, Policy};

use super::cards::{self, Answered};
use mindrune_core::sha256;

use super::fixer::{self, FixerStart};
use super::layout::{self, OnDisk};
use super::ledger::{self, CardKind, NewCard};
use super::report::Report;
use super::{PlaybookError, Playbooks, Rule};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// The report's id: what a revision names.
    pub report: i64,
    pub fixer: FixerStart,
}

/// A card filed by revise, revert or retire, and its answer when it was applied on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filed {
    pub card: i64,
    pub answered: Option<Answered>,
}

impl Playbooks {
    fn live_skill(&self, name: &str) -> Result<OnDisk, PlaybookError> {
        layout::check_name(name)?;
        layout::load(&layout::live_dir(&self.workspace, name), name)?.ok_or_else(|| {
            let pending = layout::pending_dir(&self.workspace, name).exists();
            PlaybookError::refused(
                Rule::NotFound,
                if pending {
                    format!("{name} is still a draft waiting for approval; only a live skill can be refined")
                } else {
                    format!("there is no skill named {name} in skills/")
                },
            )
        })
    }

    /// `report`: a correction against a revision in the usage log, then the fixer in the
    /// background with pointers only.
    pub fn report(&self, report: &Report) -> Result<Reported, PlaybookError> {
        let report = &self.with_host_turn(report);
        let live = self.check_report(report)?;
        // The fixer's token: only the fixer started for this report can file its revision,
        // so the assistant that reported cannot rewrite the skill itself.
        let token = if self.config.fixer.is_some() {
            fixer::new_token()
        } else {
            None
        };
        let digest = token.as_deref().map(|token| sha256(token.as_bytes()));
        let id = self.ledger.locked(|tx| {
            Ok(ledger::add_correction(
                tx,
                &report.skill,
                report.revision,
                report.step,
                report.turn.as_deref(),
                digest.as_deref(),
            )?)
        })?;
        let start = match &token {
            Some(token) => fixer::start(self, id, &live, report, token),
            None if self.config.fixer.is_some() => FixerStart::Failed {
                message: "no random token could be made for it".to_string(),
            },
            None => FixerStart::NotConfigured,
        };
        Ok(Reported {
            report: id,
            fixer: start,
        })
    }

    /// A report that names no turn record gets the one the host's hooks named last
    /// ([`super::host`]): the host's word on where the turn is, not the assistant's.
    fn with_host_turn(&self, report: &Report) -> Report {
        let mut report = report.clone();
        if report.turn.is_none() {
            report.turn = self.host_turn().map(|host| host.transcript_path);
        }
        report
    }

    /// The checks of `report` without recording anything: what the MCP server runs before it
    /// asks the human whether to report. Returns the live skill.
    pub fn check_report(&self, report: &Report) -> Result<OnDisk, PlaybookError> {
        let report = &self.with_host_turn(report);
        let live = self.live_skill(&report.skill)?;
        // The record of the turn is the host's: one inside the workspace could have been
        // written by the assistant itself, which does not get to tell the fixer what went wrong.
        if let Some(turn) = &report.turn {
            let path = std::path::Path::new(turn);
            let absolute = if path.is_absolute() {
                path.to_path_buf()
            } else {
                self.workspace.join(path)
            };
            let mut lexical = std::path::PathBuf::new();
            for component in absolute.components() {
                match component {
                    std::path::Component::ParentDir => {
                        lexical.pop();
                    }
                    std::path::Component::CurDir => {}
                    other => lexical.push(other),
                }
            }
            let resolved = lexical.canonicalize().unwrap_or_else(|_| lexical.clone());
            if lexical.starts_with(&self.workspace) || resolved.starts_with(&self.workspace) {
                return Err(PlaybookError::refused(
                    Rule::Invalid,
                    format!(
                        "the turn record {turn} is inside the workspace, where the assistant can write; give where the host keeps the record of the turn"
                    ),
                ));
            }
        }
        let live_version = live.version().unwrap_or(1);
        let steps_of_revision = if report.revision == live_version {
            live.parsed
                .as_ref()
                .ok()
                .and_then(|skill| skill.steps.as_ref().map(Vec::len))
        } else {
            let kept = layout::history_dir(&self.workspace, &report.skill, report.revision);
            match layout::load(&kept, &report.skill)? {
                Some(old) => old
                    .parsed
                    .ok()
                    .and_then(|skill| skill.steps.map(|steps| steps.len())),
                None => {
                    return Err(PlaybookError::refused(
                        Rule::NotFound,
                        format!(
                            "{} has no revision {} (the live one is v{live_version}); report the revision you read",
                            report.skill, report.revision
                        ),
                    ));
                }
            }
        };
        // A step may be missing, so the place after the last step can be reported too.
        let last = steps_of_revision.unwrap_or(0) as u32 + 1;
        if report.step == 0 || report.step > last {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!(
                    "{} v{} has {} steps; report step 1 to {} (the last for a step that is missing at the end)",
                    report.skill,
                    report.revision,
                    last - 1,
                    last
                ),
            ));
        }
        Ok(live)
    }

    /// `revise`: the fixer's corrected file for a report, with the fingerprint of the exact file
    /// it read. At most one revision per report.
    pub fn revise(
        &self,
        report: i64,
        text: &str,
        fingerprint: &str,
        token: &str,
        filed_by: &str,
    ) -> Result<Filed, PlaybookError> {
        self.revise_noting(report, text, fingerprint, token, filed_by, None)
    }

    /// The fixer's revision filed by `mindrune refine revise`, which asks nobody: under `ask`
    /// (and `card`) the card waits, and its `why` says that nobody was asked before it was
    /// filed, so the human reading it knows the card is the first they hear of it.
    pub fn revise_unasked(
        &self,
        report: i64,
        text: &str,
        fingerprint: &str,
        token: &str,
    ) -> Result<Filed, PlaybookError> {
        let note = match self.permissions.policy(Act::Revise) {
            Policy::Auto => None,
            policy => Some(format!(
                "The skill fixer filed this with `mindrune refine revise`, which asks nobody before filing (revise: {}): this card is the question, and it waits for your answer.",
                policy.as_str()
            )),
        };
        self.revise_noting(report, text, fingerprint, token, "fixer", note.as_deref())
    }

    fn revise_noting(
        &self,
        report: i64,
        text: &str,
        fingerprint: &str,
        token: &str,
        filed_by: &str,
        why: Option<&str>,
    ) -> Result<Filed, PlaybookError> {
        let skill_name = self.check_revise(report, fingerprint, token)?;
        let live = self.live_skill(&skill_name)?;
        // The same blocking checks a new skill gets, now and again when it is applied.
        let proposed = self.checked_text(text, &format!("the revision of {skill_name}"), None)?;
        if let Some(name) = &proposed.name
            && name != &skill_name
        {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!(
                    "the revision names skill {name}, but report #{report} is about {skill_name}"
                ),
            ));
        }
        self.changing(|tx| {
            let existing = ledger::revision_card_for_report(tx, report)?;
            if let Some(card) = existing {
                return Err(PlaybookError::refused(
                    Rule::OneRevisionPerReport,
                    format!("report #{report} already has its one revision (card #{card})"),
                ));
            }
            let (card, answered) = cards::file_under_policy(
                self,
                tx,
                CardKind::Revise,
                &NewCard {
                    skill: skill_name.clone(),
                    filed_by: filed_by.to_string(),
                    proposal: Some(text.to_string()),
                    fingerprint: Some(fingerprint.to_string()),
                    base_version: live.version(),
                    report_id: Some(report),
                    why: why.map(str::to_string),
                    ..NewCard::default()
                },
            )?;
            Ok(Filed { card, answered })
        })
    }

    /// The fixer stops without a revision, and says why.
    pub fn fixer_stopped(&self, report: i64, reason: &str) -> Result<(), PlaybookError> {
        self.ledger.locked(|tx| {
            if !ledger::note_fixer_stopped(tx, report, reason.trim())? {
                return Err(PlaybookError::refused(
                    Rule::NotFound,
                    format!("there is no report #{report}"),
                ));
            }
            Ok(())
        })
    }

    /// `revert`: an earlier kept version as the proposal. Applied, it goes live again as a new
    /// version number; reverting a retired skill brings it back.
    pub fn revert(&self, name: &str, version: u32, filed_by: &str) -> Result<Filed, PlaybookError> {
        let (live, kept) = self.check_revert(name, version)?;
        self.changing(|tx| {
            let (card, answered) = cards::file_under_policy(
                self,
                tx,
                CardKind::Revert,
                &NewCard {
                    skill: name.to_string(),
                    filed_by: filed_by.to_string(),
                    proposal: Some(kept.text.clone()),
                    fingerprint: Some(live.fingerprint()),
                    base_version: live.version(),
                    restore_version: Some(version),
                    ..NewCard::default()
                },
            )?;
            Ok(Filed { card, answered })
        })
    }

    /// The checks of `revert` without filing: the live skill and the kept version.
    pub fn check_revert(
        &self,
        name: &str,
        version: u32,
    ) -> Result<(OnDisk, OnDisk), PlaybookError> {
        let live = self.live_skill(name)?;
        let kept_dir = layout::history_dir(&self.workspace, name, version);
        let kept = layout::load(&kept_dir, name)?;
        // A retired skill that was never revised has no history: its live version is the one
        // to bring back.
        let kept = kept.or_else(|| {
            (live.status() == Some(Status::Retired) && live.version() == Some(version))
                .then(|| live.clone())
        });
        let Some(kept) = kept else {
            let live_version = live.version().unwrap_or(1);
            let hint = if version == live_version && live.status() != Some(Status::Retired) {
                format!("v{version} is the live version")
            } else {
                format!("history/ keeps {}", kept_versions(&self.workspace, name))
            };
            return Err(PlaybookError::refused(
                Rule::NotFound,
                format!("{name} has no kept version {version} to revert to ({hint})"),
            ));
        };
        Ok((live, kept))
    }

    /// `retire`: asks whether a skill should stop being used. Always a card held for the human,
    /// in every mode: permissions.yaml cannot make it `auto`, and this function never applies it.
    pub fn retire(
        &self,
        name: &str,
        why: Option<&str>,
        filed_by: &str,
    ) -> Result<Filed, PlaybookError> {
        let live = self.check_retire(name)?;
        self.ledger.locked(|tx| {
            if ledger::waiting_count(tx, CardKind::Retire, Some(name))? > 0 {
                return Err(retire_waiting(name));
            }
            let card = ledger::file_card(
                tx,
                CardKind::Retire,
                &NewCard {
                    skill: name.to_string(),
                    filed_by: filed_by.to_string(),
                    fingerprint: Some(live.fingerprint()),
                    base_version: live.version(),
                    why: why.map(str::to_string),
                    ..NewCard::default()
                },
            )?;
            Ok(Filed {
                card,
                answered: None,
            })
        })
    }
}

fn retire_waiting(name: &str) -> PlaybookError {
    PlaybookError::refused(
        Rule::Invalid,
        format!("retiring {name} is already waiting for your human's answer"),
    )
}

impl Playbooks {
    /// The checks of `retire` without filing: the live skill, not retired, no retire waiting.
    pub fn check_retire(&self, name: &str) -> Result<OnDisk, PlaybookError> {
        let live = self.live_skill(name)?;
        if live.status() == Some(Status::Retired) {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!("{name} is already retired; skill_refine revert brings it back"),
            ));
        }
        if self
            .ledger
            .read(|connection| ledger::waiting_count(connection, CardKind::Retire, Some(name)))?
            > 0
        {
            return Err(retire_waiting(name));
        }
        Ok(live)
    }

    /// The checks of `revise` that need no lock: the report exists and the fingerprint is one.
    /// Returns the report's skill.
    pub fn check_revise(
        &self,
        report: i64,
        fingerprint: &str,
        token: &str,
    ) -> Result<String, PlaybookError> {
        let line = self.ledger.report(report)?.ok_or_else(|| {
            PlaybookError::refused(Rule::NotFound, format!("there is no report #{report}"))
        })?;
        let expected = self
            .ledger
            .read(|connection| ledger::fixer_token_digest(connection, report))?;
        if expected.is_none() || expected != Some(sha256(token.as_bytes())) {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!(
                    "only the fixer started for report #{report} may file its revision (its MINDRUNE_FIXER_TOKEN did not come with this one)"
                ),
            ));
        }
        if !fingerprint.starts_with("sha256:") || fingerprint.len() != 71 {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!(
                    "{fingerprint:?} is not a fingerprint; give the sha256:<64 hex> of the exact SKILL.md you read"
                ),
            ));
        }
        self.live_skill(&line.skill)?;
        Ok(line.skill)
    }
}

fn kept_versions(workspace: &std::path::Path, name: &str) -> String {
    let mut versions: Vec<u32> =
        std::fs::read_dir(layout::live_dir(workspace, name).join(layout::HISTORY))
            .map(|entries| {
                entries
                    .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
                    .collect()
            })
            .unwrap_or_default();
    versions.sort_unstable();
    if versions.is_empty() {
        "no versions yet".to_string()
    } else {
        versions
            .iter()
            .map(|v| format!("v{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
