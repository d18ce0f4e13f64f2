//! Executing one case: preflight, the runner's source or graph, and output projection.
//!
//! The semantics follow Runx's runtime:
//! * A graph step's inputs are the runner inputs (ambient graph parameters), minus any name a
//!   context edge produces, overlaid with the step's `inputs`, where `$input.<path>` resolves
//!   into the runner inputs and an unresolved binding drops the key; context edges
//!   (`name: <step>.<output path>`) then add the producer's addressable output.
//! * A step's addressable outputs are its declared `run.outputs` (raw values from its claim,
//!   each required), then its artifact packets: `wrap_as` wraps the whole claim as
//!   `{data: ...}`, each `named_emits` key wraps that claim field. A tool's claim exposes each
//!   top-level key as a packet. This is why `context: {x: step.out.data}` reads the payload.
//! * `when: {field: <step>.<path>, equals|not_equals}` reads a prior step's addressable outputs;
//!   a step whose predicate source was skipped is skipped too, and a predicate whose value is
//!   not there leaves the step to run.
//! * `result_from` names the steps whose outputs form the graph's result.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mindrune_core::SnapshotFile;
use serde_json::{Map, Value, json};

use super::assertions::{data_envelope, json_equal};
use super::javascript::{JsInvocation, JsLimits, run_in_worker, run_module};
use super::{
    CaseOutcome, CaseStatus, CaseStop, HarnessOptions, NativeTools, PacketCatalog, cli_tool,
    local_tool, result_contract, scratch, web,
};

/// How one source or step ended.
enum End {
    /// The claim the step produced.
    Done(Value),
    /// An agent act or approval has no answer yet.
    NeedsAgent(String),
    /// A capability refused by policy; the claim still describes the refusal.
    PolicyDenied(Value, String),
    /// A human declined an approval gate.
    Declined(String),
    Failed(String),
    /// A failure whose words Runx's run result holds apart from the Lab's.
    FailedAs(Failure),
}

/// A failed source in both tongues: the Lab's words are its receipts' `error`, Runx's are
/// what a harness case's `expect.output` reads.
struct Failure {
    message: String,
    runx: RunxWords,
    /// What the source printed, read as a result: a failed runner's result in Runx is its
    /// stdout (`""` when it printed nothing).
    stdout: Value,
}

/// How Runx words a failed step in the failed graph run's result (`public_failure_projection`
/// of the error that ended the run).
#[derive(Clone)]
enum RunxWords {
    /// The step's own diagnostic: `skill '<step>' failed: <it>` (`commit_step_run`).
    Step(String),
    /// A nested graph's failure, the whole message of its run: `graph step '<step>' has
    /// invalid run configuration: <it>`.
    Configuration(String),
}

impl RunxWords {
    fn text(&self) -> &str {
        match self {
            Self::Step(text) | Self::Configuration(text) => text,
        }
    }
}

impl End {
    /// A failure Runx words as the Lab does: its run's result reads
    /// `skill '<step>' failed: <message>`.
    fn runx_words(&self) -> Option<RunxWords> {
        match self {
            Self::Failed(message) => Some(RunxWords::Step(message.clone())),
            Self::FailedAs(failure) => Some(failure.runx.clone()),
            _ => None,
        }
    }
}

impl RunxWords {
    /// The message of the failed run's result, the step being `step_id`.
    fn message(&self, step_id: &str) -> String {
        match self {
            Self::Step(why) => format!("skill '{step_id}' failed: {why}"),
            Self::Configuration(run) => {
                format!("graph step '{step_id}' has invalid run configuration: {run}")
            }
        }
    }
}

/// Runx's result of a run that failed: `{"code": "runtime_error", "message": …}`.
pub(super) fn failure_projection(message: &str) -> Value {
    json!({ "code": "runtime_error", "message": message })
}

mod acts;
mod fanout;
mod graph;
pub(crate) mod nested;

use graph::graph_steps;

use acts::{agent_act, agent_act_as, approval, request_id_part};

/// What a case runs against.
struct Env<'a> {
    /// The package's execution profile (X.yaml as JSON), whose runners a `skill: .` step runs.
    profile: &'a Value,
    bundle: BTreeMap<String, String>,
    scratch: PathBuf,
    home: PathBuf,
    caller: Map<String, Value>,
    case_env: BTreeMap<String, String>,
    tools: &'a mut dyn NativeTools,
    packets: &'a PacketCatalog,
    options: &'a HarnessOptions,
}

