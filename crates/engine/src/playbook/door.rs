//! `skill_create`: the one door every new skill enters by, whoever suggested it.
//!
//! The checks run in the spec's order, and a proposal that fails any of them leaves nothing on
//! disk: the draft is written only after all of them pass.
//!
//! 1. Is the name taken by a live skill, one waiting for approval, or one the human turned down
//!    (then the refusal repeats the human's reason)?
//! 2. Does another skill use exactly the same sequence of tools? Then it is refused naming that
//!    skill, except that a second success of a task accepted as done adds evidence to it.
//! 3. When nobody attends the call, are too many drafts already waiting?
//! 4. Does the rendered file read back cleanly, and does it pass the blocking checks?

use rusqlite::Connection;

use mindrune_core::{
    CheckContext, SkillFile, Status, blocking_checks, parse_skill_file, render_skill, tool_sequence,
};

use super::cards::{self, Answered};
use super::layout::{self, OnDisk};
use super::ledger::{self, CardKind, NewCard};
use super::{PlaybookError, Playbooks, Rule};

/// Who suggested a skill. All of them end at the same door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suggester {
    /// The assistant, on its own judgement.
    Assistant,
    /// The human, asking for it.
    Human,
    /// The observer's suggestion, acted on by the assistant.
    Observer,
    /// The "what carries over" rule: a task its checks closed as done after many tool calls.
    CarryOver,
}

impl Suggester {
    pub fn as_str(self) -> &'static str {
        match self {
            Suggester::Assistant => "assistant",
            Suggester::Human => "human",
            Suggester::Observer => "observer",
            Suggester::CarryOver => "carry-over",
        }
    }
}

/// A proposed skill: its name, its fields and procedure (version and status are the runtime's
/// and are ignored here), who suggested it, and whether the task it was written from was
/// accepted as done.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub name: String,
    pub skill: SkillFile,
    pub suggested_by: Suggester,
    pub accepted_as_done: bool,
}

/// Whether a person is attending the call: the human asked for it, or was asked and agreed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attendance {
    Attended,
    Unattended,
}

/// What the door decided for a proposal that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Examined {
    /// A second success on the same steps as an existing skill: evidence for it.
    Evidence { skill: String },
    /// A new draft, rendered.
    Draft { text: String },
}

/// What `skill_create` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// The work was added as evidence to an existing skill.
    EvidenceAdded { skill: String },
    /// A draft was written and filed as a card; `answered` is set when the card was applied on
    /// its own (unattended mode).
    Filed {
        card: i64,
        answered: Option<Answered>,
    },
}

impl Playbooks {
    /// Runs the door's checks without writing anything: what the MCP server does before it asks
    /// the human whether to draft.
    pub fn check_create(
        &self,
        proposal: &Proposal,
        attendance: Attendance,
    ) -> Result<Examined, PlaybookError> {
        layout::check_name(&proposal.name)?;
        self.ledger
            .read(|connection| Ok(self.examine(connection, proposal, attendance)))?
    }

    /// `skill_create`: the checks again under the workspace lock, then the draft in
    /// `skills/pending/` and its card; under a policy of `auto` the card is applied at once.
    pub fn create(
        &self,
        proposal: &Proposal,
        attendance: Attendance,
    ) -> Result<Created, PlaybookError> {
        layout::check_name(&proposal.name)?;
        self.changing(|tx| match self.examine(tx, proposal, attendance)? {
            Examined::Evidence { skill } => {
                let text = proposal
                    .skill
                    .evidence
                    .as_ref()
                    .map(|items| items.join("; "))
                    .filter(|text| !text.trim().is_empty())
                    .unwrap_or_else(|| {
                        format!(
                            "a second success of a task accepted as done ({})",
                            proposal.name
                        )
                    });
                ledger::add_evidence(tx, &skill, &text)?;
                Ok(Created::EvidenceAdded { skill })
            }
            Examined::Draft { text } => {
                let dir = layout::pending_dir(&self.workspace, &proposal.name);
                let written = layout::write_atomic(&dir.join(layout::SKILL_FILE), text.as_bytes());
                if let Err(err) = written {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(err);
                }
                let filed = cards::file_under_policy(
                    self,
                    tx,
                    CardKind::Create,
                    &NewCard {
                        skill: proposal.name.clone(),
                        filed_by: proposal.suggested_by.as_str().to_string(),
                        proposal: Some(text),
                        ..NewCard::default()
                    },
                );
                let (card, answered) = match filed {
                    Ok(filed) => filed,
                    Err(err) => {
                        let _ = std::fs::remove_dir_all(&dir);
                        return Err(err);
                    }
                };
                Ok(Created::Filed { card, answered })
            }
        })
    }

