//! The Runx skill package model: SKILL.md frontmatter, the `X.yaml` execution profile and the
//! harness fixtures, checked the way Runx's parser (`runx-parser`) checks them, so a package
//! the Skill Lab accepts is one Runx accepts, and a refusal names the file, the line and the
//! field path with a message that says what to do.
//!
//! The rules follow `runx-parser` at the AutoMerchLab fork's HEAD (`skill.rs`, `runner.rs`,
//! `skill/runner_definition.rs`, `skill/source.rs`, `skill/governance.rs`, `skill/catalog.rs`,
//! `graph/step.rs`, `graph/validate.rs`, `harness_fixture.rs`, `package/validate.rs`):
//!
//! - SKILL.md must open with a frontmatter block (`^---\r?\n(.*?)\r?\n---`) with a non-empty
//!   `name`. Unknown frontmatter keys are kept, not refused, as Runx keeps them in its raw
//!   frontmatter; but inside a package Runx refuses execution metadata in the manual
//!   (`source`, `inputs`, `runners`, `retry`, ... and any `runx.*` key but `category` and
//!   `tags`), because it belongs in X.yaml. [`parse_skill_md`] reads a manual on its own with
//!   the legacy fields; [`load_package`] adds the package rule.
//! - X.yaml has a closed top-level set, a closed runner field set, closed catalog enums,
//!   closed input definitions, graph steps with exactly one target, and refuses the retired
//!   step keys (`instructions`, `effect_family`, `sync`, `stage`) and `{{...}}` bindings.
//! - Fixtures under `fixtures/` have a closed field set (Runx deserializes them with
//!   `deny_unknown_fields`), as do inline `harness.cases`.
//!
//! Everything here is pure: the caller reads the package folder (see [`super::snapshot`]) and
//! hands over its files. Checks that need more than the files (the JavaScript worker, the tool
//! catalog, nested graph-stage profiles) belong to the harness replay.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::snapshot::SnapshotFile;
use super::yaml::{self, YamlEntry, YamlError, YamlNode, YamlValue};

/// The operator manual every package has.
pub const SKILL_FILE: &str = "SKILL.md";

/// The execution profile every package has.
pub const PROFILE_FILE: &str = "X.yaml";

/// The top-level keys of X.yaml (`MANIFEST_FIELDS`, plus `input_definitions`).
pub const PROFILE_FIELDS: [&str; 10] = [
    "skill",
    "version",
    "runx",
    "policy",
    "emits",
    "catalog",
    "credentials",
    "input_definitions",
    "runners",
    "harness",
];

/// The keys a runner may have: Runx's `RUNNER_FIELDS`, in its order (which its refusal
/// lists). It has no `sandbox`: Runx refuses that field (`runners.<name>.sandbox is not
/// supported`), so MindRune does too.
pub const RUNNER_FIELDS: [&str; 47] = [
    "act",
    "agent",
    "agent_card_url",
    "agent_identity",
    "allowed_tools",
    "args",
    "arguments",
    "artifacts",
    "auth",
    "command",
    "credential",
    "context",
    "context_skills",
    "cwd",
    "default",
    "environment",
    "examples",
    "execution",
    "external_adapter",
    "export",
    "graph",
    "headers",
    "hook",
    "http",
    "idempotency",
    "input_mode",
    "inputs",
    "method",
    "module",
    "mutating",
    "outputs",
    "pages",
    "policy",
    "retry",
    "risk",
    "runx",
    "runtime",
    "server",
    "scopes",
    "source",
    "task",
    "thread_outbox_provider",
    "timeout_seconds",
    "tool",
    "type",
    "url",
    "allow_private_network",
];

/// The keys of an executable source (`SOURCE_FIELDS`): a runner's `source:` block, an inline
/// graph step's `run:` block, or the runner fields that make up its source when it has no
/// `source:` block.
pub const SOURCE_FIELDS: [&str; 22] = [
    "act",
    "agent",
    "agent_card_url",
    "agent_identity",
    "args",
    "arguments",
    "command",
    "cwd",
    "environment",
    "export",
    "external_adapter",
    "graph",
    "input_mode",
    "module",
    "outputs",
    "pages",
    "server",
    "task",
    "thread_outbox_provider",
    "timeout_seconds",
    "tool",
    "type",
];

/// The source (and runner) types Runx runs (`SourceKind`).
pub const SOURCE_TYPES: [&str; 9] = [
    "cli-tool",
    "javascript",
    "mcp",
    "a2a",
    "agent",
    "agent-task",
    "graph",
    "external-adapter",
    "thread-outbox-provider",
];

/// The keys of an input definition.
pub const INPUT_FIELDS: [&str; 7] = [
    "type",
    "required",
    "description",
    "default",
    "artifact",
    "packet",
    "schema",
];

/// The input types; `string` when `type` is left out.
pub const INPUT_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "json", "number", "object", "string",
];

/// The keys of `catalog`.
pub const CATALOG_FIELDS: [&str; 12] = [
    "approval",
    "audience",
    "canonical_skill",
    "completion",
    "execution",
    "kind",
    "part_of",
    "provider",
    "requires_adapter",
    "role",
    "runtime_path",
    "visibility",
];

/// The keys of a standalone fixture file.
pub const FIXTURE_FIELDS: [&str; 11] = [
    "name",
    "kind",
    "target",
    "runner",
    "setup",
    "inputs",
    "env",
    "caller",
    "operator_journeys",
    "expect",
    "metadata",
];

/// The keys of an inline `harness.cases` entry.
pub const CASE_FIELDS: [&str; 7] = [
    "name",
    "runner",
    "inputs",
    "env",
    "caller",
    "expect",
    "operator_journeys",
];

/// The keys of a fixture's or case's `caller`: agent answers, human approvals, and the
/// transport and provider replies the harness substitutes.
pub const CALLER_FIELDS: [&str; 4] = [
    "answers",
    "approvals",
    "http_responses",
    "provider_responses",
];

/// The keys of `expect`.
pub const EXPECT_FIELDS: [&str; 5] = ["status", "receipt", "steps", "output", "step_outputs"];

/// The statuses a case may expect.
pub const EXPECT_STATUSES: [&str; 5] = [
    "sealed",
    "failure",
    "needs_agent",
    "policy_denied",
    "escalated",
];

/// The keys of `expect.receipt`.
pub const RECEIPT_FIELDS: [&str; 13] = [
    "schema",
    "body_digest",
    "receipt_id",
    "receipt_digest",
    "harness_id",
    "state",
    "disposition",
    "reason_code",
    "act_ids",
    "decision_ids",
    "child_receipt_refs",
    "child_receipt_count",
    "verification_refs",
];

/// Receipt expectation keys from the old receipt shape, refused with their own message.
const RETIRED_RECEIPT_FIELDS: [&str; 7] = [
    "kind",
    "skill_name",
    "source_type",
    "graph_name",
    "owner",
    "skill_execution",
    "graph_execution",
];

/// The keys of an operator journey claim (`confusors` arrived after Runx's typed claim, and
/// the shipped packages use it).
pub const JOURNEY_FIELDS: [&str; 6] = [
    "mode",
    "request",
    "expected_outcome",
    "prior_evidence",
    "must_not_repeat",
    "confusors",
];

/// Frontmatter keys Runx refuses in a package's SKILL.md: execution metadata lives in X.yaml.
pub const MANUAL_EXECUTION_FIELDS: [&str; 15] = [
    "allowed_tools",
    "artifacts",
    "auth",
    "credentials",
    "execution",
    "harness",
    "idempotency",
    "inputs",
    "mutating",
    "outputs",
    "retry",
    "risk",
    "runners",
    "runtime",
    "source",
];

/// The wall a JavaScript worker gets when the runner does not set `timeout_seconds`.
pub const JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS: u64 = 2;

/// The most a JavaScript runner may ask for (`MAX_WALL_MILLISECONDS / 1000`).
pub const JAVASCRIPT_MAX_TIMEOUT_SECONDS: u64 = 30;

/// The most receipts one fixture may seed.
const MAX_SETUP_RECEIPTS: usize = 32;

/// Why a package was refused. Where Runx refuses the same package (the cases in
/// `shared/data/runx/oracle/package-refusals.txt`), it displays as Runx's own text,
/// `<file>: <Runx's message>`, with MindRune's `at <file>:<line>: <field path>` as a second
/// line; otherwise as `<file>:<line>: <field path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    /// SKILL.md or X.yaml is not among the files.
    #[error(
        "{file}: required package file is missing\n  a Runx package needs both SKILL.md and X.yaml"
    )]
    MissingFile {
        /// The missing file's name.
        file: String,
    },
    /// A file Runx reads as text is not UTF-8.
    #[error("{file}:{line}: the file is not UTF-8 text; save it as UTF-8")]
    NotText {
        /// The file.
        file: String,
        /// The line of the first invalid byte.
        line: usize,
    },
    /// The text is outside Runx's YAML subset (or not YAML at all).
    #[error(transparent)]
    Yaml(#[from] YamlError),
    /// A field breaks a Runx rule.
    #[error("{}", render_invalid(.file, *.line, .field, .message, .runx.as_deref()))]
    Invalid {
        /// The file.
        file: String,
        /// The 1-based line of the field (its key, when it has one).
        line: usize,
        /// The field's path, such as `runners.build.graph.steps[2].instructions`.
        field: String,
        /// What is wrong and what to do about it.
        message: String,
        /// Runx's own text for the same refusal (`<path>: <message>`, the path being the one
        /// Runx names, which for a missing file is that file), when MindRune reproduces it.
        runx: Option<String>,
    },
}

fn render_invalid(
    file: &str,
    line: usize,
    field: &str,
    message: &str,
    runx: Option<&str>,
) -> String {
    match runx {
        Some(runx) => format!("{runx}\n  at {file}:{line}: {field}: {message}"),
        None => format!("{file}:{line}: {field}: {message}"),
    }
}

/// The words Runx's package validator puts before every package refusal.
pub const RUNX_VALIDATION_PREFIX: &str = "skill package validation failed: ";

impl PackageError {
    /// The file the refusal is about.
    pub fn file(&self) -> &str {
        match self {
            Self::MissingFile { file }
            | Self::NotText { file, .. }
            | Self::Invalid { file, .. } => file,
            Self::Yaml(err) => &err.file,
        }
    }

    /// The 1-based line, when the refusal has one.
    pub fn line(&self) -> Option<usize> {
        match self {
            Self::MissingFile { .. } => None,
            Self::NotText { line, .. } | Self::Invalid { line, .. } => Some(*line),
            Self::Yaml(err) => Some(err.line),
        }
    }

    /// The field path, when the refusal is about one field.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }
}

/// SKILL.md's frontmatter, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFrontmatter {
    /// The skill's name (required, non-empty).
    pub name: String,
    /// What the skill is for; it "owns triggering".
    pub description: Option<String>,
    /// The portable category, trimmed; an empty one counts as absent.
    pub category: Option<String>,
    /// `runx.category`, the catalog facet, trimmed.
    pub runx_category: Option<String>,
    /// The lowercase registry namespace; absent means `runx`.
    pub registry_owner: Option<String>,
    /// The `runx:` block.
    pub runx: Option<Map<String, Value>>,
    /// Legacy portable source; when absent Runx runs the skill as `{type: agent}`.
    pub source: Option<Value>,
    /// Legacy portable inputs.
    pub inputs: Vec<InputDef>,
    /// Legacy `auth`, kept as written.
    pub auth: Option<Value>,
    /// Legacy `risk`, kept as written.
    pub risk: Option<Value>,
    /// Legacy `runtime`, kept as written.
    pub runtime: Option<Value>,
    /// `retry` (or `runx.retry`): `{max_attempts}`.
    pub retry: Option<Value>,
    /// `idempotency` (or `runx.idempotency`): a key or `{key}`.
    pub idempotency: Option<Value>,
    /// `mutating` (or `risk.mutating`, or `runx.mutating`).
    pub mutating: Option<bool>,
    /// `execution` (or `runx.execution`), kept as written.
    pub execution: Option<Value>,
    /// `runx.allowed_tools`.
    pub allowed_tools: Option<Vec<String>>,
    /// `runx.artifacts`, kept as written after its contract is checked.
    pub artifacts: Option<Value>,
    /// `runx.post_run.reflect`: `auto`, `always` or `never` (`never` when absent).
    pub post_run_reflect: String,
}

/// SKILL.md: the frontmatter, the body (the operator manual) and the frontmatter as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillManual {
    /// The checked frontmatter.
    pub frontmatter: SkillFrontmatter,
    /// Everything after the closing `---` line.
    pub body: String,
    /// The frontmatter as JSON, unknown keys included.
    pub json: Value,
}

/// One input definition.
#[derive(Debug, Clone, PartialEq)]
pub struct InputDef {
    /// The input's name.
    pub name: String,
    /// The line of the input's key.
    pub line: usize,
    /// One of [`INPUT_TYPES`].
    pub input_type: String,
    /// Whether a run must supply it.
    pub required: bool,
    /// What it is for.
    pub description: Option<String>,
    /// The value used when a run leaves it out.
    pub default: Option<Value>,
    /// Whether it carries an artifact.
    pub artifact: Option<bool>,
    /// The catalog packet schema id, for `type: json` inputs.
    pub packet: Option<String>,
    /// A JSON Schema fragment refining the type.
    pub schema: Option<Value>,
    /// The `input_definitions` entry this input came from, when it was a `{definition: ...}`.
    pub definition: Option<String>,
}

/// `catalog`, checked against Runx's closed enums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    /// `skill` or `graph`.
    pub kind: String,
    /// `public`, `builder`, `operator` or `system`.
    pub audience: String,
    /// `public` (the default) or `internal`.
    pub visibility: String,
    /// `canonical`, `branded`, `context`, `graph-stage`, `runtime-path` or `harness-fixture`.
    pub role: String,
    /// The canonical skill a branded one stands for.
    pub canonical_skill: Option<String>,
    /// The provider a branded skill wraps.
    pub provider: Option<String>,
    /// The runtime path a `runtime-path` role implements.
    pub runtime_path: Option<String>,
    /// The skills a stage, runtime path or harness fixture belongs to.
    pub part_of: Vec<String>,
    /// `plan`, `read` or `execute`.
    pub execution: Option<String>,
    /// `plan`, `runtime_receipt` or `provider_readback`.
    pub completion: Option<String>,
    /// Whether the default runner needs an adapter.
    pub requires_adapter: Option<bool>,
    /// `none`, `conditional` or `required`.
    pub approval: Option<String>,
}

/// An executable source: a runner's, or an inline graph step's `run:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Source {
    /// One of [`SOURCE_TYPES`].
    pub source_type: String,
    /// The command of a `cli-tool`.
    pub command: Option<String>,
    /// The arguments of a `cli-tool`.
    pub args: Vec<String>,
    /// The module of a `javascript` source, relative to the package.
    pub module: Option<String>,
    /// The named export of a `javascript` module; `None` means its default export.
    pub export: Option<String>,
    /// The declared wall, in seconds.
    pub timeout_seconds: Option<u64>,
    /// The agent of an `agent-task`.
    pub agent: Option<String>,
    /// The task id of an `agent-task` (its contract is a `### <task>` section in SKILL.md).
    pub task: Option<String>,
    /// The declared outputs.
    pub outputs: Option<Value>,
    /// The non-secret environment names the source may read, required ones first.
    pub environment: Vec<String>,
    /// The graph of a `graph` source.
    pub graph: Option<Graph>,
}

/// A runner of X.yaml.
#[derive(Debug, Clone, PartialEq)]
pub struct Runner {
    /// The runner's name (its key under `runners`).
    pub name: String,
    /// The line of that key.
    pub line: usize,
    /// Whether it says `default: true`.
    pub default: bool,
    /// Its inputs, `{definition: ...}` references resolved.
    pub inputs: Vec<InputDef>,
    /// Its scopes.
    pub scopes: Vec<String>,
    /// The credential it names.
    pub credential: Option<String>,
    /// Its source.
    pub source: Source,
    /// Its `examples`: complete input objects.
    pub examples: Vec<Value>,
    /// The runner as JSON.
    pub json: Value,
}

/// A runner's graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Graph {
    /// The graph's name.
    pub name: String,
    /// The steps whose outputs are the graph's public result.
    pub result_from: Vec<String>,
    /// The input that carries the parent charter for `mint_authority` steps.
    pub charter_from: Option<String>,
    /// The steps, in order.
    pub steps: Vec<GraphStep>,
}

/// What a step runs.
#[derive(Debug, Clone, PartialEq)]
pub enum StepTarget {
    /// A native or catalog tool, such as `web.fetch`.
    Tool(String),
    /// Another skill, such as `registry:runx/sourcey` or `.` for a sibling runner.
    Skill(String),
    /// `run: {type: approval}`: a human gate.
    Approval,
    /// An inline source (`agent-task`, `cli-tool` or `javascript`).
    Run(Box<Source>),
}

/// A step's `when`: it runs only when the field equals (or does not equal) the value.
#[derive(Debug, Clone, PartialEq)]
pub struct When {
    /// The field the condition reads.
    pub field: String,
    /// The value it must equal.
    pub equals: Option<Value>,
    /// The value it must not equal.
    pub not_equals: Option<Value>,
}

/// One graph step.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphStep {
    /// The step id, unique in its graph.
    pub id: String,
    /// The line of the step.
    pub line: usize,
    /// Its label.
    pub label: Option<String>,
    /// What it runs.
    pub target: StepTarget,
    /// The runner of a nested skill.
    pub runner: Option<String>,
    /// Its scopes.
    pub scopes: Vec<String>,
    /// The tools an agent step may call.
    pub allowed_tools: Option<Vec<String>>,
    /// `input -> <step>.<output>` wiring from earlier steps.
    pub context: BTreeMap<String, String>,
    /// Whether the step mutates (`mutation: true`).
    pub mutation: bool,
    /// Its condition.
    pub when: Option<When>,
    /// Its fanout group, for `mode: fanout`.
    pub fanout_group: Option<String>,
    /// The step as JSON.
    pub json: Value,
}

