//! A journaled set of file changes: files that cannot join one transaction still change all
//! or not at all, because a manifest of the set is written (atomically, its folder fsynced)
//! before the first file changes and retired only once the whole set stands. A crash leaves
//! the manifest behind, and the next process that opens the place finds it and settles the set
//! from it before anything else.
//!
//! How a set is settled is each user's: the playbook's apply journal (`playbook::journal`)
//! redoes a card's answer, every step safe to repeat; the Lab's commit journal (`lab::commit`)
//! undoes an unverified commit from the prior copies it saved. Writing the manifest, finding
//! it, reading it back whole and retiring it is the same for both, and is here.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic_file::{Replace, sync_dir, write_atomic_with};

/// The manifest of one journaled set of file changes, at a fixed path.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    manifest: PathBuf,
}

/// Why a manifest could not be written or read back.
#[derive(Debug)]
pub(crate) enum JournalError {
    /// The file system refused.
    Io(io::Error),
    /// The record cannot be written as JSON, or the manifest's bytes are not the record it
    /// should hold: it is whole (written atomically), so it was not written by this journal.
    Json(serde_json::Error),
}

impl Journal {
    /// The journal whose manifest is `manifest`.
    pub(crate) fn at(manifest: impl Into<PathBuf>) -> Journal {
        Journal {
            manifest: manifest.into(),
        }
    }

    pub(crate) fn manifest(&self) -> &Path {
        &self.manifest
    }

    /// Writes the manifest, whole, with `mode` (`None`: the umask's), creating its folder if
    /// missing. From the moment this returns, a crash is settled from `record`.
    pub(crate) fn arm(
        &self,
        record: &impl Serialize,
        mode: Option<u32>,
    ) -> Result<(), JournalError> {
        let text = serde_json::to_vec_pretty(record).map_err(JournalError::Json)?;
        let folder = self.manifest.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(folder).map_err(JournalError::Io)?;
        let how = Replace {
            mode,
            sync_folder: true,
        };
        write_atomic_with(&self.manifest, &text, how).map_err(JournalError::Io)
    }

    /// Whether a set of changes was interrupted and waits to be settled.
    pub(crate) fn pending(&self) -> bool {
        self.manifest.exists()
    }

    /// The manifest an interrupted set left, or `None` when there is none.
    pub(crate) fn read<T: DeserializeOwned>(&self) -> Result<Option<T>, JournalError> {
        let text = match std::fs::read(&self.manifest) {
            Ok(text) => text,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(JournalError::Io(err)),
        };
        serde_json::from_slice(&text)
            .map(Some)
            .map_err(JournalError::Json)
    }

    /// Retires the manifest once the whole set stands (or is undone), durably: after this a
    /// crash settles nothing. A manifest already gone is fine.
    pub(crate) fn retire(&self) -> io::Result<()> {
        match std::fs::remove_file(&self.manifest) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        }
        sync_dir(self.manifest.parent().unwrap_or(Path::new(".")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_armed_manifest_reads_back_until_it_is_retired() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(dir.path().join("state/journal.json"));
        assert!(!journal.pending());
        assert!(journal.read::<Vec<String>>().unwrap().is_none());

        journal
            .arm(&vec!["a".to_string(), "b".into()], Some(0o600))
            .unwrap();
        assert!(journal.pending());
        assert_eq!(
            journal.read::<Vec<String>>().unwrap(),
            Some(vec!["a".to_string(), "b".into()])
        );

        journal.retire().unwrap();
        assert!(!journal.pending());
        journal.retire().unwrap();
        assert_eq!(
            std::fs::read_dir(dir.path().join("state")).unwrap().count(),
            0
        );
    }

    #[test]
    fn a_manifest_of_another_shape_is_a_decode_error_not_an_empty_journal() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::at(dir.path().join("journal.json"));
        std::fs::write(journal.manifest(), "{\"not\": \"a list\"}").unwrap();
        assert!(matches!(
            journal.read::<Vec<String>>(),
            Err(JournalError::Json(_))
        ));
    }
}
