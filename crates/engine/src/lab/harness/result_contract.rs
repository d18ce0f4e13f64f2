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
//! A child runner that is a graph is judged first, at its own node path
//! (`entry.<step>.<its step>`), as Runx expands the steps before it judges the producers: a
//! sibling runner (`skill: .`), or the runner of the package in another folder the step
//! names, read from the replayed package's folder ([`Scope::dir`]). A `$input` or registry
//! reference, or a folder that does not load, is not judged here.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use super::super::inspect::load_nested;

/// Runx's native tools (`runx list tools` of runx-cli 0.8.2 at 3c8315b9, run by hand).
const RUNX_NATIVE_TOOLS: [&str; 47] = [
    "artifact.admit",
    "artifact.read",
    "cli.capture_help",
    "command.execute",
    "command.plan",
    "control.capture_harness_context",
    "control.prepare_handoff",
    "data.append_event",
    "data.compare",
    "data.digest",
    "data.list_stream_heads",
    "data.read_events",
    "data.read_projection",
    "evidence.index_sources",
    "evidence.verify_artifact",
    "external_receipt.verify",
    "fs.apply_bundle",
    "fs.read",
    "fs.read_bundle",
    "fs.write",
    "git.blob_digest",
    "git.current_branch",
    "git.diff_name_only",
    "git.status",
    "http.execute",
    "http.query",
    "http.read",
    "payment.charge_challenge",
    "payment.charge_plan",
    "payment.charge_price",
    "payment.charge_verification_request",
    "payment.invoice_plan",
    "payment.quote",
    "payment.refund_plan",
    "payment.reserve",
    "policy.lint",
    "provider.mutate",
    "provider.read",
    "receipt.attest",
    "receipt.prove",
    "receipt.query",
    "runx.skill.apply",
    "runx.skill.bind",
    "runx.skill.inspect",
    "runx.skill.plan",
    "runx.skill.validate",
    "web.fetch",
];

/// The Runx native tools whose contract emits no artifact (`CapabilityArtifacts::None`).
const TOOLS_WITHOUT_ARTIFACTS: [&str; 2] = ["evidence.index_sources", "evidence.verify_artifact"];

/// Where a graph's `skill:` steps are resolved: its package's runners and folder.
#[derive(Clone, Copy)]
pub(super) struct Scope<'a> {
    /// The package's runners, by name.
    pub(super) runners: Option<&'a Map<String, Value>>,
    /// The package's folder; `None` reads no other package.
    pub(super) dir: Option<&'a Path>,
}

impl<'a> Scope<'a> {
    /// The scope of the package whose profile (X.yaml as JSON) is `profile`, in `dir`.
    pub(super) fn of(profile: &'a Value, dir: Option<&'a Path>) -> Self {
        Scope {
            runners: profile.get("runners").and_then(Value::as_object),
            dir,
        }
    }
}

/// The runner a `skill:` step names, and the scope its own graph resolves in.
struct Child {
    runner: Value,
    runners: Map<String, Value>,
    dir: Option<PathBuf>,
}

/// Runx's refusal of `runner` (named `runner_name`, of the package `scope` describes) before
/// it runs, in Runx's words: a tool it names that resolves nowhere, or a graph result producer
/// without a semantic output contract.
pub(super) fn refusal(runner: &Value, runner_name: &str, scope: Scope<'_>) -> Option<String> {
    let mut expanding = vec![expansion_key(scope.dir, runner_name)];
    node_refusal(runner, scope, "entry", &mut expanding)
}

fn expansion_key(dir: Option<&Path>, runner: &str) -> String {
    format!(
        "{}#{runner}",
        dir.map(Path::display)
            .map(|d| d.to_string())
            .unwrap_or_default()
    )
}

