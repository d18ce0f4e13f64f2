//! Reading an agent's files without ever leaving its home.
//!
//! Architecture invariant: every read of an agent's file goes through [`read_contained`]. It
//! walks the path one component at a time with `symlink_metadata`, so neither a symlink nor a
//! `..` can lead it out of the workspace, and it reads only regular files of bounded size.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

/// The largest script read, in bytes. rs-sdk's own code limit is 262,144 characters; a script
/// file may be a little larger, but a 50 MB "script" is not one.
pub const MAX_SCRIPT_BYTES: u64 = 1024 * 1024;

/// The root the sandbox shows the workspace at (rs-sdk's `/work`).
pub const SANDBOX_ROOT: &str = "/work";

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ReadError {
    #[error("`{0}` leads outside the workspace")]
    Outside(String),
    #[error("`{0}` goes through a symlink; scripts must be plain files inside the workspace")]
    Symlink(String),
    #[error("`{0}` is not a regular file")]
    NotAFile(String),
    #[error("`{path}` is {size} bytes, over the {limit}-byte limit for a script")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("`{0}` is not UTF-8 text")]
    NotText(String),
    #[error("cannot read `{path}`: {message}")]
    Io { path: String, message: String },
}

/// Folders of the operating system that hold no agent's work, with everything below them. An
/// agent's workspace there would let the library read (and its mirror write beside) the host's
/// own files, so such a workspace is refused whatever the permissions allow.
const SYSTEM_TREES: &[&str] = &[
    "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/run",
    "/sbin", "/sys", "/usr",
];

/// Shared top-level folders: fine to hold a workspace below, never to be one, since every
/// user's files are inside.
const SHARED_ROOTS: &[&str] = &[
    "/", "/home", "/media", "/mnt", "/opt", "/root", "/srv", "/tmp", "/var",
];

/// Why `workspace` (an absolute path, already resolved: symlinks followed, no `..`) may not be
/// an agent's workspace, or `None` when it may.
pub fn system_folder(workspace: &Path) -> Option<String> {
    if let Some(tree) = SYSTEM_TREES.iter().find(|tree| workspace.starts_with(tree)) {
        return Some(format!(
            "{} is a system folder ({tree} belongs to the operating system); give a folder of the agent's own",
            workspace.display()
        ));
    }
    if SHARED_ROOTS.iter().any(|root| workspace == Path::new(root)) {
        return Some(format!(
            "{} is a shared top-level folder holding everyone's files; give a folder of the agent's own inside it",
            workspace.display()
        ));
    }
    None
}

/// A workspace-relative path made of plain names only (no `..`, no root), or `None`.
pub(crate) fn clean_relative(path: &str) -> Option<PathBuf> {
    let mut clean = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => clean.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !clean.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if clean.as_os_str().is_empty() {
        None
    } else {
        Some(clean)
    }
}

/// Turns a path as an agent wrote it (relative to the workspace, or absolute under the sandbox
/// root or the workspace's real location) into a clean workspace-relative path.
pub fn workspace_relative(path: &str, workspace: &Path) -> Option<String> {
    let as_path = Path::new(path);
    let relative = if as_path.is_absolute() {
        let stripped = as_path
            .strip_prefix(SANDBOX_ROOT)
            .ok()
            .or_else(|| as_path.strip_prefix(workspace).ok())?;
        stripped.to_str()?.to_string()
    } else {
        path.to_string()
    };
    let clean = clean_relative(&relative)?;
    Some(clean.to_str()?.replace('\\', "/"))
}

/// What identifies a file's content without reading it: when none of these changed, neither
/// did the file (for the purposes of a cache; a changed file always changes its mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
    pub inode: u64,
}

/// Checks that a workspace-relative path is a plain file inside the workspace (no symlink on
/// the way, not too large) and returns its stamp. `Ok(None)` when it does not exist.
#[cfg(test)]
pub(crate) fn stat_contained(
    workspace: &Path,
    relative: &str,
) -> Result<Option<FileStamp>, ReadError> {
    stat_contained_limited(workspace, relative, MAX_SCRIPT_BYTES)
}

