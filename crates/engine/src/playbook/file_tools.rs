//! The assistant's file tools on its workspace.
//!
//! `workspace_read` reads any plain file inside the workspace; a read of a skill writes one line
//! to the usage log. `file_write`, `file_copy` and `file_move` write anywhere in the workspace
//! except `skills/`: that path rule outranks every permission, in every mode, because a file
//! dropped there directly would skip the door's checks.
//!
//! Architecture invariant: the path rule is decided on the path as the filesystem will resolve
//! it: lexically (`..`, `.`), with every existing component checked for a symlink (refused),
//! and by comparing names case-insensitively (`Skills/`, `SKILLS/` on a case-insensitive disk).

use std::fs;
use std::path::{Component, Path, PathBuf};

use mindrune_core::{owed_fields, parse_skill_file};

use super::layout;
use super::{PlaybookError, Playbooks, Rule, io_error};
use crate::workspace::{self, ReadError};

/// The largest file `workspace_read` returns.
pub(crate) const MAX_READ_BYTES: u64 = 1024 * 1024;
/// The largest file `file_write` writes.
pub const MAX_WRITE_BYTES: usize = 10 * 1024 * 1024;

impl Playbooks {
    /// `workspace_read`: a file's text. `turn` is where the record of the current turn is on
    /// disk, when the host says; it goes into the usage line of a skill read.
    pub fn workspace_read(&self, path: &str, turn: Option<&str>) -> Result<String, PlaybookError> {
        self.workspace_read_noting(path, turn).map(|read| read.text)
    }

    /// `workspace_read`, with the fields a skill read owes (a hand-written skill may leave
    /// some out; they are reported wherever it is read, never hidden).
    pub fn workspace_read_noting(
        &self,
        path: &str,
        turn: Option<&str>,
    ) -> Result<Read, PlaybookError> {
        // A read that names no turn record gets the host's (its hooks note it).
        let host_turn = self.host_turn().map(|host| host.transcript_path);
        let turn = turn.or(host_turn.as_deref());
        let relative = self.readable(path, "workspace_read")?;
        let skill = skill_of(&relative);
        let target = match &skill {
            Some((name, true)) => format!("{}/{name}/{}", layout::SKILLS, layout::SKILL_FILE),
            _ => relative.clone(),
        };
        let read = workspace::read_contained_limited(&self.workspace, &target, MAX_READ_BYTES);
        let result = match read {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(PlaybookError::refused(
                Rule::NotFound,
                format!("{target} does not exist"),
            )),
            Err(err) => Err(read_refusal(err)),
        };
        let mut owed = Vec::new();
        if let Some((name, _)) = skill {
            let parsed = result
                .as_ref()
                .ok()
                .and_then(|text| parse_skill_file(text).ok());
            let revision = parsed.as_ref().and_then(|(skill, _)| skill.version);
            if let Some((skill, _)) = &parsed {
                owed = owed_fields(skill);
            }
            self.ledger
                .log_read(&name, revision, result.is_ok(), turn)?;
        }
        result.map(|text| Read { text, owed })
    }

    /// A read of a file by the host's own tool (Claude Code's `Read`): when it is a live skill's
    /// `SKILL.md`, the same usage line `workspace_read` writes (the skill, the revision on disk,
    /// whether the read went through, the turn record). Returns the skill's name, if it was one.
    pub(crate) fn note_host_read(
        &self,
        path: &Path,
        ok: bool,
        turn: Option<&str>,
    ) -> Result<Option<String>, PlaybookError> {
        let resolved = crate::host_guard::resolve(path);
        let Some(relative) = resolved
            .strip_prefix(&self.workspace)
            .ok()
            .and_then(Path::to_str)
        else {
            return Ok(None);
        };
        let Some((name, _)) = skill_of(relative) else {
            return Ok(None);
        };
        let revision = fs::read_to_string(&resolved)
            .ok()
            .and_then(|text| parse_skill_file(&text).ok())
            .and_then(|(skill, _)| skill.version);
        self.ledger.log_read(&name, revision, ok, turn)?;
        Ok(Some(name))
    }

