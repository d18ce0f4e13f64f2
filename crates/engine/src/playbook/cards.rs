//! Answering a card: the lifecycle of every change.
//!
//! Architecture invariant: [`approve_in`] is the only function that makes a change live, for a
//! card approved by the human and one applied on its own alike, so both end in exactly the same
//! state. A draft goes live in [`go_live`]; a revision or revert lands in [`replace_live`].

use rusqlite::Transaction;

use mindrune_core::{Act, Policy};
use mindrune_core::{Status, render_skill};

use super::journal::{self, Entry, Step};
use super::layout;
use super::ledger::{self, Card, CardKind, CardState};
use super::{PlaybookError, Playbooks, Rule};

/// Who answered a card: the human, or the runtime on its own under a policy of `auto`.
pub(crate) const HUMAN: &str = "human";
pub(crate) const AUTO: &str = "auto";

/// The answer a card got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    pub(crate) card: i64,
    pub state: CardState,
    /// What happened, in a sentence ("weekly-report is live as v1 and carried on every turn").
    pub outcome: String,
}

impl Playbooks {
    /// The human approves a card.
    pub fn approve(&self, id: i64) -> Result<Answered, PlaybookError> {
        self.changing(|tx| approve_in(self, tx, id, HUMAN, None))
    }

    /// The human turns a card down, with a reason. A draft moves to `skills/rejected/` with the
    /// reason beside it, which is what the door reads when the name is proposed again.
    pub fn reject(&self, id: i64, reason: &str) -> Result<Answered, PlaybookError> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                "say why you turn it down (--reason \"…\"): the door repeats it when the same name is proposed again",
            ));
        }
        self.changing(|tx| {
            let card = waiting_card(tx, id)?;
            let mut steps = Vec::new();
            let outcome = if card.kind == CardKind::Create {
                let pending = format!("{}/{}/{}", layout::SKILLS, layout::PENDING, card.skill);
                let rejected = format!("{}/{}/{}", layout::SKILLS, layout::REJECTED, card.skill);
                let note = format!(
                    "# Why {} was turned down\n\nTurned down {} (card #{}).\n\n{}\n",
                    card.skill,
                    ledger::now(),
                    card.id,
                    reason
                );
                if self.workspace.join(&pending).exists() {
                    steps.push(Step::MoveDir {
                        from: pending,
                        to: rejected.clone(),
                    });
                }
                steps.push(Step::Write {
                    path: format!("{rejected}/{}", layout::REASON_FILE),
                    text: note,
                });
                format!(
                    "{} moved to skills/rejected/ with your reason beside it",
                    card.skill
                )
            } else {
                format!(
                    "the {} of {} was turned down; nothing changed",
                    card.kind.as_str(),
                    card.skill
                )
            };
            journal::apply(
                &self.workspace,
                tx,
                &Entry {
                    card: id,
                    state: CardState::Rejected.as_str().to_string(),
                    answered_by: HUMAN.to_string(),
                    reason: Some(reason.to_string()),
                    outcome: outcome.clone(),
                    steps,
                    filed: None,
                },
            )?;
            Ok(Answered {
                card: id,
                state: CardState::Rejected,
                outcome,
            })
        })
    }
}

/// Files a card, and under a policy of `auto` for its act applies it at once (filed already
/// answered, so the human can see it happened). Retiring never reaches here as `auto`:
/// `permissions.yaml` cannot say so.
pub(crate) fn file_under_policy(
    playbooks: &Playbooks,
    tx: &Transaction<'_>,
    kind: CardKind,
    card: &ledger::NewCard,
) -> Result<(i64, Option<Answered>), PlaybookError> {
    let act = match kind {
        CardKind::Create => Act::Create,
        CardKind::Revise => Act::Revise,
        CardKind::Revert => Act::Revert,
        CardKind::Retire => Act::Retire,
    };
    let id = ledger::file_card(tx, kind, card)?;
    let answered = if kind != CardKind::Retire && playbooks.permissions.policy(act) == Policy::Auto
    {
        Some(approve_in(playbooks, tx, id, AUTO, Some((kind, card)))?)
    } else {
        None
    };
    Ok((id, answered))
}

fn waiting_card(tx: &Transaction<'_>, id: i64) -> Result<Card, PlaybookError> {
    let Some(card) = ledger::card_by_id(tx, id)? else {
        return Err(PlaybookError::refused(
            Rule::NotFound,
            format!("there is no card #{id}"),
        ));
    };
    if card.state != CardState::Waiting {
        let by = card.answered_by.as_deref().unwrap_or("someone");
        let at = card.answered_at.as_deref().unwrap_or("before");
        let outcome = card
            .outcome
            .as_deref()
            .map(|outcome| format!(": {outcome}"))
            .unwrap_or_default();
        return Err(PlaybookError::refused(
            Rule::AlreadyAnswered,
            format!(
                "card #{id} was already answered ({} by {by} at {at}){outcome}",
                card.state.as_str()
            ),
        ));
    }
    Ok(card)
}

