//! A graph's steps, walked as Runx's graph engine walks them
//! (`runx-runtime/src/execution/runner/graph_engine.rs` over `runx-core`'s
//! `plan_sequential_graph_transition`):
//! * in order, each step whose `when` holds, up to the first that does not succeed;
//! * a step declaring `retry: {max_attempts: N}` is run again after a failed attempt while
//!   attempts remain (`retry_budget_remaining`), each attempt a row of the trace, so a step
//!   that fails once and then succeeds reads `a,a`; its outputs are its last attempt's. Only a
//!   run that failed is tried again: a step whose inputs do not resolve, that waits on an agent
//!   or is denied by policy stops the graph at once;
//! * contiguous `mode: fanout` steps of one `fanout_group` run as a group ([`super::fanout`]).

use serde_json::{Map, Value};

use super::super::{CaseStatus, CaseStop, StepTrace};
use super::{
    End, Env, Producer, RunxWords, failure_projection, fanout, materialize, object, resolve_path,
    run_step, split_edge,
};
use super::{json_equal, project, text};

/// What a graph's steps did: its status, result, each step's addressable outputs, the trace
/// and why it stopped.
pub(in crate::lab::harness) struct GraphRun {
    pub(in crate::lab::harness) status: CaseStatus,
    pub(in crate::lab::harness) output: Value,
    pub(in crate::lab::harness) outputs: Map<String, Value>,
    pub(in crate::lab::harness) steps: Vec<StepTrace>,
    pub(in crate::lab::harness) error: Option<String>,
    /// Set when Runx fails the run itself rather than sealing it (a fanout group's failed
    /// planning: `graph step '<id>' failed planning: …`).
    pub(in crate::lab::harness) stop: Option<CaseStop>,
    /// Runx's message for a run it failed, which is also its result's.
    pub(in crate::lab::harness) failure: Option<String>,
}

/// The walk so far: each step's addressable outputs, the steps skipped, the trace and the last
/// step that ran.
#[derive(Default)]
pub(super) struct Walk {
    pub(super) outputs: Map<String, Value>,
    pub(super) skipped: Vec<String>,
    pub(super) trail: Vec<StepTrace>,
    pub(super) last_ran: Option<String>,
}

impl Walk {
    pub(super) fn trace(&mut self, step_id: &str, status: &str) {
        self.trail.push(StepTrace {
            step_id: step_id.to_owned(),
            status: status.to_owned(),
        });
    }
}

/// Why the walk stopped before its end.
pub(super) struct Halt {
    pub(super) status: CaseStatus,
    pub(super) error: String,
    pub(super) stop: Option<CaseStop>,
    /// The message of Runx's result for a run it failed ([`super::failure_projection`]);
    /// `None` leaves the result to the steps that produced one.
    pub(super) result: Option<String>,
}

/// How one attempt of a step ended.
pub(super) struct Attempt {
    /// Its row in the trace: `succeeded`, `failed`, `needs_agent`, `policy_denied`, `declined`.
    pub(super) trace: &'static str,
    pub(super) status: CaseStatus,
    /// Why it did not succeed.
    pub(super) stop: Option<String>,
    /// False when the step never ran (its inputs did not resolve): no retry then.
    pub(super) ran: bool,
    /// The message of Runx's result should this failure end the run.
    pub(super) result: Option<String>,
}

impl Attempt {
    /// A run that failed, which a retry budget may run again.
    pub(super) fn retryable(&self) -> bool {
        self.ran && self.trace == "failed"
    }
}

/// How many attempts `step` may make (`retry.max_attempts`, else one).
pub(super) fn max_attempts(step: &Value) -> u64 {
    step.get("retry")
        .and_then(|retry| retry.get("max_attempts"))
        .and_then(Value::as_u64)
        .unwrap_or(1)
        .max(1)
}

