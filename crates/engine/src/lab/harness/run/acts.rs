//! Agent acts and approvals, answered only by the case's caller: an agent act from
//! `caller.answers` under Runx's request id, an approval from `caller.approvals`.

use serde_json::{Map, Value, json};

use super::{End, Env, text};

/// Runx's refusal of an agent-mediated runner or step that declares no output.
pub(super) const AGENT_OUTPUTS_MISSING: &str =
    "agent-mediated runners must declare at least one output";

pub(super) fn agent_act(source: &Value, env: &Env<'_>) -> End {
    let task = text(source, "task").unwrap_or("agent");
    let request_id = format!("agent_task.{}.output", request_id_part(task));
    agent_act_as(source, &request_id, env)
}

/// The agent act of `source`, asked as `request_id`.
pub(super) fn agent_act_as(source: &Value, request_id: &str, env: &Env<'_>) -> End {
    // Runx builds the agent act's envelope before it asks for an answer, and refuses a runner
    // (or step) with no `outputs` there, whatever the caller answered.
    if source
        .get("outputs")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty)
    {
        return End::Failed(AGENT_OUTPUTS_MISSING.to_owned());
    }
    answer(request_id, env)
}

/// Runx's `normalize_request_id`: each run of characters other than ASCII letters, digits,
/// `_`, `.` and `-` becomes one `_`.
pub(super) fn request_id_part(value: &str) -> String {
    let mut normalized = String::new();
    let mut replaced = false;
    for character in value.chars() {
        if character.is_ascii_alphanumeric() || matches!(character, '_' | '.' | '-') {
            normalized.push(character);
            replaced = false;
        } else if !replaced {
            normalized.push('_');
            replaced = true;
        }
    }
    normalized
}

/// The caller's answer to the agent act `request_id`, as the act ends with it.
fn answer(request_id: &str, env: &Env<'_>) -> End {
    let Some(answer) = env
        .caller
        .get("answers")
        .and_then(|answers| answers.get(request_id))
    else {
        return End::NeedsAgent(format!("awaiting agent answer {request_id}"));
    };
    // An answer may close itself with another disposition (`closure.disposition`), as Runx
    // lets a replayed agent act defer or fail.
    match answer
        .pointer("/closure/disposition")
        .and_then(Value::as_str)
    {
        None | Some("closed") => End::Done(answer.clone()),
        Some("deferred") => End::NeedsAgent(format!("agent act {request_id} deferred")),
        Some("blocked") => {
            End::PolicyDenied(answer.clone(), format!("agent act {request_id} blocked"))
        }
        Some("declined") => End::Declined(format!("agent act {request_id} declined")),
        Some(other) => End::Failed(format!("agent act {request_id} closed with {other}")),
    }
}

pub(super) fn approval(source: &Value, gate: &str, env: &Env<'_>) -> End {
    let gate = text(source, "gate")
        .or_else(|| text(source, "id"))
        .unwrap_or(gate);
    // Human authority comes only from `caller.approvals`, the host-attested decisions; an
    // agent's `answers` never stand in for it (Runx: "approvals holds host-attested human
    // decisions"; an agent-authored approval must fail).
    let answer = env
        .caller
        .get("approvals")
        .and_then(|approvals| approvals.get(gate));
    let approved = match answer {
        None => return End::NeedsAgent(format!("awaiting approval {gate}")),
        Some(Value::Bool(value)) => *value,
        Some(_) => return End::Failed(format!("approval answer for {gate} is not a boolean")),
    };
    if approved {
        End::Done(json!({ "approval": { "gate": gate, "approved": true } }))
    } else {
        End::Declined(format!("approval {gate} was declined"))
    }
}
