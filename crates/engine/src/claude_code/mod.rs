//! The Claude Code contract, in one place: which hook events MindRune listens to and with
//! which matchers (`settings`, which also edits a checkout's settings files), what a hook call
//! says (`Payload`, parsed once per call), what MindRune does with it (`hook`, the guard
//! included, for an avatar's hooks and an assistant's workspace alike), and what a hook answers
//! on stdout (`answer`). The cli only reads stdin, acts on the returned action and prints.
//!
//! The facts behind each rule were seen with the real Claude Code
//! (`shared/data/claude-code/README.md`; its captured payloads are `hook`'s fixtures).

pub mod answer;
pub mod hook;
mod payload;
pub mod settings;
