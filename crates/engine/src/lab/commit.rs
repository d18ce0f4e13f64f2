//! The verified, crash-safe commit of a validated change: every path is written atomically,
//! and an undo journal makes the set of writes all-or-nothing even across a `kill -9`.
//!
//! Before the first byte of the target changes, the journal
//! (`.runx/authoring/journal/<sha256(target_dir)>/`) holds a copy of every path the commit will
//! touch as it was (or a note that it did not exist) and the folders it will create, and its
//! manifest is fsynced. Then the writes and deletes run, the result is hashed, and only a
//! result equal to the validated candidate removes the journal. A mismatch rolls back from
//! the journal at once; a crash leaves the journal behind, and the next step that touches the
//! target ([`recover`]) rolls back from it before doing anything else.
//!
//! Architecture invariant: a target with a journal is never read or written by any lab step
//! until [`recover`] has put it back; after recovery it is byte for byte its pre-commit self.
//!
//! The manifest's life (armed, found, read back, retired) is [`crate::journal::Journal`]'s.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Component, Path, PathBuf};

use mindrune_core::Refusal;
use mindrune_core::sha256;
use serde::{Deserialize, Serialize};

use super::apply_error::{ApplyError, io_error};
use crate::atomic_file::{sync_dir, write_atomic};
use crate::journal::{Journal, JournalError};

const JOURNAL_SCHEMA: &str = "mindrune.lab.apply_journal.v1";

/// One change to one file: new contents and mode, or a delete.
#[derive(Debug, Clone)]
pub struct Operation {
    /// The file, relative to the repo root, `/`-separated.
    pub path: String,
    /// `Some((bytes, mode))` to write, `None` to delete.
    pub content: Option<(Vec<u8>, u32)>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    schema: String,
    target_dir: String,
    entries: Vec<Entry>,
    /// Folders the commit creates, outermost first (repo-relative).
    created_dirs: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    path: String,
    /// The journal file holding the prior bytes, or `None` when the path did not exist.
    prior: Option<String>,
    mode: u32,
}

fn target_hex(target_dir: &str) -> String {
    sha256(target_dir.as_bytes())
        .trim_start_matches("sha256:")
        .to_owned()
}

fn journal_relative(target_dir: &str) -> String {
    format!(".runx/authoring/journal/{}", target_hex(target_dir))
}

fn journal_dir(repo_root: &Path, target_dir: &str) -> PathBuf {
    repo_root.join(journal_relative(target_dir))
}

/// The journal's manifest inside its folder, beside the prior copies it names. Armed last, so
/// a folder without one never started changing the target.
fn manifest_journal(dir: &Path) -> Journal {
    Journal::at(dir.join("manifest.json"))
}

/// Whether an interrupted commit left its journal for this target.
pub(crate) fn has_journal(repo_root: &Path, target_dir: &str) -> bool {
    journal_dir(repo_root, target_dir).exists()
}

/// The per-target lock file `.runx/authoring/locks/<sha256(target_dir)>.lock`, as Runx names
/// it. Held while a commit runs and while an interrupted one is rolled back, so two lab
/// processes never interleave on one package. The lock is released when the file is dropped.
pub(crate) fn lock(repo_root: &Path, target_dir: &str) -> Result<File, ApplyError> {
    create_contained_dir(repo_root, ".runx/authoring/locks")?;
    let path = contained(
        repo_root,
        &format!(".runx/authoring/locks/{}.lock", target_hex(target_dir)),
    )?;
    let file = fs::OpenOptions::new()
        .custom_flags(libc::O_NOFOLLOW)
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(io_error("open the lock", &path))?;
    file.set_permissions(fs::Permissions::from_mode(0o600))
        .map_err(io_error("restrict the lock", &path))?;
    file.lock().map_err(io_error("take the lock", &path))?;
    Ok(file)
}