fn object(value: Option<&Value>) -> Map<String, Value> {
    value
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn text<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

/// Run one case in its own scratch copy of the package and describe what happened; expectations
/// are judged separately ([`super::check_expectations`]).
pub(crate) fn run_case(
    files: &[SnapshotFile],
    profile: &Value,
    case: &Value,
    tools: &mut dyn NativeTools,
    packets: &PacketCatalog,
    options: &HarnessOptions,
) -> CaseOutcome {
    let name = text(case, "name").unwrap_or("unnamed").to_owned();
    let mut outcome = CaseOutcome {
        name,
        runner: String::new(),
        graph: false,
        status: CaseStatus::Failure,
        steps: Vec::new(),
        output: Value::Null,
        step_outputs: Map::new(),
        inputs: Value::Object(Map::new()),
        reason_code: String::new(),
        disposition: String::new(),
        state: String::new(),
        runx_summary: String::new(),
        runx_failure: None,
        error: None,
        stop: None,
        receipt_id: None,
        assertion_errors: Vec::new(),
    };
    let result = execute(files, profile, case, tools, packets, options, &mut outcome);
    if let Err(message) = result {
        outcome.status = CaseStatus::Failure;
        outcome.error = Some(message);
        if outcome.reason_code.is_empty() {
            outcome.reason_code = "harness_failed".to_owned();
        }
    }
    outcome.disposition = outcome.status.disposition().to_owned();
    outcome.state = outcome.status.state().to_owned();
    outcome
}

fn select_runner<'p>(
    profile: &'p Value,
    requested: Option<&str>,
) -> Result<(String, &'p Value), String> {
    let runners = profile
        .get("runners")
        .and_then(Value::as_object)
        .ok_or_else(|| "the execution profile declares no runners".to_owned())?;
    if let Some(name) = requested {
        return runners
            .get(name)
            .map(|runner| (name.to_owned(), runner))
            .ok_or_else(|| format!("runner {name:?} is not declared"));
    }
    let defaults: Vec<_> = runners
        .iter()
        .filter(|(_, runner)| runner.get("default").and_then(Value::as_bool) == Some(true))
        .collect();
    match (defaults.as_slice(), runners.len()) {
        ([(name, runner)], _) => Ok(((*name).clone(), *runner)),
        ([], 1) => runners
            .iter()
            .next()
            .map(|(name, runner)| (name.clone(), runner))
            .ok_or_else(|| "no runner".to_owned()),
        _ => Err("no single default runner is declared".to_owned()),
    }
}

fn execute(
    files: &[SnapshotFile],
    profile: &Value,
    case: &Value,
    tools: &mut dyn NativeTools,
    packets: &PacketCatalog,
    options: &HarnessOptions,
    outcome: &mut CaseOutcome,
) -> Result<(), String> {
    if case.get("kind").and_then(Value::as_str) == Some("graph")
        && let Some(target) = text(case, "target")
    {
        return graph_fixture(
            files, profile, case, target, tools, packets, options, outcome,
        );
    }
    let (runner_name, runner) = select_runner(profile, text(case, "runner"))?;
    outcome.runner = runner_name.clone();
    let kind = text(runner, "type").unwrap_or("").to_owned();
    outcome.graph = kind == "graph";

    let (workspace, scratch, home) = case_workspace(files)?;

    let mut env = Env {
        profile,
        bundle: javascript_bundle(files),
        scratch,
        home,
        caller: object(case.get("caller")),
        case_env: case
            .get("env")
            .and_then(Value::as_object)
            .map(|env| {
                env.iter()
                    .map(|(key, value)| {
                        let value = value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_owned);
                        (key.clone(), value)
                    })
                    .collect()
            })
            .unwrap_or_default(),
        tools,
        packets,
        options,
    };

    // Preflight: defaults, then required inputs, before any step or process runs.
    let inputs = match preflight(profile, runner, &object(case.get("inputs")), packets) {
        Ok(inputs) => inputs,
        Err(message) => {
            outcome.status = CaseStatus::Failure;
            outcome.reason_code = "preflight_failed".to_owned();
            outcome.error = Some(message);
            outcome.stop = Some(CaseStop::Inputs);
            return Ok(());
        }
    };
    outcome.inputs = Value::Object(inputs.clone());

    if outcome.graph {
        run_graph(profile, runner, &runner_name, &inputs, &mut env, outcome);
    } else {
        let end = run_source(&kind, runner, &inputs, &mut env);
        // Runx holds a runner's process or module output to its declared `outputs` before
        // anything is sealed, failing the run itself (`invoke_source_adapter`).
        let violation = match &end {
            End::Done(claim) if matches!(kind.as_str(), "cli-tool" | "javascript") => runner
                .get("outputs")
                .and_then(|declared| nested::output_contract_violation(Some(declared), claim)),
            _ => None,
        };
        if let Some(violation) = violation {
            outcome.status = CaseStatus::Failure;
            outcome.error = Some(format!(
                "skill '{runner_name}' failed: runner output contract violation at {violation}"
            ));
            outcome.stop = Some(CaseStop::Failed);
            outcome.reason_code = format!("process_{}", outcome.status.disposition());
            return Ok(());
        }
        let (status, output, error) = match end {
            // A runner's own packets are checked like a step's, once it succeeded.
            End::Done(claim) => match env.packets.verify(runner.get("artifacts"), &claim) {
                Ok(()) => (CaseStatus::Sealed, claim, None),
                Err(message) => (CaseStatus::Failure, Value::Null, Some(message)),
            },
            End::NeedsAgent(message) => (CaseStatus::NeedsAgent, Value::Null, Some(message)),
            End::PolicyDenied(claim, message) => (CaseStatus::PolicyDenied, claim, Some(message)),
            End::Declined(message) | End::Failed(message) => {
                (CaseStatus::Failure, Value::Null, Some(message))
            }
            End::FailedAs(failure) => {
                outcome.runx_failure = Some(failure.runx.text().to_owned());
                (CaseStatus::Failure, failure.stdout, Some(failure.message))
            }
        };
        outcome.runx_summary = format!("step {runner_name} completed");
        outcome.status = status;
        outcome.output = output;
        outcome.error = error;
        // Runx refuses an agent runner declaring no output as it builds the act, failing the
        // run itself: `skill '<runner>' failed: …`, and no receipt.
        if (kind == "agent" || kind == "agent-task")
            && outcome.error.as_deref() == Some(acts::AGENT_OUTPUTS_MISSING)
        {
            outcome.error = Some(format!(
                "skill '{runner_name}' failed: {}",
                acts::AGENT_OUTPUTS_MISSING
            ));
            outcome.stop = Some(CaseStop::Failed);
        }
        let prefix = if kind == "agent" || kind == "agent-task" {
            "agent_act"
        } else {
            "process"
        };
        outcome.reason_code = format!("{prefix}_{}", outcome.status.disposition());
    }
    drop(workspace);
    Ok(())
}

