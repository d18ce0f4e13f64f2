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
#[expect(
    clippy::too_many_lines,
    reason = "runx::package::inputs::check_source (171 lines), in a module being reworked in its own branch: split it there and drop this"
)]
pub mod runx;
pub mod score;
#[cfg_attr(
    test,
    expect(
        clippy::too_many_lines,
        reason = "secrets::tests::positive_cases, a table of secrets and their kinds (in a module being reworked in its own branch)"
    )
)]
pub mod secrets;
pub mod shell_line;
pub mod shell_writes;
