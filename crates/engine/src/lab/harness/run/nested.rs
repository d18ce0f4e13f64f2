//! A graph step naming a skill (`skill:`), run as Runx runs it (`runx-runtime/src/execution/
//! runner/step_handlers.rs`, `run_subskill_step` → `run_loaded_skill_step`):
//! * the runner is one of the package's (`skill: .`), the step's `runner` else the package's
//!   default (Runx's `select_step_runner`); a step naming another package's folder is refused,
//!   because a replay holds the package alone (see [`SKILL_OUTSIDE_PACKAGE`]);
//! * its inputs are the runner's declared inputs only, from the step's inputs else their
//!   defaults, a required one missing refused in Runx's words
//!   (`materialize_nested_runner_inputs`);
//! * a graph runner runs its steps on them and the step exposes every key of its result
//!   (`run_nested_graph_skill_step`, `adopt_nested_graph_result`), its own steps not in the
//!   trace; an agent runner is answered from `caller.answers` as `agent.<runner>.output`, an
//!   agent-task runner as `agent_task.<task>.output` (`agent_act_invocation_id`), the answer
//!   held to the runner's `outputs` (`verified_agent_metadata_with_artifacts`); any other
//!   source runs as the runner's own, its output held to the runner's `outputs`
//!   (`verified_runner_metadata_with_artifacts`); the runner's `outputs` and `artifacts`
//!   address the step's outputs where the step declares none (`build_step_output_projection`).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::super::{CaseStatus, local_tool};
use super::{
    End, Env, Failure, Producer, RunxWords, agent_act_as, graph_steps, input_spec, request_id_part,
    text,
};

/// What a replay's refusal of a step naming another package says.
pub(crate) const SKILL_OUTSIDE_PACKAGE: &str = "names a skill package outside the package";

/// The second line of a harness failure holding that refusal: where MindRune is stricter than
/// Runx (added where the failure is told, as for a cli-tool's file outside the package).
pub(crate) const SKILL_OUTSIDE_STRICTER: &str = "  Runx runs a step's skill from the package \
     folder it names beside this one and accepts it, MindRune is stricter: a replay holds the \
     package alone, so a package must carry the runners its graph runs (make it a runner of \
     this package)";

/// Run the `skill:` step `step` on its graph inputs `inputs`.
pub(super) fn run(step: &Value, inputs: &Map<String, Value>, env: &mut Env<'_>) -> (End, Producer) {
    let reference = text(step, "skill").unwrap_or("");
    if reference != "." && reference != "./" {
        let registry = ["registry:", "runx-registry:", "runx://skill/"]
            .iter()
            .any(|prefix| reference.starts_with(prefix));
        let message = if reference.starts_with('$') || registry {
            format!("skill {reference:?} is not a package folder; the harness replays none")
        } else {
            format!("skill {reference:?} {SKILL_OUTSIDE_PACKAGE}")
        };
        return (End::Failed(message), Producer::Source);
    }
    let profile = env.profile;
    let requested = text(step, "runner");
    let Some((name, runner)) = sibling(profile, requested) else {
        let message = mindrune_core::unsupported_runner(requested.unwrap_or("default"));
        return (End::Failed(message), Producer::Source);
    };
    let declared = runner.get("inputs").and_then(Value::as_object).map(|map| {
        Value::Object(
            map.iter()
                .map(|(key, spec)| (key.clone(), input_spec(profile, spec).clone()))
                .collect(),
        )
    });
    let inputs = match local_tool::declared_inputs("runner", declared.as_ref(), inputs) {
        Ok(inputs) => inputs,
        Err(message) => return (End::Failed(message), Producer::Source),
    };
    let kind = text(runner, "type").unwrap_or("");
    let producer = Producer::Runner {
        outputs: runner.get("outputs").cloned(),
        artifacts: runner.get("artifacts").cloned(),
    };
    match kind {
        "graph" => (nested_graph(runner, &inputs, env), Producer::NestedGraph),
        "agent" | "agent-task" => {
            let request_id = if kind == "agent" {
                format!("agent.{}.output", request_id_part(name))
            } else {
                let task = text(runner, "task").unwrap_or(name);
                format!("agent_task.{}.output", request_id_part(task))
            };
            let end = agent_act_as(runner, &request_id, env);
            (held_to_outputs(end, name, runner), producer)
        }
        _ => {
            let end = super::run_source(kind, runner, &inputs, env);
            (held_to_outputs(end, name, runner), producer)
        }
    }
}

/// A runner's successful output held to its declared `outputs` (an agent's answer without its
/// `closure`, Runx's `agent_output_contract_payload`), failing as Runx fails it.
fn held_to_outputs(end: End, name: &str, runner: &Value) -> End {
    let End::Done(output) = end else {
        return end;
    };
    let mut payload = output.clone();
    if let Some(fields) = payload.as_object_mut() {
        fields.remove("closure");
    }
    match output_contract_violation(runner.get("outputs"), &payload) {
        Some(violation) => End::Failed(format!(
            "skill '{name}' failed: runner output contract violation at {violation}"
        )),
        None => End::Done(output),
    }
}

