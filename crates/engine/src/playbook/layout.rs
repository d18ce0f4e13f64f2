//! Where a workspace keeps its skills, and the few primitive writes everything else is built
//! from: an atomic file write, an atomic folder move, and the carried list.
//!
//! ```text
//! <workspace>/skills/<name>/SKILL.md             a live skill (active or retired)
//! <workspace>/skills/<name>/history/<v>/SKILL.md  every version it replaced
//! <workspace>/skills/pending/<name>/SKILL.md     a draft waiting on its card
//! <workspace>/skills/rejected/<name>/            a draft turned down, REASON.md beside it
//! <workspace>/skills/carried.txt                 the skills described on every turn
//! <workspace>/.mindrune/playbooks.sqlite3        the ledger (cards, usage log, index)
//! ```

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use mindrune_core::{MAX_SKILL_BYTES, SkillFile, Status, parse_skill_file};

use super::{PlaybookError, Rule, io_error};
use crate::atomic_file::{Replace, write_atomic_with};

pub(crate) const SKILLS: &str = "skills";
pub(crate) const PENDING: &str = "pending";
pub(crate) const REJECTED: &str = "rejected";
pub(crate) const HISTORY: &str = "history";
pub(crate) const SKILL_FILE: &str = "SKILL.md";
pub(crate) const REASON_FILE: &str = "REASON.md";
pub(crate) const CARRIED: &str = "carried.txt";
pub(crate) const MAX_NAME_LEN: usize = 64;

/// Makes `skills/`, `skills/pending/`, `skills/rejected/` and `.mindrune/` when missing.
pub(crate) fn prepare(workspace: &Path) -> Result<(), PlaybookError> {
    for dir in [
        skills_dir(workspace),
        skills_dir(workspace).join(PENDING),
        skills_dir(workspace).join(REJECTED),
        workspace.join(".mindrune"),
    ] {
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
    }
    Ok(())
}

pub fn skills_dir(workspace: &Path) -> PathBuf {
    workspace.join(SKILLS)
}

pub(crate) fn ledger_path(workspace: &Path) -> PathBuf {
    workspace.join(".mindrune").join("playbooks.sqlite3")
}

pub fn live_dir(workspace: &Path, name: &str) -> PathBuf {
    skills_dir(workspace).join(name)
}

pub(crate) fn pending_dir(workspace: &Path, name: &str) -> PathBuf {
    skills_dir(workspace).join(PENDING).join(name)
}

pub(crate) fn rejected_dir(workspace: &Path, name: &str) -> PathBuf {
    skills_dir(workspace).join(REJECTED).join(name)
}

pub(crate) fn history_dir(workspace: &Path, name: &str, version: u32) -> PathBuf {
    live_dir(workspace, name)
        .join(HISTORY)
        .join(version.to_string())
}

/// A skill name is a folder name the human can type: lowercase letters, digits and `-`,
/// starting with a letter or digit, at most 64 bytes, and not one of the folders `skills/`
/// keeps for itself. Capitals are refused so that `Weekly` and `weekly` cannot be two skills on
/// a case-insensitive disk.
pub(crate) fn check_name(name: &str) -> Result<(), PlaybookError> {
    let refuse = |why: &str| {
        Err(PlaybookError::refused(
            Rule::BadName,
            format!(
                "the skill name {name:?} {why}; use lowercase letters, digits and - (e.g. weekly-report)"
            ),
        ))
    };
    if name.is_empty() {
        return refuse("is empty");
    }
    if name.len() > MAX_NAME_LEN {
        return refuse(&format!("is longer than {MAX_NAME_LEN} bytes"));
    }
    if name.contains('/') || name.contains('\\') || name.contains("..") {
        return refuse("is a path, not a name");
    }
    if [PENDING, REJECTED, HISTORY].contains(&name) {
        return refuse("is a folder skills/ keeps for itself");
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        || name.starts_with('-')
    {
        return refuse("has characters a skill name may not have");
    }
    Ok(())
}

/// Writes `path` atomically (see [`crate::atomic_file::write_atomic_with`]), creating its
/// folder first and fsyncing it after, so a crash leaves the old file or the new one and never
/// a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), PlaybookError> {
    let folder = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(folder).map_err(io_error("create", folder))?;
    let how = Replace {
        mode: None,
        sync_folder: true,
    };
    write_atomic_with(path, bytes, how).map_err(io_error("write", path))
}

/// Moves a folder to a new place in one rename (both are under `skills/`, one filesystem), and
/// fsyncs both parents so the move survives a crash.
pub(crate) fn move_dir(from: &Path, to: &Path) -> Result<(), PlaybookError> {
    if let Some(parent) = to.parent() {
        fs::create_dir_all(parent).map_err(io_error("create", parent))?;
    }
    fs::rename(from, to).map_err(io_error("move", from))?;
    for parent in [from.parent(), to.parent()].into_iter().flatten() {
        sync_dir(parent)?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), PlaybookError> {
    crate::atomic_file::sync_dir(dir).map_err(io_error("sync", dir))
}

/// Reads a skill folder's `SKILL.md` as text: `Ok(None)` when it does not exist. Refuses a
/// symlinked file and anything over the size limit.
pub fn read_skill_text(dir: &Path) -> Result<Option<String>, PlaybookError> {
    let path = dir.join(SKILL_FILE);
    let metadata = match fs::symlink_metadata(&path) {
        Ok(metadata) => metadata,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error("read", &path)(err)),
    };
    if !metadata.is_file() {
        return Err(PlaybookError::refused(
            Rule::BadPath,
            format!("{} is not a plain file", path.display()),
        ));
    }
    if metadata.len() > MAX_SKILL_BYTES as u64 {
        return Err(PlaybookError::refused(
            Rule::Unreadable,
            format!(
                "{} is {} bytes, over the {}-byte limit for a skill file",
                path.display(),
                metadata.len(),
                MAX_SKILL_BYTES
            ),
        ));
    }
    let bytes = fs::read(&path).map_err(io_error("read", &path))?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        PlaybookError::refused(
            Rule::Unreadable,
            format!("{} is not UTF-8 text", path.display()),
        )
    })
}

