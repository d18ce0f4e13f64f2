//! Claude Code hooks: one hook call's payload, turned into what MindRune does with it.
//!
//! `PreToolUse` notes when a call started and in which folder (a small file per `tool_use_id`
//! in a spool folder); `PostToolUse` / `PostToolUseFailure` find that note and become one event
//! with the `tool_use_id` as its id (a hook that fires twice records once). The folder matters:
//! Claude Code's `cwd` is the shell's folder *at the moment of the hook*, so after
//! `cd bots/buzz && bun chop-oaks.ts` the `PostToolUse` says `…/bots/buzz` while the command
//! was written from the checkout root. The command is resolved against the folder it started
//! in. Calls Claude Code runs in the background are detached and never recorded.
//!
//! The facts behind each rule were seen with the real Claude Code
//! (`shared/data/claude-code/README.md`; its captured payloads are this module's fixtures).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mindrune_core::{Call, Event, MAX_SCRIPTS_AT_START};
use mindrune_core::{ShellContext, classify_shell_line};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;

use crate::now_millis;
use crate::workspace::{self, SANDBOX_ROOT};

/// Pending-call notes older than this are swept away at a turn's end: their call never
/// finished as far as the hooks could see.
pub(crate) const STALE_PENDING_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// The variable that names the agent whose tool calls a hook sees: one settings file serves
/// every bot of a checkout, so whoever starts the bot's Claude Code sets it.
pub(crate) const AGENT_VARIABLE: &str = "MINDRUNE_AGENT";

pub(crate) use super::payload::HookError;
pub use super::payload::Payload;
use super::payload::hook_error;

/// What a hook call asks of MindRune.
#[derive(Debug, Clone, PartialEq)]
pub enum HookAction {
    /// The guard denies the call (a host call that would write where MindRune keeps its rules:
    /// family-skills/, a sibling's folder, the library): answer [`super::answer::deny`].
    Deny(String),
    /// A finished call to record.
    Record(Box<Event>),
    /// A call started; its start time and folder were noted.
    Started,
    /// A turn ended (`Stop`, or `StopFailure` when an API error ended it, with that error);
    /// `swept` stale pending notes were removed.
    TurnEnded {
        swept: usize,
        failure: Option<String>,
    },
    /// A session started (`SessionStart`): what the hook prints becomes the agent's context.
    SessionStarted,
    /// Nothing to do, and why (another tool, a subagent's stop).
    Ignored(String),
}

/// The tool that ran, when MindRune measures it.
enum Tool {
    Bash,
    ExecuteCode,
}

fn tool_of(name: &str) -> Option<Tool> {
    if name == "Bash" {
        Some(Tool::Bash)
    } else if name.starts_with("mcp__") && name.ends_with("__execute_code") {
        Some(Tool::ExecuteCode)
    } else {
        None
    }
}

/// What `PreToolUse` keeps of a call until its `PostToolUse`.
#[derive(Debug, Serialize, Deserialize)]
struct PendingCall {
    /// When the call started (ms since the epoch, MindRune's clock).
    started: i64,
    /// The folder the command was written in.
    cwd: Option<String>,
    /// The code of each of the agent's scripts the call runs, as it was when the call started
    /// (see [`capture_scripts`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    code: BTreeMap<String, String>,
}

impl PendingCall {
    /// Reads a note; an older MindRune wrote only the start time.
    fn parse(text: &str) -> Option<PendingCall> {
        serde_json::from_str(text).ok().or_else(|| {
            text.trim().parse().ok().map(|started| PendingCall {
                started,
                cwd: None,
                code: BTreeMap::new(),
            })
        })
    }
}

/// The spool file for a call, with the id reduced to characters safe in a file name.
fn pending_path(spool: &Path, tool_use_id: &str) -> PathBuf {
    let safe: String = tool_use_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    spool.join(format!("{safe}.start"))
}

fn str_field<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