/// [`stat_contained`] with another size limit (a lab log may be larger than a script).
pub fn stat_contained_limited(
    workspace: &Path,
    relative: &str,
    limit: u64,
) -> Result<Option<FileStamp>, ReadError> {
    stat_contained_knowing(workspace, relative, limit, None)
}

/// [`stat_contained_limited`], taking the folders in `real_folders` (paths inside the
/// workspace) to be real folders, no symlinks, without asking the disk again, and adding the
/// ones this walk finds to be. Only for a caller that takes the workspace as of one moment
/// ([`OneMoment`]), as it takes its files' stamps.
fn stat_contained_knowing(
    workspace: &Path,
    relative: &str,
    limit: u64,
    mut real_folders: Option<&mut std::collections::HashSet<PathBuf>>,
) -> Result<Option<FileStamp>, ReadError> {
    let Some(clean) = clean_relative(relative) else {
        return Err(ReadError::Outside(relative.to_string()));
    };
    let mut current = workspace.to_path_buf();
    let components: Vec<_> = clean.components().collect();
    for (index, component) in components.iter().enumerate() {
        current.push(component);
        let is_folder = index + 1 < components.len();
        if is_folder
            && real_folders
                .as_deref()
                .is_some_and(|known| known.contains(&current))
        {
            continue;
        }
        let metadata = match std::fs::symlink_metadata(&current) {
            Ok(metadata) => metadata,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(ReadError::Io {
                    path: relative.to_string(),
                    message: err.to_string(),
                });
            }
        };
        if metadata.file_type().is_symlink() {
            return Err(ReadError::Symlink(relative.to_string()));
        }
        if is_folder {
            if !metadata.is_dir() {
                return Ok(None);
            }
            if let Some(known) = real_folders.as_deref_mut() {
                known.insert(current.clone());
            }
            continue;
        }
        if !metadata.is_file() {
            return Err(ReadError::NotAFile(relative.to_string()));
        }
        if metadata.len() > limit {
            return Err(ReadError::TooLarge {
                path: relative.to_string(),
                size: metadata.len(),
                limit,
            });
        }
        use std::os::unix::fs::MetadataExt as _;
        return Ok(Some(FileStamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            inode: metadata.ino(),
        }));
    }
    Ok(None)
}

/// Reads a workspace-relative file. `Ok(None)` when it does not exist (a script that vanished
/// between the call and the record).
#[cfg(test)]
pub(crate) fn read_contained(
    workspace: &Path,
    relative: &str,
) -> Result<Option<String>, ReadError> {
    read_contained_limited(workspace, relative, MAX_SCRIPT_BYTES)
}

/// [`read_contained`] with another size limit.
pub fn read_contained_limited(
    workspace: &Path,
    relative: &str,
    limit: u64,
) -> Result<Option<String>, ReadError> {
    match read_contained_bytes_limited(workspace, relative, limit)? {
        None => Ok(None),
        Some(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ReadError::NotText(relative.to_string())),
    }
}

/// [`read_contained_limited`] without the UTF-8 check: the bytes as they are, for a file whose
/// every byte must be seen whatever its encoding (a bot's `bot.env`, read for the secrets to
/// scrub). The same containment and size limit; `Ok(None)` when it does not exist.
pub(crate) fn read_contained_bytes_limited(
    workspace: &Path,
    relative: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, ReadError> {
    if stat_contained_limited(workspace, relative, limit)?.is_none() {
        return Ok(None);
    }
    let path = workspace.join(clean_relative(relative).unwrap_or_default());
    let io_error = |err: std::io::Error| ReadError::Io {
        path: relative.to_string(),
        message: err.to_string(),
    };
    // O_NOFOLLOW: the last component may have been swapped for a symlink since it was checked.
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ReadError::Symlink(relative.to_string()));
        }
        Err(err) => return Err(io_error(err)),
    };
    let mut bytes = Vec::new();
    // Read at most one byte past the limit: the file may have grown since it was measured.
    file.by_ref()
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: relative.to_string(),
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(Some(bytes))
}