/// Replay a `kind: graph` fixture as Runx does: the graph file its `target` names, read from
/// the fixture's folder, runs on the fixture's `inputs` as given (no runner declares them), its
/// inline processes in the graph file's folder, and its result is only what `result_from`
/// names.
#[allow(clippy::too_many_arguments)]
fn graph_fixture(
    files: &[SnapshotFile],
    profile: &Value,
    case: &Value,
    target: &str,
    tools: &mut dyn NativeTools,
    packets: &PacketCatalog,
    options: &HarnessOptions,
    outcome: &mut CaseOutcome,
) -> Result<(), String> {
    outcome.graph = true;
    let fixture_path = text(case, super::FIXTURE_PATH_KEY).unwrap_or("fixtures/fixture.yaml");
    let graph_path = package_relative(fixture_path, target)
        .ok_or_else(|| format!("graph target {target:?} escapes the skill package"))?;
    let file = files
        .iter()
        .find(|file| file.path == graph_path)
        .ok_or_else(|| format!("graph target {target:?} resolves to missing file {graph_path}"))?;
    let text_of = std::str::from_utf8(&file.contents)
        .map_err(|err| format!("{graph_path}: not UTF-8: {err}"))?;
    let mut graph = mindrune_core::yaml_document_json(&graph_path, text_of)?;
    let graph_dir = Path::new(&graph_path)
        .parent()
        .map(|dir| dir.to_string_lossy().into_owned())
        .unwrap_or_default();
    if !graph_dir.is_empty()
        && let Some(steps) = graph.get_mut("steps").and_then(Value::as_array_mut)
    {
        for run in steps
            .iter_mut()
            .filter_map(|step| step.get_mut("run"))
            .filter_map(Value::as_object_mut)
        {
            run.entry("cwd")
                .or_insert_with(|| Value::String(graph_dir.clone()));
        }
    }

    let (workspace, scratch, home) = case_workspace(files)?;
    let mut env = Env {
        profile,
        bundle: javascript_bundle(files),
        scratch,
        home,
        caller: object(case.get("caller")),
        case_env: BTreeMap::new(),
        tools,
        packets,
        options,
    };
    let inputs = object(case.get("inputs"));
    outcome.inputs = Value::Object(inputs.clone());
    let graph_name = text(&graph, "name").unwrap_or("graph").to_owned();
    outcome.runx_summary = format!("graph {graph_name} completed");
    let run = graph_steps(&graph, &inputs, &mut env);
    outcome.steps = run.steps;
    outcome.error = run.error;
    outcome.step_outputs = run.outputs;
    outcome.status = run.status;
    outcome.stop = run.stop;
    // Runx's graph run answers nothing where `result_from` names no step, not even the last
    // step's outputs.
    let has_producers = graph
        .get("result_from")
        .and_then(Value::as_array)
        .is_some_and(|producers| !producers.is_empty());
    outcome.output = if has_producers || run.status != CaseStatus::Sealed {
        run.output
    } else {
        Value::Null
    };
    // Runx's graph fixture receipt gives the same reason whatever the graph is named
    // (`reason=graph_closed` for `name: flow`).
    outcome.reason_code = format!("graph_{}", run.status.disposition());
    drop(workspace);
    Ok(())
}

/// `target` read from the folder of the package file `from`, as a package-relative path;
/// `None` when it leaves the package.
fn package_relative(from: &str, target: &str) -> Option<String> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

/// Write the package into the scratch folder with each file's recorded permission bits.
/// A case's scratch workspace: the folder (removed when dropped), the copy of the package in
/// it, and the empty home the case's processes get.
fn case_workspace(files: &[SnapshotFile]) -> Result<(tempfile::TempDir, PathBuf, PathBuf), String> {
    let workspace = scratch::scratch_dir(scratch::ScratchKind::Case)
        .map_err(|err| format!("creating the scratch workspace: {err}"))?;
    let scratch = workspace.path().join("package");
    let home = workspace.path().join("home");
    std::fs::create_dir_all(&home).map_err(|err| format!("creating the scratch home: {err}"))?;
    copy_package(files, &scratch)?;
    Ok((workspace, scratch, home))
}

