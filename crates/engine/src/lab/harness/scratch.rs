//! The folders a harness replay makes in the system temp folder, and the sweep of those a
//! killed run left behind.
//!
//! A replay works outside the workspace: each case in a scratch copy of the package with an
//! empty home, each JavaScript module in a worker started in an empty folder, and a candidate's
//! cases sealed into a throwaway receipt store. Each is a `tempfile` folder removed when it is
//! dropped, which a `kill -9` skips. So each is named `mindrune-<kind>-<pid>-<random>` with the
//! pid of the process that made it, and a later lab step removes the ones whose process is gone
//! ([`sweep_stale_once`]), as `apply` sweeps the stages it leaves in `.runx/staging`.
//!
//! The sweep removes an entry only when its name is exactly that shape, it is a folder and not
//! a symlink (which is never followed), it belongs to this user, and no process has its pid: a
//! concurrent run's folders, and anything else in the temp folder, are left alone. A recycled
//! pid only delays a sweep. Processes in another pid namespace sharing the temp folder look
//! dead from here, as they do to `apply`'s sweep.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Once;

use tempfile::TempDir;

/// What a scratch folder is for; its name's `<kind>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScratchKind {
    /// A case's copy of the package and its empty home.
    Case,
    /// The JavaScript worker's empty working folder.
    Worker,
    /// A candidate replay's throwaway receipt store and one-time key.
    Receipts,
}

impl ScratchKind {
    const ALL: [Self; 3] = [Self::Case, Self::Worker, Self::Receipts];

    fn name(self) -> &'static str {
        match self {
            Self::Case => "harness",
            Self::Worker => "harness-worker",
            Self::Receipts => "harness-receipts",
        }
    }
}

/// The number of random characters closing a scratch folder's name.
const RANDOM_LEN: usize = 12;

/// A new scratch folder of `kind` in the system temp folder, removed on drop. The first one a
/// process makes sweeps the stale ones first.
pub(crate) fn scratch_dir(kind: ScratchKind) -> io::Result<TempDir> {
    sweep_stale_once();
    scratch_dir_in(&tempfile::env::temp_dir(), kind)
}

/// A new scratch folder of `kind` in `parent`, named for this process.
pub(crate) fn scratch_dir_in(parent: &Path, kind: ScratchKind) -> io::Result<TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("mindrune-{}-{}-", kind.name(), std::process::id()))
        .rand_bytes(RANDOM_LEN)
        .tempdir_in(parent)
}

/// Sweeps the system temp folder ([`sweep_stale_in`]) once per process: lab steps call it when
/// they start, and so does the first scratch folder a process makes.
pub(crate) fn sweep_stale_once() {
    static SWEPT: Once = Once::new();
    SWEPT.call_once(|| {
        let removed = sweep_stale_in(&tempfile::env::temp_dir());
        if !removed.is_empty() {
            tracing::debug!(
                count = removed.len(),
                "removed scratch folders left by killed lab runs"
            );
        }
    });
}

/// Removes from `parent` every scratch folder whose process is gone, and returns their paths.
/// Nothing that fails here is an error: a folder that cannot be removed is tried again by the
/// next sweep.
pub(crate) fn sweep_stale_in(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let me = std::process::id();
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        if pid == me || is_alive(pid) {
            continue;
        }
        let path = entry.path();
        // `symlink_metadata`: a symlink with a scratch folder's name is not one.
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != uid {
            continue;
        }
        // `remove_dir_all` never follows a symlink inside the folder either.
        match fs::remove_dir_all(&path) {
            Ok(()) => removed.push(path),
            Err(err) => tracing::debug!(
                path = %path.display(),
                "cannot remove a stale scratch folder: {err}"
            ),
        }
    }
    removed
}

/// The pid in `name` when it is exactly `mindrune-<kind>-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("mindrune-")?;
    ScratchKind::ALL.iter().find_map(|kind| {
        let (pid, random) = rest
            .strip_prefix(kind.name())?
            .strip_prefix('-')?
            .split_once('-')?;
        let canonical_pid = !pid.is_empty()
            && !pid.starts_with('0')
            && pid.bytes().all(|byte| byte.is_ascii_digit());
        let random =
            random.len() == RANDOM_LEN && random.bytes().all(|b| b.is_ascii_alphanumeric());
        if !(canonical_pid && random) {
            return None;
        }
        // Only a pid a process can have (1 to i32::MAX) names an owner.
        let pid: u32 = pid.parse().ok()?;
        i32::try_from(pid).ok()?;
        Some(pid)
    })
}

