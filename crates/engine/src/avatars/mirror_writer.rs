//! Writing an agent's read-only `family-skills/` mirror so that every file in it is always either
//! its old or its new content, never a partial one, even if the process is killed at any instant.
//!
//! Architecture invariant: every write of a mirror file goes through [`refresh`] (or [`empty`]).
//! A file is written to a hidden temp file in its own folder (`.<name>.tmp-<pid>`), fsynced, made
//! read-only and renamed over its name; the folders are fsynced once, after all renames. The
//! agent sees files 0644 (a copy is its own to edit) and folders 0555; a folder is 0755 only while a refresh changes it.
//!
//! `.manifest` (a JSON map path → key) says which key each file was written for, so a refresh
//! rewrites only what changed. It never claims more than is on disk:
//!
//! 1. before any file is replaced, the manifest is rewritten without the entries about to change;
//! 2. each file is then replaced atomically (old or new, never partial);
//! 3. after every rename is made durable (folder fsync), the final manifest is written.
//!
//! So whenever the process dies, every manifest entry names a file that holds that key's content
//! (or no file at all): the next refresh rewrites whatever the manifest does not vouch for. A
//! missing or corrupt manifest vouches for nothing (everything is rewritten), never an error.
//!
//! Containment: the writer never follows a symlink. It refuses a mirror directory, or a
//! sub-folder it needs, that is a symlink or not a directory, and it unlinks (never follows) stray
//! symlinks and special files inside the mirror. (Without `openat`, which needs `unsafe`, a
//! folder swapped for a symlink between the check and the write is not caught; the mirror's
//! folders are read-only to the agent, so only the writer's own user or root could do that.)
//! Refreshes of one mirror are serialised by a lock on the directory.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{ErrorKind, Read as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::atomic_file::{Replace, write_atomic_with};

/// The manifest in the mirror directory: a JSON map from wanted path to key.
pub(crate) const MANIFEST: &str = ".manifest";

/// The mode of every mirror file: readable by everyone, writable by its owner only. `cp` gives
/// a copy the source's mode (less the umask), and the spec's loop is "copy a family skill into
/// bots/<bot>/ and adapt it": a 0444 mirror file made every copy read-only, so the agent's
/// editor refused it. The mirror itself stays unchanged by the folder's mode (0555: nothing
/// is added, removed or renamed) and by the host guard, which denies the agent's own tools any
/// write into `family-skills/`.
pub(crate) const FILE_MODE: u32 = 0o644;

/// The mode of the mirror directory and its sub-folders after a refresh.
pub(crate) const DIR_MODE: u32 = 0o555;

/// The mode of a folder while a refresh changes it.
const OPEN_DIR_MODE: u32 = 0o755;

/// The longest name of a mirror file or folder, in bytes; leaves room under the filesystem's
/// 255-byte limit for the temp file's `.` + `.tmp-<pid>`.
pub(crate) const MAX_NAME_BYTES: usize = 200;

/// A larger manifest is treated as corrupt (2,000 entries take about 200 KB).
const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;

/// One file the directory should hold: a path relative to the mirror directory — either
/// `NAME.md` or `<agent>/<name>.ts` (plain components matching `[A-Za-z0-9._-]+`, not starting
/// with '.', at most one '/') — and a key that identifies its content (e.g. a digest): a file
/// whose key is unchanged since the last refresh is not rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub path: String,
    pub key: String,
}

impl Wanted {
    pub fn new(path: impl Into<String>, key: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            key: key.into(),
        }
    }
}

/// What a refresh changed: the paths written (in the order written), the entries removed
/// (relative paths; a removed folder as `name/`, after its contents), and how many wanted files
/// were already up to date.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RefreshReport {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    pub unchanged: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error(
        "wanted path `{path}` {reason}; family-skills/ holds only `NAME.md` and `<agent>/<name>.ts` \
         named with letters, digits, `.`, `_` and `-` — fix the caller"
    )]
    BadPath { path: String, reason: &'static str },
    #[error("wanted path `{0}` is listed twice; list each file once")]
    Duplicate(String),
    #[error("`{0}` is wanted both as a file and as a sibling's folder; keep only one of them")]
    FileAndFolder(String),
    #[error(
        "`{0}` is a symlink; MindRune writes family-skills/ only as a real directory — remove the link"
    )]
    Symlink(PathBuf),
    #[error(
        "`{0}` is not a directory; MindRune writes family-skills/ only as a real directory — \
         move it out of the way"
    )]
    NotADirectory(PathBuf),
    #[error("`{0}` does not exist; create the agent's home before writing its family-skills/")]
    NoParent(PathBuf),
    #[error("cannot make the content of `{path}`: {message}")]
    Content { path: String, message: String },
    #[error(
        "cannot {action} `{path}`: {source}; check the permissions and free space of the \
         agent's home"
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> MirrorError + 'a {
    move |source| MirrorError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Makes `dir` hold exactly `wanted` (creating `dir` if missing; its parent must exist).
