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
//! names, read from the replayed package's folder ([`Scope::dir`]). A folder that is no
//! package, a runner the package lacks, and a runner already being expanded (a cycle) are
//! refused in Runx's words, at the step, in step order. A `$input` or registry reference is
//! not judged here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use mindrune_core::unsupported_runner;

use super::super::inspect::load_nested;
use super::HarnessOptions;

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
    /// The folder Runx runs in (its `RUNX_CWD`), whose `tools` folder holds local tool
    /// manifests ([`resolve_tool`]).
    pub(super) workspace: Option<&'a Path>,
}

impl<'a> Scope<'a> {
    /// The scope of the package whose profile (X.yaml as JSON) is `profile`, replayed with
    /// `options` (its folder and workspace).
    pub(super) fn of(profile: &'a Value, options: &'a HarnessOptions) -> Self {
        Scope {
            runners: profile.get("runners").and_then(Value::as_object),
            dir: options.package_dir.as_deref(),
            workspace: options.workspace_root.as_deref(),
        }
    }
}

/// The runner a `skill:` step names, and the scope its own graph resolves in.
struct Child {
    runner: Value,
    runners: Map<String, Value>,
    dir: Option<PathBuf>,
}

/// How Runx's run error words a refusal made before any step runs.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The operator context's own refusal (`SkillRunError::Invalid`), which the run error
    /// puts after `skill run failed: `.
    Invalid(String),
    /// A step's run configuration refused as a runtime error (`RuntimeError::InvalidRunStep`),
    /// which the run error words as it is.
    Runtime(String),
}

#[cfg(test)]
impl Refusal {
    /// Runx's words, without what the run error puts before them.
    pub(super) fn message(&self) -> &str {
        match self {
            Self::Invalid(message) | Self::Runtime(message) => message,
        }
    }
}

/// What Runx says where a non-agent runner is given context skills: they are read to an agent
/// only, so Runx refuses them as it expands the step, before the run starts.
const CONTEXT_SKILLS_NOT_AGENT: &str =
    "context_skills is only supported for agent and agent-task steps";

/// Runx's refusal of `runner` (named `runner_name`, of the package `scope` describes) before
/// it runs, in Runx's words: a tool it names that resolves nowhere, a step's package or runner
/// that fails to load, context skills given to a step whose runner is no agent, a cycle of
/// runners, or a graph result producer without a semantic output contract.
pub(super) fn refusal(runner: &Value, runner_name: &str, scope: Scope<'_>) -> Option<Refusal> {
    let mut expanding = vec![identity(scope.dir, runner_name)];
    node_refusal(runner, scope, "entry", &mut expanding)
}

/// Runx's `node_identity` of a local runner: `local:<canonical folder>:<runner>`.
fn identity(dir: Option<&Path>, runner: &str) -> String {
    let dir = dir.map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    format!(
        "local:{}:{runner}",
        dir.as_deref()
            .map(Path::display)
            .map(|d| d.to_string())
            .unwrap_or_default()
    )
}

