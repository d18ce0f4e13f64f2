//! What a loaded package is: its manual, its execution profile with graphs, runners,
//! sources and the harness, its fixtures, and the JavaScript modules its runners name.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::adapters::ExternalAdapter;
use super::push_module;

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
    /// One of [`INPUT_TYPES`](super::INPUT_TYPES).
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
    /// One of [`SOURCE_TYPES`](super::SOURCE_TYPES).
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
    /// The manifest of an `external-adapter` source, inline or as a path.
    pub(crate) external_adapter: Option<ExternalAdapter>,
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
    pub(super) skill_line: usize,
}

impl ExecutionProfile {
    /// The profile of a package without X.yaml: no runner, no catalog, no harness.
    pub(crate) fn absent() -> Self {
        Self {
            skill: None,
            version: None,
            catalog: None,
            credentials: Vec::new(),
            input_definitions: Vec::new(),
            runners: Vec::new(),
            harness: None,
            json: Value::Null,
            skill_line: 1,
        }
    }
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
    /// The wall in seconds: the declared one, else [`JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS`](super::JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS).
    pub timeout_seconds: u64,
}

/// A loaded, checked Runx package.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    pub(super) manual: SkillManual,
    pub(super) profile: ExecutionProfile,
    pub(super) fixtures: Vec<Fixture>,
    pub(super) tools: Vec<super::PackageTool>,
}

impl Package {
    /// The local tools the package carries (`tools/<namespace>/<tool>/manifest.json`), in
    /// path order.
    pub fn tools(&self) -> &[super::PackageTool] {
        &self.tools
    }

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

    /// Runx's refusal of a package whose X.yaml names no runner a run without a runner name
    /// would get (no runner, or several and none `default: true`): its validator loads such a
    /// package, and `runx skill inspect` refuses it when it resolves the default runner's
    /// credentials. `None` when there is such a runner, or no X.yaml at all.
    pub fn runner_selection_refusal(&self) -> Option<&'static str> {
        let has_profile = !self.profile.json.is_null();
        (has_profile && self.default_runner().is_none())
            .then_some("skill manifest has no default runner")
    }

    /// Runx's `semantic_report` of the package: what its catalog promises against what its
    /// default runner's execution closure reaches, and which journey proofs its harness holds
    /// (`runx skill inspect`'s `CatalogSemanticReport`; see `catalog.rs`).
    pub fn semantic_report(&self) -> Value {
        super::catalog::semantic_report(self.name(), &self.profile, &self.fixtures)
    }

    /// The inline harness cases.
    pub fn harness_cases(&self) -> &[HarnessCase] {
        self.profile
            .harness
            .as_ref()
            .map_or(&[], |harness| harness.cases.as_slice())
    }

    /// Every packet schema id X.yaml declares (`artifacts.packet`, `artifacts.packets`, an
    /// input's `packet`, on runners and graph steps), sorted and unique. The harness replay
    /// reads the packet schema catalog (`packets/`, `dist/packets/`) only for a package that
    /// declares one; each output packet is checked against its schema when its step succeeds.
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