fn copy_package(files: &[SnapshotFile], root: &Path) -> Result<(), String> {
    std::fs::create_dir_all(root).map_err(|err| format!("creating {}: {err}", root.display()))?;
    for file in files {
        let relative = Path::new(&file.path);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
        {
            return Err(format!(
                "package path {:?} is not a plain relative path",
                file.path
            ));
        }
        let target = root.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("creating {}: {err}", parent.display()))?;
        }
        std::fs::write(&target, &file.contents)
            .map_err(|err| format!("writing {}: {err}", target.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            // Permission bits only: a package's set-id bits never reach a scratch copy.
            let mode = file.mode & 0o777;
            if mode != 0 {
                std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
                    .map_err(|err| format!("setting the mode of {}: {err}", target.display()))?;
            }
        }
    }
    Ok(())
}

/// The package's JavaScript modules, the only code a `type: javascript` source may load.
fn javascript_bundle(files: &[SnapshotFile]) -> BTreeMap<String, String> {
    files
        .iter()
        .filter(|file| file.path.ends_with(".mjs") || file.path.ends_with(".js"))
        .filter_map(|file| {
            String::from_utf8(file.contents.clone())
                .ok()
                .map(|source| (file.path.clone(), source))
        })
        .collect()
}

/// Resolve `{definition: name}` input specs against the profile's `input_definitions`.
fn input_spec<'p>(profile: &'p Value, spec: &'p Value) -> &'p Value {
    match text(spec, "definition") {
        Some(name) => profile
            .pointer(&format!("/input_definitions/{name}"))
            .unwrap_or(spec),
        None => spec,
    }
}