/// Resolves a repo-relative path for writing: only normal components, and no existing
/// component may be a symlink (checked with `symlink_metadata`, one component at a time), so a
/// write can never be redirected out of the workspace — not through the package, not through
/// `.runx`, and not through a journal someone planted.
pub(crate) fn contained(repo_root: &Path, relative: &str) -> Result<PathBuf, ApplyError> {
    let mut path = repo_root.to_path_buf();
    let mut parts = Path::new(relative).components().peekable();
    if parts.peek().is_none() {
        return Err(Refusal(format!("{relative:?} names no file")).into());
    }
    while let Some(component) = parts.next() {
        let Component::Normal(part) = component else {
            return Err(Refusal(format!(
                "{relative:?} leaves the workspace; only paths inside it are written"
            ))
            .into());
        };
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Refusal(format!(
                    "{} is a symlink; the Skill Lab never writes through one (replace it with a real folder or file)",
                    path.display()
                ))
                .into());
            }
            Ok(meta) if parts.peek().is_some() && !meta.is_dir() => {
                return Err(Refusal(format!("{} is not a folder", path.display())).into());
            }
            Ok(_) => {}
            // The rest does not exist yet: nothing below it can be a symlink.
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                for rest in parts {
                    let Component::Normal(part) = rest else {
                        return Err(Refusal(format!(
                            "{relative:?} leaves the workspace; only paths inside it are written"
                        ))
                        .into());
                    };
                    path.push(part);
                }
                return Ok(path);
            }
            Err(source) => return Err(io_error("read", &path)(source)),
        }
    }
    Ok(path)
}

/// Creates a folder under the repo root (and its missing parents) without following a
/// symlink anywhere on the way.
pub(crate) fn create_contained_dir(
    repo_root: &Path,
    relative: &str,
) -> Result<PathBuf, ApplyError> {
    let path = contained(repo_root, relative)?;
    fs::create_dir_all(&path).map_err(io_error("create", &path))?;
    // A racing writer could have put a symlink in while the folders were made: check again.
    contained(repo_root, relative)
}

/// The paths a journal may name for `target_dir`: files inside the target, and the
/// application record; anything else means the journal is not ours.
fn journal_entry_allowed(target_dir: &str, path: &str) -> bool {
    let inside_target = path
        .strip_prefix(target_dir)
        .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1);
    let record = path
        .strip_prefix(".runx/authoring/applications/")
        .and_then(|name| name.strip_suffix(".json"))
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    inside_target || record
}

