//! Packet-valued inputs, admitted as Runx admits them when it loads a package
//! (`runx-runtime/src/packet_schemas/input_contracts.rs`, `hydrate_packet_input_contracts`).
//!
//! An input declared `type: json` with `packet: <id>` has no schema of its own: the packet
//! catalog owns it. So a package declaring one loads only when, for every such input (SKILL.md's
//! inputs, X.yaml's `input_definitions`, then each runner by name, each input by name, then
//! each local tool of the package by its manifest's path):
//!
//! - a `*.json` document whose `x-runx-packet-id` is the id is found, in `<package>/packets`,
//!   `packets` and `dist/packets` of the source workspace, or `<package>/dist/packets`
//!   (`X.yaml runner plan: input 'plan' declares missing packet schema 'runx.test.plan.v1'`);
//! - the document is a JSON Schema object valid against the draft 2020-12 meta-schema
//!   (`packet schema 'P' must be a JSON Schema object`, `input 'I' packet schema 'P' is
//!   invalid: …`);
//! - each of the runner's `examples` holds a value the schema accepts
//!   (`X.yaml: runners.plan.examples[0]/plan/decision does not match the runner input
//!   contract: …`).
//!
//! A catalog Runx cannot read (a `.json` that is not JSON, an empty `x-runx-packet-id`, two
//! different documents for one id) refuses the package as `packet schemas: …`. The schema is
//! then the input's schema: a harness case's value for the input is checked against it before
//! the runner starts, as any declared input schema is.

use std::path::Path;

use mindrune_core::{InputDef, PROFILE_FILE, Package};
use mindrune_core::{PacketSchema, PacketSchemas};
use serde_json::Value;

use super::packets::{PacketCatalog, input_schema_directories};

/// Refuses a package (read from `package_dir`) whose packet-valued inputs Runx would not
/// admit, in Runx's words without the `skill package validation failed: ` prefix; else the
/// schemas they were admitted with, for the inspection.
pub(crate) fn check_packet_inputs(
    package: &Package,
    package_dir: &Path,
) -> Result<PacketSchemas, String> {
    let profile = package.profile();
    let uses_packets = |inputs: &[InputDef]| inputs.iter().any(|input| input.packet.is_some());
    if !uses_packets(&package.skill().inputs)
        && !uses_packets(&profile.input_definitions)
        && !profile
            .runners
            .iter()
            .any(|runner| uses_packets(&runner.inputs))
        && !package
            .tools()
            .iter()
            .any(|tool| uses_packets(&tool.inputs))
    {
        return Ok(PacketSchemas::new());
    }
    let absolute = std::fs::canonicalize(package_dir)
        .or_else(|_| std::path::absolute(package_dir))
        .unwrap_or_else(|_| package_dir.to_path_buf());
    let catalog = PacketCatalog::discover(input_schema_directories(&absolute));
    let mut admitted = PacketSchemas::new();
    let mut keep = |schemas: &[(String, String, Value)]| {
        for (_, packet, schema) in schemas {
            let digest = catalog.schema_digest(packet).unwrap_or_default();
            let schema = schema.clone();
            admitted.insert(packet.clone(), PacketSchema { schema, digest });
        }
    };
    keep(&admit(
        &catalog,
        "SKILL.md inputs",
        &package.skill().inputs,
    )?);
    keep(&admit(
        &catalog,
        &format!("{PROFILE_FILE} input_definitions"),
        &profile.input_definitions,
    )?);
    let mut runners: Vec<_> = profile.runners.iter().collect();
    runners.sort_by(|a, b| a.name.cmp(&b.name));
    for runner in runners {
        let owner = format!("{PROFILE_FILE} runner {}", runner.name);
        let schemas = admit(&catalog, &owner, &runner.inputs)?;
        keep(&schemas);
        for (index, example) in runner.examples.iter().enumerate() {
            for (name, _, schema) in &schemas {
                let Some(value) = example.get(name) else {
                    continue;
                };
                let validator = jsonschema::draft202012::new(schema).map_err(|err| {
                    format!("{owner}: input '{name}' packet schema is invalid: {err}")
                })?;
                if let Some(error) = validator.iter_errors(value).next() {
                    return Err(format!(
                        "{PROFILE_FILE}: runners.{}.examples[{index}]/{name}{} does not match the \
                         runner input contract: {error}",
                        runner.name,
                        error.instance_path()
                    ));
                }
            }
        }
    }
    // Then the package's local tools, by manifest path.
    for tool in package.tools() {
        keep(&admit(
            &catalog,
            &format!("tool {}", tool.manifest_path),
            &tool.inputs,
        )?);
    }
    Ok(admitted)
}

