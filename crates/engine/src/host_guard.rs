//! The host keeps MindRune's rules: a `PreToolUse` guard over Claude Code's own tools.
//!
//! MindRune's path rules hold for its own tools, but an agent in Claude Code also has the
//! host's `Write`, `Edit`, `MultiEdit`, `NotebookEdit` and `Bash`, which never pass through
//! MindRune. Before Claude Code runs one, its `PreToolUse` hook hands the call to
//! [`HostGuard::check`], which denies every call that would write where MindRune keeps its
//! rules, with the reason and the right tool, and allows everything else:
//!
//! - an assistant's workspace: `skills/` (only `skill_create` and `skill_refine` write
//!   there, through the door's checks) and MindRune's own files (`.mindrune/`,
//!   `playbooks.toml`, `permissions.yaml`);
//! - an avatar's checkout: `family-skills/` (its own view, at `bots/<bot>/family-skills/`,
//!   and one at the root), every other bot's `bots/<sibling>/`, and MindRune's library;
//! - both: the project's Claude Code settings and MCP config, which hold this very guard.
//!
//! Architecture invariant: a path is judged as the file tools will resolve it: `..` and `.`
//! in order, every symlink on the way followed (a dangling one too, since `Write` creates its
//! target), names compared as a case-insensitive disk would, and folders also by device and
//! inode (a bind mount, a case-insensitive disk). A hard-linked copy of a kept file is kept.
//!
//! Architecture invariant: the guard fails closed on the kept places only. A `Bash` line it
//! cannot read (a write to a computed path, code handed to an interpreter, a line it cannot
//! parse) is denied when the line names a kept place, and allowed otherwise: it is a seat
//! belt against an agent's ordinary tools, not a sandbox against a hostile one.

use std::fs;
use std::path::{Component, Path, PathBuf};

use mindrune_core::{Reach, Target};
use mindrune_core::{ShellContext, shell_line_writes};
use serde_json::Value;

/// What a kept place is, which says why it is kept and what to do instead.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kept {
    /// An assistant's `skills/`.
    Skills,
    /// One of MindRune's own files or folders; the text says which.
    Own(&'static str),
    /// The project's Claude Code settings or MCP config.
    HostSettings,
    /// An avatar's `family-skills/`.
    Mirror,
    /// Every bot's folder but the avatar's own (`bots/` itself is this place; `own` is the
    /// one child that is not kept).
    Siblings { own: String },
}

#[derive(Debug, Clone)]
struct Place {
    /// Absolute, with every existing symlink resolved.
    path: PathBuf,
    /// Device and inode, when it exists.
    identity: Option<(u64, u64)>,
    kept: Kept,
}

/// The guard's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Denied; the reason is what the model is told.
    Deny(String),
}

/// The places one agent's host calls must not write, and how to tell.
#[derive(Debug, Clone)]
pub struct HostGuard {
    places: Vec<Place>,
    /// Where paths are shown from (the workspace or the checkout).
    root: PathBuf,
    /// Texts that name a kept place, for lines the guard cannot read: each place's path
    /// relative to the root, and each sibling's `bots/<name>`.
    needles: Vec<String>,
    /// The agent's name, for an avatar (its own folder is where its work goes).
    agent: Option<String>,
    /// Places no host tool may read either: an avatar's library, which holds every avatar's
    /// private scripts and runs (a live agent read the owner key's prefix out of it with
    /// `grep -a`). Absolute, symlinks resolved.
    unreadable: Vec<PathBuf>,
    /// Texts that name an unreadable place in a shell line: its path as written absolutely,
    /// from the root, from `~` and from `$HOME`.
    unreadable_names: Vec<String>,
}

impl HostGuard {
    /// The guard of an assistant's playbook workspace; `project` is Claude Code's project
    /// folder (its settings live there), when known.
    pub fn for_workspace(workspace: &Path, project: Option<&Path>) -> HostGuard {
        let root = resolve(workspace);
        let mut guard = HostGuard {
            places: Vec::new(),
            needles: Vec::new(),
            root: root.clone(),
            agent: None,
            unreadable: Vec::new(),
            unreadable_names: Vec::new(),
        };
        guard.keep(root.join(crate::playbook::SKILLS), Kept::Skills);
        guard.keep(
            root.join(".mindrune"),
            Kept::Own("its folder: the ledger, the apply journal, the fixer's logs"),
        );
        guard.keep(
            root.join(crate::CONFIG_FILE),
            Kept::Own("the playbook settings, which name the fixer and the mode"),
        );
        guard.keep(
            root.join(crate::PERMISSIONS_FILE),
            Kept::Own("the permissions, which say what waits for your human"),
        );
        guard.keep_host_settings(project.unwrap_or(workspace));
        guard
    }

