//! Claude Code hooks: one JSON object on stdin per hook call, turned into an event.
//!
//! `PreToolUse` notes when a call started (a small file per `tool_use_id` in a spool folder);
//! `PostToolUse` / `PostToolUseFailure` find that note, so the use gets its duration, and become
//! one event with the `tool_use_id` as its id (a hook that fires twice records once). Calls
//! Claude Code runs in the background are detached and never recorded.

use std::path::{Path, PathBuf};

use mindrune_core::event::{Call, Event};
use serde_json::Value;
use time::OffsetDateTime;

use crate::ingest::now_millis;

/// Pending-call notes older than this are swept away at a turn's end: their call never
/// finished as far as the hooks could see.
pub const STALE_PENDING_MILLIS: i64 = 24 * 60 * 60 * 1000;

#[derive(Debug, thiserror::Error)]
#[error("{}{message}", field.as_ref().map(|f| format!("hook field `{f}`: ")).unwrap_or_default())]
pub struct HookError {
    pub field: Option<String>,
    pub message: String,
}

fn hook_error(field: &str, message: impl Into<String>) -> HookError {
    HookError {
        field: Some(field.to_string()),
        message: message.into(),
    }
}

/// What a hook call asks of MindRune.
#[derive(Debug, Clone, PartialEq)]
pub enum HookAction {
    /// A finished call to record.
    Record(Box<Event>),
    /// A call started; its start time was noted.
    Started,
    /// A turn ended; `swept` stale pending notes were removed.
    TurnEnded { swept: usize },
    /// Nothing to do, and why (another tool, a detached run).
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

/// Handles one hook call for `agent`. `spool` holds the pending-call notes.
pub fn handle(input: &str, agent: &str, spool: &Path) -> Result<HookAction, HookError> {
    let value: Value = serde_json::from_str(input).map_err(|err| HookError {
        field: None,
        message: format!("the hook input is not JSON: {err}"),
    })?;
    let event_name = str_field(&value, "hook_event_name")
        .ok_or_else(|| hook_error("hook_event_name", "is missing; is this a Claude Code hook?"))?;
    match event_name {
        "Stop" => {
            return Ok(HookAction::TurnEnded {
                swept: sweep_stale(spool),
            });
        }
        "SubagentStop" => {
            return Ok(HookAction::Ignored(
                "a subagent stopped; the agent's own turn goes on".into(),
            ));
        }
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" => {}
        other => {
            return Ok(HookAction::Ignored(format!(
                "{other} hooks carry no tool call"
            )));
        }
    }
    let tool_name =
        str_field(&value, "tool_name").ok_or_else(|| hook_error("tool_name", "is missing"))?;
    let Some(tool) = tool_of(tool_name) else {
        return Ok(HookAction::Ignored(format!(
            "{tool_name} calls are not runs"
        )));
    };
    let tool_input = value
        .get("tool_input")
        .ok_or_else(|| hook_error("tool_input", "is missing"))?;
    let tool_use_id = str_field(&value, "tool_use_id");
    let background = tool_input
        .get("run_in_background")
        .and_then(Value::as_bool)
        .unwrap_or(false);

    if event_name == "PreToolUse" {
        if background {
            return Ok(HookAction::Ignored(
                "a background command: not recorded".into(),
            ));
        }
        if let Some(id) = tool_use_id {
            std::fs::create_dir_all(spool)
                .and_then(|()| std::fs::write(pending_path(spool, id), now_millis().to_string()))
                .map_err(|err| HookError {
                    field: None,
                    message: format!("cannot note the call's start in {}: {err}", spool.display()),
                })?;
        }
        return Ok(HookAction::Started);
    }

    let started = tool_use_id.and_then(|id| {
        let path = pending_path(spool, id);
        let text = std::fs::read_to_string(&path).ok()?;
        let _ = std::fs::remove_file(&path);
        text.trim().parse::<i64>().ok()
    });
    let response = value.get("tool_response");
    // Claude Code moves a command that runs past two minutes to the background; its response
    // then names a background task instead of the command's output.
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
    if let Some(error) = str_field(&value, "error") {
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
            cwd: str_field(&value, "cwd").map(str::to_string),
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
        duration_ms: started.map(|start| (now - start).max(0) as u64),
        output: if output.is_empty() {
            None
        } else {
            Some(output)
        },
        measures: None,
        damage: None,
    };
    Ok(HookAction::Record(Box::new(event)))
}

/// The text of a tool response: Bash's stdout and stderr, or an MCP result's text blocks.
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
            .and_then(|t| t.trim().parse::<i64>().ok())
            .is_none_or(|start| now - start > STALE_PENDING_MILLIS);
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
mod tests {
    use super::*;
    use serde_json::json;

    fn run(input: Value, spool: &Path) -> HookAction {
        handle(&input.to_string(), "buzz", spool).unwrap()
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
            HookAction::TurnEnded { .. }
        ));
    }

    #[test]
    fn bad_hook_input_is_an_error_not_a_panic() {
        let spool = tempfile::tempdir().unwrap();
        assert!(handle("{", "buzz", spool.path()).is_err());
        assert!(handle("{}", "buzz", spool.path()).is_err());
    }
}
