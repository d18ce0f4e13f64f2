//! The agent runner: the one way MindRune starts an agent of its own (the playbook skill fixer,
//! the Skill Lab's two acts).
//!
//! An [`Act`] is a prompt, a JSON request, a working folder, the folders it may read besides,
//! an allow-list of tools, a time and a cost limit, and the JSON Schema its answer must meet.
//! [`run`] starts the agent, checks the answer (the schema first, then the caller's own
//! check), and on a refusal starts it once more with the refusal's text; a second refusal is a
//! [`AgentFailure`], and nothing was changed by the runner at any point: the caller acts only on
//! an admitted answer.
//!
//! Two backends:
//!
//! - [`Backend::Claude`]: the Claude Code CLI, headless (`claude -p --output-format json
//!   --json-schema …`). Only the act's tools exist in the session (`--tools`), only they are
//!   allowed (`--allowedTools`), and anything else is denied without asking
//!   (`--permission-mode dontAsk`); no MCP server, no hook and no saved session of its own
//!   (`--strict-mcp-config`, `disableAllHooks`, `--no-session-persistence`); the cost cap is
//!   Claude Code's `--max-budget-usd`. The answer is the result object's `structured_output`,
//!   which Claude Code has already held to the schema inside the session.
//! - [`Backend::Command`]: any program (`sh -c`) that reads the request as JSON on stdin and
//!   prints its answer as JSON on stdout; `MINDRUNE_AGENT_ACT` names the act, and a retry's
//!   request carries `refused: {answer, error}`.
//!
//! No `MINDRUNE_*` variable reaches the agent's environment: the fixer's token stays with
//! MindRune, so it is never in the agent's context.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::child::{Limits, run_bounded};

/// An agent's printed answer larger than this is refused rather than read into memory.
const MAX_AGENT_OUTPUT: usize = 20 * 1024 * 1024;

/// The read-only tools of Claude Code: read a file, search file contents, list files.
pub(crate) const READ_ONLY_TOOLS: [&str; 3] = ["Read", "Grep", "Glob"];

/// One act for an agent.
#[derive(Debug, Clone)]
pub(crate) struct Act {
    /// The act's name (`skill-fixer`, `skill-lab-architecture`), for messages and
    /// `MINDRUNE_AGENT_ACT`.
    pub(crate) name: String,
    /// What the agent is to do: the act's task contract.
    pub(crate) instructions: String,
    /// The act's request: pointers and inputs, as JSON.
    pub(crate) request: Value,
    /// The JSON Schema the answer must meet.
    pub(crate) schema: Value,
    /// The folder the agent runs in.
    pub(crate) workdir: PathBuf,
    /// Folders it may read besides its working folder.
    pub(crate) read_dirs: Vec<PathBuf>,
    /// The tools it has (Claude Code's names); every other tool is absent.
    pub(crate) tools: Vec<String>,
    pub(crate) limits: AgentLimits,
    /// More variables for a command backend's environment (`MINDRUNE_LAB_ACT`).
    pub(crate) command_env: Vec<(String, String)>,
}

/// An act's limits, over both of its attempts together.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentLimits {
    pub(crate) timeout: Duration,
    /// US dollars the model calls may cost (Claude Code's own count); a command backend reports
    /// no cost and is held to the time only.
    pub(crate) max_usd: f64,
}

/// Which agent to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The Claude Code CLI at this path.
    Claude { program: PathBuf },
    /// A shell command: the request on stdin, the answer on stdout.
    Command { command: String },
}

impl Backend {
    /// Claude Code found on `PATH`, when it is there.
    pub fn claude_on_path() -> Option<Backend> {
        find_on_path("claude").map(|program| Backend::Claude { program })
    }

    /// What it is, for a message.
    pub fn describe(&self) -> String {
        match self {
            Backend::Claude { program } => format!("Claude Code ({})", program.display()),
            Backend::Command { command } => format!("the agent command `{command}`"),
        }
    }
}

/// An executable file named `name` in one of `PATH`'s folders.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// What one start of the agent came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// What it answered; `None` when it printed nothing (a command with no answer) or ended
    /// without one (Claude Code never called its answer tool).
    pub(crate) answer: Option<Value>,
    /// The model calls' cost, when the backend counts it.
    pub(crate) cost_usd: Option<f64>,
    pub(crate) duration: Duration,
    /// Model turns, when the backend counts them.
    pub(crate) turns: Option<u64>,
    /// Why there is no answer, when there is none.
    pub(crate) why_none: Option<String>,
    /// Tool calls the backend denied (outside the allow-list).
    pub(crate) denied: Vec<String>,
}

