//! What the default runner's execution closure reaches, as Runx's catalog semantics read it
//! (`runx-parser/src/skill/catalog.rs`: `default_runner_facts`, `observe_source`,
//! `source_readback_reaches_result`). The closure is the runner's source and, for a graph,
//! every step: its native tool, the nested skill it calls (a `skill: .` step with a `runner`
//! is followed into that sibling runner, once), and its inline `run:` source.
//!
//! The facts are structural, read from names and declarations, never from a run:
//!
//! - **mutation**: the runner says `mutating: true` (or `risk.mutating`, `runx.mutating`), a
//!   step says `mutation: true`, or a step calls `provider.mutate`, `data.append_event`,
//!   `http.execute`, `command.execute` or `receipt.attest`, or the source is an
//!   `external-adapter` or `thread-outbox-provider`;
//! - **adapter**: a step calls a native data tool (`data.append_event`, `data.read_events`,
//!   `data.read_projection`, `data.list_stream_heads`) or a network tool (`http.read`,
//!   `http.execute`, `web.fetch`), calls the `data-store` skill or a `provider-operation`
//!   skill, or a mutating step calls another package; or the source is an adapter;
//! - **agent**: the runner or an inline step is an `agent` or `agent-task` source;
//! - **provider readback**: an effect (`provider.read`, `provider.mutate`, `http.read`,
//!   `http.execute`, `web.fetch`, `command.execute`, a mutating or `provider-operation`
//!   skill call, or a sibling runner or inline source that has readback itself) reaches one
//!   of the graph's `result_from` steps, directly or through a later step that reads it (its
//!   `context`, its `when` field, or an input naming `<step>.<…>`); an adapter source has
//!   readback by itself;
//! - **planning name**, **mock**, **fixture**: words of the runner's name (`plan`, `draft`,
//!   `prepare`; `mock`, `demo`; `fixture`, `harness`, `test`), and for mock and fixture also
//!   of a called skill's reference (`mock`, `demo`, or its runner; `fixture`, `harness`).
//!
//! Along the way it records Runx's `observed` facts, the strings its `semantic_report` shows
//! on every structural diagnostic: `tool:<tool>` and `skill:<reference>` for each step,
//! `source:<type>` for a source that is neither a graph nor an agent act, `agent_act`,
//! `native_data_adapter_boundary`, `native_network_boundary`, `native_receipt_boundary`,
//! `provider_operation_boundary`, `external_mutation_boundary`, and of the whole runner
//! `planning_runner_name`, `declared_artifact`, `provider_boundary_reachable`,
//! `provider_readback_result_path`, `mock_path` (also when the skill's name has the word
//! `mock`) and `fixture_path`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::model::{ExecutionProfile, GraphStep, Runner, Source, StepTarget};

/// What the default runner's execution closure reaches.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct ClosureFacts {
    /// An effect's output reaches the runner's result.
    pub(super) provider_readback: bool,
    /// The closure mutates something.
    pub(super) mutation: bool,
    /// The closure crosses a provider, network or data adapter boundary.
    pub(super) adapter: bool,
    /// The closure holds an agent act.
    pub(super) agent: bool,
    /// The closure is a mock or demo.
    pub(super) mock: bool,
    /// The closure is a fixture or harness path.
    pub(super) fixture: bool,
    /// The runner's name says it plans, drafts or prepares.
    pub(super) planning_name: bool,
    /// The closure reaches a provider or network boundary.
    pub(super) provider_boundary: bool,
    /// Runx's `observed` strings, sorted.
    pub(super) observations: BTreeSet<String>,
}

/// Whether one of `words` is a segment of `value` split at every non-ASCII-alphanumeric
/// character (Runx's `contains_word`: case-sensitive, `test` is not in `tests`).
pub(super) fn contains_word(value: &str, words: &[&str]) -> bool {
    value
        .split(|character: char| !character.is_ascii_alphanumeric())
        .any(|segment| words.contains(&segment))
}