/// The names of the entries of a workspace-relative directory, when it is a real directory
/// reached without a symlink. `Ok(None)` when it does not exist.
pub fn list_contained(workspace: &Path, relative: &str) -> Result<Option<Vec<String>>, ReadError> {
    let Some(clean) = clean_relative(relative) else {
        return Err(ReadError::Outside(relative.to_string()));
    };
    let mut current = workspace.to_path_buf();
    for component in clean.components() {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(ReadError::Symlink(relative.to_string()));
            }
            Ok(metadata) if !metadata.is_dir() => {
                return Err(ReadError::NotAFile(relative.to_string()));
            }
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => {
                return Err(ReadError::Io {
                    path: relative.to_string(),
                    message: err.to_string(),
                });
            }
        }
    }
    let io_error = |err: std::io::Error| ReadError::Io {
        path: relative.to_string(),
        message: err.to_string(),
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&current).map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        // A name that is not UTF-8 cannot be a skill's; it is passed over here and reported by
        // `names_not_utf8`.
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(Some(names))
}

/// The entries of a workspace-relative directory whose names are not UTF-8, each shown with
/// its bytes that are not replaced by `\u{FFFD}`, sorted: [`list_contained`] passes them over
/// (no skill, event or page can name them), and the turn report and `doctor` say so. Empty when
/// the directory cannot be listed (the listing's own error says why).
pub fn names_not_utf8(workspace: &Path, relative: &str) -> Vec<String> {
    let Some(clean) = clean_relative(relative) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(workspace.join(clean)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name.to_str().is_none())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// An agent's files, wherever they are: on this machine ([`LocalFiles`]) or as a snapshot a
/// runner sent from beside the agent's sandbox ([`SnapshotFiles`]). The engine reads an agent's
/// files only through this, so recording and turn boundaries work the same in both places.
pub trait AgentFiles {
    /// Whether the workspace exists at all.
    fn exists(&self) -> bool;
    /// A file's stamp, `Ok(None)` when it does not exist (see [`stat_contained_limited`]).
    fn stat(&self, relative: &str, limit: u64) -> Result<Option<FileStamp>, ReadError>;
    /// A file's text, `Ok(None)` when it does not exist (see [`read_contained_limited`]).
    fn read(&self, relative: &str, limit: u64) -> Result<Option<String>, ReadError>;
    /// The names in a directory, `Ok(None)` when it does not exist (see [`list_contained`]).
    fn list(&self, relative: &str) -> Result<Option<Vec<String>>, ReadError>;
    /// The names in a directory that are not UTF-8 (see [`names_not_utf8`]); a snapshot a
    /// runner sent holds none.
    fn names_not_utf8(&self, _relative: &str) -> Vec<String> {
        Vec::new()
    }
    /// A file's bytes whatever their encoding, `Ok(None)` when it does not exist (see
    /// [`read_contained_bytes_limited`]). A snapshot holds text only, so its bytes are its text's.
    fn read_bytes(&self, relative: &str, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        Ok(self.read(relative, limit)?.map(String::into_bytes))
    }
    /// A stamp that changes when the file may have changed: only a cache's check of whether to
    /// read again (the read itself goes through [`AgentFiles::read`]), so it may be cheaper
    /// than [`AgentFiles::stat`]. `None` when there is nothing to stamp.
    fn change_stamp(&self, relative: &str) -> Option<FileStamp> {
        self.stat(relative, MAX_SCRIPT_BYTES).ok().flatten()
    }
    /// [`AgentFiles::stat`] for a caller that takes the files as of one moment ([`OneMoment`]):
    /// folders in `real_folders` need not be checked again, and those found real are added
    /// (a workspace on disk then walks `bots/` and `bots/<bot>/` once a moment, not once a
    /// file: two of the three `statx` calls per script of a write group).
    fn stat_in_moment(
        &self,
        relative: &str,
        limit: u64,
        _real_folders: &mut std::collections::HashSet<PathBuf>,
    ) -> Result<Option<FileStamp>, ReadError> {
        self.stat(relative, limit)
    }
}

/// A workspace's files as they are at one moment: each file is stat'ed once, however many
/// of the moment's events run it. A write group records its events in one transaction, as of
/// one moment, so asking the disk again for each of them only costs `statx` calls (an eighth
/// of a batch's time in `bench record`); reads and listings still go to `files`.
pub(crate) struct OneMoment<'a> {
    files: &'a dyn AgentFiles,
    /// Each `stat` asked, by path, with its limit (looked up by the path lent, without making
    /// a key for every look).
    stats: std::cell::RefCell<std::collections::HashMap<String, Vec<(u64, StatAnswer)>>>,
    stamps: std::cell::RefCell<std::collections::HashMap<String, Option<FileStamp>>>,
    /// The folders seen to be real folders (no symlinks) this moment.
    folders: std::cell::RefCell<std::collections::HashSet<PathBuf>>,
}