/// An act answered and admitted.
#[derive(Debug)]
pub(crate) struct Answered<T> {
    pub(crate) value: T,
    /// The raw answer that was admitted.
    pub(crate) answer: Value,
    pub(crate) attempts: Vec<Attempt>,
}

fn total_cost(attempts: &[Attempt]) -> f64 {
    attempts.iter().filter_map(|a| a.cost_usd).sum()
}

/// Why an act got no admitted answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentFailure {
    /// The agent could not be started or did not finish (not on PATH, a timeout, a crash,
    /// the budget spent).
    #[error("{message}")]
    Failed {
        message: String,
        attempts: Vec<Attempt>,
    },
    /// Both answers were refused; `last` is the second one.
    #[error("the agent's answer to the {act} act was refused twice; the second time: {error}")]
    Refused {
        act: String,
        error: String,
        last: Option<Value>,
        attempts: Vec<Attempt>,
    },
    /// The agent had no answer (a command that printed nothing).
    #[error("the agent gave no answer to the {act} act")]
    NoAnswer { act: String, attempts: Vec<Attempt> },
}

impl AgentFailure {
    pub fn attempts(&self) -> &[Attempt] {
        match self {
            AgentFailure::Failed { attempts, .. }
            | AgentFailure::Refused { attempts, .. }
            | AgentFailure::NoAnswer { attempts, .. } => attempts,
        }
    }
}

/// The refusal of a first answer, handed to the second attempt.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    pub(crate) answer: Option<Value>,
    pub(crate) error: String,
}

/// Runs `act` on `backend`: at most two attempts, each answer held to the act's schema and
/// then to `check`. Returns the first admitted answer. A command that prints nothing at all
/// is [`AgentFailure::NoAnswer`] at once (it has no answer to give; asking again would not
/// change that).
pub(crate) fn run<T>(
    backend: &Backend,
    act: &Act,
    check: impl FnMut(&Value) -> Result<T, String>,
) -> Result<Answered<T>, AgentFailure> {
    run_normalized(backend, act, Value::clone, check)
}

/// [`run`], with each answer passed through `normalize` before it is checked (a command's
/// bare contract wrapped in its output's key, say).
pub(crate) fn run_normalized<T>(
    backend: &Backend,
    act: &Act,
    normalize: impl Fn(&Value) -> Value,
    mut check: impl FnMut(&Value) -> Result<T, String>,
) -> Result<Answered<T>, AgentFailure> {
    let validator = jsonschema::validator_for(&act.schema).map_err(|err| AgentFailure::Failed {
        message: format!(
            "the {} act's answer schema is not valid JSON Schema: {err}",
            act.name
        ),
        attempts: Vec::new(),
    })?;
    let started = Instant::now();
    let mut attempts: Vec<Attempt> = Vec::new();
    let mut refusal: Option<Refusal> = None;
    for _ in 0..2 {
        let left_time = act.limits.timeout.saturating_sub(started.elapsed());
        let left_usd = act.limits.max_usd - total_cost(&attempts);
        if left_time.is_zero() || left_usd <= 0.0 {
            let error = refusal.map(|r| r.error).unwrap_or_default();
            return Err(AgentFailure::Failed {
                message: format!(
                    "the {} act's limits ({} s, ${:.2}) were spent before it could be asked again; its answer was refused: {error}",
                    act.name,
                    act.limits.timeout.as_secs(),
                    act.limits.max_usd
                ),
                attempts,
            });
        }
        let limits = AgentLimits {
            timeout: left_time,
            max_usd: left_usd,
        };
        let attempt = match backend {
            Backend::Claude { program } => claude_attempt(program, act, limits, refusal.as_ref()),
            Backend::Command { command } => command_attempt(command, act, limits, refusal.as_ref()),
        };
        let attempt = match attempt {
            Ok(attempt) => attempt,
            Err(message) => return Err(AgentFailure::Failed { message, attempts }),
        };
        let answer = attempt.answer.as_ref().map(&normalize);
        let why_none = attempt.why_none.clone();
        attempts.push(attempt);
        let Some(answer) = answer else {
            if matches!(backend, Backend::Command { .. }) && why_none.is_none() {
                return Err(AgentFailure::NoAnswer {
                    act: act.name.clone(),
                    attempts,
                });
            }
            refusal = Some(Refusal {
                answer: None,
                error: why_none.unwrap_or_else(|| "it gave no answer".to_string()),
            });
            continue;
        };
        let verdict = match validator.iter_errors(&answer).next() {
            Some(error) => {
                let at = error.instance_path().to_string();
                Err(format!(
                    "the answer does not meet its schema at {}: {error}",
                    if at.is_empty() { "/" } else { &at }
                ))
            }
            None => check(&answer),
        };
        match verdict {
            Ok(value) => {
                return Ok(Answered {
                    value,
                    answer,
                    attempts,
                });
            }
            Err(error) => {
                refusal = Some(Refusal {
                    answer: Some(answer),
                    error,
                });
            }
        }
    }
    let refusal = refusal.unwrap_or(Refusal {
        answer: None,
        error: "no answer".into(),
    });
    Err(AgentFailure::Refused {
        act: act.name.clone(),
        error: refusal.error,
        last: refusal.answer,
        attempts,
    })
}

