//! Reading the frontmatter's values: YAML errors placed on their line, each field checked
//! for its type, unknown keys named with the field they were likely meant as, and the steps.

use std::sync::LazyLock;

use regex::Regex;
use yaml_serde::{Mapping, Value};

use super::{
    Diagnostic, FIELDS, FRONTMATTER_LINE_OFFSET, ParseError, SkillFile, Status, Step, echo, tree,
};

pub(super) static YAML_POSITION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r" at position (\d+)").expect("position regex is valid"));
pub(super) static YAML_LOCATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r" at (?:line \d+ column \d+|position \d+)").expect("location regex is valid")
});

/// Turns yaml_serde's error into a [`ParseError`] whose line counts in the whole file.
pub(super) fn yaml_error(
    err: &yaml_serde::Error,
    fragment: &str,
    tree: Option<&tree::Node>,
) -> ParseError {
    let message = err.to_string();
    let yaml_line = err.location().map_or(1, |location| location.line().max(1));
    if message.contains("duplicate entry") {
        // yaml_serde places a duplicate at the start of its mapping; the scan knows the key's
        // own line.
        if let Some((line, key)) = tree.and_then(tree::first_duplicate) {
            return ParseError::DuplicateKey {
                line: line + FRONTMATTER_LINE_OFFSET,
                key: echo(&key),
            };
        }
        let key = message
            .split_once('"')
            .and_then(|(_, rest)| rest.rsplit_once('"'))
            .map_or("?", |(key, _)| key);
        return ParseError::DuplicateKey {
            line: yaml_line + FRONTMATTER_LINE_OFFSET,
            key: echo(key),
        };
    }
    // libyaml's reader names a byte position instead of a line.
    let line = YAML_POSITION
        .captures(&message)
        .and_then(|captures| captures[1].parse::<usize>().ok())
        .map_or(yaml_line, |position| {
            let end = position.min(fragment.len());
            fragment.as_bytes()[..end]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1
        });
    // The positions in the message count within the block, not the file, so they go.
    let message = YAML_LOCATION.replace_all(&message, "").into_owned();
    ParseError::NotYaml {
        line: line + FRONTMATTER_LINE_OFFSET,
        message,
    }
}

pub(super) fn has_merge_key(value: &Value) -> bool {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Mapping(mapping) => {
                for (key, value) in mapping {
                    if key.as_str() == Some("<<") {
                        return true;
                    }
                    stack.push(key);
                    stack.push(value);
                }
            }
            Value::Sequence(items) => stack.extend(items),
            Value::Tagged(tagged) => stack.push(&tagged.value),
            _ => {}
        }
    }
    false
}

/// What a value is, for a message.
pub(super) fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "empty",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// A key as the file wrote it, for unknown fields and step keys.
pub(super) fn key_text(key: &Value) -> String {
    match key {
        Value::String(text) => text.clone(),
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Sequence(_) => "(a list)".to_owned(),
        Value::Mapping(_) => "(a mapping)".to_owned(),
        Value::Tagged(_) => "(a tagged value)".to_owned(),
    }
}

/// The hint for an unknown field that is a known one spelled differently.
pub(super) fn did_you_mean(key: &str) -> Option<&'static str> {
    let folded = key.trim().to_lowercase().replace('_', "-");
    std::iter::once("name")
        .chain(FIELDS)
        .find(|field| field.replace('_', "-") == folded)
}

pub(super) fn read_fields(
    value: &Value,
    tree: Option<&tree::Node>,
) -> Result<(SkillFile, Vec<Diagnostic>), ParseError> {
    let empty = Mapping::new();
    let mapping = match value {
        Value::Null => &empty,
        Value::Mapping(mapping) => mapping,
        other => {
            let line = tree.map_or(1, tree::Node::line) + FRONTMATTER_LINE_OFFSET;
            return Err(ParseError::NotAMapping {
                line,
                found: describe(other),
            });
        }
    };
    // The scan's entries line up with yaml_serde's one for one (same order, no duplicates);
    // when they do not, lines are unknown rather than wrong.
    let entries = match tree {
        Some(tree::Node::Map { entries, .. }) if entries.len() == mapping.len() => Some(entries),
        _ => None,
    };
    let mut skill = SkillFile::default();
    let mut diagnostics = Vec::new();
    for (index, (key, value)) in mapping.iter().enumerate() {
        let entry = entries.map(|entries| &entries[index]);
        let line = entry.map_or(0, |entry| entry.line + FRONTMATTER_LINE_OFFSET);
        let Some(name) = key.as_str() else {
            diagnostics.push(Diagnostic {
                line,
                field: key_text(key),
                message: format!("unknown field `{}` is ignored", echo(&key_text(key))),
            });
            continue;
        };
        // Messages about this field; `steps` writes its own diagnostics, with step lines.
        let mut notes: Vec<String> = Vec::new();
        let mut wrong = |message: String| notes.push(message);
        match name {
            "name" => skill.name = read_text(name, value, &mut wrong),
            "trigger" => skill.trigger = read_text(name, value, &mut wrong),
            "use_when" => skill.use_when = read_text(name, value, &mut wrong),
            "not_when" => skill.not_when = read_text(name, value, &mut wrong),
            "expected_result" => skill.expected_result = read_text(name, value, &mut wrong),
            "preconditions" => skill.preconditions = read_list(name, value, &mut wrong),
            "forbidden-tools" => skill.forbidden_tools = read_list(name, value, &mut wrong),
            "failure_modes" => skill.failure_modes = read_list(name, value, &mut wrong),
            "evidence" => skill.evidence = read_list(name, value, &mut wrong),
            "steps" => {
                let items = entry.and_then(|entry| match &entry.value {
                    tree::Node::Seq { items, .. } => Some(items.as_slice()),
                    _ => None,
                });
                skill.steps = read_steps(value, items, line, &mut diagnostics)?;
            }
            "version" => {
                skill.version = match value {
                    Value::Null => None,
                    Value::Number(n) => n
                        .as_u64()
                        .and_then(|v| u32::try_from(v).ok())
                        .filter(|&v| v > 0),
                    _ => None,
                };
                if skill.version.is_none() && !value.is_null() {
                    wrong(format!(
                        "`version` is {}, but it must be a whole number from 1 up: the field is \
                         ignored (the runtime sets it)",
                        shown(value)
                    ));
                }
            }
            "status" => {
                skill.status = value.as_str().and_then(Status::parse);
                if skill.status.is_none() && !value.is_null() {
                    wrong(format!(
                        "`status` is {}, but it must be one of draft, active, retired, rejected: \
                         the field is ignored (the runtime sets it)",
                        shown(value)
                    ));
                }
            }
            _ => {
                let hint = did_you_mean(name)
                    .map(|field| format!(": did you mean `{field}`?"))
                    .unwrap_or_default();
                wrong(format!("unknown field `{}` is ignored{hint}", echo(name)));
            }
        }
        for message in notes {
            diagnostics.push(Diagnostic {
                line,
                field: name.to_owned(),
                message,
            });
        }
    }
    Ok((skill, diagnostics))
}