type StatAnswer = Result<Option<FileStamp>, ReadError>;

impl<'a> OneMoment<'a> {
    pub(crate) fn new(files: &'a dyn AgentFiles) -> OneMoment<'a> {
        OneMoment {
            files,
            stats: Default::default(),
            stamps: Default::default(),
            folders: Default::default(),
        }
    }
}

impl AgentFiles for OneMoment<'_> {
    fn exists(&self) -> bool {
        self.files.exists()
    }

    fn stat(&self, relative: &str, limit: u64) -> Result<Option<FileStamp>, ReadError> {
        if let Some((_, known)) = self
            .stats
            .borrow()
            .get(relative)
            .and_then(|asked| asked.iter().find(|(asked_limit, _)| *asked_limit == limit))
        {
            return known.clone();
        }
        let stat = self
            .files
            .stat_in_moment(relative, limit, &mut self.folders.borrow_mut());
        self.stats
            .borrow_mut()
            .entry(relative.to_string())
            .or_default()
            .push((limit, stat.clone()));
        stat
    }

    fn read(&self, relative: &str, limit: u64) -> Result<Option<String>, ReadError> {
        self.files.read(relative, limit)
    }

    fn read_bytes(&self, relative: &str, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        self.files.read_bytes(relative, limit)
    }

    fn list(&self, relative: &str) -> Result<Option<Vec<String>>, ReadError> {
        self.files.list(relative)
    }

    fn names_not_utf8(&self, relative: &str) -> Vec<String> {
        self.files.names_not_utf8(relative)
    }

    fn change_stamp(&self, relative: &str) -> Option<FileStamp> {
        if let Some(known) = self.stamps.borrow().get(relative) {
            return *known;
        }
        let stamp = self.files.change_stamp(relative);
        self.stamps.borrow_mut().insert(relative.to_string(), stamp);
        stamp
    }
}

/// The files of a workspace on this machine, read with every containment check.
#[derive(Debug, Clone, Copy)]
pub struct LocalFiles<'a>(pub &'a Path);

impl AgentFiles for LocalFiles<'_> {
    fn exists(&self) -> bool {
        self.0.is_dir()
    }

    fn stat(&self, relative: &str, limit: u64) -> Result<Option<FileStamp>, ReadError> {
        stat_contained_limited(self.0, relative, limit)
    }

    fn stat_in_moment(
        &self,
        relative: &str,
        limit: u64,
        real_folders: &mut std::collections::HashSet<PathBuf>,
    ) -> Result<Option<FileStamp>, ReadError> {
        stat_contained_knowing(self.0, relative, limit, Some(real_folders))
    }

    fn read(&self, relative: &str, limit: u64) -> Result<Option<String>, ReadError> {
        read_contained_limited(self.0, relative, limit)
    }

    fn read_bytes(&self, relative: &str, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        read_contained_bytes_limited(self.0, relative, limit)
    }

    fn list(&self, relative: &str) -> Result<Option<Vec<String>>, ReadError> {
        list_contained(self.0, relative)
    }

    fn names_not_utf8(&self, relative: &str) -> Vec<String> {
        names_not_utf8(self.0, relative)
    }

    /// One `stat` of the path instead of a contained walk: this runs on every recorded use (the
    /// bot.env check of the scrubber cache), and following a symlink here only decides whether
    /// to read again, through the contained read.
    fn change_stamp(&self, relative: &str) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt as _;
        let metadata = std::fs::metadata(self.0.join(clean_relative(relative)?)).ok()?;
        Some(FileStamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            inode: metadata.ino(),
        })
    }
}