/// An inline `harness.cases` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct HarnessCase {
    /// The case's name.
    pub name: String,
    /// Its line in X.yaml.
    pub line: usize,
    /// The runner it runs.
    pub runner: Option<String>,
    /// The case as JSON.
    pub json: Value,
}

/// `harness`: extra fixture support files and inline cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Harness {
    /// Support files under `fixtures/`.
    pub files: Vec<String>,
    /// The inline cases.
    pub cases: Vec<HarnessCase>,
}

/// X.yaml, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionProfile {
    /// `skill`, which must be SKILL.md's name when present.
    pub skill: Option<String>,
    /// `version`.
    pub version: Option<String>,
    /// `catalog`.
    pub catalog: Option<Catalog>,
    /// The names of `credentials`.
    pub credentials: Vec<String>,
    /// `input_definitions`.
    pub input_definitions: Vec<InputDef>,
    /// The runners, in document order.
    pub runners: Vec<Runner>,
    /// `harness`.
    pub harness: Option<Harness>,
    /// The whole profile as JSON.
    pub json: Value,
    /// The line of the `skill` key, for the cross-file name check.
    skill_line: usize,
}

/// A standalone fixture under `fixtures/`.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    /// The fixture's path in the package.
    pub path: String,
    /// Its name.
    pub name: String,
    /// `skill`, `graph`, `a2a`, `agent` or `agent_task`.
    pub kind: String,
    /// The package it runs, relative to the fixture (`..` is this package).
    pub target: String,
    /// The runner it runs.
    pub runner: Option<String>,
    /// The fixture as JSON.
    pub json: Value,
}

/// A declared JavaScript module, where it is used and the wall it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsModule {
    /// The runner that declares it.
    pub runner: String,
    /// The graph step, when it is an inline step's module.
    pub step: Option<String>,
    /// The module path, relative to the package.
    pub module: String,
    /// The named export; `None` means the module's default export.
    pub export: Option<String>,
    /// The wall in seconds: the declared one, else [`JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS`].
    pub timeout_seconds: u64,
}

/// A loaded, checked Runx package.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    manual: SkillManual,
    profile: ExecutionProfile,
    fixtures: Vec<Fixture>,
}

impl Package {
    /// SKILL.md.
    pub fn manual(&self) -> &SkillManual {
        &self.manual
    }

    /// SKILL.md's frontmatter.
    pub fn skill(&self) -> &SkillFrontmatter {
        &self.manual.frontmatter
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.manual.frontmatter.name
    }

    /// X.yaml.
    pub fn profile(&self) -> &ExecutionProfile {
        &self.profile
    }

    /// X.yaml as JSON, for the harness replay.
    pub fn profile_json(&self) -> &Value {
        &self.profile.json
    }

    /// The standalone fixtures, sorted by path.
    pub fn fixtures(&self) -> &[Fixture] {
        &self.fixtures
    }

    /// The runners' names, in document order.
    pub fn runner_names(&self) -> Vec<&str> {
        self.profile
            .runners
            .iter()
            .map(|r| r.name.as_str())
            .collect()
    }

    /// The runner called `name`.
    pub fn runner(&self, name: &str) -> Option<&Runner> {
        self.profile
            .runners
            .iter()
            .find(|runner| runner.name == name)
    }

    /// The runner a run without a runner name gets: the one with `default: true`, else the
    /// only runner, else none (Runx then asks for a runner by name).
    pub fn default_runner(&self) -> Option<&Runner> {
        let runners = &self.profile.runners;
        runners
            .iter()
            .find(|runner| runner.default)
            .or_else(|| (runners.len() == 1).then(|| runners.first()).flatten())
    }

    /// The inline harness cases.
    pub fn harness_cases(&self) -> &[HarnessCase] {
        self.profile
            .harness
            .as_ref()
            .map_or(&[], |harness| harness.cases.as_slice())
    }

    /// Every packet schema id X.yaml declares (`artifacts.packet`, `artifacts.packets`, an
    /// input's `packet`, on runners and graph steps), sorted and unique. Runx looks each up in
    /// its packet catalog (`packets/`, `dist/packets/`) and refuses the package when one is
    /// missing; MindRune does not hold that catalog, so callers report these as not checked.
    pub fn declared_packet_ids(&self) -> Vec<String> {
        fn artifacts(value: &Value, out: &mut Vec<String>) {
            if let Some(packet) = value.pointer("/artifacts/packet").and_then(Value::as_str) {
                out.push(packet.to_owned());
            }
            if let Some(packets) = value
                .pointer("/artifacts/packets")
                .and_then(Value::as_object)
            {
                out.extend(
                    packets
                        .values()
                        .filter_map(Value::as_str)
                        .map(str::to_owned),
                );
            }
            if let Some(inputs) = value.get("inputs").and_then(Value::as_object) {
                out.extend(
                    inputs
                        .values()
                        .filter_map(|input| input.get("packet").and_then(Value::as_str))
                        .map(str::to_owned),
                );
            }
        }
        let mut ids = Vec::new();
        for runner in &self.profile.runners {
            artifacts(&runner.json, &mut ids);
            for step in runner.source.graph.iter().flat_map(|graph| &graph.steps) {
                artifacts(&step.json, &mut ids);
            }
        }
        ids.sort();
        ids.dedup();
        ids
    }

    /// Every declared JavaScript module: runner sources and inline graph steps, in order.
    pub fn javascript_modules(&self) -> Vec<JsModule> {
        let mut modules = Vec::new();
        for runner in &self.profile.runners {
            push_module(&mut modules, &runner.name, None, &runner.source);
            for step in runner.source.graph.iter().flat_map(|graph| &graph.steps) {
                if let StepTarget::Run(source) = &step.target {
                    push_module(&mut modules, &runner.name, Some(&step.id), source);
                }
            }
        }
        modules
    }
}

fn push_module(modules: &mut Vec<JsModule>, runner: &str, step: Option<&str>, source: &Source) {
    if let Some(module) = &source.module {
        modules.push(JsModule {
            runner: runner.to_owned(),
            step: step.map(str::to_owned),
            module: module.clone(),
            export: source.export.clone(),
            timeout_seconds: source
                .timeout_seconds
                .unwrap_or(JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS),
        });
    }
}

/// Loads a package from its files: SKILL.md and X.yaml are required, and every
/// `fixtures/**/*.yaml|yml` is a fixture. Other files (modules, schemas, references) are not
/// read here. The first refusal is returned.
pub fn load_package(files: &[SnapshotFile]) -> Result<Package, PackageError> {
    let find = |name: &str| files.iter().find(|file| file.path == name);
    let skill_file = find(SKILL_FILE).ok_or_else(|| PackageError::MissingFile {
        file: SKILL_FILE.to_owned(),
    })?;
    let profile_file = find(PROFILE_FILE).ok_or_else(|| PackageError::MissingFile {
        file: PROFILE_FILE.to_owned(),
    })?;

    let (manual, frontmatter) = parse_manual(text(skill_file)?)?;
    check_manual_ownership(&frontmatter)?;

    let paths: BTreeSet<&str> = files.iter().map(|file| file.path.as_str()).collect();
    let profile = parse_profile(text(profile_file)?, &paths)?;
    if let Some(skill) = &profile.skill
        && *skill != manual.frontmatter.name
    {
        return Err(invalid(
            PROFILE_FILE,
            profile.skill_line,
            "skill",
            format!(
                "is {skill:?} but SKILL.md names the skill {:?}; make them the same",
                manual.frontmatter.name
            ),
        ));
    }

    let runner_names: BTreeSet<&str> = profile.runners.iter().map(|r| r.name.as_str()).collect();
    let mut fixtures = Vec::new();
    let mut fixture_files: Vec<&SnapshotFile> = files
        .iter()
        .filter(|file| is_fixture_path(&file.path))
        .collect();
    fixture_files.sort_by(|a, b| a.path.cmp(&b.path));
    for file in fixture_files {
        fixtures.push(parse_fixture(&file.path, text(file)?, Some(&runner_names))?);
    }
    check_declared_files(&profile, &paths)?;
    Ok(Package {
        manual,
        profile,
        fixtures,
    })
}

/// Whether Runx reads the path as a fixture: YAML under `fixtures/`.
fn is_fixture_path(path: &str) -> bool {
    path.starts_with("fixtures/") && (path.ends_with(".yaml") || path.ends_with(".yml"))
}

fn text(file: &SnapshotFile) -> Result<&str, PackageError> {
    std::str::from_utf8(&file.contents).map_err(|err| {
        let valid = file.contents.get(..err.valid_up_to()).unwrap_or_default();
        PackageError::NotText {
            file: file.path.clone(),
            line: 1 + valid.iter().filter(|byte| **byte == b'\n').count(),
        }
    })
}

fn invalid(file: &str, line: usize, field: &str, message: impl Into<String>) -> PackageError {
    PackageError::Invalid {
        file: file.to_owned(),
        line,
        field: field.to_owned(),
        message: message.into(),
        runx: None,
    }
}

/// A refusal Runx words as `runx` about the same file (`<file>: <runx>`, as Runx shows it).
fn invalid_as_runx(
    file: &str,
    line: usize,
    field: &str,
    message: impl Into<String>,
    runx: impl std::fmt::Display,
) -> PackageError {
    PackageError::Invalid {
        file: file.to_owned(),
        line,
        field: field.to_owned(),
        message: message.into(),
        runx: Some(format!("{file}: {runx}")),
    }
}

/// The package-relative file a `cli-tool` command or argument runs, as Runx reads it: a
/// relative, normalized `.js` or `.mjs` path (a leading `./` dropped). Anything else is not a
/// file of the package.
fn process_script_path(value: &str) -> Option<&str> {
    let path = value.trim();
    let path = path.strip_prefix("./").unwrap_or(path);
    let normalized = (path.ends_with(".js") || path.ends_with(".mjs"))
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|segment| !segment.is_empty() && !matches!(segment, "." | ".."));
    normalized.then_some(path)
}

/// Runx's load-time checks of the files X.yaml declares: every script a `cli-tool` runs (its
/// execution sidecars) and then every JavaScript module must be in the package, or the package
/// is invalid, in Runx's words.
fn check_declared_files(
    profile: &ExecutionProfile,
    paths: &BTreeSet<&str>,
) -> Result<(), PackageError> {
    let sources = || {
        profile.runners.iter().flat_map(|runner| {
            let field = format!("runners.{}", runner.name);
            let steps = runner.source.graph.iter().flat_map(|graph| &graph.steps);
            std::iter::once((runner.line, field.clone(), &runner.source)).chain(steps.filter_map(
                move |step| match &step.target {
                    StepTarget::Run(source) => Some((
                        step.line,
                        format!("{field}.graph.steps.{}.run", step.id),
                        source.as_ref(),
                    )),
                    _ => None,
                },
            ))
        })
    };
    for (line, field, source) in sources() {
        if source.source_type != "cli-tool" {
            continue;
        }
        for script in source.command.iter().chain(&source.args) {
            if let Some(path) = process_script_path(script)
                && !paths.contains(path)
            {
                return Err(PackageError::Invalid {
                    file: PROFILE_FILE.to_owned(),
                    line,
                    field: field.clone(),
                    message: format!(
                        "runs {path}, which is not in the package; add the file or change the command"
                    ),
                    runx: Some(format!(
                        "{path}: declared execution sidecar is missing from the skill package"
                    )),
                });
            }
        }
    }
    for (line, field, source) in sources() {
        if let Some(module) = &source.module
            && !paths.contains(module.as_str())
        {
            return Err(PackageError::Invalid {
                file: PROFILE_FILE.to_owned(),
                line,
                field: format!("{field}.module"),
                message: format!(
                    "names {module}, which is not in the package; add the module or fix the path"
                ),
                runx: Some(format!("{module}: declared JavaScript module is missing")),
            });
        }
    }
    Ok(())
}

/// `parent.key`, or `key` at the top.
fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() {
        key.to_owned()
    } else {
        format!("{parent}.{key}")
    }
}

/// The field checks of one file: every helper reports against `file`.
struct Check<'a> {
    file: &'a str,
}

impl Check<'_> {
    fn err(&self, line: usize, field: &str, message: impl Into<String>) -> PackageError {
        invalid(self.file, line, field, message)
    }

    /// The entries of a mapping, or a refusal saying what it is instead.
    fn mapping<'n>(
        &self,
        node: &'n YamlNode,
        field: &str,
    ) -> Result<&'n [YamlEntry], PackageError> {
        node.as_mapping().ok_or_else(|| {
            self.err(
                node.line,
                field,
                format!("must be a mapping, not {}", node.kind()),
            )
        })
    }

    /// The entries of an optional mapping field (absent or null is empty).
    fn opt_mapping<'n>(
        &self,
        entries: &'n [YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<&'n [YamlEntry]>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => self.mapping(&entry.value, &join(parent, key)).map(Some),
        }
    }

    /// Refuses any key outside `allowed`, at the key's own line.
    fn closed(
        &self,
        entries: &[YamlEntry],
        parent: &str,
        what: &str,
        allowed: &[&str],
    ) -> Result<(), PackageError> {
        self.closed_as(entries, parent, what, allowed, None)
    }

    /// [`Check::closed`] for a field set Runx checks with the same list in the same order:
    /// the refusal is worded as Runx's (`<runx_field>.<key> is not supported; allowed fields:
    /// …`), where `runx_field` is what Runx calls the parent.
    fn closed_as(
        &self,
        entries: &[YamlEntry],
        parent: &str,
        what: &str,
        allowed: &[&str],
        runx_field: Option<&str>,
    ) -> Result<(), PackageError> {
        let Some(entry) = entries
            .iter()
            .find(|entry| !allowed.contains(&entry.key.as_str()))
        else {
            return Ok(());
        };
        let field = join(parent, &entry.key);
        let message = format!(
            "unknown {what} field; remove it or use one of: {}",
            allowed.join(", ")
        );
        Err(match runx_field {
            Some(runx_field) => invalid_as_runx(
                self.file,
                entry.line,
                &field,
                message,
                format!(
                    "{runx_field}.{} is not supported; allowed fields: {}.",
                    entry.key,
                    allowed.join(", ")
                ),
            ),
            None => self.err(entry.line, &field, message),
        })
    }

    fn string<'n>(&self, entry: &'n YamlEntry, field: &str) -> Result<&'n str, PackageError> {
        entry.value.as_str().ok_or_else(|| {
            self.err(
                entry.line,
                field,
                format!("must be a string, not {}; quote it", entry.value.kind()),
            )
        })
    }

    fn opt_string<'n>(
        &self,
        entries: &'n [YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<&'n str>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => self.string(entry, &join(parent, key)).map(Some),
        }
    }

    /// An optional string that must not be blank when present.
    fn opt_non_empty(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<String>, PackageError> {
        let field = join(parent, key);
        match self.opt_string(entries, key, parent)? {
            Some(value) if value.trim().is_empty() => Err(self.err(
                line_of(entries, key),
                &field,
                "must not be empty; write a value or remove the field",
            )),
            other => Ok(other.map(str::to_owned)),
        }
    }

    /// A required non-empty string; `line` is where to report it missing.
    fn required(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        line: usize,
    ) -> Result<String, PackageError> {
        self.opt_non_empty(entries, key, parent)?
            .ok_or_else(|| self.err(line, &join(parent, key), "is required"))
    }

    fn opt_bool(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<bool>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => entry.value.as_bool().map(Some).ok_or_else(|| {
                self.err(
                    entry.line,
                    &join(parent, key),
                    format!("must be true or false, not {}", entry.value.kind()),
                )
            }),
        }
    }

    fn opt_u64(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<u64>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => entry.value.as_u64().map(Some).ok_or_else(|| {
                self.err(
                    entry.line,
                    &join(parent, key),
                    "must be a whole number of at least 0",
                )
            }),
        }
    }

    /// An optional sequence of strings.
    fn opt_strings(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<Vec<String>>, PackageError> {
        let Some(entry) = get(entries, key).filter(|entry| !entry.value.is_null()) else {
            return Ok(None);
        };
        let field = join(parent, key);
        let items = entry.value.as_sequence().ok_or_else(|| {
            self.err(
                entry.line,
                &field,
                format!("must be a list of strings, not {}", entry.value.kind()),
            )
        })?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    self.err(
                        item.line,
                        &format!("{field}[{index}]"),
                        format!("must be a string, not {}; quote it", item.kind()),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional list of strings none of which may be blank.
    fn opt_non_blank_strings(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        what: &str,
    ) -> Result<Vec<String>, PackageError> {
        let values = self.opt_strings(entries, key, parent)?.unwrap_or_default();
        if let Some(index) = values.iter().position(|value| value.trim().is_empty()) {
            return Err(self.err(
                line_of(entries, key),
                &format!("{}[{index}]", join(parent, key)),
                format!("must be a non-empty {what}; remove the blank entry"),
            ));
        }
        Ok(values)
    }

    /// An optional mapping whose values are all strings.
    fn string_map(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<(), PackageError> {
        let field = join(parent, key);
        for entry in self.opt_mapping(entries, key, parent)?.unwrap_or_default() {
            self.string(entry, &join(&field, &entry.key))?;
        }
        Ok(())
    }

    /// One of a closed set of words.
    fn one_of<'v>(
        &self,
        entry: &'v YamlEntry,
        field: &str,
        allowed: &[&str],
    ) -> Result<&'v str, PackageError> {
        let value = self.string(entry, field)?;
        if allowed.contains(&value) {
            Ok(value)
        } else {
            Err(self.err(
                entry.line,
                field,
                format!("is {value:?}; use one of: {}", allowed.join(", ")),
            ))
        }
    }

    fn opt_one_of(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        allowed: &[&str],
    ) -> Result<Option<String>, PackageError> {
        match get(entries, key).filter(|entry| !entry.value.is_null()) {
            None => Ok(None),
            Some(entry) => self
                .one_of(entry, &join(parent, key), allowed)
                .map(|value| Some(value.to_owned())),
        }
    }
}

fn get<'n>(entries: &'n [YamlEntry], key: &str) -> Option<&'n YamlEntry> {
    entries.iter().find(|entry| entry.key == key)
}

