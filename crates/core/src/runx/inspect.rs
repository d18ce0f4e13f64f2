//! `runx.skill.inspect.v1`: a loaded package as Runx's `runx skill inspect` shows it, so an
//! agent prompt or tool written against Runx's inspection reads MindRune's the same way.
//!
//! The fields follow Runx's `inspect_skill_package` (`runx-runtime` `skill_package/inspection`):
//! identity and digests, the catalog and its capabilities, the runner names (sorted, as Runx
//! keeps them in a map), the operator journeys of every case and fixture (sorted by case), one
//! runner inspection per runner, and for the default runner its inspection, readiness, examples
//! and resume hint, and the catalog `semantic_report` (Runx's `CatalogSemanticReport`, made by
//! the same analysis that refuses a public package at load). Each runner's `execution_closure`
//! is [`closure::closure`]'s (local packages a graph names read with the caller's
//! [`LoadNested`]), left out where it cannot be bound; a step's package or runner that fails
//! fails the whole inspection, as Runx's does ([`skill_error`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::closure::{self, LoadNested};
use super::package::{InputDef, Package, Runner};
use super::snapshot::SnapshotFile;
use crate::digest;

/// The schema tag of an inspection.
pub(crate) const INSPECT_SCHEMA: &str = "runx.skill.inspect.v1";

/// Runx's `package_digest` of an inspection (`runx.skill-package.v1`, distinct from the
/// snapshot's `base_digest`): SHA-256 over a tag and, for every file in path order, its
/// length-prefixed path and contents. Modes are not part of it.
pub(crate) fn package_digest(files: &[SnapshotFile]) -> String {
    let mut sorted: Vec<&SnapshotFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut bytes = b"runx.skill-package.v1\0".to_vec();
    for file in sorted {
        for field in [file.path.as_bytes(), file.contents.as_slice()] {
            bytes.extend_from_slice(&(field.len() as u64).to_be_bytes());
            bytes.extend_from_slice(field);
        }
    }
    digest::sha256(&bytes)
}

/// A packet schema a packet-valued input was admitted with (found by the caller in the
/// folders Runx searches): the document, and the SHA-256 of its file as Runx binds it.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketSchema {
    /// The schema document.
    pub schema: Value,
    /// `sha256:<hex>` of the file's bytes.
    pub digest: String,
}

/// The admitted packet schemas, by packet id.
pub type PacketSchemas = BTreeMap<String, PacketSchema>;

