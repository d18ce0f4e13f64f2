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

use serde_json::Value;

use super::snapshot::SnapshotFile;
use super::yaml::YamlError;

mod adapters;
mod catalog;
mod check;
mod closure;
mod fanout;
mod fixtures;
mod graph;
mod harness;
mod inputs;
mod inspection;
mod javascript;
mod manual;
mod model;
mod profile;
mod references;
mod tools;
mod yaml_as_runx;
use adapters::{ExternalAdapter, ExternalAdapterManifest};
pub(crate) use fixtures::parse_fixture;
pub use inspection::inspect_package;
use manual::parse_package_manual;
pub(crate) use model::{ExecutionProfile, JsModule, Runner, Source, StepTarget};
pub use model::{InputDef, Package};
use profile::parse_profile;
pub use tools::PackageTool;

/// The operator manual every package has.
pub(crate) const SKILL_FILE: &str = "SKILL.md";

/// The execution profile every package has.
pub const PROFILE_FILE: &str = "X.yaml";

/// The top-level keys of X.yaml (`MANIFEST_FIELDS`, plus `input_definitions`).
pub(crate) const PROFILE_FIELDS: [&str; 10] = [
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
pub(crate) const RUNNER_FIELDS: [&str; 47] = [
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
/// `source:` block. In Runx's order, which its unknown-field refusal lists.
pub(crate) const SOURCE_FIELDS: [&str; 22] = [
    "act",
    "agent",
    "agent_card_url",
    "agent_identity",
    "args",
    "arguments",
    "command",
    "cwd",
    "environment",
    "external_adapter",
    "export",
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
pub(crate) const SOURCE_TYPES: [&str; 9] = [
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
pub(crate) const INPUT_FIELDS: [&str; 7] = [
    "type",
    "required",
    "description",
    "default",
    "artifact",
    "packet",
    "schema",
];

/// The input types; `string` when `type` is left out.
pub(crate) const INPUT_TYPES: [&str; 7] = [
    "array", "boolean", "integer", "json", "number", "object", "string",
];

/// The keys of `catalog`.
pub(crate) const CATALOG_FIELDS: [&str; 12] = [
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
pub(crate) const FIXTURE_FIELDS: [&str; 11] = [
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
pub(crate) const CASE_FIELDS: [&str; 7] = [
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
pub(crate) const CALLER_FIELDS: [&str; 4] = [
    "answers",
    "approvals",
    "http_responses",
    "provider_responses",
];

/// The keys of `expect`.
pub(crate) const EXPECT_FIELDS: [&str; 5] =
    ["status", "receipt", "steps", "output", "step_outputs"];

/// The statuses a case may expect.
pub(crate) const EXPECT_STATUSES: [&str; 5] = [
    "sealed",
    "failure",
    "needs_agent",
    "policy_denied",
    "escalated",
];

/// The keys of `expect.receipt`.
pub(crate) const RECEIPT_FIELDS: [&str; 13] = [
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
pub(crate) const JOURNEY_FIELDS: [&str; 7] = [
    "mode",
    "request",
    "expected_outcome",
    "exercises_runner",
    "prior_evidence",
    "must_not_repeat",
    "confusors",
];

/// Frontmatter keys Runx refuses in a package's SKILL.md: execution metadata lives in X.yaml.
pub(crate) const MANUAL_EXECUTION_FIELDS: [&str; 15] = [
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
pub(crate) const JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS: u64 = 2;

/// The most a JavaScript runner may ask for (`MAX_WALL_MILLISECONDS / 1000`).
pub(crate) const JAVASCRIPT_MAX_TIMEOUT_SECONDS: u64 = 30;

/// The most receipts one fixture may seed.
const MAX_SETUP_RECEIPTS: usize = 32;

/// Why a package was refused. Where Runx refuses the same package (the cases in
/// `shared/data/runx/oracle/package-refusals.txt`), it displays as Runx's own text,
/// `<file>: <Runx's message>`, with MindRune's `at <file>:<line>: <field path>` as a second
/// line; otherwise as `<file>:<line>: <field path>: <message>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackageError {
    /// SKILL.md is not among the files.
    #[error(
        "{file}: required package file is missing\n  a Runx package needs its SKILL.md, the operator manual"
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

    /// The same refusal about the package nested at `prefix`: every path it names is taken
    /// from there, as Runx's `with_path_prefix` does for a nested package's refusal.
    fn with_path_prefix(self, prefix: &str) -> Self {
        let qualify = |path: &str| format!("{prefix}/{path}");
        match self {
            Self::MissingFile { file } => Self::MissingFile {
                file: qualify(&file),
            },
            Self::NotText { file, line } => Self::NotText {
                file: qualify(&file),
                line,
            },
            Self::Yaml(mut err) => {
                err.file = qualify(&err.file);
                Self::Yaml(err)
            }
            Self::Invalid {
                file,
                line,
                field,
                message,
                runx,
            } => Self::Invalid {
                file: qualify(&file),
                line,
                field,
                message,
                runx: runx.map(|runx| qualify(&runx)),
            },
        }
    }

    /// The same refusal opening with Runx's words for it (`runx`, the file's name first), the
    /// Lab's own place and words second.
    fn opening_with_runx(self, runx: String) -> Self {
        match self {
            Self::Invalid {
                file,
                line,
                field,
                message,
                ..
            } => Self::Invalid {
                file,
                line,
                field,
                message,
                runx: Some(runx),
            },
            Self::Yaml(err) => Self::Invalid {
                file: err.file,
                line: err.line,
                field: format!("column {}", err.column),
                message: err.message,
                runx: Some(runx),
            },
            other => other,
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
    check_package_paths(files)?;
    let find = |name: &str| files.iter().find(|file| file.path == name);
    let skill_file = find(SKILL_FILE).ok_or_else(|| PackageError::MissingFile {
        file: SKILL_FILE.to_owned(),
    })?;
    // Runx needs only the manual: a package without X.yaml (a context skill, an operator
    // manual) has no runner, and nothing of a profile to check.
    let profile_file = find(PROFILE_FILE);

    let (manual, _) = parse_package_manual(text(skill_file)?)?;

    let paths: BTreeSet<&str> = files.iter().map(|file| file.path.as_str()).collect();
    let profile = match profile_file {
        Some(file) => parse_profile(text(file)?, &paths)?,
        None => ExecutionProfile::absent(),
    };
    if let Some(skill) = &profile.skill
        && *skill != manual.frontmatter.name
    {
        return Err(PackageError::Invalid {
            file: PROFILE_FILE.to_owned(),
            line: profile.skill_line,
            field: "skill".to_owned(),
            message: format!(
                "is {skill:?} but SKILL.md names the skill {:?}; make them the same",
                manual.frontmatter.name
            ),
            runx: Some(format!(
                "X.yaml.skill: manifest skill {skill:?} does not match SKILL.md name {:?}",
                manual.frontmatter.name
            )),
        });
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
    let catalog_line = profile_file
        .and_then(|file| std::str::from_utf8(&file.contents).ok())
        .and_then(|text| text.lines().position(|line| line.starts_with("catalog:")))
        .map_or(1, |index| index + 1);
    catalog::check_catalog_semantics(&manual.frontmatter.name, &profile, &fixtures, catalog_line)?;
    let contents: BTreeMap<&str, &[u8]> = files
        .iter()
        .map(|file| (file.path.as_str(), file.contents.as_slice()))
        .collect();
    let context_references = references::context_references(&profile)?;
    // Runx reads the runners' adapter manifests with their references, before the fixtures'.
    let mut runner_sources = declared_sources(&profile, &[]);
    read_adapter_manifests(&mut runner_sources, &contents)?;
    let fixture_texts: BTreeMap<&str, &str> = files
        .iter()
        .filter(|file| is_fixture_path(&file.path))
        .filter_map(|file| {
            Some((
                file.path.as_str(),
                std::str::from_utf8(&file.contents).ok()?,
            ))
        })
        .collect();
    let fixture_graphs =
        references::check_fixture_references(&fixtures, &contents, &fixture_texts)?;
    let no_runners = ExecutionProfile::absent();
    let mut fixture_sources = declared_sources(&no_runners, &fixture_graphs);
    read_adapter_manifests(&mut fixture_sources, &contents)?;
    let tools = tools::check_package_tools(&contents)?;
    references::check_context_skill_sources(&context_references, &contents)?;
    let tool_files: BTreeSet<String> = tools
        .iter()
        .flat_map(|tool| std::iter::once(&tool.manifest_path).chain(&tool.source_files))
        .cloned()
        .collect();
    runner_sources.append(&mut fixture_sources);
    check_declared_files(&runner_sources, &contents, tool_files)?;
    references::check_operator_references(&contents)?;
    for prefix in references::nested_package_prefixes(&contents) {
        let inner = format!("{prefix}/");
        let nested: Vec<SnapshotFile> = files
            .iter()
            .filter_map(|file| {
                let path = file.path.strip_prefix(&inner)?;
                Some(SnapshotFile {
                    path: path.to_owned(),
                    ..file.clone()
                })
            })
            .collect();
        load_package(&nested).map_err(|err| err.with_path_prefix(prefix))?;
    }
    Ok(Package {
        manual,
        profile,
        fixtures,
        tools,
    })
}

/// The first line of the refusal of the package made of `files` (path, bytes), or `None` when
/// it loads: what the tests compare with the real Runx's first line.
#[cfg(test)]
pub(super) fn first_refusal_line(files: &[(&str, &[u8])]) -> Option<String> {
    let files: Vec<SnapshotFile> = files
        .iter()
        .map(|(path, contents)| SnapshotFile {
            path: (*path).to_owned(),
            mode: 0o100_644,
            contents: contents.to_vec(),
        })
        .collect();
    let err = load_package(&files).err()?;
    Some(
        err.to_string()
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned(),
    )
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

/// Runx's `text_file`: a file Runx reads as text (a tool manifest or script, a context
/// skill's manual, a graph file, an operator reference) is UTF-8, else the package is refused
/// in Runx's words, with the line of the first bad byte second.
fn text_file<'a>(path: &str, contents: &'a [u8]) -> Result<&'a str, PackageError> {
    std::str::from_utf8(contents).map_err(|error| {
        let valid = contents.get(..error.valid_up_to()).unwrap_or_default();
        PackageError::Invalid {
            file: path.to_owned(),
            line: 1 + valid.iter().filter(|byte| **byte == b'\n').count(),
            field: "(file)".to_owned(),
            message: "the file is not UTF-8 text; save it as UTF-8".to_owned(),
            runx: Some(format!("{path}: parser input must be UTF-8: {error}")),
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

/// The command and arguments of the process a source starts: a `cli-tool`'s, or an `mcp`
/// source's `server` (Runx's `collect_process_execution_files`); `json` is the source as
/// written.
fn process_values<'s>(source: &'s Source, json: &'s Value) -> Vec<&'s str> {
    match source.source_type.as_str() {
        "cli-tool" => source
            .command
            .iter()
            .chain(&source.args)
            .map(String::as_str)
            .collect(),
        "mcp" => {
            let server = json.get("server");
            let command = server
                .and_then(|s| s.get("command"))
                .and_then(Value::as_str);
            let args = server
                .and_then(|s| s.get("args"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str);
            command.into_iter().chain(args).collect()
        }
        _ => Vec::new(),
    }
}

/// The sources that declare files, in Runx's order of reading them: each runner of X.yaml and
/// the inline steps of its graph, then the inline steps of each graph file a `kind: graph`
/// fixture runs.
fn declared_sources<'p>(
    profile: &'p ExecutionProfile,
    fixture_graphs: &'p [references::FixtureGraph],
) -> Vec<DeclaredSource<'p>> {
    let mut sources = Vec::new();
    for runner in &profile.runners {
        let field = format!("runners.{}", runner.name);
        let runx_field = format!("{PROFILE_FILE}.runners.{}.source", runner.name);
        let steps = runner.source.graph.iter().flat_map(|graph| &graph.steps);
        sources.push(DeclaredSource {
            file: PROFILE_FILE,
            folder: "",
            line: runner.line,
            field: field.clone(),
            runx_field: runx_field.clone(),
            source: &runner.source,
            json: &runner.json,
            adapter_files: Vec::new(),
        });
        sources.extend(steps.enumerate().filter_map(|(index, step)| {
            DeclaredSource::step(
                PROFILE_FILE,
                "",
                &format!("{field}.graph"),
                &format!("{runx_field}.graph.steps[{index}].run"),
                step,
            )
        }));
    }
    for graph in fixture_graphs {
        sources.extend(
            graph
                .graph
                .steps
                .iter()
                .enumerate()
                .filter_map(|(index, step)| {
                    DeclaredSource::step(
                        &graph.path,
                        graph.folder(),
                        "graph",
                        &format!("{}.target.graph.steps[{index}].run", graph.fixture),
                        step,
                    )
                }),
        );
    }
    sources
}

/// Runx's `collect_external_adapter_files`: an `external-adapter` source's manifest file must
/// be a file of the package (read from the source's folder) holding a valid manifest; the
/// manifest (a file, or inline) names the process it starts, whose scripts are execution files
/// read from the manifest's folder. Records them in each source's `adapter_files`.
fn read_adapter_manifests(
    sources: &mut [DeclaredSource<'_>],
    contents: &BTreeMap<&str, &[u8]>,
) -> Result<(), PackageError> {
    for declared in sources {
        let (manifest, folder) = match &declared.source.external_adapter {
            None => continue,
            Some(ExternalAdapter::Inline(manifest)) => {
                (manifest.as_ref().clone(), declared.folder.to_owned())
            }
            Some(ExternalAdapter::Path(path)) => {
                let manifest_path = in_folder(declared.folder, path);
                let Some(bytes) = contents.get(manifest_path.as_str()) else {
                    return Err(PackageError::Invalid {
                        file: declared.file.to_owned(),
                        line: declared.line,
                        field: format!("{}.external_adapter.manifest_path", declared.field),
                        message: format!(
                            "names {manifest_path}, which is not in the package; add the \
                             manifest or fix the path"
                        ),
                        runx: Some(format!(
                            "{}: external-adapter manifest {manifest_path:?} is missing",
                            declared.runx_field
                        )),
                    });
                };
                let manifest = ExternalAdapterManifest::from_file(bytes).map_err(|runx| {
                    PackageError::Invalid {
                        file: manifest_path.clone(),
                        line: 1,
                        field: "(manifest)".to_owned(),
                        message: "is not a runx.external_adapter.manifest.v1 manifest; fix what \
                                  Runx names"
                            .to_owned(),
                        runx: Some(format!("{manifest_path}: {runx}")),
                    }
                })?;
                let folder = manifest_path
                    .rsplit_once('/')
                    .map_or("", |(folder, _)| folder)
                    .to_owned();
                declared.adapter_files.push(manifest_path);
                (manifest, folder)
            }
        };
        declared.adapter_files.extend(
            manifest
                .process_values()
                .filter_map(process_script_path)
                .map(|path| in_folder(&folder, path)),
        );
    }
    Ok(())
}

/// `path` read from `folder` of the package.
fn in_folder(folder: &str, path: &str) -> String {
    if folder.is_empty() {
        path.to_owned()
    } else {
        format!("{folder}/{path}")
    }
}

/// Runx's load-time checks of the files X.yaml declares: every script a `cli-tool`, an `mcp`
/// server or an external adapter runs (its execution sidecars) must be in the package, then
/// every JavaScript module passes Runx's static module checks ([`javascript`]), or the package
/// is invalid, in Runx's words. `sources` are [`declared_sources`] with their adapter files
/// read; `tool_files` are the files the package's tools run (their manifests and sources),
/// which are execution files too.
fn check_declared_files(
    sources: &[DeclaredSource<'_>],
    contents: &BTreeMap<&str, &[u8]>,
    tool_files: BTreeSet<String>,
) -> Result<(), PackageError> {
    let paths: BTreeSet<&str> = contents.keys().copied().collect();
    let scripts = |declared: &DeclaredSource<'_>| -> Vec<String> {
        process_values(declared.source, declared.json)
            .into_iter()
            .filter_map(process_script_path)
            .map(|path| in_folder(declared.folder, path))
            .chain(declared.adapter_files.iter().cloned())
            .collect()
    };
    for declared in sources {
        if let Some(path) = scripts(declared)
            .into_iter()
            .find(|path| !paths.contains(path.as_str()))
        {
            return Err(PackageError::Invalid {
                file: declared.file.to_owned(),
                line: declared.line,
                field: declared.field.clone(),
                message: format!(
                    "runs {path}, which is not in the package; add the file or change the command"
                ),
                runx: Some(format!(
                    "{path}: declared execution sidecar is missing from the skill package"
                )),
            });
        }
    }
    // Runx's module checks: each declared module (breadth first, in path order) and its
    // imports, then every module nothing reaches.
    let mut roots = BTreeSet::new();
    let mut declared_at: BTreeMap<String, (String, usize, String)> = BTreeMap::new();
    let mut execution_files = tool_files;
    for declared in sources {
        if let Some(module) = &declared.source.module {
            let module = in_folder(declared.folder, module);
            roots.insert(module.clone());
            declared_at.entry(module).or_insert_with(|| {
                (
                    declared.file.to_owned(),
                    declared.line,
                    format!("{}.module", declared.field),
                )
            });
        }
        execution_files.extend(scripts(declared));
    }
    javascript::validate_modules(contents, &roots, &execution_files).map_err(|refusal| {
        if refusal.message == "declared JavaScript module is missing" {
            let (file, line, field) = declared_at.get(&refusal.path).cloned().unwrap_or((
                PROFILE_FILE.to_owned(),
                1,
                "module".to_owned(),
            ));
            return PackageError::Invalid {
                file,
                line,
                field,
                message: format!(
                    "names {}, which is not in the package; add the module or fix the path",
                    refusal.path
                ),
                runx: Some(format!("{}: {}", refusal.path, refusal.message)),
            };
        }
        let at = declared_at.get(&refusal.path).cloned();
        refusal.into_error(at)
    })?;
    Ok(())
}

/// A source that declares files: a runner's, or an inline step's of a runner's graph or of a
/// graph file a fixture runs.
struct DeclaredSource<'p> {
    /// The file it is written in (X.yaml, or the graph file).
    file: &'p str,
    /// The folder its paths are read from (the graph file's; the root for X.yaml).
    folder: &'p str,
    line: usize,
    field: String,
    source: &'p Source,
    /// Runx's name of the source in its reference refusals
    /// (`X.yaml.runners.main.source.graph.steps[0].run`).
    runx_field: String,
    /// The source as written.
    json: &'p Value,
    /// The files its external adapter's manifest names: the manifest file, then the scripts
    /// its process runs ([`read_adapter_manifests`]).
    adapter_files: Vec<String>,
}

impl<'p> DeclaredSource<'p> {
    /// An inline step's source of the graph at `graph_field`.
    fn step(
        file: &'p str,
        folder: &'p str,
        graph_field: &str,
        runx_field: &str,
        step: &'p model::GraphStep,
    ) -> Option<Self> {
        match &step.target {
            StepTarget::Run(source) => Some(Self {
                file,
                folder,
                line: step.line,
                field: format!("{graph_field}.steps.{}.run", step.id),
                runx_field: runx_field.to_owned(),
                source: source.as_ref(),
                json: step.json.get("run").unwrap_or(&Value::Null),
                adapter_files: Vec::new(),
            }),
            _ => None,
        }
    }
}

/// Runx's first load-time check: every file's path is a relative POSIX path without empty,
/// `.` or `..` segments (checked in path order).
fn check_package_paths(files: &[SnapshotFile]) -> Result<(), PackageError> {
    let mut paths: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
    paths.sort_unstable();
    for path in paths {
        if let Some(problem) = javascript::package_path_problem(path) {
            return Err(PackageError::Invalid {
                file: path.to_owned(),
                line: 1,
                field: "(file name)".to_owned(),
                message: "rename the file: package paths separate folders with '/' and have no \
                          backslash, empty, '.' or '..' segment"
                    .to_owned(),
                runx: Some(format!("{path}: {problem}")),
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::manual::parse_skill_md;
    use super::*;

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
    /// The harness proofs Runx wants of a public package (a standalone journey with two
    /// confusors and a composed one, both sealed), for the small test profiles.
    const OPERATOR_PROOF: &str = "\
name: operator-proof
kind: skill
target: ..
operator_journeys:
  - mode: standalone
    request: Do it.
    expected_outcome: Done.
    confusors: [other-a, other-b]
  - mode: composed
    request: Do it again.
    expected_outcome: Done once.
    prior_evidence: [the first run]
    must_not_repeat: [the first run]
expect:
  status: sealed
";

    fn files(pairs: &[(&str, &str)]) -> Vec<SnapshotFile> {
        let mut out = bare_files(pairs);
        for (path, text) in pairs {
            if *path != "X.yaml" {
                continue;
            }
            if text.contains("catalog:") && !text.contains("visibility: internal") {
                out.extend(bare_files(&[(
                    "fixtures/zz-operator-proof.yaml",
                    OPERATOR_PROOF,
                )]));
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
    fn a_package_needs_its_manual_and_loads_without_a_profile_as_runx_does() {
        let err = load_package(&files(&[("X.yaml", PROFILE)])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "SKILL.md: required package file is missing\n  a Runx package needs its SKILL.md, the operator manual"
        );
        // Runx inspects a manual alone as `ok`, with no runner.
        let package = load_package(&files(&[("SKILL.md", MANUAL)])).unwrap();
        assert!(package.profile().runners.is_empty());
        assert!(package.default_runner().is_none());
    }

    #[test]
    fn a_nested_package_is_loaded_whole_and_its_refusal_names_its_folder() {
        let mut nested = files(&[("SKILL.md", MANUAL), ("X.yaml", PROFILE)]);
        nested.extend(bare_files(&[
            ("context/helper/SKILL.md", MANUAL),
            ("context/helper/references/notes.md", "notes\n"),
        ]));
        load_package(&nested).unwrap();
        nested.extend(bare_files(&[(
            "context/helper/X.yaml",
            "skill: other\nrunners:\n  main:\n    type: agent\n",
        )]));
        let err = load_package(&nested).unwrap_err().to_string();
        assert_eq!(
            err.lines().next(),
            Some(
                "context/helper/X.yaml.skill: manifest skill \"other\" does not match SKILL.md name \"demo\""
            ),
            "{err}"
        );
        assert!(err.contains("at context/helper/X.yaml:1: skill"), "{err}");
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
        // The real runx-cli 0.8.2's first lines.
        let err = with("---\ndescription: no name\n---\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "SKILL.md: name is required.\n  at SKILL.md:1: name: is required"
        );
        let err = with("---\nname: \"\"\n---\n").unwrap_err();
        assert!(
            err.to_string().starts_with("SKILL.md: name is required.\n"),
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
            err.to_string().starts_with(
                "SKILL.md.inputs: execution metadata belongs in X.yaml; SKILL.md is the operator \
                 manual\n  at SKILL.md:3: inputs: execution metadata belongs in X.yaml"
            ),
            "{err}"
        );
        let manual = "---\nname: demo\nrunx:\n  category: x\n  post_run:\n    reflect: auto\n---\n";
        let err = load_package(&files(&[("SKILL.md", manual), ("X.yaml", PROFILE)])).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "SKILL.md.runx.post_run: execution metadata belongs in X.yaml; SKILL.md.runx may \
                 contain only catalog category and tags\n  at SKILL.md:5: runx.post_run: "
            ),
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
        let mut bare = bare_files(&[("SKILL.md", MANUAL), ("X.yaml", PROFILE)]);
        bare.extend(bare_files(&[(
            "fixtures/zz-operator-proof.yaml",
            OPERATOR_PROOF,
        )]));
        let err = load_package(&bare).unwrap_err();
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
        // Runx's words first (checked with runx-cli 0.8.2), the Lab's place and advice second.
        assert!(
            err.to_string().starts_with(&format!(
                "X.yaml: steps.2.instructions is not supported; put agent operating instructions \
                 in the owning SKILL.md\n  at X.yaml:{line}: runners.build.graph.steps[2].instructions: \
                 model instructions belong in SKILL.md, not X.yaml"
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

    /// A graph runner's own refusals, first line as runx-cli 0.8.2 at 3c8315b9 printed it (by
    /// hand, `runx skill inspect`, after `skill package validation failed: `).
    #[test]
    fn graph_runner_refusals_open_with_runx_text() {
        for (from, to, runx) in [
            (
                "      result_from: [finish]\n",
                "",
                "X.yaml: runners.build.graph.result_from must name at least one intentional \
                 public result producer",
            ),
            (
                "    type: graph\n",
                "    type: graph\n    outputs:\n      note: string\n",
                "X.yaml: runners.build.outputs is ambiguous for a graph source; declare outputs \
                 on the graph's terminal output-producing step",
            ),
            (
                "    type: graph\n",
                "    type: graph\n    environment:\n      required: [FOO]\n",
                "X.yaml: runners.build.environment is ambiguous for a graph source; declare \
                 environment requirements on the executable run step",
            ),
            (
                "    type: graph\n",
                "    type: graph\n    artifacts:\n      wrap_as: x\n",
                "X.yaml: runners.build.artifacts is ambiguous for a graph source; declare the \
                 packet on the graph's terminal output-producing step",
            ),
        ] {
            let err = refused(&edit(from, to)).to_string();
            assert_eq!(err.lines().next(), Some(runx), "{err}");
        }
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
        // Runx reads only field, equals and not_equals: another key is ignored, and a `when`
        // without a comparison is refused in its words (runx-cli 0.8.2).
        let other = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          when: {field: mode, matches: a}\n",
        );
        assert!(
            refused(&other)
                .to_string()
                .starts_with("X.yaml: steps.0.when must declare equals or not_equals.\n"),
            "{}",
            refused(&other)
        );
        let extra = edit(
            "          tool: fs.read\n",
            "          tool: fs.read\n          when: {field: mode, equals: a, matches: b}\n",
        );
        assert!(load(&extra).is_ok());
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
        // The real runx-cli 0.8.2's first line.
        assert_eq!(
            err.to_string().lines().next(),
            Some("X.yaml: catalog.audience must be public, builder, operator, or system.")
        );
        assert!(
            err.to_string()
                .contains("\n  at X.yaml:5: catalog.audience: is"),
            "{err}"
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
        assert_eq!(
            refused(&profile).to_string().lines().next(),
            Some(
                "X.yaml: catalog capability metadata must declare execution, completion, \
                 requires_adapter, and approval together."
            )
        );
        let profile = edit("  role: canonical\n", "  role: canonical\n  owner: me\n");
        assert_eq!(refused(&profile).field(), Some("catalog.owner"));
    }

    /// A runner graph's own fields and its steps' fields: each first line is the real
    /// runx-cli 0.8.2's (`runx skill inspect`), which names the graph's fields bare, a step by
    /// its index and an inline step's source as `steps.N.run is not a valid inline source: …`.
    #[test]
    fn graph_and_step_refusals_are_worded_as_runx() {
        let graph = |name: &str, step: &str| {
            format!(
                "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    graph:\n\
                 {name}      result_from: [a]\n      steps:\n{step}"
            )
        };
        let named = |step: &str| graph("      name: demo\n", step);
        let run = |fields: &str| {
            named(&format!(
                "        - id: a\n          run:\n            type: cli-tool\n            command: \
                 node\n{fields}"
            ))
        };
        let inline = "X.yaml: steps.0.run is not a valid inline source: ";
        let cases: Vec<(String, String)> = vec![
            (
                graph("", "        - id: a\n          tool: fs.read\n"),
                "X.yaml: name is required.".into(),
            ),
            (
                graph(
                    "      name: 3\n",
                    "        - id: a\n          tool: fs.read\n",
                ),
                "X.yaml: name must be a string.".into(),
            ),
            (
                named("        - 3\n"),
                "X.yaml: steps.0 must be an object.".into(),
            ),
            (
                named("        - tool: fs.read\n"),
                "X.yaml: steps.0.id is required.".into(),
            ),
            (
                named("        - id: 3\n          tool: fs.read\n"),
                "X.yaml: steps.0.id must be a string.".into(),
            ),
            (
                named("        - id: a\n          tool: 3\n"),
                "X.yaml: steps.0.tool must be a string.".into(),
            ),
            (
                named("        - id: a\n          tool: fs.read\n          context: [x]\n"),
                "X.yaml: steps.0.context must be an object.".into(),
            ),
            (
                named("        - id: a\n          tool: fs.read\n          scopes: x\n"),
                "X.yaml: steps.0.scopes must be an array of strings.".into(),
            ),
            (
                named("        - id: a\n          tool: fs.read\n          mutation: yes\n"),
                "X.yaml: steps.0.mutation must be a boolean.".into(),
            ),
            (
                named("        - id: a\n          run:\n            command: node\n"),
                format!("{inline}source.type is required."),
            ),
            (
                named(
                    "        - id: a\n          run:\n            type: cli-tool\n            command: 3\n",
                ),
                format!("{inline}source.command must be a string."),
            ),
            (
                run("            args: x\n"),
                format!("{inline}source.args must be an array of strings."),
            ),
            (
                run("            timeout_seconds: x\n"),
                format!("{inline}source.timeout_seconds must be a finite number."),
            ),
            (
                run("            environment: [x]\n"),
                format!("{inline}source.environment must be an object."),
            ),
            (
                run("            zeta: 1\n"),
                format!(
                    "{inline}source.zeta is not supported; allowed fields: {}.",
                    SOURCE_FIELDS.join(", ")
                ),
            ),
        ];
        for (profile, expected) in cases {
            let files = bare_files(&[("SKILL.md", MANUAL), ("X.yaml", &profile)]);
            let err = load_package(&files).unwrap_err().to_string();
            assert_eq!(err.lines().next(), Some(expected.as_str()), "{profile}");
        }
    }

    /// X.yaml's refusals: each first line is the real runx-cli 0.8.2's for the same package
    /// (`runx skill inspect`), the second MindRune's place and hint.
    #[test]
    fn profile_refusals_are_worded_as_runx() {
        const R: &str = "skill: demo\nrunners:\n  main:\n    default: true\n    type: agent\n";
        const S: &str = "skill: demo\nrunners:\n  main:\n    default: true\n";
        const I: &str = "skill: demo\nrunners:\n  main:\n    default: true\n    type: agent\n    inputs:\n      topic:\n";
        const CAT: &str = "catalog:\n  kind: skill\n  audience: public\n  role: canonical\n";
        let cases: Vec<(String, &str)> = vec![
            (
                "- a\n".into(),
                "X.yaml: runner_manifest: Runner manifest YAML must parse to an object.",
            ),
            ("skill: demo\n".into(), "X.yaml: runners is required."),
            (
                "runners: [a]\n".into(),
                "X.yaml: runners must be an object.",
            ),
            (
                "runners:\n  main: 3\n".into(),
                "X.yaml: runners.main must be an object.",
            ),
            (
                "skill: 3\nrunners:\n  main:\n    type: agent\n".into(),
                "X.yaml: skill must be a string.",
            ),
            (
                "skill: ' '\nrunners:\n  main:\n    type: agent\n".into(),
                "X.yaml.skill: manifest skill \" \" does not match SKILL.md name \"demo\"",
            ),
            (
                format!("version: 3\n{R}"),
                "X.yaml: version must be a string.",
            ),
            (format!("runx: [a]\n{R}"), "X.yaml: runx must be an object."),
            (
                format!("catalog: [a]\n{R}"),
                "X.yaml: catalog must be an object.",
            ),
            (
                format!("catalog:\n  audience: public\n  role: canonical\n{R}"),
                "X.yaml: catalog.kind is required.",
            ),
            (
                format!("{}{R}", CAT.replace("kind: skill", "kind: tool")),
                "X.yaml: catalog.kind must be skill or graph.",
            ),
            (
                format!("{}{R}", CAT.replace("kind: skill", "kind: 3")),
                "X.yaml: catalog.kind must be a string.",
            ),
            (
                format!(
                    "{}  part_of: [x]\n{R}",
                    CAT.replace("canonical", "graph-stage")
                ),
                "X.yaml: catalog.role cannot be graph-stage when visibility is public.",
            ),
            (
                format!("{}{R}", CAT.replace("canonical", "branded")),
                "X.yaml: catalog.canonical_skill is required when catalog.role is branded.",
            ),
            (
                format!(
                    "{}  visibility: internal\n{R}",
                    CAT.replace("canonical", "graph-stage")
                ),
                "X.yaml: catalog.part_of is required when catalog.role is graph-stage.",
            ),
            (
                format!("{CAT}  zeta: 1\n{R}"),
                "X.yaml: catalog.zeta is not supported; allowed fields: approval, audience, canonical_skill, completion, execution, kind, part_of, provider, requires_adapter, role, runtime_path, visibility.",
            ),
            (
                format!("{CAT}  part_of: x\n{R}"),
                "X.yaml: catalog.part_of must be an array of strings.",
            ),
            (
                format!(
                    "{CAT}  execution: plan\n  completion: plan\n  approval: none\n  requires_adapter: 'yes'\n{R}"
                ),
                "X.yaml: catalog.requires_adapter must be a boolean.",
            ),
            (
                format!("credentials: [a]\n{R}"),
                "X.yaml: credentials must be an object.",
            ),
            (
                format!("credentials:\n  gh: 3\n{R}"),
                "X.yaml: credentials.gh must be an object.",
            ),
            (
                format!("{R}    credential: gh\n"),
                "X.yaml: runners.main.credential references undeclared credential gh",
            ),
            (
                format!("{R}    credential: ' '\n"),
                "X.yaml: runners.main.credential must not be empty.",
            ),
            (
                format!("input_definitions: [a]\n{R}"),
                "X.yaml: input_definitions must be an object.",
            ),
            (
                format!("input_definitions:\n  topic: 3\n{R}"),
                "X.yaml: input_definitions.topic must be an object.",
            ),
            (
                format!("{R}  other:\n    default: true\n    type: agent\n"),
                "X.yaml.runners: runner selection is ambiguous: declare at most one default runner",
            ),
            (
                "skill: demo\nrunners:\n  main:\n    default: 'yes'\n    type: agent\n".into(),
                "X.yaml: runners.main.default must be a boolean.",
            ),
            (
                format!("{R}    inputs: [a]\n"),
                "X.yaml: runners.main.inputs must be an object.",
            ),
            (
                format!("{R}    scopes: a.read\n"),
                "X.yaml: runners.main.scopes must be an array of strings.",
            ),
            (
                format!("{R}    scopes: [a.read, ' ']\n"),
                "X.yaml: runners.main.scopes must contain only non-empty scope strings",
            ),
            (
                format!("{R}    scopes: [3]\n"),
                "X.yaml: runners.main.scopes must be an array of strings.",
            ),
            (
                format!("{R}    mutating: 'yes'\n"),
                "X.yaml: runners.main.mutating must be a boolean.",
            ),
            (
                format!("{R}    runx:\n      allowed_tools: x\n"),
                "X.yaml: runners.main.runx.allowed_tools must be an array of strings.",
            ),
            (
                format!("{R}    runx: 3\n"),
                "X.yaml: runners.main.runx must be an object.",
            ),
            (
                format!("{R}    source: [a]\n"),
                "X.yaml: runners.main.source must be an object.",
            ),
            (
                format!("{R}    examples: {{a: 1}}\n"),
                "X.yaml: runners.main.examples must be an array.",
            ),
            (
                format!(
                    "{R}    inputs:\n      topic:\n        type: string\n    examples:\n      - other: x\n"
                ),
                "X.yaml: runners.main.examples[0] does not match the runner input contract: Additional properties are not allowed ('other' was unexpected)",
            ),
            (
                format!(
                    "{R}    inputs:\n      topic:\n        type: string\n        required: true\n    examples:\n      - {{}}\n"
                ),
                "X.yaml: runners.main.examples[0] does not match the runner input contract: \"topic\" is a required property",
            ),
            (
                format!("{R}    examples:\n      - 3\n"),
                "X.yaml: runners.main.examples[0] must be an object.",
            ),
            (
                format!("{R}    retry:\n      max_attempts: 0\n"),
                "X.yaml: runners.main.retry.max_attempts must be a positive integer.",
            ),
            (
                format!("{R}    retry:\n      max_attempts: '2'\n"),
                "X.yaml: runners.main.retry.max_attempts must be a finite number.",
            ),
            (
                format!("{R}    retry: 3\n"),
                "X.yaml: runners.main.retry must be an object.",
            ),
            (
                format!("{R}    idempotency:\n      key: ' '\n"),
                "X.yaml: runners.main.idempotency.key must not be empty.",
            ),
            (
                format!("{R}    idempotency: 3\n"),
                "X.yaml: runners.main.idempotency must be an object.",
            ),
            (
                format!("{R}    artifacts: 3\n"),
                "X.yaml: runners.main.artifacts must be an object.",
            ),
            (
                format!("{S}    scopes: [a]\n"),
                "X.yaml: source.type is required.",
            ),
            (
                format!("{S}    type: foo\n"),
                "X.yaml: source.type foo is not a supported source type.",
            ),
            (
                format!("{S}    type: 3\n"),
                "X.yaml: source.type must be a string.",
            ),
            (
                format!("{S}    type: http\n"),
                "X.yaml: source.type http was removed; compose http.read, http.query, or http.execute in a graph.",
            ),
            (
                format!("{S}    type: cli-tool\n"),
                "X.yaml: source.command is required.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: 3\n"),
                "X.yaml: source.command must be a string.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    args: hi\n"),
                "X.yaml: source.args must be an array of strings.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    timeout_seconds: soon\n"),
                "X.yaml: source.timeout_seconds must be a finite number.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    timeout_seconds: -1\n"),
                "X.yaml: source.timeout_seconds must be a positive integer.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    input_mode: pipe\n"),
                "X.yaml: source.input_mode must be args, stdin, or none.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    cwd: 3\n"),
                "X.yaml: source.cwd must be a string.",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    module: a.mjs\n"),
                "X.yaml: source.module and source.export are only valid for javascript sources.",
            ),
            (
                format!("{S}    source:\n      type: cli-tool\n"),
                "X.yaml: source.command is required.",
            ),
            (
                format!("{S}    source:\n      command: echo\n"),
                "X.yaml: source.type is required.",
            ),
            (
                format!("{S}    source:\n      type: agent\n      zeta: 1\n"),
                "X.yaml: runners.main.source.zeta is not supported; allowed fields: act, agent, agent_card_url, agent_identity, args, arguments, command, cwd, environment, external_adapter, export, graph, input_mode, module, outputs, pages, server, task, thread_outbox_provider, timeout_seconds, tool, type.",
            ),
            (
                format!("{S}    type: mcp\n    tool: t\n"),
                "X.yaml: source.server is required.",
            ),
            (
                format!("{S}    type: mcp\n    server:\n      command: x\n"),
                "X.yaml: source.tool is required.",
            ),
            (
                format!("{S}    type: a2a\n"),
                "X.yaml: source.agent_card_url is required.",
            ),
            (
                format!("{S}    type: javascript\n"),
                "X.yaml: source.module is required.",
            ),
            (
                format!("{S}    type: javascript\n    module: a.mjs\n    export: 1abc\n"),
                "X.yaml: source.export must be a JavaScript identifier.",
            ),
            (
                format!("{S}    type: graph\n"),
                "X.yaml: source.graph is required.",
            ),
            (
                format!(
                    "{S}    type: cli-tool\n    command: echo\n    environment:\n      required: ['a-b']\n"
                ),
                "X.yaml: source.environment.required entry \"a-b\" must be a portable environment variable name",
            ),
            (
                format!(
                    "{S}    type: cli-tool\n    command: echo\n    environment:\n      required: [RUNX_A]\n"
                ),
                "X.yaml: source.environment.required cannot request runtime-reserved environment variable RUNX_A",
            ),
            (
                format!(
                    "{S}    type: cli-tool\n    command: echo\n    environment:\n      required: [A]\n      optional: [A]\n"
                ),
                "X.yaml: source.environment.optional repeats environment variable \"A\"",
            ),
            (
                format!("{S}    type: cli-tool\n    command: echo\n    environment: [A]\n"),
                "X.yaml: source.environment must be an object.",
            ),
            (
                format!("{S}    type: agent\n    pages: {{}}\n"),
                "X.yaml: source.pages is only valid for deterministic javascript sources.",
            ),
            (
                format!("{S}    type: agent\n    outputs: [a]\n"),
                "X.yaml: source.outputs must be an object.",
            ),
            (
                format!("{R}    inputs:\n      topic: 3\n"),
                "X.yaml: runners.main.inputs.topic must be an object.",
            ),
            (
                format!("{I}        type: 3\n"),
                "X.yaml: runners.main.inputs.topic.type must be a string.",
            ),
            (
                format!("{I}        type: string\n        required: 'yes'\n"),
                "X.yaml: runners.main.inputs.topic.required must be a boolean.",
            ),
            (
                format!("{I}        type: string\n        description: 3\n"),
                "X.yaml: runners.main.inputs.topic.description must be a string.",
            ),
            (
                format!("{I}        type: string\n        zeta: 1\n"),
                "X.yaml: runners.main.inputs.topic.zeta is not supported; allowed fields: type, required, description, default, artifact, packet, schema.",
            ),
            (
                format!("{I}        type: number\n        default: abc\n"),
                "X.yaml: runners.main.inputs.topic.default must match declared type number",
            ),
            (
                format!("{I}        definition: nope\n"),
                "X.yaml: runners.main.inputs.topic.definition references unknown input_definitions.nope",
            ),
            (
                format!("{I}        type: string\n        packet: a.b.v1\n"),
                "X.yaml: runners.main.inputs.topic.packet requires runners.main.inputs.topic.type to be json",
            ),
            (
                format!("{I}        type: json\n        packet: a.b.v1\n        default: {{}}\n"),
                "X.yaml: runners.main.inputs.topic.packet cannot declare a default packet value",
            ),
            (
                format!("{I}        type: json\n        schema: [a]\n"),
                "X.yaml: runners.main.inputs.topic.schema must be an object.",
            ),
        ];
        for (profile, first) in cases {
            let err = refused(&profile).to_string();
            assert_eq!(err.lines().next(), Some(first), "{profile}\n{err}");
            assert!(
                err.lines()
                    .nth(1)
                    .is_some_and(|line| line.starts_with("  at X.yaml:")),
                "{err}"
            );
        }
        // Runx reads a runner's own `allowed_tools` without checking it.
        load(&format!("{R}    allowed_tools: x\n")).unwrap();
    }

    /// SKILL.md's refusals: each first line is the real runx-cli 0.8.2's for the same package.
    #[test]
    fn manual_refusals_are_worded_as_runx() {
        const FM: &str = "---\nname: demo\ndescription: A demo skill.\n";
        let profile = "skill: demo\nrunners:\n  main:\n    default: true\n    type: agent\n";
        for (manual, first) in [
            (
                "---\n- a\n---\n# Demo\n".to_owned(),
                "SKILL.md: skill_frontmatter: Skill frontmatter must parse to an object.",
            ),
            (
                "---\nname: 3\ndescription: d\n---\n# Demo\n".to_owned(),
                "SKILL.md: name must be a string.",
            ),
            (
                "---\nname: ''\ndescription: d\n---\n# Demo\n".to_owned(),
                "SKILL.md: name is required.",
            ),
            (
                "---\nname: ' '\ndescription: d\n---\n# Demo\n".to_owned(),
                "X.yaml.skill: manifest skill \"demo\" does not match SKILL.md name \" \"",
            ),
            (
                format!("{FM}runx: [a]\n---\n# Demo\n"),
                "SKILL.md: runx must be an object when present.",
            ),
            (
                format!("{FM}runx:\n  mutating: 'yes'\n---\n# Demo\n"),
                "SKILL.md.runx.mutating: execution metadata belongs in X.yaml; SKILL.md.runx may contain only catalog category and tags",
            ),
            (
                format!("{FM}runx:\n  retry:\n    max_attempts: 0\n---\n# Demo\n"),
                "SKILL.md.runx.retry: execution metadata belongs in X.yaml; SKILL.md.runx may contain only catalog category and tags",
            ),
            (
                format!("{FM}mutating: 'yes'\n---\n# Demo\n"),
                "SKILL.md.mutating: execution metadata belongs in X.yaml; SKILL.md is the operator manual",
            ),
        ] {
            let err = load_package(&files(&[("SKILL.md", &manual), ("X.yaml", profile)]))
                .unwrap_err()
                .to_string();
            assert_eq!(err.lines().next(), Some(first), "{manual}\n{err}");
        }
    }

    /// An inline graph step's source: the first line is the real runx-cli 0.8.2's.
    #[test]
    fn inline_step_source_type_is_worded_as_runx() {
        let profile = edit(
            "            type: javascript\n            module: finish.mjs\n",
            "            type: foo\n",
        );
        assert_eq!(
            refused(&profile).to_string().lines().next(),
            Some(
                "X.yaml: steps.2.run is not a valid inline source: source.type foo is not a supported source type."
            )
        );
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
        // Runx's serde refusal first (runx-cli 0.8.2's words), the Lab's place second.
        assert!(
            err.to_string().starts_with(&format!(
                "fixtures/smoke.yaml: invalid harness fixture: failed to parse harness fixture \
                 YAML: yaml: YAML parse failed: unknown field `notes`, expected one of `name`, \
                 `kind`, `target`, `runner`, `setup`, `inputs`, `env`, `caller`, `expect`, \
                 `operator_journeys`, `metadata` at line {line} column 1\n  at \
                 fixtures/smoke.yaml:{line}: notes: unknown fixture field"
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
                "X.yaml: runner_manifest: YAML parse failed: duplicate mapping key \"skill\" in X.yaml at line {line}; keep profile keys unique.\n  at X.yaml:{line}:1: duplicate key skill (first at line 1); keep one"
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
            Some(
                "X.yaml.skill: manifest skill \"other\" does not match SKILL.md name \"demo\"\n  \
                 at X.yaml:1: skill"
            )
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
        assert!(err.to_string().contains("at SKILL.md:3: inputs: "), "{err}");
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