fn line_of(entries: &[YamlEntry], key: &str) -> usize {
    get(entries, key).map_or(1, |entry| entry.line)
}

fn has(entries: &[YamlEntry], key: &str) -> bool {
    get(entries, key).is_some()
}

/// Reads SKILL.md on its own, as Runx's `validate_skill` does: the frontmatter block must be
/// there with a non-empty `name`; the legacy portable fields (`source`, `inputs`, `retry`, ...)
/// are accepted and checked; unknown keys are kept. [`load_package`] additionally refuses the
/// execution fields, which belong in X.yaml.
pub fn parse_skill_md(text: &str) -> Result<SkillManual, PackageError> {
    parse_manual(text).map(|(manual, _)| manual)
}

/// [`parse_skill_md`], also handing back the frontmatter tree for the package checks.
fn parse_manual(text: &str) -> Result<(SkillManual, YamlNode), PackageError> {
    let file = SKILL_FILE;
    let check = Check { file };
    let (frontmatter, body) = split_frontmatter(text).ok_or_else(|| {
        invalid_as_runx(
            file,
            1,
            "frontmatter",
            "SKILL.md must start with a YAML frontmatter block: a `---` line, `name: ...` and \
             `description: ...`, and a closing `---` line",
            "skill: Skill markdown must start with YAML frontmatter delimited by ---.",
        )
    })?;
    // The frontmatter's first line is SKILL.md's second line.
    let node = yaml::parse_at(file, frontmatter, 2)?;
    let entries = match &node.value {
        YamlValue::Mapping(entries) => entries.as_slice(),
        YamlValue::Null => &[],
        _ => {
            return Err(invalid(
                file,
                node.line,
                "frontmatter",
                format!("must be a mapping of fields, not {}", node.kind()),
            ));
        }
    };
    let name = check.required(entries, "name", "", 1)?;
    let description = check
        .opt_string(entries, "description", "")?
        .map(str::to_owned);
    let category = trimmed(check.opt_string(entries, "category", "")?);
    let registry_owner = check.opt_string(entries, "registry_owner", "")?;
    if let Some(owner) = registry_owner
        && (owner.is_empty()
            || !owner.bytes().all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            }))
    {
        return Err(check.err(
            line_of(entries, "registry_owner"),
            "registry_owner",
            format!(
                "is {owner:?}; a registry namespace is lowercase letters, digits, '.', '_' \
                     and '-' (leave it out for the runx namespace)"
            ),
        ));
    }
    let runx = match get(entries, "runx") {
        None => None,
        Some(entry) if entry.value.is_null() => None,
        Some(entry) => Some(entry.value.as_mapping().ok_or_else(|| {
            check.err(
                entry.line,
                "runx",
                format!(
                    "runx must be a mapping when present, not {}",
                    entry.value.kind()
                ),
            )
        })?),
    };
    let runx_entries = runx.unwrap_or_default();
    let runx_category = trimmed(check.opt_string(runx_entries, "category", "runx")?);
    let post_run_reflect = post_run_reflect(&check, runx_entries, "runx")?;
    let source = match get(entries, "source").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => {
            let source = check.mapping(&entry.value, "source")?;
            check_source(
                &check,
                source,
                entry.line,
                "source",
                SourceContext::Skill,
                true,
            )?;
            Some(entry.value.to_json())
        }
    };
    let inputs = match check.opt_mapping(entries, "inputs", "")? {
        None => Vec::new(),
        Some(inputs) => check_inputs(&check, inputs, "inputs", &[])?,
    };
    let retry = first(entries, "retry", runx_entries);
    if let Some((entry, field)) = &retry {
        check_retry(&check, entry, field)?;
    }
    let idempotency = first(entries, "idempotency", runx_entries);
    if let Some((entry, field)) = &idempotency {
        check_idempotency(&check, entry, field)?;
    }
    let risk = get(entries, "risk").filter(|entry| !entry.value.is_null());
    let mutating = match get(entries, "mutating")
        .or_else(|| risk.and_then(|risk| risk.value.entry("mutating")))
        .or_else(|| get(runx_entries, "mutating"))
        .filter(|entry| !entry.value.is_null())
    {
        None => None,
        Some(entry) => Some(
            entry
                .value
                .as_bool()
                .ok_or_else(|| check.err(entry.line, "mutating", "must be true or false"))?,
        ),
    };
    let artifacts = match get(runx_entries, "artifacts").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => {
            check_artifacts(&check, entry, "runx.artifacts")?;
            Some(entry.value.to_json())
        }
    };
    let allowed_tools = check.opt_strings(runx_entries, "allowed_tools", "runx")?;
    let execution =
        first(entries, "execution", runx_entries).map(|(entry, _)| entry.value.to_json());
    let json_of = |key: &str| {
        get(entries, key)
            .filter(|e| !e.value.is_null())
            .map(|e| e.value.to_json())
    };
    let manual = SkillManual {
        frontmatter: SkillFrontmatter {
            name,
            description,
            category,
            runx_category,
            registry_owner: registry_owner.map(str::to_owned),
            runx: match get(entries, "runx").map(|entry| entry.value.to_json()) {
                Some(Value::Object(map)) => Some(map),
                _ => None,
            },
            source,
            inputs,
            auth: json_of("auth"),
            risk: json_of("risk"),
            runtime: json_of("runtime"),
            retry: retry.map(|(entry, _)| entry.value.to_json()),
            idempotency: idempotency.map(|(entry, _)| entry.value.to_json()),
            mutating,
            execution,
            allowed_tools,
            artifacts,
            post_run_reflect,
        },
        body: body.to_owned(),
        json: node.to_json(),
    };
    Ok((manual, node))
}

/// The field at the top level, else under `runx:`, with its path (Runx reads governance
/// fields from either place, top level first).
fn first<'n>(
    entries: &'n [YamlEntry],
    key: &str,
    runx: &'n [YamlEntry],
) -> Option<(&'n YamlEntry, String)> {
    get(entries, key)
        .filter(|entry| !entry.value.is_null())
        .map(|entry| (entry, key.to_owned()))
        .or_else(|| {
            get(runx, key)
                .filter(|entry| !entry.value.is_null())
                .map(|entry| (entry, format!("runx.{key}")))
        })
}

fn trimmed(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .map(str::to_owned)
}

/// Splits SKILL.md as the regex `^---\r?\n(.*?)\r?\n---` (dot matching newlines) does: the
/// frontmatter is everything up to the first `\n---` (a `\r` before it excluded), and the body
/// starts on the line after the closing `---` line.
fn split_frontmatter(text: &str) -> Option<(&str, &str)> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let close = rest.find("\n---")?;
    let frontmatter = rest.get(..close)?;
    let frontmatter = frontmatter.strip_suffix('\r').unwrap_or(frontmatter);
    let after = rest.get(close + "\n---".len()..)?;
    let body = after
        .find('\n')
        .map_or("", |newline| after.get(newline + 1..).unwrap_or(""));
    Some((frontmatter, body))
}

/// Inside a package, Runx refuses execution metadata in SKILL.md: it belongs in X.yaml, and
/// the manual's `runx:` block may only carry the catalog `category` and `tags`.
fn check_manual_ownership(frontmatter: &YamlNode) -> Result<(), PackageError> {
    let entries = frontmatter.as_mapping().unwrap_or_default();
    if let Some(entry) = entries
        .iter()
        .find(|entry| MANUAL_EXECUTION_FIELDS.contains(&entry.key.as_str()))
    {
        return Err(invalid(
            SKILL_FILE,
            entry.line,
            &entry.key,
            format!(
                "execution metadata belongs in X.yaml, not SKILL.md (the operator manual); move \
                 {} to the runner in X.yaml",
                entry.key
            ),
        ));
    }
    let runx = get(entries, "runx").and_then(|entry| entry.value.as_mapping());
    if let Some(entry) = runx
        .unwrap_or_default()
        .iter()
        .find(|entry| !matches!(entry.key.as_str(), "category" | "tags"))
    {
        return Err(invalid(
            SKILL_FILE,
            entry.line,
            &join("runx", &entry.key),
            "execution metadata belongs in X.yaml; SKILL.md's runx block may only hold category \
             and tags",
        ));
    }
    Ok(())
}

fn post_run_reflect(
    check: &Check<'_>,
    runx: &[YamlEntry],
    parent: &str,
) -> Result<String, PackageError> {
    let field = join(parent, "post_run");
    let Some(post_run) = check.opt_mapping(runx, "post_run", parent)? else {
        return Ok("never".to_owned());
    };
    Ok(check
        .opt_one_of(post_run, "reflect", &field, &["auto", "always", "never"])?
        .unwrap_or_else(|| "never".to_owned()))
}

fn check_retry(check: &Check<'_>, entry: &YamlEntry, field: &str) -> Result<(), PackageError> {
    let retry = check.mapping(&entry.value, field)?;
    if let Some(attempts) = check.opt_u64(retry, "max_attempts", field)?
        && attempts == 0
    {
        return Err(check.err(
            line_of(retry, "max_attempts"),
            &join(field, "max_attempts"),
            "must be a positive whole number (1 means no retry)",
        ));
    }
    Ok(())
}

fn check_idempotency(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    match &entry.value.value {
        YamlValue::String(key) if key.trim().is_empty() => Err(check.err(
            entry.line,
            field,
            "must not be empty; write the key or remove it",
        )),
        YamlValue::String(_) => Ok(()),
        _ => {
            let record = check.mapping(&entry.value, field)?;
            check.opt_non_empty(record, "key", field).map(|_| ())
        }
    }
}

/// An artifact contract (`emits`, `named_emits`, `packets`, `wrap_as`, `packet`).
fn check_artifacts(check: &Check<'_>, entry: &YamlEntry, field: &str) -> Result<(), PackageError> {
    let record = check.mapping(&entry.value, field)?;
    if let Some(emits) = get(record, "emits").filter(|e| !e.value.is_null())
        && emits.value.as_str().is_none()
    {
        check.opt_strings(record, "emits", field)?;
    }
    let named_key = if has(record, "named_emits") {
        "named_emits"
    } else {
        "namedEmits"
    };
    let named = named_outputs(check, record, named_key, field)?;
    let packets = named_outputs(check, record, "packets", field)?;
    if let Some(packets) = &packets {
        let Some(named) = &named else {
            return Err(check.err(
                line_of(record, "packets"),
                &join(field, "packets"),
                format!("needs {field}.named_emits naming the outputs the packets describe"),
            ));
        };
        if let Some((output, line)) = packets
            .iter()
            .find(|(output, _)| !named.contains_key(*output))
        {
            return Err(check.err(
                *line,
                &join(&join(field, "packets"), output),
                format!("must name an output declared in {field}.named_emits"),
            ));
        }
    }
    let wrap_key = if has(record, "wrap_as") {
        "wrap_as"
    } else {
        "wrapAs"
    };
    let wrap_as = check.opt_non_empty(record, wrap_key, field)?;
    let packet = check.opt_non_empty(record, "packet", field)?;
    if packet.is_some() && wrap_as.is_none() {
        return Err(check.err(
            line_of(record, "packet"),
            &join(field, "packet"),
            format!("needs {field}.wrap_as; use named_emits and packets for named packet outputs"),
        ));
    }
    Ok(())
}

/// A mapping of output names to non-empty strings, with each key's line.
fn named_outputs(
    check: &Check<'_>,
    record: &[YamlEntry],
    key: &str,
    parent: &str,
) -> Result<Option<BTreeMap<String, usize>>, PackageError> {
    let field = join(parent, key);
    let Some(entries) = check.opt_mapping(record, key, parent)? else {
        return Ok(None);
    };
    let mut names = BTreeMap::new();
    for entry in entries {
        let value = check.string(entry, &join(&field, &entry.key))?;
        if value.trim().is_empty() {
            return Err(check.err(
                entry.line,
                &join(&field, &entry.key),
                "must be a non-empty string",
            ));
        }
        names.insert(entry.key.clone(), entry.line);
    }
    Ok(Some(names))
}

/// Input definitions; `definitions` resolves `{definition: <name>}` references.
fn check_inputs(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
    definitions: &[InputDef],
) -> Result<Vec<InputDef>, PackageError> {
    let mut inputs = Vec::new();
    for entry in entries {
        let field = join(parent, &entry.key);
        let record = check.mapping(&entry.value, &field)?;
        if has(record, "definition") {
            if record.len() != 1 {
                return Err(check.err(
                    entry.line,
                    &field,
                    "a {definition: <name>} reference takes no other fields; change the shared \
                     definition in input_definitions instead",
                ));
            }
            let name = check.required(record, "definition", &field, entry.line)?;
            let Some(definition) = definitions.iter().find(|def| def.name == name) else {
                return Err(check.err(
                    line_of(record, "definition"),
                    &join(&field, "definition"),
                    format!("names {name:?}, which input_definitions does not declare"),
                ));
            };
            inputs.push(InputDef {
                name: entry.key.clone(),
                line: entry.line,
                definition: Some(name),
                ..definition.clone()
            });
            continue;
        }
        inputs.push(check_input(check, entry, record, &field)?);
    }
    Ok(inputs)
}

fn check_input(
    check: &Check<'_>,
    entry: &YamlEntry,
    record: &[YamlEntry],
    field: &str,
) -> Result<InputDef, PackageError> {
    check.closed(record, field, "input", &INPUT_FIELDS)?;
    let input_type = check
        .opt_one_of(record, "type", field, &INPUT_TYPES)?
        .unwrap_or_else(|| "string".to_owned());
    let default = get(record, "default").map(|entry| entry.value.to_json());
    let packet = check.opt_non_empty(record, "packet", field)?;
    let schema = check.opt_mapping(record, "schema", field)?;
    if packet.is_some() {
        let at = line_of(record, "packet");
        let packet_field = join(field, "packet");
        if input_type != "json" {
            return Err(check.err(at, &packet_field, format!("needs {field}.type to be json")));
        }
        if schema.is_some() {
            return Err(check.err(
                at,
                &packet_field,
                "packet and schema are exclusive: the packet catalog owns the schema; remove \
                 schema",
            ));
        }
        if default.is_some() {
            return Err(check.err(
                at,
                &packet_field,
                "a packet input cannot have a default; remove it",
            ));
        }
    }
    match schema {
        Some(schema) => {
            if let Some(duplicate) = ["type", "description", "default"]
                .into_iter()
                .find(|key| has(schema, key))
            {
                return Err(check.err(
                    line_of(schema, duplicate),
                    &join(&join(field, "schema"), duplicate),
                    format!("duplicates {field}.{duplicate}; keep it on the input, not in schema"),
                ));
            }
            if let Some(examples) = get(schema, "examples")
                && examples.value.as_sequence().is_none()
            {
                return Err(check.err(
                    examples.line,
                    &join(&join(field, "schema"), "examples"),
                    "must be a list",
                ));
            }
        }
        None => {
            if let Some(value) = &default
                && packet.is_none()
                && !accepts(&input_type, value)
            {
                return Err(check.err(
                    line_of(record, "default"),
                    &join(field, "default"),
                    format!("must match the declared type {input_type}"),
                ));
            }
        }
    }
    Ok(InputDef {
        name: entry.key.clone(),
        line: entry.line,
        input_type,
        required: check.opt_bool(record, "required", field)?.unwrap_or(false),
        description: check
            .opt_string(record, "description", field)?
            .map(str::to_owned),
        default,
        artifact: check.opt_bool(record, "artifact", field)?,
        packet,
        schema: get(record, "schema").map(|entry| entry.value.to_json()),
        definition: None,
    })
}