    fn examine(
        &self,
        connection: &Connection,
        proposal: &Proposal,
        attendance: Attendance,
    ) -> Result<Examined, PlaybookError> {
        let name = proposal.name.as_str();
        // 1. The name.
        if let Some(live) = layout::load(&layout::live_dir(&self.workspace, name), name)? {
            let state = match (live.status(), live.version()) {
                (Some(status), Some(version)) => format!(" ({}, v{version})", status.as_str()),
                _ => String::new(),
            };
            return Err(PlaybookError::refused(
                Rule::NameTaken,
                format!(
                    "a skill named {name} already exists{state}; change it with skill_refine, or choose another name"
                ),
            ));
        }
        if layout::pending_dir(&self.workspace, name).exists() {
            let card = ledger::waiting_create_card(connection, name).ok().flatten();
            let card = card.map(|id| format!(" (card #{id})")).unwrap_or_default();
            return Err(PlaybookError::refused(
                Rule::NameTaken,
                format!("a skill named {name} is already waiting for your human's approval{card}"),
            ));
        }
        let rejected = layout::rejected_dir(&self.workspace, name);
        if rejected.exists() {
            let reason = std::fs::read_to_string(rejected.join(layout::REASON_FILE))
                .ok()
                .map(|text| reason_of(&text))
                .filter(|reason| !reason.is_empty())
                .unwrap_or_else(|| "no reason was given".to_string());
            return Err(PlaybookError::refused(
                Rule::NameTaken,
                format!(
                    "your human turned down a skill named {name} before: \"{reason}\" (to allow the name again, they can delete skills/rejected/{name})"
                ),
            ));
        }
        // 2. The same sequence of tools as an existing skill.
        let tools = tool_sequence(&proposal.skill);
        if !tools.is_empty() {
            for existing in self.comparable_skills()? {
                let Ok(parsed) = &existing.parsed else {
                    continue;
                };
                if tool_sequence(parsed) != tools {
                    continue;
                }
                let is_live = existing.dir.parent() == Some(&layout::skills_dir(&self.workspace));
                if proposal.accepted_as_done && is_live {
                    return Ok(Examined::Evidence {
                        skill: existing.name.clone(),
                    });
                }
                let where_ = if is_live {
                    ""
                } else {
                    " (waiting for approval)"
                };
                return Err(PlaybookError::refused(
                    Rule::SameTools,
                    format!(
                        "skill {}{where_} already uses exactly this sequence of tools ({}): it is the same procedure under another name; use {} or change it with skill_refine",
                        existing.name,
                        tools.join(" → "),
                        existing.name
                    ),
                ));
            }
            // A retired skill is not followed, but it is the same procedure: the answer names
            // it, so the human can bring it back with a revert rather than keep two.
            for retired in self.retired_skills()? {
                let Ok(parsed) = &retired.parsed else {
                    continue;
                };
                if tool_sequence(parsed) != tools {
                    continue;
                }
                let version = retired
                    .version()
                    .map(|version| format!(", v{version}"))
                    .unwrap_or_default();
                return Err(PlaybookError::refused(
                    Rule::SameTools,
                    format!(
                        "skill {} (retired{version}) already uses exactly this sequence of tools ({}): it is the same procedure under another name; to use it again, skill_refine revert brings {} back (your human answers the card), or change its steps so it is a different procedure",
                        retired.name,
                        tools.join(" → "),
                        retired.name
                    ),
                ));
            }
        }
        // 3. Too many drafts waiting for someone who is not there.
        if attendance == Attendance::Unattended {
            let waiting = ledger::waiting_count(connection, CardKind::Create, None)?;
            let limit = self.config.max_waiting_drafts;
            if waiting >= limit {
                return Err(PlaybookError::refused(
                    Rule::TooManyDrafts,
                    format!(
                        "{waiting} drafts are already waiting for your human (the limit when nobody attends is {limit}); stop here rather than flood the inbox, and propose this one when they have answered"
                    ),
                ));
            }
        }
        // 4. Render, read back, blocking checks.
        let mut draft = proposal.skill.clone();
        draft.name = Some(name.to_string());
        draft.version = Some(1);
        draft.status = Some(Status::Draft);
        let text = self.render_checked(&draft, "the proposed skill")?;
        Ok(Examined::Draft { text })
    }