/// Folders a journal may have created: the target, its ancestors, folders inside it, and the
/// application records' folder.
fn journal_dir_allowed(target_dir: &str, folder: &str) -> bool {
    folder == ".runx/authoring/applications"
        || folder == target_dir
        || target_dir
            .strip_prefix(folder)
            .is_some_and(|rest| rest.starts_with('/'))
        || folder
            .strip_prefix(target_dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Checks a journal read from disk before anything is done with it: its schema and target,
/// every path, every saved copy's name, and every mode (a regular file's, no set-id bits).
fn check_manifest(manifest: &Manifest, target_dir: &str) -> Result<(), String> {
    if manifest.schema != JOURNAL_SCHEMA {
        return Err(format!(
            "schema {:?} is not {JOURNAL_SCHEMA}",
            manifest.schema
        ));
    }
    if manifest.target_dir != target_dir {
        return Err(format!(
            "it belongs to {:?}, not {target_dir:?}",
            manifest.target_dir
        ));
    }
    for entry in &manifest.entries {
        if !journal_entry_allowed(target_dir, &entry.path) {
            return Err(format!("it names {:?}, outside the package", entry.path));
        }
        if entry.mode & 0o177000 != 0o100000 || entry.mode & 0o7000 != 0 {
            return Err(format!("it gives {:?} mode {:o}", entry.path, entry.mode));
        }
        if let Some(prior) = &entry.prior
            && !prior
                .strip_prefix("prior-")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return Err(format!("it names a saved copy {prior:?}"));
        }
    }
    if let Some(folder) = manifest
        .created_dirs
        .iter()
        .find(|folder| !journal_dir_allowed(target_dir, folder))
    {
        return Err(format!("it names a folder {folder:?} outside the package"));
    }
    Ok(())
}

/// Rolls back an apply that was interrupted, if its journal is there. The caller holds the
/// target's [`lock`]. Returns whether anything was rolled back.
pub(crate) fn recover(repo_root: &Path, target_dir: &str) -> Result<bool, ApplyError> {
    let dir = journal_dir(repo_root, target_dir);
    let journal = manifest_journal(&dir);
    let manifest_path = journal.manifest();
    let read = match journal.read::<Manifest>() {
        Ok(Some(manifest)) => Ok(manifest),
        Ok(None) => {
            // A journal folder without a manifest never armed: nothing was touched yet.
            if dir.exists() {
                fs::remove_dir_all(&dir).map_err(io_error("remove", &dir))?;
            }
            return Ok(false);
        }
        Err(JournalError::Io(source)) => return Err(io_error("read", manifest_path)(source)),
        Err(JournalError::Json(err)) => Err(err.to_string()),
    };
    let manifest: Manifest = read
        .and_then(|manifest| check_manifest(&manifest, target_dir).map(|()| manifest))
        .map_err(|problem| {
            Refusal(format!(
                "the apply journal {} cannot be trusted ({problem}); nothing was rolled back: inspect the target by hand, then remove the journal",
                manifest_path.display()
            ))
        })?;
    roll_back(repo_root, &dir, &manifest)?;
    fs::remove_dir_all(&dir).map_err(io_error("remove", &dir))?;
    if let Some(parent) = dir.parent() {
        sync_dir(parent).map_err(io_error("sync", parent))?;
    }
    Ok(true)
}

fn roll_back(repo_root: &Path, dir: &Path, manifest: &Manifest) -> Result<(), ApplyError> {
    for entry in manifest.entries.iter().rev() {
        let path = contained(repo_root, &entry.path)?;
        remove_interrupted_temps(&path)?;
        match &entry.prior {
            Some(name) => {
                let saved = contained(dir, name)?;
                let bytes = fs::read(&saved).map_err(io_error("read", &saved))?;
                if let Some(parent) = path.parent() {
                    fs::create_dir_all(parent).map_err(io_error("create", parent))?;
                }
                write_atomic(&path, &bytes, entry.mode).map_err(io_error("restore", &path))?;
            }
            None => match fs::remove_file(&path) {
                Ok(()) => {}
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(source) => return Err(io_error("remove", &path)(source)),
            },
        }
    }
    for folder in manifest.created_dirs.iter().rev() {
        let path = contained(repo_root, folder)?;
        // Only an empty folder is ours to remove; anything else was put there by someone else.
        let _ = fs::remove_dir(&path);
    }
    Ok(())
}

/// Removes the temp file an interrupted write of `path` left beside it, so that a
/// rolled-back package holds nothing of the change and a folder the commit created is empty
/// again. The caller holds the target's lock, so no live write of the same file can be under
/// way.
fn remove_interrupted_temps(path: &Path) -> Result<(), ApplyError> {
    crate::atomic_file::remove_interrupted_temps(path)
        .map_err(|(temp, source)| io_error("remove", &temp)(source))
}

/// Writes a crash point for the fault-injection tests: with `MINDRUNE_LAB_CRASH_AT=N` in a
/// debug build, the process aborts (as a `kill -9` would stop it) just before mutation number
/// `N` of a commit. Release builds have no crash points.
fn crash_point(step: usize) {
    #[cfg(debug_assertions)]
    if std::env::var("MINDRUNE_LAB_CRASH_AT")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        == Some(step)
    {
        std::process::abort();
    }
    #[cfg(not(debug_assertions))]
    let _ = step;
}

/// Applies `operations` under the target's lock with an undo journal, then runs `verify`
/// (which hashes the result); on any failure, and when `verify` fails, rolls every path back.
pub fn commit_verified(
    repo_root: &Path,
    target_dir: &str,
    operations: &[Operation],
    verify: impl FnOnce() -> Result<String, ApplyError>,
) -> Result<String, ApplyError> {
    let dir = journal_dir(repo_root, target_dir);
    let manifest = arm_journal(repo_root, target_dir, &dir, operations)?;
    let mut step = 0;
    let outcome = (|| {
        for folder in &manifest.created_dirs {
            step += 1;
            crash_point(step);
            let path = contained(repo_root, folder)?;
            fs::create_dir(&path).map_err(io_error("create", &path))?;
        }
        for operation in operations {
            step += 1;
            crash_point(step);
            let path = contained(repo_root, &operation.path)?;
            match &operation.content {
                Some((bytes, mode)) => {
                    write_atomic(&path, bytes, *mode).map_err(io_error("write", &path))?
                }
                None => {
                    fs::remove_file(&path).map_err(io_error("delete", &path))?;
                    if let Some(parent) = path.parent() {
                        sync_dir(parent).map_err(io_error("sync", parent))?;
                    }
                }
            }
        }
        step += 1;
        crash_point(step);
        verify()
    })();
    match outcome {
        Ok(digest) => {
            // The commit stands once the manifest is gone; the prior copies go after it.
            let journal = manifest_journal(&dir);
            journal
                .retire()
                .map_err(io_error("remove", journal.manifest()))?;
            let _ = fs::remove_dir_all(&dir);
            Ok(digest)
        }
        Err(err) => {
            roll_back(repo_root, &dir, &manifest)?;
            fs::remove_dir_all(&dir).map_err(io_error("remove", &dir))?;
            Err(err)
        }
    }
}

/// Saves every path's prior state into the journal and writes its manifest last, fsynced:
/// from that moment a crash is recoverable.
fn arm_journal(
    repo_root: &Path,
    target_dir: &str,
    dir: &Path,
    operations: &[Operation],
) -> Result<Manifest, ApplyError> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(io_error("remove", dir))?;
    }
    create_contained_dir(repo_root, &journal_relative(target_dir))?;
    if let Some(parent) = dir.parent() {
        // The journal's own folder entry must survive a power loss as surely as its contents.
        sync_dir(parent).map_err(io_error("sync", parent))?;
    }
    let armed = fill_journal(repo_root, target_dir, dir, operations);
    if armed.is_err() {
        let _ = fs::remove_dir_all(dir);
    }
    armed
}