/// Files a runner read beside the agent's sandbox and sent along: each path maps to its text,
/// or to the reason the runner could not read it (a symlink, too large, not text). A path the
/// snapshot does not hold does not exist. A directory lists the files directly in it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotFiles {
    files: std::collections::BTreeMap<String, Result<SnapshotFile, ReadError>>,
}

/// A file of a snapshot: its text, and the stamp that stands for it ([`AgentFiles::stat`]),
/// made once when the file is added (on a request's own thread, in the server) rather than at
/// every look at it (on the library's writer: a digest of the text each time).
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapshotFile {
    text: String,
    stamp: FileStamp,
}

impl SnapshotFile {
    fn new(text: String) -> SnapshotFile {
        let stamp = content_stamp(&text);
        SnapshotFile { text, stamp }
    }
}

/// The stamp of a file known only by its text (a snapshot's, a call's code at its start): it
/// has no mtime or inode, so the content's digest stands in for both, and an unchanged file is
/// still recognised without being matched again.
fn content_stamp(text: &str) -> FileStamp {
    let digest = mindrune_core::sha256(text.as_bytes());
    let hex = digest.trim_start_matches("sha256:");
    FileStamp {
        len: text.len() as u64,
        modified: None,
        inode: u64::from_str_radix(hex.get(..16).unwrap_or("0"), 16).unwrap_or(0),
    }
}

/// An agent's files with the code its scripts had when a call started standing in for those
/// scripts (an event's `code_at_start`): the run is matched to the version that ran, whatever
/// the file holds by the time the event is recorded. Every other path is `files`'.
pub(crate) struct CodeAtStart<'a> {
    code: Vec<(&'a str, &'a str, FileStamp)>,
    files: &'a dyn AgentFiles,
}

impl<'a> CodeAtStart<'a> {
    pub(crate) fn new(
        code: &'a std::collections::BTreeMap<String, String>,
        files: &'a dyn AgentFiles,
    ) -> CodeAtStart<'a> {
        let code = code
            .iter()
            .map(|(path, text)| (path.as_str(), text.as_str(), content_stamp(text)))
            .collect();
        CodeAtStart { code, files }
    }

    fn captured(&self, relative: &str) -> Option<(&'a str, FileStamp)> {
        self.code
            .iter()
            .find(|(path, _, _)| *path == relative)
            .map(|(_, text, stamp)| (*text, *stamp))
    }
}

impl AgentFiles for CodeAtStart<'_> {
    fn exists(&self) -> bool {
        self.files.exists()
    }

    fn stat(&self, relative: &str, limit: u64) -> Result<Option<FileStamp>, ReadError> {
        match self.captured(relative) {
            Some((_, stamp)) if stamp.len > limit => Err(ReadError::TooLarge {
                path: relative.to_string(),
                size: stamp.len,
                limit,
            }),
            Some((_, stamp)) => Ok(Some(stamp)),
            None => self.files.stat(relative, limit),
        }
    }

    fn stat_in_moment(
        &self,
        relative: &str,
        limit: u64,
        real_folders: &mut std::collections::HashSet<PathBuf>,
    ) -> Result<Option<FileStamp>, ReadError> {
        match self.captured(relative) {
            Some(_) => self.stat(relative, limit),
            None => self.files.stat_in_moment(relative, limit, real_folders),
        }
    }

    fn read(&self, relative: &str, limit: u64) -> Result<Option<String>, ReadError> {
        match self.captured(relative) {
            Some(_) => {
                self.stat(relative, limit)?;
                Ok(self.captured(relative).map(|(text, _)| text.to_string()))
            }
            None => self.files.read(relative, limit),
        }
    }

    fn list(&self, relative: &str) -> Result<Option<Vec<String>>, ReadError> {
        self.files.list(relative)
    }

    fn read_bytes(&self, relative: &str, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        match self.captured(relative) {
            Some(_) => Ok(self.read(relative, limit)?.map(String::into_bytes)),
            None => self.files.read_bytes(relative, limit),
        }
    }

    fn names_not_utf8(&self, relative: &str) -> Vec<String> {
        self.files.names_not_utf8(relative)
    }

    fn change_stamp(&self, relative: &str) -> Option<FileStamp> {
        match self.captured(relative) {
            Some((_, stamp)) => Some(stamp),
            None => self.files.change_stamp(relative),
        }
    }
}