    /// The guard of an avatar `agent` working in the checkout `project`; `library` is
    /// MindRune's library (or the relay folder) when the hook knows it.
    pub(crate) fn for_avatar(project: &Path, agent: &str, library: &[&Path]) -> HostGuard {
        let root = resolve(project);
        let mut guard = HostGuard {
            places: Vec::new(),
            needles: Vec::new(),
            root: root.clone(),
            agent: Some(agent.to_string()),
            unreadable: Vec::new(),
            unreadable_names: Vec::new(),
        };
        guard.keep(root.join(crate::MIRROR_DIR), Kept::Mirror);
        guard.keep(
            root.join("bots").join(agent).join(crate::MIRROR_DIR),
            Kept::Mirror,
        );
        guard.keep(
            root.join("bots"),
            Kept::Siblings {
                own: agent.to_string(),
            },
        );
        // Siblings are named one by one too, for lines the guard cannot read.
        if let Ok(entries) = fs::read_dir(root.join("bots")) {
            for entry in entries.flatten().take(10_000) {
                let name = entry.file_name().to_string_lossy().into_owned();
                if fold(&name) != fold(agent) && entry.path().is_dir() {
                    guard.needles.push(format!("bots/{name}"));
                }
            }
        }
        for library in library {
            guard.keep(
                library.to_path_buf(),
                Kept::Own("its library: every run, score and skill it recorded"),
            );
            guard.keep_unread(library);
        }
        guard.keep_host_settings(project);
        guard
    }

    /// Keeps `path` from every read of the host's tools too.
    fn keep_unread(&mut self, path: &Path) {
        let resolved = resolve(path);
        let mut names = vec![path.display().to_string(), resolved.display().to_string()];
        if let Ok(relative) = resolved.strip_prefix(&self.root)
            && !relative.as_os_str().is_empty()
        {
            names.push(relative.display().to_string());
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            let home = resolve(Path::new(&home));
            if let Ok(relative) = resolved.strip_prefix(&home)
                && !relative.as_os_str().is_empty()
            {
                names.push(format!("~/{}", relative.display()));
                names.push(format!("$HOME/{}", relative.display()));
                names.push(format!("${{HOME}}/{}", relative.display()));
            }
        }
        for name in names {
            if !self.unreadable_names.contains(&name) {
                self.unreadable_names.push(name);
            }
        }
        self.unreadable.push(resolved);
    }

    /// Why a read of `path` (absolute) is denied, or `None`. A search of a folder that holds
    /// the library is allowed: Claude Code's `Grep` (ripgrep) skips hidden folders such as
    /// `.mindrune`, and `Glob` reads no content.
    fn judge_read(&self, path: &Path) -> Option<String> {
        let resolved = resolve(path);
        let place = self
            .unreadable
            .iter()
            .find(|place| resolved.starts_with(place))?;
        Some(format!(
            "{} is MindRune's library (every avatar's private scripts and runs), which an agent's tools never read; your own scripts are in bots/{}/ and what your family shares is in family-skills/",
            self.shown(place),
            self.agent.as_deref().unwrap_or("<bot>")
        ))
    }

    fn keep_host_settings(&mut self, project: &Path) {
        let project = resolve(project);
        for file in [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
        ] {
            self.keep(project.join(file), Kept::HostSettings);
        }
    }

