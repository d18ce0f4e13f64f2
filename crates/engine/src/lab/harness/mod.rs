//! Harness replay: run every declared case of a Runx package and judge it by its `expect`.
//!
//! Runx's `runx harness <pkg>` runs the inline `X.yaml` cases first and then every
//! `fixtures/*.yaml`, each in a disposable workspace so cases cannot satisfy each other, and
//! reports `{status, case_count, assertion_error_count, assertion_errors, case_names,
//! receipt_ids, graph_case_count}`. Every folder a replay makes outside the workspace is named
//! for the process that owns it, so the ones a killed run leaves are swept later ([`scratch`]). This module does the same over a package already read into
//! memory ([`SnapshotFile`]s) and an execution profile and cases already parsed into JSON, so the
//! strict YAML parser and this replay stay independent.
//!
//! What a case may touch is decided here, not by the package: agent work comes only from
//! `caller.answers`, human gates only from `caller.approvals`, HTTP only from
//! `caller.http_responses` (there is no transport at all), JavaScript runs in an embedded
//! sandbox with no clock, randomness, filesystem or network (in a worker process killed at the
//! wall limit when [`HarnessOptions::js_worker`] is set), and a `cli-tool` process sees a
//! scrubbed environment and an empty home. Native `runx.skill.*` tools are the caller's,
//! through [`NativeTools`]; sealing a receipt per case is the caller's, through [`CaseSealer`].

mod assertions;
pub(crate) mod cli_tool;
pub(crate) mod javascript;
pub(crate) mod local_tool;
pub(crate) mod packet_inputs;
mod packets;
mod result_contract;
pub(crate) mod run;
pub(crate) mod scratch;
mod web;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mindrune_core::SnapshotFile;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use packets::PacketCatalog;
pub(crate) use run::run_case;

/// The key under which a fixture document carries its path in the package: `$` keeps it off
/// every key a fixture may declare.
pub(crate) const FIXTURE_PATH_KEY: &str = "$fixture_path";

/// Native tools the caller implements (`runx.skill.inspect`, `plan`, `bind`, `apply`, ...).
pub trait NativeTools {
    /// Run `tool` with the step's materialised inputs inside the case's scratch copy of the
    /// package. Return `None` for a tool this implementation does not know, so the replay can
    /// report it as unsupported; otherwise the tool's claim, an object whose top-level keys are
    /// its output packets (`{"apply_result": {...}}`), which the replay exposes as
    /// `{"apply_result": {"data": {...}}}` like every packet.
    fn call(&mut self, tool: &str, inputs: &Value, scratch: &Path)
    -> Option<Result<Value, String>>;
}

/// A [`NativeTools`] that knows no tool, for packages that use only the built-in ones.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoNativeTools;

impl NativeTools for NoNativeTools {
    fn call(&mut self, _: &str, _: &Value, _: &Path) -> Option<Result<Value, String>> {
        None
    }
}

/// Seals one receipt per case; the receipt store owns the real implementation.
pub trait CaseSealer {
    /// Seal `case` and return the receipt id.
    fn seal(&mut self, case: &CaseOutcome) -> Result<String, String>;
}

/// How a case ended, in the fixture vocabulary of `expect.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Sealed,
    Failure,
    NeedsAgent,
    PolicyDenied,
    Escalated,
}

impl CaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sealed => "sealed",
            Self::Failure => "failure",
            Self::NeedsAgent => "needs_agent",
            Self::PolicyDenied => "policy_denied",
            Self::Escalated => "escalated",
        }
    }

    /// The receipt disposition Runx seals for this status (`status_from_disposition` inverted).
    pub fn disposition(self) -> &'static str {
        match self {
            Self::Sealed => "closed",
            Self::Failure => "failed",
            Self::NeedsAgent | Self::Escalated => "deferred",
            Self::PolicyDenied => "blocked",
        }
    }

    /// Runx reports a deferred receipt's state as `deferred` and every other as `sealed`.
    pub fn state(self) -> &'static str {
        match self {
            Self::NeedsAgent | Self::Escalated => "deferred",
            _ => "sealed",
        }
    }
}