/// `content` is called only for files that must be (re)written. Files and sub-directories not
/// wanted are removed (an emptied sibling directory is removed). Returns what changed.
///
/// Nothing changes when a wanted path is invalid or the directory (or a sub-folder it needs) is
/// a symlink or not a directory. When `content` or a write fails, the refresh stops: every file
/// holds its old or its new content, the folders are read-only again, and the next refresh
/// finishes the job.
#[expect(
    clippy::too_many_lines,
    reason = "the crash-safe refresh is one ordered protocol (look, plan, change, finish) over the same open folders; the next to split"
)]
pub fn refresh(
    dir: &Path,
    wanted: &[Wanted],
    content: &mut dyn FnMut(&Wanted) -> Result<String, MirrorError>,
) -> Result<RefreshReport, MirrorError> {
    let layout = layout(wanted)?;
    let root = open_root(dir)?;
    if let Err(err) = root.lock() {
        tracing::warn!(dir = %dir.display(), %err, "cannot lock the mirror; refreshing without");
    }
    let root_mode = root
        .metadata()
        .map_err(io("inspect", dir))?
        .permissions()
        .mode()
        & 0o7777;

    // Look first: nothing changes until everything is checked.
    let mut folders: Vec<Folder<'_>> = layout
        .iter()
        .map(|(rel, files)| Folder {
            rel,
            path: if rel.is_empty() {
                dir.to_path_buf()
            } else {
                dir.join(rel)
            },
            files,
            mode: None,
            present: HashSet::new(),
            strays: Vec::new(),
        })
        .collect();
    folders[0].mode = Some(root_mode);
    let mut manifest_present = false;
    let mut misshapen = Vec::new();
    for (name, kind) in list(dir)? {
        let Some(text) = name.to_str() else {
            folders[0].strays.push(Stray { name, kind });
            continue;
        };
        if text == MANIFEST && kind == Kind::File {
            manifest_present = true;
            continue;
        }
        if kind == Kind::File
            && let Some((&key, _)) = folders[0].files.get_key_value(text)
        {
            folders[0].present.insert(key);
            continue;
        }
        if let Ok(index) = folders[1..].binary_search_by(|folder| folder.rel.cmp(text)) {
            let index = index + 1;
            if kind == Kind::Dir {
                folders[index].mode = Some(folder_mode(&folders[index].path)?);
            } else {
                misshapen.push((index, name, kind));
            }
            continue;
        }
        folders[0].strays.push(Stray { name, kind });
    }
    let old = if manifest_present {
        read_manifest(&dir.join(MANIFEST))
    } else {
        HashMap::new()
    };
    // A needed folder's name taken by something else: a file this writer made (the mirror
    // changing shape) is replaced; anything else is refused.
    for (index, name, kind) in misshapen {
        let path = dir.join(&name);
        match kind {
            Kind::Link => return Err(MirrorError::Symlink(path)),
            Kind::File if old.contains_key(folders[index].rel) => {
                folders[0].strays.push(Stray { name, kind });
            }
            _ => return Err(MirrorError::NotADirectory(path)),
        }
    }
    for folder in folders.iter_mut().skip(1) {
        if folder.mode.is_none() {
            continue;
        }
        for (name, kind) in list(&folder.path)? {
            if kind == Kind::File
                && let Some(text) = name.to_str()
                && let Some((&key, _)) = folder.files.get_key_value(text)
            {
                folder.present.insert(key);
            } else {
                folder.strays.push(Stray { name, kind });
            }
        }
    }

    // Plan.
    let mut kept: BTreeMap<&str, &str> = BTreeMap::new();
    let mut to_write: Vec<(usize, &str, &Wanted)> = Vec::new();
    for (index, folder) in folders.iter().enumerate() {
        for (&name, &item) in folder.files {
            let vouched = old.get(item.path.as_str()) == Some(&item.key);
            if vouched && folder.present.contains(name) {
                kept.insert(&item.path, &item.key);
            } else {
                to_write.push((index, name, item));
            }
        }
    }
    let manifest_ok = if wanted.is_empty() {
        !manifest_present
    } else {
        to_write.is_empty() && old.len() == wanted.len()
    };
    let mut folder_changes: Vec<bool> = folders
        .iter()
        .map(|folder| folder.mode != Some(DIR_MODE) || !folder.strays.is_empty())
        .collect();
    for &(index, _, _) in &to_write {
        folder_changes[index] = true;
    }
    let root_changes = folder_changes[0]
        || !manifest_ok
        || folders.iter().skip(1).any(|folder| folder.mode.is_none());
    let mut report = RefreshReport {
        unchanged: kept.len(),
        ..RefreshReport::default()
    };
    if !root_changes && !folder_changes.contains(&true) {
        return Ok(report);
    }

    // Change. `unsealed` makes every folder it opened read-only again however this ends.
    let mut unsealed = Unsealed::default();
    if root_changes {
        unsealed.open(dir, root.try_clone().map_err(io("open", dir))?)?;
    }
    // The manifest stops vouching for every file about to change (entries of unwanted files
    // stay until those files are gone: they still vouch truly, and they let a file this writer
    // made give way to a sibling's folder of the same name even after a kill).
    if to_write
        .iter()
        .any(|(_, _, item)| old.contains_key(item.path.as_str()))
    {
        let changing: HashSet<&str> = to_write
            .iter()
            .map(|(_, _, item)| item.path.as_str())
            .collect();
        let interim: BTreeMap<&str, &str> = old
            .iter()
            .filter(|(path, _)| !changing.contains(path.as_str()))
            .map(|(path, key)| (path.as_str(), key.as_str()))
            .collect();
        write_manifest(&root, dir, &interim)?;
    }
    for (index, folder) in folders.iter_mut().enumerate() {
        if index > 0 && folder.mode.is_none() {
            match fs::create_dir(&folder.path) {
                Ok(()) => {}
                // Made by someone else since the look: checked by the open below.
                Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
                Err(err) => return Err(io("create", &folder.path)(err)),
            }
        }
        if index > 0 && folder_changes[index] {
            let handle = open_dir(&folder.path).map_err(|err| refusal(&folder.path, err))?;
            unsealed.open(&folder.path, handle)?;
        }
        folder.strays.sort_by(|a, b| a.name.cmp(&b.name));
        for stray in &folder.strays {
            let path = folder.path.join(&stray.name);
            let rel = relative(folder.rel, &stray.name);
            if stray.kind == Kind::Dir {
                remove_tree(&path, &rel, &mut report.removed)?;
            } else {
                remove_entry(&path, rel, &mut report.removed)?;
            }
        }
    }
    let mut written: Vec<&Wanted> = Vec::new();
    let mut outcome = Ok(());
    for &(index, name, item) in &to_write {
        let step = content(item)
            .and_then(|text| write_atomic(&folders[index].path, name, text.as_bytes()));
        if let Err(err) = step {
            outcome = Err(err);
            break;
        }
        written.push(item);
    }

    // Finish: renames durable first, then the manifest that vouches for them.
    let mut errors = Errors(outcome.err());
    match unsealed.sync() {
        Ok(()) if !manifest_ok || !to_write.is_empty() => {
            for item in &written {
                kept.insert(&item.path, &item.key);
            }
            if let Err(err) = write_manifest(&root, dir, &kept) {
                errors.note(err);
            }
        }
        Ok(()) => {}
        Err(err) => errors.note(err),
    }
    if let Err(err) = unsealed.seal() {
        errors.note(err);
    }
    if let Some(err) = errors.0 {
        return Err(err);
    }
    report.written = written.into_iter().map(|item| item.path.clone()).collect();
    Ok(report)
}

