//! What the turns a skill was used in cost, as the host reports it: for `playbook_record`.
//!
//! A read of a skill names the record of its turn when the host says where it is (`turn`). That
//! record is the host's own file, so MindRune reads what the host wrote into it and invents
//! nothing: a turn whose record says nothing about cost is counted as not reported. Two shapes
//! are understood:
//!
//! - JSON lines with the model API's `usage` (`input_tokens`, `output_tokens`,
//!   `cache_creation_input_tokens`, `cache_read_input_tokens`), at the top level or under
//!   `message`, and `tool_use` content blocks: Claude Code's transcript. Claude Code writes one
//!   line per content block, repeating the message's `id` and `usage`, so a message is counted
//!   once by its id, and a tool call once by its id.
//! - A host's own summary: a JSON object (the whole file or one line) with `tokens` and/or
//!   `tool_calls` numbers.
//!
//! A record that is missing, unreadable, or larger than [`MAX_RECORD_BYTES`] is not reported.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

/// The most of a turn record read: a day-long transcript fits many times over.
pub(crate) const MAX_RECORD_BYTES: u64 = 32 * 1024 * 1024;

/// What one turn cost, as far as its record says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnCost {
    pub tokens: Option<u64>,
    pub tool_calls: Option<u64>,
}

/// What the turns of one skill cost together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Turns whose record reported something.
    pub reported: usize,
    pub tokens: u64,
    /// Turns that reported tokens.
    pub token_turns: usize,
    pub tool_calls: u64,
    /// Turns that reported tool calls.
    pub tool_call_turns: usize,
}

impl Cost {
    /// One line for the record, given how many distinct turns the skill was read in.
    pub(crate) fn render(&self, turns: usize) -> String {
        if self.reported == 0 {
            return format!(
                "cost: not reported by the host for any of its {turns} turns (a turn record with token usage or tool calls, such as Claude Code's transcript, gives it)"
            );
        }
        let mut out = format!(
            "cost: {} of {turns} turns reported by the host:",
            self.reported
        );
        let mut parts = Vec::new();
        if self.token_turns > 0 {
            parts.push(format!(
                "{} tokens ({:.0} a turn)",
                self.tokens,
                self.tokens as f64 / self.token_turns as f64
            ));
        }
        if self.tool_call_turns > 0 {
            parts.push(format!(
                "{} tool calls ({:.1} a turn)",
                self.tool_calls,
                self.tool_calls as f64 / self.tool_call_turns as f64
            ));
        }
        let _ = write!(out, " {}", parts.join(", "));
        out
    }
}

/// The cost of the turns whose records are at `turns` (as the host named them; a relative one
/// is taken from the workspace, as a report's `turn` is).
pub(crate) fn of_turns<'a>(turns: impl IntoIterator<Item = &'a str>, workspace: &Path) -> Cost {
    let mut cost = Cost::default();
    for turn in turns {
        let path = workspace.join(turn);
        let Some(turn) = read_record(&path).as_deref().and_then(parse) else {
            continue;
        };
        cost.reported += 1;
        if let Some(tokens) = turn.tokens {
            cost.tokens += tokens;
            cost.token_turns += 1;
        }
        if let Some(calls) = turn.tool_calls {
            cost.tool_calls += calls;
            cost.tool_call_turns += 1;
        }
    }
    cost
}

fn read_record(path: &Path) -> Option<String> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_RECORD_BYTES).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What a turn record says its turn cost; `None` when it says nothing about cost.
pub fn parse(text: &str) -> Option<TurnCost> {
    let mut tokens: Option<u64> = None;
    let mut calls: Option<u64> = None;
    let mut messages = HashSet::new();
    let mut tool_uses = HashSet::new();
    let add = |slot: &mut Option<u64>, n: u64| *slot = Some(slot.unwrap_or(0).saturating_add(n));
    let whole = serde_json::from_str::<Value>(text).ok();
    let values: Vec<Value> = match whole {
        Some(value @ Value::Object(_)) => vec![value],
        _ => text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
            .filter(Value::is_object)
            .collect(),
    };
    for value in &values {
        if let Some(n) = value.get("tokens").and_then(Value::as_u64) {
            add(&mut tokens, n);
        }
        if let Some(n) = value.get("tool_calls").and_then(Value::as_u64) {
            add(&mut calls, n);
        }
        let message = value.get("message").unwrap_or(value);
        if let Some(usage) = message.get("usage").and_then(Value::as_object) {
            let id = message.get("id").and_then(Value::as_str);
            // A message repeated on several lines (one per content block) is counted once.
            if id.is_none_or(|id| messages.insert(id.to_string())) {
                let n: u64 = [
                    "input_tokens",
                    "output_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                ]
                .iter()
                .filter_map(|key| usage.get(*key).and_then(Value::as_u64))
                .fold(0, u64::saturating_add);
                add(&mut tokens, n);
            }
        }
        if let Some(Value::Array(blocks)) = message.get("content") {
            for block in blocks {
                if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let id = block.get("id").and_then(Value::as_str);
                if id.is_none_or(|id| tool_uses.insert(id.to_string())) {
                    add(&mut calls, 1);
                }
            }
        }
    }
    (tokens.is_some() || calls.is_some()).then_some(TurnCost {
        tokens,
        tool_calls: calls,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two assistant messages as Claude Code writes them: the first split over two lines (a
    /// text block, then a tool_use block), both carrying the same id and usage.
    const TRANSCRIPT: &str = r#"{"type":"user","message":{"role":"user","content":"write the weekly report"}}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"Reading the skill."}],"usage":{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":200,"output_tokens":40}}}
{"type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__mindrune__workspace_read","input":{}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":1000,"cache_read_input_tokens":200,"output_tokens":40}}}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"..."}]}}
{"type":"assistant","message":{"id":"msg_2","role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"Write","input":{}}],"usage":{"input_tokens":5,"cache_read_input_tokens":1250,"output_tokens":60}}}
"#;

    #[test]
    fn a_claude_code_transcript_counts_each_message_and_tool_call_once() {
        assert_eq!(
            parse(TRANSCRIPT),
            Some(TurnCost {
                tokens: Some(10 + 1000 + 200 + 40 + 5 + 1250 + 60),
                tool_calls: Some(2),
            })
        );
    }

    #[test]
    fn a_hosts_summary_object_is_read_and_prose_reports_nothing() {
        assert_eq!(
            parse(r#"{"tokens": 1200, "tool_calls": 7}"#),
            Some(TurnCost {
                tokens: Some(1200),
                tool_calls: Some(7),
            })
        );
        assert_eq!(parse("followed: 1 2\ncorrect step 2: …\n"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn the_record_line_says_how_many_turns_reported() {
        let cost = Cost {
            reported: 2,
            tokens: 3000,
            token_turns: 2,
            tool_calls: 5,
            tool_call_turns: 2,
        };
        assert_eq!(
            cost.render(3),
            "cost: 2 of 3 turns reported by the host: 3000 tokens (1500 a turn), 5 tool calls (2.5 a turn)"
        );
        assert!(
            Cost::default()
                .render(4)
                .starts_with("cost: not reported by the host for any of its 4 turns")
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,400}") {
            let _ = parse(&text);
        }
    }
}
