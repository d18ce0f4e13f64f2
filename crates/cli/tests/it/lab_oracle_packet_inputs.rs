//! Packet-valued inputs (`type: json` with `packet: <id>`), held to what the real Runx said.
//!
//! Each test lays out one small package (`skills/demo`, an agent-task runner `apply` whose input
//! `plan` is the packet `runx.test.plan.v1`) with the packet schema in one place, runs `mindrune
//! lab inspect`/`validate --json` and compares the decision and first line with the answer
//! `runx skill inspect skills/demo --json` and `runx harness skills/demo --json` gave on the
//! same files. Observed from runx-cli 0.8.2 (`AutoMerchLab/runx` at commit
//! `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand with the nightly toolchain, run by
//! hand on 2026-12-07); no Runx binary or recipe is kept.

use std::fs;
use std::path::Path;

use serde_json::Value;

const PLAN: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "x-runx-packet-id": "runx.test.plan.v1",
  "type": "object",
  "required": ["decision"],
  "properties": {"decision": {"type": "string"}}
}
"#;

/// A workspace (with `pnpm-workspace.yaml` when `marker`) holding `skills/demo`, whose one
/// example's plan is `example`, with an inline case supplying `case_plan`, and `schema` written
/// at `schema_at` (relative to the workspace) when given.
fn workspace(
    marker: bool,
    example: &str,
    case_plan: &str,
    schema: Option<(&str, &str)>,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    if marker {
        fs::write(root.join("pnpm-workspace.yaml"), "packages: []\n").unwrap();
    }
    let package = root.join("skills/demo");
    fs::create_dir_all(&package).unwrap();
    fs::write(
        package.join("SKILL.md"),
        "---\nname: demo\ndescription: A demo.\n---\n\n### demo-apply\n\nApply it.\n",
    )
    .unwrap();
    fs::write(
        package.join("X.yaml"),
        format!(
            "skill: demo\nrunners:\n  apply:\n    default: true\n    type: agent-task\n    \
             agent: builder\n    task: demo-apply\n    inputs:\n      plan:\n        type: json\n        \
             required: true\n        packet: runx.test.plan.v1\n    outputs:\n      done: boolean\n    \
             examples:\n      - plan: {example}\nharness:\n  cases:\n    - name: apply-plan\n      \
             inputs:\n        plan: {case_plan}\n      caller:\n        answers:\n          \
             agent_task.demo-apply.output: {{done: true}}\n      expect:\n        status: sealed\n"
        ),
    )
    .unwrap();
    if let Some((at, text)) = schema {
        let path = root.join(at);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    dir
}

fn lab(verb: &str, root: &Path) -> Value {
    crate::util::lab_json(verb, root, "skills/demo")
}

/// `lab inspect`'s decision and first line: `ok` and `""`, or `refused` and the reason.
fn inspected(root: &Path) -> (String, String) {
    let inspection = lab("inspect", root)["target_inspection"].clone();
    match inspection["status"].as_str() {
        Some("ok") => ("ok".into(), String::new()),
        _ => (
            "refused".into(),
            inspection["error"]
                .as_str()
                .unwrap_or_default()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        ),
    }
}

#[test]
fn a_packet_input_whose_schema_is_nowhere_is_refused_at_load_in_runx_words() {
    let dir = workspace(true, "{decision: go}", "{decision: go}", None);
    assert_eq!(
        inspected(dir.path()),
        (
            "refused".into(),
            "skill package validation failed: X.yaml runner apply: input 'plan' declares missing \
             packet schema 'runx.test.plan.v1'"
                .into()
        )
    );
}

#[test]
fn a_packet_schema_loads_from_the_workspace_or_the_package_folders_runx_searches() {
    for (marker, at) in [
        (true, "dist/packets/plan.schema.json"),
        (true, "skills/demo/packets/plan.json"),
        (false, "skills/demo/dist/packets/plan.json"),
    ] {
        let dir = workspace(marker, "{decision: go}", "{decision: go}", Some((at, PLAN)));
        assert_eq!(inspected(dir.path()), ("ok".into(), String::new()), "{at}");
    }
}

#[test]
fn an_example_the_packet_schema_refuses_is_refused_at_load_naming_the_field() {
    let at = "skills/demo/packets/plan.json";
    let dir = workspace(true, "{decision: 7}", "{decision: go}", Some((at, PLAN)));
    assert_eq!(
        inspected(dir.path()),
        (
            "refused".into(),
            "skill package validation failed: X.yaml: runners.apply.examples[0]/plan/decision \
             does not match the runner input contract: 7 is not of type \"string\""
                .into()
        )
    );
}

#[test]
fn a_packet_schema_that_is_not_json_schema_is_refused_at_load() {
    let at = "skills/demo/packets/plan.json";
    let broken = PLAN.replace(r#""type": "object""#, r#""type": "thing""#);
    let dir = workspace(
        true,
        "{decision: go}",
        "{decision: go}",
        Some((at, &broken)),
    );
    assert_eq!(
        inspected(dir.path()),
        (
            "refused".into(),
            "skill package validation failed: X.yaml runner apply: input 'plan' packet schema \
             'runx.test.plan.v1' is invalid: \"thing\" is not valid under any of the schemas \
             listed in the 'anyOf' keyword"
                .into()
        )
    );
}

#[test]
fn a_case_value_the_packet_schema_refuses_fails_the_harness_and_a_fitting_one_passes() {
    let at = "skills/demo/packets/plan.json";
    // Runx: `runx harness` passed, and with `decision: 7` failed the case (`expected status
    // sealed, got failure`).
    let dir = workspace(true, "{decision: go}", "{decision: go}", Some((at, PLAN)));
    assert_eq!(lab("validate", dir.path())["verdict"], "tested");
    let dir = workspace(true, "{decision: go}", "{decision: 7}", Some((at, PLAN)));
    let report = lab("validate", dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    // As Runx's report: the status only, and no receipt for a case stopped at its inputs.
    assert_eq!(
        report["harness"]["assertion_errors"],
        serde_json::json!(["apply-plan: expected status sealed, got failure"]),
        "{report}"
    );
    assert_eq!(
        report["harness"]["receipt_ids"],
        serde_json::json!([]),
        "{report}"
    );
}

#[test]
fn a_packet_schema_in_the_package_dist_packets_checks_case_values_below_a_workspace_marker() {
    // Observed by hand from runx-cli 0.8.2 at 3c8315b9: with `pnpm-workspace.yaml` at the root
    // and the schema at `skills/demo/dist/packets/plan.json`, `runx skill inspect` said `ok`,
    // `runx harness` passed with `decision: go` and with `decision: 7` failed the case
    // (`apply-plan: expected status sealed, got failure`).
    let at = "skills/demo/dist/packets/plan.json";
    let dir = workspace(true, "{decision: go}", "{decision: go}", Some((at, PLAN)));
    let report = lab("validate", dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
    let dir = workspace(true, "{decision: go}", "{decision: 7}", Some((at, PLAN)));
    let report = lab("validate", dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    // As Runx's report: the status only, and no receipt for a case stopped at its inputs.
    assert_eq!(
        report["harness"]["assertion_errors"],
        serde_json::json!(["apply-plan: expected status sealed, got failure"]),
        "{report}"
    );
    assert_eq!(
        report["harness"]["receipt_ids"],
        serde_json::json!([]),
        "{report}"
    );
}