/// Run `graph`'s steps in order on the runner `inputs`, up to the first that does not succeed,
/// and take its result from `result_from` (else the last step that ran).
pub(in crate::lab::harness) fn graph_steps(
    graph: &Value,
    inputs: &Map<String, Value>,
    env: &mut Env<'_>,
) -> GraphRun {
    let steps = graph
        .get("steps")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut walk = Walk::default();
    let mut halt = None;
    let mut index = 0;
    while index < steps.len() {
        let step = &steps[index];
        if let Some(group) = fanout::group_of(step) {
            let members = steps[index..]
                .iter()
                .take_while(|step| fanout::group_of(step) == Some(group))
                .count();
            let policy = fanout::Policy::of(graph, group);
            let branches = &steps[index..index + members];
            if let Err(stop) = fanout::run_group(&policy, branches, inputs, &mut walk, env) {
                halt = Some(stop);
                break;
            }
            index += members;
            continue;
        }
        index += 1;
        if let Err(stop) = serial_step(step, inputs, &mut walk, env) {
            halt = Some(stop);
            break;
        }
    }

    let result_from: Vec<String> = graph
        .get("result_from")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let producers: Vec<&String> = if result_from.is_empty() {
        walk.last_ran.iter().collect()
    } else {
        result_from.iter().collect()
    };
    let mut result = Map::new();
    let mut any = false;
    for producer in producers {
        if let Some(Value::Object(map)) = walk.outputs.get(producer.as_str()) {
            any = true;
            for (key, value) in map {
                result.insert(key.clone(), value.clone());
            }
        }
    }
    let (status, error, stop, failure) = match halt {
        Some(halt) => (halt.status, Some(halt.error), halt.stop, halt.result),
        None => (CaseStatus::Sealed, None, None, None),
    };
    // Runx's failed run answers with the error that ended it, whatever `result_from` holds.
    let output = match &failure {
        Some(message) => failure_projection(message),
        None if any => Value::Object(result),
        None => Value::Null,
    };
    GraphRun {
        status,
        output,
        failure,
        outputs: walk.outputs,
        steps: walk.trail,
        error,
        stop,
    }
}

/// The id of a graph step, or the halt Runx's loader would have refused it with.
pub(super) fn step_id(step: &Value) -> Result<String, Halt> {
    text(step, "id").map(str::to_owned).ok_or_else(|| Halt {
        status: CaseStatus::Failure,
        error: "a graph step has no id".to_owned(),
        stop: None,
        result: None,
    })
}

/// One step outside a fanout group: skipped by its `when`, else attempted until it succeeds or
/// its retry budget is spent.
fn serial_step(
    step: &Value,
    inputs: &Map<String, Value>,
    walk: &mut Walk,
    env: &mut Env<'_>,
) -> Result<(), Halt> {
    let step_id = step_id(step)?;
    if let Some(when) = step.get("when")
        && should_skip(when, &walk.outputs, &walk.skipped)
    {
        walk.skipped.push(step_id.clone());
        walk.trace(&step_id, "skipped");
        return Ok(());
    }
    let budget = max_attempts(step);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let attempt = attempt(step, &step_id, inputs, walk, env);
        let retry = attempt.retryable() && attempts < budget;
        let Some(message) = attempt.stop else {
            return Ok(());
        };
        if !retry {
            return Err(Halt {
                status: attempt.status,
                error: format!("step {step_id}: {message}"),
                stop: None,
                result: attempt.result,
            });
        }
    }
}

/// One attempt of `step`: its inputs, its source, its outputs and packets, traced; a succeeded
/// attempt's outputs are recorded in the walk.
pub(super) fn attempt(
    step: &Value,
    step_id: &str,
    inputs: &Map<String, Value>,
    walk: &mut Walk,
    env: &mut Env<'_>,
) -> Attempt {
    let step_inputs = match step_inputs(step, inputs, &walk.outputs) {
        Ok(step_inputs) => step_inputs,
        Err(message) => {
            walk.trace(step_id, "failed");
            return Attempt {
                trace: "failed",
                status: CaseStatus::Failure,
                result: Some(RunxWords::Step(message.clone()).message(step_id)),
                stop: Some(message),
                ran: false,
            };
        }
    };
    let (end, producer) = run_step(step, step_id, &step_inputs, env);
    walk.last_ran = Some(step_id.to_owned());
    let mut runx = end.runx_words();
    let (mut trace, mut status, claim, mut stop) = match end {
        End::Done(claim) => ("succeeded", CaseStatus::Sealed, Some(claim), None),
        End::PolicyDenied(claim, message) => (
            "policy_denied",
            CaseStatus::PolicyDenied,
            Some(claim),
            Some(message),
        ),
        End::NeedsAgent(message) => ("needs_agent", CaseStatus::NeedsAgent, None, Some(message)),
        End::Declined(message) => ("declined", CaseStatus::Failure, None, Some(message)),
        End::Failed(message) => ("failed", CaseStatus::Failure, None, Some(message)),
        End::FailedAs(failure) => ("failed", CaseStatus::Failure, None, Some(failure.message)),
    };
    if let Some(claim) = claim {
        let succeeded = trace == "succeeded";
        match verified_outputs(step, step_id, &claim, &producer, succeeded, env) {
            Ok(projected) => {
                walk.outputs
                    .insert(step_id.to_owned(), Value::Object(projected));
            }
            Err((message, words)) => {
                status = CaseStatus::Failure;
                trace = "failed";
                runx = Some(words);
                stop = Some(message);
            }
        }
    }
    walk.trace(step_id, trace);
    Attempt {
        trace,
        status,
        stop,
        ran: true,
        result: runx
            .filter(|_| trace == "failed")
            .map(|words| words.message(step_id)),
    }
}

