//! The observer: notices that the same multi-step work keeps being redone across the turns of
//! a session, from the host's transcript ([`crate::playbook::transcript`]). Deterministic, no model.
//!
//! A tool call's **step** is its tool and its arguments normalised as near-repeats of code are
//! ([`crate::near_repeat`]): what varies from one doing of the work to the next — numbers,
//! the contents of strings, paths — is left out, and what stays is the shape of the call. A
//! shell command keeps its words with every number as `<num>`, every quoted string as `<str>`
//! and every word with a `/` as `<path>`; a call with a `code` argument keeps the code's
//! near-repeat shape; any other call keeps the names of its arguments. Work is **redone** when
//! the same run of at least [`MIN_STEPS`] steps, in the same order, appears in at least
//! [`MIN_TURNS`] turns. The observer only suggests: the assistant decides.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::playbook::transcript::Turn;

/// The fewest steps that count as multi-step work.
pub const MIN_STEPS: usize = 3;
/// The fewest turns the same steps must appear in.
pub const MIN_TURNS: usize = 2;
/// The longest run of steps compared (a longer repeat is found as its first part).
pub const MAX_STEPS: usize = 12;
/// The most tool calls of one turn looked at (the first ones): bounds the work on a huge turn.
pub(crate) const MAX_CALLS_PER_TURN: usize = 400;

/// A run of steps redone across turns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// The steps, in order.
    pub steps: Vec<String>,
    /// The turns it appears in (1-based), in order.
    pub turns: Vec<usize>,
    /// What a suggestion of it is remembered by: `sequence:sha256:<hex>` of the steps.
    pub key: String,
}

/// The step of one tool call.
pub(crate) fn step(name: &str, input: &Value) -> String {
    let object = input.as_object();
    if let Some(command) = object
        .and_then(|o| o.get("command"))
        .and_then(Value::as_str)
    {
        return format!("{name}({})", shell_shape(command));
    }
    if let Some(code) = object.and_then(|o| o.get("code")).and_then(Value::as_str) {
        let shape = crate::near_repeat::shape(code)
            .map(|shape| shape.text().to_string())
            .unwrap_or_else(|| "<code>".to_string());
        return format!("{name}({shape})");
    }
    let mut keys: Vec<&str> = object
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    keys.sort_unstable();
    format!("{name}({})", keys.join(", "))
}

/// A shell command's words with its data left out.
fn shell_shape(command: &str) -> String {
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = command.chars().peekable();
    let flush = |word: &mut String, quoted: &mut bool, words: &mut Vec<String>| {
        if *quoted {
            words.push("<str>".into());
        } else if !word.is_empty() {
            words.push(normalise_word(word));
        }
        word.clear();
        *quoted = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                // A quoted string: its contents are data.
                for inner in chars.by_ref() {
                    if inner == c {
                        break;
                    }
                }
                quoted = true;
            }
            c if c.is_whitespace() => flush(&mut word, &mut quoted, &mut words),
            c => word.push(c),
        }
    }
    flush(&mut word, &mut quoted, &mut words);
    words.join(" ")
}

fn normalise_word(word: &str) -> String {
    if word.contains('/') {
        return "<path>".into();
    }
    let mut out = String::new();
    let mut in_number = false;
    for c in word.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push_str("<num>");
                in_number = true;
            }
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// The longest run of steps redone across turns, when one appears in the last turn: the work
/// that was just done again. Ties go to the run in the most turns, then the earliest.
pub fn redone_in_last_turn(turns: &[Turn]) -> Option<Repeat> {
    let last = turns.last()?.number;
    let mut seen: BTreeMap<Vec<String>, BTreeSet<usize>> = BTreeMap::new();
    for turn in turns {
        let steps: Vec<String> = turn
            .calls
            .iter()
            .take(MAX_CALLS_PER_TURN)
            .map(|call| step(&call.name, &call.input))
            .collect();
        for start in 0..steps.len() {
            for len in MIN_STEPS..=MAX_STEPS.min(steps.len() - start) {
                seen.entry(steps[start..start + len].to_vec())
                    .or_default()
                    .insert(turn.number);
            }
        }
    }
    let best = seen
        .into_iter()
        .filter(|(_, in_turns)| in_turns.len() >= MIN_TURNS && in_turns.contains(&last))
        .max_by(|(a_steps, a_turns), (b_steps, b_turns)| {
            a_steps
                .len()
                .cmp(&b_steps.len())
                .then(a_turns.len().cmp(&b_turns.len()))
                // The earliest first turn wins a tie: reversed, since max_by keeps the greatest.
                .then(b_turns.first().cmp(&a_turns.first()))
                .then(b_steps.cmp(a_steps))
        })?;
    let (steps, in_turns) = best;
    let key = format!(
        "sequence:{}",
        crate::digest::sha256(steps.join("\n").as_bytes())
    );
    Some(Repeat {
        steps,
        turns: in_turns.into_iter().collect(),
        key,
    })
}