/// Why Runx would stop a case before any step ran: its report then names no receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStop {
    /// The case's inputs do not meet the runner's declared inputs
    /// (`materialize_complete_runner_inputs`): `expected status sealed, got failure`.
    Inputs,
    /// The run was refused before it started (a result producer without a contract, a cycle,
    /// an unresolved tool): `expected status sealed, execution failed: skill run failed: …`.
    Refused,
    /// The run failed as a whole (an agent runner declaring no output):
    /// `expected status sealed, execution failed: skill '<runner>' failed: …`.
    Failed,
}

/// One step of a graph run, in execution order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTrace {
    pub step_id: String,
    /// `succeeded`, `failed`, `needs_agent`, `policy_denied`, `declined` or `skipped`.
    pub status: String,
}

/// Everything a case produced; what a receipt is sealed from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseOutcome {
    pub name: String,
    pub runner: String,
    /// True when the runner is `type: graph`.
    pub graph: bool,
    pub status: CaseStatus,
    /// The graph's steps (empty for a single-source runner, as in Runx).
    pub steps: Vec<StepTrace>,
    /// The run's result: the `result_from` steps' outputs for a graph, otherwise the source's.
    pub output: Value,
    /// Each executed step's addressable outputs (declared outputs and `{data: ...}` packets).
    pub step_outputs: Map<String, Value>,
    /// The runner inputs after defaults, as the run saw them.
    pub inputs: Value,
    pub reason_code: String,
    pub disposition: String,
    pub state: String,
    /// What Runx's receipt of this run would say of it (`step <runner> completed`, `graph
    /// <name> completed`), which a fixture file's mismatch quotes.
    pub runx_summary: String,
    /// A failed runner's diagnostic in Runx's words (its stderr), which a fixture file's
    /// mismatch quotes as `skill_failure`.
    pub runx_failure: Option<String>,
    /// Why the run did not seal, when it did not.
    pub error: Option<String>,
    /// Set when Runx would have stopped the case before it ran; no receipt is sealed then.
    pub stop: Option<CaseStop>,
    /// Filled in by [`run_harness`] once the sealer has returned.
    pub receipt_id: Option<String>,
    /// Filled in by [`run_harness`] from the case's `expect`.
    pub assertion_errors: Vec<String>,
}

/// The package-level verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessStatus {
    Passed,
    Failed,
    NotDeclared,
}

/// Runx's `PackageHarnessReport`, field for field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessReport {
    pub status: HarnessStatus,
    pub case_count: usize,
    pub assertion_error_count: usize,
    /// Each names its case and the JSON path, e.g.
    /// `weather-forecast-packet: step_outputs.validate.decision: expected "ready", got "refused"`.
    pub assertion_errors: Vec<String>,
    pub case_names: Vec<String>,
    pub receipt_ids: Vec<String>,
    pub graph_case_count: usize,
}

/// Knobs that are the replay's, not the package's.
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    /// The instant every case is stamped with (`fetched_at` and the like); fixed so a replay
    /// is reproducible, as Runx's harness uses a default `created_at`.
    pub created_at: String,
    /// Wall limit of a `cli-tool` process whose runner declares no `timeout_seconds`.
    pub cli_timeout: Duration,
    /// The worker process `type: javascript` modules run in ([`javascript::run_in_worker`]).
    /// `None` runs them in this process ([`javascript::run_module`]), whose interrupt handler
    /// stops JavaScript loops at the wall limit but not a builtin looping in C
    /// (`Array.prototype.join.call({length: 2 ** 53 - 1}, "")`), which then hangs the caller:
    /// only the worker bounds every module. The CLI always sets it.
    pub js_worker: Option<javascript::WorkerCommand>,
    /// Told of each case as the replay reaches it, for a progress display (the CLI draws a
    /// bar); `None` tells nobody.
    pub on_case: Option<CaseProgress>,
    /// The folder of the package replayed, from which a graph's `skill:` steps naming other
    /// folders are read when its result producers are admitted, as Runx reads them before a
    /// graph runs; `None` reads no other package. Replaying a package from its folder sets it.
    pub package_dir: Option<PathBuf>,
    /// The folder Runx would run in (its `RUNX_CWD`): the workspace whose `tools` folder holds
    /// local tool manifests a graph step names. The CLI sets
    /// the repository root; `None` takes the nearest folder at or above the package marked as
    /// a Runx workspace, else the package's own folder, as Runx does without one.
    pub workspace_root: Option<PathBuf>,
}