impl SnapshotFiles {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file the runner read; a path that is not clean and relative is refused.
    pub fn insert(
        &mut self,
        relative: &str,
        content: Result<String, ReadError>,
    ) -> Result<(), ReadError> {
        let Some(clean) = clean_relative(relative).and_then(|p| p.to_str().map(str::to_string))
        else {
            return Err(ReadError::Outside(relative.to_string()));
        };
        self.files.insert(clean, content.map(SnapshotFile::new));
        Ok(())
    }

    fn get(&self, relative: &str) -> Result<Option<&SnapshotFile>, ReadError> {
        // Paths are kept clean: one already clean (as the recorder asks for them) is looked up
        // as it is, without a cleaned copy.
        let found = match self.files.get(relative) {
            Some(found) => Some(found),
            None => {
                let Some(clean) = clean_relative(relative) else {
                    return Err(ReadError::Outside(relative.to_string()));
                };
                clean.to_str().and_then(|key| self.files.get(key))
            }
        };
        match found {
            None => Ok(None),
            Some(Ok(file)) => Ok(Some(file)),
            Some(Err(err)) => Err(err.clone()),
        }
    }

    /// The file when its text is within `limit`, `Ok(None)` when the snapshot lacks it.
    fn limited(&self, relative: &str, limit: u64) -> Result<Option<&SnapshotFile>, ReadError> {
        let Some(file) = self.get(relative)? else {
            return Ok(None);
        };
        if file.stamp.len > limit {
            return Err(ReadError::TooLarge {
                path: relative.to_string(),
                size: file.stamp.len,
                limit,
            });
        }
        Ok(Some(file))
    }
}

impl AgentFiles for SnapshotFiles {
    fn exists(&self) -> bool {
        true
    }

    fn stat(&self, relative: &str, limit: u64) -> Result<Option<FileStamp>, ReadError> {
        Ok(self.limited(relative, limit)?.map(|file| file.stamp))
    }

    fn read(&self, relative: &str, limit: u64) -> Result<Option<String>, ReadError> {
        Ok(self.limited(relative, limit)?.map(|file| file.text.clone()))
    }

    fn list(&self, relative: &str) -> Result<Option<Vec<String>>, ReadError> {
        let Some(clean) = clean_relative(relative).and_then(|p| p.to_str().map(str::to_string))
        else {
            return Err(ReadError::Outside(relative.to_string()));
        };
        let prefix = format!("{clean}/");
        Ok(Some(
            self.files
                .keys()
                .filter_map(|key| key.strip_prefix(&prefix))
                .filter(|name| !name.contains('/'))
                .map(str::to_string)
                .collect(),
        ))
    }
}

