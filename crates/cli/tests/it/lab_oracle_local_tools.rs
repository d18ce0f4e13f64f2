//! A graph step's local tool manifest (`runx.tool.manifest.v1`), run in the Lab's replay as
//! Runx runs it: the manifest's `scopes` against the step's, its declared `inputs` only (with
//! defaults, required ones refused when missing), a `cli-tool` source in the manifest's folder
//! with its inputs in its environment, a `javascript` source only where Runx can load it, and
//! the output wrapped by the manifest's `artifacts`, which alone address the step's outputs.
//! A manifest outside the package is refused, where Runx runs it (docs/lab.md, differences).
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2 (`AutoMerchLab/runx` at
//! commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`): `runx-runtime/src/tool_catalogs/
//! dispatch/local.rs` (`invoke`), `dispatch/artifacts.rs`, `input_contract.rs`
//! (`materialize_tool_inputs`), `capability.rs` (`enforce_required_scopes`),
//! `adapters/javascript/bundle.rs` with `skill_package.rs` (`resolve_owning_package_root`) and
//! `execution/runner/step_handlers/output.rs` (`build_step_output_projection`). OBSERVED
//! from the real binary (runx-cli 0.8.2 at 3c8315b9, built by hand, run on 2026-12-07, from
//! the workspace root, `runx skill validate skills/gstep --json` and `runx harness
//! skills/gstep --json`): see each test's comment; no Runx binary or recipe is kept.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

/// A workspace holding `skills/gstep`, whose graph runner `flow` runs one step `t` naming
/// `tool` (with the step's `scopes`, if any) and takes its result from it; its one case
/// expects the graph to seal with `expect_output` (YAML at the case's `output:` indentation).
fn workspace(tool: &str, scopes: &str, expect_output: &str) -> tempfile::TempDir {
    crate::util::gstep_package(&format!(
        "    - name: smoke\n      \
             runner: flow\n      inputs:\n        topic: x\n      expect:\n        status: \
             sealed\n        output:\n          exact:\n{expect_output}runners:\n  flow:\n    \
             default: true\n    type: graph\n    inputs:\n      topic:\n        type: string\n        \
             required: true\n        description: What to note.\n    graph:\n      name: flow\n      \
             result_from: [t]\n      steps:\n        - id: t\n          tool: {tool}\n{scopes}"
    ))
}

/// The output the case expects of `run.cjs` given `topic: x`, wrapped as `bar_packet`.
const NOTED: &str = "            bar_packet:\n              data:\n                note: noted \
                     x\n                inputs:\n                  topic: x\n                  \
                     depth: 2\n                in_tool_folder: true\n";

/// A `cli-tool` manifest for `foo.bar` in `folder` running `node ./run.cjs`, declaring a
/// required `topic` and a `depth` defaulting to 2, wrapped as `bar_packet`; `patch` is laid
/// over it. The script prints what it was given and whether it runs in the manifest's folder.
fn write_tool(folder: &Path, patch: Value) {
    fs::create_dir_all(folder).unwrap();
    let mut manifest = json!({
        "schema": "runx.tool.manifest.v1",
        "name": "foo.bar",
        "source": { "type": "cli-tool", "command": "node", "args": ["./run.cjs"] },
        "inputs": {
            "topic": { "type": "string", "required": true },
            "depth": { "type": "integer", "default": 2 }
        },
        "artifacts": { "wrap_as": "bar_packet" },
    });
    for (key, value) in patch.as_object().cloned().unwrap_or_default() {
        manifest[key] = value;
    }
    fs::write(folder.join("manifest.json"), manifest.to_string()).unwrap();
    fs::write(
        folder.join("run.cjs"),
        "const { existsSync } = require(\"node:fs\");\nconst inputs = \
         JSON.parse(process.env.RUNX_INPUTS_JSON ?? \"null\");\n\
         process.stdout.write(JSON.stringify({ note: `noted ${process.env.RUNX_INPUT_TOPIC}`, \
         inputs, in_tool_folder: existsSync(\"manifest.json\") }));\n",
    )
    .unwrap();
}

fn validate(root: &Path) -> Value {
    crate::util::lab_json("validate", root, "skills/gstep")
}

fn reason(report: &Value) -> String {
    report["harness"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no harness reason: {report}"))
        .to_owned()
}

#[test]
fn a_cli_tool_inside_the_package_runs_in_its_folder_with_its_declared_inputs_wrapped_as_runx_does()
{
    // OBSERVED: Runx's harness passes this case (`status: sealed` and the exact output), from
    // the package's `tools/` and from the folder the name spells (`foo.bar/`).
    for folder in ["tools/foo/bar", "foo.bar"] {
        let dir = workspace("foo.bar", "", NOTED);
        write_tool(&dir.path().join("skills/gstep").join(folder), json!({}));
        let report = validate(dir.path());
        assert_eq!(report["verdict"], "tested", "{folder}: {report}");
        assert_eq!(report["harness"]["status"], "passed", "{folder}: {report}");
    }
}

#[test]
fn a_tool_missing_a_required_input_fails_in_runx_words() {
    // OBSERVED: Runx's validator fails the case (`validation_failed`), and `runx skill
    // skills/gstep -i topic=x --json --diagnostics` shows this text.
    let dir = workspace("foo.bar", "", NOTED);
    write_tool(
        &dir.path().join("skills/gstep/tools/foo/bar"),
        json!({"inputs": {"topic": {"type": "string", "required": true},
                          "other": {"type": "string", "required": true}}}),
    );
    let reason = reason(&validate(dir.path()));
    assert!(
        reason.contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{reason}"
    );
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path())
            .contains("tool input contract failed at '/other': tool input 'other' is required"),
        "{reason}"
    );
}