impl Default for HarnessOptions {
    fn default() -> Self {
        Self {
            created_at: "2026-01-01T00:00:00Z".to_owned(),
            cli_timeout: Duration::from_secs(60),
            js_worker: None,
            on_case: None,
            package_dir: None,
            workspace_root: None,
        }
    }
}

/// `(done, total, next)`; see [`CaseProgress`].
type TellCase = dyn Fn(usize, usize, &str) + Send + Sync;

/// What hears of a replay's cases: `(done, total, next)` before each case (`next` its name),
/// and `(total, total, "")` once the last is done. Only the outermost replay tells: a case
/// that replays another package's harness (a skill-lab fixture building a package) runs
/// through the same options, and its cases are not the ones the operator is waiting for.
#[derive(Clone)]
pub struct CaseProgress {
    tell: Arc<TellCase>,
    /// Replays running through these options now, nested ones included.
    running: Arc<AtomicUsize>,
}

impl CaseProgress {
    pub fn new(tell: impl Fn(usize, usize, &str) + Send + Sync + 'static) -> CaseProgress {
        CaseProgress {
            tell: Arc::new(tell),
            running: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn enter(&self) -> Replaying<'_> {
        let outer = self.running.fetch_add(1, Ordering::SeqCst) == 0;
        Replaying {
            progress: self,
            outer,
        }
    }
}

impl std::fmt::Debug for CaseProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CaseProgress")
    }
}

/// One replay under way; it tells only when it is the outermost.
struct Replaying<'a> {
    progress: &'a CaseProgress,
    outer: bool,
}

impl Replaying<'_> {
    fn tell(&self, done: usize, total: usize, next: &str) {
        if self.outer {
            (self.progress.tell)(done, total, next);
        }
    }
}

