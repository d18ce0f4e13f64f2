//! What Runx does with the targets of a graph's steps before the graph runs: the package a
//! `skill:` step names must load and have the runner it names, a runner must not name itself
//! (or a runner already being expanded), and a `tool:` step's tool is one of Runx's native
//! tools or a local tool manifest, found in Runx's tool roots only, whose `artifacts` say
//! whether the step declares a result.
//!
//! The expected texts are Runx's own, from the source of runx-cli 0.8.2 (`AutoMerchLab/runx`
//! at commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`), each cited where it is asserted:
//! `runx-runtime/src/execution/operator_context.rs` (the preflight a graph passes before any
//! step runs: `expand_runner_node`, `load_tools`, `resolve_referenced_local_tool`,
//! `validate_graph_result_contracts`), `runx-runtime/src/tool_catalogs/inspect.rs`
//! (`resolve_local_manifest`, `resolve_tool_roots`), `runx-runtime/src/services/tool_roots.rs`
//! (`inferred_tool_roots`), `runx-runtime/src/execution/graph.rs` (`select_step_runner`),
//! `runx-runtime/src/skill_package.rs` (`resolve_skill_package_directory`) and
//! `runx-runtime/src/services/skill_packages/` (`validation.rs`, `validate_candidate`;
//! `staging.rs`, `isolated_harness_env`). The
//! missing folder's and missing runner's inspection texts were also seen from a real run
//! (`runx skill inspect skills/outer --json`, by hand on 2026-12-07); no Runx binary or recipe
//! is kept.
//!
//! OBSERVED from the real binary (runx-cli 0.8.2 at 3c8315b9, built by hand, run on
//! 2026-12-07 from the workspace root; validation through Runx's `runx.skill.validate` tool as
//! the one step of a graph skill, `allow_execute_harness: true`), each layout of this file:
//! the missing folder's and the missing runner's `skill inspect --json` failures and
//! validation reports (`verdict`, `inspect.error`, `harness.reason`) exactly as asserted; the
//! cycle's text (`runx harness skills/gstep --json`), the result producer's text and the
//! unresolved tool's text, inside Runx's frame `smoke: expected status sealed, execution
//! failed: skill run failed: <text>`, which the Lab's report says too, sealing no receipt
//! (see lab_oracle_harness_report.rs); a manifest in the
//! workspace's `tools` with `wrap_as` is run by Runx (see lab_oracle_local_tools.rs). READ
//! FROM SOURCE only: the `RUNX_TOOL_ROOTS` case.

use std::fs;
use std::path::Path;

use serde_json::{Value, json};

/// A workspace holding `skills/gstep`, whose graph runner `flow` takes its result from
/// `result_from` and runs `steps` (YAML at the steps' indentation), with `extra` runners after
/// it, and one case that expects the graph to seal.
fn workspace(result_from: &str, steps: &str, extra: &str) -> tempfile::TempDir {
    crate::util::gstep_package(&format!(
        "    - name: smoke\n      \
             runner: flow\n      inputs:\n        topic: x\n      expect:\n        status: \
             sealed\nrunners:\n  flow:\n    default: true\n    type: graph\n    inputs:\n      \
             topic:\n        type: string\n        required: true\n        description: What to \
             note.\n    graph:\n      name: flow\n      result_from: [{result_from}]\n      \
             steps:\n{steps}{extra}"
    ))
}

fn lab(verb: &str, root: &Path) -> Value {
    crate::util::lab_json(verb, root, "skills/gstep")
}

/// The package's canonical folder, as Runx names it in its errors.
fn package_dir(root: &Path) -> String {
    fs::canonicalize(root.join("skills/gstep"))
        .unwrap()
        .display()
        .to_string()
}

