//! Why applying a change to a package stopped: the error of `apply` and of the commit under
//! it, in a module of its own so the commit need not import the apply that calls it.

use std::io;
use std::path::{Path, PathBuf};

use mindrune_core::Refusal;

use super::snapshot_walk::SnapshotError;

/// Why `apply` stopped. Every variant leaves the target as it was.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A refusal in Runx's words (contract, admission, stale base, changed target, budget).
    /// Transparent: the refusal is the message, said once (an error chain printed in full
    /// would otherwise repeat it as its own cause).
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The staged candidate failed validation: it does not parse, or its harness failed.
    #[error("skill package validation failed: {0}")]
    CandidateInvalid(String),
    #[error("cannot {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

pub(super) fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> ApplyError {
    let path = path.to_path_buf();
    move |source| ApplyError::Io {
        action,
        path,
        source,
    }
}