/// Empties the directory (used when the library cannot answer at an agent's start: better empty
/// than stale). Creates it if missing; leaves it read-only.
pub fn empty(dir: &Path) -> Result<RefreshReport, MirrorError> {
    refresh(dir, &[], &mut |item| {
        Err(MirrorError::Content {
            path: item.path.clone(),
            message: "nothing is wanted in an emptied mirror".to_string(),
        })
    })
}

/// The keys the directory holds: the manifest's path → key entries whose file is present as a
/// regular file. A runner sends them to the server (`MirrorRequest.have`) so that unchanged
/// files come back without their content. An entry whose file is missing is left out, because
/// the manifest may vouch for a file that is not there (see the module docs) and the server
/// would then leave out content the runner needs. A missing or corrupt manifest, or a mirror
/// directory that is a symlink or not a directory, holds nothing.
pub fn held_keys(dir: &Path) -> BTreeMap<String, String> {
    let is_real_dir = fs::symlink_metadata(dir).is_ok_and(|metadata| metadata.is_dir());
    if !is_real_dir {
        return BTreeMap::new();
    }
    read_manifest(&dir.join(MANIFEST))
        .into_iter()
        .filter(|(path, _)| {
            let Ok((folder, name)) = split_wanted(path) else {
                return false;
            };
            let folder_path = if folder.is_empty() {
                dir.to_path_buf()
            } else {
                dir.join(folder)
            };
            // The folder is checked without following a symlink, as a refresh would.
            let folder_ok = folder.is_empty()
                || fs::symlink_metadata(&folder_path).is_ok_and(|metadata| metadata.is_dir());
            folder_ok
                && fs::symlink_metadata(folder_path.join(name))
                    .is_ok_and(|metadata| metadata.file_type().is_file())
        })
        .collect()
}

/// The wanted files by folder (`""` is the mirror directory itself, always present and first),
/// each folder's files by name. Checks every path, duplicates and file/folder clashes.
fn layout(wanted: &[Wanted]) -> Result<BTreeMap<&str, BTreeMap<&str, &Wanted>>, MirrorError> {
    let mut folders: BTreeMap<&str, BTreeMap<&str, &Wanted>> = BTreeMap::new();
    folders.insert("", BTreeMap::new());
    for item in wanted {
        let (folder, name) = split_wanted(&item.path)?;
        if folders
            .entry(folder)
            .or_default()
            .insert(name, item)
            .is_some()
        {
            return Err(MirrorError::Duplicate(item.path.clone()));
        }
    }
    for folder in folders.keys().skip(1) {
        if folders[""].contains_key(folder) {
            return Err(MirrorError::FileAndFolder((*folder).to_string()));
        }
    }
    Ok(folders)
}

/// `NAME.md` → `("", "NAME.md")`; `agent/name.ts` → `("agent", "name.ts")`.
fn split_wanted(path: &str) -> Result<(&str, &str), MirrorError> {
    let bad = |reason| MirrorError::BadPath {
        path: path.to_string(),
        reason,
    };
    if path.is_empty() {
        return Err(bad("is empty"));
    }
    if path.starts_with('/') {
        return Err(bad("is absolute"));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(bad("climbs out with `..`"));
    }
    let (folder, name) = path.split_once('/').unwrap_or(("", path));
    if name.contains('/') {
        return Err(bad("has more than one `/`"));
    }
    if path.contains('/') {
        check_name(folder).map_err(bad)?;
    }
    check_name(name).map_err(bad)?;
    Ok((folder, name))
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("has an empty name");
    }
    if name.starts_with('.') {
        return Err("names a hidden file");
    }
    if name.len() > MAX_NAME_BYTES {
        return Err("has a name over 200 bytes");
    }
    if !name
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Err("has a character other than letters, digits, `.`, `_` and `-`");
    }
    Ok(())
}

/// What an entry found in the mirror is (never following a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    /// A socket, FIFO or device.
    Other,
}

fn kind_of(file_type: fs::FileType) -> Kind {
    if file_type.is_symlink() {
        Kind::Link
    } else if file_type.is_dir() {
        Kind::Dir
    } else if file_type.is_file() {
        Kind::File
    } else {
        Kind::Other
    }
}

/// An entry that is not wanted where it is: removed by the refresh.
struct Stray {
    name: OsString,
    kind: Kind,
}

/// One folder of the mirror: what it should hold, and what it holds now.
struct Folder<'a> {
    /// `""` for the mirror directory itself, else the sibling's name.
    rel: &'a str,
    path: PathBuf,
    files: &'a BTreeMap<&'a str, &'a Wanted>,
    /// Its permission bits, or `None` when it does not exist.
    mode: Option<u32>,
    /// The wanted names present as regular files.
    present: HashSet<&'a str>,
    strays: Vec<Stray>,
}

/// Every entry of a folder with its kind (from the directory listing; no `stat` per file on
/// filesystems that report types, which Linux's do).
fn list(path: &Path) -> Result<Vec<(OsString, Kind)>, MirrorError> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(path).map_err(io("list", path))? {
        let entry = entry.map_err(io("list", path))?;
        let kind = kind_of(entry.file_type().map_err(io("inspect", &entry.path()))?);
        entries.push((entry.file_name(), kind));
    }
    Ok(entries)
}

/// A sub-folder's permission bits; refuses one that became a symlink since it was listed.
fn folder_mode(path: &Path) -> Result<u32, MirrorError> {
    let metadata = fs::symlink_metadata(path).map_err(io("inspect", path))?;
    if metadata.file_type().is_symlink() {
        return Err(MirrorError::Symlink(path.to_path_buf()));
    }
    if !metadata.is_dir() {
        return Err(MirrorError::NotADirectory(path.to_path_buf()));
    }
    Ok(metadata.permissions().mode() & 0o7777)
}

