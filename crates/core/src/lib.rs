//! MindRune's pure domain.
//!
//! Architecture invariant: this crate does no I/O. It knows nothing about SQL, HTTP, MCP or the
//! filesystem; every function here takes values and returns values (plus diagnostics), so it
//! can be tested and fuzzed in isolation.

pub mod digest;
pub mod event;
pub mod fisher;
pub mod header;
pub mod instructions;
pub mod lessons;
pub mod mirror_text;
pub mod near_repeat;
pub mod observer;
pub mod permissions;
pub mod playbook_file;
pub mod rs_output;
pub mod runx;
pub mod score;
pub mod secrets;
pub mod sharing;
pub mod shell_line;
pub mod shell_writes;
pub mod topics;
pub mod transcript;
pub mod vocabulary;
