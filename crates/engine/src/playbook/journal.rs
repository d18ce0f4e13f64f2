//! The apply journal: how answering a card survives a crash.
//!
//! A card's answer changes files under `skills/` and a row in the ledger. The files cannot join
//! the ledger's transaction, so before touching any file the whole change is written down in
//! `.mindrune/applying.json` (atomically): the file operations, each one safe to do twice, and
//! the card's answer. Then the files change, then the ledger commits, then the journal goes.
//!
//! A crash anywhere leaves one of three states, and the next write (or open) of the workspace
//! finishes the job: no journal (nothing had started, or all was done); a journal with the card
//! still waiting (the operations are done again, all of them, and the card answered); a journal
//! with the card answered (the operations are done again, harmlessly, and the journal removed).
//! So a file is always old or new, and the card never says "waiting" about a change that landed.
//! The manifest's life (armed, found, read back, retired) is [`crate::journal::Journal`]'s.

use std::path::{Path, PathBuf};

use rusqlite::Transaction;
use serde::{Deserialize, Serialize};

use super::layout;
use super::ledger::{self, CardState};
use super::{PlaybookError, io_error};
use crate::journal::{Journal, JournalError};

const JOURNAL: &str = "applying.json";

/// One file operation, safe to repeat. Paths are relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(crate) enum Step {
    /// Write a file atomically with these exact contents.
    Write { path: String, text: String },
    /// Move a folder; done when `from` is gone and `to` is there.
    MoveDir { from: String, to: String },
    /// Put a name on the carried list, or take it off.
    Carry { name: String, carried: bool },
}

/// A card's answer and the file operations that carry it out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) card: i64,
    pub(crate) state: String,
    pub(crate) answered_by: String,
    pub(crate) reason: Option<String>,
    pub(crate) outcome: String,
    pub(crate) steps: Vec<Step>,
    /// The card itself, when it is filed in the very transaction that answers it (a change
    /// applied on its own under `auto`): a crash before the commit loses the row with the
    /// answer, so finishing the journal files it again, or the files would change with no card
    /// saying so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) filed: Option<FiledCard>,
}

/// A card's row as it was filed, kept in the journal (see [`Entry::filed`]): its kind and the
/// row itself, whose fields the journal holds beside `kind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FiledCard {
    pub(crate) kind: String,
    #[serde(flatten)]
    pub(crate) card: ledger::NewCard,
}

impl FiledCard {
    pub(crate) fn new(kind: ledger::CardKind, card: &ledger::NewCard) -> FiledCard {
        FiledCard {
            kind: kind.as_str().to_string(),
            card: card.clone(),
        }
    }
}

fn journal_path(workspace: &Path) -> PathBuf {
    workspace.join(".mindrune").join(JOURNAL)
}

fn journal(workspace: &Path) -> Journal {
    Journal::at(journal_path(workspace))
}

/// Writes the journal, does every step, and answers the card, inside the caller's locked
/// transaction. The caller removes the journal with [`clear`] after the commit.
pub(crate) fn apply(
    workspace: &Path,
    tx: &Transaction<'_>,
    entry: &Entry,
) -> Result<(), PlaybookError> {
    let journal = journal(workspace);
    journal.arm(entry, None).map_err(|err| match err {
        JournalError::Io(source) => io_error("write", journal.manifest())(source),
        JournalError::Json(err) => {
            io_error("encode", journal.manifest())(std::io::Error::other(err))
        }
    })?;
    finish(workspace, tx, entry)
}

fn finish(workspace: &Path, tx: &Transaction<'_>, entry: &Entry) -> Result<(), PlaybookError> {
    if let Some(FiledCard { kind, card: filed }) = &entry.filed {
        // Filed again under its own number when the crash took the uncommitted row (no other
        // card can have taken the number: every write finishes the journal first).
        ledger::refile_card(tx, entry.card, kind, filed)?;
    }
    for step in &entry.steps {
        run(workspace, step)?;
    }
    let state = match entry.state.as_str() {
        "applied" => CardState::Applied,
        "rejected" => CardState::Rejected,
        _ => CardState::Refused,
    };
    // A card already answered (the crash came after the commit) is left as it is.
    ledger::answer_card(
        tx,
        entry.card,
        state,
        &entry.answered_by,
        entry.reason.as_deref(),
        &entry.outcome,
    )?;
    Ok(())
}