/// `bots/<bot>/<name>.ts` → `(bot, name)`: the only place an agent's skills live.
pub fn script_of_bot(relative: &str) -> Option<(&str, &str)> {
    let mut parts = relative.split('/');
    let (Some("bots"), Some(bot), Some(file), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let name = file.strip_suffix(".ts")?;
    if bot.is_empty() || name.is_empty() {
        return None;
    }
    Some((bot, name))
}

#[cfg(test)]
mod tests {
    #[test]
    fn system_folders_and_shared_roots_are_not_workspaces() {
        use super::system_folder;
        for refused in [
            "/etc",
            "/etc/ssh",
            "/usr/local/share",
            "/",
            "/home",
            "/tmp",
            "/proc/self",
        ] {
            assert!(system_folder(Path::new(refused)).is_some(), "{refused}");
        }
        for kept in [
            "/home/ada/bots",
            "/tmp/x",
            "/work/avatars",
            "/srv/agents/buzz",
            "/etcetera",
        ] {
            assert_eq!(system_folder(Path::new(kept)), None, "{kept}");
        }
    }

    use super::*;

    #[test]
    fn absolute_sandbox_paths_become_workspace_relative() {
        let ws = Path::new("/home/me/buzz");
        assert_eq!(
            workspace_relative("/work/bots/buzz/x.ts", ws).as_deref(),
            Some("bots/buzz/x.ts")
        );
        assert_eq!(
            workspace_relative("/home/me/buzz/bots/buzz/x.ts", ws).as_deref(),
            Some("bots/buzz/x.ts")
        );
        assert_eq!(
            workspace_relative("./bots/buzz/../buzz/x.ts", ws).as_deref(),
            Some("bots/buzz/x.ts")
        );
    }

    #[test]
    fn paths_that_climb_out_are_refused() {
        let ws = Path::new("/home/me/buzz");
        assert_eq!(workspace_relative("../other/bots/x.ts", ws), None);
        assert_eq!(workspace_relative("/etc/passwd", ws), None);
        assert_eq!(workspace_relative("bots/../../x.ts", ws), None);
    }

    #[test]
    fn only_scripts_directly_in_a_bot_folder_are_skills() {
        assert_eq!(script_of_bot("bots/buzz/chop.ts"), Some(("buzz", "chop")));
        assert_eq!(script_of_bot("bots/buzz/lib/chop.ts"), None);
        assert_eq!(script_of_bot("sdk/cli.ts"), None);
        assert_eq!(script_of_bot("bots/buzz/chop.js"), None);
    }

    #[test]
    fn a_symlink_in_the_path_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.ts"), "a();").unwrap();
        std::fs::create_dir_all(dir.path().join("bots")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("bots/buzz")).unwrap();
        assert_eq!(
            read_contained(dir.path(), "bots/buzz/x.ts"),
            Err(ReadError::Symlink("bots/buzz/x.ts".into()))
        );
    }

    #[test]
    fn a_moment_walks_each_folder_once_and_still_refuses_a_symlinked_one() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.ts"), "a();").unwrap();
        std::fs::create_dir_all(dir.path().join("bots/buzz")).unwrap();
        std::fs::write(dir.path().join("bots/buzz/a.ts"), "a();").unwrap();
        std::fs::write(dir.path().join("bots/buzz/b.ts"), "b();").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("bots/fizz")).unwrap();
        let files = LocalFiles(dir.path());
        let moment = OneMoment::new(&files);
        for name in ["a", "b"] {
            let path = format!("bots/buzz/{name}.ts");
            assert_eq!(
                moment.stat(&path, MAX_SCRIPT_BYTES),
                stat_contained(dir.path(), &path),
                "{path}"
            );
            assert!(moment.stat(&path, MAX_SCRIPT_BYTES).unwrap().is_some());
        }
        // The walk found `bots/` and `bots/buzz/` real: those are what it remembers.
        let known: std::collections::HashSet<PathBuf> =
            [dir.path().join("bots"), dir.path().join("bots/buzz")].into();
        assert_eq!(*moment.folders.borrow(), known);
        // A folder it knows is no pass for one it does not.
        assert_eq!(
            moment.stat("bots/fizz/x.ts", MAX_SCRIPT_BYTES),
            Err(ReadError::Symlink("bots/fizz/x.ts".into()))
        );
        assert_eq!(*moment.folders.borrow(), known);
    }

    #[test]
    fn a_snapshot_s_stamp_stands_for_its_text_and_its_files_are_found_by_any_spelling_of_the_path()
    {
        let mut a = SnapshotFiles::new();
        a.insert("bots/buzz/chop.ts", Ok("chop();".into())).unwrap();
        a.insert("./bots/buzz/../buzz/mine.ts", Ok("mine();".into()))
            .unwrap();
        a.insert(
            "bots/buzz/link.ts",
            Err(ReadError::Symlink("bots/buzz/link.ts".into())),
        )
        .unwrap();
        let mut b = SnapshotFiles::new();
        b.insert("bots/buzz/chop.ts", Ok("chop(); // again".into()))
            .unwrap();
        let stamp = |files: &SnapshotFiles, path| files.stat(path, MAX_SCRIPT_BYTES).unwrap();
        let chop = stamp(&a, "bots/buzz/chop.ts").unwrap();
        assert_eq!(chop.len, 7);
        assert_eq!(stamp(&a, "bots/buzz/./chop.ts"), Some(chop));
        assert_ne!(stamp(&b, "bots/buzz/chop.ts"), Some(chop), "another text");
        assert_eq!(
            a.read("bots/buzz/mine.ts", MAX_SCRIPT_BYTES)
                .unwrap()
                .as_deref(),
            Some("mine();")
        );
        assert_eq!(a.read("bots/buzz/none.ts", MAX_SCRIPT_BYTES), Ok(None));
        assert!(matches!(
            a.read("bots/buzz/chop.ts", 3),
            Err(ReadError::TooLarge {
                size: 7,
                limit: 3,
                ..
            })
        ));
        assert!(matches!(
            a.stat("bots/buzz/link.ts", MAX_SCRIPT_BYTES),
            Err(ReadError::Symlink(_))
        ));
        assert!(matches!(
            a.stat("../outside.ts", MAX_SCRIPT_BYTES),
            Err(ReadError::Outside(_))
        ));
    }

    #[test]
    fn a_missing_file_reads_as_none_and_binary_as_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_contained(dir.path(), "bots/a/x.ts"), Ok(None));
        std::fs::create_dir_all(dir.path().join("bots/a")).unwrap();
        std::fs::write(dir.path().join("bots/a/x.ts"), [0xff, 0xfe, 0x00]).unwrap();
        assert!(matches!(
            read_contained(dir.path(), "bots/a/x.ts"),
            Err(ReadError::NotText(_))
        ));
    }

    #[test]
    fn a_huge_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bots/a")).unwrap();
        std::fs::write(
            dir.path().join("bots/a/x.ts"),
            vec![b'a'; (MAX_SCRIPT_BYTES + 10) as usize],
        )
        .unwrap();
        assert!(matches!(
            read_contained(dir.path(), "bots/a/x.ts"),
            Err(ReadError::TooLarge { .. })
        ));
    }

    #[test]
    fn bytes_are_read_whatever_their_encoding_with_the_same_containment_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let files = LocalFiles(dir.path());
        assert_eq!(files.read_bytes("bots/a/bot.env", 64), Ok(None));
        std::fs::create_dir_all(dir.path().join("bots/a")).unwrap();
        std::fs::write(dir.path().join("bots/a/bot.env"), b"PASSWORD=h\xe9llo\n").unwrap();
        assert_eq!(
            files.read_bytes("bots/a/bot.env", 64),
            Ok(Some(b"PASSWORD=h\xe9llo\n".to_vec()))
        );
        assert!(matches!(
            files.read_bytes("bots/a/bot.env", 4),
            Err(ReadError::TooLarge { .. })
        ));
        std::fs::create_dir_all(dir.path().join("bots/b/bot.env")).unwrap();
        assert!(matches!(
            files.read_bytes("bots/b/bot.env", 64),
            Err(ReadError::NotAFile(_))
        ));
        std::os::unix::fs::symlink(
            dir.path().join("bots/a/bot.env"),
            dir.path().join("bots/c-env"),
        )
        .unwrap();
        assert!(matches!(
            files.read_bytes("bots/c-env", 64),
            Err(ReadError::Symlink(_))
        ));
        assert!(matches!(
            files.read_bytes("../bot.env", 64),
            Err(ReadError::Outside(_))
        ));
    }
}