/// The inspection of a loaded package whose files are `files`, found at `skill_path`, its
/// packet-valued inputs admitted with `packets`; the local packages its graphs name are read
/// with `load`.
pub fn inspect(
    package: &Package,
    files: &[SnapshotFile],
    skill_path: &str,
    packets: &PacketSchemas,
    load: &LoadNested<'_>,
) -> Value {
    let skill = package.skill();
    let profile = package.profile();
    let manual = files
        .iter()
        .find(|file| file.path == super::package::SKILL_FILE)
        .map_or_else(
            || digest::sha256(b""),
            |file| digest::sha256(&file.contents),
        );
    let mut out = Map::new();
    out.insert("schema".into(), json!(INSPECT_SCHEMA));
    out.insert("status".into(), json!("ok"));
    out.insert("name".into(), json!(skill.name));
    out.insert("skill_path".into(), json!(skill_path));
    out.insert("manual_digest".into(), json!(manual));
    out.insert("package_digest".into(), json!(package_digest(files)));
    if let Some(description) = &skill.description {
        out.insert("description".into(), json!(description));
    }
    if let Some(version) = &profile.version {
        out.insert("version".into(), json!(version));
    }
    if let Some(catalog) = &profile.catalog {
        // Runx shows the capabilities only when all four are declared.
        if let (Some(execution), Some(completion), Some(requires_adapter), Some(approval)) = (
            &catalog.execution,
            &catalog.completion,
            catalog.requires_adapter,
            &catalog.approval,
        ) {
            out.insert(
                "capabilities".into(),
                json!({
                    "execution": execution, "completion": completion,
                    "requires_adapter": requires_adapter, "approval": approval,
                }),
            );
        }
        let mut shown = Map::new();
        shown.insert("kind".into(), json!(catalog.kind));
        shown.insert("audience".into(), json!(catalog.audience));
        shown.insert("visibility".into(), json!(catalog.visibility));
        shown.insert("role".into(), json!(catalog.role));
        for (key, value) in [
            ("canonical_skill", &catalog.canonical_skill),
            ("provider", &catalog.provider),
            ("runtime_path", &catalog.runtime_path),
        ] {
            if let Some(value) = value {
                shown.insert(key.into(), json!(value));
            }
        }
        if !catalog.part_of.is_empty() {
            shown.insert("part_of".into(), json!(catalog.part_of));
        }
        for (key, value) in [
            ("execution", &catalog.execution),
            ("completion", &catalog.completion),
        ] {
            if let Some(value) = value {
                shown.insert(key.into(), json!(value));
            }
        }
        if let Some(requires_adapter) = catalog.requires_adapter {
            shown.insert("requires_adapter".into(), json!(requires_adapter));
        }
        if let Some(approval) = &catalog.approval {
            shown.insert("approval".into(), json!(approval));
        }
        out.insert("catalog".into(), Value::Object(shown));
    }
    out.insert("semantic_report".into(), package.semantic_report());
    let mut runners: Vec<&Runner> = profile.runners.iter().collect();
    runners.sort_by(|a, b| a.name.cmp(&b.name));
    out.insert(
        "runners".into(),
        json!(runners.iter().map(|r| r.name.as_str()).collect::<Vec<_>>()),
    );
    out.insert("operator_journeys".into(), operator_journeys(package));
    // Runx binds every runner's closure first: a step's package or runner that fails fails
    // the whole inspection (a `skill_error`).
    let mut closures = Vec::new();
    for runner in &runners {
        match closure::closure(package, runner, files, skill_path, packets, load) {
            Ok(closure) => closures.push(closure),
            Err(message) => return skill_error(&message),
        }
    }
    out.insert(
        "runner_inspections".into(),
        Value::Array(
            runners
                .iter()
                .zip(&closures)
                .map(|(runner, closure)| {
                    let mut inspection = Map::new();
                    inspection.insert("runner".into(), inspect_runner(package, runner, packets));
                    if let Some(closure) = closure {
                        inspection.insert("execution_closure".into(), closure.clone());
                    }
                    Value::Object(inspection)
                })
                .collect(),
        ),
    );
    if let Some(runner) = package.default_runner() {
        out.insert("runner".into(), inspect_runner(package, runner, packets));
        let closure = runners
            .iter()
            .zip(&closures)
            .find(|(candidate, _)| candidate.name == runner.name)
            .and_then(|(_, closure)| closure.clone());
        if let Some(closure) = closure {
            out.insert("execution_closure".into(), closure);
        }
        out.insert("readiness".into(), json!({"status": "ready"}));
        out.insert("examples".into(), examples(package, files, &runner.name));
        out.insert(
            "resume".into(),
            json!({
                "may_pause": matches!(
                    runner.source.source_type.as_str(),
                    "agent" | "agent-task" | "graph"
                ),
                "command": "runx resume <run-id> answers.json",
            }),
        );
    }
    Value::Object(out)
}

/// What `runx skill inspect --json` prints when the inspection fails as a whole:
/// `{status: failure, error: {message, code: skill_error}}` (runx-cli `skill.rs`,
/// `skill_json_failure_output`).
pub(crate) fn skill_error(message: &str) -> Value {
    json!({"status": "failure", "error": {"message": message, "code": "skill_error"}})
}

/// The message of an inspection that failed as a whole ([`skill_error`]), if it did.
pub fn failure_message(inspection: &Value) -> Option<&str> {
    if inspection.get("status").and_then(Value::as_str) != Some("failure") {
        return None;
    }
    inspection.pointer("/error/message").and_then(Value::as_str)
}

/// Runx's `{status: invalid, error}` for a target that does not load.
pub fn invalid(error: &str) -> Value {
    json!({"status": "invalid", "error": error})
}