/// A journal step's path must be a clean relative path under `skills/`: the journal is
/// MindRune's own file, but a replay must never write or move anything else even if the file
/// were tampered with.
fn under_skills(workspace: &Path, path: &str) -> Result<PathBuf, PlaybookError> {
    match crate::workspace::clean_relative(path) {
        Some(clean) if clean.starts_with(layout::SKILLS) && clean != Path::new(layout::SKILLS) => {
            Ok(workspace.join(clean))
        }
        _ => Err(super::PlaybookError::refused(
            super::Rule::BadPath,
            format!(
                "the apply journal names {path:?}, which is not under skills/; it was not written by MindRune: move .mindrune/{JOURNAL} aside"
            ),
        )),
    }
}

fn run(workspace: &Path, step: &Step) -> Result<(), PlaybookError> {
    match step {
        Step::Write { path, .. } | Step::MoveDir { from: path, .. } => {
            under_skills(workspace, path)?;
        }
        Step::Carry { name, .. } => layout::check_name(name)?,
    }
    if let Step::MoveDir { to, .. } = step {
        under_skills(workspace, to)?;
    }
    match step {
        Step::Write { path, text } => {
            let path = workspace.join(path);
            layout::write_atomic(&path, text.as_bytes())?;
            remove_interrupted_temps(&path)
        }
        Step::MoveDir { from, to } => {
            let (from, to) = (workspace.join(from), workspace.join(to));
            if !from.exists() && to.exists() {
                return Ok(());
            }
            if to.exists() {
                // Only a folder this very journal put there half-way can be here: a rejected
                // draft's old folder (the door refuses the name otherwise).
                std::fs::remove_dir_all(&to).map_err(io_error("replace", &to))?;
            }
            layout::move_dir(&from, &to)
        }
        Step::Carry { name, carried } => {
            layout::set_carried(workspace, name, *carried)?;
            remove_interrupted_temps(&layout::skills_dir(workspace).join(layout::CARRIED))
        }
    }
}

/// Removes what an interrupted [`layout::write_atomic`] of `path` left beside it. Only ever
/// called inside the workspace lock, so no live write of the same file can be under way.
fn remove_interrupted_temps(path: &Path) -> Result<(), PlaybookError> {
    crate::atomic_file::remove_interrupted_temps(path)
        .map_err(|(temp, source)| io_error("remove", &temp)(source))
}

/// Finishes a change a crash interrupted, inside the caller's locked transaction. Called at
/// the start of every locked write of a workspace.
pub(crate) fn recover(workspace: &Path, tx: &Transaction<'_>) -> Result<(), PlaybookError> {
    let journal = journal(workspace);
    // The journal is written atomically, so it is whole or absent; anything else is not ours.
    let entry: Entry = match journal.read() {
        Ok(Some(entry)) => entry,
        Ok(None) => return Ok(()),
        Err(JournalError::Io(err)) => return Err(io_error("read", journal.manifest())(err)),
        Err(JournalError::Json(err)) => {
            return Err(io_error("read the apply journal", journal.manifest())(
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{err}; it is MindRune's own file: move it aside to go on"),
                ),
            ));
        }
    };
    tracing::warn!(
        card = entry.card,
        "finishing card #{} after an interruption",
        entry.card
    );
    finish(workspace, tx, &entry)
}

/// Whether an interrupted change waits to be finished.
pub(crate) fn pending(workspace: &Path) -> bool {
    journal(workspace).pending()
}

/// Removes the journal once the ledger has committed.
pub(crate) fn clear(workspace: &Path) -> Result<(), PlaybookError> {
    let journal = journal(workspace);
    journal
        .retire()
        .map_err(|err| io_error("remove", journal.manifest())(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal left by a crash is read by the next process, maybe a newer one: a filed card
    /// keeps its flat shape, every field of the row beside `kind`.
    #[test]
    fn a_filed_card_is_kept_flat_beside_its_kind_and_reads_back() {
        let written = serde_json::json!({
            "kind": "revision",
            "skill": "buy-milk",
            "filed_by": "fixer",
            "proposal": "skills/pending/buy-milk.md",
            "fingerprint": "sha256:ab",
            "base_version": 3,
            "restore_version": null,
            "report_id": 7,
            "why": "the shop moved",
        });
        let filed: FiledCard = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(filed.kind, "revision");
        assert_eq!(filed.card.base_version, Some(3));
        assert_eq!(filed.card.restore_version, None);
        assert_eq!(serde_json::to_value(&filed).unwrap(), written);
    }
}
