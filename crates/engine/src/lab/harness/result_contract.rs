//! Runx's admission of a graph's result producers, made before any step runs.
//!
//! Runx builds a graph's operator context before it executes the graph and refuses one whose
//! `result_from` names a step declaring no semantic output contract
//! (`runx-runtime/src/execution/operator_context.rs`, `validate_graph_result_contracts`). A
//! step declares one when it is:
//! * an approval (`run: {type: approval}`);
//! * an inline `run:` source with non-empty `outputs`, or whose step `artifacts` has a
//!   `wrap_as` or non-empty `named_emits`;
//! * a `tool:` step whose `artifacts` declare so, or, with no step `artifacts` at all, a tool
//!   whose own contract emits artifacts (every Runx native tool but `evidence.index_sources`
//!   and `evidence.verify_artifact`);
//! * a `skill:` step whose child runner declares `outputs` (a graph child: a `result_from`),
//!   whose step `artifacts` declare so, or, with no step `artifacts`, whose child runner's
//!   `artifacts` do.
//!
//! A sibling graph runner (`skill: .`) is judged first, at its own node path
//! (`entry.<step>.<its step>`). A child package in another folder is not read here: the
//! harness does not replay nested packages and fails such a step as unsupported.

use serde_json::{Map, Value};

/// The Runx native tools whose contract emits no artifact (`CapabilityArtifacts::None`).
const TOOLS_WITHOUT_ARTIFACTS: [&str; 2] = ["evidence.index_sources", "evidence.verify_artifact"];

/// Runx's refusal of the first result producer of `graph` without a semantic output contract,
/// in Runx's words; `runners` are the package's runners (for `skill: .` steps).
pub(super) fn refusal(graph: &Value, runners: Option<&Map<String, Value>>) -> Option<String> {
    let mut expanding = Vec::new();
    graph_refusal(graph, runners, "entry", &mut expanding)
}

/// [`refusal`] of the graph at `node` (Runx's node path). As Runx expands the steps first, a
/// sibling graph runner a step names is judged (at `<node>.<step>`) before this graph's
/// producers; `expanding` holds the sibling runners being judged, so a cycle ends.
fn graph_refusal(
    graph: &Value,
    runners: Option<&Map<String, Value>>,
    node: &str,
    expanding: &mut Vec<String>,
) -> Option<String> {
    let steps = graph.get("steps").and_then(Value::as_array)?;
    for step in steps {
        let (Some(id), Some(child)) = (
            step.get("id").and_then(Value::as_str),
            sibling_runner(step, runners),
        ) else {
            continue;
        };
        let name = step.get("runner").and_then(Value::as_str).unwrap_or("");
        if expanding.iter().any(|runner| runner == name) {
            continue;
        }
        if let Some(child_graph) = child.get("graph") {
            expanding.push(name.to_owned());
            let refused = graph_refusal(child_graph, runners, &format!("{node}.{id}"), expanding);
            expanding.pop();
            if refused.is_some() {
                return refused;
            }
        }
    }
    let result_from = graph.get("result_from").and_then(Value::as_array)?;
    result_from
        .iter()
        .filter_map(Value::as_str)
        .find(|id| {
            steps
                .iter()
                .find(|step| step.get("id").and_then(Value::as_str) == Some(id))
                .is_some_and(|step| !declares_result(step, runners))
        })
        .map(|id| {
            format!(
                "graph result producer '{node}.{id}' declares no semantic output contract; add \
                 run.outputs or artifacts.wrap_as/named_emits before execution"
            )
        })
}

/// The sibling runner a `skill: .` step names.
fn sibling_runner<'r>(step: &Value, runners: Option<&'r Map<String, Value>>) -> Option<&'r Value> {
    (step.get("skill").and_then(Value::as_str) == Some("."))
        .then(|| step.get("runner").and_then(Value::as_str))
        .flatten()
        .and_then(|name| runners?.get(name))
}

/// Runx's `declares_output_contract`: non-empty `outputs`, or artifacts with a `wrap_as` or
/// non-empty `named_emits`.
fn declares_output_contract(outputs: Option<&Value>, artifacts: Option<&Value>) -> bool {
    let non_empty = |value: Option<&Value>| {
        value
            .and_then(Value::as_object)
            .is_some_and(|map| !map.is_empty())
    };
    non_empty(outputs)
        || artifacts.is_some_and(|artifacts| {
            artifacts.get("wrap_as").is_some_and(|wrap| !wrap.is_null())
                || non_empty(artifacts.get("named_emits"))
        })
}

/// Whether `artifacts` is there at all (Runx: `step.definition.artifacts.is_none()`).
fn present(value: Option<&Value>) -> bool {
    value.is_some_and(|value| !value.is_null())
}