/// Whether a process with `pid` exists (ours or another user's); only a clear "no such
/// process" counts as gone.
fn is_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pid of a process that has exited and been reaped.
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!is_alive(pid));
        pid
    }

    fn plant(parent: &Path, name: &str) -> PathBuf {
        let path = parent.join(name);
        fs::create_dir_all(path.join("package/fixtures")).unwrap();
        fs::write(path.join("package/X.yaml"), "skill: x\n").unwrap();
        path
    }

    #[test]
    fn a_scratch_folder_is_named_for_its_process_and_its_kind() {
        let parent = tempfile::tempdir().unwrap();
        for kind in ScratchKind::ALL {
            let dir = scratch_dir_in(parent.path(), kind).unwrap();
            let name = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
            assert!(
                name.starts_with(&format!("mindrune-{}-", kind.name())),
                "{name}"
            );
            assert_eq!(owner_pid(&name), Some(std::process::id()), "{name}");
        }
    }

    #[test]
    fn the_sweep_removes_only_the_scratch_folders_of_dead_processes() {
        let parent = tempfile::tempdir().unwrap();
        let dead = dead_pid();
        let random = "a1B2c3D4e5F6";
        let mut stale: Vec<PathBuf> = ScratchKind::ALL
            .iter()
            .map(|kind| {
                plant(
                    parent.path(),
                    &format!("mindrune-{}-{dead}-{random}", kind.name()),
                )
            })
            .collect();
        stale.sort();

        // This process's own folder, and another live process's.
        let mine = scratch_dir_in(parent.path(), ScratchKind::Case).unwrap();
        fs::write(mine.path().join("busy"), "").unwrap();
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let other = plant(
            parent.path(),
            &format!("mindrune-harness-{}-{random}", sleeper.id()),
        );

        // Names that are not exactly a scratch folder's, each with the dead pid.
        let unlike = [
            format!("mindrune-harness-{dead}-short"),
            format!("mindrune-harness-{dead}-{random}x"),
            format!("mindrune-harness-{dead}-a1B2c3D4e5-6"),
            format!("mindrune-harness-0{dead}-{random}"),
            format!("mindrune-harness-+{dead}-{random}"),
            format!("mindrune-harness-0-{random}"),
            format!("mindrune-harness-99999999999-{random}"),
            format!("mindrune-other-{dead}-{random}"),
            format!("mindrune-harness{dead}-{random}"),
            format!("runx-harness-{dead}-{random}"),
            format!(".mindrune-harness-{dead}-{random}"),
            "mindrune-harness-Ab3dE6".to_owned(),
        ];
        for name in &unlike {
            plant(parent.path(), name);
        }
        // A file, and a symlink to a folder outside, both named like a dead process's folder.
        let file = parent
            .path()
            .join(format!("mindrune-harness-{dead}-fileFILEfile"));
        fs::write(&file, "keep").unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("precious"), "keep").unwrap();
        let link = parent
            .path()
            .join(format!("mindrune-harness-{dead}-linkLINKlink"));
        std::os::unix::fs::symlink(outside.path(), &link).unwrap();

        let mut removed = sweep_stale_in(parent.path());
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        removed.sort();
        assert_eq!(removed, stale);
        for path in &stale {
            assert!(!path.exists(), "{}", path.display());
        }
        assert!(
            mine.path().join("busy").exists(),
            "this process's folder was removed"
        );
        assert!(
            other.join("package/X.yaml").exists(),
            "a live process's folder was removed"
        );
        for name in &unlike {
            assert!(
                parent.path().join(name).join("package/X.yaml").exists(),
                "{name}"
            );
        }
        assert_eq!(fs::read_to_string(&file).unwrap(), "keep");
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(
            fs::read_to_string(outside.path().join("precious")).unwrap(),
            "keep"
        );
        // Once the other process is gone, its folder is stale too; nothing else ever is.
        assert_eq!(sweep_stale_in(parent.path()), [other]);
        assert_eq!(sweep_stale_in(parent.path()), Vec::<PathBuf>::new());
        assert!(mine.path().join("busy").exists());
    }
}
