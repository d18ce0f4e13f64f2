//! The proposal a `skill_create` call makes, read from the assistant's free JSON.

use mindrune_core::{SkillFile, Step};
use mindrune_engine::Proposal;
use serde_json::Value;

use super::args::CreateArgs;

/// The proposal a `skill_create` call makes. Steps are taken from free JSON objects so that a
/// key other than `do` and `tool` reaches the door's blocking check instead of being dropped.
pub(super) fn proposal(args: CreateArgs) -> Result<Proposal, String> {
    if args.version.is_some() || args.status.is_some() {
        return Err(
            "version and status are set by the runtime, never by whoever writes the skill; leave them out"
                .to_string(),
        );
    }
    let steps = match args.steps {
        None => None,
        Some(steps) => Some(
            steps
                .into_iter()
                .enumerate()
                .map(|(index, value)| step(index + 1, value))
                .collect::<Result<Vec<Step>, String>>()?,
        ),
    };
    let skill = SkillFile {
        name: Some(args.name.clone()),
        trigger: args.trigger,
        use_when: args.use_when,
        not_when: args.not_when,
        preconditions: args.preconditions,
        steps,
        forbidden_tools: args.forbidden_tools,
        expected_result: args.expected_result,
        failure_modes: args.failure_modes,
        evidence: args.evidence,
        version: None,
        status: None,
        body: args.procedure,
    };
    Ok(Proposal {
        name: args.name,
        skill,
        suggested_by: args.suggested_by.suggester(),
        accepted_as_done: args.accepted_as_done,
    })
}

/// One step from its JSON object.
pub(super) fn step(number: usize, value: Value) -> Result<Step, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "step {number} is {}, not an object; write each step as {{\"do\": \"…\", \"tool\": \"…\"}}",
            json_kind(&value)
        ));
    };
    let mut action = None;
    let mut tool = None;
    let mut other_keys = Vec::new();
    for (key, value) in object {
        match key.as_str() {
            "do" => match value {
                Value::String(text) => action = Some(text),
                other => {
                    return Err(format!(
                        "step {number}: do is {}, not text",
                        json_kind(&other)
                    ));
                }
            },
            "tool" => match value {
                Value::String(text) => tool = Some(text),
                Value::Null => {}
                other => {
                    return Err(format!(
                        "step {number}: tool is {}, not the name of one tool",
                        json_kind(&other)
                    ));
                }
            },
            _ => other_keys.push(key),
        }
    }
    if action.is_none() && other_keys.is_empty() {
        return Err(format!("step {number} has no do: say what the step does"));
    }
    Ok(Step {
        action: action.unwrap_or_default(),
        tool,
        other_keys,
        // Unknown until the door renders the file.
        line: 0,
    })
}

pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