/// The package's runner a `skill: .` step names (Runx's `select_step_runner`).
fn sibling<'p>(profile: &'p Value, requested: Option<&str>) -> Option<(&'p str, &'p Value)> {
    let runners = profile.get("runners").and_then(Value::as_object)?;
    super::result_contract::select_step_runner(runners, requested)
}

/// A graph runner's steps run on the nested runner's inputs; the step ends as the graph did,
/// its claim the graph's result.
fn nested_graph(runner: &Value, inputs: &Map<String, Value>, env: &mut Env<'_>) -> End {
    let graph = runner.get("graph").cloned().unwrap_or(Value::Null);
    let run = graph_steps(&graph, inputs, env);
    let error = run
        .error
        .unwrap_or_else(|| format!("nested graph ended {}", run.status.as_str()));
    match run.status {
        CaseStatus::Sealed => End::Done(run.output),
        CaseStatus::NeedsAgent => End::NeedsAgent(error),
        CaseStatus::PolicyDenied => End::PolicyDenied(run.output, error),
        _ => End::FailedAs(Failure {
            runx: RunxWords::Configuration(run.failure.unwrap_or_else(|| error.clone())),
            message: error,
            stdout: Value::Null,
        }),
    }
}

/// Runx's `validate_output_value` of a runner's output against its declared `outputs`: a
/// closed object of the declared fields, each required unless it says `required: false`;
/// `Some("<path>: <message>")` at the first violation, the path as Runx writes it (`$`,
/// `$.<field>` for a missing or unexpected field).
pub(super) fn output_contract_violation(outputs: Option<&Value>, output: &Value) -> Option<String> {
    let schema = output_value_schema(outputs);
    let validator = jsonschema::draft202012::options().build(&schema).ok()?;
    let error = validator.iter_errors(output).next()?;
    let nested = error.instance_path().to_string();
    let base = if nested.is_empty() {
        "$".to_owned()
    } else {
        format!("$.{}", nested.trim_start_matches('/'))
    };
    let path = match error.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => property
            .as_str()
            .map_or(base.clone(), |property| format!("{base}.{property}")),
        jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => unexpected
            .first()
            .map_or(base.clone(), |property| format!("{base}.{property}")),
        _ => base,
    };
    Some(format!("{path}: {error}"))
}

/// Runx's `output_value_schema`: an object, closed over the declared fields when any.
fn output_value_schema(outputs: Option<&Value>) -> Value {
    let Some(fields) = outputs
        .and_then(Value::as_object)
        .filter(|fields| !fields.is_empty())
    else {
        return json!({"type": "object"});
    };
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, field) in fields {
        let mut schema = field
            .get("schema")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let kind = field.as_str().or_else(|| text(field, "type"));
        if let Some(kind) = kind {
            schema.insert("type".to_owned(), Value::from(kind));
        }
        if let Some(values) = field.get("enum") {
            schema.insert("enum".to_owned(), values.clone());
        }
        if let Some(description) = field.get("description") {
            schema.insert("description".to_owned(), description.clone());
        }
        properties.insert(name.clone(), Value::Object(schema));
        if field.get("required").and_then(Value::as_bool) != Some(false) {
            required.push(Value::from(name.as_str()));
        }
    }
    let mut schema: BTreeMap<&str, Value> = BTreeMap::new();
    schema.insert("type", Value::from("object"));
    schema.insert("properties", Value::Object(properties));
    schema.insert("additionalProperties", Value::Bool(false));
    if !required.is_empty() {
        schema.insert("required", Value::Array(required));
    }
    json!(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runner_output_is_held_to_its_declared_outputs_in_runx_words() {
        let outputs = json!({"note": "string", "inputs": "object"});
        assert_eq!(
            output_contract_violation(Some(&outputs), &json!({"note": "n", "inputs": {}})),
            None
        );
        // OBSERVED from runx-cli 0.8.2 (`runx skill skills/gstep -i topic=x --json`).
        assert_eq!(
            output_contract_violation(
                Some(&json!({"note": "string", "env_extra": "string"})),
                &json!({"note": "n", "env_extra": null}),
            )
            .as_deref(),
            Some("$.env_extra: null is not of type \"string\"")
        );
        let extra = output_contract_violation(
            Some(&json!({"note": "string"})),
            &json!({"note": "n", "env_extra": "x", "inputs": {}}),
        )
        .unwrap_or_default();
        assert!(extra.starts_with("$.env_extra: "), "{extra}");
        // OBSERVED from runx-cli 0.8.2, a nested agent runner answered `{note, extra}`.
        assert_eq!(
            output_contract_violation(
                Some(&json!({"note": "string"})),
                &json!({"note": "d", "extra": 1})
            )
            .as_deref(),
            Some("$.extra: Additional properties are not allowed ('extra' was unexpected)")
        );
        let optional = json!({"note": {"type": "string", "required": false}});
        assert_eq!(output_contract_violation(Some(&optional), &json!({})), None);
    }
}