fn inspect_runner(package: &Package, runner: &Runner, packets: &PacketSchemas) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(runner.name));
    out.insert("type".into(), json!(runner.source.source_type));
    // Runx lists a runner's inputs sorted by name (its inputs are a map).
    let mut inputs: Vec<&InputDef> = runner.inputs.iter().collect();
    inputs.sort_by(|a, b| a.name.cmp(&b.name));
    out.insert(
        "input_schema".into(),
        input_schema(&inputs, &runner_examples(package, runner), packets),
    );
    out.insert(
        "inputs".into(),
        Value::Array(
            inputs
                .into_iter()
                .map(|input| inspect_input(input, packets))
                .collect(),
        ),
    );
    let outputs: Vec<Value> = runner
        .source
        .outputs
        .as_ref()
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, declaration)| {
            let mut output = Map::new();
            output.insert("name".into(), json!(name));
            match declaration {
                Value::String(kind) => {
                    output.insert("type".into(), json!(kind));
                }
                Value::Object(details) => {
                    if let Some(kind) = details.get("type").and_then(Value::as_str) {
                        output.insert("type".into(), json!(kind));
                    }
                    if let Some(required) = details.get("required").and_then(Value::as_bool) {
                        output.insert("required".into(), json!(required));
                    }
                }
                _ => {}
            }
            Value::Object(output)
        })
        .collect();
    out.insert("outputs".into(), Value::Array(outputs));
    out.insert("requirements".into(), requirements(package, runner));
    for key in ["artifacts", "allowed_tools"] {
        if let Some(value) = runner.json.get(key).filter(|value| !value.is_null()) {
            out.insert(key.into(), value.clone());
        }
    }
    if !runner.scopes.is_empty() {
        out.insert("scopes".into(), json!(runner.scopes));
    }
    if let Some(mutating) = runner.json.get("mutating").and_then(Value::as_bool) {
        out.insert("mutating".into(), json!(mutating));
    }
    Value::Object(out)
}

fn inspect_input(input: &InputDef, packets: &PacketSchemas) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), json!(input.name));
    out.insert("type".into(), json!(input.input_type));
    out.insert("required".into(), json!(input.required));
    if let Some(description) = &input.description {
        out.insert("description".into(), json!(description));
    }
    out.insert(
        "schema".into(),
        Value::Object(effective_schema(input, packets)),
    );
    Value::Object(out)
}

/// Runx's `effective_schema` of an input: its `schema` (a packet-valued input's is its
/// packet's), with the packet id, the type (unless `json`), the description and the default
/// laid over it.
fn effective_schema(input: &InputDef, packets: &PacketSchemas) -> Map<String, Value> {
    let packet = input
        .packet
        .as_ref()
        .and_then(|packet| packets.get(packet))
        .map(|packet| &packet.schema);
    let mut schema = packet
        .or(input.schema.as_ref())
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(packet) = &input.packet {
        schema.insert("x-runx-packet-id".into(), json!(packet));
    }
    if input.input_type != "json" {
        schema.insert("type".into(), json!(input.input_type));
    }
    if let Some(description) = &input.description {
        schema.insert("description".into(), json!(description));
    }
    if let Some(default) = &input.default {
        schema.insert("default".into(), default.clone());
    }
    schema
}

/// Runx's `input_contract_schema_with_examples`: a closed object of the inputs (sorted by
/// name), requiring those required without a default, with the examples when there are any.
fn input_schema(inputs: &[&InputDef], examples: &[Value], packets: &PacketSchemas) -> Value {
    let properties: Map<String, Value> = inputs
        .iter()
        .map(|input| {
            let schema = effective_schema(input, packets);
            (input.name.clone(), Value::Object(schema))
        })
        .collect();
    let required: Vec<&str> = inputs
        .iter()
        .filter(|input| input.required && input.default.is_none())
        .map(|input| input.name.as_str())
        .collect();
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), json!(required));
    schema.insert("additionalProperties".into(), json!(false));
    if !examples.is_empty() {
        schema.insert("examples".into(), json!(examples));
    }
    Value::Object(schema)
}