/// The suggestion's text: the turns (with the start of each prompt) and the steps.
pub fn describe(repeat: &Repeat, turns: &[Turn]) -> String {
    let named: Vec<String> = repeat
        .turns
        .iter()
        .map(|number| {
            let prompt = turns
                .iter()
                .find(|t| t.number == *number)
                .map(|t| t.prompt.lines().next().unwrap_or("").trim().to_string())
                .unwrap_or_default();
            let prompt: String = prompt.chars().take(60).collect();
            format!("{number} (\"{prompt}\")")
        })
        .collect();
    format!(
        "the same {} steps were done in turns {} of this session: {} [{}]",
        repeat.steps.len(),
        named.join(", "),
        repeat.steps.join(" → "),
        repeat.key
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::transcript::{ToolCall, parse};
    use serde_json::json;

    fn turn(number: usize, calls: &[(&str, Value)]) -> Turn {
        Turn {
            number,
            prompt: format!("prompt {number}"),
            calls: calls
                .iter()
                .map(|(name, input)| ToolCall {
                    name: name.to_string(),
                    input: input.clone(),
                })
                .collect(),
        }
    }

    #[test]
    fn a_shell_command_s_numbers_strings_and_paths_are_left_out() {
        assert_eq!(
            step(
                "Bash",
                &json!({"command": "grep -n 'TODO 3' notes/a.md | head -20"})
            ),
            "Bash(grep -n <str> <path> | head -<num>)"
        );
        assert_eq!(
            step(
                "Bash",
                &json!({"command": "grep -n \"FIXME\" b.md | head -5"})
            ),
            "Bash(grep -n <str> b.md | head -<num>)"
        );
        assert_eq!(
            step("Read", &json!({"file_path": "/x/y", "limit": 3})),
            "Read(file_path, limit)"
        );
    }

    #[test]
    fn the_same_three_steps_in_two_turns_are_redone_and_two_steps_are_not() {
        let calls = [
            ("Bash", json!({"command": "wc -l /w/a.txt"})),
            ("Read", json!({"file_path": "/w/a.txt"})),
            ("Grep", json!({"pattern": "x", "path": "/w"})),
        ];
        let other = [
            ("Bash", json!({"command": "wc -l /w/b.txt"})),
            ("Read", json!({"file_path": "/w/b.txt"})),
            ("Grep", json!({"pattern": "y", "path": "/w"})),
        ];
        let repeat =
            redone_in_last_turn(&[turn(1, &calls), turn(2, &[]), turn(3, &other)]).unwrap();
        assert_eq!(repeat.turns, [1, 3]);
        assert_eq!(repeat.steps.len(), 3);
        let short = redone_in_last_turn(&[turn(1, &calls[..2]), turn(2, &other[..2])]);
        assert_eq!(short, None);
    }

    #[test]
    fn work_not_redone_in_the_last_turn_is_not_suggested_again() {
        let calls = [
            ("Bash", json!({"command": "ls"})),
            ("Read", json!({"file_path": "/a"})),
            ("Read", json!({"file_path": "/b"})),
        ];
        assert!(redone_in_last_turn(&[turn(1, &calls), turn(2, &calls), turn(3, &[])]).is_none());
    }

    #[test]
    fn the_real_transcript_s_two_turns_redo_the_same_three_steps() {
        let transcript = parse(include_str!("../../tests/data/transcripts/two-turns.jsonl"));
        let repeat = redone_in_last_turn(&transcript.turns).unwrap();
        assert_eq!(repeat.turns, [1, 2]);
        assert_eq!(
            repeat.steps,
            [
                "Bash(wc -l <path>)",
                "Read(file_path)",
                "Grep(path, pattern)"
            ]
        );
        let text = describe(&repeat, &transcript.turns);
        assert!(
            text.contains("turns 1 (\"count my notes\"), 2 (\"count my todo list\")"),
            "{text}"
        );
    }
}