/// Applies a waiting card inside the workspace lock. A change that can no longer be applied
/// (the live file moved on, a blocking check now fails) answers the card as refused, says why,
/// and changes no file. `filed` is the card's row when this same transaction filed it, which
/// the apply journal then keeps too.
pub(crate) fn approve_in(
    playbooks: &Playbooks,
    tx: &Transaction<'_>,
    id: i64,
    by: &str,
    filed: Option<(CardKind, &ledger::NewCard)>,
) -> Result<Answered, PlaybookError> {
    let card = waiting_card(tx, id)?;
    let planned = match card.kind {
        CardKind::Create => go_live(playbooks, &card.skill),
        CardKind::Revise | CardKind::Revert => replace_live(playbooks, &card),
        CardKind::Retire => retire(playbooks, &card.skill),
    };
    let (state, outcome) = match planned {
        Ok((outcome, steps)) => {
            journal::apply(
                &playbooks.workspace,
                tx,
                &Entry {
                    card: id,
                    state: CardState::Applied.as_str().to_string(),
                    answered_by: by.to_string(),
                    reason: None,
                    outcome: outcome.clone(),
                    steps,
                    filed: filed.map(|(kind, card)| journal::FiledCard::new(kind, card)),
                },
            )?;
            (CardState::Applied, outcome)
        }
        // A draft that cannot go live now (a hand edit added a credential, a blocking check it
        // fails) stays where the human looks: in skills/pending/ with its card still waiting,
        // the card saying why. Answered `refused`, it would be a draft without a waiting card,
        // which the next command sets aside as interrupted.
        Err(PlaybookError::Refused { message, .. })
            if card.kind == CardKind::Create
                && layout::pending_dir(&playbooks.workspace, &card.skill).exists() =>
        {
            let name = &card.skill;
            let outcome = format!(
                "{name} could not go live: {message}\nThe draft stays in skills/{}/{name}/ and this card waits: fix the draft there and approve it again, or turn it down.",
                layout::PENDING
            );
            ledger::note_card(tx, id, &outcome)?;
            (CardState::Waiting, outcome)
        }
        // Refused: no file changes, only the card's answer.
        Err(PlaybookError::Refused { message, .. }) => {
            ledger::answer_card(tx, id, CardState::Refused, by, None, &message)?;
            (CardState::Refused, message)
        }
        Err(err) => return Err(err),
    };
    Ok(Answered {
        card: id,
        state,
        outcome,
    })
}

/// What answering a card will do: the outcome in a sentence and the file operations.
type Plan = (String, Vec<Step>);

fn live_file(name: &str) -> String {
    format!("{}/{name}/{}", layout::SKILLS, layout::SKILL_FILE)
}

/// Makes a draft live: the folder moves from `skills/pending/` into `skills/`, the file is
/// marked active at version 1, and the name goes on the carried list.
fn go_live(playbooks: &Playbooks, name: &str) -> Result<Plan, PlaybookError> {
    let workspace = &playbooks.workspace;
    let pending = layout::pending_dir(workspace, name);
    let live = layout::live_dir(workspace, name);
    let Some(text) = layout::read_skill_text(&pending)? else {
        return Err(PlaybookError::refused(
            Rule::NotFound,
            format!("the draft of {name} is no longer in skills/pending/; nothing was made live"),
        ));
    };
    if live.exists() {
        return Err(PlaybookError::refused(
            Rule::NameTaken,
            format!("skills/{name} appeared since the draft was filed; nothing was made live"),
        ));
    }
    // The draft may have been edited by hand while it waited: it passes the checks again.
    let mut skill = playbooks.checked_text(&text, &format!("the draft of {name}"), None)?;
    skill.version = Some(1);
    skill.status = Some(Status::Active);
    skill.name = Some(name.to_string());
    // The folder moves first and the file is marked active where it lands, so doing the steps
    // again after a crash finds each one done or does it.
    let steps = vec![
        Step::MoveDir {
            from: format!("{}/{}/{name}", layout::SKILLS, layout::PENDING),
            to: format!("{}/{name}", layout::SKILLS),
        },
        Step::Write {
            path: live_file(name),
            text: render_skill(&skill),
        },
        Step::Carry {
            name: name.to_string(),
            carried: true,
        },
    ];
    Ok((
        format!("{name} is live as v1 and carried on every turn"),
        steps,
    ))
}