/// Runx's `effective_runner_examples`: the runner's own `examples`, else the inputs of the
/// first inline case, then fixture (in path order), that selects the runner, expects `sealed`
/// and has a standalone journey exercising it.
fn runner_examples(package: &Package, runner: &Runner) -> Vec<Value> {
    if !runner.examples.is_empty() {
        return runner.examples.clone();
    }
    let runners = &package.profile().runners;
    let selects = |selected: Option<&str>| {
        selected.map_or(runner.default || runners.len() == 1, |name| {
            name == runner.name
        })
    };
    let usable = |json: &Value| {
        json.pointer("/expect/status").and_then(Value::as_str) == Some("sealed")
            && json
                .get("operator_journeys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|journey| {
                    journey.get("mode").and_then(Value::as_str) == Some("standalone")
                        && journey
                            .get("exercises_runner")
                            .and_then(Value::as_str)
                            .is_none_or(|name| name == runner.name)
                })
    };
    let cases = package
        .harness_cases()
        .iter()
        .map(|case| (case.runner.as_deref(), &case.json));
    let mut fixtures: Vec<_> = package.fixtures().iter().collect();
    fixtures.sort_by(|a, b| a.path.cmp(&b.path));
    let fixtures = fixtures
        .into_iter()
        .map(|fixture| (fixture.runner.as_deref(), &fixture.json));
    cases
        .chain(fixtures)
        .find(|(selected, json)| selects(*selected) && usable(json))
        .map(|(_, json)| vec![json.get("inputs").cloned().unwrap_or_else(|| json!({}))])
        .unwrap_or_default()
}

/// Runx's `execution_requirements` of a runner: its `auth`, its scopes and its graph steps',
/// its source's environment names, its credential's declaration and its `runtime`, each
/// only when there is one.
fn requirements(package: &Package, runner: &Runner) -> Value {
    let mut out = Map::new();
    if let Some(auth) = runner.json.get("auth").filter(|value| !value.is_null()) {
        out.insert("auth".into(), auth.clone());
    }
    let mut scopes = runner.scopes.clone();
    if let Some(graph) = &runner.source.graph {
        for step in &graph.steps {
            scopes.extend(step.scopes.iter().cloned());
        }
    }
    if !scopes.is_empty() {
        out.insert("scopes".into(), json!(scopes));
    }
    let mut environment = Map::new();
    for key in ["required", "optional"] {
        let names = runner
            .json
            .pointer(&format!("/environment/{key}"))
            .and_then(Value::as_array)
            .filter(|names| !names.is_empty());
        if let Some(names) = names {
            environment.insert(key.into(), Value::Array(names.clone()));
        }
    }
    if !environment.is_empty() {
        out.insert("environment".into(), Value::Object(environment));
    }
    let credential = runner.credential.as_ref().and_then(|name| {
        let declared = package
            .profile_json()
            .pointer(&format!("/credentials/{name}"))?;
        let mut credential = Map::new();
        credential.insert("name".into(), json!(name));
        credential.insert(
            "provider".into(),
            declared.get("provider").cloned().unwrap_or(Value::Null),
        );
        if let Some(audience) = declared.get("audience").filter(|value| !value.is_null()) {
            credential.insert("audience".into(), audience.clone());
        }
        credential.insert(
            "deliveries".into(),
            declared
                .get("deliveries")
                .cloned()
                .unwrap_or_else(|| json!({})),
        );
        Some(Value::Object(credential))
    });
    if let Some(credential) = credential {
        out.insert("credential".into(), credential);
    }
    if let Some(runtime) = runner.json.get("runtime").filter(|value| !value.is_null()) {
        out.insert("runtime".into(), runtime.clone());
    }
    Value::Object(out)
}

