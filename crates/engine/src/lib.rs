//! MindRune's engine: everything that talks to both a [`mindrune_store::Store`] and the
//! filesystem. Ingest of tool calls lives here; the faces (CLI, server, MCP) call it.

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod agent;
mod atomic_file;
mod avatars;
mod child;
mod claude_code;
mod display;
mod host_guard;
mod journal;
mod lab;
mod playbook;
mod workspace;

// The crate's public surface: every item another crate, a test, a bench, a fuzz target or a doc
// example names, by area; its modules are private.

// Shared mechanisms: agent backends, atomic files, bounded children, display words, the host
// guard and the workspace (`io_disk_full` is below).
pub use agent::{Backend, attempts_line};
pub use atomic_file::{Replace, sync_dir, write_atomic, write_atomic_with};
pub use child::{Limits as ChildLimits, run_bounded};
pub use display::{ago, best_other, points, skills_as_of, when};
pub use host_guard::{HostGuard, Verdict};
pub use workspace::{
    AgentFiles, LocalFiles, MAX_SCRIPT_BYTES, ReadError, SANDBOX_ROOT, SnapshotFiles,
    list_contained, names_not_utf8, read_contained_limited, script_of_bot, stat_contained_limited,
    system_folder, workspace_relative,
};

// The avatars face: recording, turn boundaries, wrap-ups, the mirror, tags, attention and alerts.
pub use avatars::{
    AlertFormat, AttentionItem, Boundary, DEFAULT_FAILING_STREAK, DEFAULT_QUIET_FACTOR, Failing,
    FamilyError, GroupedEvent, IngestError, MAX_LAB_LOG_BYTES, MIRROR_DIR,
    MIRROR_REFRESH_INTERVAL_MS, MirrorError, MirrorOutcome, MirrorPolicy, Offer, PreparedOutput,
    QuietHours, Recorded, Recorder, RunnerSeen, TagsError, Thresholds, TurnError, TurnReport,
    UnmeasuredRuns, UnreadableBotEnv, WIKI_FOLDERS, Wanted, WikiRead, WrapUp, Written, alert_body,
    alert_for, bot_env_secrets, build_from_wiki, default_dir, empty_mirror, family_answer,
    first_attempt_at, held_keys, load_vocabulary, mirror_plan, mirror_relative, needs_attention,
    now_millis, outcome_unknown_summary, refresh_mirror, retry_at, snippet_advice, turn_boundary,
    turn_boundary_with, wrap_up, wrap_up_with, write_empty_mirror, write_mirror, write_vocabulary,
};

// Claude Code: its hooks, their answers and its settings.
pub use claude_code::{
    AvatarHook, HOOK_EVENTS, HookAction, HookEvents, Payload, WORKSPACE_HOOK_EVENTS,
    WorkspaceAction, agent_name, deny_answer, enable_mcpjson_server, fresh_settings, handle_hook,
    handle_workspace, hook_command_start, hook_option, hook_program, merge_mcp_server,
    merge_settings, prompt_context, session_context, session_context_warned, shell_word,
    system_message,
};

// The playbook face: the door, cards, fixer, layout, records, search and suggestions.
pub use playbook::{
    Answered, Attendance, CONFIG_FILE, Card, CardKind, CardState, Created, DoneTask, Filed, Fixed,
    FixerError, FixerStart, MAX_QUERY_BYTES, MAX_QUERY_WORDS, MAX_WRITE_BYTES, MCP_TOOLS,
    PERMISSIONS_FILE, PlaybookError, Playbooks, Proposal, Report, Rule, SkillRecord, Suggester,
    carried, live_dir, parse_turn_cost, preview_card, read_skill_text, render_records,
    run_command_masked, skills_dir, write_playbook_atomic,
};

// The Skill Lab: runs, apply, validation, receipts and the harness (with its JavaScript worker).
pub use lab::{
    Agent, AnswersFile, ApplyError, CandidateCheck, CandidateReport, CaseOutcome, CaseProgress,
    CaseSealer, CaseStatus, HarnessOptions, HarnessRun, HarnessStatus, JsError, JsInvocation,
    JsLimits, LabTools, LocalSigningKey, NativeTools, NoAgent, NoNativeTools, Operation,
    PackageSnapshot, PackageValidator, PacketCatalog, ReceiptStore, RunEnd, RunReport, RunRequest,
    Runner, RunnerAgent, SIGNING_KEY_ENV, StoreSealer, WorkerCommand, answers_template,
    apply_change, commit_verified, declared_cases, finish_interrupted_apply, inspect_workspace,
    run as run_lab, run_harness, run_module, run_request, serve_worker, snapshot_package,
    throwaway_sealer, validate_package,
};

/// Whether an I/O error says the disk is full (ENOSPC) or the user's quota on it is used up
/// (EDQUOT): the surroundings, not MindRune's input or its library, are to blame.
pub fn io_disk_full(err: &std::io::Error) -> bool {
    matches!(
        err.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}