/// Lands a revision or a revert: the live file must still be the one the change was written
/// against; the current version is kept in `history/<version>/`, and the new text goes live as
/// the next version number. A revert of a retired skill brings it back.
fn replace_live(playbooks: &Playbooks, card: &Card) -> Result<Plan, PlaybookError> {
    let workspace = &playbooks.workspace;
    let name = card.skill.as_str();
    let dir = layout::live_dir(workspace, name);
    let Some(live) = layout::load(&dir, name)? else {
        return Err(PlaybookError::refused(
            Rule::NotFound,
            format!(
                "skills/{name} is gone; the {} was not applied",
                card.kind.as_str()
            ),
        ));
    };
    let current = live.fingerprint();
    if card.fingerprint.as_deref() != Some(current.as_str()) {
        return Err(PlaybookError::refused(
            Rule::StaleFingerprint,
            format!(
                "{name} changed since this {} was written (it was written against {}, the live file is now {}); it was refused rather than landed on top of something newer, and nothing changed",
                card.kind.as_str(),
                card.fingerprint.as_deref().unwrap_or("no fingerprint"),
                current
            ),
        ));
    }
    let proposal = card.proposal.as_deref().unwrap_or_default();
    let mut skill = playbooks.checked_text(
        proposal,
        &format!("the {} of {name}", card.kind.as_str()),
        None,
    )?;
    // The live file's version says which history/ slot keeps it, unless a hand edit made that
    // slot's version number point at a different kept text: nothing in history/ is ever
    // overwritten, so the live text is then kept after the newest slot.
    let max_kept = max_kept_version(workspace, name);
    let claimed = live.version().unwrap_or(1);
    let slot = layout::history_dir(workspace, name, claimed).join(layout::SKILL_FILE);
    let old_version = match std::fs::read_to_string(&slot) {
        Ok(kept) if kept != live.text => max_kept.max(claimed) + 1,
        _ => claimed,
    };
    let old_status = live.status();
    let version = old_version.max(max_kept) + 1;
    let bring_back = card.kind == CardKind::Revert || old_status != Some(Status::Retired);
    skill.version = Some(version);
    skill.name = Some(name.to_string());
    skill.status = Some(if bring_back {
        Status::Active
    } else {
        Status::Retired
    });
    let mut steps = vec![
        Step::Write {
            path: format!(
                "{}/{name}/{}/{old_version}/{}",
                layout::SKILLS,
                layout::HISTORY,
                layout::SKILL_FILE
            ),
            text: live.text.clone(),
        },
        Step::Write {
            path: live_file(name),
            text: render_skill(&skill),
        },
    ];
    let mut outcome = match (card.kind, card.restore_version) {
        (CardKind::Revert, Some(restored)) => {
            format!(
                "{name} v{restored} is live again as v{version}; v{old_version} is kept in history/"
            )
        }
        _ => format!("{name} is live as v{version}; v{old_version} is kept in history/"),
    };
    if card.kind == CardKind::Revert && old_status == Some(Status::Retired) {
        steps.push(Step::Carry {
            name: name.to_string(),
            carried: true,
        });
        outcome.push_str("; it was retired and is active and carried again");
    }
    Ok((outcome, steps))
}

/// What approving a revise or revert card would make the live `SKILL.md` (the text as it
/// would land: rendered, with the next version and its status), or why it would be refused.
pub fn preview(playbooks: &Playbooks, card: &Card) -> Result<String, PlaybookError> {
    let (_, steps) = replace_live(playbooks, card)?;
    let live = live_file(&card.skill);
    Ok(steps
        .into_iter()
        .find_map(|step| match step {
            Step::Write { path, text } if path == live => Some(text),
            _ => None,
        })
        .unwrap_or_default())
}

/// The highest version kept in a skill's `history/`, or 0.
pub(crate) fn max_kept_version(workspace: &std::path::Path, name: &str) -> u32 {
    std::fs::read_dir(layout::live_dir(workspace, name).join(layout::HISTORY))
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

/// Retires a skill: marked retired, off the carried list; the file stays.
fn retire(playbooks: &Playbooks, name: &str) -> Result<Plan, PlaybookError> {
    let workspace = &playbooks.workspace;
    let dir = layout::live_dir(workspace, name);
    let Some(live) = layout::load(&dir, name)? else {
        return Err(PlaybookError::refused(
            Rule::NotFound,
            format!("skills/{name} is gone; nothing to retire"),
        ));
    };
    let mut skill = live.parsed.map_err(|message| {
        PlaybookError::refused(
            Rule::Unreadable,
            format!("skills/{name}/SKILL.md does not read cleanly, so it cannot be marked retired: {message}"),
        )
    })?;
    skill.status = Some(Status::Retired);
    let steps = vec![
        Step::Write {
            path: live_file(name),
            text: render_skill(&skill),
        },
        Step::Carry {
            name: name.to_string(),
            carried: false,
        },
    ];
    Ok((
        format!("{name} is retired and off the carried list; its file stays in skills/{name}/"),
        steps,
    ))
}