fn preflight(
    profile: &Value,
    runner: &Value,
    supplied: &Map<String, Value>,
    packets: &PacketCatalog,
) -> Result<Map<String, Value>, String> {
    // Runx admits a case's inputs as a complete invocation of the runner
    // (`materialize_complete_runner_inputs`), refusing an input it does not declare before it
    // looks at the declared ones: ambient inputs are no part of a runner's contract.
    let declared = runner.get("inputs").and_then(Value::as_object);
    if let Some(name) = supplied
        .keys()
        .find(|name| declared.is_none_or(|declared| !declared.contains_key(*name)))
    {
        return Err(format!("runner input '{name}' is not declared"));
    }
    let mut inputs = supplied.clone();
    let mut missing = Vec::new();
    if let Some(declared) = declared {
        for (name, spec) in declared {
            let spec = input_spec(profile, spec);
            let present = inputs.get(name).is_some_and(|value| !value.is_null());
            if !present {
                if let Some(default) = spec.get("default") {
                    inputs.insert(name.clone(), default.clone());
                } else if spec.get("required").and_then(Value::as_bool) == Some(true) {
                    missing.push(name.clone());
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(format!("missing required input(s): {}", missing.join(", ")));
    }
    if let Some(declared) = runner.get("inputs").and_then(Value::as_object) {
        for (name, spec) in declared {
            if let Some(value) = inputs.get(name).filter(|value| !value.is_null()) {
                check_input(name, input_spec(profile, spec), value, packets)?;
            }
        }
    }
    Ok(inputs)
}

/// Checks one supplied input against its declared `type` (default `string`) and, when it has
/// one, its JSON Schema fragment, as Runx's preflight does before any step runs.
fn check_input(
    name: &str,
    spec: &Value,
    value: &Value,
    packets: &PacketCatalog,
) -> Result<(), String> {
    let declared = spec.get("type").and_then(Value::as_str).unwrap_or("string");
    let fits = match declared {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    };
    if !fits {
        return Err(format!(
            "input {name} must be {} {declared}, got {}",
            if declared.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            },
            json_kind(value)
        ));
    }
    // A packet-valued input's schema is its packet's, admitted when the package loaded.
    let packet_schema = match spec.get("packet").and_then(Value::as_str) {
        Some(packet) => Some(packets.input_schema(packet)?.ok_or_else(|| {
            format!(
                "input {name} declares packet schema '{packet}', which the harness's packet \
                 folders do not hold; put it in the package's packets/ or dist/packets/, or \
                 the workspace's"
            )
        })?),
        None => None,
    };
    let Some(schema) = packet_schema.or_else(|| spec.get("schema").filter(|s| s.is_object()))
    else {
        return Ok(());
    };
    let validator = jsonschema::validator_for(schema).map_err(|err| {
        format!("input {name} declares a schema that is not valid JSON Schema: {err}")
    })?;
    if let Some(error) = validator.iter_errors(value).next() {
        let at = error.instance_path().to_string();
        return Err(format!("input {name}{at}: {error}"));
    }
    Ok(())
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The declared environment names and their values, from the case's `env` only: a replay never
/// reads the operator's environment. A missing required name stops before the worker runs.
fn declared_environment(
    source: &Value,
    case_env: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    let mut selected = BTreeMap::new();
    let Some(environment) = source.get("environment") else {
        return Ok(selected);
    };
    let names = |key: &str| -> Vec<String> {
        environment
            .get(key)
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut missing = Vec::new();
    for name in names("required") {
        match case_env.get(&name) {
            Some(value) => {
                selected.insert(name, value.clone());
            }
            None => missing.push(name),
        }
    }
    for name in names("optional") {
        if let Some(value) = case_env.get(&name) {
            selected.insert(name, value.clone());
        }
    }
    if missing.is_empty() {
        Ok(selected)
    } else {
        Err(format!(
            "missing required environment name(s): {}",
            missing.join(", ")
        ))
    }
}

/// Run a runner-level source or a step's `run` of the given type.
fn run_source(kind: &str, source: &Value, inputs: &Map<String, Value>, env: &mut Env<'_>) -> End {
    match kind {
        "agent" | "agent-task" => agent_act(source, env),
        "approval" => approval(source, "approval", env),
        "javascript" => javascript(source, inputs, env),
        "cli-tool" => cli(source, inputs, env),
        other => End::Failed(format!(
            "source type {other:?} is not supported by the harness"
        )),
    }
}

fn javascript(source: &Value, inputs: &Map<String, Value>, env: &Env<'_>) -> End {
    let Some(module) = text(source, "module") else {
        return End::Failed("javascript source declares no module".to_owned());
    };
    let entry = module.trim_start_matches("./");
    let export = text(source, "export").unwrap_or("default");
    let limits = match JsLimits::for_timeout(source.get("timeout_seconds").and_then(Value::as_u64))
    {
        Ok(limits) => limits,
        Err(message) => return End::Failed(message),
    };
    let environment = match declared_environment(source, &env.case_env) {
        Ok(environment) => environment,
        Err(message) => return End::Failed(message),
    };
    let inputs = Value::Object(inputs.clone());
    let invocation = JsInvocation {
        bundle: &env.bundle,
        entry,
        export,
        inputs: &inputs,
        environment: &environment,
        limits,
    };
    // Only the worker process bounds a builtin looping in C; see `HarnessOptions::js_worker`.
    let result = match &env.options.js_worker {
        Some(worker) => run_in_worker(worker, &invocation),
        None => run_module(&invocation),
    };
    match result {
        Ok(output) => End::Done(output),
        Err(err) => End::Failed(format!("javascript {entry}#{export}: {err}")),
    }
}

fn cli(source: &Value, inputs: &Map<String, Value>, env: &Env<'_>) -> End {
    let Some(command) = text(source, "command") else {
        return End::Failed("cli-tool source declares no command".to_owned());
    };
    let args: Vec<String> = source
        .get("args")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map_or_else(|| item.to_string(), str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    let declared = match declared_environment(source, &env.case_env) {
        Ok(declared) => declared,
        Err(message) => return End::Failed(message),
    };
    // A declared wall is held to 1..=300 s: zero would kill the process at once, and a
    // replay must end in bounded time whatever a package declares.
    let timeout = source
        .get("timeout_seconds")
        .and_then(Value::as_u64)
        .map_or(env.options.cli_timeout, |seconds| {
            Duration::from_secs(seconds.clamp(1, 300))
        });
    let result = cli_tool::run(&cli_tool::CliRequest {
        command,
        args: &args,
        cwd: text(source, "cwd"),
        inputs,
        declared_env: &declared,
        scratch: &env.scratch,
        home: &env.home,
        timeout,
        stdin: text(source, "input_mode") == Some("stdin"),
    });
    match result {
        Ok(result) if result.success => End::Done(parse_json_maybe(&result.stdout)),
        Ok(result) if result.timed_out => End::Failed(format!(
            "cli-tool {command} exceeded its {} s timeout",
            timeout.as_secs()
        )),
        // Runx's diagnostic is the process's stderr as printed, else its exit code as Rust
        // debug-prints an `Option<i32>` (`StepOutcome::failure_message`).
        Ok(result) => End::FailedAs(Failure {
            message: format!(
                "cli-tool {command} exited {}: {}",
                result
                    .exit_code
                    .map_or_else(|| "by signal".to_owned(), |code| code.to_string()),
                result.stderr.trim()
            ),
            runx: RunxWords::Step(if result.stderr.trim().is_empty() {
                format!("process failed with exit code {:?}", result.exit_code)
            } else {
                result.stderr.clone()
            }),
            stdout: parse_json_maybe(&result.stdout),
        }),
        Err(message) => End::Failed(message),
    }
}

/// Runx reads a process's stdout as JSON when it parses and as a trimmed string otherwise.
pub(super) fn parse_json_maybe(stdout: &str) -> Value {
    let trimmed = stdout.trim();
    if trimmed.is_empty() {
        return Value::String(String::new());
    }
    serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(trimmed.to_owned()))
}

/// Built-in tools first, then the caller's, then a local tool manifest in the package.
fn run_tool(
    tool: &str,
    step: &Value,
    inputs: &Map<String, Value>,
    env: &mut Env<'_>,
) -> (End, Producer) {
    if let Some(end) = native_tool(tool, inputs, env) {
        return (end, Producer::NativeTool);
    }
    match local_tool::prepare(tool, step, inputs, env.options) {
        None => (
            End::Failed(format!("tool {tool:?} is not available in the harness")),
            Producer::NativeTool,
        ),
        Some(Err(message)) => (End::Failed(message), Producer::LocalTool(None)),
        // Run through the harness's own sources, the output wrapped by the manifest's
        // `artifacts` as Runx's dispatcher wraps it.
        Some(Ok(local)) => {
            let end = match run_source(&local.kind, &local.source, &local.inputs, env) {
                End::Done(output) => End::Done(local_tool::wrap(output, local.artifacts.as_ref())),
                other => other,
            };
            (end, Producer::LocalTool(local.artifacts))
        }
    }
}

/// The harness's own tools, then the caller's; `None` where neither has `tool`.
fn native_tool(tool: &str, inputs: &Map<String, Value>, env: &mut Env<'_>) -> Option<End> {
    let responses = object(env.caller.get("http_responses"));
    let inputs_value = Value::Object(inputs.clone());
    let end = match tool {
        "web.fetch" => {
            let claim = web::web_fetch(&inputs_value, &responses, &env.options.created_at);
            match claim
                .pointer("/fetch_result/decision")
                .and_then(Value::as_str)
            {
                Some("ready") => End::Done(claim),
                Some("policy_denied") => {
                    let host = claim
                        .pointer("/fetch_result/policy/attempted_host")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    End::PolicyDenied(
                        claim,
                        format!("web.fetch: host {host:?} is not allowlisted"),
                    )
                }
                _ => {
                    let blocker = claim
                        .pointer("/fetch_result/blocker")
                        .and_then(Value::as_str)
                        .unwrap_or("fetch failed")
                        .to_owned();
                    End::Failed(format!("web.fetch: {blocker}"))
                }
            }
        }
        "http.read" => match web::http_read(&inputs_value, &responses) {
            Ok(claim) => End::Done(claim),
            Err(message) => End::Failed(format!("http.read: {message}")),
        },
        "fs.read" => match fs_read(inputs, &env.scratch) {
            Ok(claim) => End::Done(claim),
            Err(message) => End::Failed(format!("fs.read: {message}")),
        },
        _ => {
            return env
                .tools
                .call(tool, &inputs_value, &env.scratch)
                .map(|result| match result {
                    Ok(claim) => End::Done(claim),
                    Err(message) => End::Failed(format!("{tool}: {message}")),
                });
        }
    };
    Some(end)
}

/// `fs.read` of one file inside the case's scratch package, never outside it (symlinks are
/// resolved before the containment check).
fn fs_read(inputs: &Map<String, Value>, scratch: &Path) -> Result<Value, String> {
    let path = inputs
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| "needs a path input".to_owned())?;
    let relative = Path::new(path);
    if relative.is_absolute() {
        return Err(format!("{path:?} is absolute"));
    }
    let root = scratch
        .canonicalize()
        .map_err(|err| format!("resolving the workspace: {err}"))?;
    let target = root
        .join(relative)
        .canonicalize()
        .map_err(|err| format!("{path:?}: {err}"))?;
    if !target.starts_with(&root) {
        return Err(format!("{path:?} is outside the workspace"));
    }
    let bytes = std::fs::read(&target).map_err(|err| format!("{path:?}: {err}"))?;
    let contents =
        String::from_utf8(bytes.clone()).map_err(|_| format!("{path:?} is not UTF-8 text"))?;
    Ok(json!({
        "file": {
            "path": path,
            "contents": contents,
            "bytes": bytes.len(),
            "content_digest": mindrune_core::sha256(&bytes),
        }
    }))
}

/// `$input.<path>` bindings resolved against the runner inputs; a binding that does not resolve
/// is dropped (returns `None`), inside arrays and objects too.
fn materialize(value: &Value, inputs: &Map<String, Value>) -> Option<Value> {
    match value {
        Value::String(binding) => match binding.strip_prefix("$input.") {
            Some(path) => resolve_path(inputs, path).cloned(),
            None => Some(value.clone()),
        },
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|item| materialize(item, inputs))
                .collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter_map(|(key, item)| materialize(item, inputs).map(|v| (key.clone(), v)))
                .collect(),
        )),
        _ => Some(value.clone()),
    }
}