    /// `file_write`: writes a file (atomically), making its folders.
    pub fn file_write(&self, path: &str, content: &str) -> Result<String, PlaybookError> {
        let target = self.writable(path, "file_write")?;
        if content.len() > MAX_WRITE_BYTES {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                format!(
                    "{} bytes is over file_write's {MAX_WRITE_BYTES}-byte limit",
                    content.len()
                ),
            ));
        }
        layout::write_atomic(&self.workspace.join(&target), content.as_bytes())?;
        Ok(format!(
            "wrote {} ({} bytes)",
            target.display(),
            content.len()
        ))
    }

    /// `file_copy`: copies a plain file (from anywhere in the workspace, `skills/` included) to a
    /// place outside `skills/`.
    pub fn file_copy(&self, from: &str, to: &str) -> Result<String, PlaybookError> {
        let source = self.readable(from, "file_copy")?;
        let target = self.writable(to, "file_copy")?;
        let text = match workspace::read_contained_limited(
            &self.workspace,
            &source,
            MAX_WRITE_BYTES as u64,
        ) {
            Ok(Some(text)) => text,
            Ok(None) => {
                return Err(PlaybookError::refused(
                    Rule::NotFound,
                    format!("{source} does not exist"),
                ));
            }
            Err(err) => return Err(read_refusal(err)),
        };
        layout::write_atomic(&self.workspace.join(&target), text.as_bytes())?;
        Ok(format!("copied {source} to {}", target.display()))
    }

    /// `file_move`: moves a plain file; neither end may be in `skills/` (moving a file out of it
    /// would delete a skill without its card).
    pub fn file_move(&self, from: &str, to: &str) -> Result<String, PlaybookError> {
        let source = self.writable(from, "file_move")?;
        let target = self.writable(to, "file_move")?;
        let source_path = self.workspace.join(&source);
        let metadata = fs::symlink_metadata(&source_path).map_err(|_| {
            PlaybookError::refused(
                Rule::NotFound,
                format!("{} does not exist", source.display()),
            )
        })?;
        if !metadata.is_file() {
            return Err(PlaybookError::refused(
                Rule::BadPath,
                format!(
                    "{} is not a plain file; file_move moves files",
                    source.display()
                ),
            ));
        }
        let target_path = self.workspace.join(&target);
        if let Some(parent) = target_path.parent() {
            fs::create_dir_all(parent).map_err(io_error("create", parent))?;
        }
        fs::rename(&source_path, &target_path).map_err(io_error("move", &source_path))?;
        Ok(format!(
            "moved {} to {}",
            source.display(),
            target.display()
        ))
    }

    /// A path as the assistant wrote it, made workspace-relative; outside the workspace refused.
    fn relative(&self, path: &str) -> Result<String, PlaybookError> {
        let as_path = Path::new(path);
        let relative = if as_path.is_absolute() {
            as_path
                .strip_prefix(&self.workspace)
                .ok()
                .and_then(|rest| rest.to_str())
                .map(str::to_string)
        } else {
            Some(path.to_string())
        };
        relative
            .and_then(|relative| workspace::clean_relative(&relative))
            .and_then(|clean| clean.to_str().map(str::to_string))
            .ok_or_else(|| {
                PlaybookError::refused(
                    Rule::BadPath,
                    format!(
                        "{path} is outside the workspace; give a path inside {}",
                        self.workspace.display()
                    ),
                )
            })
    }

    /// A path a file tool may read: inside the workspace and not in `.mindrune/`, MindRune's
    /// own folder (the ledger, the apply journal, the fixer's logs), under any spelling or
    /// through a hard-linked folder: what the fixer read and wrote is not the assistant's to
    /// read, or the assistant that reported could watch, and steer, the fix.
    fn readable(&self, path: &str, tool: &str) -> Result<String, PlaybookError> {
        let relative = self.relative(path)?;
        let refusal = || {
            PlaybookError::refused(
                Rule::SkillsPath,
                format!(
                    "{tool} cannot read {path}: .mindrune/ is MindRune's own (the ledger, the apply journal, the fixer's logs), not the assistant's to read; the human reads it"
                ),
            )
        };
        let first_is_runtime = Path::new(&relative)
            .components()
            .next()
            .is_some_and(|first| {
                is_runtime_path(Path::new(first.as_os_str())) && !is_settings(first.as_os_str())
            });
        if first_is_runtime {
            return Err(refusal());
        }
        if let Ok(own) = fs::symlink_metadata(self.workspace.join(".mindrune")) {
            let own = identity(&own);
            let mut current = self.workspace.clone();
            for component in Path::new(&relative).components() {
                current.push(component);
                let Ok(metadata) = fs::symlink_metadata(&current) else {
                    break;
                };
                if identity(&metadata) == own {
                    return Err(refusal());
                }
            }
        }
        Ok(relative)
    }

    /// A path a file tool may write: inside the workspace, reached without a symlink, not in
    /// `skills/`, and not one of MindRune's own files (`.mindrune/`, `playbooks.toml`,
    /// `permissions.yaml`), whose change would get around the door as surely as a file dropped
    /// into `skills/`: a forged apply journal, a fixer command, a permission made `auto`.
    fn writable(&self, path: &str, tool: &str) -> Result<PathBuf, PlaybookError> {
        let skills_refusal = || {
            PlaybookError::refused(
                Rule::SkillsPath,
                format!(
                    "{tool} cannot write {path}: workspace/skills/ refuses file_write, file_copy and file_move in every mode, because a file dropped there would skip the checks; write a skill with skill_create, change one with skill_refine"
                ),
            )
        };
        let runtime_refusal = || {
            PlaybookError::refused(
                Rule::SkillsPath,
                format!(
                    "{tool} cannot write {path}: it is MindRune's own (the ledger, the settings or the permissions), which only your human changes"
                ),
            )
        };
        // `..` is resolved before anything else, so `notes/../skills/x` is seen for what it is.
        let relative = PathBuf::from(self.relative(path)?);
        if is_skills_path(&relative) {
            return Err(skills_refusal());
        }
        if is_runtime_path(&relative) {
            return Err(runtime_refusal());
        }
        // Every component that exists must be a real folder (or, last, a real file), and none
        // may be `skills/` or one of MindRune's own files under another spelling: they are
        // compared by device and inode, which no case folding, Unicode trick or hard link
        // changes.
        let guarded: Vec<((u64, u64), bool)> = [
            (layout::skills_dir(&self.workspace), true),
            (self.workspace.join(".mindrune"), false),
            (self.workspace.join(super::config::CONFIG_FILE), false),
            (self.workspace.join(super::config::PERMISSIONS_FILE), false),
        ]
        .into_iter()
        .filter_map(|(path, is_skills)| {
            Some((identity(&fs::symlink_metadata(path).ok()?), is_skills))
        })
        .collect();
        let mut current = self.workspace.clone();
        for component in relative.components() {
            current.push(component);
            let Ok(metadata) = fs::symlink_metadata(&current) else {
                break;
            };
            if metadata.file_type().is_symlink() {
                return Err(PlaybookError::refused(
                    Rule::BadPath,
                    format!("{tool} cannot write {path}: it goes through a symlink"),
                ));
            }
            if let Some((_, is_skills)) = guarded.iter().find(|(id, _)| *id == identity(&metadata))
            {
                return Err(if *is_skills {
                    skills_refusal()
                } else {
                    runtime_refusal()
                });
            }
        }
        Ok(relative)
    }
}