    fn keep(&mut self, path: PathBuf, kept: Kept) {
        let path = resolve(&path);
        let identity = fs::metadata(&path).ok().map(|m| identity(&m));
        let needle = match path.strip_prefix(&self.root) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
            _ => path.display().to_string(),
        };
        // `bots` alone would match every run line; its siblings are named one by one.
        if !matches!(kept, Kept::Siblings { .. }) && !self.needles.contains(&needle) {
            self.needles.push(needle);
        }
        self.places.push(Place {
            path,
            identity,
            kept,
        });
    }

    /// The verdict on one Claude Code `PreToolUse` payload. Calls of tools that do not write
    /// (`Read`, `Grep`, MCP tools) are allowed.
    pub fn check(&self, payload: &Value) -> Verdict {
        let tool = payload
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let input = payload.get("tool_input").unwrap_or(&Value::Null);
        let cwd = payload
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .unwrap_or_else(|| self.root.clone());
        match tool {
            "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
                let field = if tool == "NotebookEdit" {
                    "notebook_path"
                } else {
                    "file_path"
                };
                let Some(path) = input.get(field).and_then(Value::as_str) else {
                    // Claude Code refuses the call itself; nothing is written.
                    return Verdict::Allow;
                };
                let path = cwd.join(path);
                match self.judge(&path, Reach::File) {
                    Some(why) => Verdict::Deny(format!("MindRune denied this {tool}: {why}")),
                    None => Verdict::Allow,
                }
            }
            "Bash" => {
                let Some(line) = input.get("command").and_then(Value::as_str) else {
                    return Verdict::Allow;
                };
                // Whatever the program (`sqlite3`, `grep -a`, `strings`, `cp`): a line that
                // names the library is denied.
                if let Some(name) = self
                    .unreadable_names
                    .iter()
                    .find(|name| line.contains(name.as_str()))
                    && let Some(why) = self
                        .unreadable
                        .iter()
                        .find_map(|place| self.judge_read(place))
                {
                    return Verdict::Deny(format!(
                        "MindRune denied this Bash line: it names {name}: {why}"
                    ));
                }
                self.check_line(line, &cwd)
            }
            "Read" | "NotebookRead" | "Grep" | "Glob" => {
                let field = match tool {
                    "Read" => "file_path",
                    "NotebookRead" => "notebook_path",
                    _ => "path",
                };
                // Grep and Glob search the current folder when no path is given.
                let path = match input.get(field).and_then(Value::as_str) {
                    Some(path) => cwd.join(path),
                    None if matches!(tool, "Grep" | "Glob") => cwd.clone(),
                    None => return Verdict::Allow,
                };
                match self.judge_read(&path) {
                    Some(why) => Verdict::Deny(format!("MindRune denied this {tool}: {why}")),
                    None => Verdict::Allow,
                }
            }
            _ => Verdict::Allow,
        }
    }

    /// The verdict on one shell line started in `cwd`.
    pub(crate) fn check_line(&self, line: &str, cwd: &Path) -> Verdict {
        let cwd_text = cwd.to_string_lossy();
        let root_text = self.root.to_string_lossy();
        let writes = shell_line_writes(
            line,
            &ShellContext {
                cwd: Some(&cwd_text),
                workspace_roots: &[&root_text],
            },
        );
        let deny = |why: String| Verdict::Deny(format!("MindRune denied this Bash line: {why}"));
        for write in &writes.writes {
            let command = &write.command;
            match &write.target {
                Target::Path(path) => {
                    if let Some(why) = self.judge(Path::new(path), write.reach) {
                        return deny(if write.reach == Reach::Maybe {
                            format!("it cannot tell whether `{command}` writes there, and {why}")
                        } else {
                            why
                        });
                    }
                }
                Target::Glob(pattern) => {
                    if let Some(why) = self.judge_glob(pattern, write.reach) {
                        return deny(why);
                    }
                }
                Target::Computed(word) => {
                    if let Some(named) = self.named_in(line) {
                        return deny(format!(
                            "it cannot tell where `{command}` writes: `{word}` is known only when the line runs, and the line names {named}, which {}. Write the path out plainly, so it can be checked",
                            self.rule_for_needle(&named)
                        ));
                    }
                }
                Target::Code(code) => {
                    if let Some(named) = self.named_in(code) {
                        return deny(format!(
                            "`{command}` runs program text that names {named}, which {}; the guard cannot tell whether it writes there",
                            self.rule_for_needle(&named)
                        ));
                    }
                }
            }
        }
        if let Some(why) = &writes.unreadable
            && let Some(named) = self.named_in(line)
        {
            return deny(format!(
                "it cannot read the line safely ({why}), and the line names {named}, which {}. Split it into plain commands",
                self.rule_for_needle(&named)
            ));
        }
        Verdict::Allow
    }

    /// Why a write reaching `path` (absolute) is denied, or `None`.
    fn judge(&self, path: &Path, reach: Reach) -> Option<String> {
        let resolved = resolve(path);
        for place in &self.places {
            if let Some(inside) = self.inside(place, &resolved) {
                return self.reason(place, inside.as_deref(), &resolved);
            }
            if reach == Reach::Tree && is_within(&place.path, &resolved) {
                return Some(format!(
                    "{} holds {}, and this reaches everything under it; {}",
                    self.shown(&resolved),
                    self.shown(&place.path),
                    self.reason(place, None, &place.path).unwrap_or_default()
                ));
            }
        }
        if reach != Reach::Maybe
            && let Some(kept) = self.hard_link_of_kept(&resolved)
        {
            return Some(format!(
                "{} is a hard link of {}, so writing it writes that file: {}",
                self.shown(&resolved),
                self.shown(&kept.1),
                self.reason(kept.0, None, &kept.1).unwrap_or_default()
            ));
        }
        None
    }

    /// A pattern (`…/skills/*`): denied when what it matches may be a kept place or inside one.
    fn judge_glob(&self, pattern: &str, reach: Reach) -> Option<String> {
        let (dir, last) = pattern.rsplit_once('/')?;
        let dir = if dir.is_empty() { "/" } else { dir };
        if dir.contains(['*', '?', '[']) {
            return self.named_in(pattern).map(|named| {
                format!(
                    "it cannot tell which folders `{pattern}` matches, and it names {named}, which {}",
                    self.rule_for_needle(&named)
                )
            });
        }
        let parent = resolve(Path::new(dir));
        if let Some(why) = self.judge(&parent, Reach::File)
            && self
                .places
                .iter()
                .any(|p| self.inside(p, &parent).is_some())
        {
            return Some(why);
        }
        let matcher = glob::Pattern::new(last).ok();
        for place in &self.places {
            let Some(name) = place.path.file_name().map(|n| n.to_string_lossy()) else {
                continue;
            };
            let matches = matcher.as_ref().is_none_or(|m| {
                m.matches_with(
                    &name,
                    glob::MatchOptions {
                        case_sensitive: false,
                        ..Default::default()
                    },
                )
            });
            let place_parent = place.path.parent().map(Path::to_path_buf);
            if matches && place_parent.is_some_and(|p| same_path(&p, &parent)) {
                return self
                    .reason(place, None, &place.path)
                    .map(|why| format!("`{}` matches {}: {why}", last, self.shown(&place.path)));
            }
            if reach == Reach::Tree
                && is_within(&place.path, &parent)
                && !same_path(&place.path, &parent)
            {
                return self.reason(place, None, &place.path).map(|why| {
                    format!("`{pattern}` may reach {}: {why}", self.shown(&place.path))
                });
            }
        }
        None
    }

    /// Whether `path` is inside `place` (or is it): `Some(None)` for the place itself or
    /// within it, `Some(Some(name))` for a sibling bot's folder named `name`.
    fn inside(&self, place: &Place, path: &Path) -> Option<Option<String>> {
        let within = is_within(path, &place.path) || self.within_by_identity(place, path);
        if !within {
            return None;
        }
        match &place.kept {
            Kept::Siblings { own } => {
                let rest = strip_folded(path, &place.path)?;
                let first = rest.components().next()?;
                let name = first.as_os_str().to_string_lossy().into_owned();
                // `bots/` itself and the avatar's own folder are not kept (its own
                // `family-skills/` is a place of its own).
                (fold(&name) != fold(own)).then_some(Some(name))
            }
            _ => Some(None),
        }
    }

    /// Whether an existing folder on `path`'s way is the place by device and inode.
    fn within_by_identity(&self, place: &Place, path: &Path) -> bool {
        let Some(wanted) = place.identity else {
            return false;
        };
        let mut current = PathBuf::new();
        for component in path.components() {
            current.push(component);
            match fs::metadata(&current) {
                Ok(meta) if identity(&meta) == wanted => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
        false
    }

    /// A file with more than one link, one of them in a kept place of MindRune's own.
    fn hard_link_of_kept(&self, path: &Path) -> Option<(&Place, PathBuf)> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = fs::metadata(path).ok()?;
        if !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        let wanted = identity(&meta);
        for place in &self.places {
            if !matches!(place.kept, Kept::Skills | Kept::Own(_) | Kept::Mirror) {
                continue;
            }
            let mut budget = 10_000usize;
            if let Some(found) = find_inode(&place.path, wanted, &mut budget, 0) {
                return Some((place, found));
            }
        }
        None
    }

    /// The reason a write at `path`, inside `place`, is denied.
    fn reason(&self, place: &Place, sibling: Option<&str>, path: &Path) -> Option<String> {
        let shown = self.shown(path);
        let agent = self.agent.as_deref().unwrap_or("<you>");
        Some(match &place.kept {
            Kept::Skills => format!(
                "{shown} is in skills/, which refuses direct writes in every mode: a file dropped there would skip the checks. Write a new skill with skill_create and change one with skill_refine (MindRune's MCP tools); reading a skill stays open"
            ),
            Kept::Own(what) => {
                format!("{shown} is MindRune's own ({what}), which only your human changes")
            }
            Kept::HostSettings => format!(
                "{shown} holds MindRune's hooks for Claude Code (this guard among them), which only your human changes"
            ),
            Kept::Mirror => format!(
                "{shown} is in family-skills/, which is read-only: MindRune rewrites it from your family's shared skills at every turn's end, so an edit would be lost and never reach a sibling. Improve your own scripts in bots/{agent}/; share one with a `Share:` line in its @skill header"
            ),
            Kept::Siblings { .. } => {
                let sibling = sibling?;
                format!(
                    "{shown} is in bots/{sibling}/, which is {sibling}'s own: each avatar writes only its own bots/{agent}/. Reading {sibling}'s scripts stays open; to build on one, copy it into bots/{agent}/ and change the copy"
                )
            }
        })
    }

    /// The first kept place `text` names, if any.
    fn named_in(&self, text: &str) -> Option<String> {
        let folded = text.to_lowercase();
        self.needles
            .iter()
            .find(|needle| names(&folded, &needle.to_lowercase()))
            .cloned()
    }

    /// The rule of the place a needle names, phrased to follow "which".
    fn rule_for_needle(&self, needle: &str) -> &'static str {
        if needle.starts_with("bots/") {
            "is another bot's own folder"
        } else if needle.contains(crate::MIRROR_DIR) {
            "is read-only"
        } else if needle == crate::playbook::SKILLS {
            "only skill_create and skill_refine write"
        } else {
            "only your human changes"
        }
    }

    /// A path as the model should read it: relative to the workspace or checkout.
    fn shown(&self, path: &Path) -> String {
        match strip_folded(path, &self.root) {
            Some(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// Whether `text` (lowercase) names `needle` (lowercase) as a path: not as part of a longer
/// name (`skills` is named by `skills/x` and `'skills'`, not by `my-skills` or `skillset`).
fn names(text: &str, needle: &str) -> bool {
    let name_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.');
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find(needle) {
        let start = from + at;
        let end = start + needle.len();
        let before_ok = start == 0 || !name_byte(bytes[start - 1]) || bytes[start - 1] == b'.';
        let after_ok = end == bytes.len() || !name_byte(bytes[end]);
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
        while !text.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// A name as a case-insensitive disk compares it (and without the trailing dots and spaces
/// Windows drops).
fn fold(name: &str) -> String {
    name.to_lowercase().trim_end_matches(['.', ' ']).to_string()
}

/// `path` without the leading `base`, comparing names folded.
fn strip_folded(path: &Path, base: &Path) -> Option<PathBuf> {
    let mut path_parts = path.components();
    for base_part in base.components() {
        let part = path_parts.next()?;
        if fold(&part.as_os_str().to_string_lossy())
            != fold(&base_part.as_os_str().to_string_lossy())
        {
            return None;
        }
    }
    Some(path_parts.collect())
}

/// Whether `path` is `base` or inside it (names folded).
fn is_within(path: &Path, base: &Path) -> bool {
    strip_folded(path, base).is_some()
}

fn same_path(a: &Path, b: &Path) -> bool {
    strip_folded(a, b).is_some_and(|rest| rest.as_os_str().is_empty())
        && a.components().count() == b.components().count()
}

fn identity(meta: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt as _;
    (meta.dev(), meta.ino())
}

/// A file under `dir` with the given identity (bounded: at most `budget` entries, 8 deep).
fn find_inode(dir: &Path, wanted: (u64, u64), budget: &mut usize, depth: usize) -> Option<PathBuf> {
    let meta = fs::symlink_metadata(dir).ok()?;
    if meta.is_file() {
        return (identity(&meta) == wanted).then(|| dir.to_path_buf());
    }
    if !meta.is_dir() || depth > 8 {
        return None;
    }
    for entry in fs::read_dir(dir).ok()?.flatten() {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        if let Some(found) = find_inode(&entry.path(), wanted, budget, depth + 1) {
            return Some(found);
        }
    }
    None
}

/// An absolute path as the kernel will resolve it when a file is written there: `.` and `..`
/// in order, every existing symlink followed (a dangling one too: writing through it creates
/// its target), the part that does not exist yet kept as written.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    resolve_within(path, 0)
}

fn resolve_within(path: &Path, links: usize) -> PathBuf {
    let mut resolved = PathBuf::from("/");
    let mut exists = true;
    for component in path.components() {
        match component {
            Component::RootDir | Component::Prefix(_) => resolved = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                resolved.pop();
            }
            Component::Normal(name) => {
                let next = resolved.join(name);
                if !exists {
                    resolved = next;
                    continue;
                }
                match fs::symlink_metadata(&next) {
                    Ok(meta) if meta.file_type().is_symlink() && links < 40 => {
                        resolved = match fs::canonicalize(&next) {
                            Ok(target) => target,
                            // Dangling: follow the link by hand.
                            Err(_) => match fs::read_link(&next) {
                                Ok(target) => {
                                    let target = resolved.join(target);
                                    exists = false;
                                    resolve_within(&target, links + 1)
                                }
                                Err(_) => next,
                            },
                        };
                    }
                    Ok(_) => resolved = next,
                    Err(_) => {
                        exists = false;
                        resolved = next;
                    }
                }
            }
        }
    }
    resolved
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Workspace {
        _dir: tempfile::TempDir,
        root: PathBuf,
    }

    fn workspace() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for folder in ["skills/weekly", ".mindrune", "notes"] {
            fs::create_dir_all(root.join(folder)).unwrap();
        }
        fs::write(root.join("skills/weekly/SKILL.md"), "x").unwrap();
        fs::write(root.join("playbooks.toml"), "").unwrap();
        Workspace { _dir: dir, root }
    }

    fn write(guard: &HostGuard, cwd: &Path, path: &str) -> Verdict {
        guard.check(&json!({"tool_name": "Write", "cwd": cwd,
                            "tool_input": {"file_path": path, "content": "x"}}))
    }

    fn bash(guard: &HostGuard, cwd: &Path, line: &str) -> Verdict {
        guard.check(&json!({"tool_name": "Bash", "cwd": cwd, "tool_input": {"command": line}}))
    }

    fn denied(verdict: &Verdict) -> bool {
        matches!(verdict, Verdict::Deny(_))
    }

    #[test]
    fn file_tools_are_denied_in_skills_under_every_spelling() {
        let ws = workspace();
        let guard = HostGuard::for_workspace(&ws.root, None);
        let r = &ws.root;
        for path in [
            r.join("skills/x/SKILL.md").display().to_string(),
            r.join("notes/../skills/weekly/SKILL.md")
                .display()
                .to_string(),
            r.join("Skills/x/SKILL.md").display().to_string(),
            "skills/new/SKILL.md".into(),
            r.join("playbooks.toml").display().to_string(),
            r.join(".mindrune/journal").display().to_string(),
            r.join(".claude/settings.json").display().to_string(),
        ] {
            assert!(denied(&write(&guard, r, &path)), "{path}");
        }
        assert_eq!(write(&guard, r, "notes/a.md"), Verdict::Allow);
        assert_eq!(
            write(&guard, r, &r.join("skills-old.md").display().to_string()),
            Verdict::Allow
        );
        let read = guard.check(&json!({"tool_name": "Read", "cwd": r,
                                       "tool_input": {"file_path": r.join("skills/weekly/SKILL.md")}}));
        assert_eq!(read, Verdict::Allow);
    }

    #[test]
    fn symlinks_into_skills_are_followed_dangling_or_not() {
        let ws = workspace();
        let r = &ws.root;
        std::os::unix::fs::symlink(r.join("skills"), r.join("notes/s")).unwrap();
        std::os::unix::fs::symlink(r.join("skills/new/SKILL.md"), r.join("notes/dangling.md"))
            .unwrap();
        let guard = HostGuard::for_workspace(r, None);
        assert!(denied(&write(&guard, r, "notes/s/weekly/SKILL.md")));
        assert!(denied(&write(&guard, r, "notes/dangling.md")));
        assert!(denied(&bash(&guard, r, "echo x > notes/s/a")));
    }

    #[test]
    fn a_hard_link_of_a_skill_file_is_the_skill_file() {
        let ws = workspace();
        let r = &ws.root;
        fs::hard_link(r.join("skills/weekly/SKILL.md"), r.join("notes/copy.md")).unwrap();
        let guard = HostGuard::for_workspace(r, None);
        let Verdict::Deny(why) = write(&guard, r, "notes/copy.md") else {
            panic!("a hard link of a skill was writable");
        };
        assert!(why.contains("hard link of skills/weekly/SKILL.md"), "{why}");
    }

    #[test]
    fn bash_lines_that_write_into_skills_are_denied_and_reads_allowed() {
        let ws = workspace();
        let r = &ws.root;
        let guard = HostGuard::for_workspace(r, None);
        for line in [
            "echo '# x' > skills/x/SKILL.md",
            "cp notes/a.md skills/x/SKILL.md",
            "cd skills/weekly && sed -i s/a/b/ SKILL.md",
            "mv skills/weekly notes/",
            "rm -rf skills",
            "rm -rf .",
            "tee skills/x < a",
            "ln notes/a skills/b",
            "F=skills/x; echo > $F",
            "python3 -c \"open('skills/x/SKILL.md','w').write('x')\"",
            "rm skills/*",
            "rm *",
            "echo 'unterminated > skills/x",
            "cd notes && ../tool ../skills/x",
        ] {
            assert!(denied(&bash(&guard, r, line)), "{line}");
        }
        for line in [
            "cat skills/weekly/SKILL.md",
            "grep -rn step skills/",
            "ls skills && echo done > notes/log",
            "cp skills/weekly/SKILL.md notes/copy.md",
            "rm notes/*",
            "echo $HOME > notes/h",
            "git status",
            "python3 tool.py notes/out",
        ] {
            assert_eq!(bash(&guard, r, line), Verdict::Allow, "{line}");
        }
    }

    #[test]
    fn an_avatar_may_write_its_own_folder_only() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().canonicalize().unwrap();
        for folder in ["bots/buzz/family-skills", "bots/rex", ".mindrune"] {
            fs::create_dir_all(r.join(folder)).unwrap();
        }
        let library = r.join(".mindrune");
        let guard = HostGuard::for_avatar(&r, "buzz", &[&library]);
        assert_eq!(write(&guard, &r, "bots/buzz/chop.ts"), Verdict::Allow);
        assert_eq!(
            bash(&guard, &r, "cd bots/buzz && bun chop.ts > log.txt"),
            Verdict::Allow
        );
        assert_eq!(
            bash(&guard, &r, "cp bots/rex/fish.ts bots/buzz/fish.ts"),
            Verdict::Allow
        );
        assert_eq!(bash(&guard, &r, "bun bots/rex/fish.ts"), Verdict::Allow);
        let Verdict::Deny(why) = write(&guard, &r, "bots/rex/fish.ts") else {
            panic!("a sibling's script was writable");
        };
        assert!(why.contains("bots/rex/, which is rex's own"), "{why}");
        let Verdict::Deny(why) = write(&guard, &r, "bots/buzz/family-skills/INDEX.md") else {
            panic!("family-skills was writable");
        };
        assert!(why.contains("family-skills/, which is read-only"), "{why}");
        for line in [
            "echo x >> bots/rex/fish.ts",
            "cd bots && cd rex && touch a",
            "rm -rf bots",
            "echo > bots/newbot/a.ts",
            "echo > family-skills/INDEX.md",
            "sqlite3 .mindrune/mindrune.sqlite3 'delete from runs'",
        ] {
            assert!(denied(&bash(&guard, &r, line)), "{line}");
        }
    }

    #[test]
    fn no_host_tool_of_an_avatar_reads_the_library_whatever_the_program() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path().canonicalize().unwrap();
        for folder in ["bots/buzz", "lib"] {
            fs::create_dir_all(r.join(folder)).unwrap();
        }
        fs::write(r.join("lib/library.db"), "x").unwrap();
        let checkout = r.join("rs-sdk");
        fs::create_dir_all(checkout.join("bots/buzz")).unwrap();
        let library = r.join("lib");
        let guard = HostGuard::for_avatar(&checkout, "buzz", &[&library]);
        let lib = library.display().to_string();
        for line in [
            format!("grep -a mrk_ {lib}/library.db"),
            format!("strings {lib}/library.db | head"),
            format!("sqlite3 {lib}/library.db 'select * from owners'"),
            format!("cp {lib}/library.db /tmp/x && cat /tmp/x"),
            format!("cd {lib} && cat library.db"),
        ] {
            let Verdict::Deny(why) = bash(&guard, &checkout, &line) else {
                panic!("allowed: {line}");
            };
            assert!(why.contains("MindRune's library"), "{why}");
        }
        let call = |tool: &str, input: Value| {
            guard.check(
                &serde_json::json!({"tool_name": tool, "tool_input": input, "cwd": checkout}),
            )
        };
        assert!(denied(&call(
            "Read",
            serde_json::json!({"file_path": format!("{lib}/library.db")})
        )));
        assert!(denied(&call(
            "Grep",
            serde_json::json!({"pattern": "mrk_", "path": lib})
        )));
        assert!(denied(&call(
            "Glob",
            serde_json::json!({"pattern": "*", "path": format!("{lib}/")})
        )));
        // The agent's own reads stay allowed, a search of the checkout too.
        assert_eq!(
            call(
                "Read",
                serde_json::json!({"file_path": "bots/buzz/chop.ts"})
            ),
            Verdict::Allow
        );
        assert_eq!(
            call("Grep", serde_json::json!({"pattern": "oak"})),
            Verdict::Allow
        );
        assert_eq!(
            bash(&guard, &checkout, "grep -ri oak bots/buzz"),
            Verdict::Allow
        );
    }

    #[test]
    fn every_call_the_real_claude_code_sent_an_avatar_is_allowed() {
        // The captured payloads (`shared/data/claude-code/`), with their `$OUT` made a real
        // checkout: the guard must never stand in the way of an avatar's ordinary runs.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().canonicalize().unwrap();
        let checkout = out.join("rs-sdk");
        for folder in ["bots/buzz/family-skills", "bots/woody", ".mindrune"] {
            fs::create_dir_all(checkout.join(folder)).unwrap();
        }
        fs::write(checkout.join("bots/buzz/chop-oaks.ts"), "x").unwrap();
        let library = checkout.join(".mindrune");
        let guard = HostGuard::for_avatar(&checkout, "buzz", &[&library]);
        let mut judged = 0;
        for (why, payload) in crate::claude_code::hook_tests::captured() {
            if payload["hook_event_name"] != "PreToolUse" {
                continue;
            }
            let text = payload
                .to_string()
                .replace("$OUT", &out.display().to_string());
            let payload: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(guard.check(&payload), Verdict::Allow, "{why}");
            judged += 1;
        }
        assert!(judged >= 3, "only {judged} captured PreToolUse calls");
    }

    #[test]
    fn a_needle_names_a_path_not_a_longer_word() {
        assert!(names("open('skills/x')", "skills"));
        assert!(names("cat skills", "skills"));
        assert!(!names("my-skills/x", "skills"));
        assert!(!names("skillset", "skills"));
        assert!(names("x=/ws/.mindrune/db", ".mindrune"));
    }
}