/// The harness's reason for the failed `smoke` case.
fn harness_reason(report: &Value) -> String {
    report["harness"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no harness reason: {report}"))
        .to_owned()
}

/// A local tool manifest for `foo.bar` (a `cli-tool`), with `artifacts` when given.
fn write_tool(folder: &Path, artifacts: Option<Value>) {
    fs::create_dir_all(folder).unwrap();
    let mut manifest = json!({
        "schema": "runx.tool.manifest.v1",
        "name": "foo.bar",
        "source": { "type": "cli-tool", "command": "node", "args": ["./run.mjs"] },
        "inputs": {},
    });
    if let Some(artifacts) = artifacts {
        manifest["artifacts"] = artifacts;
    }
    fs::write(folder.join("manifest.json"), manifest.to_string()).unwrap();
}

const TOOL_STEP: &str = "        - id: t\n          tool: foo.bar\n";

#[test]
fn a_step_naming_a_folder_that_is_no_package_fails_inspection_and_validation_in_runx_words() {
    let dir = workspace("sub", "        - id: sub\n          skill: ../other\n", "");
    let root = dir.path();
    // `resolve_skill_package_directory`: `RuntimeError::io(format!("reading {}", path))`, the
    // step's reference joined to the canonical package folder as written.
    let message = format!(
        "runtime I/O failed while reading {}/../other: No such file or directory (os error 2)",
        package_dir(root)
    );
    let context = lab("inspect", root);
    assert_eq!(
        context["target_inspection"],
        json!({"status": "failure", "error": {"message": message, "code": "skill_error"}}),
    );
    // `validate_candidate` inspects before the harness: `skill inspection failed: …`, as a
    // `SkillFailed` of `runx.skill.apply`.
    let report = lab("validate", root);
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert_eq!(
        report["inspect"],
        json!({"status": "failed", "error": message})
    );
    assert_eq!(
        harness_reason(&report),
        format!("skill 'runx.skill.apply' failed: skill inspection failed: {message}")
    );
}

#[test]
fn a_step_naming_a_runner_its_package_lacks_fails_inspection_in_runx_words() {
    // `select_step_runner`: `RuntimeError::UnsupportedRunnerSelection`.
    let message = "runner selection 'nosuch' is not supported by the native runtime yet";
    let dir = workspace(
        "sub",
        "        - id: sub\n          skill: .\n          runner: nosuch\n",
        "",
    );
    let context = lab("inspect", dir.path());
    assert_eq!(
        context["target_inspection"],
        json!({"status": "failure", "error": {"message": message, "code": "skill_error"}}),
    );
    let report = lab("validate", dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert_eq!(report["inspect"]["error"], message);
}

#[test]
fn a_sibling_runner_naming_its_own_graph_is_refused_as_a_cycle_in_runx_words() {
    // `expand_runner_node`: `operator context chain contains a cycle at {node_path}
    // ({identity})`, the identity `local:<canonical folder>:<runner>` (`node_identity`); Runx's
    // harness prints it after `execution failed: skill run failed: `.
    let dir = workspace(
        "again",
        "        - id: again\n          skill: .\n          runner: flow\n",
        "",
    );
    let report = lab("validate", dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    let expected = format!(
        "smoke: expected status sealed, execution failed: skill run failed: operator context \
         chain contains a cycle at entry.again (local:{}:flow)",
        package_dir(dir.path())
    );
    let reason = harness_reason(&report);
    assert!(reason.contains(&expected), "{reason}");
}

#[test]
fn a_local_tool_manifest_without_artifacts_declares_no_result_in_runx_words() {
    // `load_tools` reads a local manifest's `artifacts` for `declared_artifact_output`; with
    // none, `validate_graph_result_contracts` refuses the producer.
    let dir = workspace("t", TOOL_STEP, "");
    write_tool(&dir.path().join("tools/foo/bar"), None);
    let report = lab("validate", dir.path());
    let reason = harness_reason(&report);
    assert!(
        reason.contains(
            "smoke: expected status sealed, execution failed: skill run failed: graph result \
             producer 'entry.t' declares no semantic output contract; add run.outputs or \
             artifacts.wrap_as/named_emits before execution"
        ),
        "{reason}"
    );
}

#[test]
fn a_local_tool_manifest_outside_runx_tool_roots_is_not_found_in_runx_words() {
    // Runx's validator's roots are the workspace's `tools`, the package's `tools` and the
    // `tools` beside its `skills` folder (`isolated_harness_env`, `inferred_tool_roots`): a
    // `tools` folder in `skills/` is none of them, nor is one above the workspace, nor one the
    // operator's `RUNX_TOOL_ROOTS` names (the validator's harness drops it). OBSERVED: nor is
    // any `.runx/tools` (the workspace's, `skills/`'s or the package's), which
    // `resolve_tool_roots` reads but the real binary's validator and `runx harness` do not
    // find; and `skills/tools` gives the same text.
    let refusal = "smoke: expected status sealed, execution failed: skill run failed: operator \
                   context could not resolve required local tool 'foo.bar'";
    let artifacts = json!({"wrap_as": "bar_packet"});
    for folder in [
        "skills/tools/foo/bar",
        ".runx/tools/foo/bar",
        "skills/.runx/tools/foo/bar",
        "skills/gstep/.runx/tools/foo/bar",
    ] {
        let dir = workspace("t", TOOL_STEP, "");
        write_tool(&dir.path().join(folder), Some(artifacts.clone()));
        let reason = harness_reason(&lab("validate", dir.path()));
        assert!(reason.contains(refusal), "{folder}: {reason}");
    }
    let dir = workspace("t", TOOL_STEP, "");

    let elsewhere = tempfile::tempdir().unwrap();
    write_tool(&elsewhere.path().join("foo/bar"), Some(artifacts));
    let root = dir.path();
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "validate", "--json", "--repo-root"])
        .arg(root)
        .args(["--target-dir", "skills/gstep"])
        .env("MINDRUNE_HOME", root.join(".home"))
        .env("RUNX_TOOL_ROOTS", elsewhere.path())
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .current_dir(root)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let reason = harness_reason(&report);
    assert!(reason.contains(refusal), "RUNX_TOOL_ROOTS: {reason}");
}