/// One skill found on disk, with its parse (or why it does not parse).
#[derive(Debug, Clone)]
pub struct OnDisk {
    pub(crate) name: String,
    pub(crate) dir: PathBuf,
    pub(crate) text: String,
    pub(crate) parsed: Result<SkillFile, String>,
}

impl OnDisk {
    pub(crate) fn status(&self) -> Option<Status> {
        self.parsed.as_ref().ok().and_then(|skill| skill.status)
    }

    pub(crate) fn version(&self) -> Option<u32> {
        self.parsed.as_ref().ok().and_then(|skill| skill.version)
    }

    /// The fingerprint of the exact file: what a revision must have been written against.
    pub(crate) fn fingerprint(&self) -> String {
        mindrune_core::sha256(self.text.as_bytes())
    }
}

/// Reads one skill folder.
pub(crate) fn load(dir: &Path, name: &str) -> Result<Option<OnDisk>, PlaybookError> {
    let Some(text) = read_skill_text(dir)? else {
        return Ok(None);
    };
    let parsed = parse_skill_file(&text)
        .map(|(skill, _)| skill)
        .map_err(|err| err.to_string());
    Ok(Some(OnDisk {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        text,
        parsed,
    }))
}

/// Every skill in a folder of skill folders (`skills/` itself, or `skills/pending/`), in name
/// order. Folders without a `SKILL.md`, symlinks and the reserved folders are skipped.
pub(crate) fn list(folder: &Path) -> Result<Vec<OnDisk>, PlaybookError> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(io_error("list", folder)(err)),
    };
    let mut skills = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io_error("list", folder))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if [PENDING, REJECTED].contains(&name.as_str()) || name.starts_with('.') {
            continue;
        }
        let is_dir = entry.file_type().map(|kind| kind.is_dir()).unwrap_or(false);
        if !is_dir {
            continue;
        }
        // A folder a human made by hand with an odd name is not a skill MindRune can address.
        if check_name(&name).is_err() {
            continue;
        }
        // A hand-made file that cannot be read (too large, not text) is listed as unreadable
        // rather than hiding the others.
        match load(&entry.path(), &name) {
            Ok(Some(skill)) => skills.push(skill),
            Ok(None) => {}
            Err(PlaybookError::Refused { message, .. }) => skills.push(OnDisk {
                name: name.clone(),
                dir: entry.path(),
                text: String::new(),
                parsed: Err(message),
            }),
            Err(err) => return Err(err),
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(skills)
}

/// The names on `skills/carried.txt`, in file order.
pub fn carried(workspace: &Path) -> Result<Vec<String>, PlaybookError> {
    let path = skills_dir(workspace).join(CARRIED);
    match fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(str::to_string)
            .collect()),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(io_error("read", &path)(err)),
    }
}

/// Adds a name to, or removes it from, `skills/carried.txt` (atomically; a no-op when it is
/// already so).
pub(crate) fn set_carried(
    workspace: &Path,
    name: &str,
    carried_now: bool,
) -> Result<(), PlaybookError> {
    let mut names = carried(workspace)?;
    let present = names.iter().any(|carried| carried == name);
    match (present, carried_now) {
        (true, true) | (false, false) => return Ok(()),
        (false, true) => names.push(name.to_string()),
        (true, false) => names.retain(|carried| carried != name),
    }
    let mut text = String::from(
        "# Skills described on every turn. A skill is added when it goes live and removed when it\n# is retired; nothing else moves it.\n",
    );
    for name in names {
        text.push_str(&name);
        text.push('\n');
    }
    write_atomic(&skills_dir(workspace).join(CARRIED), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_paths_or_reserved_are_refused() {
        for bad in [
            "", "a/b", "..", "../x", "x..y", "pending", "rejected", "history", "Weekly", "-x",
            "a b", "é",
        ] {
            assert_eq!(
                check_name(bad).unwrap_err().rule(),
                Some(Rule::BadName),
                "{bad:?}"
            );
        }
        for good in ["weekly-report", "a", "2fa-setup"] {
            check_name(good).unwrap();
        }
        assert!(check_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn carried_list_adds_and_removes_each_name_once() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path()).unwrap();
        set_carried(dir.path(), "a", true).unwrap();
        set_carried(dir.path(), "b", true).unwrap();
        set_carried(dir.path(), "a", true).unwrap();
        assert_eq!(carried(dir.path()).unwrap(), ["a", "b"]);
        set_carried(dir.path(), "a", false).unwrap();
        assert_eq!(carried(dir.path()).unwrap(), ["b"]);
    }
}