impl Drop for Replaying<'_> {
    fn drop(&mut self) {
        self.progress.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The report and the per-case outcomes behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HarnessRun {
    pub report: HarnessReport,
    pub cases: Vec<CaseOutcome>,
}

/// The cases in Runx's order: the profile's inline `harness.cases` first, then the fixture
/// documents sorted by their path (callers pass `fixtures/*.yaml` already parsed).
pub fn declared_cases(profile: &Value, fixtures: &[(String, Value)]) -> Vec<Value> {
    let mut cases: Vec<Value> = profile
        .pointer("/harness/cases")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut sorted: Vec<&(String, Value)> = fixtures.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    cases.extend(sorted.into_iter().map(|(_, doc)| doc.clone()));
    cases
}

/// Replay every case, seal each, judge each, and report.
pub fn run_harness(
    files: &[SnapshotFile],
    profile: &Value,
    cases: &[Value],
    tools: &mut dyn NativeTools,
    sealer: &mut dyn CaseSealer,
    packets: &PacketCatalog,
    options: &HarnessOptions,
) -> HarnessRun {
    let mut outcomes = Vec::with_capacity(cases.len());
    let mut report = HarnessReport {
        status: HarnessStatus::NotDeclared,
        case_count: cases.len(),
        assertion_error_count: 0,
        assertion_errors: Vec::new(),
        case_names: Vec::new(),
        receipt_ids: Vec::new(),
        graph_case_count: 0,
    };
    let replaying = options.on_case.as_ref().map(CaseProgress::enter);
    let tell = |done: usize, next: &str| {
        if let Some(replaying) = &replaying
            && !cases.is_empty()
        {
            replaying.tell(done, cases.len(), next);
        }
    };
    for (done, case) in cases.iter().enumerate() {
        tell(
            done,
            case.get("name")
                .and_then(Value::as_str)
                .unwrap_or("unnamed"),
        );
        let mut outcome = run_case(files, profile, case, tools, packets, options);
        let fixture = case
            .get(FIXTURE_PATH_KEY)
            .and_then(Value::as_str)
            .map(|path| fixture_file_path(path, options));
        let graph_fixture =
            fixture.is_some() && case.get("kind").and_then(Value::as_str) == Some("graph");
        // Runx's graph fixture run returns the failed step's error instead of a sealed run, so
        // the fixture fails whatever its `expect.status` (`run_graph_fixture`).
        let graph_fixture_failed =
            graph_fixture && outcome.stop.is_none() && outcome.status == CaseStatus::Failure;
        // A run that fails before it seals fails a fixture file the same way, where an inline
        // case expecting `failure` passes (`run_skill_fixture` returns the error).
        let fixture_failed =
            graph_fixture_failed || (fixture.is_some() && outcome.stop == Some(CaseStop::Failed));
        // Runx seals nothing for a case it stopped before it ran, nor for one left waiting on
        // an agent (its output names no `receipt_id`).
        if outcome.stop.is_none()
            && outcome.status != CaseStatus::NeedsAgent
            && !graph_fixture_failed
        {
            match sealer.seal(&outcome) {
                Ok(id) => outcome.receipt_id = Some(id),
                Err(err) => outcome
                    .assertion_errors
                    .push(format!("{}: receipt: sealing failed: {err}", outcome.name)),
            }
        }
        match &fixture {
            Some(path) if fixture_failed => {
                // A failed graph's result holds its error in Runx's words; the Lab's `error`
                // keeps its receipt's.
                let message = outcome
                    .output
                    .get("message")
                    .and_then(Value::as_str)
                    .filter(|_| graph_fixture_failed)
                    .or(outcome.error.as_deref())
                    .unwrap_or("the run failed");
                outcome
                    .assertion_errors
                    .push(format!("{}: {message}", path.display()));
            }
            Some(path) => outcome.assertion_errors.extend(
                first_mismatch(case, &outcome).map(|error| fixture_error(path, &error, &outcome)),
            ),
            None => outcome
                .assertion_errors
                .extend(check_expectations(case, &outcome)),
        }
        // Runx lists a fixture file only once its replay passed (`replay_conventional_fixtures`);
        // an inline case is listed whatever its verdict.
        let listed = fixture.is_none() || outcome.assertion_errors.is_empty();
        if listed {
            report.case_names.push(outcome.name.clone());
            report
                .receipt_ids
                .extend(outcome.receipt_id.iter().cloned());
            // As Runx counts them: an inline case whose runner is a graph, or a fixture file
            // of `kind: graph` (a fixture of `kind: skill` running a graph runner is not one).
            // Only a fixture document has a `kind`.
            let graph_case = match case.get("kind").and_then(Value::as_str) {
                Some(kind) => kind == "graph",
                None => outcome.graph,
            };
            if graph_case {
                report.graph_case_count += 1;
            }
        }
        report
            .assertion_errors
            .extend(outcome.assertion_errors.iter().cloned());
        outcomes.push(outcome);
    }
    tell(cases.len(), "");
    report.assertion_error_count = report.assertion_errors.len();
    report.status = if cases.is_empty() {
        HarnessStatus::NotDeclared
    } else if report.assertion_errors.is_empty() {
        HarnessStatus::Passed
    } else {
        HarnessStatus::Failed
    };
    HarnessRun {
        report,
        cases: outcomes,
    }
}

/// Judge one outcome by its case's `expect` block as Runx's harness does
/// (`runx-runtime/src/execution/skill_front/inline_harness.rs`): the first mismatch only,
/// worded `<case>: harness expectation mismatch at <field>: expected <x>, actual <y>`; a case
/// Runx stops before it runs is worded apart (`inline_harness_execution_error`,
/// `inline_harness_status_error`).
pub(crate) fn check_expectations(case: &Value, outcome: &CaseOutcome) -> Vec<String> {
    first_mismatch(case, outcome)
        .map(|error| format!("{}: {error}", outcome.name))
        .into_iter()
        .collect()
}

/// Where Runx names a fixture file in its errors: its absolute path. The Lab names the copy it
/// replayed, from the package folder it was given.
fn fixture_file_path(path: &str, options: &HarnessOptions) -> PathBuf {
    let path = options
        .package_dir
        .as_ref()
        .map_or_else(|| PathBuf::from(path), |dir| dir.join(path));
    std::path::absolute(&path).unwrap_or(path)
}

/// A fixture file's failed expectation as Runx words it (`HarnessExpectationFailure`): the
/// fixture's path, then what the run's receipt and result said. The receipt is the Lab's own,
/// the one it sealed for this replay; none is named where the Lab sealed none.
fn fixture_error(path: &Path, error: &str, outcome: &CaseOutcome) -> String {
    let path = path.display();
    if outcome.receipt_id.is_none() {
        return format!("{path}: {error}");
    }
    let mut disposition = outcome.disposition.clone();
    if let Some(first) = disposition.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    // Where the Lab does not know Runx's words for a failure (a wall limit, a packet check),
    // its own stand in rather than an empty field.
    let skill_failure = outcome.runx_failure.as_deref().or(outcome
        .error
        .as_deref()
        .filter(|_| outcome.status == CaseStatus::Failure));
    let skill_value = match &outcome.output {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        value => value.to_string(),
    };
    format!(
        "{path}: {error}; receipt={}; disposition={disposition}; reason={}; summary={}; \
         skill_value={}; skill_failure={}",
        outcome.receipt_id.as_deref().unwrap_or_default(),
        outcome.reason_code,
        truncate_diagnostic(&outcome.runx_summary),
        truncate_diagnostic(&skill_value),
        truncate_diagnostic(skill_failure.unwrap_or_default()),
    )
}

/// Runx trims each diagnostic and cuts it at 800 bytes (`truncate_diagnostic`).
fn truncate_diagnostic(value: &str) -> String {
    const LIMIT: usize = 800;
    let trimmed = value.trim();
    if trimmed.len() <= LIMIT {
        return trimmed.to_owned();
    }
    let mut end = LIMIT;
    while !trimmed.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...[truncated]", &trimmed[..end])
}

fn mismatch(
    field: &str,
    expected: impl std::fmt::Display,
    actual: impl std::fmt::Display,
) -> String {
    format!("harness expectation mismatch at {field}: expected {expected}, actual {actual}")
}

fn first_mismatch(case: &Value, outcome: &CaseOutcome) -> Option<String> {
    let expect = case.get("expect").cloned().unwrap_or(Value::Null);
    let declared = expect.get("status").and_then(Value::as_str);
    match outcome.stop {
        Some(CaseStop::Inputs) => {
            return declared
                .filter(|status| *status != "failure")
                .map(|status| format!("expected status {status}, got failure"));
        }
        Some(stop @ (CaseStop::Refused | CaseStop::Failed)) => {
            let error = outcome.error.as_deref().unwrap_or_default();
            let error = if stop == CaseStop::Refused {
                format!("skill run failed: {error}")
            } else {
                error.to_owned()
            };
            return match declared {
                Some("failure") => None,
                Some(status) => Some(format!(
                    "expected status {status}, execution failed: {error}"
                )),
                None => Some(error),
            };
        }
        None => {}
    }

    // A case that names no status expects the run to seal: a failing case must never pass
    // because its author left the line out.
    let expected = declared.unwrap_or("sealed");
    if expected != outcome.status.as_str() {
        let mut error = mismatch("expect.status", expected, outcome.status.as_str());
        // Where the Lab refuses what Runx runs (a file, tool or package outside the package),
        // Runx has no wording: the refusal is named, for the validator's note on it.
        if let Some(refusal) = outcome.error.as_deref().filter(|error| {
            [
                cli_tool::ARG_OUTSIDE_PACKAGE,
                local_tool::TOOL_OUTSIDE_PACKAGE,
                run::nested::SKILL_OUTSIDE_PACKAGE,
            ]
            .iter()
            .any(|marker| error.contains(marker))
        }) {
            error.push_str(&format!(" ({refusal})"));
        }
        return Some(error);
    }

    if let Some(receipt) = expect.get("receipt").and_then(Value::as_object)
        && let Some(error) = check_receipt(receipt, outcome)
    {
        return Some(error);
    }

    if let Some(steps) = expect.get("steps").and_then(Value::as_array)
        && !steps.is_empty()
    {
        let actual: Vec<&str> = outcome
            .steps
            .iter()
            .filter(|step| step.status != "skipped")
            .map(|step| step.step_id.as_str())
            .collect();
        if !steps
            .iter()
            .map(Value::as_str)
            .eq(actual.iter().copied().map(Some))
        {
            let expected: Vec<String> = steps
                .iter()
                .map(|step| {
                    step.as_str()
                        .map_or_else(|| step.to_string(), str::to_owned)
                })
                .collect();
            return Some(mismatch(
                "expect.steps",
                expected.join(","),
                actual.join(","),
            ));
        }
    }

    if let Some(answers) = case.pointer("/caller/answers").and_then(Value::as_object) {
        let mut observed = vec![outcome.output.clone()];
        observed.extend(outcome.step_outputs.values().cloned());
        for (request_id, answer) in answers {
            if !observed
                .iter()
                .any(|seen| assertions::observable(answer, seen))
            {
                return Some(format!(
                    "caller.answers.{request_id}: expected the supplied answer to be observable \
                     in the run's output, got no step or result that contains it"
                ));
            }
        }
    }

    if let Some(expectation) = expect.get("output")
        && let Some(error) = json_expectation(expectation, &outcome.output, "expect.output")
    {
        return Some(error);
    }
    if let Some(per_step) = expect.get("step_outputs").and_then(Value::as_object) {
        for (step_id, expectation) in per_step {
            let actual = outcome
                .step_outputs
                .get(step_id)
                .cloned()
                .unwrap_or(Value::Null);
            if let Some(error) = json_expectation(
                expectation,
                &actual,
                &format!("expect.step_outputs.{step_id}"),
            ) {
                return Some(error);
            }
        }
    }
    None
}

fn json_expectation(expectation: &Value, actual: &Value, path: &str) -> Option<String> {
    let exact = expectation.get("exact");
    let subset = expectation.get("subset");
    if exact.is_none() && subset.is_none() {
        return Some(format!(
            "{path}: expected an exact or subset expectation, got {expectation}"
        ));
    }
    let failed = exact
        .and_then(|expected| assertions::exact(expected, actual, &format!("{path}.exact")).err())
        .or_else(|| {
            subset.and_then(|expected| {
                assertions::subset(expected, actual, &format!("{path}.subset")).err()
            })
        });
    failed.map(|m| mismatch(&m.path, m.expected, m.actual))
}

/// The receipt fields a replay can judge without the sealed receipt's bytes: the schema (the
/// sealer writes `runx.receipt.v1`), the seal's state, disposition and reason code, the number
/// of child (step) receipts and, once sealed, the receipt id. Digest and signature fields are
/// the receipt store's to verify and are not second-guessed here.
fn check_receipt(receipt: &Map<String, Value>, outcome: &CaseOutcome) -> Option<String> {
    let mut errors = Vec::new();
    let mut push = |path: String, expected: String, actual: String| {
        errors.push(format!("{path}: expected {expected}, got {actual}"));
    };
    let text = |key: &str| receipt.get(key).and_then(Value::as_str);
    let schema = text("schema").unwrap_or("runx.receipt.v1");
    if schema != "runx.receipt.v1" {
        push(
            "receipt.schema".to_owned(),
            Value::from(schema).to_string(),
            Value::from("runx.receipt.v1").to_string(),
        );
    }
    for (key, actual) in [
        ("state", outcome.state.as_str()),
        ("disposition", outcome.disposition.as_str()),
        ("reason_code", outcome.reason_code.as_str()),
    ] {
        if let Some(expected) = text(key)
            && expected != actual
        {
            push(
                format!("receipt.{key}"),
                Value::from(expected).to_string(),
                Value::from(actual).to_string(),
            );
        }
    }
    if let Some(expected) = receipt.get("child_receipt_count").and_then(Value::as_u64) {
        let actual = outcome
            .steps
            .iter()
            .filter(|step| step.status != "skipped")
            .count();
        if usize::try_from(expected).ok() != Some(actual) {
            push(
                "receipt.child_receipt_count".to_owned(),
                expected.to_string(),
                actual.to_string(),
            );
        }
    }
    if let (Some(expected), Some(actual)) = (text("receipt_id"), outcome.receipt_id.as_deref())
        && expected != actual
    {
        push(
            "receipt.receipt_id".to_owned(),
            Value::from(expected).to_string(),
            Value::from(actual).to_string(),
        );
    }
    errors.into_iter().next()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A sealer that seals nothing.
    struct NoSeal;

    impl CaseSealer for NoSeal {
        fn seal(&mut self, _case: &CaseOutcome) -> Result<String, String> {
            Err("not sealed".to_owned())
        }
    }

    fn heard() -> (CaseProgress, Arc<Mutex<Vec<String>>>) {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        let progress = CaseProgress::new(move |done, total, next| {
            log.lock().unwrap().push(format!("{done}/{total} {next}"));
        });
        (progress, heard)
    }

    #[test]
    fn a_replay_tells_each_case_as_it_starts_and_once_when_all_are_done() {
        let (progress, heard) = heard();
        let options = HarnessOptions {
            on_case: Some(progress),
            ..HarnessOptions::default()
        };
        // No runner is declared: each case fails at once, which is all this needs.
        let cases = [
            serde_json::json!({"name": "first"}),
            serde_json::json!({"inputs": {}}),
        ];
        let run = run_harness(
            &[],
            &serde_json::json!({}),
            &cases,
            &mut NoNativeTools,
            &mut NoSeal,
            &PacketCatalog::empty(),
            &options,
        );
        assert_eq!(run.report.case_count, 2);
        assert_eq!(*heard.lock().unwrap(), ["0/2 first", "1/2 unnamed", "2/2 "]);
        // No cases, nothing to tell.
        heard.lock().unwrap().clear();
        run_harness(
            &[],
            &serde_json::json!({}),
            &[],
            &mut NoNativeTools,
            &mut NoSeal,
            &PacketCatalog::empty(),
            &options,
        );
        assert!(heard.lock().unwrap().is_empty());
    }

    #[test]
    fn only_the_outermost_replay_tells() {
        let (progress, heard) = heard();
        let outer = progress.enter();
        {
            let nested = progress.clone();
            let inner = nested.enter();
            inner.tell(0, 5, "a nested case");
        }
        outer.tell(1, 2, "the operator's case");
        drop(outer);
        // Once the outer replay ended, the next one is outermost again.
        progress.enter().tell(0, 1, "again");
        assert_eq!(
            *heard.lock().unwrap(),
            ["1/2 the operator's case", "0/1 again"]
        );
    }
}