fn declares_result(step: &Value, runners: Option<&Map<String, Value>>) -> bool {
    let artifacts = step.get("artifacts");
    let step_artifact_output = declares_output_contract(None, artifacts);
    if let Some(run) = step.get("run") {
        let kind = match run {
            Value::String(kind) => Some(kind.as_str()),
            other => other.get("type").and_then(Value::as_str),
        };
        if kind == Some("approval") {
            return true;
        }
        return declares_output_contract(run.get("outputs"), artifacts);
    }
    if let Some(tool) = step.get("tool").and_then(Value::as_str) {
        return step_artifact_output
            || (!present(artifacts) && !TOOLS_WITHOUT_ARTIFACTS.contains(&tool));
    }
    if step.get("skill").is_some() {
        let Some(child) = sibling_runner(step, runners) else {
            // A child package outside this one is not replayed by the harness (it fails the
            // step as unsupported), so its contract is not judged here.
            return true;
        };
        let child_source_output = if child.get("type").and_then(Value::as_str) == Some("graph") {
            child
                .pointer("/graph/result_from")
                .and_then(Value::as_array)
                .is_some_and(|items| !items.is_empty())
        } else {
            declares_output_contract(child.get("outputs"), None)
        };
        return child_source_output
            || step_artifact_output
            || (!present(artifacts) && declares_output_contract(None, child.get("artifacts")));
    }
    false
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::refusal;

    fn graph(step: serde_json::Value) -> serde_json::Value {
        json!({ "result_from": ["s"], "steps": [step] })
    }

    #[test]
    fn a_sibling_graph_runner_is_judged_first_at_its_node_path() {
        // runx-cli 0.8.2 (3c8315b9), by hand: `graph result producer 'entry.sub.deep' …`.
        let runners = json!({
            "inner": { "type": "graph", "graph": { "result_from": ["deep"], "steps": [
                { "id": "deep", "run": { "type": "agent-task", "agent": "a", "task": "t" } },
            ] } },
            "loop": { "type": "graph", "graph": { "result_from": ["again"], "steps": [
                { "id": "again", "skill": ".", "runner": "loop" },
            ] } },
        });
        let step = json!({ "id": "sub", "skill": ".", "runner": "inner" });
        let refused = refusal(&graph(step), runners.as_object()).unwrap();
        assert!(
            refused.starts_with("graph result producer 'entry.sub.deep' declares"),
            "{refused}"
        );
        // A runner naming itself ends instead of recursing forever.
        let step = json!({ "id": "s", "skill": ".", "runner": "loop" });
        assert_eq!(refusal(&graph(step), runners.as_object()), None);
    }

    #[test]
    fn producers_with_a_contract_are_admitted_and_the_rest_refused_in_runx_words() {
        let runners = json!({
            "bare": { "type": "agent-task", "agent": "a", "task": "t" },
            "typed": { "type": "agent-task", "agent": "a", "task": "t", "outputs": { "n": "string" } },
            "wrapped": { "type": "cli-tool", "command": "node", "artifacts": { "wrap_as": "p" } },
        });
        let runners = runners.as_object();
        let agent = json!({ "type": "agent-task", "agent": "a", "task": "t" });
        let admitted = [
            json!({ "id": "s", "run": { "type": "approval" } }),
            json!({ "id": "s", "run": agent, "artifacts": { "wrap_as": "p" } }),
            json!({ "id": "s", "run": { "type": "agent-task", "outputs": { "n": "string" } } }),
            json!({ "id": "s", "tool": "fs.read" }),
            json!({ "id": "s", "tool": "evidence.index_sources", "artifacts": { "named_emits": { "a": "a" } } }),
            json!({ "id": "s", "skill": ".", "runner": "typed" }),
            json!({ "id": "s", "skill": ".", "runner": "wrapped" }),
        ];
        for step in admitted {
            assert_eq!(refusal(&graph(step.clone()), runners), None, "{step}");
        }
        let refused = [
            json!({ "id": "s", "run": agent }),
            json!({ "id": "s", "run": { "type": "agent-task", "outputs": {} } }),
            json!({ "id": "s", "tool": "evidence.index_sources" }),
            json!({ "id": "s", "tool": "fs.read", "artifacts": { "packets": {} } }),
            json!({ "id": "s", "skill": ".", "runner": "bare" }),
            json!({ "id": "s", "skill": ".", "runner": "wrapped", "artifacts": { "packets": {} } }),
        ];
        for step in refused {
            assert_eq!(
                refusal(&graph(step.clone()), runners).as_deref(),
                Some(
                    "graph result producer 'entry.s' declares no semantic output contract; add \
                     run.outputs or artifacts.wrap_as/named_emits before execution"
                ),
                "{step}"
            );
        }
    }
}