/// A value for a message: text and numbers as written (shortened), anything else by kind.
pub(super) fn shown(value: &Value) -> String {
    match value {
        Value::String(text) => format!("`{}`", echo(text)),
        Value::Number(n) => format!("`{n}`"),
        other => describe(other).to_owned(),
    }
}

pub(super) fn read_text(
    field: &str,
    value: &Value,
    wrong: &mut impl FnMut(String),
) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => {
            let fix = if matches!(other, Value::Number(_) | Value::Bool(_)) {
                "put it in quotes"
            } else {
                "write it as text"
            };
            wrong(format!(
                "`{field}` is {}, but it must be text: {fix}; until then the field is ignored",
                describe(other)
            ));
            None
        }
    }
}

pub(super) fn read_list(
    field: &str,
    value: &Value,
    wrong: &mut impl FnMut(String),
) -> Option<Vec<String>> {
    match value {
        // `field:` with nothing after it declares the list and leaves it empty, as `steps:` does.
        Value::Null => Some(Vec::new()),
        Value::String(text) => Some(vec![text.clone()]),
        Value::Sequence(items) => {
            let mut list = Vec::with_capacity(items.len());
            for (index, item) in items.iter().enumerate() {
                match item {
                    Value::String(text) => list.push(text.clone()),
                    other => {
                        wrong(format!(
                            "`{field}` must be a list of text, but item {} is {}: put it in \
                             quotes; until then the field is ignored",
                            index + 1,
                            describe(other)
                        ));
                        return None;
                    }
                }
            }
            Some(list)
        }
        other => {
            wrong(format!(
                "`{field}` is {}, but it must be a list of text (`- item` lines): the field is \
                 ignored",
                describe(other)
            ));
            None
        }
    }
}

pub(super) fn read_steps(
    value: &Value,
    items: Option<&[(usize, tree::Node)]>,
    field_line: usize,
    diagnostics: &mut Vec<Diagnostic>,
) -> Result<Option<Vec<Step>>, ParseError> {
    let values = match value {
        Value::Null => return Ok(Some(Vec::new())),
        Value::Sequence(values) => values,
        other => {
            diagnostics.push(Diagnostic {
                line: field_line,
                field: "steps".to_owned(),
                message: format!(
                    "`steps` is {}, but it must be a list of steps (`- do: …`): the field is \
                     ignored",
                    describe(other)
                ),
            });
            return Ok(None);
        }
    };
    let items = items.filter(|items| items.len() == values.len());
    let mut steps = Vec::with_capacity(values.len());
    for (index, value) in values.iter().enumerate() {
        let number = index + 1;
        let line = items.map_or(field_line, |items| items[index].0 + FRONTMATTER_LINE_OFFSET);
        let Value::Mapping(mapping) = value else {
            return Err(ParseError::StepNotMapping {
                line,
                step: number,
                found: describe(value),
            });
        };
        let mut step = Step {
            action: String::new(),
            tool: None,
            other_keys: Vec::new(),
            line,
        };
        let mut has_do = false;
        for (key, value) in mapping {
            match key.as_str() {
                Some(key @ ("do" | "tool")) => {
                    let text = match value {
                        Value::String(text) => Some(text.clone()),
                        Value::Null => None,
                        other => {
                            return Err(ParseError::StepValue {
                                line,
                                step: number,
                                key: if key == "do" { "do" } else { "tool" },
                                found: describe(other),
                            });
                        }
                    };
                    if key == "do" {
                        has_do = text.is_some();
                        step.action = text.unwrap_or_default();
                    } else {
                        step.tool = text;
                    }
                }
                _ => {
                    let text = key_text(key);
                    // Two keys can read the same once written out (`1` and `"1"`); each blocks
                    // alike, so one is kept.
                    if !step.other_keys.contains(&text) {
                        step.other_keys.push(text);
                    }
                }
            }
        }
        if !has_do || step.action.trim().is_empty() {
            diagnostics.push(Diagnostic {
                line,
                field: "steps".to_owned(),
                message: format!("step {number} has no `do`: say what the step does"),
            });
        }
        steps.push(step);
    }
    Ok(Some(steps))
}