/// Every operator journey of the inline cases and the fixtures, sorted by case name.
fn operator_journeys(package: &Package) -> Value {
    let cases = package
        .harness_cases()
        .iter()
        .map(|case| (case.name.as_str(), case.runner.as_deref(), &case.json));
    let fixtures = package.fixtures().iter().map(|fixture| {
        (
            fixture.name.as_str(),
            fixture.runner.as_deref(),
            &fixture.json,
        )
    });
    let mut journeys: Vec<Value> = cases
        .chain(fixtures)
        .flat_map(|(case, runner, json)| {
            json.get("operator_journeys")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |journey| {
                    let strings = |key: &str| journey.get(key).cloned().unwrap_or(json!([]));
                    let mut out = Map::new();
                    out.insert("case".into(), json!(case));
                    for key in ["mode", "request", "expected_outcome"] {
                        out.insert(key.into(), journey.get(key).cloned().unwrap_or(Value::Null));
                    }
                    for key in ["confusors", "prior_evidence", "must_not_repeat"] {
                        out.insert(key.into(), strings(key));
                    }
                    if let Some(runner) = runner {
                        out.insert("runner".into(), json!(runner));
                    }
                    if let Some(exercises) = journey.get("exercises_runner") {
                        out.insert("exercises_runner".into(), exercises.clone());
                    }
                    Value::Object(out)
                })
        })
        .collect();
    // A stable sort by case name, as Runx sorts them.
    journeys.sort_by(|a, b| a["case"].as_str().cmp(&b["case"].as_str()));
    Value::Array(journeys)
}