/// What `workspace_read` read: the text, and for a skill the fields it owes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub text: String,
    pub owed: Vec<&'static str>,
}

/// Whether a name is one of the two settings files, which the assistant may read (not write).
fn is_settings(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy().to_lowercase();
    let name = name.trim_end_matches(['.', ' ']);
    name == super::config::CONFIG_FILE || name == super::config::PERMISSIONS_FILE
}

/// A file's identity on disk: its device and inode.
fn identity(metadata: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (metadata.dev(), metadata.ino())
}

/// Whether a clean workspace-relative path is one of MindRune's own: the `.mindrune/` folder,
/// `playbooks.toml` or `permissions.yaml` (compared as a case-insensitive disk would).
pub(crate) fn is_runtime_path(relative: &Path) -> bool {
    let names: Vec<String> = relative
        .components()
        .map(|component| {
            component
                .as_os_str()
                .to_string_lossy()
                .to_lowercase()
                .trim_end_matches(['.', ' '])
                .to_string()
        })
        .collect();
    match names.as_slice() {
        [first, ..] if first == ".mindrune" => true,
        [only] => only == super::config::CONFIG_FILE || only == super::config::PERMISSIONS_FILE,
        _ => false,
    }
}

/// Whether a clean workspace-relative path is in `skills/`, comparing the first component the
/// way a case-insensitive disk would (and ignoring the trailing dots and spaces Windows drops).
pub(crate) fn is_skills_path(relative: &Path) -> bool {
    let Some(Component::Normal(first)) = relative.components().next() else {
        return false;
    };
    let first = first.to_string_lossy().to_lowercase();
    first.trim_end_matches(['.', ' ']) == layout::SKILLS
}

/// `skills/<name>/SKILL.md` or `skills/<name>` as (name, whether the folder was named): the
/// reads that write a usage line. Drafts, rejected skills and history are not skill reads.
fn skill_of(relative: &str) -> Option<(String, bool)> {
    let parts: Vec<&str> = relative.split('/').collect();
    match parts.as_slice() {
        [skills, name, file] if *skills == layout::SKILLS && *file == layout::SKILL_FILE => {
            layout::check_name(name)
                .ok()
                .map(|()| (name.to_string(), false))
        }
        [skills, name] if *skills == layout::SKILLS => layout::check_name(name)
            .ok()
            .map(|()| (name.to_string(), true)),
        _ => None,
    }
}

fn read_refusal(err: ReadError) -> PlaybookError {
    let rule = match err {
        ReadError::Outside(_) | ReadError::Symlink(_) | ReadError::NotAFile(_) => Rule::BadPath,
        _ => Rule::Invalid,
    };
    PlaybookError::refused(rule, err.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_path_is_recognised_whatever_its_case_or_trailing_dots() {
        for path in [
            "skills/x/SKILL.md",
            "Skills/x",
            "SKILLS",
            "skills./x",
            "skills /x",
        ] {
            assert!(is_skills_path(Path::new(path)), "{path}");
        }
        for path in ["notes/skills/x", "skillsx/a", "my-skills/a"] {
            assert!(!is_skills_path(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn only_live_skill_files_are_skill_reads() {
        assert_eq!(
            skill_of("skills/weekly/SKILL.md"),
            Some(("weekly".into(), false))
        );
        assert_eq!(skill_of("skills/weekly"), Some(("weekly".into(), true)));
        assert_eq!(skill_of("skills/pending/weekly/SKILL.md"), None);
        assert_eq!(skill_of("skills/weekly/history/1/SKILL.md"), None);
        assert_eq!(skill_of("notes/a.md"), None);
    }
}