/// The facts of `runner`'s execution closure in `profile`, the package's skill being `skill`.
pub(super) fn default_runner_facts(
    skill: &str,
    profile: &ExecutionProfile,
    runner: &Runner,
) -> ClosureFacts {
    let mut facts = ClosureFacts {
        planning_name: contains_word(&runner.name, &["plan", "draft", "prepare"]),
        mock: contains_word(&runner.name, &["mock", "demo"]),
        fixture: contains_word(&runner.name, &["fixture", "harness", "test"]),
        agent: matches!(runner.source.source_type.as_str(), "agent" | "agent-task"),
        mutation: runner_mutating(&runner.json),
        ..ClosureFacts::default()
    };
    observe_source(profile, &runner.source, &mut facts, &mut BTreeSet::new());
    facts.provider_readback = readback_reaches_result(
        profile,
        &runner.source,
        &mut BTreeSet::from([runner.name.clone()]),
    );
    let artifact = runner.json.get("artifacts").is_some_and(|a| !a.is_null());
    let mock_path = facts.mock || contains_word(skill, &["mock"]);
    for (holds, observation) in [
        (facts.planning_name, "planning_runner_name"),
        (artifact, "declared_artifact"),
        (facts.agent, "agent_act"),
        (facts.provider_boundary, "provider_boundary_reachable"),
        (facts.provider_readback, "provider_readback_result_path"),
        (mock_path, "mock_path"),
        (facts.fixture, "fixture_path"),
    ] {
        if holds {
            facts.observations.insert(observation.to_owned());
        }
    }
    facts
}

/// The runner's `mutating`, else `risk.mutating`, else `runx.mutating` (a `null` counts as
/// absent), as Runx's runner governance reads it.
fn runner_mutating(runner: &Value) -> bool {
    fn present(value: Option<&Value>) -> Option<&Value> {
        value.filter(|value| !value.is_null())
    }
    present(runner.get("mutating"))
        .or_else(|| present(runner.get("risk").and_then(|risk| risk.get("mutating"))))
        .or_else(|| present(runner.get("runx").and_then(|runx| runx.get("mutating"))))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn is_sibling(reference: &str) -> bool {
    matches!(reference, "." | "./")
}

fn sibling<'a>(profile: &'a ExecutionProfile, name: &str) -> Option<&'a Runner> {
    profile.runners.iter().find(|runner| runner.name == name)
}

fn observe_tool(tool: &str, facts: &mut ClosureFacts) {
    facts.observations.insert(format!("tool:{tool}"));
    let boundary = match tool {
        "data.append_event"
        | "data.read_events"
        | "data.read_projection"
        | "data.list_stream_heads" => Some("native_data_adapter_boundary"),
        "http.read" | "http.execute" | "web.fetch" => Some("native_network_boundary"),
        "receipt.attest" => Some("native_receipt_boundary"),
        _ => None,
    };
    if let Some(boundary) = boundary {
        facts.observations.insert(boundary.to_owned());
    }
    if matches!(
        tool,
        "provider.mutate"
            | "data.append_event"
            | "http.execute"
            | "command.execute"
            | "receipt.attest"
    ) {
        facts.mutation = true;
    }
    if matches!(
        tool,
        "data.append_event"
            | "data.read_events"
            | "data.read_projection"
            | "data.list_stream_heads"
            | "http.read"
            | "http.execute"
            | "web.fetch"
    ) {
        facts.adapter = true;
    }
    if matches!(
        tool,
        "provider.read"
            | "provider.mutate"
            | "http.read"
            | "http.execute"
            | "web.fetch"
            | "command.execute"
    ) {
        facts.provider_boundary = true;
    }
}