/// The agent a hook runs for, from [`AGENT_VARIABLE`]: an empty or missing name is an error
/// that says how to set it.
pub fn agent_name(agent: Option<&str>) -> Result<&str, HookError> {
    match agent.map(str::trim) {
        Some(name) if !name.is_empty() => Ok(name),
        _ => Err(HookError {
            field: None,
            message: format!(
                "{AGENT_VARIABLE} is not set, so the hook does not know whose tool call this is; \
                 start the bot's Claude Code with it, e.g. `{AGENT_VARIABLE}=buzz claude` \
                 (the bot's folder name under bots/)"
            ),
        }),
    }
}

/// The code of each of `agent`'s scripts a starting call runs, read from `root` (the project
/// folder Claude Code names, where `bots/` is) by workspace-relative path. A run must be filed
/// under the code that ran: by its `PostToolUse` (and, in relay mode, by the time the runner
/// delivers) the agent may have edited the file already, as a real Claude Code did 0.2 s after
/// a run. Only the agent's own `bots/<agent>/*.ts` are read, contained and size-limited, at
/// most [`MAX_SCRIPTS_AT_START`]; a script that cannot be read is left out and read when
/// the event is recorded, as before.
fn capture_scripts(
    tool: &Tool,
    tool_input: &Value,
    cwd: Option<&str>,
    agent: &str,
    root: Option<&Path>,
) -> BTreeMap<String, String> {
    let mut code = BTreeMap::new();
    let Some(root) = root.or(cwd.map(Path::new)) else {
        return code;
    };
    let Some(root_text) = root.to_str() else {
        return code;
    };
    let paths: Vec<String> = match tool {
        Tool::Bash => {
            let Some(command) = str_field(tool_input, "command") else {
                return code;
            };
            let roots = [SANDBOX_ROOT, root_text];
            classify_shell_line(
                command,
                &ShellContext {
                    cwd,
                    workspace_roots: &roots,
                },
            )
            .runs
        }
        Tool::ExecuteCode => str_field(tool_input, "script")
            .and_then(|script| workspace::workspace_relative(script, root))
            .into_iter()
            .collect(),
    };
    for relative in paths {
        if code.len() == MAX_SCRIPTS_AT_START {
            break;
        }
        if !matches!(workspace::script_of_bot(&relative), Some((bot, _)) if bot == agent) {
            continue;
        }
        if let Ok(Some(text)) =
            workspace::read_contained_limited(root, &relative, workspace::MAX_SCRIPT_BYTES)
        {
            code.insert(relative, text);
        }
    }
    code
}

/// Where one avatar's hook call is handled.
#[derive(Debug, Clone, Copy)]
pub struct AvatarHook<'a> {
    pub agent: &'a str,
    /// The folder of the pending-call notes.
    pub spool: &'a Path,
    /// The project folder (Claude Code's `CLAUDE_PROJECT_DIR`) whose scripts a starting call
    /// runs and whose `bots/` and `family-skills/` the guard tells apart; the payload's `cwd`
    /// when Claude Code names none.
    pub project: Option<&'a Path>,
    /// Folders no host call may touch besides family-skills/ and the siblings' (the library,
    /// the relay folder).
    pub kept: &'a [&'a Path],
}