/// Opens a directory without following a symlink in its last component.
fn open_dir(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(path)
}

/// The error for a directory that could not be opened: a symlink or a non-directory is refused.
fn refusal(path: &Path, err: std::io::Error) -> MirrorError {
    match err.raw_os_error() {
        Some(libc::ELOOP) => MirrorError::Symlink(path.to_path_buf()),
        Some(libc::ENOTDIR) => MirrorError::NotADirectory(path.to_path_buf()),
        _ => io("open", path)(err),
    }
}

/// Checks the mirror directory (creating it when missing) and opens it.
fn open_root(dir: &Path) -> Result<File, MirrorError> {
    match fs::symlink_metadata(dir) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(MirrorError::Symlink(dir.to_path_buf()));
        }
        Ok(metadata) if !metadata.is_dir() => {
            return Err(MirrorError::NotADirectory(dir.to_path_buf()));
        }
        Ok(_) => {}
        Err(err) if err.kind() == ErrorKind::NotFound => match fs::create_dir(dir) {
            // Made read-only with the first refresh's seal.
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
            Err(err) if err.kind() == ErrorKind::NotFound => {
                return Err(MirrorError::NoParent(
                    dir.parent().unwrap_or(dir).to_path_buf(),
                ));
            }
            Err(err) => return Err(io("create", dir)(err)),
        },
        Err(err) => return Err(io("inspect", dir)(err)),
    }
    open_dir(dir).map_err(|err| refusal(dir, err))
}

/// The manifest's entries; empty when it is unreadable or corrupt (everything is rewritten).
fn read_manifest(path: &Path) -> HashMap<String, String> {
    // O_NONBLOCK: should a FIFO have replaced it since the listing, opening must not hang.
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return HashMap::new();
    };
    let mut bytes = Vec::new();
    let read = file
        .take(MAX_MANIFEST_BYTES + 1)
        .read_to_end(&mut bytes)
        .is_ok();
    if !read || bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return HashMap::new();
    }
    serde_json::from_slice(&bytes).unwrap_or_else(|err| {
        tracing::warn!(path = %path.display(), %err, "corrupt mirror manifest; rewriting every file");
        HashMap::new()
    })
}

/// Replaces the manifest atomically and makes it durable (an empty one is removed: no manifest
/// vouches for nothing, which is what an empty one says).
fn write_manifest(
    root: &File,
    dir: &Path,
    entries: &BTreeMap<&str, &str>,
) -> Result<(), MirrorError> {
    let path = dir.join(MANIFEST);
    if entries.is_empty() {
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::NotFound => {}
            Err(err) => return Err(io("remove", &path)(err)),
        }
    } else {
        let json = serde_json::to_vec_pretty(entries)
            .map_err(|err| io("encode", &path)(std::io::Error::new(ErrorKind::InvalidData, err)))?;
        write_atomic(dir, MANIFEST, &json)?;
    }
    root.sync_all().map_err(io("sync", dir))
}

/// Writes `folder/name` atomically and read-only (see
/// [`crate::atomic_file::write_atomic_with`]). The folder is not fsynced here (once per
/// refresh, after all renames).
fn write_atomic(folder: &Path, name: &str, bytes: &[u8]) -> Result<(), MirrorError> {
    let target = folder.join(name);
    let how = Replace {
        mode: Some(FILE_MODE),
        sync_folder: false,
    };
    write_atomic_with(&target, bytes, how).map_err(io("write", &target))
}

fn relative(folder: &str, name: &OsString) -> String {
    let name = name.to_string_lossy();
    if folder.is_empty() {
        name.into_owned()
    } else {
        format!("{folder}/{name}")
    }
}

/// Unlinks a file, symlink (not its target) or special file.
fn remove_entry(path: &Path, rel: String, removed: &mut Vec<String>) -> Result<(), MirrorError> {
    match fs::remove_file(path) {
        Ok(()) => removed.push(rel),
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(io("remove", path)(err)),
    }
    Ok(())
}

/// Removes a folder and everything in it, never following a symlink, making each folder
/// writable first (it may be a read-only sibling folder of an earlier refresh).
fn remove_tree(path: &Path, rel: &str, removed: &mut Vec<String>) -> Result<(), MirrorError> {
    let handle = match open_dir(path) {
        Ok(handle) => handle,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
        // No longer a folder since it was listed: unlink whatever it is.
        Err(err) if matches!(err.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
            return remove_entry(path, rel.to_string(), removed);
        }
        Err(err) => return Err(io("open", path)(err)),
    };
    handle
        .set_permissions(Permissions::from_mode(OPEN_DIR_MODE))
        .map_err(io("unlock", path))?;
    drop(handle);
    let mut entries = list(path)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, kind) in entries {
        let child = path.join(&name);
        let child_rel = relative(rel, &name);
        if kind == Kind::Dir {
            remove_tree(&child, &child_rel, removed)?;
        } else {
            remove_entry(&child, child_rel, removed)?;
        }
    }
    match fs::remove_dir(path) {
        Ok(()) => removed.push(format!("{rel}/")),
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(io("remove", path)(err)),
    }
    Ok(())
}

/// The folders a refresh made writable (0755); [`Unsealed::seal`] makes them read-only again,
/// and so does dropping it (a refresh that fails half-way still leaves them read-only).
#[derive(Default)]
struct Unsealed {
    folders: Vec<(PathBuf, File)>,
}

impl Unsealed {
    fn open(&mut self, path: &Path, handle: File) -> Result<(), MirrorError> {
        handle
            .set_permissions(Permissions::from_mode(OPEN_DIR_MODE))
            .map_err(io("unlock", path))?;
        self.folders.push((path.to_path_buf(), handle));
        Ok(())
    }

    /// Makes every rename, creation and removal in the opened folders durable.
    fn sync(&self) -> Result<(), MirrorError> {
        for (path, handle) in &self.folders {
            handle.sync_all().map_err(io("sync", path))?;
        }
        Ok(())
    }

