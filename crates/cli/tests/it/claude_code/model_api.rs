//! A stand-in for the model API on 127.0.0.1 that drives the real Claude Code headless.
//!
//! Claude Code reaches the model at `ANTHROPIC_BASE_URL`: a `HEAD /`, then one
//! `POST /v1/messages?beta=true` per step with `stream: true`, answered with server-sent
//! events (`message_start`, `content_block_*`, `message_delta`, `message_stop`). Each
//! conversation is scripted: its first user message names a script (`[[name]]`), and the
//! number of assistant turns already in the request says which step comes next. A subagent's
//! conversation starts with the prompt the `Agent` tool was given, so it names its own script.
//! Every request is kept, so a test can see what reached the model (a hook's context, a tool
//! result). Nothing here leaves loopback.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// More requests than any scripted story makes: past this the stand-in refuses, which ends the
/// session instead of letting a broken script loop.
const MAX_REQUESTS: usize = 400;

/// A step decided from the request: what the model was told so far (its prompt, the tool
/// results it got).
pub(crate) type DecideStep = Arc<dyn Fn(&Value) -> Step + Send + Sync>;

/// One scripted answer of the model.
#[derive(Clone)]
pub(crate) enum Step {
    /// Decided when the request arrives, from the request.
    Decide(DecideStep),
    /// Tool calls, each `(tool name, input)`, in one assistant turn.
    Tools(Vec<(String, Value)>),
    /// A final answer: the turn ends.
    Text(String),
    /// The API refuses the request (Claude Code ends the turn with `StopFailure`).
    Error { status: u16, message: String },
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Decide(_) => f.write_str("Decide(..)"),
            Step::Tools(calls) => f.debug_tuple("Tools").field(calls).finish(),
            Step::Text(text) => f.debug_tuple("Text").field(text).finish(),
            Step::Error { status, message } => f
                .debug_struct("Error")
                .field("status", status)
                .field("message", message)
                .finish(),
        }
    }
}

/// A step decided from the request when it arrives.
pub(crate) fn decide(step: impl Fn(&Value) -> Step + Send + Sync + 'static) -> Step {
    Step::Decide(Arc::new(step))
}

/// A tool call step of one call.
pub(crate) fn tool(name: &str, input: Value) -> Step {
    Step::Tools(vec![(name.to_string(), input)])
}

/// A `Bash` call.
pub(crate) fn bash(command: &str) -> Step {
    tool(
        "Bash",
        json!({"command": command, "description": "scripted"}),
    )
}

#[derive(Default)]
struct Shared {
    scripts: HashMap<String, Vec<Step>>,
    /// Scripts chosen by text in the first prompt, for a conversation MindRune starts itself
    /// (whose prompt names no `[[script]]`): the first whose text the prompt holds.
    by_text: Vec<(String, Vec<Step>)>,
    requests: Vec<Value>,
}

/// The running stand-in; it stops when the test process ends.
pub(crate) struct ModelApi {
    pub url: String,
    shared: Arc<Mutex<Shared>>,
}

impl ModelApi {
    pub(crate) fn start() -> ModelApi {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let state = state.clone();
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        ModelApi { url, shared }
    }

    /// Scripts the conversation whose first prompt holds `[[name]]`.
    pub(crate) fn script(&self, name: &str, steps: Vec<Step>) {
        self.shared
            .lock()
            .unwrap()
            .scripts
            .insert(name.to_string(), steps);
    }

    /// Scripts the conversations whose first prompt holds `text` (and names no `[[script]]`).
    pub(crate) fn script_when(&self, text: &str, steps: Vec<Step>) {
        self.shared
            .lock()
            .unwrap()
            .by_text
            .push((text.to_string(), steps));
    }

    /// Every request body received so far.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.shared.lock().unwrap().requests.clone()
    }
}