/// The names of the inline cases that run `runner` (or name none) and the path of every
/// fixture file, sorted and deduplicated.
fn examples(package: &Package, files: &[SnapshotFile], runner: &str) -> Value {
    let mut examples: Vec<String> = package
        .harness_cases()
        .iter()
        .filter(|case| case.runner.as_deref().is_none_or(|name| name == runner))
        .map(|case| case.name.clone())
        .chain(
            files
                .iter()
                .filter(|file| file.path.starts_with("fixtures/") && file.path.ends_with(".yaml"))
                .map(|file| file.path.clone()),
        )
        .collect();
    examples.sort();
    examples.dedup();
    json!(examples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runx::package::load_package;

    fn file(path: &str, text: &str) -> SnapshotFile {
        SnapshotFile {
            path: path.into(),
            mode: 0o100_644,
            contents: text.as_bytes().to_vec(),
        }
    }

    fn demo() -> Vec<SnapshotFile> {
        vec![
            file(
                "SKILL.md",
                "---\nname: demo\ndescription: A demo.\n---\n\n# Demo\n",
            ),
            file(
                "X.yaml",
                "skill: demo\nversion: \"1.0.0\"\ncatalog:\n  kind: skill\n  audience: public\n  visibility: internal\n  role: canonical\n  execution: read\n  completion: runtime_receipt\n  requires_adapter: false\n  approval: none\nharness:\n  cases:\n    - name: smoke\n      runner: note\n      operator_journeys:\n        - mode: standalone\n          request: Note it.\n          expected_outcome: A note.\n          confusors: [other]\n      inputs: {topic: x}\n      expect: {status: sealed}\nrunners:\n  zeta:\n    type: agent-task\n    agent: builder\n    task: demo-zeta\n  note:\n    default: true\n    type: agent-task\n    agent: builder\n    task: demo-note\n    scopes: [fs.read]\n    inputs:\n      topic:\n        type: string\n        required: true\n        description: What to note.\n    outputs:\n      note: string\n",
            ),
        ]
    }

    #[test]
    fn a_package_inspects_in_runx_shape() {
        let files = demo();
        let package = load_package(&files).unwrap();
        let inspection = inspect(
            &package,
            &files,
            "skills/demo",
            &PacketSchemas::new(),
            &|path| Err(format!("{} is not read here", path.display())),
        );
        assert_eq!(inspection["schema"], INSPECT_SCHEMA);
        assert_eq!(inspection["status"], "ok");
        assert_eq!(inspection["name"], "demo");
        assert_eq!(inspection["skill_path"], "skills/demo");
        assert_eq!(inspection["runners"], json!(["note", "zeta"]), "sorted");
        assert_eq!(inspection["runner"]["name"], "note");
        assert_eq!(
            inspection["runner"]["inputs"],
            json!([{"name": "topic", "type": "string", "required": true, "description": "What to note.",
                    "schema": {"description": "What to note.", "type": "string"}}])
        );
        // The runner's input contract, requirements and execution closure, as runx-cli 0.8.2
        // at 3c8315b9 printed them (by hand) for these two files at skills/demo: the example
        // is the sealed standalone case's inputs; `zeta` has none.
        assert_eq!(
            inspection["runner"]["input_schema"],
            json!({"additionalProperties": false, "examples": [{"topic": "x"}],
                   "properties": {"topic": {"description": "What to note.", "type": "string"}},
                   "required": ["topic"], "type": "object"})
        );
        assert_eq!(
            inspection["runner"]["requirements"],
            json!({"scopes": ["fs.read"]})
        );
        let zeta = &inspection["runner_inspections"][1];
        assert_eq!(
            zeta["runner"]["input_schema"],
            json!({"additionalProperties": false, "properties": {}, "required": [], "type": "object"})
        );
        assert_eq!(zeta["runner"]["requirements"], json!({}));
        let package_digest =
            "sha256:ff00654021e2c86ea45512ac5b5ab78a73b54f5a7d0c0c601e089bef12265cd1";
        assert_eq!(inspection["package_digest"], package_digest);
        for (closure, runner, digest) in [
            (
                &inspection["execution_closure"],
                "note",
                "sha256:6cc13a062c62dd9203e77494810c8c64873b9682963c5634034801fe4f2343ff",
            ),
            (
                &zeta["execution_closure"],
                "zeta",
                "sha256:f088c822a54c2220a3c5ab91f4a7f595269c3d34135d178bb91dd75410eb7072",
            ),
        ] {
            assert_eq!(
                closure,
                &json!({"agent_acts": 1, "closure_digest": digest, "components": [],
                    "declared_artifact": false, "direct_external_skill_edges": [],
                    "fully_bound": true, "package_bindings": [{"package_digest": package_digest,
                    "runner": runner, "skill": "demo", "source_files": ["SKILL.md", "X.yaml"],
                    "source_path": "skills/demo"}], "profiles": [format!("X.yaml#{runner}")],
                    "runtime_release": "0.8.2", "skill_edges": [], "summary": "1 agent act",
                    "unresolved_skill_edges": []})
            );
        }
        assert_eq!(
            inspection["runner"]["outputs"],
            json!([{"name": "note", "type": "string"}])
        );
        assert_eq!(inspection["runner"]["scopes"], json!(["fs.read"]));
        assert_eq!(
            inspection["runner_inspections"].as_array().unwrap().len(),
            2
        );
        assert_eq!(
            inspection["capabilities"],
            json!({"execution": "read", "completion": "runtime_receipt", "requires_adapter": false, "approval": "none"})
        );
        assert_eq!(inspection["operator_journeys"][0]["case"], "smoke");
        assert_eq!(inspection["operator_journeys"][0]["runner"], "note");
        assert_eq!(
            inspection["operator_journeys"][0]["prior_evidence"],
            json!([])
        );
        assert_eq!(inspection["examples"], json!(["smoke"]));
        assert_eq!(inspection["readiness"]["status"], "ready");
        assert_eq!(inspection["resume"]["may_pause"], true);
        assert_eq!(
            inspection["manual_digest"],
            json!(digest::sha256(files[0].contents.as_slice()))
        );
    }

    #[test]
    fn package_digest_is_the_tagged_path_sorted_content_digest() {
        let mut files = demo();
        let digest_before = package_digest(&files);
        files.reverse();
        files[0].mode = 0o100_755;
        assert_eq!(
            package_digest(&files),
            digest_before,
            "order and mode do not count"
        );
        files[0].contents.push(b'\n');
        assert_ne!(package_digest(&files), digest_before);
        let mut expected = b"runx.skill-package.v1\0".to_vec();
        for (path, text) in [("a", "1"), ("b", "")] {
            expected.extend_from_slice(&(path.len() as u64).to_be_bytes());
            expected.extend_from_slice(path.as_bytes());
            expected.extend_from_slice(&(text.len() as u64).to_be_bytes());
            expected.extend_from_slice(text.as_bytes());
        }
        assert_eq!(
            package_digest(&[file("b", ""), file("a", "1")]),
            digest::sha256(&expected)
        );
    }
}
