//! The Claude Code contract, in one place: which hook events MindRune listens to and with
//! which matchers (`settings`, which also edits a checkout's settings files), what a hook call
//! says (`Payload`, parsed once per call), what MindRune does with it (`hook`, the guard
//! included, for an avatar's hooks and an assistant's workspace alike), and what a hook answers
//! on stdout (`answer`). The cli only reads stdin, acts on the returned action and prints.
//!
//! The facts behind each rule were seen with the real Claude Code
//! (`shared/data/claude-code/README.md`; its captured payloads are `hook`'s fixtures).

mod answer;
mod hook;
mod payload;
mod settings;

// What the crate root's `pub use` list takes from these files.
pub use answer::{
    deny as deny_answer, prompt_context, session_context, session_context_warned, system_message,
};
#[cfg(test)]
pub(crate) use hook::tests as hook_tests;
pub use hook::{
    AvatarHook, HookAction, Payload, WorkspaceAction, agent_name, handle as handle_hook,
    handle_workspace,
};
pub use settings::{
    Events as HookEvents, HOOK_EVENTS, WORKSPACE_HOOK_EVENTS, enable_mcpjson_server,
    fresh as fresh_settings, hook_command_start, hook_option, hook_program,
    merge as merge_settings, merge_mcp_server, shell_word,
};