/// Serves one connection: requests until the client closes it.
fn serve(stream: TcpStream, state: &Mutex<Shared>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let (status, content_type, answer) = if request_line.starts_with("POST") {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            answer(&request, state)
        } else {
            (200, "text/plain", String::new())
        };
        let head = format!(
            "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nrequest-id: req_standin\r\n\r\n",
            if status == 200 { "OK" } else { "Error" },
            answer.len()
        );
        if writer.write_all(head.as_bytes()).is_err()
            || writer.write_all(answer.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// The text of a message's content (a string, or its text blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn answer(request: &Value, state: &Mutex<Shared>) -> (u16, &'static str, String) {
    let mut shared = state.lock().unwrap();
    shared.requests.push(request.clone());
    // A script that never ends its conversation would keep Claude Code asking forever.
    if shared.requests.len() > MAX_REQUESTS {
        return (
            400,
            "application/json",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "the stand-in's request budget is spent"}})
                .to_string(),
        );
    }
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let first_user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .map(|m| content_text(&m["content"]))
        .unwrap_or_default();
    let assistant_turns = messages.iter().filter(|m| m["role"] == "assistant").count();
    let script = first_user
        .split("[[")
        .skip(1)
        .find_map(|rest| {
            let name = rest.split("]]").next()?;
            shared
                .scripts
                .get(name)
                .map(|steps| (name.to_string(), steps))
        })
        .or_else(|| {
            shared
                .by_text
                .iter()
                .enumerate()
                .find(|(_, (text, _))| first_user.contains(text.as_str()))
                .map(|(i, (_, steps))| (format!("by_text_{i}"), steps))
        });
    // Requests of Claude Code's own (a title, a summary) carry no tools: a plain answer.
    let step: Option<(String, Step)> = match script {
        Some((name, steps)) if request.get("tools").is_some() => {
            steps.get(assistant_turns).cloned().map(|step| (name, step))
        }
        _ => None,
    };
    let model = request["model"].as_str().unwrap_or("claude-standin");
    // A decided step runs without the lock, and a panic in it (a test's check of what the
    // model was told) answers an error instead of poisoning every later request.
    drop(shared);
    let step = match step {
        Some((name, Step::Decide(decide))) => {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| decide(request))) {
                Ok(step) => Some((name, step)),
                Err(_) => Some((
                    name,
                    Step::Error {
                        status: 400,
                        message: "the stand-in's scripted step panicked".into(),
                    },
                )),
            }
        }
        other => other,
    };
    match step {
        Some((_, Step::Decide(_))) => (
            500,
            "application/json",
            json!({"type": "error", "error": {"type": "api_error", "message": "a decided step decided another decision"}})
                .to_string(),
        ),
        Some((_, Step::Error { status, message })) => (
            status,
            "application/json",
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})
                .to_string(),
        ),
        Some((name, Step::Tools(calls))) => {
            let blocks: Vec<(Value, Vec<Value>)> = calls
                .iter()
                .enumerate()
                .map(|(i, (tool, input))| {
                    (
                        json!({"type": "tool_use", "id": format!("toolu_{name}_{assistant_turns}_{i}"), "name": tool, "input": {}}),
                        vec![json!({"type": "input_json_delta", "partial_json": input.to_string()})],
                    )
                })
                .collect();
            (200, "text/event-stream", stream(model, &blocks, "tool_use"))
        }
        Some((_, Step::Text(text))) => (
            200,
            "text/event-stream",
            stream(model, &[text_block(&text)], "end_turn"),
        ),
        None => (
            200,
            "text/event-stream",
            stream(model, &[text_block("Done.")], "end_turn"),
        ),
    }
}

fn text_block(text: &str) -> (Value, Vec<Value>) {
    (
        json!({"type": "text", "text": ""}),
        vec![json!({"type": "text_delta", "text": text})],
    )
}

/// A whole streamed message: its blocks, each with its deltas.
///
/// Every message gets an id of its own: Claude Code joins consecutive assistant messages that
/// share an id into one, and the conversation would then never move past that step.
fn stream(model: &str, blocks: &[(Value, Vec<Value>)], stop_reason: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = format!("msg_standin_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
    let mut out = String::new();
    let mut event = |name: &str, data: Value| {
        out.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant",
               "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    for (index, (start, deltas)) in blocks.iter().enumerate() {
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        for delta in deltas {
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
    }
    event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null},
               "usage": {"output_tokens": 5}}),
    );
    event("message_stop", json!({"type": "message_stop"}));
    out
}
