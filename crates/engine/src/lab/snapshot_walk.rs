//! Reads a Runx package folder from disk the way Runx's `package_snapshot` does: depth first,
//! each folder's entries in name-byte order, `.git`, `.runx`, `node_modules` and `target`
//! skipped, symlinks and special files refused, and the 500-file / 20 MiB limits enforced while
//! reading, so a huge folder is refused before it is read into memory.

use std::fs;
use std::io;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use mindrune_core::{
    SNAPSHOT_IGNORED, SNAPSHOT_MAX_BYTES, SNAPSHOT_MAX_FILES, SnapshotFile, absent_digest,
    snapshot_digest,
};

/// A package folder as read from disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSnapshot {
    /// Whether the folder exists; a missing target has no files and the `absent` digest.
    pub exists: bool,
    /// The files in Runx's walk order.
    pub files: Vec<SnapshotFile>,
    /// `sha256:<hex>` over the walk (or `sha256("absent")`).
    pub digest: String,
}

impl PackageSnapshot {
    /// The file at `path` (relative, `/`-separated), if the package has one.
    pub fn file(&self, path: &str) -> Option<&SnapshotFile> {
        self.files.iter().find(|file| file.path == path)
    }

    /// The number of bytes in all files together.
    pub fn total_bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|file| file.contents.len() as u64)
            .sum()
    }
}

/// Why a package folder could not be snapshotted. The messages follow Runx's wording where
/// Runx has one, and always name the path.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("skill package target cannot be a symlink: {}", .0.display())]
    TargetIsSymlink(PathBuf),
    #[error("skill package target is not a directory: {}", .0.display())]
    TargetNotDirectory(PathBuf),
    #[error(
        "skill package validation failed: {path}: symbolic links are not valid skill package sources\n  replace {path} with the file it points to"
    )]
    Symlink { path: String },
    #[error("skill package contains unsupported file type: {path} (remove it)")]
    SpecialFile { path: String },
    #[error("skill package entry {path:?} has a name that is not UTF-8; rename it")]
    NonUtf8Name { path: String },
    #[error(
        "skill package exceeds validation limit ({SNAPSHOT_MAX_FILES} files, {SNAPSHOT_MAX_BYTES} bytes): more than {SNAPSHOT_MAX_FILES} files"
    )]
    TooManyFiles,
    #[error(
        "skill package exceeds validation limit ({SNAPSHOT_MAX_FILES} files, {SNAPSHOT_MAX_BYTES} bytes): more than {SNAPSHOT_MAX_BYTES} bytes"
    )]
    TooLarge,
    #[error("cannot read {}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// Reads the package at `dir`. A missing folder is not an error: it snapshots as absent, which
/// is how a build plans a package that does not exist yet.
pub fn snapshot_package(dir: &Path) -> Result<PackageSnapshot, SnapshotError> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Ok(PackageSnapshot {
                exists: false,
                files: Vec::new(),
                digest: absent_digest(),
            });
        }
        Err(source) => {
            return Err(SnapshotError::Io {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(SnapshotError::TargetIsSymlink(dir.to_path_buf()));
    }
    if !meta.is_dir() {
        return Err(SnapshotError::TargetNotDirectory(dir.to_path_buf()));
    }
    let mut walk = Walk {
        files: Vec::new(),
        bytes: 0,
    };
    walk.folder(dir, "")?;
    let digest = snapshot_digest(&walk.files);
    Ok(PackageSnapshot {
        exists: true,
        files: walk.files,
        digest,
    })
}

struct Walk {
    files: Vec<SnapshotFile>,
    bytes: u64,
}

impl Walk {
    fn folder(&mut self, dir: &Path, prefix: &str) -> Result<(), SnapshotError> {
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SnapshotError::Io { path, source }
        };
        let mut entries = Vec::new();
        for entry in fs::read_dir(dir).map_err(io_err(dir))? {
            let entry = entry.map_err(io_err(dir))?;
            let name = entry.file_name();
            let Some(name) = name.to_str().map(str::to_owned) else {
                return Err(SnapshotError::NonUtf8Name {
                    path: format!("{prefix}{}", name.to_string_lossy()),
                });
            };
            if SNAPSHOT_IGNORED.contains(&name.as_str()) {
                continue;
            }
            entries.push(name);
        }
        // Runx sorts each folder's entries by name bytes and recurses in that order.
        entries.sort_unstable();
        for name in entries {
            let path = dir.join(&name);
            let relative = format!("{prefix}{name}");
            let meta = fs::symlink_metadata(&path).map_err(io_err(&path))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(SnapshotError::Symlink { path: relative });
            }
            if kind.is_dir() {
                self.folder(&path, &format!("{relative}/"))?;
                continue;
            }
            if !kind.is_file() {
                return Err(SnapshotError::SpecialFile { path: relative });
            }
            if self.files.len() >= SNAPSHOT_MAX_FILES {
                return Err(SnapshotError::TooManyFiles);
            }
            self.bytes = self.bytes.saturating_add(meta.size());
            if self.bytes > SNAPSHOT_MAX_BYTES {
                return Err(SnapshotError::TooLarge);
            }
            let contents = fs::read(&path).map_err(io_err(&path))?;
            self.files.push(SnapshotFile {
                path: relative,
                mode: meta.permissions().mode(),
                contents,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, path: &str, contents: &str) {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    #[test]
    fn a_missing_folder_snapshots_as_absent() {
        let dir = tempfile::tempdir().unwrap();
        let snap = snapshot_package(&dir.path().join("nope")).unwrap();
        assert!(!snap.exists);
        assert_eq!(snap.digest, absent_digest());
    }

    #[test]
    fn the_walk_is_depth_first_per_folder_and_skips_ignored_entries() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "a/z.md", "z");
        write(dir.path(), "a.md", "a");
        write(dir.path(), "b", "b");
        write(dir.path(), ".git/HEAD", "x");
        write(dir.path(), "node_modules/m.js", "x");
        write(dir.path(), "sub/target", "ignored too: a file named target");
        let snap = snapshot_package(dir.path()).unwrap();
        let paths: Vec<_> = snap.files.iter().map(|f| f.path.as_str()).collect();
        // "a" < "a.md" by bytes, so the folder a/ is walked before the file a.md.
        assert_eq!(paths, ["a/z.md", "a.md", "b"]);
        assert_eq!(snap.files[0].mode & 0o170000, 0o100000);
        assert_eq!(snap.digest, snapshot_digest(&snap.files));
    }

    #[test]
    fn a_symlink_inside_the_package_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "SKILL.md", "x");
        std::os::unix::fs::symlink("SKILL.md", dir.path().join("link.md")).unwrap();
        let err = snapshot_package(dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "skill package validation failed: link.md: symbolic links are not valid skill package sources\n  replace link.md with the file it points to"
        );
    }

    #[test]
    fn a_package_with_501_files_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for index in 0..=SNAPSHOT_MAX_FILES {
            write(dir.path(), &format!("fixtures/f{index:03}.yaml"), "x");
        }
        let err = snapshot_package(dir.path()).unwrap_err();
        assert!(matches!(err, SnapshotError::TooManyFiles), "{err}");
    }

    #[test]
    fn a_chmod_changes_the_digest() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "run.sh", "echo");
        let before = snapshot_package(dir.path()).unwrap().digest;
        fs::set_permissions(dir.path().join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_ne!(before, snapshot_package(dir.path()).unwrap().digest);
    }
}