fn fill_journal(
    repo_root: &Path,
    target_dir: &str,
    dir: &Path,
    operations: &[Operation],
) -> Result<Manifest, ApplyError> {
    let mut entries = Vec::with_capacity(operations.len());
    let mut created_dirs: Vec<String> = Vec::new();
    for (index, operation) in operations.iter().enumerate() {
        let path = contained(repo_root, &operation.path)?;
        let prior = match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {
                let name = format!("prior-{index}");
                let bytes = fs::read(&path).map_err(io_error("read", &path))?;
                write_atomic(&dir.join(&name), &bytes, 0o600)
                    .map_err(io_error("journal", &path))?;
                Some((name, meta.permissions().mode()))
            }
            Ok(_) => {
                return Err(Refusal(format!(
                    "{} is not a regular file; refusing to replace it",
                    operation.path
                ))
                .into());
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(source) => return Err(io_error("read", &path)(source)),
        };
        // The folders to create: missing ancestors, outermost first, each listed once.
        let mut missing = Vec::new();
        let mut relative = Path::new(&operation.path).parent();
        while let Some(folder) = relative.filter(|folder| !folder.as_os_str().is_empty()) {
            if repo_root.join(folder).exists() {
                break;
            }
            missing.push(folder.to_string_lossy().into_owned());
            relative = folder.parent();
        }
        for folder in missing.into_iter().rev() {
            if !created_dirs.contains(&folder) {
                created_dirs.push(folder);
            }
        }
        entries.push(Entry {
            path: operation.path.clone(),
            mode: prior.as_ref().map_or(0o100644, |(_, mode)| *mode),
            prior: prior.map(|(name, _)| name),
        });
    }
    let manifest = Manifest {
        schema: JOURNAL_SCHEMA.into(),
        target_dir: target_dir.into(),
        entries,
        created_dirs,
    };
    let journal = manifest_journal(dir);
    journal
        .arm(&manifest, Some(0o600))
        .map_err(|err| match err {
            JournalError::Io(source) => io_error("write", journal.manifest())(source),
            JournalError::Json(err) => io_error("write", journal.manifest())(io::Error::other(err)),
        })?;
    Ok(manifest)
}