#[test]
fn a_tool_needing_a_scope_the_step_does_not_declare_fails_in_runx_words() {
    // OBSERVED: as for a missing input (the refusal's text, `validation_failed`); the
    // admitted case, with the scope on the step, was read from source (`enforce_required_scopes`).
    let dir = workspace("foo.bar", "", NOTED);
    write_tool(
        &dir.path().join("skills/gstep/tools/foo/bar"),
        json!({"scopes": ["foo.write"]}),
    );
    let reason = reason(&validate(dir.path()));
    assert!(
        reason.contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{reason}"
    );
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path())
            .contains("skill 'foo.bar' failed: missing required scope declaration(s): foo.write"),
        "{reason}"
    );
    // Declared on the step, the scope admits the tool.
    let dir = workspace("foo.bar", "          scopes: [foo.write]\n", NOTED);
    write_tool(
        &dir.path().join("skills/gstep/tools/foo/bar"),
        json!({"scopes": ["foo.write"]}),
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
}

#[test]
fn a_javascript_tool_in_a_tools_folder_is_refused_as_runx_cannot_load_it() {
    // OBSERVED: the text, from a direct run as for a missing input. (With `module:
    // ./tool.mjs`, Runx refuses the package at load: `source.module must be a portable relative
    // .mjs or .js path without '.', '..', or backslash segments.`, a check the Lab lacks.)
    let dir = workspace(
        "foo.bar",
        "",
        "            bar_packet:\n              data: {}\n",
    );
    let folder = dir.path().join("skills/gstep/tools/foo/bar");
    write_tool(
        &folder,
        json!({"source": {"type": "javascript", "module": "tool.mjs"}}),
    );
    fs::write(folder.join("tool.mjs"), "export default () => ({});\n").unwrap();
    let reason = reason(&validate(dir.path()));
    assert!(
        reason.contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{reason}"
    );
    let folder = fs::canonicalize(&folder).unwrap();
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path()).contains(&format!(
            "skill package validation failed: {}: skill package directory must contain \
             SKILL.md or an owned X.yaml profile",
            folder.display()
        )),
        "{reason}"
    );
}

#[test]
fn a_tool_manifest_outside_the_package_is_refused_as_stricter_than_runx() {
    // OBSERVED: Runx runs the workspace's `tools/foo/bar` and the case passes (`tested`); the
    // Lab replays the package alone.
    let dir = workspace("foo.bar", "", NOTED);
    let manifest = dir.path().join("tools/foo/bar");
    write_tool(&manifest, json!({}));
    let report = validate(dir.path());
    let reason = reason(&report);
    let manifest = fs::canonicalize(manifest.join("manifest.json")).unwrap();
    let (first, second) = reason.split_once('\n').unwrap_or((&reason, ""));
    assert!(
        first.contains(&format!(
            "step t: tool \"foo.bar\" is a local tool ({}) whose manifest lies outside the \
             package",
            manifest.display()
        )),
        "{reason}"
    );
    assert!(
        second.starts_with("  Runx runs a local tool from its manifest beside the package")
            && second.contains("MindRune is stricter"),
        "{reason}"
    );
}