/// Whether a value fits an input type.
fn accepts(input_type: &str, value: &Value) -> bool {
    match input_type {
        "array" => value.is_array(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "object" => value.is_object(),
        "string" => value.is_string(),
        _ => true,
    }
}

/// Where a source is declared: a runner or legacy SKILL.md (where `agent-task` needs its agent
/// and task), or an inline graph step (where the graph supplies them).
#[derive(Clone, Copy, PartialEq, Eq)]
enum SourceContext {
    Skill,
    InlineStep,
}

/// Checks an executable source. `entries` are the source's fields (a `source:` or `run:`
/// block, or a runner's own fields), `parent` their path, `line` where the source starts.
fn check_source(
    check: &Check<'_>,
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    context: SourceContext,
    closed: bool,
) -> Result<Source, PackageError> {
    let type_field = join(parent, "type");
    let source_type = check.required(entries, "type", parent, line)?;
    let type_line = line_of(entries, "type");
    match source_type.as_str() {
        "http" => {
            return Err(check.err(
                type_line,
                &type_field,
                "http was removed; compose http.read, http.query or http.execute as a graph step",
            ));
        }
        "catalog" => {
            return Err(check.err(
                type_line,
                &type_field,
                "catalog was removed; call catalog tools from a graph tool step",
            ));
        }
        _ => {}
    }
    if closed {
        check.closed(entries, parent, "source", &SOURCE_FIELDS)?;
    }
    if !SOURCE_TYPES.contains(&source_type.as_str()) {
        return Err(check.err(
            type_line,
            &type_field,
            format!(
                "{source_type:?} is not a Runx source type; use one of: {}",
                SOURCE_TYPES.join(", ")
            ),
        ));
    }
    let args = check
        .opt_strings(entries, "args", parent)?
        .unwrap_or_default();
    check.opt_one_of(entries, "input_mode", parent, &["args", "stdin", "none"])?;
    let timeout_seconds = check.opt_u64(entries, "timeout_seconds", parent)?;
    let command = check
        .opt_string(entries, "command", parent)?
        .map(str::to_owned);
    if source_type == "cli-tool" && command.is_none() {
        return Err(check.err(
            line,
            &join(parent, "command"),
            "is required for a cli-tool source",
        ));
    }
    let (module, export) = if source_type == "javascript" {
        check_javascript(check, entries, line, parent, timeout_seconds)?
    } else {
        if let Some(key) = ["module", "export"]
            .into_iter()
            .find(|key| has(entries, key))
        {
            return Err(check.err(
                line_of(entries, key),
                &join(parent, key),
                "module and export are only for type: javascript sources",
            ));
        }
        (None, None)
    };
    if source_type == "agent-task"
        && let Some(key) = ["command", "args"]
            .into_iter()
            .find(|key| has(entries, key))
    {
        return Err(check.err(
            line_of(entries, key),
            &join(parent, key),
            "an agent-task source runs no command; remove it",
        ));
    }
    let needs_agent_task = source_type == "agent-task" && context == SourceContext::Skill;
    let agent = match check.opt_string(entries, "agent", parent)? {
        None if needs_agent_task => {
            return Err(check.err(
                line,
                &join(parent, "agent"),
                "is required for an agent-task runner",
            ));
        }
        other => other.map(str::to_owned),
    };
    let task = match check.opt_string(entries, "task", parent)? {
        None if needs_agent_task || source_type == "a2a" => {
            return Err(check.err(
                line,
                &join(parent, "task"),
                format!("is required for an {source_type} source"),
            ));
        }
        other => other.map(str::to_owned),
    };
    if source_type == "mcp" {
        let server_field = join(parent, "server");
        let server = check
            .opt_mapping(entries, "server", parent)?
            .ok_or_else(|| check.err(line, &server_field, "is required for an mcp source"))?;
        check.required(server, "command", &server_field, line_of(entries, "server"))?;
        check.opt_strings(server, "args", &server_field)?;
        if check.opt_string(entries, "tool", parent)?.is_none() {
            return Err(check.err(line, &join(parent, "tool"), "is required for an mcp source"));
        }
    }
    if source_type == "a2a"
        && check
            .opt_string(entries, "agent_card_url", parent)?
            .is_none()
    {
        return Err(check.err(
            line,
            &join(parent, "agent_card_url"),
            "is required for an a2a source",
        ));
    }
    for (key, kind) in [
        ("external_adapter", "external-adapter"),
        ("thread_outbox_provider", "thread-outbox-provider"),
    ] {
        if source_type == kind {
            if check.opt_mapping(entries, key, parent)?.is_none() {
                return Err(check.err(
                    line,
                    &join(parent, key),
                    format!("is required for a {kind} source"),
                ));
            }
        } else if has(entries, key) {
            return Err(check.err(
                line_of(entries, key),
                &join(parent, key),
                format!("is only valid for {kind} sources"),
            ));
        }
    }
    if has(entries, "pages") && source_type != "javascript" {
        return Err(check.err(
            line_of(entries, "pages"),
            &join(parent, "pages"),
            "pages is only valid for deterministic javascript sources",
        ));
    }
    let outputs = match check.opt_mapping(entries, "outputs", parent)? {
        None => None,
        Some(_) => get(entries, "outputs").map(|entry| entry.value.to_json()),
    };
    let environment = check_environment(check, entries, parent)?;
    let graph = if source_type == "graph" {
        let graph_field = join(parent, "graph");
        let graph_entry = get(entries, "graph").filter(|entry| !entry.value.is_null());
        let graph_entry = graph_entry
            .ok_or_else(|| check.err(line, &graph_field, "is required for a graph source"))?;
        Some(check_graph(check, graph_entry, &graph_field)?)
    } else {
        None
    };
    Ok(Source {
        source_type,
        command,
        args,
        module,
        export,
        timeout_seconds,
        agent,
        task,
        outputs,
        environment,
        graph,
    })
}

/// A `javascript` source: a portable module path, an identifier export (none means the
/// default export), no process or effect fields, and a wall of 1 to 30 seconds.
fn check_javascript(
    check: &Check<'_>,
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    timeout_seconds: Option<u64>,
) -> Result<(Option<String>, Option<String>), PackageError> {
    const FORBIDDEN: [&str; 19] = [
        "agent",
        "agent_card_url",
        "agent_identity",
        "allow_private_network",
        "args",
        "arguments",
        "command",
        "cwd",
        "external_adapter",
        "graph",
        "headers",
        "hook",
        "http",
        "input_mode",
        "method",
        "server",
        "task",
        "tool",
        "url",
    ];
    if let Some(entry) = entries
        .iter()
        .find(|entry| FORBIDDEN.contains(&entry.key.as_str()))
    {
        return Err(check.err(
            entry.line,
            &join(parent, &entry.key),
            "a javascript source is a pure domain module and cannot declare process or effect \
             fields; remove it, or use a cli-tool runner or a native tool step",
        ));
    }
    let module_field = join(parent, "module");
    let module = check
        .opt_string(entries, "module", parent)?
        .ok_or_else(|| check.err(line, &module_field, "is required for a javascript source"))?;
    let segments: Vec<&str> = module.split('/').collect();
    if module.starts_with('/')
        || module.contains('\\')
        || segments
            .iter()
            .any(|s| s.is_empty() || matches!(*s, "." | ".."))
        || !segments
            .last()
            .is_some_and(|name| name.ends_with(".mjs") || name.ends_with(".js"))
    {
        return Err(check.err(
            line_of(entries, "module"),
            &module_field,
            format!(
                "is {module:?}; write a relative .mjs or .js path inside the package, without \
                 '.', '..' or backslashes"
            ),
        ));
    }
    let export = check.opt_string(entries, "export", parent)?;
    if let Some(name) = export {
        let mut chars = name.chars();
        let start = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$'));
        if !start || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$')) {
            return Err(check.err(
                line_of(entries, "export"),
                &join(parent, "export"),
                format!("is {name:?}; write a JavaScript identifier, or leave it out for the default export"),
            ));
        }
    }
    if let Some(seconds) = timeout_seconds
        && (seconds == 0 || seconds > JAVASCRIPT_MAX_TIMEOUT_SECONDS)
    {
        return Err(check.err(
                line_of(entries, "timeout_seconds"),
                &join(parent, "timeout_seconds"),
                format!(
                    "is {seconds}; a javascript worker's wall is 1 to \
                     {JAVASCRIPT_MAX_TIMEOUT_SECONDS} seconds ({JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS} \
                     when left out)"
                ),
            ));
    }
    Ok((Some(module.to_owned()), export.map(str::to_owned)))
}

/// `environment: {required: [...], optional: [...]}`: portable, distinct, non-secret names.
fn check_environment(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
) -> Result<Vec<String>, PackageError> {
    let field = join(parent, "environment");
    let Some(environment) = check.opt_mapping(entries, "environment", parent)? else {
        return Ok(Vec::new());
    };
    check.closed(
        environment,
        &field,
        "environment",
        &["required", "optional"],
    )?;
    let mut names = Vec::new();
    for key in ["required", "optional"] {
        for name in check
            .opt_strings(environment, key, &field)?
            .unwrap_or_default()
        {
            let mut chars = name.chars();
            let portable = chars
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
            let at = line_of(environment, key);
            if !portable {
                return Err(check.err(
                    at,
                    &join(&field, key),
                    format!("{name:?} is not a portable environment variable name (letters, digits, '_')"),
                ));
            }
            if name.starts_with("RUNX_") {
                return Err(check.err(
                    at,
                    &join(&field, key),
                    format!("{name} is reserved for the Runx runtime; pick another name"),
                ));
            }
            if names.contains(&name) {
                return Err(check.err(
                    at,
                    &join(&field, key),
                    format!("repeats {name}; list it once"),
                ));
            }
            names.push(name);
        }
    }
    Ok(names)
}

/// A graph: `{name, result_from, steps}` plus `owner`, `charter_from`, `fanout`, `policy`.
fn check_graph(check: &Check<'_>, entry: &YamlEntry, field: &str) -> Result<Graph, PackageError> {
    let graph = check.mapping(&entry.value, field)?;
    for key in ["sync", "schedule", "schedules"] {
        if has(graph, key) {
            return Err(check.err(
                line_of(graph, key),
                &join(field, key),
                "is not supported by the local sequential graph runner; remove it",
            ));
        }
    }
    let name = check.required(graph, "name", field, entry.line)?;
    check.opt_string(graph, "owner", field)?;
    let charter_from = check
        .opt_string(graph, "charter_from", field)?
        .map(str::to_owned);
    check.opt_mapping(graph, "fanout", field)?;
    check.opt_mapping(graph, "policy", field)?;
    let result_from = check
        .opt_strings(graph, "result_from", field)?
        .unwrap_or_default();
    let steps_field = join(field, "steps");
    let steps_entry = get(graph, "steps").ok_or_else(|| {
        check.err(
            entry.line,
            &steps_field,
            "is required: list the graph's steps",
        )
    })?;
    let raw_steps = steps_entry.value.as_sequence().ok_or_else(|| {
        check.err(
            steps_entry.line,
            &steps_field,
            format!("must be a list of steps, not {}", steps_entry.value.kind()),
        )
    })?;
    let mut ids = BTreeSet::new();
    let mut steps = Vec::new();
    for (index, node) in raw_steps.iter().enumerate() {
        let step = check_step(
            check,
            node,
            &format!("{steps_field}[{index}]"),
            &ids,
            charter_from.is_some(),
        )?;
        ids.insert(step.id.clone());
        steps.push(step);
    }
    let result_line = line_of(graph, "result_from");
    let mut seen = BTreeSet::new();
    for (index, id) in result_from.iter().enumerate() {
        let at = format!("{field}.result_from[{index}]");
        if id.trim().is_empty() {
            return Err(check.err(result_line, &at, "must not be empty; name a step id"));
        }
        if !ids.contains(id) {
            return Err(check.err(
                result_line,
                &at,
                format!("names {id:?}, which is not a step of this graph"),
            ));
        }
        if !seen.insert(id) {
            return Err(check.err(
                result_line,
                &at,
                format!("repeats {id:?}; list each step once"),
            ));
        }
    }
    Ok(Graph {
        name,
        result_from,
        charter_from,
        steps,
    })
}

/// Step keys Runx refuses, with what to do instead.
fn rejected_step_field(key: &str) -> Option<&'static str> {
    match key {
        "instructions" => Some(
            "model instructions belong in SKILL.md, not X.yaml (write them in the agent task's \
             section of SKILL.md)",
        ),
        "effect_family" => Some(
            "is not supported: Runx derives effect ownership from the resolved target; remove it",
        ),
        "sync" | "stage" => Some(
            "is not supported by the local sequential graph runner; remove it (reference a nested \
             graph as a skill: step)",
        ),
        _ => None,
    }
}

fn check_step(
    check: &Check<'_>,
    node: &YamlNode,
    field: &str,
    previous: &BTreeSet<String>,
    charter: bool,
) -> Result<GraphStep, PackageError> {
    let step = check.mapping(node, field)?;
    if let Some((entry, message)) = step
        .iter()
        .find_map(|entry| rejected_step_field(&entry.key).map(|message| (entry, message)))
    {
        return Err(check.err(entry.line, &join(field, &entry.key), message));
    }
    let mode = check.opt_string(step, "mode", field)?;
    match mode {
        None | Some("sequential") => {}
        Some("fanout") => {
            if check.opt_string(step, "fanout_group", field)?.is_none() {
                return Err(check.err(
                    line_of(step, "mode"),
                    &join(field, "fanout_group"),
                    "is required when mode is fanout",
                ));
            }
        }
        Some(other) => {
            return Err(check.err(
                line_of(step, "mode"),
                &join(field, "mode"),
                format!("is {other:?}; the local graph runner supports sequential and fanout"),
            ));
        }
    }
    let targets: Vec<&YamlEntry> = ["tool", "skill", "run"]
        .into_iter()
        .filter_map(|key| get(step, key))
        .collect();
    if targets.len() != 1 {
        let at = targets.get(1).map_or(node.line, |entry| entry.line);
        return Err(check.err(at, field, "must declare exactly one of tool, skill or run"));
    }
    let id = check.required(step, "id", field, node.line)?;
    if previous.contains(&id) {
        return Err(check.err(
            line_of(step, "id"),
            &join(field, "id"),
            format!("{id:?} is used by an earlier step; ids must be unique"),
        ));
    }
    let target = match targets.first().map(|entry| entry.key.as_str()) {
        Some("tool") => {
            StepTarget::Tool(check.opt_non_empty(step, "tool", field)?.ok_or_else(|| {
                check.err(
                    line_of(step, "tool"),
                    &join(field, "tool"),
                    "must name a tool",
                )
            })?)
        }
        Some("skill") => {
            StepTarget::Skill(check.opt_non_empty(step, "skill", field)?.ok_or_else(|| {
                check.err(
                    line_of(step, "skill"),
                    &join(field, "skill"),
                    "must name a skill",
                )
            })?)
        }
        _ => check_run(check, step, field)?,
    };
    let runner = check.opt_non_empty(step, "runner", field)?;
    if runner.is_some() && !matches!(target, StepTarget::Skill(_)) {
        return Err(check.err(
            line_of(step, "runner"),
            &join(field, "runner"),
            "is only valid for nested skill steps; remove it",
        ));
    }
    let context = check_context(check, step, field, previous)?;
    let context_skills = check
        .opt_strings(step, "context_skills", field)?
        .unwrap_or_default();
    let agent_step = match &target {
        StepTarget::Skill(_) => true,
        StepTarget::Run(source) => source.source_type == "agent-task",
        _ => false,
    };
    if !context_skills.is_empty() && !agent_step {
        return Err(check.err(
            line_of(step, "context_skills"),
            &join(field, "context_skills"),
            "is only valid for agent-task steps or nested skills",
        ));
    }
    if let Some(inputs) = check.opt_mapping(step, "inputs", field)? {
        let inputs_field = join(field, "inputs");
        for entry in inputs {
            let at = join(&inputs_field, &entry.key);
            check_binding(check, &entry.value, &at, previous)?;
            if context.contains_key(&entry.key) {
                return Err(check.err(
                    entry.line,
                    &at,
                    "is bound through both inputs and context; keep one",
                ));
            }
        }
    }
    let scopes = check.opt_non_blank_strings(step, "scopes", field, "scope")?;
    let allowed_tools = check.opt_strings(step, "allowed_tools", field)?;
    if let Some(entry) = get(step, "artifacts").filter(|e| !e.value.is_null()) {
        check_artifacts(check, entry, &join(field, "artifacts"))?;
    }
    if let Some(entry) = get(step, "retry").filter(|e| !e.value.is_null()) {
        let retry_field = join(field, "retry");
        check_retry(check, entry, &retry_field)?;
        let retry = check.mapping(&entry.value, &retry_field)?;
        check.opt_u64(retry, "backoff_ms", &retry_field)?;
    }
    check.opt_mapping(step, "policy", field)?;
    let when = check_when(check, step, field)?;
    let mutation = check.opt_bool(step, "mutation", field)?.unwrap_or(false);
    check.opt_non_empty(step, "idempotency_key", field)?;
    check.opt_non_empty(step, "label", field)?;
    check_mint(check, step, field, charter, &scopes)?;
    Ok(GraphStep {
        id,
        line: node.line,
        label: check.opt_string(step, "label", field)?.map(str::to_owned),
        target,
        runner,
        scopes,
        allowed_tools,
        context,
        mutation,
        when,
        fanout_group: check
            .opt_string(step, "fanout_group", field)?
            .map(str::to_owned),
        json: node.to_json(),
    })
}

/// `run:`: `{type: approval}` alone is a human gate; anything else is an inline
/// `agent-task`, `cli-tool` or `javascript` source.
fn check_run(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
) -> Result<StepTarget, PackageError> {
    let run_field = join(field, "run");
    let Some(entry) = get(step, "run") else {
        return Err(check.err(1, &run_field, "is required"));
    };
    let run = check.mapping(&entry.value, &run_field)?;
    if get(run, "type").and_then(|e| e.value.as_str()) == Some("approval") {
        if let Some(extra) = run.iter().find(|e| e.key != "type") {
            return Err(check.err(
                extra.line,
                &join(&run_field, &extra.key),
                "an approval gate takes only type: approval; remove this field",
            ));
        }
        return Ok(StepTarget::Approval);
    }
    let source = check_source(
        check,
        run,
        entry.line,
        &run_field,
        SourceContext::InlineStep,
        true,
    )?;
    if !matches!(
        source.source_type.as_str(),
        "agent-task" | "cli-tool" | "javascript"
    ) {
        return Err(check.err(
            line_of(run, "type"),
            &join(&run_field, "type"),
            format!(
                "{} is not an inline graph source (use agent-task, cli-tool or javascript, or a \
                 skill or tool step for adapters)",
                source.source_type
            ),
        ));
    }
    Ok(StepTarget::Run(Box::new(source)))
}