/// Handles one hook call of an avatar: first the guard (a `PreToolUse` it denies goes no
/// further), then the call's note, record, turn end or session start.
pub fn handle(payload: &Payload, hook: &AvatarHook<'_>) -> Result<HookAction, HookError> {
    if payload.event() == "PreToolUse"
        && let Some(reason) = avatar_guard(payload, hook)?
    {
        return Ok(HookAction::Deny(reason));
    }
    let AvatarHook {
        agent,
        spool,
        project: root,
        ..
    } = *hook;
    let value = payload.value();
    let event_name = payload.event();
    if let Some(action) = lifecycle_action(payload, spool) {
        return Ok(action);
    }
    let tool_name =
        str_field(value, "tool_name").ok_or_else(|| hook_error("tool_name", "is missing"))?;
    let Some(tool) = tool_of(tool_name) else {
        return Ok(HookAction::Ignored(format!(
            "{tool_name} calls are not runs"
        )));
    };
    let tool_input = value
        .get("tool_input")
        .ok_or_else(|| hook_error("tool_input", "is missing"))?;
    let tool_use_id = str_field(value, "tool_use_id");
    let background = tool_input
        .get("run_in_background")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let cwd = str_field(value, "cwd");

    if event_name == "PreToolUse" {
        if background {
            return Ok(HookAction::Ignored(
                "a background command: not recorded".into(),
            ));
        }
        if let Some(id) = tool_use_id {
            let note = PendingCall {
                started: now_millis(),
                cwd: cwd.map(str::to_string),
                code: capture_scripts(&tool, tool_input, cwd, agent, root),
            };
            note_start(spool, id, &note)?;
        }
        return Ok(HookAction::Started);
    }

    let pending = tool_use_id.and_then(|id| {
        let path = pending_path(spool, id);
        let text = std::fs::read_to_string(&path).ok()?;
        let _ = std::fs::remove_file(&path);
        PendingCall::parse(&text)
    });
    let response = value.get("tool_response");
    // Claude Code moves a command that runs past its Bash timeout to the background (and so
    // does `run_in_background`); its response then names a background task instead of the
    // command's output.
    let moved_to_background = response.is_some_and(|r| {
        r.get("backgroundTaskId").is_some() || r.get("background_task_id").is_some()
    });
    let failed = event_name == "PostToolUseFailure"
        || response
            .and_then(|r| r.get("isError"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
        || response
            .and_then(|r| r.get("interrupted"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    let mut output = response.map(response_text).unwrap_or_default();
    if let Some(error) = str_field(value, "error") {
        if !output.is_empty() {
            output.push('\n');
        }
        output.push_str(error);
    }

    let call = match tool {
        Tool::Bash => Call::Shell {
            command: str_field(tool_input, "command")
                .ok_or_else(|| hook_error("tool_input.command", "is missing for a Bash call"))?
                .to_string(),
            // The folder the command was written in: the `PreToolUse`'s. Without a note (a
            // `PreToolUse` that never ran), the `PostToolUse`'s is the best there is.
            cwd: pending
                .as_ref()
                .and_then(|note| note.cwd.clone())
                .or_else(|| cwd.map(str::to_string)),
        },
        Tool::ExecuteCode => match (
            str_field(tool_input, "script"),
            str_field(tool_input, "code"),
        ) {
            (Some(script), _) => Call::ExecuteScript {
                script: script.to_string(),
            },
            (None, Some(code)) => Call::ExecuteCode {
                code: code.to_string(),
            },
            (None, None) => {
                return Err(hook_error(
                    "tool_input",
                    "an execute_code call without `script` or `code`",
                ));
            }
        },
    };
    let now = now_millis();
    // Claude Code's own measure of the call, when the payload has it: MindRune's clock between
    // two hook processes adds their start-up (30–240 ms on Bash, ~20× a short MCP call).
    let reported = value.get("duration_ms").and_then(Value::as_u64);
    let duration_ms = reported.or_else(|| {
        pending
            .as_ref()
            .map(|note| (now - note.started).max(0) as u64)
    });
    let started = pending
        .as_ref()
        .map(|note| note.started)
        .or_else(|| reported.map(|ms| now - i64::try_from(ms).unwrap_or(i64::MAX).min(now)));
    let event = Event {
        id: tool_use_id.map(|id| format!("claude-code:{id}")),
        agent: agent.to_string(),
        at: OffsetDateTime::from_unix_timestamp_nanos(
            i128::from(started.unwrap_or(now)) * 1_000_000,
        )
        .ok(),
        call,
        background: background || moved_to_background,
        ok: Some(!failed),
        duration_ms,
        output: if output.is_empty() {
            None
        } else {
            Some(output)
        },
        measures: None,
        damage: None,
        code_at_start: pending.map(|note| note.code).unwrap_or_default(),
    };
    Ok(HookAction::Record(Box::new(event)))
}

/// The text of a tool response: Bash's stdout and stderr, or an MCP result's text blocks.
/// What a hook call that carries no tool call asks for: a turn's end, a session's start, or
/// nothing (`None`: it is a tool call).
fn lifecycle_action(payload: &Payload, spool: &Path) -> Option<HookAction> {
    let value = payload.value();
    Some(match payload.event() {
        event @ ("Stop" | "StopFailure") => HookAction::TurnEnded {
            swept: sweep_stale(spool),
            failure: (event == "StopFailure").then(|| {
                str_field(value, "last_assistant_message")
                    .or_else(|| str_field(value, "error"))
                    .unwrap_or("an API error")
                    .to_string()
            }),
        },
        "SessionStart" => HookAction::SessionStarted,
        "SubagentStop" => {
            HookAction::Ignored("a subagent stopped; the agent's own turn goes on".into())
        }
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => return None,
        other => HookAction::Ignored(format!("{other} hooks carry no tool call")),
    })
}

/// Writes the note of a started call, which its `PostToolUse` finds by `tool_use_id`.
fn note_start(spool: &Path, tool_use_id: &str, note: &PendingCall) -> Result<(), HookError> {
    let text = serde_json::to_string(note).map_err(|err| HookError {
        field: None,
        message: format!("cannot note the call's start: {err}"),
    })?;
    std::fs::create_dir_all(spool)
        .and_then(|()| std::fs::write(pending_path(spool, tool_use_id), text))
        .map_err(|err| HookError {
            field: None,
            message: format!("cannot note the call's start in {}: {err}", spool.display()),
        })
}

/// The guard's reason to deny an avatar's `PreToolUse`, if it has one.
fn avatar_guard(payload: &Payload, hook: &AvatarHook<'_>) -> Result<Option<String>, HookError> {
    let project = hook
        .project
        .map(Path::to_path_buf)
        .or_else(|| payload.text("cwd").map(PathBuf::from))
        .ok_or_else(|| HookError {
            field: None,
            message: "neither CLAUDE_PROJECT_DIR nor the hook's `cwd` says which checkout this is, so the guard cannot tell its bots/ and family-skills/ apart".into(),
        })?;
    let guard = crate::host_guard::HostGuard::for_avatar(&project, hook.agent, hook.kept);
    Ok(match guard.check(payload.value()) {
        crate::host_guard::Verdict::Deny(reason) => Some(reason),
        crate::host_guard::Verdict::Allow => None,
    })
}

fn response_text(response: &Value) -> String {
    match response {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| str_field(b, "text"))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(_) => {
            if let Some(content) = response.get("content") {
                return response_text(content);
            }
            let mut text = String::new();
            for field in ["stdout", "stderr"] {
                if let Some(part) = str_field(response, field).filter(|p| !p.is_empty()) {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(part);
                }
            }
            text
        }
        _ => String::new(),
    }
}

/// What a hook call in an assistant's playbook workspace asks of MindRune
/// (`mindrune hook claude-code --workspace DIR`): the guard before the host's own tools, the
/// host's reads of skills, the carried skills on every turn, the turn record and the observer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceAction {
    /// A `PreToolUse` the guard denies: the reason the model is told.
    Deny(String),
    /// A `PreToolUse` the guard allows.
    Allow,
    /// A `Read` of a live skill by the host's own tool, logged as `workspace_read` logs it.
    ReadNoted(String),
    /// A `UserPromptSubmit`: the carried skills, added to the turn's context.
    Context(String),
    /// A `Stop`: the observer read the turn's transcript; the suggestion it left, if any.
    Observed(Option<i64>),
    /// Nothing to do, and why.
    Ignored(String),
}

/// Handles one hook call in the assistant's `workspace`; `project` is Claude Code's project
/// folder (`CLAUDE_PROJECT_DIR`), where its settings are.
pub fn handle_workspace(
    payload: &Payload,
    workspace: &Path,
    project: Option<&Path>,
) -> Result<WorkspaceAction, HookError> {
    let value = payload.value();
    let event_name = payload.event();
    let playbooks = || {
        crate::playbook::Playbooks::open(workspace).map_err(|err| HookError {
            field: None,
            message: err.to_string(),
        })
    };
    let playbook_error = |err: crate::playbook::PlaybookError| HookError {
        field: None,
        message: err.to_string(),
    };
    if event_name == "PreToolUse" {
        // Before every guarded tool call: no ledger opened, nothing written.
        return Ok(
            match crate::host_guard::HostGuard::for_workspace(workspace, project).check(value) {
                crate::host_guard::Verdict::Allow => WorkspaceAction::Allow,
                crate::host_guard::Verdict::Deny(reason) => WorkspaceAction::Deny(reason),
            },
        );
    }
    // Every other call names the session's turn record (`transcript_path`), which a
    // `skill_refine report` that names none gets; at `Stop` the observer reads it.
    let opened = playbooks()?;
    let hosted = opened.host_hook(value).map_err(playbook_error)?;
    match event_name {
        "Stop" => Ok(match hosted {
            crate::playbook::HostHook::Observed { suggestion, .. } => {
                WorkspaceAction::Observed(suggestion)
            }
            _ => WorkspaceAction::Observed(None),
        }),
        "PostToolUse" | "PostToolUseFailure" if str_field(value, "tool_name") == Some("Read") => {
            let Some(path) = value
                .get("tool_input")
                .and_then(|input| str_field(input, "file_path"))
            else {
                return Err(hook_error(
                    "tool_input.file_path",
                    "is missing for a Read call",
                ));
            };
            let cwd = str_field(value, "cwd").map(PathBuf::from);
            let path = match &cwd {
                Some(cwd) => cwd.join(path),
                None => PathBuf::from(path),
            };
            let ok = event_name == "PostToolUse";
            let turn = str_field(value, "transcript_path");
            Ok(
                match opened
                    .note_host_read(&path, ok, turn)
                    .map_err(playbook_error)?
                {
                    Some(skill) => WorkspaceAction::ReadNoted(skill),
                    None => WorkspaceAction::Ignored("not a skill's SKILL.md".into()),
                },
            )
        }
        "UserPromptSubmit" => {
            let carried = opened.carried_lines().map_err(playbook_error)?;
            Ok(WorkspaceAction::Context(carried_context(&carried)))
        }
        other => Ok(WorkspaceAction::Ignored(format!(
            "{other}: the turn record noted"
        ))),
    }
}

/// The carried skills as a turn's added context: each one's name and when to use it, so a skill
/// made live during the session is there on the next turn.
pub(crate) fn carried_context(carried: &[String]) -> String {
    if carried.is_empty() {
        return "MindRune carries no skills yet: look skills up with playbook_search.".into();
    }
    let mut text = String::from(
        "MindRune's carried skills (read skills/<name>/SKILL.md before work one covers, and follow it):\n",
    );
    for line in carried {
        text.push_str("- ");
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// Removes pending-call notes older than a day; returns how many.
fn sweep_stale(spool: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return 0;
    };
    let now = now_millis();
    let mut swept = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let stale = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| PendingCall::parse(&t))
            .is_none_or(|note| now - note.started > STALE_PENDING_MILLIS);
        if stale
            && path.extension().is_some_and(|e| e == "start")
            && std::fs::remove_file(&path).is_ok()
        {
            swept += 1;
        }
    }
    swept
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    fn run(input: Value, spool: &Path) -> HookAction {
        let payload = Payload::parse(&input.to_string()).unwrap();
        let hook = AvatarHook {
            agent: "buzz",
            spool,
            project: None,
            kept: &[],
        };
        handle(&payload, &hook).unwrap()
    }

    #[test]
    fn a_bash_call_is_timed_by_pairing_pre_and_post_by_tool_use_id() {
        let spool = tempfile::tempdir().unwrap();
        let common = json!({"session_id": "s", "transcript_path": "/t", "cwd": "/work", "tool_name": "Bash",
                            "tool_input": {"command": "bun bots/buzz/chop.ts"}, "tool_use_id": "toolu_1"});
        let mut pre = common.clone();
        pre["hook_event_name"] = json!("PreToolUse");
        assert_eq!(run(pre, spool.path()), HookAction::Started);
        let mut post = common;
        post["hook_event_name"] = json!("PostToolUse");
        post["tool_response"] = json!({"stdout": "── State ──\nXP: Woodcutting +100", "stderr": "", "interrupted": false});
        let HookAction::Record(event) = run(post, spool.path()) else {
            panic!("expected an event")
        };
        assert_eq!(event.id.as_deref(), Some("claude-code:toolu_1"));
        assert_eq!(event.ok, Some(true));
        assert!(event.duration_ms.is_some());
        assert_eq!(
            event.call,
            Call::Shell {
                command: "bun bots/buzz/chop.ts".into(),
                cwd: Some("/work".into())
            }
        );
        assert!(
            std::fs::read_dir(spool.path()).unwrap().next().is_none(),
            "the pending note is removed"
        );
    }

    #[test]
    fn a_failed_call_is_a_failed_use() {
        let spool = tempfile::tempdir().unwrap();
        let HookAction::Record(event) = run(
            json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "cwd": "/work",
                   "tool_input": {"command": "bun bots/buzz/chop.ts"}, "tool_use_id": "t2", "error": "exit 1"}),
            spool.path(),
        ) else {
            panic!("expected an event")
        };
        assert_eq!(event.ok, Some(false));
        assert_eq!(event.output.as_deref(), Some("exit 1"));
    }

    #[test]
    fn a_background_command_is_detached() {
        let spool = tempfile::tempdir().unwrap();
        let HookAction::Record(event) = run(
            json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                   "tool_input": {"command": "bun bots/buzz/chop.ts", "run_in_background": true},
                   "tool_response": {"backgroundTaskId": "b1"}}),
            spool.path(),
        ) else {
            panic!("expected an event")
        };
        assert!(event.background);
    }

    #[test]
    fn an_rs_sdk_execute_code_call_with_a_script_or_code_becomes_an_event() {
        let spool = tempfile::tempdir().unwrap();
        let HookAction::Record(event) = run(
            json!({"hook_event_name": "PostToolUse", "tool_name": "mcp__rs-agent-bot__execute_code",
                   "tool_input": {"bot_name": "buzz", "code": "await bot.chopTree()"},
                   "tool_response": [{"type": "text", "text": "── Execution (success, 1200ms) ──"}]}),
            spool.path(),
        ) else {
            panic!("expected an event")
        };
        assert_eq!(
            event.call,
            Call::ExecuteCode {
                code: "await bot.chopTree()".into()
            }
        );
        assert_eq!(
            event.output.as_deref(),
            Some("── Execution (success, 1200ms) ──")
        );
    }

    #[test]
    fn other_tools_and_events_are_ignored() {
        let spool = tempfile::tempdir().unwrap();
        assert!(matches!(
            run(
                json!({"hook_event_name": "PostToolUse", "tool_name": "Read", "tool_input": {}}),
                spool.path()
            ),
            HookAction::Ignored(_)
        ));
        assert!(matches!(
            run(json!({"hook_event_name": "Stop"}), spool.path()),
            HookAction::TurnEnded { failure: None, .. }
        ));
    }

    /// The payloads the real Claude Code sent (`shared/data/claude-code/hook-payloads.jsonl`),
    /// each with why it was kept.
    pub(crate) fn captured() -> Vec<(String, Value)> {
        let shared = std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
            PathBuf::from,
        );
        let path = shared.join("data/claude-code/hook-payloads.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {} (set MINDRUNE_SHARED): {err}",
                path.display()
            )
        });
        text.lines()
            .map(|line| {
                let value: Value = serde_json::from_str(line).unwrap();
                (
                    value["why"].as_str().unwrap().to_string(),
                    value["payload"].clone(),
                )
            })
            .filter(|(_, payload)| payload.get("hook_event_name").is_some())
            .collect()
    }

    /// The captured payload whose `why` starts with `why`.
    fn payload(why: &str) -> Value {
        captured()
            .into_iter()
            .find(|(w, _)| w.starts_with(why))
            .unwrap_or_else(|| panic!("no captured payload: {why}"))
            .1
    }

    fn record(payload: Value, spool: &Path) -> Event {
        match run(payload, spool) {
            HookAction::Record(event) => *event,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    #[test]
    fn every_captured_payload_is_handled_without_an_error() {
        let spool = tempfile::tempdir().unwrap();
        for (why, payload) in captured() {
            let payload = Payload::parse(&payload.to_string()).unwrap();
            let hook = AvatarHook {
                agent: "buzz",
                spool: spool.path(),
                project: None,
                kept: &[],
            };
            handle(&payload, &hook).unwrap_or_else(|err| panic!("{why}: {err}"));
        }
    }

    #[test]
    fn a_run_after_cd_is_resolved_from_the_folder_its_pre_tool_use_saw() {
        let spool = tempfile::tempdir().unwrap();
        let pre = payload("PreToolUse of `cd bots/buzz && bun chop-oaks.ts`");
        let post = payload("PostToolUse of the same call: cwd is already bots/buzz");
        assert_eq!(
            post["cwd"], "$OUT/rs-sdk/bots/buzz",
            "the capture's premise"
        );
        assert_eq!(run(pre, spool.path()), HookAction::Started);
        let event = record(post, spool.path());
        assert_eq!(
            event.call,
            Call::Shell {
                command: "cd bots/buzz && bun chop-oaks.ts".into(),
                cwd: Some("$OUT/rs-sdk".into()),
            }
        );
    }

    #[test]
    fn without_its_pre_tool_use_a_call_keeps_the_post_tool_use_folder() {
        let spool = tempfile::tempdir().unwrap();
        let event = record(
            payload("PostToolUse of the same call: cwd is already bots/buzz"),
            spool.path(),
        );
        assert!(matches!(
            event.call,
            Call::Shell { cwd: Some(ref cwd), .. } if cwd == "$OUT/rs-sdk/bots/buzz"
        ));
    }

    #[test]
    fn the_use_lasts_what_claude_code_measured_not_the_gap_between_two_hook_processes() {
        let spool = tempfile::tempdir().unwrap();
        let mut post = payload("MCP execute_code success");
        assert_eq!(post["duration_ms"], 9, "the capture's premise");
        // A start noted long before: the payload's own measure still wins.
        std::fs::create_dir_all(spool.path()).unwrap();
        let id = post["tool_use_id"].as_str().unwrap().to_string();
        std::fs::write(
            pending_path(spool.path(), &id),
            format!("{{\"started\": {}, \"cwd\": null}}", now_millis() - 5_000),
        )
        .unwrap();
        let event = record(post.clone(), spool.path());
        assert_eq!(event.duration_ms, Some(9));
        // Without the payload's measure, the clock between the hooks is all there is.
        post.as_object_mut().unwrap().remove("duration_ms");
        std::fs::write(
            pending_path(spool.path(), &id),
            format!("{{\"started\": {}, \"cwd\": null}}", now_millis() - 5_000),
        )
        .unwrap();
        let event = record(post, spool.path());
        assert!(event.duration_ms.is_some_and(|ms| ms >= 5_000));
    }

    #[test]
    fn a_note_an_older_mindrune_wrote_still_times_its_call() {
        let spool = tempfile::tempdir().unwrap();
        let mut post = payload("exit 1: PostToolUseFailure");
        post.as_object_mut().unwrap().remove("duration_ms");
        let id = post["tool_use_id"].as_str().unwrap().to_string();
        std::fs::write(
            pending_path(spool.path(), &id),
            (now_millis() - 1_000).to_string(),
        )
        .unwrap();
        let event = record(post, spool.path());
        assert!(event.duration_ms.is_some_and(|ms| ms >= 1_000));
    }

    #[test]
    fn a_captured_exit_1_is_a_failed_use_carrying_the_error_output() {
        let spool = tempfile::tempdir().unwrap();
        let event = record(payload("exit 1: PostToolUseFailure"), spool.path());
        assert_eq!(event.ok, Some(false));
        assert!(
            event
                .output
                .unwrap()
                .contains("StallError: no progress for 30s")
        );
    }

    #[test]
    fn a_captured_mcp_error_is_a_failed_snippet_use_with_the_block_text() {
        let spool = tempfile::tempdir().unwrap();
        let event = record(payload("MCP execute_code isError"), spool.path());
        assert_eq!(event.ok, Some(false));
        assert!(event.output.unwrap().contains("Error: no axe"));
        assert!(matches!(event.call, Call::ExecuteCode { .. }));
    }

    #[test]
    fn captured_background_runs_are_detached() {
        let spool = tempfile::tempdir().unwrap();
        for why in [
            "run_in_background: true",
            "a run past its Bash timeout is moved to the background",
        ] {
            assert!(record(payload(why), spool.path()).background, "{why}");
        }
        // `… &` is detached by the shell line itself (the classifier), not by the hook.
        assert!(!record(payload("shell `&`"), spool.path()).background);
    }

    #[test]
    fn a_captured_stop_failure_ends_the_turn_with_its_error() {
        let spool = tempfile::tempdir().unwrap();
        assert_eq!(
            run(
                payload("an API error ends the turn: StopFailure"),
                spool.path()
            ),
            HookAction::TurnEnded {
                swept: 0,
                failure: Some("API Error: 400 scripted: the API refused the request".into()),
            }
        );
        assert!(matches!(
            run(
                payload("Stop while a background task still runs"),
                spool.path()
            ),
            HookAction::TurnEnded { failure: None, .. }
        ));
    }

    #[test]
    fn a_subagent_s_calls_are_the_agent_s_and_its_stop_is_not_a_turn_end() {
        let spool = tempfile::tempdir().unwrap();
        assert_eq!(
            run(payload("a Bash call inside a subagent"), spool.path()),
            HookAction::Started
        );
        assert!(matches!(
            run(payload("SubagentStop"), spool.path()),
            HookAction::Ignored(_)
        ));
    }

    #[test]
    fn session_start_asks_for_the_agent_s_context() {
        let spool = tempfile::tempdir().unwrap();
        assert_eq!(
            run(
                json!({"session_id": "s", "transcript_path": "/t", "cwd": "/work",
                       "hook_event_name": "SessionStart", "source": "startup"}),
                spool.path()
            ),
            HookAction::SessionStarted
        );
    }

    #[test]
    fn a_missing_agent_variable_is_named_with_how_to_set_it() {
        for agent in [None, Some(""), Some("  ")] {
            let err = agent_name(agent).unwrap_err().to_string();
            assert!(err.contains("MINDRUNE_AGENT is not set"), "{err}");
            assert!(err.contains("MINDRUNE_AGENT=buzz claude"), "{err}");
        }
        assert_eq!(agent_name(Some("buzz")).unwrap(), "buzz");
    }

    #[test]
    fn bad_hook_input_is_an_error_not_a_panic() {
        assert!(Payload::parse("{").is_err());
        assert!(Payload::parse("{}").is_err());
        let spool = tempfile::tempdir().unwrap();
        let hook = AvatarHook {
            agent: "buzz",
            spool: spool.path(),
            project: None,
            kept: &[],
        };
        let no_tool = Payload::parse(r#"{"hook_event_name": "PostToolUse"}"#).unwrap();
        assert!(handle(&no_tool, &hook).is_err());
    }
}
