//! MindRune's engine: everything that talks to both a [`mindrune_store::Store`] and the
//! filesystem. Ingest of tool calls lives here; the faces (CLI, server, MCP) call it.

pub mod agent;
pub mod atomic_file;
pub mod child;
pub mod display;
pub mod family;
pub mod hook;
pub mod host_guard;
pub mod ingest;
pub mod lab;
pub mod mirror_writer;
pub mod playbook;
pub mod snippets;
pub mod tags;
pub mod turn;
pub mod workspace;
pub mod wrapup;

pub use ingest::{IngestError, Recorded, Recorder, now_millis};

/// Whether an I/O error says the disk is full (ENOSPC) or the user's quota on it is used up
/// (EDQUOT): the surroundings, not MindRune's input or its library, are to blame.
pub fn io_disk_full(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}