/// The prompt Claude Code is given: the act's instructions, its request, and on a retry the
/// refusal of the first answer.
fn prompt(act: &Act, refusal: Option<&Refusal>) -> String {
    let mut text = act.instructions.trim_end().to_string();
    text.push_str("\n\nThe request, as JSON:\n\n");
    text.push_str(&serde_json::to_string_pretty(&act.request).unwrap_or_default());
    text.push_str(
        "\n\nYou may only read. End by calling the StructuredOutput tool exactly once with your answer.\n",
    );
    if let Some(refusal) = refusal {
        text.push_str("\nYou were asked this once already and your answer was refused: ");
        text.push_str(&refusal.error);
        if let Some(answer) = &refusal.answer {
            text.push_str("\nThat answer was:\n");
            text.push_str(&serde_json::to_string(answer).unwrap_or_default());
        }
        text.push_str("\nAnswer again, correcting that. This is the last chance: a second refused answer changes nothing.\n");
    }
    text
}

/// The environment without MindRune's variables: the fixer's token and the lab's signing key
/// never reach an agent.
fn without_mindrune_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("MINDRUNE_") {
            command.env_remove(&name);
        }
    }
}

fn claude_attempt(
    program: &Path,
    act: &Act,
    limits: AgentLimits,
    refusal: Option<&Refusal>,
) -> Result<Attempt, String> {
    let tools = act.tools.join(",");
    let mut command = Command::new(program);
    command
        .arg("-p")
        .args(["--output-format", "json"])
        .arg("--json-schema")
        .arg(act.schema.to_string())
        .arg("--tools")
        .arg(&tools)
        .arg("--allowedTools")
        .arg(&tools)
        .args(["--permission-mode", "dontAsk"])
        .arg("--max-budget-usd")
        .arg(format!("{:.4}", limits.max_usd))
        .arg("--no-session-persistence")
        .arg("--strict-mcp-config")
        .args(["--settings", r#"{"disableAllHooks": true}"#])
        .current_dir(&act.workdir);
    for dir in &act.read_dirs {
        command.arg("--add-dir").arg(dir);
    }
    without_mindrune_env(&mut command);
    let started = Instant::now();
    let done = run_bounded(
        command,
        Some(prompt(act, refusal).into_bytes()),
        true,
        Limits {
            timeout: limits.timeout,
            max_output: MAX_AGENT_OUTPUT,
        },
    )
    .map_err(|err| {
        format!(
            "cannot start Claude Code ({}) for the {} act: {err}; install it (npm install -g @anthropic-ai/claude-code) or name another agent",
            program.display(),
            act.name
        )
    })?;
    let duration = started.elapsed();
    if done.timed_out {
        return Err(format!(
            "Claude Code did not answer the {} act within {} s; it was stopped",
            act.name,
            limits.timeout.as_secs()
        ));
    }
    if done.overflowed {
        return Err(format!(
            "Claude Code printed more than {MAX_AGENT_OUTPUT} bytes for the {} act",
            act.name
        ));
    }
    let stdout = String::from_utf8_lossy(&done.stdout);
    let result: Value = serde_json::from_str(stdout.trim()).map_err(|err| {
        format!(
            "Claude Code's output for the {} act is not its JSON result ({err}; exit {}): {}{}",
            act.name,
            done.status
                .and_then(|s| s.code())
                .map_or("none".into(), |c| c.to_string()),
            clip(&stdout),
            clip(&String::from_utf8_lossy(&done.stderr))
        )
    })?;
    parse_claude_result(&result, duration, &act.name)
}

/// Reads Claude Code's `--output-format json` result object.
pub(crate) fn parse_claude_result(
    result: &Value,
    duration: Duration,
    act: &str,
) -> Result<Attempt, String> {
    let cost_usd = result.get("total_cost_usd").and_then(Value::as_f64);
    let turns = result.get("num_turns").and_then(Value::as_u64);
    let denied = result
        .get("permission_denials")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|denial| {
            denial
                .get("tool_name")
                .and_then(Value::as_str)
                .unwrap_or("a tool")
                .to_string()
        })
        .collect();
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
    let is_error = result.get("is_error").and_then(Value::as_bool) == Some(true);
    if subtype == "error_max_budget_usd" {
        return Err(format!(
            "Claude Code spent the {act} act's budget (${:.4}) before answering",
            cost_usd.unwrap_or(0.0)
        ));
    }
    if is_error || (subtype != "success" && !subtype.is_empty()) {
        let said = result
            .get("result")
            .and_then(Value::as_str)
            .or_else(|| {
                result
                    .get("errors")
                    .and_then(|e| e.get(0))
                    .and_then(Value::as_str)
            })
            .unwrap_or("");
        return Err(format!(
            "Claude Code ended the {act} act with an error ({subtype}): {}",
            clip(said)
        ));
    }
    let answer = result.get("structured_output").cloned();
    let why_none = answer.is_none().then(|| {
        format!(
            "you ended without calling the StructuredOutput tool (your last words: {})",
            clip(result.get("result").and_then(Value::as_str).unwrap_or(""))
        )
    });
    Ok(Attempt {
        answer,
        cost_usd,
        duration,
        turns,
        why_none,
        denied,
    })
}

fn command_attempt(
    line: &str,
    act: &Act,
    limits: AgentLimits,
    refusal: Option<&Refusal>,
) -> Result<Attempt, String> {
    let mut command = Command::new("sh");
    command.arg("-c").arg(line).current_dir(&act.workdir);
    without_mindrune_env(&mut command);
    command.env("MINDRUNE_AGENT_ACT", &act.name);
    for (name, value) in &act.command_env {
        command.env(name, value);
    }
    let mut request = act.request.clone();
    if let (Some(refusal), Some(object)) = (refusal, request.as_object_mut()) {
        object.insert(
            "refused".into(),
            json!({"answer": refusal.answer, "error": refusal.error}),
        );
    }
    let started = Instant::now();
    let done = run_bounded(
        command,
        Some(serde_json::to_vec(&request).unwrap_or_default()),
        false,
        Limits {
            timeout: limits.timeout,
            max_output: MAX_AGENT_OUTPUT,
        },
    )
    .map_err(|err| format!("cannot start the agent command {line:?}: {err}"))?;
    if done.timed_out {
        return Err(format!(
            "the agent command did not answer the {} act within {} s",
            act.name,
            limits.timeout.as_secs()
        ));
    }
    if done.overflowed {
        return Err(format!(
            "the agent's answer to the {} act is larger than {MAX_AGENT_OUTPUT} bytes",
            act.name
        ));
    }
    match done.status {
        Some(status) if status.success() => {}
        Some(status) => {
            return Err(format!(
                "the agent command failed on the {} act ({status})",
                act.name
            ));
        }
        None => {
            return Err(format!(
                "the agent command was stopped on the {} act",
                act.name
            ));
        }
    }
    let text = String::from_utf8_lossy(&done.stdout);
    let (answer, why_none) = if text.trim().is_empty() {
        (None, None)
    } else {
        match serde_json::from_str(text.trim()) {
            Ok(value) => (Some(value), None),
            Err(err) => (None, Some(format!("the answer is not JSON: {err}"))),
        }
    };
    Ok(Attempt {
        answer,
        cost_usd: None,
        duration: started.elapsed(),
        turns: None,
        why_none,
        denied: Vec::new(),
    })
}

/// At most 400 characters of `text`, for a message.
fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(400) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// One line on what an act's attempts cost, for a log.
pub fn attempts_line(attempts: &[Attempt]) -> String {
    let seconds: f64 = attempts.iter().map(|a| a.duration.as_secs_f64()).sum();
    let turns: u64 = attempts.iter().filter_map(|a| a.turns).sum();
    let costed = attempts.iter().any(|a| a.cost_usd.is_some());
    let mut line = format!(
        "{} attempt{}, {seconds:.1} s",
        attempts.len(),
        if attempts.len() == 1 { "" } else { "s" }
    );
    if turns > 0 {
        line.push_str(&format!(", {turns} model turns"));
    }
    if costed {
        line.push_str(&format!(", ${:.4}", total_cost(attempts)));
    }
    let denied: Vec<&str> = attempts
        .iter()
        .flat_map(|a| a.denied.iter().map(String::as_str))
        .collect();
    if !denied.is_empty() {
        line.push_str(&format!(", denied: {}", denied.join(", ")));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn act(dir: &Path) -> Act {
        Act {
            name: "test-act".into(),
            instructions: "Answer.".into(),
            request: json!({"question": 1}),
            schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"], "additionalProperties": false}),
            workdir: dir.to_path_buf(),
            read_dirs: Vec::new(),
            tools: READ_ONLY_TOOLS.iter().map(|t| t.to_string()).collect(),
            limits: AgentLimits {
                timeout: Duration::from_secs(20),
                max_usd: 1.0,
            },
            command_env: Vec::new(),
        }
    }

    fn command(line: &str) -> Backend {
        Backend::Command {
            command: line.to_string(),
        }
    }

    #[test]
    fn an_answer_that_meets_the_schema_and_the_check_is_admitted_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let answered = run(&command(r#"echo '{"n": 3}'"#), &act(dir.path()), |answer| {
            Ok(answer["n"].as_i64().unwrap())
        })
        .unwrap();
        assert_eq!(answered.value, 3);
        assert_eq!(answered.attempts.len(), 1);
    }

    #[test]
    fn a_refused_answer_is_asked_again_once_with_the_refusal_in_the_request() {
        let dir = tempfile::tempdir().unwrap();
        // The first answer breaks the schema; the second, seeing `refused`, is right.
        let line = r#"if grep -q refused; then echo '{"n": 4}'; else echo '{"n": "four"}'; fi"#;
        let answered = run(&command(line), &act(dir.path()), |answer| {
            Ok(answer["n"].as_i64().unwrap())
        })
        .unwrap();
        assert_eq!(answered.value, 4);
        assert_eq!(answered.attempts.len(), 2);
    }

    #[test]
    fn a_second_refusal_is_a_failure_naming_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = run(&command(r#"echo '{"n": 5}'"#), &act(dir.path()), |_| {
            Err::<(), _>("five is not allowed".to_string())
        })
        .unwrap_err();
        match err {
            AgentFailure::Refused {
                error, attempts, ..
            } => {
                assert_eq!(error, "five is not allowed");
                assert_eq!(attempts.len(), 2);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_command_is_told_its_act_in_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let line = r#"echo "{\"n\": ${#MINDRUNE_AGENT_ACT}${MINDRUNE_LAB_ACT}}""#;
        let mut act = act(dir.path());
        act.command_env = vec![("MINDRUNE_LAB_ACT".into(), "7".into())];
        // "test-act" is 8 characters long; the lab's own variable follows it.
        let answered = run(&command(line), &act, |answer| {
            Ok(answer["n"].as_i64().unwrap())
        })
        .unwrap();
        assert_eq!(answered.value, 87);
    }

    #[test]
    fn claude_code_s_result_object_gives_the_structured_output_and_its_cost() {
        let result = json!({"type": "result", "subtype": "success", "is_error": false,
            "num_turns": 3, "result": "{\"a\":\"ok\"}", "total_cost_usd": 0.00035,
            "permission_denials": [], "structured_output": {"a": "ok"}});
        let attempt = parse_claude_result(&result, Duration::from_secs(1), "x").unwrap();
        assert_eq!(attempt.answer, Some(json!({"a": "ok"})));
        assert_eq!(attempt.cost_usd, Some(0.00035));
        assert_eq!(attempt.turns, Some(3));
        let without = json!({"type": "result", "subtype": "success", "is_error": false,
            "result": "Done.", "total_cost_usd": 0.0001});
        let attempt = parse_claude_result(&without, Duration::from_secs(1), "x").unwrap();
        assert!(attempt.answer.is_none());
        assert!(attempt.why_none.unwrap().contains("Done."));
        let spent = json!({"type": "result", "subtype": "error_max_budget_usd", "is_error": true,
            "total_cost_usd": 0.5});
        assert!(
            parse_claude_result(&spent, Duration::from_secs(1), "x")
                .unwrap_err()
                .contains("budget")
        );
    }
}
