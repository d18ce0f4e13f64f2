//! MindRune's pure domain.
//!
//! Architecture invariant: this crate does no I/O. It knows nothing about SQL, HTTP, MCP or the
//! filesystem; every function here takes values and returns values (plus diagnostics), so it
//! can be tested and fuzzed in isolation.

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod avatars;
pub mod digest;
pub mod header;
pub mod near_repeat;
pub mod playbook;
pub mod runx;
pub mod score;
pub mod secrets;
pub mod shell_line;
pub mod shell_writes;
