//! Writing a file so that a crash leaves the old bytes or the new ones, never a mix.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write as _};
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

/// Writes `bytes` to `path` atomically with the given permission bits (`0o644`): a temp file
/// beside it (created exclusively and never through a symlink), written in full, fsynced,
/// renamed over the name, and the folder fsynced. The folder must exist.
///
/// The mode is set explicitly rather than left to the umask because a Runx package digest
/// includes every file's mode: the same bytes must land with the same mode wherever they are
/// written, or a verified apply could not compare a staged candidate with the committed files.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    write_atomic_with(
        path,
        bytes,
        Replace {
            mode: Some(mode),
            sync_folder: true,
        },
    )
}

/// How [`write_atomic_with`] leaves a replaced file and its folder.
#[derive(Debug, Clone, Copy)]
pub struct Replace {
    /// The file's exact permission bits; `None` leaves them to the umask (`0o666` masked).
    pub mode: Option<u32>,
    /// Fsync the folder after the rename, so the rename survives a crash. A writer that
    /// renames many files into one folder passes `false` and syncs the folder once at the end.
    pub sync_folder: bool,
}

/// Writes `bytes` to `path` atomically: a temp file beside it, `.NAME.tmp-PID` (created
/// exclusively and never through a symlink; one left by a killed process of the same pid is
/// replaced), written in full, given its mode, fsynced and renamed over the name; the temp
/// file is removed when anything fails. The folder must exist. Crash recovery elsewhere
/// (`playbook::journal`, `lab::commit`, the mirror's sweep) finds leftovers by that name.
pub fn write_atomic_with(path: &Path, bytes: &[u8], how: Replace) -> std::io::Result<()> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let temp = folder.join(format!("{}{}", temp_prefix(path), std::process::id()));
    let create = || {
        let mut options = OpenOptions::new();
        options
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW);
        if let Some(mode) = how.mode {
            options.mode(mode & 0o7777);
        }
        options.open(&temp)
    };
    let mut file = match create() {
        Err(err) if err.kind() == ErrorKind::AlreadyExists => {
            fs::remove_file(&temp)?;
            create()?
        }
        other => other?,
    };
    let written = file
        .write_all(bytes)
        // The umask may have masked bits off at creation; set exactly what was asked.
        .and_then(|()| match how.mode {
            Some(mode) => file.set_permissions(fs::Permissions::from_mode(mode & 0o7777)),
            None => Ok(()),
        })
        .and_then(|()| file.sync_all());
    drop(file);
    if let Err(err) = written.and_then(|()| fs::rename(&temp, path)) {
        let _ = fs::remove_file(&temp);
        return Err(err);
    }
    if how.sync_folder {
        sync_dir(folder)?;
    }
    Ok(())
}

/// The name of a temp file of `path` up to its pid: `.NAME.tmp-`.
fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.tmp-")
}

/// Removes the temp files interrupted [`write_atomic_with`]s of `path` left beside it
/// (`.NAME.tmp-PID`, named by the processes that were killed). The caller must hold whatever
/// lock keeps a live write of the same file away (the lab target's lock, the playbook
/// workspace's). A temp that cannot be removed is named in the error.
pub(crate) fn remove_interrupted_temps(
    path: &Path,
) -> Result<(), (std::path::PathBuf, std::io::Error)> {
    let Some(folder) = path.parent() else {
        return Ok(());
    };
    let prefix = temp_prefix(path);
    let Ok(entries) = fs::read_dir(folder) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let is_temp = file
            .to_str()
            .and_then(|file| file.strip_prefix(&prefix))
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit()));
        if is_temp {
            let temp = entry.path();
            match fs::remove_file(&temp) {
                Ok(()) => {}
                Err(err) if err.kind() == ErrorKind::NotFound => {}
                Err(err) => return Err((temp, err)),
            }
        }
    }
    Ok(())
}

/// Fsyncs a folder so a rename or removal in it survives a crash.
pub fn sync_dir(folder: &Path) -> std::io::Result<()> {
    File::open(folder)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_lands_whole_with_the_asked_mode_and_no_temp_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new", 0o600).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7777,
            0o600
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn without_a_mode_the_file_keeps_what_the_umask_gives_and_lands_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.txt");
        let how = Replace {
            mode: None,
            sync_folder: false,
        };
        write_atomic_with(&path, b"first", how).unwrap();
        write_atomic_with(&path, b"second", how).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        // No execute bit and nothing more than 0o666 (the umask may take bits away).
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o7111,
            0
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_symlink_at_the_temp_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::write(&outside, "keep").unwrap();
        let temp = dir
            .path()
            .join(format!(".a.txt.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&outside, &temp).unwrap();
        write_atomic(&dir.path().join("a.txt"), b"x", 0o644).unwrap();
        assert_eq!(fs::read(&outside).unwrap(), b"keep");
    }
}