    /// Sub-folders first, the mirror directory last.
    fn seal(&mut self) -> Result<(), MirrorError> {
        let mut first = None;
        while let Some((path, handle)) = self.folders.pop() {
            if let Err(err) = handle.set_permissions(Permissions::from_mode(DIR_MODE)) {
                first.get_or_insert(io("seal", &path)(err));
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for Unsealed {
    fn drop(&mut self) {
        if let Err(err) = self.seal() {
            tracing::warn!(%err, "cannot make the mirror read-only again");
        }
    }
}

/// The first error of a refresh is returned; later ones are logged.
struct Errors(Option<MirrorError>);

impl Errors {
    fn note(&mut self, err: MirrorError) {
        if self.0.is_none() {
            self.0 = Some(err);
        } else {
            tracing::warn!(%err, "a further error while finishing a mirror refresh");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A mirror directory in a temp home; made writable again before the home is deleted, so
    /// cleanup works for a user other than root too.
    struct Mirror {
        home: tempfile::TempDir,
        dir: PathBuf,
    }

    impl Mirror {
        fn new() -> Self {
            let home = tempfile::tempdir().unwrap();
            let dir = home.path().join("family-skills");
            Mirror { home, dir }
        }
    }

    impl Drop for Mirror {
        fn drop(&mut self) {
            open_up_all(self.home.path());
        }
    }

    fn open_up_all(path: &Path) {
        let Ok(metadata) = fs::symlink_metadata(path) else {
            return;
        };
        if metadata.is_dir() {
            let _ = fs::set_permissions(path, Permissions::from_mode(0o755));
            for entry in fs::read_dir(path).into_iter().flatten().flatten() {
                open_up_all(&entry.path());
            }
        }
    }

    fn open_up(path: &Path) {
        fs::set_permissions(path, Permissions::from_mode(0o755)).unwrap();
    }

    fn seal_up(path: &Path) {
        fs::set_permissions(path, Permissions::from_mode(DIR_MODE)).unwrap();
    }

    fn want(path: &str, key: &str) -> Wanted {
        Wanted::new(path, key)
    }

    fn text_for(item: &Wanted) -> String {
        format!("{} at {}\n", item.path, item.key)
    }

    /// Refreshes with [`text_for`], returning the report and the paths whose content was asked.
    fn refresh_logged(dir: &Path, wanted: &[Wanted]) -> (RefreshReport, Vec<String>) {
        let mut asked = Vec::new();
        let report = refresh(dir, wanted, &mut |item| {
            asked.push(item.path.clone());
            Ok(text_for(item))
        })
        .unwrap();
        (report, asked)
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// Every entry under `dir` (hidden ones too), never following a symlink: relative path →
    /// (`dir/`, `link`, `other` or the file's content, mode).
    fn snapshot(dir: &Path) -> BTreeMap<String, (String, u32)> {
        fn walk(base: &Path, path: &Path, out: &mut BTreeMap<String, (String, u32)>) {
            for entry in fs::read_dir(path).unwrap() {
                let entry = entry.unwrap();
                let child = entry.path();
                let rel = child
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let kind = kind_of(entry.file_type().unwrap());
                let shown = match kind {
                    Kind::Dir => "dir/".to_string(),
                    Kind::Link => "link".to_string(),
                    Kind::Other => "other".to_string(),
                    Kind::File => fs::read_to_string(&child).unwrap(),
                };
                out.insert(rel, (shown, mode(&child)));
                if kind == Kind::Dir {
                    walk(base, &child, out);
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(dir, dir, &mut out);
        out
    }

    /// The directory holds exactly `wanted` with their content, read-only, plus the manifest.
    fn assert_exactly(dir: &Path, wanted: &[Wanted]) {
        let mut expected = BTreeMap::new();
        for item in wanted {
            expected.insert(item.path.clone(), (text_for(item), FILE_MODE));
            if let Some((folder, _)) = item.path.split_once('/') {
                expected.insert(folder.to_string(), ("dir/".to_string(), DIR_MODE));
            }
        }
        let mut found = snapshot(dir);
        let manifest = found.remove(MANIFEST);
        assert_eq!(found, expected);
        assert_eq!(mode(dir), DIR_MODE);
        if wanted.is_empty() {
            assert_eq!(manifest, None);
        } else {
            let (json, manifest_mode) = manifest.expect("a manifest");
            assert_eq!(manifest_mode, FILE_MODE);
            let entries: BTreeMap<String, String> = serde_json::from_str(&json).unwrap();
            let keys: BTreeMap<String, String> = wanted
                .iter()
                .map(|item| (item.path.clone(), item.key.clone()))
                .collect();
            assert_eq!(entries, keys);
        }
    }

    /// Whatever happened, every manifest entry vouches for a file holding that key's content (or
    /// no file), every visible file holds some complete content of its path, and nothing
    /// half-written is visible.
    fn assert_consistent(dir: &Path) {
        let found = snapshot(dir);
        let entries: BTreeMap<String, String> = found
            .get(MANIFEST)
            .map(|(json, _)| serde_json::from_str(json).unwrap())
            .unwrap_or_default();
        for (path, key) in &entries {
            if let Some((text, _)) = found.get(path) {
                assert_eq!(*text, text_for(&want(path, key)), "{path} vouched as {key}");
            }
        }
        for (path, (text, file_mode)) in &found {
            if text == "dir/" {
                assert_eq!(*file_mode, DIR_MODE, "{path}");
            } else if path != MANIFEST {
                assert!(
                    text.starts_with(&format!("{path} at ")) && text.ends_with('\n'),
                    "{path} holds {text:?}"
                );
                assert_eq!(*file_mode, FILE_MODE, "{path}");
            }
        }
        assert_eq!(mode(dir), DIR_MODE);
    }

    fn some_files(key: &str) -> Vec<Wanted> {
        vec![
            want("INDEX.md", key),
            want("LESSONS.md", key),
            want("buzz/chop.ts", key),
            want("buzz/mine.ts", key),
            want("pickles/fish.ts", key),
        ]
    }

    #[test]
    fn a_first_refresh_writes_every_file_read_only() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(
            report.written,
            vec![
                "INDEX.md",
                "LESSONS.md",
                "buzz/chop.ts",
                "buzz/mine.ts",
                "pickles/fish.ts"
            ]
        );
        assert_eq!(asked.len(), 5);
        assert!(report.removed.is_empty());
        assert_eq!(report.unchanged, 0);
        assert_exactly(&mirror.dir, &wanted);
        assert_eq!(mode(&mirror.dir.join("buzz")), DIR_MODE);
        assert_eq!(mode(&mirror.dir.join("buzz/chop.ts")), FILE_MODE);
    }

    #[test]
    fn held_keys_are_the_manifest_s_entries_whose_files_are_present() {
        let mirror = Mirror::new();
        assert!(held_keys(&mirror.dir).is_empty(), "no mirror holds nothing");
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        let held = held_keys(&mirror.dir);
        let expected: BTreeMap<String, String> = wanted
            .iter()
            .map(|item| (item.path.clone(), item.key.clone()))
            .collect();
        assert_eq!(held, expected);
        // A file gone behind the writer's back is not vouched for any more.
        open_up(&mirror.dir.join("buzz"));
        fs::remove_file(mirror.dir.join("buzz/mine.ts")).unwrap();
        seal_up(&mirror.dir.join("buzz"));
        let held = held_keys(&mirror.dir);
        assert_eq!(held.len(), 4);
        assert!(!held.contains_key("buzz/mine.ts"));
        // A corrupt manifest holds nothing.
        open_up(&mirror.dir);
        fs::remove_file(mirror.dir.join(MANIFEST)).unwrap();
        fs::write(mirror.dir.join(MANIFEST), "{oops").unwrap();
        assert!(held_keys(&mirror.dir).is_empty());
    }

    #[test]
    fn unchanged_keys_write_nothing_and_never_ask_for_content() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        let before = fs::metadata(mirror.dir.join(MANIFEST))
            .unwrap()
            .modified()
            .unwrap();
        let report = refresh(&mirror.dir, &wanted, &mut |item| {
            panic!("content of {} asked", item.path)
        })
        .unwrap();
        assert_eq!(
            report,
            RefreshReport {
                unchanged: 5,
                ..RefreshReport::default()
            }
        );
        let after = fs::metadata(mirror.dir.join(MANIFEST))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_changed_key_rewrites_only_that_file() {
        let mirror = Mirror::new();
        let mut wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        wanted[3].key = "v2".to_string();
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(asked, vec!["buzz/mine.ts"]);
        assert_eq!(report.written, vec!["buzz/mine.ts"]);
        assert_eq!(report.unchanged, 4);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn unwanted_files_and_emptied_sibling_folders_are_removed() {
        let mirror = Mirror::new();
        refresh_logged(&mirror.dir, &some_files("v1"));
        let wanted = vec![want("INDEX.md", "v1"), want("buzz/chop.ts", "v1")];
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert!(asked.is_empty());
        assert_eq!(
            report.removed,
            vec!["LESSONS.md", "pickles/fish.ts", "pickles/", "buzz/mine.ts"]
        );
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_file_can_become_a_sibling_folder_and_back() {
        let mirror = Mirror::new();
        let as_file = vec![want("buzz", "v1")];
        let as_folder = vec![want("buzz/chop.ts", "v1")];
        refresh_logged(&mirror.dir, &as_file);
        refresh_logged(&mirror.dir, &as_folder);
        assert_exactly(&mirror.dir, &as_folder);
        refresh_logged(&mirror.dir, &as_file);
        assert_exactly(&mirror.dir, &as_file);
    }

    #[test]
    fn leftovers_of_a_killed_run_are_cleaned_without_rewriting() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        // Killed while both folders were writable, with half-written temp files in them.
        open_up(&mirror.dir);
        open_up(&mirror.dir.join("buzz"));
        fs::write(mirror.dir.join(".INDEX.md.tmp-99999"), "INDEX.md at v").unwrap();
        fs::write(mirror.dir.join("buzz/.chop.ts.tmp-4242"), "buz").unwrap();
        fs::write(mirror.dir.join("..manifest.tmp-4242"), "{").unwrap();
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert!(asked.is_empty());
        assert_eq!(
            report.removed,
            vec![
                "..manifest.tmp-4242",
                ".INDEX.md.tmp-99999",
                "buzz/.chop.ts.tmp-4242"
            ]
        );
        assert_eq!(report.unchanged, 5);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_folder_left_writable_is_sealed_again() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        open_up(&mirror.dir.join("pickles"));
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert!(asked.is_empty());
        assert_eq!(report.unchanged, 5);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_corrupt_or_missing_manifest_rewrites_everything() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        open_up(&mirror.dir);
        fs::remove_file(mirror.dir.join(MANIFEST)).unwrap();
        fs::write(mirror.dir.join(MANIFEST), "{\"INDEX.md\": ").unwrap();
        seal_up(&mirror.dir);
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(asked.len(), 5);
        assert_eq!(report.written.len(), 5);
        assert_exactly(&mirror.dir, &wanted);

        open_up(&mirror.dir);
        fs::remove_file(mirror.dir.join(MANIFEST)).unwrap();
        seal_up(&mirror.dir);
        let (report, _) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(report.written.len(), 5);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_vouched_file_that_vanished_is_written_again() {
        let mirror = Mirror::new();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        open_up(&mirror.dir.join("buzz"));
        fs::remove_file(mirror.dir.join("buzz/chop.ts")).unwrap();
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(asked, vec!["buzz/chop.ts"]);
        assert_eq!(report.unchanged, 4);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_symlinked_mirror_or_sibling_folder_is_refused_and_nothing_is_touched() {
        let mirror = Mirror::new();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("keep.md"), "keep").unwrap();
        let outside_before = snapshot(outside.path());
        std::os::unix::fs::symlink(outside.path(), &mirror.dir).unwrap();
        let err = refresh_logged_err(&mirror.dir, &some_files("v1"));
        assert!(matches!(&err, MirrorError::Symlink(path) if *path == mirror.dir));
        assert!(err.to_string().contains("remove the link"), "{err}");
        assert!(matches!(empty(&mirror.dir), Err(MirrorError::Symlink(_))));
        assert_eq!(snapshot(outside.path()), outside_before);

        // A sibling's folder that is a symlink.
        fs::remove_file(&mirror.dir).unwrap();
        refresh_logged(&mirror.dir, &[want("INDEX.md", "v1")]);
        open_up(&mirror.dir);
        std::os::unix::fs::symlink(outside.path(), mirror.dir.join("buzz")).unwrap();
        fs::write(mirror.dir.join("stray.md"), "stray").unwrap();
        seal_up(&mirror.dir);
        let inside_before = snapshot(&mirror.dir);
        let err = refresh_logged_err(&mirror.dir, &some_files("v2"));
        assert!(matches!(&err, MirrorError::Symlink(path) if *path == mirror.dir.join("buzz")));
        assert_eq!(snapshot(&mirror.dir), inside_before);
        assert_eq!(snapshot(outside.path()), outside_before);
    }

    fn refresh_logged_err(dir: &Path, wanted: &[Wanted]) -> MirrorError {
        refresh(dir, wanted, &mut |item| Ok(text_for(item))).unwrap_err()
    }

    #[test]
    fn a_mirror_path_that_is_a_file_is_refused() {
        let mirror = Mirror::new();
        fs::write(&mirror.dir, "not a folder").unwrap();
        let err = refresh_logged_err(&mirror.dir, &some_files("v1"));
        assert!(matches!(err, MirrorError::NotADirectory(_)));
        assert_eq!(fs::read_to_string(&mirror.dir).unwrap(), "not a folder");
    }

    #[test]
    fn a_foreign_file_where_a_sibling_folder_goes_is_refused() {
        let mirror = Mirror::new();
        refresh_logged(&mirror.dir, &[want("INDEX.md", "v1")]);
        open_up(&mirror.dir);
        fs::write(mirror.dir.join("buzz"), "someone's").unwrap();
        seal_up(&mirror.dir);
        let before = snapshot(&mirror.dir);
        let err = refresh_logged_err(&mirror.dir, &[want("buzz/chop.ts", "v1")]);
        assert!(matches!(&err, MirrorError::NotADirectory(path) if path.ends_with("buzz")));
        assert_eq!(snapshot(&mirror.dir), before);
    }

    #[test]
    fn a_symlink_or_socket_inside_the_mirror_is_removed_without_touching_its_target() {
        let mirror = Mirror::new();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("secret.txt");
        fs::write(&target, "secret").unwrap();
        fs::set_permissions(&target, Permissions::from_mode(0o600)).unwrap();
        let wanted = some_files("v1");
        refresh_logged(&mirror.dir, &wanted);
        open_up(&mirror.dir);
        open_up(&mirror.dir.join("buzz"));
        std::os::unix::fs::symlink(&target, mirror.dir.join("evil.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), mirror.dir.join("elsewhere")).unwrap();
        fs::remove_file(mirror.dir.join("INDEX.md")).unwrap();
        std::os::unix::fs::symlink(&target, mirror.dir.join("INDEX.md")).unwrap();
        fs::remove_file(mirror.dir.join("buzz/chop.ts")).unwrap();
        std::os::unix::fs::symlink(&target, mirror.dir.join("buzz/chop.ts")).unwrap();
        let _socket =
            std::os::unix::net::UnixListener::bind(mirror.dir.join("buzz/sock.ts")).unwrap();
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(asked, vec!["INDEX.md", "buzz/chop.ts"]);
        assert_eq!(
            report.removed,
            vec![
                "INDEX.md",
                "elsewhere",
                "evil.md",
                "buzz/chop.ts",
                "buzz/sock.ts"
            ]
        );
        assert_exactly(&mirror.dir, &wanted);
        assert_eq!(fs::read_to_string(&target).unwrap(), "secret");
        assert_eq!(mode(&target), 0o600);
        assert_eq!(
            fs::read_dir(outside.path()).unwrap().count(),
            1,
            "nothing written outside"
        );
    }

    #[test]
    fn bad_wanted_paths_are_refused_naming_the_path_and_nothing_is_created() {
        let mirror = Mirror::new();
        let long = format!("{}.md", "a".repeat(MAX_NAME_BYTES));
        for bad in [
            "",
            "/etc/passwd",
            "../x.md",
            "buzz/../x.md",
            "..",
            ".hidden.md",
            "buzz/.chop.ts",
            ".buzz/chop.ts",
            "a/b/c.ts",
            "a//c.ts",
            "buzz/",
            "/",
            "sp ace.md",
            "back\\slash.md",
            "ünï.md",
            long.as_str(),
        ] {
            let wanted = vec![want("INDEX.md", "v1"), want(bad, "v1")];
            let err = refresh_logged_err(&mirror.dir, &wanted);
            assert!(
                matches!(&err, MirrorError::BadPath { path, .. } if path == bad),
                "{bad:?}: {err}"
            );
            assert!(err.to_string().contains(&format!("`{bad}`")), "{err}");
            assert!(!mirror.dir.exists(), "{bad:?} created the mirror");
        }
    }

    #[test]
    fn the_same_path_twice_or_a_file_and_folder_of_one_name_is_refused() {
        let mirror = Mirror::new();
        let twice = vec![want("buzz/a.ts", "1"), want("buzz/a.ts", "2")];
        assert!(matches!(
            refresh_logged_err(&mirror.dir, &twice),
            MirrorError::Duplicate(path) if path == "buzz/a.ts"
        ));
        let clash = vec![want("buzz/a.ts", "1"), want("buzz", "2")];
        assert!(matches!(
            refresh_logged_err(&mirror.dir, &clash),
            MirrorError::FileAndFolder(path) if path == "buzz"
        ));
        assert!(!mirror.dir.exists());
    }

    #[test]
    fn a_missing_parent_is_an_error_naming_it() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("gone/family-skills");
        let err = refresh_logged_err(&dir, &some_files("v1"));
        assert!(matches!(&err, MirrorError::NoParent(path) if *path == home.path().join("gone")));
    }

    #[test]
    fn empty_leaves_an_empty_read_only_directory() {
        let mirror = Mirror::new();
        let report = empty(&mirror.dir).unwrap();
        assert_eq!(report, RefreshReport::default());
        assert_exactly(&mirror.dir, &[]);

        refresh_logged(&mirror.dir, &some_files("v1"));
        let report = empty(&mirror.dir).unwrap();
        assert_eq!(report.removed.len(), 7);
        assert_exactly(&mirror.dir, &[]);
        assert_eq!(fs::read_dir(&mirror.dir).unwrap().count(), 0);
        assert_eq!(empty(&mirror.dir).unwrap(), RefreshReport::default());
    }

    #[test]
    fn a_content_error_leaves_every_file_old_or_new_and_is_returned() {
        let mirror = Mirror::new();
        refresh_logged(&mirror.dir, &some_files("v1"));
        let mut wanted = some_files("v2");
        wanted.push(want("zed/new.ts", "v2"));
        let mut calls = 0;
        let err = refresh(&mirror.dir, &wanted, &mut |item| {
            calls += 1;
            if calls == 3 {
                return Err(MirrorError::Content {
                    path: item.path.clone(),
                    message: "the library did not answer".to_string(),
                });
            }
            Ok(text_for(item))
        })
        .unwrap_err();
        assert!(matches!(&err, MirrorError::Content { path, .. } if path == "buzz/chop.ts"));
        assert_consistent(&mirror.dir);
        let found = snapshot(&mirror.dir);
        assert_eq!(found["INDEX.md"].0, text_for(&want("INDEX.md", "v2")));
        assert_eq!(
            found["buzz/chop.ts"].0,
            text_for(&want("buzz/chop.ts", "v1"))
        );

        // The next refresh writes only what is still old.
        let (report, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(
            asked,
            vec![
                "buzz/chop.ts",
                "buzz/mine.ts",
                "pickles/fish.ts",
                "zed/new.ts"
            ]
        );
        assert_eq!(report.unchanged, 2);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn a_run_killed_mid_refresh_never_leaves_the_manifest_vouching_for_old_content() {
        let mirror = Mirror::new();
        refresh_logged(&mirror.dir, &some_files("v1"));
        let wanted = some_files("v2");
        // A panic stops the refresh as a kill would, before the final manifest.
        let mut calls = 0;
        let killed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            refresh(&mirror.dir, &wanted, &mut |item| {
                calls += 1;
                assert!(calls < 3, "killed");
                Ok(text_for(item))
            })
        }));
        assert!(killed.is_err());
        assert_consistent(&mirror.dir);
        let (_, asked) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(asked.len(), 5);
        assert_exactly(&mirror.dir, &wanted);
    }

    #[test]
    fn an_unchanged_refresh_of_2000_files_reads_no_content() {
        let mirror = Mirror::new();
        let wanted: Vec<Wanted> = (0..2000)
            .map(|n| {
                want(
                    &format!("agent{:02}/skill-{n:04}.ts", n % 20),
                    &format!("sha256:{n:064}"),
                )
            })
            .collect();
        let (report, _) = refresh_logged(&mirror.dir, &wanted);
        assert_eq!(report.written.len(), 2000);
        let mut best = std::time::Duration::MAX;
        for _ in 0..20 {
            let started = std::time::Instant::now();
            let report = refresh(&mirror.dir, &wanted, &mut |item| {
                panic!("content of {} asked", item.path)
            })
            .unwrap();
            best = best.min(started.elapsed());
            assert_eq!(report.unchanged, 2000);
        }
        // A figure to read with --nocapture, not a budget (budgets live in `mindrune bench`).
        eprintln!("unchanged refresh of 2,000 files: {best:?} (best of 20)");
    }

    const UNIVERSE: [&str; 7] = [
        "INDEX.md",
        "LESSONS.md",
        "d",
        "a/x.ts",
        "a/y.ts",
        "b/x.ts",
        "d/x.ts",
    ];

    fn wanted_set() -> impl Strategy<Value = Vec<Wanted>> {
        proptest::collection::vec(proptest::option::of(0u8..3), UNIVERSE.len()).prop_map(|keys| {
            let mut wanted: Vec<Wanted> = Vec::new();
            for (path, key) in UNIVERSE.iter().zip(keys) {
                let Some(key) = key else { continue };
                if *path == "d/x.ts" && wanted.iter().any(|item| item.path == "d") {
                    continue;
                }
                wanted.push(want(path, &format!("k{key}")));
            }
            wanted
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn any_sequence_of_refreshes_leaves_exactly_the_wanted_files(
            steps in proptest::collection::vec(
                (wanted_set(), proptest::option::of(1usize..4), any::<bool>()),
                1..8,
            )
        ) {
            let mirror = Mirror::new();
            for (wanted, fail_at, junk) in steps {
                if junk && mirror.dir.exists() {
                    open_up(&mirror.dir);
                    fs::write(mirror.dir.join(".INDEX.md.tmp-1"), "half").unwrap();
                    fs::write(mirror.dir.join("junk.txt"), "junk").unwrap();
                    seal_up(&mirror.dir);
                }
                let mut calls = 0;
                let result = refresh(&mirror.dir, &wanted, &mut |item| {
                    calls += 1;
                    if Some(calls) == fail_at {
                        return Err(MirrorError::Content {
                            path: item.path.clone(),
                            message: "no answer".to_string(),
                        });
                    }
                    Ok(text_for(item))
                });
                if result.is_err() {
                    assert_consistent(&mirror.dir);
                    refresh_logged(&mirror.dir, &wanted);
                }
                assert_exactly(&mirror.dir, &wanted);
                let (report, asked) = refresh_logged(&mirror.dir, &wanted);
                prop_assert!(asked.is_empty());
                prop_assert_eq!(report.unchanged, wanted.len());
            }
        }
    }
}