/// `context: {input: <step>.<output>...}` from earlier steps only.
fn check_context(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
    previous: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, PackageError> {
    let context_field = join(field, "context");
    let mut context = BTreeMap::new();
    for entry in check
        .opt_mapping(step, "context", field)?
        .unwrap_or_default()
    {
        let at = join(&context_field, &entry.key);
        let reference = check.string(entry, &at)?;
        let Some((from, output)) = reference.split_once('.') else {
            return Err(check.err(entry.line, &at, "must be written <step-id>.<output-field>"));
        };
        if from.is_empty() || output.is_empty() {
            return Err(check.err(entry.line, &at, "must be written <step-id>.<output-field>"));
        }
        if !previous.contains(from) {
            return Err(check.err(
                entry.line,
                &at,
                format!("reads step {from:?}, which is not an earlier step of this graph"),
            ));
        }
        context.insert(entry.key.clone(), reference.to_owned());
    }
    Ok(context)
}

/// An input binding: no retired `{{name}}` templates, and no `<earlier step>.<output>`
/// strings, which belong in `context`.
fn check_binding(
    check: &Check<'_>,
    node: &YamlNode,
    field: &str,
    previous: &BTreeSet<String>,
) -> Result<(), PackageError> {
    match &node.value {
        YamlValue::String(value) => {
            if let Some(name) = legacy_binding(value) {
                return Err(check.err(
                    node.line,
                    field,
                    format!(
                        "uses the retired {{{{...}}}} binding {value:?}; write \"$input.{name}\""
                    ),
                ));
            }
            if let Some((from, output)) = value.split_once('.')
                && !output.is_empty()
                && previous.contains(from)
            {
                return Err(check.err(
                        node.line,
                        field,
                        format!("{value:?} looks like a step output; move it to context to read an earlier step's output"),
                    ));
            }
            Ok(())
        }
        YamlValue::Sequence(items) => items.iter().enumerate().try_for_each(|(index, item)| {
            check_binding(check, item, &format!("{field}[{index}]"), previous)
        }),
        YamlValue::Mapping(entries) => entries.iter().try_for_each(|entry| {
            check_binding(check, &entry.value, &join(field, &entry.key), previous)
        }),
        _ => Ok(()),
    }
}

/// The name in a retired `{{ name }}` binding.
fn legacy_binding(value: &str) -> Option<&str> {
    let name = value.strip_prefix("{{")?.strip_suffix("}}")?.trim();
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.')))
    .then_some(name)
}

/// `when: {field, equals | not_equals}`.
fn check_when(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
) -> Result<Option<When>, PackageError> {
    let when_field = join(field, "when");
    let Some(when) = check.opt_mapping(step, "when", field)? else {
        return Ok(None);
    };
    check.closed(
        when,
        &when_field,
        "when",
        &["field", "equals", "not_equals"],
    )?;
    let line = line_of(step, "when");
    let equals = get(when, "equals").map(|e| e.value.to_json());
    let not_equals = get(when, "not_equals").map(|e| e.value.to_json());
    if equals.is_some() == not_equals.is_some() {
        return Err(check.err(
            line,
            &when_field,
            "must declare exactly one of equals or not_equals",
        ));
    }
    Ok(Some(When {
        field: check.required(when, "field", &when_field, line)?,
        equals,
        not_equals,
    }))
}

/// `mint_authority: {source}` needs the graph's `charter_from`, and each source draws from one
/// place: `static_scopes` from the step's scopes, `requested_scope` from `requested_scope_from`.
fn check_mint(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
    charter: bool,
    scopes: &[String],
) -> Result<(), PackageError> {
    let requested = check.opt_non_empty(step, "requested_scope_from", field)?;
    let mint_field = join(field, "mint_authority");
    let Some(mint) = check.opt_mapping(step, "mint_authority", field)? else {
        if requested.is_some() {
            return Err(check.err(
                line_of(step, "requested_scope_from"),
                &join(field, "requested_scope_from"),
                "is only valid with a mint_authority directive",
            ));
        }
        return Ok(());
    };
    let line = line_of(step, "mint_authority");
    if !charter {
        return Err(check.err(line, &mint_field, "needs the graph to declare charter_from"));
    }
    let source = check
        .opt_one_of(
            mint,
            "source",
            &mint_field,
            &["static_scopes", "requested_scope"],
        )?
        .ok_or_else(|| check.err(line, &join(&mint_field, "source"), "is required"))?;
    let problem = match (source.as_str(), scopes.is_empty(), requested.is_some()) {
        ("static_scopes", true, _) => Some("static_scopes needs a non-empty scopes list"),
        ("static_scopes", _, true) => Some("static_scopes must not declare requested_scope_from"),
        ("requested_scope", _, false) => Some("requested_scope needs requested_scope_from"),
        ("requested_scope", false, _) => {
            Some("requested_scope must not declare a static scopes list")
        }
        _ => None,
    };
    match problem {
        Some(message) => Err(check.err(line, &mint_field, message)),
        None => Ok(()),
    }
}

/// Parses X.yaml against the package's file list (for `harness.files`).
fn parse_profile(text: &str, paths: &BTreeSet<&str>) -> Result<ExecutionProfile, PackageError> {
    let check = Check { file: PROFILE_FILE };
    let root = yaml::parse(PROFILE_FILE, text)?;
    let entries = match &root.value {
        YamlValue::Mapping(entries) => entries.as_slice(),
        _ => {
            return Err(check.err(
                root.line,
                "(document)",
                format!(
                    "X.yaml must be a mapping with at least runners, not {}",
                    root.kind()
                ),
            ));
        }
    };
    check.closed_as(
        entries,
        "",
        "X.yaml top-level",
        &PROFILE_FIELDS,
        Some("runner_manifest"),
    )?;
    let skill = check.opt_non_empty(entries, "skill", "")?;
    let version = check.opt_string(entries, "version", "")?.map(str::to_owned);
    check.opt_mapping(entries, "runx", "")?;
    let catalog = match check.opt_mapping(entries, "catalog", "")? {
        None => None,
        Some(catalog) => Some(check_catalog(&check, catalog, line_of(entries, "catalog"))?),
    };
    let mut credentials = Vec::new();
    for entry in check
        .opt_mapping(entries, "credentials", "")?
        .unwrap_or_default()
    {
        check.mapping(&entry.value, &join("credentials", &entry.key))?;
        credentials.push(entry.key.clone());
    }
    let input_definitions = match check.opt_mapping(entries, "input_definitions", "")? {
        None => Vec::new(),
        Some(definitions) => {
            let mut checked = Vec::new();
            for entry in definitions {
                let field = join("input_definitions", &entry.key);
                let record = check.mapping(&entry.value, &field)?;
                checked.push(check_input(&check, entry, record, &field)?);
            }
            checked
        }
    };
    let runners_entry = get(entries, "runners").ok_or_else(|| {
        check.err(
            root.line,
            "runners",
            "is required: declare at least one runner",
        )
    })?;
    let runner_entries = check.mapping(&runners_entry.value, "runners")?;
    if runner_entries.is_empty() {
        return Err(check.err(
            runners_entry.line,
            "runners",
            "is empty: declare at least one runner",
        ));
    }
    let mut runners = Vec::new();
    for entry in runner_entries {
        runners.push(check_runner(
            &check,
            entry,
            &input_definitions,
            &credentials,
        )?);
    }
    let defaults: Vec<&Runner> = runners.iter().filter(|runner| runner.default).collect();
    if let [first, second, ..] = defaults.as_slice() {
        return Err(check.err(
            second.line,
            &join(&join("runners", &second.name), "default"),
            format!(
                "{} and {} both say default: true; keep one default runner",
                first.name, second.name
            ),
        ));
    }
    let runner_names: BTreeSet<&str> = runners.iter().map(|runner| runner.name.as_str()).collect();
    let harness = match get(entries, "harness").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => Some(check_harness(&check, entry, paths, &runner_names)?),
    };
    Ok(ExecutionProfile {
        skill,
        version,
        catalog,
        credentials,
        input_definitions,
        runners,
        harness,
        json: root.to_json(),
        skill_line: line_of(entries, "skill"),
    })
}

fn check_catalog(
    check: &Check<'_>,
    catalog: &[YamlEntry],
    line: usize,
) -> Result<Catalog, PackageError> {
    let field = "catalog";
    check.closed(catalog, field, "catalog", &CATALOG_FIELDS)?;
    let required = |key: &str, allowed: &[&str]| {
        check
            .opt_one_of(catalog, key, field, allowed)?
            .ok_or_else(|| {
                check.err(
                    line,
                    &join(field, key),
                    format!("is required: one of {}", allowed.join(", ")),
                )
            })
    };
    let kind = required("kind", &["skill", "graph"])?;
    let audience = required("audience", &["public", "builder", "operator", "system"])?;
    let visibility = check
        .opt_one_of(catalog, "visibility", field, &["public", "internal"])?
        .unwrap_or_else(|| "public".to_owned());
    let role = required(
        "role",
        &[
            "canonical",
            "branded",
            "context",
            "graph-stage",
            "runtime-path",
            "harness-fixture",
        ],
    )?;
    let staged = matches!(
        role.as_str(),
        "graph-stage" | "runtime-path" | "harness-fixture"
    );
    if visibility == "public" && staged {
        return Err(check.err(
            line_of(catalog, "role"),
            "catalog.role",
            format!("cannot be {role} when visibility is public; set visibility: internal"),
        ));
    }
    let canonical_skill = check
        .opt_string(catalog, "canonical_skill", field)?
        .map(str::to_owned);
    let provider = check
        .opt_string(catalog, "provider", field)?
        .map(str::to_owned);
    let runtime_path = check
        .opt_string(catalog, "runtime_path", field)?
        .map(str::to_owned);
    let part_of = check
        .opt_strings(catalog, "part_of", field)?
        .unwrap_or_default();
    let execution = check.opt_one_of(catalog, "execution", field, &["plan", "read", "execute"])?;
    let completion = check.opt_one_of(
        catalog,
        "completion",
        field,
        &["plan", "runtime_receipt", "provider_readback"],
    )?;
    let requires_adapter = check.opt_bool(catalog, "requires_adapter", field)?;
    let approval = check.opt_one_of(
        catalog,
        "approval",
        field,
        &["none", "conditional", "required"],
    )?;
    let present = [
        execution.is_some(),
        completion.is_some(),
        requires_adapter.is_some(),
        approval.is_some(),
    ];
    if present.iter().any(|p| *p) && !present.iter().all(|p| *p) {
        return Err(check.err(
            line,
            field,
            "capability metadata comes together: declare execution, completion, \
             requires_adapter and approval, or none of them",
        ));
    }
    if role == "branded" {
        for (key, value) in [
            ("canonical_skill", &canonical_skill),
            ("provider", &provider),
        ] {
            if value.is_none() {
                return Err(check.err(line, &join(field, key), "is required when role is branded"));
            }
        }
    }
    if staged && part_of.is_empty() {
        return Err(check.err(
            line,
            "catalog.part_of",
            format!("is required when role is {role}: name the skill it belongs to"),
        ));
    }
    Ok(Catalog {
        kind,
        audience,
        visibility,
        role,
        canonical_skill,
        provider,
        runtime_path,
        part_of,
        execution,
        completion,
        requires_adapter,
        approval,
    })
}

fn check_runner(
    check: &Check<'_>,
    entry: &YamlEntry,
    definitions: &[InputDef],
    credentials: &[String],
) -> Result<Runner, PackageError> {
    let name = entry.key.clone();
    let field = join("runners", &name);
    let runner = check.mapping(&entry.value, &field)?;
    if let Some(instructions) = get(runner, "instructions") {
        return Err(check.err(
            instructions.line,
            &join(&field, "instructions"),
            "model instructions belong in SKILL.md, not X.yaml (write them in the agent task's \
             section of SKILL.md)",
        ));
    }
    check.closed_as(runner, &field, "runner", &RUNNER_FIELDS, Some(&field))?;
    let runx = check
        .opt_mapping(runner, "runx", &field)?
        .unwrap_or_default();
    post_run_reflect(check, runx, &join(&field, "runx"))?;
    let source = match check.opt_mapping(runner, "source", &field)? {
        Some(source) => {
            let source_field = join(&field, "source");
            check_source(
                check,
                source,
                line_of(runner, "source"),
                &source_field,
                SourceContext::Skill,
                true,
            )?
        }
        None => {
            // Without a `source:` block the runner's own source fields are its source, and its
            // other fields (scopes, inputs, ...) are not the source's business.
            let flattened: Vec<YamlEntry> = runner
                .iter()
                .filter(|e| SOURCE_FIELDS.contains(&e.key.as_str()))
                .cloned()
                .collect();
            check_source(
                check,
                &flattened,
                entry.line,
                &field,
                SourceContext::Skill,
                false,
            )?
        }
    };
    let default = check.opt_bool(runner, "default", &field)?.unwrap_or(false);
    let inputs = match check.opt_mapping(runner, "inputs", &field)? {
        None => Vec::new(),
        Some(inputs) => check_inputs(check, inputs, &join(&field, "inputs"), definitions)?,
    };
    let scopes = check.opt_non_blank_strings(runner, "scopes", &field, "scope")?;
    let credential = check.opt_non_empty(runner, "credential", &field)?;
    if let Some(credential) = &credential {
        let at = line_of(runner, "credential");
        if source.source_type == "javascript" {
            return Err(check.err(
                at,
                &join(&field, "credential"),
                "a pure javascript source cannot hold a credential; route it through a native \
                 provider tool",
            ));
        }
        if !credentials.contains(credential) {
            return Err(check.err(
                at,
                &join(&field, "credential"),
                format!("names {credential:?}, which credentials does not declare"),
            ));
        }
    }
    let artifacts = first(runner, "artifacts", runx);
    if let Some((artifact_entry, key)) = &artifacts {
        check_artifacts(check, artifact_entry, &join(&field, key))?;
    }
    if source.source_type == "graph" {
        for (present, key, message) in [
            (
                artifacts.is_some(),
                "artifacts",
                "declare the packet on the graph's terminal output-producing step",
            ),
            (
                !source.environment.is_empty(),
                "environment",
                "declare environment on the executable run step",
            ),
            (
                source.outputs.is_some(),
                "outputs",
                "declare outputs on the graph's terminal output-producing step",
            ),
        ] {
            if present {
                return Err(check.err(
                    line_of(runner, key),
                    &join(&field, key),
                    format!("is ambiguous on a graph runner; {message}"),
                ));
            }
        }
        if source
            .graph
            .as_ref()
            .is_none_or(|graph| graph.result_from.is_empty())
        {
            return Err(check.err(
                line_of(runner, "graph"),
                &format!("{field}.graph.result_from"),
                "must name at least one step whose output is the runner's public result",
            ));
        }
    }
    if let Some((retry, key)) = first(runner, "retry", runx) {
        check_retry(check, retry, &join(&field, &key))?;
    }
    if let Some((idempotency, key)) = first(runner, "idempotency", runx) {
        check_idempotency(check, idempotency, &join(&field, &key))?;
    }
    if let Some(mutating) = get(runner, "mutating").filter(|e| !e.value.is_null())
        && mutating.value.as_bool().is_none()
    {
        return Err(check.err(
            mutating.line,
            &join(&field, "mutating"),
            "must be true or false",
        ));
    }
    check.opt_strings(runner, "allowed_tools", &field)?;
    check.opt_strings(runx, "allowed_tools", &join(&field, "runx"))?;
    let examples = check_examples(check, runner, &field, &inputs)?;
    Ok(Runner {
        name,
        line: entry.line,
        default,
        inputs,
        scopes,
        credential,
        source,
        examples,
        json: entry.value.to_json(),
    })
}

/// `examples`: complete input objects, each naming only declared inputs and every required one.
fn check_examples(
    check: &Check<'_>,
    runner: &[YamlEntry],
    field: &str,
    inputs: &[InputDef],
) -> Result<Vec<Value>, PackageError> {
    let Some(entry) = get(runner, "examples").filter(|e| !e.value.is_null()) else {
        return Ok(Vec::new());
    };
    let examples_field = join(field, "examples");
    let items = entry.value.as_sequence().ok_or_else(|| {
        check.err(
            entry.line,
            &examples_field,
            "must be a list of complete input objects",
        )
    })?;
    let mut examples = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("{examples_field}[{index}]");
        let example = check.mapping(item, &at)?;
        if let Some(unknown) = example
            .iter()
            .find(|e| !inputs.iter().any(|input| input.name == e.key))
        {
            return Err(check.err(
                unknown.line,
                &join(&at, &unknown.key),
                format!("is not an input of runner {field}; examples may only use declared inputs"),
            ));
        }
        if let Some(missing) = inputs
            .iter()
            .find(|input| input.required && !has(example, &input.name))
        {
            return Err(check.err(
                item.line,
                &at,
                format!(
                    "leaves out the required input {}; an example is a complete input object",
                    missing.name
                ),
            ));
        }
        examples.push(item.to_json());
    }
    Ok(examples)
}

/// `harness: {files, cases}`.
fn check_harness(
    check: &Check<'_>,
    entry: &YamlEntry,
    paths: &BTreeSet<&str>,
    runners: &BTreeSet<&str>,
) -> Result<Harness, PackageError> {
    let field = "harness";
    let harness = check.mapping(&entry.value, field)?;
    check.closed(harness, field, "harness", &["files", "cases"])?;
    let files = check
        .opt_strings(harness, "files", field)?
        .unwrap_or_default();
    let files_line = line_of(harness, "files");
    for (index, declared) in files.iter().enumerate() {
        let at = format!("harness.files[{index}]");
        let normalized = declared.trim() == declared
            && !declared.is_empty()
            && !declared.starts_with('/')
            && !declared.contains('\\')
            && declared.starts_with("fixtures/")
            && declared
                .split('/')
                .all(|s| !s.is_empty() && !matches!(s, "." | ".."));
        if !normalized {
            return Err(check.err(
                files_line,
                &at,
                format!("is {declared:?}; harness files must be normalized relative paths under fixtures/"),
            ));
        }
        if !paths.contains(declared.as_str()) {
            return Err(check.err(
                files_line,
                &at,
                format!("names {declared}, which is not in the package"),
            ));
        }
    }
    let cases_entry = get(harness, "cases").ok_or_else(|| {
        check.err(
            entry.line,
            "harness.cases",
            "is required: list the inline cases (or remove harness)",
        )
    })?;
    let raw_cases = cases_entry
        .value
        .as_sequence()
        .ok_or_else(|| check.err(cases_entry.line, "harness.cases", "must be a list of cases"))?;
    let mut cases = Vec::new();
    for (index, node) in raw_cases.iter().enumerate() {
        let at = format!("harness.cases[{index}]");
        let case = check.mapping(node, &at)?;
        check.closed(case, &at, "harness case", &CASE_FIELDS)?;
        let name = check.required(case, "name", &at, node.line)?;
        let runner = check.opt_non_empty(case, "runner", &at)?;
        if let Some(runner) = &runner
            && !runners.contains(runner.as_str())
        {
            return Err(check.err(
                line_of(case, "runner"),
                &join(&at, "runner"),
                format!("names {runner:?}, which runners does not declare"),
            ));
        }
        check.opt_mapping(case, "inputs", &at)?;
        check.string_map(case, "env", &at)?;
        check_caller(check, case, &at)?;
        let expect = check.opt_mapping(case, "expect", &at)?.ok_or_else(|| {
            check.err(
                node.line,
                &join(&at, "expect"),
                "is required: say what the case must produce",
            )
        })?;
        check_expect(check, expect, &join(&at, "expect"))?;
        check_journeys(check, case, &at)?;
        cases.push(HarnessCase {
            name,
            line: node.line,
            runner,
            json: node.to_json(),
        });
    }
    Ok(Harness { files, cases })
}

