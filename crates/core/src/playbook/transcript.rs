//! A host's transcript of a session, read into its turns and each turn's tool calls: Claude
//! Code's `transcript_path` file (what every hook is handed).
//!
//! The format, as the real Claude Code 2.1 writes it (`crates/core/tests/data/transcripts/`):
//! one JSON object a line; `type: "user"` lines hold the human's prompt (`message.content` a
//! string, or text blocks) or the results of tool calls (`tool_result` blocks); `type:
//! "assistant"` lines hold the model's content blocks, one block a line, `tool_use` blocks with
//! `id`, `name` and `input`; other types (`queue-operation`, `last-prompt`, `mode`, summaries)
//! carry no turn. Lines of a subagent (`isSidechain: true`) and the host's own notes
//! (`isMeta: true`) are not the assistant's turns. A resumed session appends to the same file.
//!
//! Like every parser of outside input here, it never fails: a line that is not JSON or not a
//! known shape is a diagnostic, and the rest is still read.

use serde_json::Value;

/// One turn: the prompt that started it and the tool calls made in it, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// 1-based, in the order of the transcript.
    pub number: usize,
    /// The prompt's text (its first line or so is what a human recognises).
    pub(crate) prompt: String,
    pub(crate) calls: Vec<ToolCall>,
}

/// One tool call of the assistant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolCall {
    pub(crate) name: String,
    pub(crate) input: Value,
}

/// A line that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    pub turns: Vec<Turn>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads a transcript. Tool calls before the first prompt (there are none in a real one) are
/// ignored; a tool call seen twice (the same `id`) counts once.
pub fn parse(text: &str) -> Transcript {
    let mut transcript = Transcript::default();
    let mut seen_ids = std::collections::HashSet::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(err) => {
                transcript.diagnostics.push(Diagnostic {
                    line: number,
                    message: format!("not JSON: {err}"),
                });
                continue;
            }
        };
        let flag = |name: &str| value.get(name).and_then(Value::as_bool) == Some(true);
        if flag("isSidechain") || flag("isMeta") {
            continue;
        }
        let content = value.get("message").and_then(|m| m.get("content"));
        match value.get("type").and_then(Value::as_str) {
            Some("user") => {
                if let Some(prompt) = content.and_then(prompt_text) {
                    transcript.turns.push(Turn {
                        number: transcript.turns.len() + 1,
                        prompt,
                        calls: Vec::new(),
                    });
                }
            }
            Some("assistant") => {
                let Some(blocks) = content.and_then(Value::as_array) else {
                    continue;
                };
                for block in blocks {
                    if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                        continue;
                    }
                    let Some(name) = block.get("name").and_then(Value::as_str) else {
                        transcript.diagnostics.push(Diagnostic {
                            line: number,
                            message: "a tool_use block without a name".into(),
                        });
                        continue;
                    };
                    if let Some(id) = block.get("id").and_then(Value::as_str)
                        && !seen_ids.insert(id.to_string())
                    {
                        continue;
                    }
                    if let Some(turn) = transcript.turns.last_mut() {
                        turn.calls.push(ToolCall {
                            name: name.to_string(),
                            input: block.get("input").cloned().unwrap_or(Value::Null),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    transcript
}

/// The text of a human's prompt: a string, or text blocks without any `tool_result` (a line
/// of tool results is the same turn going on).
fn prompt_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(blocks) => {
            if blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            {
                return None;
            }
            let texts: Vec<&str> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_claude_code_transcript_reads_into_turns_and_their_tool_calls() {
        let text = include_str!("../../tests/data/transcripts/two-turns.jsonl");
        let transcript = parse(text);
        assert!(
            transcript.diagnostics.is_empty(),
            "{:?}",
            transcript.diagnostics
        );
        let shapes: Vec<(String, Vec<&str>)> = transcript
            .turns
            .iter()
            .map(|t| {
                (
                    t.prompt.clone(),
                    t.calls.iter().map(|c| c.name.as_str()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shapes,
            [
                ("count my notes".to_string(), vec!["Bash", "Read", "Grep"]),
                (
                    "count my todo list".to_string(),
                    vec!["Bash", "Read", "Grep"]
                ),
            ]
        );
    }

    #[test]
    fn a_broken_line_is_a_diagnostic_and_the_rest_is_read() {
        let text = "{\"type\":\"user\",\"message\":{\"content\":\"hi\"}}\nnot json\n{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"Read\",\"input\":{}}]}}\n";
        let transcript = parse(text);
        assert_eq!(transcript.diagnostics.len(), 1);
        assert_eq!(transcript.diagnostics[0].line, 2);
        assert_eq!(transcript.turns[0].calls.len(), 1);
    }

    #[test]
    fn tool_results_and_a_subagent_s_lines_start_no_turn() {
        let text = concat!(
            "{\"type\":\"user\",\"message\":{\"content\":\"go\"}}\n",
            "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"a\",\"content\":\"x\"}]}}\n",
            "{\"type\":\"user\",\"isSidechain\":true,\"message\":{\"content\":\"sub\"}}\n",
            "{\"type\":\"user\",\"isMeta\":true,\"message\":{\"content\":\"note\"}}\n",
        );
        assert_eq!(parse(text).turns.len(), 1);
    }
}