fn resolve_path<'v>(root: &'v Map<String, Value>, path: &str) -> Option<&'v Value> {
    let mut segments = path.split('.');
    let mut current = root.get(segments.next()?)?;
    for segment in segments {
        current = current.as_object()?.get(segment)?;
    }
    Some(current)
}

/// Parse `<step>.<output path>` into the producer and the path.
fn split_edge(reference: &str) -> Option<(&str, &str)> {
    reference
        .split_once('.')
        .filter(|(step, path)| !step.is_empty() && !path.is_empty())
}

/// What a step's claim came from, for its projection: a native tool exposes every key, a local
/// tool's manifest `artifacts` stand in for a step declaring none (Runx's
/// `build_step_output_projection`, `step.artifacts.or(extra_artifacts)`).
enum Producer {
    Source,
    NativeTool,
    LocalTool(Option<Value>),
    /// A runner of the package (`skill: .`): its `outputs` and `artifacts` stand in for a step
    /// declaring none (Runx's `invoke_regular_skill_step` and `run_agent_skill_step`).
    Runner {
        outputs: Option<Value>,
        artifacts: Option<Value>,
    },
    /// A graph runner of the package: the step exposes its own artifacts and every key of the
    /// nested graph's result (Runx's `adopt_nested_graph_result`).
    NestedGraph,
}

