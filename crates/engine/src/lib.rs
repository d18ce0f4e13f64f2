//! MindRune's engine: everything that talks to both a [`mindrune_store::Store`] and the
//! filesystem. Ingest of tool calls lives here; the faces (CLI, server, MCP) call it.

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod agent;
pub mod atomic_file;
pub mod avatars;
pub mod child;
pub mod claude_code;
pub mod display;
pub mod host_guard;
mod journal;
pub mod lab;
pub mod playbook;
pub mod workspace;

pub use avatars::ingest::{IngestError, Recorded, Recorder, now_millis};

/// Whether an I/O error says the disk is full (ENOSPC) or the user's quota on it is used up
/// (EDQUOT): the surroundings, not MindRune's input or its library, are to blame.
pub fn io_disk_full(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}