fn observe_source(
    profile: &ExecutionProfile,
    source: &Source,
    facts: &mut ClosureFacts,
    visited: &mut BTreeSet<String>,
) {
    match source.source_type.as_str() {
        "graph" => {
            for step in source.graph.iter().flat_map(|graph| &graph.steps) {
                if let StepTarget::Tool(tool) = &step.target {
                    observe_tool(tool, facts);
                }
                facts.mutation |= step.mutation;
                match &step.target {
                    StepTarget::Skill(reference) => {
                        facts.observations.insert(format!("skill:{reference}"));
                        let last = reference.trim_end_matches('/').split('/').next_back();
                        if last == Some("data-store") {
                            facts.adapter = true;
                            facts
                                .observations
                                .insert("native_data_adapter_boundary".to_owned());
                        }
                        if reference.contains("provider-operation") {
                            facts.adapter = true;
                            facts.provider_boundary = true;
                            facts
                                .observations
                                .insert("provider_operation_boundary".to_owned());
                        }
                        facts.mock |= contains_word(reference, &["mock", "demo"])
                            || step
                                .runner
                                .as_deref()
                                .is_some_and(|runner| contains_word(runner, &["mock", "demo"]));
                        facts.fixture |= contains_word(reference, &["fixture", "harness"]);
                        if !is_sibling(reference) && step.mutation {
                            facts.adapter = true;
                            facts.provider_boundary = true;
                            facts
                                .observations
                                .insert("external_mutation_boundary".to_owned());
                        }
                        if is_sibling(reference)
                            && let Some(name) = step.runner.as_deref()
                            && visited.insert(name.to_owned())
                            && let Some(child) = sibling(profile, name)
                        {
                            observe_source(profile, &child.source, facts, visited);
                        }
                    }
                    StepTarget::Run(run) => observe_source(profile, run, facts, visited),
                    StepTarget::Tool(_) | StepTarget::Approval => {}
                }
            }
        }
        "external-adapter" | "thread-outbox-provider" => {
            facts.adapter = true;
            facts.mutation = true;
            facts.provider_boundary = true;
            facts
                .observations
                .insert(format!("source:{}", source.source_type));
        }
        "agent" | "agent-task" => {
            facts.agent = true;
            facts.observations.insert("agent_act".to_owned());
        }
        other => {
            facts.observations.insert(format!("source:{other}"));
        }
    }
}

fn readback_reaches_result(
    profile: &ExecutionProfile,
    source: &Source,
    visited: &mut BTreeSet<String>,
) -> bool {
    match source.source_type.as_str() {
        "external-adapter" | "thread-outbox-provider" => true,
        "graph" => source.graph.as_ref().is_some_and(|graph| {
            let mut effect_steps = BTreeSet::new();
            for step in &graph.steps {
                let direct_effect = match &step.target {
                    StepTarget::Tool(tool) => matches!(
                        tool.as_str(),
                        "provider.read"
                            | "provider.mutate"
                            | "http.read"
                            | "http.execute"
                            | "web.fetch"
                            | "command.execute"
                    ),
                    StepTarget::Skill(reference) if is_sibling(reference) => {
                        step.runner.as_deref().is_some_and(|name| {
                            if !visited.insert(name.to_owned()) {
                                return false;
                            }
                            let reached = sibling(profile, name).is_some_and(|child| {
                                readback_reaches_result(profile, &child.source, visited)
                            });
                            visited.remove(name);
                            reached
                        })
                    }
                    StepTarget::Skill(reference) => {
                        step.mutation || reference.contains("provider-operation")
                    }
                    StepTarget::Run(run) => readback_reaches_result(profile, run, visited),
                    StepTarget::Approval => false,
                };
                if direct_effect || step_reads_any(step, &effect_steps) {
                    effect_steps.insert(step.id.clone());
                }
            }
            graph
                .result_from
                .iter()
                .any(|result| effect_steps.contains(result))
        }),
        _ => false,
    }
}

/// Whether the step reads an output of one of `producers`: through its `context`, its
/// `when` field, or a string anywhere in its `inputs` whose part before the first `.` is
/// the producer's id.
fn step_reads_any(step: &GraphStep, producers: &BTreeSet<String>) -> bool {
    fn names_step(reference: &str, producers: &BTreeSet<String>) -> bool {
        reference
            .split_once('.')
            .is_some_and(|(step, _)| producers.contains(step))
    }
    fn value_names_step(value: &Value, producers: &BTreeSet<String>) -> bool {
        match value {
            Value::String(text) => names_step(text, producers),
            Value::Array(values) => values.iter().any(|v| value_names_step(v, producers)),
            Value::Object(values) => values.values().any(|v| value_names_step(v, producers)),
            _ => false,
        }
    }
    step.context
        .values()
        .any(|reference| names_step(reference, producers))
        || step
            .when
            .as_ref()
            .is_some_and(|when| names_step(&when.field, producers))
        || step
            .json
            .get("inputs")
            .is_some_and(|inputs| value_names_step(inputs, producers))
}