/// `caller: {answers, approvals, http_responses, provider_responses}`.
fn check_caller(
    check: &Check<'_>,
    parent_entries: &[YamlEntry],
    parent: &str,
) -> Result<(), PackageError> {
    let field = join(parent, "caller");
    let Some(caller) = check.opt_mapping(parent_entries, "caller", parent)? else {
        return Ok(());
    };
    check.closed(caller, &field, "caller", &CALLER_FIELDS)?;
    check.opt_mapping(caller, "answers", &field)?;
    let approvals_field = join(&field, "approvals");
    for entry in check
        .opt_mapping(caller, "approvals", &field)?
        .unwrap_or_default()
    {
        if entry.value.as_bool().is_none() {
            return Err(check.err(
                entry.line,
                &join(&approvals_field, &entry.key),
                "must be true or false (the human gate's answer)",
            ));
        }
    }
    let responses_field = join(&field, "http_responses");
    for entry in check
        .opt_mapping(caller, "http_responses", &field)?
        .unwrap_or_default()
    {
        check.mapping(&entry.value, &join(&responses_field, &entry.key))?;
    }
    check.opt_mapping(caller, "provider_responses", &field)?;
    Ok(())
}

/// `expect: {status, receipt, steps, output, step_outputs}`, shared by fixtures and inline
/// cases (Runx keeps one expectation vocabulary for both).
fn check_expect(check: &Check<'_>, expect: &[YamlEntry], field: &str) -> Result<(), PackageError> {
    check.closed(expect, field, "expect", &EXPECT_FIELDS)?;
    check.opt_one_of(expect, "status", field, &EXPECT_STATUSES)?;
    let receipt_field = join(field, "receipt");
    if let Some(receipt) = check.opt_mapping(expect, "receipt", field)? {
        if let Some(retired) = receipt
            .iter()
            .find(|e| RETIRED_RECEIPT_FIELDS.contains(&e.key.as_str()))
        {
            return Err(check.err(
                retired.line,
                &join(&receipt_field, &retired.key),
                "is a retired receipt expectation field; remove it (expect state, disposition, \
                 reason_code or ids instead)",
            ));
        }
        check.closed(
            receipt,
            &receipt_field,
            "receipt expectation",
            &RECEIPT_FIELDS,
        )?;
        if let Some(schema) = check.opt_string(receipt, "schema", &receipt_field)?
            && schema != "runx.receipt.v1"
        {
            return Err(check.err(
                line_of(receipt, "schema"),
                &join(&receipt_field, "schema"),
                format!("is {schema:?}; the receipt schema is runx.receipt.v1"),
            ));
        }
        for key in [
            "body_digest",
            "receipt_id",
            "receipt_digest",
            "harness_id",
            "state",
            "disposition",
            "reason_code",
        ] {
            check.opt_string(receipt, key, &receipt_field)?;
        }
        for key in [
            "act_ids",
            "decision_ids",
            "child_receipt_refs",
            "verification_refs",
        ] {
            check.opt_strings(receipt, key, &receipt_field)?;
        }
        check.opt_u64(receipt, "child_receipt_count", &receipt_field)?;
    }
    check.opt_strings(expect, "steps", field)?;
    if let Some(output) = get(expect, "output").filter(|e| !e.value.is_null()) {
        check_json_expectation(check, output, &join(field, "output"))?;
    }
    let step_outputs_field = join(field, "step_outputs");
    for entry in check
        .opt_mapping(expect, "step_outputs", field)?
        .unwrap_or_default()
    {
        check_json_expectation(check, entry, &join(&step_outputs_field, &entry.key))?;
    }
    Ok(())
}

/// `{exact: ...}` or `{subset: ...}`.
fn check_json_expectation(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    let record = check.mapping(&entry.value, field)?;
    check.closed(record, field, "output expectation", &["exact", "subset"])?;
    if !has(record, "exact") && !has(record, "subset") {
        return Err(check.err(entry.line, field, "needs exact or subset"));
    }
    Ok(())
}

/// `operator_journeys`: standalone, composed or refusal claims a reviewer can check.
fn check_journeys(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
) -> Result<(), PackageError> {
    let field = join(parent, "operator_journeys");
    let Some(entry) = get(entries, "operator_journeys").filter(|e| !e.value.is_null()) else {
        return Ok(());
    };
    let items = entry
        .value
        .as_sequence()
        .ok_or_else(|| check.err(entry.line, &field, "must be a list of journeys"))?;
    for (index, node) in items.iter().enumerate() {
        let at = format!("{field}[{index}]");
        let journey = check.mapping(node, &at)?;
        check.closed(journey, &at, "operator journey", &JOURNEY_FIELDS)?;
        let mode = check
            .opt_one_of(journey, "mode", &at, &["standalone", "composed", "refusal"])?
            .ok_or_else(|| {
                check.err(
                    node.line,
                    &join(&at, "mode"),
                    "is required: standalone, composed or refusal",
                )
            })?;
        check.required(journey, "request", &at, node.line)?;
        check.required(journey, "expected_outcome", &at, node.line)?;
        let prior = check.opt_non_blank_strings(journey, "prior_evidence", &at, "statement")?;
        let repeat = check.opt_non_blank_strings(journey, "must_not_repeat", &at, "statement")?;
        check.opt_non_blank_strings(journey, "confusors", &at, "skill name")?;
        if mode == "composed" && (prior.is_empty() || repeat.is_empty()) {
            return Err(check.err(
                node.line,
                &at,
                "a composed journey needs prior_evidence and must_not_repeat",
            ));
        }
    }
    Ok(())
}

/// Reads one standalone fixture. When `runners` is given, a fixture that targets this package
/// (`target: ..`) must name one of them.
pub fn parse_fixture(
    path: &str,
    text: &str,
    runners: Option<&BTreeSet<&str>>,
) -> Result<Fixture, PackageError> {
    let check = Check { file: path };
    let root = yaml::parse(path, text)?;
    let fixture = check.mapping(&root, "(document)")?;
    check.closed(fixture, "", "fixture", &FIXTURE_FIELDS)?;
    // Runx deserialises a fixture with serde, so a required field that is absent is refused in
    // serde's words.
    let missing = |key: &str, message: &str| {
        invalid_as_runx(
            path,
            root.line,
            key,
            message,
            format!(
                "invalid harness fixture: failed to parse harness fixture YAML: yaml: YAML parse \
                 failed: missing field `{key}`"
            ),
        )
    };
    if get(fixture, "name").is_none() {
        return Err(missing("name", "is required"));
    }
    let name = check.required(fixture, "name", "", root.line)?;
    let kind = check
        .opt_one_of(
            fixture,
            "kind",
            "",
            &["skill", "graph", "mcp", "a2a", "agent", "agent_task"],
        )?
        .ok_or_else(|| {
            missing(
                "kind",
                "is required: skill, graph, a2a, agent or agent_task",
            )
        })?;
    if kind == "mcp" {
        return Err(check.err(
            line_of(fixture, "kind"),
            "kind",
            "mcp fixtures are not supported by the Runx harness yet; use a skill fixture",
        ));
    }
    let target = check
        .opt_string(fixture, "target", "")?
        .unwrap_or_default()
        .to_owned();
    if target.is_empty() && kind != "agent_task" {
        return Err(check.err(
            root.line,
            "target",
            "is required: the package folder relative to the fixture (.. for this package)",
        ));
    }
    let runner = check.opt_non_empty(fixture, "runner", "")?;
    if let (Some(runner), Some(runners), "..") = (&runner, runners, target.as_str())
        && !runners.contains(runner.as_str())
    {
        return Err(check.err(
            line_of(fixture, "runner"),
            "runner",
            format!("names {runner:?}, which X.yaml's runners does not declare"),
        ));
    }
    if let Some(setup) = check.opt_mapping(fixture, "setup", "")? {
        check.closed(setup, "setup", "setup", &["receipts"])?;
        let receipts = check
            .opt_strings(setup, "receipts", "setup")?
            .unwrap_or_default();
        let line = line_of(setup, "receipts");
        if receipts.len() > MAX_SETUP_RECEIPTS {
            return Err(check.err(
                line,
                "setup.receipts",
                format!("seeds more than {MAX_SETUP_RECEIPTS} receipts"),
            ));
        }
        let mut seen = BTreeSet::new();
        for (index, receipt) in receipts.iter().enumerate() {
            let at = format!("setup.receipts[{index}]");
            let normalized = !receipt.is_empty()
                && receipt.len() <= 512
                && !receipt.starts_with('/')
                && !receipt.contains('\\')
                && receipt.ends_with(".json")
                && receipt
                    .split('/')
                    .all(|s| !s.is_empty() && !matches!(s, "." | ".."));
            if !normalized {
                return Err(check.err(
                    line,
                    &at,
                    "must be a normalized package-relative .json path",
                ));
            }
            if !seen.insert(receipt) {
                return Err(check.err(line, &at, "repeats another receipt; list each once"));
            }
        }
    }
    check.opt_mapping(fixture, "inputs", "")?;
    check.string_map(fixture, "env", "")?;
    check_caller(&check, fixture, "")?;
    if let Some(expect) = check.opt_mapping(fixture, "expect", "")? {
        check_expect(&check, expect, "expect")?;
    }
    check_journeys(&check, fixture, "")?;
    check.opt_mapping(fixture, "metadata", "")?;
    Ok(Fixture {
        path: path.to_owned(),
        name,
        kind,
        target,
        runner,
        json: root.to_json(),
    })
}

/// The `inspect` summary of a package: identity, runners with their type, default flag,
/// inputs and graph steps, the catalog, harness case and fixture names, and counts.
pub fn inspect_package(package: &Package) -> Value {
    let skill = package.skill();
    let default_runner = package.default_runner().map(|runner| runner.name.clone());
    let runners: Vec<Value> = package
        .profile
        .runners
        .iter()
        .map(|runner| {
            let mut summary = json!({
                "name": runner.name,
                "type": runner.source.source_type,
                "default": default_runner.as_deref() == Some(runner.name.as_str()),
                "inputs": runner.inputs.iter().map(inspect_input).collect::<Vec<_>>(),
                "scopes": runner.scopes,
            });
            if let Some(graph) = &runner.source.graph {
                summary["graph"] = json!({
                    "name": graph.name,
                    "result_from": graph.result_from,
                    "steps": graph.steps.iter().map(inspect_step).collect::<Vec<_>>(),
                });
            }
            if let Some(module) = &runner.source.module {
                summary["module"] = json!(module);
                summary["export"] = json!(runner.source.export.as_deref().unwrap_or("default"));
            }
            if let Some(command) = &runner.source.command {
                summary["command"] = json!(command);
            }
            summary
        })
        .collect();
    let catalog = package.profile.catalog.as_ref().map(|catalog| {
        json!({
            "kind": catalog.kind,
            "audience": catalog.audience,
            "visibility": catalog.visibility,
            "role": catalog.role,
            "execution": catalog.execution,
            "completion": catalog.completion,
            "requires_adapter": catalog.requires_adapter,
            "approval": catalog.approval,
        })
    });
    let cases: Vec<&str> = package
        .harness_cases()
        .iter()
        .map(|case| case.name.as_str())
        .collect();
    let fixtures: Vec<Value> = package
        .fixtures
        .iter()
        .map(
            |fixture| json!({"path": fixture.path, "name": fixture.name, "runner": fixture.runner}),
        )
        .collect();
    let steps: usize = package
        .profile
        .runners
        .iter()
        .filter_map(|runner| runner.source.graph.as_ref())
        .map(|graph| graph.steps.len())
        .sum();
    let modules: Vec<Value> = package
        .javascript_modules()
        .into_iter()
        .map(|module| {
            json!({
                "runner": module.runner,
                "step": module.step,
                "module": module.module,
                "export": module.export.as_deref().unwrap_or("default"),
                "timeout_seconds": module.timeout_seconds,
            })
        })
        .collect();
    json!({
        "skill": skill.name,
        "version": package.profile.version,
        "description": skill.description,
        "category": skill.runx_category.as_ref().or(skill.category.as_ref()),
        "registry_owner": skill.registry_owner.as_deref().unwrap_or("runx"),
        "default_runner": default_runner,
        "runners": runners,
        "catalog": catalog,
        "javascript_modules": modules,
        "harness": {
            "cases": cases,
            "files": package.profile.harness.as_ref().map(|h| h.files.clone()).unwrap_or_default(),
            "fixtures": fixtures,
        },
        "counts": {
            "runners": package.profile.runners.len(),
            "graph_steps": steps,
            "harness_cases": cases.len(),
            "fixtures": package.fixtures.len(),
            "javascript_modules": modules.len(),
        },
    })
}

fn inspect_input(input: &InputDef) -> Value {
    let mut summary = json!({
        "name": input.name,
        "type": input.input_type,
        "required": input.required,
    });
    if let Some(default) = &input.default {
        summary["default"] = default.clone();
    }
    if let Some(packet) = &input.packet {
        summary["packet"] = json!(packet);
    }
    summary
}

fn inspect_step(step: &GraphStep) -> Value {
    let (kind, reference) = match &step.target {
        StepTarget::Tool(tool) => ("tool", json!(tool)),
        StepTarget::Skill(skill) => ("skill", json!(skill)),
        StepTarget::Approval => ("approval", Value::Null),
        StepTarget::Run(source) => ("run", json!(source.source_type)),
    };
    json!({
        "id": step.id,
        "label": step.label,
        "target": kind,
        "ref": reference,
        "mutation": step.mutation,
        "scopes": step.scopes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `$MINDRUNE_SHARED` when set, else `../shared` beside the checkout (where CI has it).
    fn packages_dir() -> std::path::PathBuf {
        let shared = std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")).into(),
            std::path::PathBuf::from,
        );
        shared.join("data/runx/packages")
    }

    /// The files of a real package, read from the shared data (never copied into the repo).
    fn real(name: &str) -> Vec<SnapshotFile> {
        fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<SnapshotFile>) {
            let entries = std::fs::read_dir(dir).unwrap_or_else(|err| {
                panic!(
                    "cannot read {}: {err} (set MINDRUNE_SHARED to the shared folder)",
                    dir.display()
                )
            });
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(root, &path, out);
                } else {
                    let relative = path.strip_prefix(root).unwrap_or(&path);
                    out.push(SnapshotFile {
                        path: relative.to_string_lossy().replace('\\', "/"),
                        mode: 0o100_644,
                        contents: std::fs::read(&path).unwrap_or_default(),
                    });
                }
            }
        }
        let root = packages_dir().join(name);
        let mut files = Vec::new();
        walk(&root, &root, &mut files);
        // The shared data has no `.mjs` files; the engine's tests keep our own modules for the
        // packages that declare one, and a package is only valid with its declared files.
        let modules = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../engine/tests/data/runx-modules"
        ))
        .join(name);
        if modules.is_dir() {
            walk(&modules, &modules, &mut files);
        }
        files
    }

    /// The files, exactly as given.
    fn bare_files(pairs: &[(&str, &str)]) -> Vec<SnapshotFile> {
        pairs
            .iter()
            .map(|(path, text)| SnapshotFile {
                path: (*path).to_owned(),
                mode: 0o100_644,
                contents: text.as_bytes().to_vec(),
            })
            .collect()
    }

    /// The `.mjs`/`.js` names a profile's text mentions, as package paths.
    fn mentioned_modules(profile: &str) -> Vec<String> {
        let mut modules: Vec<String> = profile
            .split(|c: char| c.is_whitespace() || matches!(c, '[' | ']' | ',' | '"' | '\''))
            .filter(|word| word.ends_with(".mjs") || word.ends_with(".js"))
            .map(|word| word.strip_prefix("./").unwrap_or(word).to_owned())
            .filter(|word| !word.starts_with('/') && !word.contains(".."))
            .collect();
        modules.sort_unstable();
        modules.dedup();
        modules
    }

    /// The files plus a module for every `.mjs`/`.js` name X.yaml mentions that is not among
    /// them, so a test breaks only the line it means to (the loader refuses a package whose
    /// declared modules are absent).
    fn files(pairs: &[(&str, &str)]) -> Vec<SnapshotFile> {
        let mut out = bare_files(pairs);
        for (path, text) in pairs {
            if *path != "X.yaml" {
                continue;
            }
            for module in mentioned_modules(text) {
                if !out.iter().any(|file| file.path == module) {
                    out.push(SnapshotFile {
                        path: module,
                        mode: 0o100_644,
                        contents: b"export default () => ({});\n".to_vec(),
                    });
                }
            }
        }
        out
    }

    const MANUAL: &str = "---\nname: demo\ndescription: A demo skill.\n---\n\n# Demo\n\nUse it.\n";

    /// A small valid profile: a graph runner with a tool step, an agent step and a
    /// javascript finalizer, so single lines can be broken in each test.
    const PROFILE: &str = "\
skill: demo
version: \"1.0.0\"
catalog:
  kind: graph
  audience: public
  role: canonical