impl Producer {
    /// The runner's `artifacts`, which a step declaring none has as its own.
    fn artifacts(&self) -> Option<&Value> {
        match self {
            Self::Runner { artifacts, .. } => artifacts.as_ref(),
            _ => None,
        }
    }
}

/// The addressable outputs of a finished step (see the module comment).
fn project(step: &Value, claim: &Value, producer: &Producer) -> Result<Map<String, Value>, String> {
    let empty = Map::new();
    let claim_object = claim.as_object().unwrap_or(&empty);
    let mut outputs = Map::new();
    if matches!(producer, Producer::NativeTool) {
        for (name, value) in claim_object {
            outputs.insert(name.clone(), data_envelope(value.clone()));
        }
    }
    let runner_outputs = match producer {
        Producer::Runner { outputs, .. } => outputs.as_ref(),
        _ => None,
    };
    let declared = step.pointer("/run/outputs").or(runner_outputs);
    if let Some(declared) = declared.and_then(Value::as_object) {
        for (name, field) in declared {
            let Some(value) = claim_object.get(name) else {
                // Runx's `OutputField::is_required`: required unless it says otherwise.
                if field.get("required").and_then(Value::as_bool) == Some(false) {
                    continue;
                }
                return Err(format!("declared run output {name:?} was not returned"));
            };
            outputs.insert(name.clone(), value.clone());
        }
    }
    let tool_artifacts = match producer {
        Producer::LocalTool(artifacts) => artifacts.as_ref(),
        Producer::Runner { artifacts, .. } => artifacts.as_ref(),
        _ => None,
    };
    let artifacts = step.get("artifacts").or(tool_artifacts);
    if let Some(artifacts) = artifacts.filter(|_| !claim_object.is_empty()) {
        if let Some(wrap_as) = text(artifacts, "wrap_as") {
            let value = claim_object
                .get(wrap_as)
                .cloned()
                .unwrap_or_else(|| claim.clone());
            outputs.insert(wrap_as.to_owned(), data_envelope(value));
        }
        if let Some(named) = artifacts.get("named_emits").and_then(Value::as_object) {
            for name in named.keys() {
                if let Some(value) = claim_object.get(name) {
                    outputs.insert(name.clone(), data_envelope(value.clone()));
                }
            }
        }
    }
    if matches!(producer, Producer::NestedGraph) {
        for (name, value) in claim_object {
            outputs.insert(name.clone(), value.clone());
        }
    }
    Ok(outputs)
}

fn run_graph(
    profile: &Value,
    runner: &Value,
    runner_name: &str,
    inputs: &Map<String, Value>,
    env: &mut Env<'_>,
    outcome: &mut CaseOutcome,
) {
    let graph = runner.get("graph").cloned().unwrap_or(Value::Null);
    let graph_name = text(&graph, "name").unwrap_or(runner_name).to_owned();
    // Runx refuses a graph whose result producer declares no output contract before any step
    // runs.
    let scope = result_contract::Scope::of(profile, env.options);
    if let Some(refused) = result_contract::refusal(runner, runner_name, scope) {
        let (stop, message) = match refused {
            result_contract::Refusal::Invalid(message) => (CaseStop::Refused, message),
            result_contract::Refusal::Runtime(message) => (CaseStop::Failed, message),
        };
        outcome.status = CaseStatus::Failure;
        outcome.error = Some(message);
        outcome.stop = Some(stop);
        outcome.reason_code = format!("{graph_name}_{}", CaseStatus::Failure.disposition());
        return;
    }
    let run = graph_steps(&graph, inputs, env);
    outcome.steps = run.steps;
    outcome.error = run.error;
    outcome.output = run.output;
    outcome.step_outputs = run.outputs;
    outcome.status = run.status;
    outcome.stop = run.stop;
    outcome.reason_code = format!("{graph_name}_{}", run.status.disposition());
}

/// Run one graph step that is not skipped: its tool, inline source or approval.
fn run_step(
    step: &Value,
    step_id: &str,
    inputs: &Map<String, Value>,
    env: &mut Env<'_>,
) -> (End, Producer) {
    if let Some(tool) = text(step, "tool") {
        return run_tool(tool, step, inputs, env);
    }
    let end = if let Some(run) = step.get("run") {
        match run {
            Value::String(kind) if kind == "approval" => approval(&Value::Null, step_id, env),
            Value::Object(_) => {
                let kind = text(run, "type").unwrap_or("");
                if kind == "approval" {
                    approval(run, step_id, env)
                } else {
                    run_source(kind, run, inputs, env)
                }
            }
            _ => End::Failed("run must be an inline source or approval".to_owned()),
        }
    } else if step.get("skill").is_some() {
        return nested::run(step, inputs, env);
    } else {
        End::Failed("step declares none of tool, run or skill".to_owned())
    };
    (end, Producer::Source)
}