/// [`refusal`] of the runner at `node` (Runx's node path), in Runx's order (the graph
/// runner's tools, then each step's child, then the graph's producers); `expanding` holds the
/// identities of the runners being expanded, so a cycle is refused as Runx refuses it.
fn node_refusal(
    runner: &Value,
    scope: Scope<'_>,
    node: &str,
    expanding: &mut Vec<String>,
) -> Option<Refusal> {
    let mut tools = BTreeMap::new();
    if let Some(dir) = scope.dir {
        for tool in tool_names(runner) {
            match resolve_tool(tool, dir, scope.workspace) {
                Ok(Some(found)) => {
                    tools.insert(tool, found.declares_artifact_output());
                }
                // Runx refuses the graph runner's unresolved tools; those of a child runner it
                // was seen to run regardless (runx-cli 0.8.2, by hand), so they are not judged
                // here.
                Ok(None) if node == "entry" => {
                    return Some(Refusal::Invalid(format!(
                        "operator context could not resolve required local tool '{tool}'"
                    )));
                }
                Ok(None) => {}
                Err(message) => return Some(Refusal::Invalid(message)),
            }
        }
    }
    let graph = runner.get("graph")?;
    let steps = graph.get("steps").and_then(Value::as_array)?;
    let mut children: Vec<Option<Child>> = Vec::with_capacity(steps.len());
    for step in steps {
        let child = match child(step, scope) {
            Ok(child) => child,
            Err(message) => return Some(Refusal::Invalid(message)),
        };
        if let (Some(id), Some(child)) = (step.get("id").and_then(Value::as_str), &child)
            && strings(step.get("context_skills")).next().is_some()
            && !matches!(
                child.runner.get("type").and_then(Value::as_str),
                Some("agent" | "agent-task")
            )
        {
            // Runx's `expand_graph_step`, after the step's runner and its context load.
            return Some(Refusal::Runtime(format!(
                "graph step '{id}' has invalid run configuration: {CONTEXT_SKILLS_NOT_AGENT}"
            )));
        }
        if let (Some(id), Some(child)) = (step.get("id").and_then(Value::as_str), &child) {
            let name = child
                .runner
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let key = identity(child.dir.as_deref(), name);
            let path = format!("{node}.{id}");
            if expanding.contains(&key) {
                // Runx's `expand_runner_node`.
                return Some(Refusal::Invalid(format!(
                    "operator context chain contains a cycle at {path} ({key})"
                )));
            }
            expanding.push(key);
            let child_scope = Scope {
                runners: Some(&child.runners),
                dir: child.dir.as_deref(),
                workspace: scope.workspace,
            };
            let refused = node_refusal(&child.runner, child_scope, &path, expanding);
            expanding.pop();
            if refused.is_some() {
                return refused;
            }
        }
        children.push(child);
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
                .is_some_and(|(step, child)| !declares_result(step, child.as_ref(), &tools))
        })
        .map(|id| {
            Refusal::Invalid(format!(
                "graph result producer '{node}.{id}' declares no semantic output contract; add \
                 run.outputs or artifacts.wrap_as/named_emits before execution"
            ))
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

/// A tool Runx finds for a package: one of its native tools, or a local manifest.
pub(super) enum Tool {
    Native(&'static str),
    /// A local tool manifest: its path and its JSON.
    Local(PathBuf, Value),
}

impl Tool {
    /// Runx's `declared_artifact_output` of the tool: every native tool's contract but two
    /// emits artifacts; a local manifest's `artifacts` must have a `wrap_as` or `named_emits`.
    fn declares_artifact_output(&self) -> bool {
        match self {
            Tool::Native(name) => !TOOLS_WITHOUT_ARTIFACTS.contains(name),
            Tool::Local(_, manifest) => declares_output_contract(None, manifest.get("artifacts")),
        }
    }
}

/// Where Runx finds `tool` for the package in `dir` when it builds the operator context
/// (`execution/operator_context.rs`, `load_tools` and `resolve_referenced_local_tool`, with
/// `tool_catalogs/inspect.rs`, `resolve_local_manifest`): one of its native tools; else the
/// file, or `manifest.json` in the folder, the name spells from the package folder (a name
/// that is absolute or has `..` is refused); else, for a name of two or more dot-separated
/// segments, `<segments>/manifest.json` under the first of its tool roots holding it
/// ([`tool_roots`]). `Ok(None)` where it is nowhere; Runx's error where the name or the
/// manifest is refused. Runx validates the whole manifest; the Lab reads it as JSON and
/// refuses only a graph source, as Runx does.
pub(super) fn resolve_tool(
    tool: &str,
    dir: &Path,
    workspace: Option<&Path>,
) -> Result<Option<Tool>, String> {
    if let Some(native) = RUNX_NATIVE_TOOLS.iter().find(|native| **native == tool) {
        return Ok(Some(Tool::Native(native)));
    }
    let refused =
        |error: String| format!("operator context could not resolve tool '{tool}': {error}");
    let candidate = Path::new(tool);
    if candidate.is_absolute() || candidate.components().any(|c| c == Component::ParentDir) {
        return Err(refused(
            "Explicit tool manifest paths must be relative and must not contain '..'.".to_owned(),
        ));
    }
    let explicit = dir.join(candidate);
    let manifest = if explicit.is_file() {
        Some(explicit)
    } else if explicit.join("manifest.json").is_file() {
        Some(explicit.join("manifest.json"))
    } else {
        let segments: PathBuf = tool.split('.').filter(|s| !s.is_empty()).collect();
        if segments.components().count() < 2 {
            return Ok(None);
        }
        tool_roots(dir, workspace)
            .into_iter()
            .map(|root| root.join(&segments).join("manifest.json"))
            .find(|manifest| manifest.exists())
    };
    let Some(path) = manifest else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|err| refused(format!("reading tool manifest {}: {err}", path.display())))?;
    let json: Value = serde_json::from_str(&text).map_err(|err| {
        refused(format!(
            "{}: Tool manifest JSON is invalid: {err}",
            path.display()
        ))
    })?;
    if json.pointer("/source/type").and_then(Value::as_str) == Some("graph") {
        return Err(format!("local tool '{tool}' cannot use a graph source"));
    }
    Ok(Some(Tool::Local(path, json)))
}

/// Runx's tool roots for a package in `dir` as its validator's harness has them (`skill
/// validate` and `skill apply`, whose harness runs in `isolated_harness_env`: `RUNX_CWD` the
/// workspace, `RUNX_TOOL_ROOTS` only the workspace's `tools`, the operator's own dropped), each
/// an existing folder, once, in order: the workspace's `tools` folder, then the package's
/// `tools` folder and, for a package in a `skills` folder, the `tools` folder beside that
/// `skills` folder (`services/tool_roots.rs`, `inferred_tool_roots`, added to
/// `RUNX_TOOL_ROOTS`). No `.runx/tools` folder: `resolve_tool_roots` walks them from the
/// package up to the workspace, but the real binary's harness and validator resolve none, in
/// the package, in `skills` or in the workspace (runx-cli 0.8.2, run by hand on 2026-12-07:
/// `operator context could not resolve required local tool 'foo.bar'`). Without a workspace,
/// Runx's own choice: the nearest folder at or above the package holding
/// `pnpm-workspace.yaml` or `.runx/project.json`, else the package folder.
fn tool_roots(dir: &Path, workspace: Option<&Path>) -> Vec<PathBuf> {
    // Runx's package folder is canonical.
    let canonical = std::fs::canonicalize(dir);
    let dir = canonical.as_deref().unwrap_or(dir);
    let root = workspace.map_or_else(
        || {
            dir.ancestors()
                .find(|folder| {
                    folder.join("pnpm-workspace.yaml").exists()
                        || folder.join(".runx/project.json").exists()
                })
                .unwrap_or(dir)
                .to_path_buf()
        },
        Path::to_path_buf,
    );
    let mut candidates = vec![root.join("tools"), dir.join("tools")];
    if let Some(parent) = dir
        .parent()
        .filter(|parent| parent.file_name().and_then(|name| name.to_str()) == Some("skills"))
        .and_then(Path::parent)
    {
        candidates.push(parent.join("tools"));
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for candidate in candidates {
        if candidate.is_dir() && !roots.contains(&candidate) {
            roots.push(candidate);
        }
    }
    roots
}

/// The runner a `skill:` step names, in Runx's order (`load_step_skill`): a sibling (`.`), or
/// that of the package in the folder it names, which must load (else Runx's error); then the
/// named runner, else the one default, else the only one (else Runx's
/// `UnsupportedRunnerSelection`). `None` for a `$input` or registry reference, or where no
/// folder is known.
fn child(step: &Value, scope: Scope<'_>) -> Result<Option<Child>, String> {
    let Some(reference) = step.get("skill").and_then(Value::as_str) else {
        return Ok(None);
    };
    let (runners, dir) = if reference == "." {
        let Some(runners) = scope.runners else {
            return Ok(None);
        };
        (runners.clone(), scope.dir.map(Path::to_path_buf))
    } else {
        let registry = ["registry:", "runx-registry:", "runx://skill/"]
            .iter()
            .any(|prefix| reference.starts_with(prefix));
        let Some(dir) = scope
            .dir
            .filter(|_| !reference.starts_with('$') && !registry)
        else {
            return Ok(None);
        };
        // Runx joins the reference to its canonical package folder, and names that path.
        let base = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let nested = load_nested(&base.join(reference))?;
        let runners = nested
            .package
            .profile_json()
            .get("runners")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        (runners, Some(PathBuf::from(nested.source_path)))
    };
    let requested = step.get("runner").and_then(Value::as_str);
    let Some((name, mut runner)) = select_step_runner(&runners, requested)
        .map(|(name, runner)| (name.to_owned(), runner.clone()))
    else {
        return Err(unsupported_runner(requested.unwrap_or("default")));
    };
    if let Some(object) = runner.as_object_mut() {
        object.insert("name".to_owned(), Value::String(name));
    }
    Ok(Some(Child {
        runner,
        runners,
        dir,
    }))
}

/// The runner a `skill:` step runs (Runx's `select_step_runner`): the one it names, else the
/// package's one default, else its only runner; `None` where none of these is there.
pub(super) fn select_step_runner<'p>(
    runners: &'p Map<String, Value>,
    requested: Option<&str>,
) -> Option<(&'p str, &'p Value)> {
    if let Some(name) = requested {
        return runners.get_key_value(name).map(|(k, v)| (k.as_str(), v));
    }
    let defaults: Vec<_> = runners
        .iter()
        .filter(|(_, runner)| runner.get("default").and_then(Value::as_bool) == Some(true))
        .collect();
    match defaults.as_slice() {
        [(name, runner)] => Some((name.as_str(), *runner)),
        [] if runners.len() == 1 => runners.iter().next().map(|(k, v)| (k.as_str(), v)),
        _ => None,
    }
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

/// Whether `step` declares a semantic output contract (Runx's `step_declares_result`);
/// `tools` holds the resolved tools' `declared_artifact_output`, by name.
fn declares_result(step: &Value, child: Option<&Child>, tools: &BTreeMap<&str, bool>) -> bool {
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
        // A tool left unresolved (a child runner's, not judged) counts as Runx's native tools
        // do.
        let tool_output = tools
            .get(tool)
            .copied()
            .unwrap_or(!TOOLS_WITHOUT_ARTIFACTS.contains(&tool));
        return step_artifact_output || (!present(artifacts) && tool_output);
    }
    if step.get("skill").is_some() {
        let Some(child) = child else {
            // A `$input` or registry reference: not judged here (the harness fails such a
            // step as unsupported when it reaches it).
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

    use super::Scope;

    /// The words of [`super::refusal`], whatever the run error puts before them.
    fn refusal(runner: &serde_json::Value, runner_name: &str, scope: Scope<'_>) -> Option<String> {
        super::refusal(runner, runner_name, scope).map(|refused| refused.message().to_owned())
    }

    fn scope(runners: &serde_json::Value) -> Scope<'_> {
        Scope {
            runners: runners.as_object(),
            dir: None,
            workspace: None,
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
        // A runner naming itself is refused where Runx finds the cycle
        // (`execution/operator_context.rs`, `expand_runner_node`).
        let step = json!({ "id": "s", "skill": ".", "runner": "loop" });
        assert_eq!(
            refusal(&graph(step), "flow", scope(&runners)).as_deref(),
            Some("operator context chain contains a cycle at entry.s.again (local::loop)")
        );
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

#[cfg(test)]
mod step_target_tests {
    use std::path::Path;

    use serde_json::json;

    use super::Scope;

    /// The words of [`super::refusal`], whatever the run error puts before them.
    fn refusal(runner: &serde_json::Value, runner_name: &str, scope: Scope<'_>) -> Option<String> {
        super::refusal(runner, runner_name, scope).map(|refused| refused.message().to_owned())
    }

    /// The refusal of a graph runner `flow` taking its result from its one step `step`, of a
    /// package in `dir` whose other runners are `runners`.
    fn refused(dir: &Path, step: serde_json::Value, runners: &serde_json::Value) -> Option<String> {
        let runner = json!({ "type": "graph", "graph": { "result_from": ["s"], "steps": [step] } });
        let scope = Scope {
            runners: runners.as_object(),
            dir: Some(dir),
            workspace: Some(dir),
        };
        refusal(&runner, "flow", scope)
    }

    #[test]
    fn a_step_naming_a_folder_that_is_no_package_is_refused_with_runx_io_error() {
        // runx-runtime `skill_package.rs`, `resolve_skill_package_directory`: `runtime I/O
        // failed while reading <folder>/../other: …` (`RuntimeError::io`), seen by hand from
        // runx-cli 0.8.2 as well.
        let dir = tempfile::tempdir().unwrap();
        let step = json!({ "id": "s", "skill": "../other" });
        assert_eq!(
            refused(dir.path(), step, &json!({})),
            Some(format!(
                "runtime I/O failed while reading {}/../other: No such file or directory (os \
                 error 2)",
                dir.path().display()
            ))
        );
    }

    #[test]
    fn a_step_naming_a_runner_the_package_lacks_is_refused_in_runx_words() {
        // runx-runtime `execution/graph.rs`, `select_step_runner`: the runner named, else
        // `default` where no single default or only runner is there.
        let dir = tempfile::tempdir().unwrap();
        let agent = json!({ "type": "agent-task", "agent": "a", "task": "t" });
        let runners = json!({ "one": agent, "two": agent });
        let named = json!({ "id": "s", "skill": ".", "runner": "nosuch" });
        assert_eq!(
            refused(dir.path(), named, &runners).as_deref(),
            Some("runner selection 'nosuch' is not supported by the native runtime yet")
        );
        let unnamed = json!({ "id": "s", "skill": "." });
        assert_eq!(
            refused(dir.path(), unnamed, &runners).as_deref(),
            Some("runner selection 'default' is not supported by the native runtime yet")
        );
    }

    #[test]
    fn a_sibling_naming_the_graph_itself_is_refused_as_a_cycle_at_its_step() {
        // runx-runtime `execution/operator_context.rs`, `expand_runner_node` and
        // `node_identity`.
        let dir = tempfile::tempdir().unwrap();
        let step = json!({ "id": "s", "skill": ".", "runner": "flow" });
        let runners = json!({ "flow": { "type": "graph", "graph": { "steps": [step] } } });
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(
            refused(dir.path(), step, &runners),
            Some(format!(
                "operator context chain contains a cycle at entry.s (local:{}:flow)",
                canonical.display()
            ))
        );
    }
}