runners:
  build:
    default: true
    type: graph
    inputs:
      topic:
        type: string
        required: true
    graph:
      name: demo
      result_from: [finish]
      steps:
        - id: look
          tool: fs.read
          inputs:
            topic: $input.topic
        - id: think
          run:
            type: agent-task
            agent: builder
            task: demo-think
          context:
            seen: look.result.data
        - id: finish
          run:
            type: javascript
            module: finish.mjs
";

    fn load(profile: &str) -> Result<Package, PackageError> {
        load_package(&files(&[("SKILL.md", MANUAL), ("X.yaml", profile)]))
    }

    fn refused(profile: &str) -> PackageError {
        match load(profile) {
            Ok(_) => panic!("accepted:\n{profile}"),
            Err(err) => err,
        }
    }

    /// The profile with `from` replaced by `to` (which must occur).
    fn edit(from: &str, to: &str) -> String {
        assert!(PROFILE.contains(from), "{from}");
        PROFILE.replacen(from, to, 1)
    }

    /// The 1-based line of the first line of `PROFILE`-like text containing `needle`.
    fn line_of_text(text: &str, needle: &str) -> usize {
        text.lines()
            .position(|line| line.contains(needle))
            .map_or(0, |index| index + 1)
    }

    #[test]
    fn all_four_real_packages_load_with_their_fixtures() {
        let expected = [
            ("hello-world", 0, vec!["default"], Some("default"), 1),
            ("web-fetch", 4, vec!["web-fetch"], Some("web-fetch"), 0),
            (
                "weather-forecast",
                4,
                vec!["normalize"],
                Some("normalize"),
                0,
            ),
            (
                "skill-lab",
                5,
                vec!["design", "build", "improve", "harness"],
                Some("build"),
                2,
            ),
        ];
        for (name, fixtures, runners, default, cases) in expected {
            let package = load_package(&real(name)).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert_eq!(package.name(), name);
            assert_eq!(package.fixtures().len(), fixtures, "{name}");
            assert_eq!(package.runner_names(), runners, "{name}");
            assert_eq!(
                package.default_runner().map(|r| r.name.as_str()),
                default,
                "{name}"
            );
            assert_eq!(package.harness_cases().len(), cases, "{name}");
            assert_eq!(package.profile_json()["skill"], name);
            for fixture in package.fixtures() {
                assert!(fixture.json["name"].is_string(), "{}", fixture.path);
                assert_eq!(fixture.target, "..");
            }
        }
    }

    #[test]
    fn real_packages_expose_graphs_modules_and_inputs() {
        let weather = load_package(&real("weather-forecast")).unwrap();
        assert_eq!(
            weather.javascript_modules(),
            vec![JsModule {
                runner: "normalize".to_owned(),
                step: Some("validate".to_owned()),
                module: "weather-forecast.mjs".to_owned(),
                export: None,
                timeout_seconds: JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS,
            }]
        );
        let runner = weather.runner("normalize").unwrap();
        let graph = runner.source.graph.as_ref().unwrap();
        assert_eq!(graph.result_from, ["validate"]);
        assert!(
            matches!(&graph.steps[0].target, StepTarget::Run(s) if s.source_type == "agent-task")
        );
        assert_eq!(
            graph.steps[1].context["forecast_draft"],
            "interpret.forecast_draft.data"
        );
        let fetch = load_package(&real("web-fetch")).unwrap();
        let runner = fetch.runner("web-fetch").unwrap();
        let allowlist = runner
            .inputs
            .iter()
            .find(|i| i.name == "allowlist")
            .unwrap();
        assert_eq!(allowlist.input_type, "array");
        assert_eq!(allowlist.default, Some(json!(["*"])));
        assert_eq!(runner.examples.len(), 1);
        assert_eq!(
            fetch
                .profile()
                .catalog
                .as_ref()
                .unwrap()
                .completion
                .as_deref(),
            Some("provider_readback")
        );
        assert_eq!(fetch.skill().runx_category.as_deref(), Some("research"));
    }

    #[test]
    fn inspect_summarizes_runners_steps_catalog_and_harness() {
        let summary = inspect_package(&load_package(&real("skill-lab")).unwrap());
        assert_eq!(summary["skill"], "skill-lab");
        assert_eq!(summary["version"], "0.9.4");
        assert_eq!(summary["default_runner"], "build");
        assert_eq!(summary["catalog"]["audience"], "builder");
        assert_eq!(summary["counts"]["runners"], 4);
        assert_eq!(summary["counts"]["fixtures"], 5);
        assert_eq!(summary["counts"]["harness_cases"], 2);
        let build = &summary["runners"][1];
        assert_eq!(build["name"], "build");
        assert_eq!(build["type"], "graph");
        assert_eq!(build["default"], true);
        let steps: Vec<&str> = build["graph"]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|step| step["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            steps,
            ["inspect", "architect", "plan", "author", "bind", "apply"]
        );
        assert_eq!(build["graph"]["steps"][0]["ref"], "runx.skill.inspect");
        assert_eq!(
            summary["harness"]["cases"],
            json!([
                "skill-lab-designs-bounded-package",
                "skill-lab-needs-objective"
            ])
        );
        assert_eq!(
            summary["harness"]["fixtures"][0]["path"],
            "fixtures/build-needs-core.yaml"
        );
        let hello = inspect_package(&load_package(&real("hello-world")).unwrap());
        assert_eq!(hello["runners"][0]["command"], "node");
        assert_eq!(hello["registry_owner"], "runx");
    }

    #[test]
    fn a_small_package_loads() {
        let package = load(PROFILE).unwrap();
        assert_eq!(package.default_runner().unwrap().name, "build");
        assert_eq!(package.javascript_modules()[0].module, "finish.mjs");
        assert_eq!(
            package.profile().catalog.as_ref().unwrap().visibility,
            "public"
        );
    }

    #[test]
    fn missing_skill_md_or_x_yaml_is_named() {
        let err = load_package(&files(&[("X.yaml", PROFILE)])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SKILL.md: required package file is missing\n  a Runx package needs both SKILL.md and X.yaml"
        );
        let err = load_package(&files(&[("SKILL.md", MANUAL)])).unwrap_err();
        assert_eq!(err.file(), "X.yaml");
        assert!(err.to_string().contains("needs both SKILL.md and X.yaml"));
    }

    #[test]
    fn skill_md_needs_frontmatter_with_a_name() {
        let with =
            |manual: &str| load_package(&files(&[("SKILL.md", manual), ("X.yaml", PROFILE)]));
        // Runx's words, then MindRune's place and hint.
        let err = with("# Demo\n").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "SKILL.md: skill: Skill markdown must start with YAML frontmatter delimited by ---.\n  at SKILL.md:1: frontmatter: "
            ),
            "{err}"
        );
        let err = with("---\ndescription: no name\n---\n").unwrap_err();
        assert_eq!(err.to_string(), "SKILL.md:1: name: is required");
        let err = with("---\nname: \"\"\n---\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("SKILL.md:2: name: must not be empty"),
            "{err}"
        );
        let err = with("---\nname: demo\nrunx: research\n---\n").unwrap_err();
        assert!(err.to_string().contains("runx must be a mapping"), "{err}");
        let err = with("---\nname: demo\nregistry_owner: AutoMerch\n---\n").unwrap_err();
        assert!(
            err.to_string().starts_with("SKILL.md:3: registry_owner: "),
            "{err}"
        );
        // The frontmatter is YAML in the same strict subset, reported in SKILL.md's lines.
        let err = with("---\nname: demo\nname: again\n---\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("SKILL.md:3:1: duplicate key name"),
            "{err}"
        );
        // CRLF files split the same way.
        let crlf = MANUAL.replace('\n', "\r\n");
        assert_eq!(with(&crlf).unwrap().manual().frontmatter.name, "demo");
    }

    #[test]
    fn unknown_frontmatter_keys_are_kept_not_refused() {
        let manual = "---\nname: demo\nlicense: MIT\nmetadata: {owner: me}\nrunx:\n  category: research\n  tags: [a]\n---\nBody\n";
        let package = load_package(&files(&[("SKILL.md", manual), ("X.yaml", PROFILE)])).unwrap();
        assert_eq!(package.manual().json["license"], "MIT");
        assert_eq!(package.skill().runx_category.as_deref(), Some("research"));
        assert_eq!(package.manual().body, "Body\n");
    }

    #[test]
    fn execution_metadata_in_skill_md_is_refused_in_a_package_but_read_on_its_own() {
        let manual = "---\nname: demo\ninputs:\n  message:\n    type: string\nretry:\n  max_attempts: 2\nrunx:\n  post_run:\n    reflect: always\n---\n";
        let alone = parse_skill_md(manual).unwrap();
        assert_eq!(alone.frontmatter.inputs[0].name, "message");
        assert_eq!(alone.frontmatter.post_run_reflect, "always");
        let err = load_package(&files(&[("SKILL.md", manual), ("X.yaml", PROFILE)])).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("SKILL.md:3: inputs: execution metadata belongs in X.yaml"),
            "{err}"
        );
        let manual = "---\nname: demo\nrunx:\n  category: x\n  post_run:\n    reflect: auto\n---\n";
        let err = load_package(&files(&[("SKILL.md", manual), ("X.yaml", PROFILE)])).unwrap_err();
        assert!(
            err.to_string().starts_with("SKILL.md:5: runx.post_run: "),
            "{err}"
        );
    }

    #[test]
    fn unknown_top_level_field_is_refused_naming_file_line_and_field() {
        let profile = format!("{PROFILE}stages:\n  - one\n");
        let err = refused(&profile);
        assert_eq!(err.file(), "X.yaml");
        assert_eq!(err.line(), Some(line_of_text(&profile, "stages:")));
        assert_eq!(err.field(), Some("stages"));
        assert!(
            err.to_string().contains("unknown X.yaml top-level field"),
            "{err}"
        );
        assert!(err.to_string().contains("runners"), "{err}");
    }

    #[test]
    fn unknown_runner_field_is_refused_naming_file_line_and_field() {
        let profile = edit(
            "    default: true\n",
            "    default: true\n    prompt: do it\n",
        );
        let err = refused(&profile);
        let text = err.to_string();
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some(
                "X.yaml: runners.build.prompt is not supported; allowed fields: act, agent, agent_card_url, agent_identity, allowed_tools, args, arguments, artifacts, auth, command, credential, context, context_skills, cwd, default, environment, examples, execution, external_adapter, export, graph, headers, hook, http, idempotency, input_mode, inputs, method, module, mutating, outputs, pages, policy, retry, risk, runx, runtime, server, scopes, source, task, thread_outbox_provider, timeout_seconds, tool, type, url, allow_private_network."
            ),
            "Runx's words first"
        );
        assert!(
            lines.next().is_some_and(|line| line
                .starts_with("  at X.yaml:10: runners.build.prompt: unknown runner field")),
            "{text}"
        );
    }

    /// Runx's runner field list has no `sandbox`, and refuses it like any unknown field.
    #[test]
    fn a_runner_sandbox_field_is_refused_as_runx_refuses_it() {
        let profile = edit(
            "    default: true\n",
            "    default: true\n    sandbox: strict\n",
        );
        let err = refused(&profile);
        assert_eq!(err.field(), Some("runners.build.sandbox"));
        assert!(
            err.to_string().starts_with(
                "X.yaml: runners.build.sandbox is not supported; allowed fields: act, "
            ),
            "{err}"
        );
    }

    /// Runx refuses a package whose X.yaml declares a module or a cli-tool script that is not
    /// among its files, naming the missing file (`runx-parser` package validation).
    #[test]
    fn a_declared_module_or_sidecar_that_is_absent_makes_the_package_invalid() {
        let err =
            load_package(&bare_files(&[("SKILL.md", MANUAL), ("X.yaml", PROFILE)])).unwrap_err();
        let text = err.to_string();
        assert_eq!(
            text.lines().next(),
            Some("finish.mjs: declared JavaScript module is missing"),
            "{text}"
        );
        assert!(
            text.contains("at X.yaml:")
                && text.contains("runners.build.graph.steps.finish.run.module"),
            "{text}"
        );

        let cli = "skill: demo\nrunners:\n  default:\n    default: true\n    type: cli-tool\n    command: node\n    args:\n      - ./run.mjs\n      - --verbose\n";
        let err = load_package(&bare_files(&[("SKILL.md", MANUAL), ("X.yaml", cli)])).unwrap_err();
        assert_eq!(
            err.to_string().lines().next(),
            Some("run.mjs: declared execution sidecar is missing from the skill package"),
            "{err}"
        );
        // With the files present, both load.
        assert!(load_package(&files(&[("SKILL.md", MANUAL), ("X.yaml", cli)])).is_ok());
        assert!(load(PROFILE).is_ok());
        // A sidecar is a relative .js/.mjs path; `node` and `--verbose` are not files.
        assert_eq!(process_script_path("./run.mjs"), Some("run.mjs"));
        assert_eq!(process_script_path("lib/x.js"), Some("lib/x.js"));
        for not_a_file in ["node", "--verbose", "/abs/x.mjs", "../x.mjs", "a\\b.mjs"] {
            assert_eq!(process_script_path(not_a_file), None, "{not_a_file}");
        }
    }

    #[test]
    fn declared_packet_ids_are_gathered_from_runners_steps_and_inputs() {
        assert_eq!(
            Package::declared_packet_ids(&load_package(&real("weather-forecast")).unwrap()),
            ["runx.context.weather_forecast.v1"]
        );
        let skill_lab = load_package(&real("skill-lab"))
            .unwrap()
            .declared_packet_ids();
        assert!(
            skill_lab.contains(&"runx.skill.change_draft.v1".to_owned()),
            "{skill_lab:?}"
        );
        assert!(load(PROFILE).unwrap().declared_packet_ids().is_empty());
    }

    /// A fixture without a required field is refused in serde's words, as Runx reads it.
    #[test]
    fn a_fixture_missing_kind_is_refused_in_runx_words() {
        let err = with_fixture("name: extra\ntarget: ..\nrunner: build\n").unwrap_err();
        assert_eq!(
            err.to_string().lines().next(),
            Some(
                "fixtures/smoke.yaml: invalid harness fixture: failed to parse harness fixture YAML: yaml: YAML parse failed: missing field `kind`"
            ),
            "{err}"
        );
        let err = with_fixture("kind: skill\ntarget: ..\n").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("missing field `name`\n  at fixtures/smoke.yaml:1: name: is required"),
            "{err}"
        );
    }

    #[test]
    fn runners_are_required_and_have_one_default() {
        let err = refused("skill: demo\n");
        assert_eq!(err.field(), Some("runners"));
        let profile = format!("{PROFILE}  other:\n    default: true\n    type: agent\n");
        let err = refused(&profile);
        assert_eq!(err.field(), Some("runners.other.default"));
        assert!(err.to_string().contains("keep one default runner"), "{err}");
    }

    #[test]
    fn instructions_are_refused_in_runners_and_steps() {
        let profile = edit(
            "    default: true\n",
            "    default: true\n    instructions: Be careful.\n",
        );
        let err = refused(&profile);
        assert!(
            err.to_string()
                .starts_with("X.yaml:10: runners.build.instructions: model instructions belong in SKILL.md, not X.yaml"),
            "{err}"
        );
        let profile = edit(
            "            module: finish.mjs\n",
            "            module: finish.mjs\n          instructions: Summarize.\n",
        );
        let err = refused(&profile);
        let line = line_of_text(&profile, "instructions:");
        assert!(
            err.to_string().starts_with(&format!(
                "X.yaml:{line}: runners.build.graph.steps[2].instructions: model instructions belong in SKILL.md, not X.yaml"
            )),
            "{err}"
        );
    }

    #[test]
    fn retired_step_keys_are_refused_with_what_to_do() {
        for (key, says) in [
            ("effect_family: harmless", "effect ownership"),
            ("sync: all", "sequential graph runner"),
            ("stage: pay-quote", "sequential graph runner"),
        ] {
            let profile = edit(
                "          tool: fs.read\n",
                &format!("          tool: fs.read\n          {key}\n"),
            );
            let err = refused(&profile);
            let field = key.split(':').next().unwrap();
            assert_eq!(
                err.field(),
                Some(format!("runners.build.graph.steps[0].{field}").as_str())
            );
            assert_eq!(err.line(), Some(line_of_text(&profile, key)));
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn legacy_double_brace_bindings_are_refused() {
        let profile = edit("topic: $input.topic", "topic: \"{{ topic }}\"");
        let err = refused(&profile);
        assert_eq!(
            err.field(),
            Some("runners.build.graph.steps[0].inputs.topic")
        );
        assert!(err.to_string().contains("\"$input.topic\""), "{err}");
        // An earlier step's output belongs in context.
        let profile = edit(
            "            seen: look.result.data\n",
            "            seen: look.result.data\n          inputs:\n            raw: look.result\n",
        );
        let err = refused(&profile);
        assert!(err.to_string().contains("move it to context"), "{err}");
    }

    #[test]
    fn steps_need_an_id_and_exactly_one_target() {
        let profile = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          skill: other\n",
        );
        let err = refused(&profile);
        assert!(
            err.to_string()
                .contains("exactly one of tool, skill or run"),
            "{err}"
        );
        assert_eq!(err.line(), Some(line_of_text(&profile, "skill: other")));
        let profile = edit(
            "        - id: look\n          tool: fs.read\n",
            "        - tool: fs.read\n",
        );
        let err = refused(&profile);
        assert_eq!(err.field(), Some("runners.build.graph.steps[0].id"));
        let profile = edit("        - id: think\n", "        - id: look\n");
        assert!(refused(&profile).to_string().contains("ids must be unique"));
        let profile = edit("seen: look.result.data", "seen: later.result");
        assert!(
            refused(&profile)
                .to_string()
                .contains("not an earlier step")
        );
        let profile = edit("result_from: [finish]", "result_from: [missing]");
        assert!(
            refused(&profile)
                .to_string()
                .contains("not a step of this graph")
        );
        let profile = edit("      result_from: [finish]\n", "");
        assert!(refused(&profile).to_string().contains("public result"));
    }

    #[test]
    fn when_takes_a_field_and_exactly_one_comparison() {
        let ok = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          when: {field: mode, equals: build}\n",
        );
        assert!(load(&ok).is_ok());
        let both = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          when: {field: mode, equals: a, not_equals: b}\n",
        );
        assert!(
            refused(&both)
                .to_string()
                .contains("exactly one of equals or not_equals")
        );
        let other = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          when: {field: mode, matches: a}\n",
        );
        assert_eq!(
            refused(&other).field(),
            Some("runners.build.graph.steps[0].when.matches")
        );
    }

    #[test]
    fn javascript_timeout_is_one_to_thirty_seconds_and_export_defaults() {
        let ok = edit(
            "module: finish.mjs\n",
            "module: finish.mjs\n            timeout_seconds: 30\n            export: finalize\n",
        );
        let package = load(&ok).unwrap();
        let module = &package.javascript_modules()[0];
        assert_eq!(
            (module.timeout_seconds, module.export.as_deref()),
            (30, Some("finalize"))
        );
        for bad in ["0", "31"] {
            let profile = edit(
                "module: finish.mjs\n",
                &format!("module: finish.mjs\n            timeout_seconds: {bad}\n"),
            );
            let err = refused(&profile);
            assert_eq!(
                err.field(),
                Some("runners.build.graph.steps[2].run.timeout_seconds")
            );
            assert!(err.to_string().contains("1 to 30 seconds"), "{err}");
        }
        let profile = edit("module: finish.mjs", "module: ../finish.mjs");
        assert!(
            refused(&profile)
                .to_string()
                .contains("relative .mjs or .js path")
        );
        let profile = edit(
            "module: finish.mjs\n",
            "module: finish.mjs\n            export: 9lives\n",
        );
        assert!(
            refused(&profile)
                .to_string()
                .contains("JavaScript identifier")
        );
        let profile = edit(
            "module: finish.mjs\n",
            "module: finish.mjs\n            command: node\n",
        );
        assert!(refused(&profile).to_string().contains("pure domain module"));
    }

    #[test]
    fn source_types_and_inputs_are_closed() {
        let profile = edit("type: agent-task", "type: shell");
        let err = refused(&profile);
        assert_eq!(err.field(), Some("runners.build.graph.steps[1].run.type"));
        let profile = edit("        type: string\n", "        type: text\n");
        let err = refused(&profile);
        assert_eq!(err.field(), Some("runners.build.inputs.topic.type"));
        assert!(
            err.to_string()
                .contains("array, boolean, integer, json, number, object, string")
        );
        let profile = edit(
            "        required: true\n",
            "        required: true\n        format: uri\n",
        );
        assert_eq!(
            refused(&profile).field(),
            Some("runners.build.inputs.topic.format")
        );
        let profile = edit(
            "        required: true\n",
            "        required: true\n        default: 3\n",
        );
        assert!(
            refused(&profile)
                .to_string()
                .contains("must match the declared type string")
        );
        let profile = edit("        required: true\n", "        packet: runx.demo.v1\n");
        assert!(refused(&profile).to_string().contains("type to be json"));
        let profile = edit("            agent: builder\n", "");
        assert!(
            load(&profile).is_ok(),
            "an inline agent-task takes its agent from the graph"
        );
        let profile = format!("{PROFILE}  ask:\n    type: agent-task\n    task: t\n");
        assert_eq!(refused(&profile).field(), Some("runners.ask.agent"));
    }

    #[test]
    fn input_definitions_are_shared_by_reference() {
        let profile = format!(
            "input_definitions:\n  topic:\n    type: string\n    required: true\n{}",
            edit(
                "      topic:\n        type: string\n        required: true\n",
                "      topic: {definition: topic}\n"
            )
        );
        let package = load(&profile).unwrap();
        let input = &package.runner("build").unwrap().inputs[0];
        assert_eq!(
            (input.required, input.definition.as_deref()),
            (true, Some("topic"))
        );
        let profile = edit(
            "      topic:\n        type: string\n        required: true\n",
            "      topic: {definition: nope}\n",
        );
        assert!(
            refused(&profile)
                .to_string()
                .contains("input_definitions does not declare")
        );
    }

    #[test]
    fn catalog_enums_are_closed() {
        let profile = edit("audience: public", "audience: everyone");
        let err = refused(&profile);
        assert_eq!(
            err.to_string().split(": is").next(),
            Some("X.yaml:5: catalog.audience")
        );
        let profile = edit(
            "  role: canonical\n",
            "  role: graph-stage\n  part_of: [x]\n",
        );
        assert!(
            refused(&profile)
                .to_string()
                .contains("visibility: internal")
        );
        let profile = edit(
            "  role: canonical\n",
            "  role: canonical\n  execution: read\n",
        );
        assert!(
            refused(&profile)
                .to_string()
                .contains("capability metadata comes together")
        );
        let profile = edit("  role: canonical\n", "  role: canonical\n  owner: me\n");
        assert_eq!(refused(&profile).field(), Some("catalog.owner"));
    }

    #[test]
    fn harness_files_must_be_normalized_under_fixtures_and_present() {
        let with_harness = |files_line: &str| {
            format!(
                "{PROFILE}harness:\n  files:\n    - {files_line}\n  cases:\n    - name: smoke\n      runner: build\n      inputs: {{topic: x}}\n      expect:\n        status: sealed\n"
            )
        };
        let package_files = |profile: &str| {
            files(&[
                ("SKILL.md", MANUAL),
                ("X.yaml", profile),
                ("fixtures/helper.json", "{}"),
            ])
        };
        let ok = with_harness("fixtures/helper.json");
        let package = load_package(&package_files(&ok)).unwrap();
        assert_eq!(package.harness_cases()[0].name, "smoke");
        for bad in [
            "../helper.json",
            "fixtures/../X.yaml",
            "helper.json",
            "fixtures//helper.json",
            "fixtures/missing.json",
        ] {
            let profile = with_harness(bad);
            let err = load_package(&package_files(&profile)).unwrap_err();
            assert_eq!(err.field(), Some("harness.files[0]"), "{bad}: {err}");
        }
        let bad_runner = ok.replace("runner: build", "runner: ghost");
        let err = load_package(&package_files(&bad_runner)).unwrap_err();
        assert_eq!(err.field(), Some("harness.cases[0].runner"));
        let bad_case = ok.replace(
            "      inputs: {topic: x}",
            "      notes: hi\n      inputs: {topic: x}",
        );
        let err = load_package(&package_files(&bad_case)).unwrap_err();
        assert_eq!(err.field(), Some("harness.cases[0].notes"));
    }

    const FIXTURE: &str = "\
name: smoke
kind: skill
target: ..
runner: build
inputs:
  topic: x