#[cfg(test)]
mod tests {
    use super::graph::{should_skip, step_inputs};
    use super::*;

    #[test]
    fn a_packet_valued_input_is_checked_against_its_packet_schema_before_anything_runs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("plan.json"),
            r#"{"x-runx-packet-id": "runx.test.plan.v1", "type": "object",
                "required": ["decision"], "properties": {"decision": {"type": "string"}}}"#,
        )
        .unwrap();
        let packets = PacketCatalog::discover(vec![dir.path().to_path_buf()]);
        let runner = json!({"inputs": {
            "plan": {"type": "json", "required": true, "packet": "runx.test.plan.v1"},
        }});
        let run =
            |inputs: Value| preflight(&json!({}), &runner, inputs.as_object().unwrap(), &packets);
        run(json!({"plan": {"decision": "go"}})).unwrap();
        assert_eq!(
            run(json!({"plan": {"decision": 7}})).unwrap_err(),
            "input plan/decision: 7 is not of type \"string\""
        );
        let unknown = json!({"inputs": {"plan": {"type": "json", "packet": "runx.test.other.v1"}}});
        let err = preflight(
            &json!({}),
            &unknown,
            json!({"plan": {}}).as_object().unwrap(),
            &packets,
        )
        .unwrap_err();
        assert!(
            err.contains("declares packet schema 'runx.test.other.v1'"),
            "{err}"
        );
    }

    #[test]
    fn preflight_checks_declared_types_and_schemas_before_anything_runs() {
        let runner = json!({"inputs": {
            "url": {"type": "string", "required": true, "schema": {"pattern": "^https?://"}},
            "max_bytes": {"type": "number", "default": 10, "schema": {"minimum": 1}},
            "allowlist": {"type": "array", "required": false},
        }});
        let run = |inputs: Value| {
            preflight(
                &json!({}),
                &runner,
                inputs.as_object().unwrap_or(&Map::new()),
                &PacketCatalog::empty(),
            )
        };
        let ok = run(json!({"url": "https://a.example/"})).unwrap();
        assert_eq!(ok["max_bytes"], 10, "defaults are filled in first");
        assert_eq!(
            run(json!({"url": 7})).unwrap_err(),
            "input url must be a string, got a number"
        );
        assert_eq!(
            run(json!({"url": "https://a", "allowlist": "a.example"})).unwrap_err(),
            "input allowlist must be an array, got a string"
        );
        let err = run(json!({"url": "ftp://a"})).unwrap_err();
        assert!(err.starts_with("input url: "), "{err}");
        let err = run(json!({"url": "https://a", "max_bytes": 0})).unwrap_err();
        assert!(err.starts_with("input max_bytes: "), "{err}");
    }

    #[test]
    fn step_inputs_follow_runx_materialisation() {
        let graph_inputs = json!({"location": "here", "horizon": "soon", "extra": 1})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let step = json!({
            "inputs": {"location": "$input.location", "purpose": "$input.purpose", "fixed": "x"},
            "context": {"draft": "interpret.draft.data"},
        });
        let outputs = json!({"interpret": {"draft": {"data": {"ok": true}}}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let resolved = step_inputs(&step, &graph_inputs, &outputs);
        assert_eq!(
            resolved.map(Value::Object),
            Ok(
                json!({"location": "here", "horizon": "soon", "extra": 1, "fixed": "x", "draft": {"ok": true}})
            )
        );
    }

    #[test]
    fn projection_exposes_declared_outputs_and_packets() {
        let step = json!({
            "run": {"type": "agent-task", "outputs": {"draft": "object"}},
            "artifacts": {"named_emits": {"draft": "draft"}, "wrap_as": "packet"},
        });
        let projected = project(&step, &json!({"draft": {"a": 1}}), &Producer::Source);
        assert_eq!(
            projected.map(Value::Object),
            Ok(json!({"draft": {"data": {"a": 1}}, "packet": {"data": {"draft": {"a": 1}}}}))
        );
        assert!(project(&step, &json!({"other": 1}), &Producer::Source).is_err());
    }

    #[test]
    fn when_reads_prior_outputs_and_propagates_skips() {
        let outputs = json!({"a": {"decision": "ready"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(!should_skip(
            &json!({"field": "a.decision", "equals": "ready"}),
            &outputs,
            &[]
        ));
        assert!(should_skip(
            &json!({"field": "a.decision", "not_equals": "ready"}),
            &outputs,
            &[]
        ));
        assert!(should_skip(
            &json!({"field": "b.decision", "equals": "x"}),
            &outputs,
            &["b".to_owned()]
        ));
        assert!(!should_skip(
            &json!({"field": "a.missing", "equals": "x"}),
            &outputs,
            &[]
        ));
    }
}