/// The packet id and schema of each packet-valued input of `inputs`, in name order, or Runx's
/// refusal naming `owner`.
fn admit(
    catalog: &PacketCatalog,
    owner: &str,
    inputs: &[InputDef],
) -> Result<Vec<(String, String, Value)>, String> {
    let mut inputs: Vec<&InputDef> = inputs.iter().collect();
    inputs.sort_by(|a, b| a.name.cmp(&b.name));
    let mut schemas = Vec::new();
    for input in inputs {
        let Some(packet) = input.packet.as_deref() else {
            continue;
        };
        let name = &input.name;
        let schema = catalog
            .schema(packet)
            .map_err(|err| format!("packet schemas: {err}"))?
            .ok_or_else(|| {
                format!("{owner}: input '{name}' declares missing packet schema '{packet}'")
            })?;
        if !schema.is_object() {
            return Err(format!(
                "{owner}: packet schema '{packet}' must be a JSON Schema object"
            ));
        }
        jsonschema::draft202012::meta::validate(schema).map_err(|err| {
            format!("{owner}: input '{name}' packet schema '{packet}' is invalid: {err}")
        })?;
        schemas.push((name.clone(), packet.to_owned(), schema.clone()));
    }
    Ok(schemas)
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use mindrune_core::SnapshotFile;
    use mindrune_core::load_package;

    use super::*;

    const PLAN: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "x-runx-packet-id": "runx.test.plan.v1",
  "type": "object",
  "required": ["decision"],
  "properties": {"decision": {"type": "string"}}
}
"#;

    /// A package at `skills/demo` of a `pnpm` workspace whose runner `apply` takes the
    /// packet-valued input `plan`, with `example` as its one example's `plan`.
    fn workspace(example: &str) -> (tempfile::TempDir, PathBuf, Package) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("pnpm-workspace.yaml"), "packages: []\n").unwrap();
        let package_dir = dir.path().join("skills/demo");
        fs::create_dir_all(&package_dir).unwrap();
        let profile = format!(
            "skill: demo\nrunners:\n  apply:\n    default: true\n    type: agent-task\n    \
             agent: builder\n    task: demo-apply\n    inputs:\n      plan:\n        type: json\n        \
             required: true\n        packet: runx.test.plan.v1\n    examples:\n      - plan: \
             {example}\n"
        );
        let files = [
            (
                "SKILL.md",
                "---\nname: demo\ndescription: A demo.\n---\n\n### demo-apply\n\nApply it.\n"
                    .to_owned(),
            ),
            ("X.yaml", profile),
        ]
        .map(|(path, text)| SnapshotFile {
            path: path.to_owned(),
            mode: 0o100_644,
            contents: text.into_bytes(),
        });
        let package = load_package(&files).unwrap();
        (dir, package_dir, package)
    }

    #[test]
    fn a_local_tool_s_packet_input_is_admitted_as_a_runner_s_is() {
        // The line is the real runx-cli 0.8.2's (`runx skill inspect`).
        let dir = tempfile::tempdir().unwrap();
        let package_dir = dir.path().join("demo");
        let manifest = r#"{"schema": "runx.tool.manifest.v1", "name": "demo.plan",
 "source": {"type": "cli-tool", "command": "node", "args": ["./run.mjs"]},
 "inputs": {"plan": {"type": "json", "packet": "runx.test.plan.v1"}}}"#;
        let profile = "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    \
                       graph:\n      name: demo\n      result_from: [plan]\n      steps:\n        \
                       - id: plan\n          tool: demo.plan\n";
        let files = [
            (
                "SKILL.md",
                "---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n",
            ),
            ("X.yaml", profile),
            ("tools/demo/plan/manifest.json", manifest),
            ("tools/demo/plan/run.mjs", ""),
        ]
        .map(|(path, text)| SnapshotFile {
            path: path.to_owned(),
            mode: 0o100_644,
            contents: text.as_bytes().to_vec(),
        });
        let package = load_package(&files).unwrap();
        assert_eq!(
            check_packet_inputs(&package, &package_dir).unwrap_err(),
            "tool tools/demo/plan/manifest.json: input 'plan' declares missing packet schema \
             'runx.test.plan.v1'"
        );
        fs::create_dir_all(package_dir.join("packets")).unwrap();
        fs::write(package_dir.join("packets/plan.json"), PLAN).unwrap();
        let admitted = check_packet_inputs(&package, &package_dir).unwrap();
        assert!(admitted.contains_key("runx.test.plan.v1"));
    }

    #[test]
    fn a_packet_input_whose_schema_is_nowhere_refuses_the_package_in_runx_words() {
        let (_dir, package_dir, package) = workspace("{decision: go}");
        assert_eq!(
            check_packet_inputs(&package, &package_dir).unwrap_err(),
            "X.yaml runner apply: input 'plan' declares missing packet schema 'runx.test.plan.v1'"
        );
    }

    #[test]
    fn a_packet_input_loads_when_the_workspace_dist_packets_holds_its_schema() {
        let (dir, package_dir, package) = workspace("{decision: go}");
        fs::create_dir_all(dir.path().join("dist/packets")).unwrap();
        fs::write(dir.path().join("dist/packets/plan.schema.json"), PLAN).unwrap();
        check_packet_inputs(&package, &package_dir).unwrap();
    }

    #[test]
    fn a_packet_input_finds_its_schema_in_the_package_own_packets_folder() {
        let (_dir, package_dir, package) = workspace("{decision: go}");
        fs::create_dir_all(package_dir.join("packets")).unwrap();
        fs::write(package_dir.join("packets/plan.json"), PLAN).unwrap();
        check_packet_inputs(&package, &package_dir).unwrap();
    }

    #[test]
    fn an_example_the_packet_schema_refuses_is_refused_naming_the_example_and_field() {
        let (_dir, package_dir, package) = workspace("{decision: 7}");
        fs::create_dir_all(package_dir.join("packets")).unwrap();
        fs::write(package_dir.join("packets/plan.json"), PLAN).unwrap();
        assert_eq!(
            check_packet_inputs(&package, &package_dir).unwrap_err(),
            "X.yaml: runners.apply.examples[0]/plan/decision does not match the runner input \
             contract: 7 is not of type \"string\""
        );
    }

    #[test]
    fn a_packet_schema_that_is_not_json_schema_is_refused_as_invalid() {
        let (_dir, package_dir, package) = workspace("{decision: go}");
        fs::create_dir_all(package_dir.join("packets")).unwrap();
        let broken = PLAN.replace(r#""type": "object""#, r#""type": "thing""#);
        fs::write(package_dir.join("packets/plan.json"), broken).unwrap();
        let err = check_packet_inputs(&package, &package_dir).unwrap_err();
        assert!(
            err.starts_with(
                "X.yaml runner apply: input 'plan' packet schema 'runx.test.plan.v1' is invalid: "
            ),
            "{err}"
        );
    }

    #[test]
    fn a_packet_catalog_that_cannot_be_read_refuses_as_packet_schemas() {
        let (_dir, package_dir, package) = workspace("{decision: go}");
        fs::create_dir_all(package_dir.join("packets")).unwrap();
        fs::write(package_dir.join("packets/plan.json"), "{not json").unwrap();
        let err = check_packet_inputs(&package, &package_dir).unwrap_err();
        assert!(err.starts_with("packet schemas: "), "{err}");
    }
}