/// [`refusal`] of the runner at `node` (Runx's node path), in Runx's order (the graph
/// runner's tools, then each step's child, then the graph's producers); `expanding` holds the runners being judged,
/// so a cycle ends.
fn node_refusal(
    runner: &Value,
    scope: Scope<'_>,
    node: &str,
    expanding: &mut Vec<String>,
) -> Option<String> {
    // Runx refuses the graph runner's unresolved tools; those of a child runner it was seen to
    // run regardless (runx-cli 0.8.2, by hand), so they are not judged here.
    if let Some(dir) = scope.dir.filter(|_| node == "entry")
        && let Some(tool) = tool_names(runner)
            .into_iter()
            .find(|tool| !tool_resolves(tool, dir))
    {
        return Some(format!(
            "operator context could not resolve required local tool '{tool}'"
        ));
    }
    let graph = runner.get("graph")?;
    let steps = graph.get("steps").and_then(Value::as_array)?;
    let children: Vec<Option<Child>> = steps.iter().map(|step| child(step, scope)).collect();
    for (step, child) in steps.iter().zip(&children) {
        let (Some(id), Some(child)) = (step.get("id").and_then(Value::as_str), child) else {
            continue;
        };
        let name = child
            .runner
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let key = expansion_key(child.dir.as_deref(), name);
        if expanding.contains(&key) {
            continue;
        }
        expanding.push(key);
        let child_scope = Scope {
            runners: Some(&child.runners),
            dir: child.dir.as_deref(),
        };
        let refused = node_refusal(
            &child.runner,
            child_scope,
            &format!("{node}.{id}"),
            expanding,
        );
        expanding.pop();
        if refused.is_some() {
            return refused;
        }
    }
    let result_from = graph.get("result_from").and_then(Value::as_array)?;
    result_from
        .iter()
        .filter_map(Value::as_str)
        .find(|id| {
            steps
                .iter()
                .zip(&children)
                .find(|(step, _)| step.get("id").and_then(Value::as_str) == Some(id))
                .is_some_and(|(step, child)| !declares_result(step, child.as_ref()))
        })
        .map(|id| {
            format!(
                "graph result producer '{node}.{id}' declares no semantic output contract; add \
                 run.outputs or artifacts.wrap_as/named_emits before execution"
            )
        })
}

/// Runx's `referenced_tools` as it was seen to refuse them: each graph step's `tool` and
/// `allowed_tools`, in name order (a runner's own `allowed_tools` naming an unknown tool ran
/// regardless, runx-cli 0.8.2 by hand).
fn tool_names(runner: &Value) -> BTreeSet<&str> {
    let mut names = BTreeSet::new();
    let steps = runner.pointer("/graph/steps").and_then(Value::as_array);
    for step in steps.into_iter().flatten() {
        names.extend(strings(step.get("allowed_tools")));
        names.extend(step.get("tool").and_then(Value::as_str));
    }
    names
}

/// The strings of a JSON array (none when it is not one).
fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Whether Runx finds `tool` for a package in `dir`: one of its native tools, else a local
/// manifest (`resolve_local_tool`): the path the name spells from the package folder, or
/// `<segments>/manifest.json` under `RUNX_TOOL_ROOTS`, a `tools` folder or a `.runx/tools`
/// folder. Every ancestor's folders are looked in (a superset of Runx's roots, which end at
/// its workspace root), so a tool is refused only where Runx cannot find it either; a name
/// Runx refuses otherwise (an absolute or `..` path) is left to the step.
fn tool_resolves(tool: &str, dir: &Path) -> bool {
    if RUNX_NATIVE_TOOLS.contains(&tool) {
        return true;
    }
    let candidate = Path::new(tool);
    if candidate.is_absolute() || candidate.components().any(|c| c == Component::ParentDir) {
        return true;
    }
    let explicit = dir.join(candidate);
    if explicit.is_file() || explicit.join("manifest.json").is_file() {
        return true;
    }
    let segments: PathBuf = tool.split('.').filter(|s| !s.is_empty()).collect();
    if segments.components().count() < 2 {
        return false;
    }
    let configured = std::env::var_os("RUNX_TOOL_ROOTS")
        .map(|roots| std::env::split_paths(&roots).collect::<Vec<_>>())
        .unwrap_or_default();
    let ancestors = dir
        .ancestors()
        .flat_map(|ancestor| [ancestor.join("tools"), ancestor.join(".runx/tools")]);
    configured
        .into_iter()
        .chain(ancestors)
        .any(|root| root.join(&segments).join("manifest.json").exists())
}