/// A finished step's addressable outputs, checked in Runx's order: the declared outputs it
/// returned (`build_step_output_projection`), then, for a succeeded inline source, its whole
/// output against its declared `outputs` (`verified_runner_metadata_with_artifacts`), then its
/// packets. The first failure is in the Lab's words and Runx's: the first two are errors of
/// the step's handler, which Runx's engine words as an invalid run configuration of the step
/// (`RuntimeError::at_graph_step`), twice over where the handler already did.
fn verified_outputs(
    step: &Value,
    step_id: &str,
    claim: &Value,
    producer: &Producer,
    succeeded: bool,
    env: &Env<'_>,
) -> Result<Map<String, Value>, (String, RunxWords)> {
    let projected = project(step, claim, producer).map_err(|missing| {
        let words = format!(
            "graph step '{step_id}' has invalid run configuration: skill '{step_id}' failed: \
             {missing}"
        );
        (missing, RunxWords::Configuration(words))
    })?;
    if !succeeded {
        return Ok(projected);
    }
    if let Some(violation) = inline_contract_violation(step, producer, claim) {
        let words = format!("skill '{step_id}' failed: {violation}");
        return Err((violation, RunxWords::Configuration(words)));
    }
    env.packets
        .verify(step.get("artifacts").or(producer.artifacts()), claim)
        .map_err(|message| (message.clone(), RunxWords::Step(message)))?;
    Ok(projected)
}

/// Where an inline `run:` process or module declares `outputs`, its output must be exactly
/// their object, as a runner's is: Runx verifies an inline step's output as it verifies a
/// runner's. Agents answer through another contract, so they are not judged here.
fn inline_contract_violation(step: &Value, producer: &Producer, claim: &Value) -> Option<String> {
    if !matches!(producer, Producer::Source) {
        return None;
    }
    let run = step.get("run").filter(|run| run.is_object())?;
    let declared = run.get("outputs")?;
    if !matches!(text(run, "type"), Some("cli-tool" | "javascript")) {
        return None;
    }
    super::nested::output_contract_violation(Some(declared), claim)
        .map(|violation| format!("runner output contract violation at {violation}"))
}

pub(super) fn should_skip(when: &Value, outputs: &Map<String, Value>, skipped: &[String]) -> bool {
    let Some(field) = text(when, "field") else {
        return false;
    };
    let Some((source, path)) = field.split_once('.') else {
        return false;
    };
    if skipped.iter().any(|step| step == source) {
        return true;
    }
    let Some(value) = outputs
        .get(source)
        .and_then(Value::as_object)
        .and_then(|map| resolve_path(map, path))
    else {
        return false;
    };
    if let Some(expected) = when.get("equals") {
        !json_equal(value, expected)
    } else if let Some(disallowed) = when.get("not_equals") {
        json_equal(value, disallowed)
    } else {
        false
    }
}

pub(super) fn step_inputs(
    step: &Value,
    graph_inputs: &Map<String, Value>,
    outputs: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let context = object(step.get("context"));
    let mut inputs = graph_inputs.clone();
    for name in context.keys() {
        inputs.remove(name);
    }
    for (key, value) in object(step.get("inputs")) {
        match materialize(&value, graph_inputs) {
            Some(value) => {
                inputs.insert(key, value);
            }
            None => {
                inputs.remove(&key);
            }
        }
    }
    for (name, reference) in context {
        let reference = reference
            .as_str()
            .ok_or_else(|| format!("context {name} is not a <step>.<output> reference"))?;
        let (source, path) = split_edge(reference).ok_or_else(|| {
            format!("context {name} ({reference}) is not a <step>.<output> reference")
        })?;
        let produced = outputs
            .get(source)
            .and_then(Value::as_object)
            .ok_or_else(|| format!("context source step {source} has not run"))?;
        let value = resolve_path(produced, path).ok_or_else(|| {
            format!(
                "context {name} ({reference}) does not resolve; {source} has {:?}",
                produced.keys().collect::<Vec<_>>()
            )
        })?;
        inputs.insert(name, value.clone());
    }
    Ok(inputs)
}