    /// Renders a skill file, reads it back, and runs the blocking checks: the text when all is
    /// well, else a refusal naming every problem.
    pub(crate) fn render_checked(
        &self,
        skill: &SkillFile,
        what: &str,
    ) -> Result<String, PlaybookError> {
        let text = render_skill(skill);
        self.checked_text(&text, what, Some(skill))?;
        Ok(text)
    }

    /// Reads a skill file's text back (it must parse, and match `expected` when given) and runs
    /// the blocking checks.
    pub(crate) fn checked_text(
        &self,
        text: &str,
        what: &str,
        expected: Option<&SkillFile>,
    ) -> Result<SkillFile, PlaybookError> {
        let (parsed, _) = parse_skill_file(text).map_err(|err| {
            PlaybookError::refused(
                Rule::Unreadable,
                format!("{what} does not read back cleanly: {err}"),
            )
        })?;
        // Line numbers are where a step sits in a file, not part of what it says.
        let without_lines = |skill: &SkillFile| {
            let mut skill = skill.clone();
            for step in skill.steps.iter_mut().flatten() {
                step.line = 0;
            }
            skill
        };
        if let Some(expected) = expected
            && without_lines(&parsed) != without_lines(expected)
        {
            return Err(PlaybookError::refused(
                Rule::Unreadable,
                format!(
                    "{what} does not read back as written (a field changed on the way through YAML); simplify the text of its fields"
                ),
            ));
        }
        let tools = self.runtime_tools();
        let home = self.config.home.to_string_lossy();
        let workspace = self.workspace.to_string_lossy();
        let context = CheckContext {
            runtime_tools: &tools,
            home: &home,
            workspace: &workspace,
            scrubber: &self.scrubber,
        };
        let blockers = blocking_checks(text, &parsed, &context);
        if !blockers.is_empty() {
            let lines: Vec<String> = blockers
                .iter()
                .map(|blocker| format!("- line {}: {}", blocker.line, blocker.message))
                .collect();
            return Err(PlaybookError::refused(
                Rule::Blocked,
                format!(
                    "{what} cannot be followed safely, so it was not written:\n{}",
                    lines.join("\n")
                ),
            ));
        }
        Ok(parsed)
    }

    /// The retired skills in `skills/`.
    fn retired_skills(&self) -> Result<Vec<OnDisk>, PlaybookError> {
        Ok(layout::list(&layout::skills_dir(&self.workspace))?
            .into_iter()
            .filter(|skill| skill.status() == Some(Status::Retired))
            .collect())
    }

    /// The skills a new one must not duplicate: the live ones that are not retired, and the
    /// drafts waiting for approval.
    fn comparable_skills(&self) -> Result<Vec<OnDisk>, PlaybookError> {
        let mut skills: Vec<OnDisk> = layout::list(&layout::skills_dir(&self.workspace))?
            .into_iter()
            .filter(|skill| skill.status() != Some(Status::Retired))
            .collect();
        skills.extend(layout::list(
            &layout::skills_dir(&self.workspace).join(layout::PENDING),
        )?);
        Ok(skills)
    }
}

/// A draft in `skills/pending/` without a waiting card was written by a `skill_create` that
/// never committed (a crash between the two): nobody was told of it, so it is not a proposal.
/// It is set aside into `.mindrune/interrupted/`, never deleted, and the name is free again.
pub(crate) fn set_aside_orphan_drafts(
    playbooks: &Playbooks,
    connection: &Connection,
) -> Result<(), PlaybookError> {
    let pending = layout::skills_dir(&playbooks.workspace).join(layout::PENDING);
    let Ok(entries) = std::fs::read_dir(&pending) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        let waiting = ledger::waiting_count(connection, CardKind::Create, Some(&name))?;
        if waiting > 0 {
            continue;
        }
        let aside = playbooks
            .workspace
            .join(".mindrune")
            .join("interrupted")
            .join(format!("{name}-{}", ledger::now().replace(':', "")));
        tracing::warn!(draft = %name, "setting aside a draft whose skill_create was interrupted");
        layout::move_dir(&entry.path(), &aside)?;
    }
    Ok(())
}

/// The human's reason from a `REASON.md` (its text after the heading lines MindRune writes).
pub(crate) fn reason_of(text: &str) -> String {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with("Turned down "))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}