/// The runner a `skill:` step names: a sibling (`.`), or that of the package in the folder
/// it names (the named runner, else the one default, else the only one, as Runx selects).
fn child(step: &Value, scope: Scope<'_>) -> Option<Child> {
    let reference = step.get("skill")?.as_str()?;
    let (runners, dir) = if reference == "." {
        (scope.runners?.clone(), scope.dir.map(Path::to_path_buf))
    } else {
        let registry = ["registry:", "runx-registry:", "runx://skill/"]
            .iter()
            .any(|prefix| reference.starts_with(prefix));
        if reference.starts_with('$') || registry {
            return None;
        }
        let nested = load_nested(&scope.dir?.join(reference))?;
        let runners = nested
            .package
            .profile_json()
            .get("runners")?
            .as_object()?
            .clone();
        (runners, Some(PathBuf::from(nested.source_path)))
    };
    let name = match step.get("runner").and_then(Value::as_str) {
        Some(name) => name.to_owned(),
        None => {
            let defaults: Vec<&String> = runners
                .iter()
                .filter(|(_, runner)| runner.get("default").and_then(Value::as_bool) == Some(true))
                .map(|(name, _)| name)
                .collect();
            match defaults.as_slice() {
                [one] => (*one).clone(),
                [] if runners.len() == 1 => runners.keys().next()?.clone(),
                _ => return None,
            }
        }
    };
    let mut runner = runners.get(&name)?.clone();
    if let Some(object) = runner.as_object_mut() {
        object.insert("name".to_owned(), Value::String(name));
    }
    Some(Child {
        runner,
        runners,
        dir,
    })
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

fn declares_result(step: &Value, child: Option<&Child>) -> bool {
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
        let Some(child) = child else {
            // A `$input` or registry reference, or a folder that does not load: not judged
            // here (the harness fails such a step as unsupported when it reaches it).
            return true;
        };
        let child = &child.runner;
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

    use super::{Scope, refusal};

    fn scope(runners: &serde_json::Value) -> Scope<'_> {
        Scope {
            runners: runners.as_object(),
            dir: None,
        }
    }

    /// A graph runner taking its result from its one step `s`.
    fn graph(step: serde_json::Value) -> serde_json::Value {
        json!({ "type": "graph", "graph": { "result_from": ["s"], "steps": [step] } })
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
        let refused = refusal(&graph(step), "flow", scope(&runners)).unwrap();
        assert!(
            refused.starts_with("graph result producer 'entry.sub.deep' declares"),
            "{refused}"
        );
        // A runner naming itself ends instead of recursing forever.
        let step = json!({ "id": "s", "skill": ".", "runner": "loop" });
        assert_eq!(refusal(&graph(step), "flow", scope(&runners)), None);
    }

    #[test]
    fn producers_with_a_contract_are_admitted_and_the_rest_refused_in_runx_words() {
        let runners = json!({
            "bare": { "type": "agent-task", "agent": "a", "task": "t" },
            "typed": { "type": "agent-task", "agent": "a", "task": "t", "outputs": { "n": "string" } },
            "wrapped": { "type": "cli-tool", "command": "node", "artifacts": { "wrap_as": "p" } },
        });
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
            assert_eq!(
                refusal(&graph(step.clone()), "flow", scope(&runners)),
                None,
                "{step}"
            );
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
                refusal(&graph(step.clone()), "flow", scope(&runners)).as_deref(),
                Some(
                    "graph result producer 'entry.s' declares no semantic output contract; add \
                     run.outputs or artifacts.wrap_as/named_emits before execution"
                ),
                "{step}"
            );
        }
    }
}