caller:
  answers:
    agent_task.demo-think.output: {note: ok}
  approvals: {gate: true}
expect:
  status: sealed
  receipt:
    schema: runx.receipt.v1
  steps: [look, think, finish]
  step_outputs:
    finish:
      subset: {ok: true}
metadata:
  source: test
";

    fn with_fixture(fixture: &str) -> Result<Package, PackageError> {
        load_package(&files(&[
            ("SKILL.md", MANUAL),
            ("X.yaml", PROFILE),
            ("fixtures/smoke.yaml", fixture),
        ]))
    }

    #[test]
    fn fixtures_load_as_json_for_the_replay() {
        let package = with_fixture(FIXTURE).unwrap();
        let fixture = &package.fixtures()[0];
        assert_eq!(
            (fixture.name.as_str(), fixture.runner.as_deref()),
            ("smoke", Some("build"))
        );
        assert_eq!(fixture.json["caller"]["approvals"]["gate"], true);
        assert_eq!(
            fixture.json["expect"]["steps"],
            json!(["look", "think", "finish"])
        );
    }

    #[test]
    fn unknown_fixture_field_is_refused_naming_file_line_and_field() {
        let fixture = FIXTURE.replace("metadata:", "notes: hi\nmetadata:");
        let err = with_fixture(&fixture).unwrap_err();
        assert_eq!(err.file(), "fixtures/smoke.yaml");
        let line = line_of_text(&fixture, "notes:");
        assert!(
            err.to_string().starts_with(&format!(
                "fixtures/smoke.yaml:{line}: notes: unknown fixture field"
            )),
            "{err}"
        );
        let err = with_fixture(&FIXTURE.replace("  approvals:", "  prompts: {a: b}\n  approvals:"))
            .unwrap_err();
        assert_eq!(err.field(), Some("caller.prompts"));
        let err = with_fixture(&FIXTURE.replace("  steps:", "  trace: []\n  steps:")).unwrap_err();
        assert_eq!(err.field(), Some("expect.trace"));
    }

    #[test]
    fn fixture_values_follow_runx_rules() {
        let cases = [
            ("status: sealed", "status: done", "expect.status"),
            ("kind: skill", "kind: mcp", "kind"),
            (
                "    schema: runx.receipt.v1\n",
                "    schema: runx.receipt.v1\n    skill_name: demo\n",
                "expect.receipt.skill_name",
            ),
            (
                "    schema: runx.receipt.v1\n",
                "    schema: runx.receipt.v2\n",
                "expect.receipt.schema",
            ),
            (
                "      subset: {ok: true}\n",
                "      partial: {ok: true}\n",
                "expect.step_outputs.finish.partial",
            ),
            ("{gate: true}", "{gate: yes}", "caller.approvals.gate"),
            ("runner: build", "runner: ghost", "runner"),
            ("name: smoke\n", "", "name"),
        ];
        for (from, to, field) in cases {
            assert!(FIXTURE.contains(from), "{from}");
            let err = with_fixture(&FIXTURE.replacen(from, to, 1)).unwrap_err();
            assert_eq!(err.field(), Some(field), "{from} -> {to}: {err}");
        }
        let composed = FIXTURE.replace(
            "metadata:",
            "operator_journeys:\n  - mode: composed\n    request: r\n    expected_outcome: o\nmetadata:",
        );
        assert!(
            with_fixture(&composed)
                .unwrap_err()
                .to_string()
                .contains("prior_evidence and must_not_repeat")
        );
    }

    #[test]
    fn yaml_strictness_is_reported_with_file_line_and_column() {
        let err = refused(&edit("  build:\n", "  build: &b\n"));
        assert_eq!(
            err.to_string(),
            "X.yaml: runner_manifest: YAML parse failed: YAML anchors, aliases, and tags are not supported in X.yaml at line 8; write the profile explicitly.\n  at X.yaml:8:10: anchors are not allowed in Runx YAML (remove &b and repeat the value)"
        );
        let profile = format!("{PROFILE}skill: again\n");
        let err = refused(&profile);
        let line = line_of_text(&profile, "skill: again");
        assert_eq!(
            err.to_string(),
            format!(
                "X.yaml: runner_manifest: YAML parse failed: duplicate mapping key \"skill\" in X.yaml at line {line}; keep profile keys unique.\n  at X.yaml:{line}:1: duplicate key skill (first at line 1); Runx refuses duplicate keys, keep one"
            )
        );
        // The other constructs Runx's profile subset names, with the line Runx reports.
        let cases = [
            (
                format!("{PROFILE}---\nskill: demo\n"),
                "---",
                "YAML document markers are not supported in X.yaml at line {line}; use one plain profile document.",
            ),
            (
                edit("  build:\n", "  build:\n    <<: {b: 2}\n"),
                "<<",
                "YAML merge keys are not supported in X.yaml at line {line}; write the profile explicitly.",
            ),
            (
                edit("      name: demo\n", "      name: !custom demo\n"),
                "!custom",
                "YAML anchors, aliases, and tags are not supported in X.yaml at line {line}; write the profile explicitly.",
            ),
        ];
        for (profile, marker, runx) in cases {
            let runx = runx.replace("{line}", &line_of_text(&profile, marker).to_string());
            let err = refused(&profile).to_string();
            assert_eq!(
                err.lines().next(),
                Some(format!("X.yaml: runner_manifest: YAML parse failed: {runx}").as_str()),
                "{err}"
            );
        }
        let err = with_fixture(&format!("---\n{FIXTURE}")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("fixtures/smoke.yaml:1:1: document markers"),
            "{err}"
        );
        let err = with_fixture(&FIXTURE.replace("source: test", "source: !tag test")).unwrap_err();
        assert!(err.to_string().contains("tags are not allowed"), "{err}");
    }

    #[test]
    fn profile_skill_must_match_the_manual_name() {
        let err = refused(&edit("skill: demo", "skill: other"));
        assert_eq!(
            err.to_string().split(": is").next(),
            Some("X.yaml:1: skill")
        );
    }

    #[test]
    fn non_utf8_files_are_refused_with_their_line() {
        let mut package = files(&[("SKILL.md", MANUAL), ("X.yaml", PROFILE)]);
        package[1].contents.extend_from_slice(b"\n# \xff\n");
        let err = load_package(&package).unwrap_err();
        let line = PROFILE.lines().count() + 2;
        assert_eq!(
            err.to_string(),
            format!("X.yaml:{line}: the file is not UTF-8 text; save it as UTF-8")
        );
    }

    /// The fuzz seeds split as the `runx_package` target splits them (X.yaml, then NUL and
    /// SKILL.md, then NUL and a fixture), so a seed keeps exercising what its name says.
    #[test]
    fn fuzz_seeds_load_or_refuse_as_their_names_say() {
        let dir = std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/seeds/runx_package"
        ));
        let seed = |name: &str| {
            let data = std::fs::read(dir.join(name)).unwrap_or_else(|err| panic!("{name}: {err}"));
            let mut parts = data.splitn(3, |byte| *byte == 0);
            let profile = parts.next().unwrap_or_default().to_vec();
            let manual = parts
                .next()
                .map_or(MANUAL.as_bytes().to_vec(), <[u8]>::to_vec);
            let mut package = vec![
                SnapshotFile {
                    path: "SKILL.md".to_owned(),
                    mode: 0o100_644,
                    contents: manual,
                },
                SnapshotFile {
                    path: "X.yaml".to_owned(),
                    mode: 0o100_644,
                    contents: profile,
                },
            ];
            if let Some(fixture) = parts.next() {
                package.push(SnapshotFile {
                    path: "fixtures/case.yaml".to_owned(),
                    mode: 0o100_644,
                    contents: fixture.to_vec(),
                });
            }
            for module in mentioned_modules(&String::from_utf8_lossy(&package[1].contents)) {
                package.push(SnapshotFile {
                    path: module,
                    mode: 0o100_644,
                    contents: b"export default () => ({});\n".to_vec(),
                });
            }
            load_package(&package)
        };
        let graph = seed("graph_with_fixture").unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(
            (graph.fixtures().len(), graph.harness_cases().len()),
            (1, 1)
        );
        assert_eq!(graph.javascript_modules()[0].timeout_seconds, 5);
        let runners = seed("cli_and_javascript_runners").unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(runners.runner_names(), ["echo", "finalize"]);
        assert!(runners.default_runner().is_none());
        let err = seed("refused_anchor_and_manual_inputs").unwrap_err();
        assert!(err.to_string().starts_with("SKILL.md:3: inputs: "), "{err}");
    }

    fn real_texts() -> Vec<(String, String)> {
        let mut texts = Vec::new();
        for name in ["hello-world", "web-fetch", "weather-forecast", "skill-lab"] {
            for file in real(name) {
                if file.path.ends_with(".yaml") {
                    texts.push((name.to_owned(), file.path.clone()));
                }
            }
        }
        texts
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Arbitrary text as X.yaml, SKILL.md or a fixture never panics the loader.
        #[test]
        fn load_package_never_panics_on_arbitrary_text(
            profile in "\\PC{0,200}",
            manual in "\\PC{0,120}",
            fixture in "[-a-z:{}\\[\\]&*!| \n]{0,120}",
        ) {
            let _ = load_package(&files(&[
                ("SKILL.md", &manual),
                ("X.yaml", &profile),
                ("fixtures/f.yaml", &fixture),
            ]));
            let _ = load_package(&files(&[
                ("SKILL.md", MANUAL),
                ("X.yaml", &profile),
            ]));
        }

        /// A real package with one of its YAML files mutated never panics the loader, and a
        /// refusal always names a file of the package.
        #[test]
        fn load_package_never_panics_on_mutated_real_yaml(
            pick in any::<prop::sample::Index>(),
            at in any::<prop::sample::Index>(),
            len in 0usize..30,
            insert in "[-a-z0-9:?&*!|>\\[\\]{}'\" \n]{0,10}",
        ) {
            let texts = real_texts();
            let (name, path) = &texts[pick.index(texts.len())];
            let mut package = real(name);
            let file = package.iter_mut().find(|f| &f.path == path).unwrap();
            let chars: Vec<char> = String::from_utf8_lossy(&file.contents).chars().collect();
            let start = at.index(chars.len() + 1).min(chars.len());
            let end = (start + len).min(chars.len());
            let mutated: String = chars[..start]
                .iter()
                .copied()
                .chain(insert.chars())
                .chain(chars[end..].iter().copied())
                .collect();
            file.contents = mutated.into_bytes();
            if let Err(err) = load_package(&package) {
                prop_assert!(package.iter().any(|f| f.path == err.file()), "{}", err);
            }
        }
    }
}
