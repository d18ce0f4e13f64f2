//! The inspection's `semantic_report`, held to what the real Runx printed.
//!
//! Each test lays out one of the shared packages (`shared/data/runx/`), changed by one thing,
//! in a fresh scratch workspace, runs `mindrune lab inspect --json` on it and compares
//! `target_inspection.semantic_report` (or the refusal) with the answer `runx skill inspect
//! <package> --json` gave on the same files. The expected JSON was observed from runx-cli 0.8.2
//! (`AutoMerchLab/runx` at commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand
//! with the nightly toolchain, run by hand on 2026-12-07); no Runx binary or recipe is kept.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use super::lab_oracle_cases::{lay_out, shared};

/// `package` (a folder under `shared/data/runx/`) laid out at `skills/<name>` of a fresh
/// scratch workspace, each of its files passed through `edit(path, text)`.
fn workspace(
    package: &str,
    name: &str,
    edit: impl Fn(&str, String) -> String,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("skills").join(name);
    lay_out(&shared().join("data/runx").join(package), &target);
    edit_files(&target, &target, &edit);
    dir
}

fn edit_files(root: &Path, folder: &Path, edit: &impl Fn(&str, String) -> String) {
    for entry in fs::read_dir(folder).unwrap().map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            edit_files(root, &path, edit);
            continue;
        }
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned();
        let text = fs::read_to_string(&path).unwrap();
        let edited = edit(&relative, text.clone());
        if edited != text {
            fs::write(&path, edited).unwrap();
        }
    }
}

/// `mindrune lab inspect --json`'s `target_inspection` of `skills/<name>` in `scratch`.
fn inspect(scratch: &Path, name: &str) -> Value {
    let output = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "inspect", "--json", "--repo-root"])
        .arg(scratch)
        .args(["--target-dir", &format!("skills/{name}")])
        .env("MINDRUNE_HOME", scratch.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .current_dir(scratch)
        .output()
        .unwrap();
    let context: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "lab inspect printed no JSON ({err}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    context["target_inspection"].clone()
}

fn internal(_: &str, text: String) -> String {
    text.replace("visibility: public", "visibility: internal")
}

/// hello-world (with its `run.mjs`, as the oracle's `secret-in-notes` case holds it) whose
/// catalog promises an execute with provider readback, an adapter and an approval, which a
/// `node run.mjs` runner reaches none of.
fn hello_world_promising_everything(visibility: &'static str) -> tempfile::TempDir {
    workspace(
        "oracle/cases/secret-in-notes/package",
        "hello-world",
        move |path, text| {
            if path != "X.yaml" {
                return text;
            }
            text.replace(
                "  visibility: public\n  role: canonical\n",
                &format!(
                    "  visibility: {visibility}\n  role: canonical\n  execution: execute\n  \
                 completion: provider_readback\n  requires_adapter: true\n  approval: required\n"
                ),
            )
        },
    )
}

/// web-fetch whose graph returns a second step that does not read the fetch.
fn web_fetch_returning_a_detached_step(visibility: &'static str) -> tempfile::TempDir {
    workspace("packages/web-fetch", "web-fetch", move |path, text| {
        if path != "X.yaml" {
            return text;
        }
        text.replace("visibility: public", &format!("visibility: {visibility}"))
            .replace("result_from: [fetch]", "result_from: [report]")
            + "        - id: report\n          label: summarise without reading the fetch\n          \
               tool: runx.skill.inspect\n          inputs:\n            target_dir: \"$input.url\"\n"
    })
}

/// web-fetch whose default runner (and its fixtures' runner) is renamed `demo`.
fn web_fetch_with_a_demo_default(visibility: &'static str) -> tempfile::TempDir {
    workspace("packages/web-fetch", "web-fetch", move |path, text| {
        if path == "X.yaml" {
            text.replace("visibility: public", &format!("visibility: {visibility}"))
                .replace("\n  web-fetch:\n", "\n  demo:\n")
        } else {
            text.replace("\nrunner: web-fetch\n", "\nrunner: demo\n")
        }
    })
}

const UNEVALUATED: &str = r#"{"evaluated": false, "coldSelection": false, "standaloneDefault":
    false, "composedReuse": false, "providerProof": "none", "suppliedAgentAnswers": false}"#;

fn unevaluated() -> Value {
    serde_json::from_str(UNEVALUATED).unwrap()
}

const PLANNING: &str = "make the default runner reach the advertised terminal operation; retain this runner as an explicit plan or inspect runner";
const READBACK: &str = "route the default execution closure through provider.read/provider.mutate and return its durable readback, or correct completion metadata";
const ADAPTER: &str = "make a declared provider or adapter boundary reachable from the default runner, or remove requires_adapter";
const APPROVAL: &str = "place one exact approval at the reachable consequential mutation, or correct approval metadata";
const MOCK: &str = "move mock execution to an explicit test runner and select a real or truthfully blocked production default";

#[test]
fn an_internal_checklist_gate_reports_no_diagnostics_and_an_unevaluated_readiness() {
    let dir = workspace(
        "oracle/cases/apply-c1-stale-base-improve/package",
        "checklist-gate",
        internal,
    );
    let inspection = inspect(dir.path(), "checklist-gate");
    assert_eq!(inspection["status"], "ok", "{inspection}");
    assert_eq!(
        inspection["semantic_report"],
        json!({
            "mode": "enforced",
            "skill": "checklist-gate",
            "defaultRunner": "gate",
            "diagnostics": [],
            "readiness": unevaluated(),
        })
    );
}

#[test]
fn the_public_web_fetch_reports_the_journeys_that_prove_its_default() {
    let dir = workspace("packages/web-fetch", "web-fetch", |_, text| text);
    let inspection = inspect(dir.path(), "web-fetch");
    assert_eq!(
        inspection["semantic_report"],
        json!({
            "mode": "enforced",
            "skill": "web-fetch",
            "defaultRunner": "web-fetch",
            "diagnostics": [],
            "readiness": {
                "evaluated": true,
                "coldSelection": true,
                "standaloneDefault": true,
                "composedReuse": true,
                "providerProof": "harness",
                "suppliedAgentAnswers": false,
                "coldSelectionConfusors": ["extract", "research"],
                "standaloneCase": "fetch-text-with-default-public-hosts",
                "composedCase": "fetch-text-with-default-public-hosts",
            },
        })
    );
}

#[test]
fn an_internal_cli_tool_promising_execute_readback_adapter_and_approval_reports_four_codes() {
    let dir = hello_world_promising_everything("internal");
    let inspection = inspect(dir.path(), "hello-world");
    let diagnostic = |code: &str, correction: &str| {
        json!({
            "code": code,
            "skill": "hello-world",
            "runner": "default",
            "claimedExecution": "execute",
            "claimedCompletion": "provider_readback",
            "observed": ["declared_artifact", "source:cli-tool"],
            "requiredCorrection": correction,
        })
    };
    assert_eq!(
        inspection["semantic_report"],
        json!({
            "mode": "enforced",
            "skill": "hello-world",
            "defaultRunner": "default",
            "diagnostics": [
                diagnostic("default_runner_is_planning_only", PLANNING),
                diagnostic("provider_readback_unreachable", READBACK),
                diagnostic("adapter_unreachable", ADAPTER),
                diagnostic("approval_unreachable", APPROVAL),
            ],
            "readiness": unevaluated(),
        })
    );
}

#[test]
fn the_same_promises_in_a_public_catalog_refuse_the_package_with_the_four_codes() {
    let dir = hello_world_promising_everything("public");
    let inspection = inspect(dir.path(), "hello-world");
    assert_eq!(inspection["status"], "invalid", "{inspection}");
    let first = inspection["error"]
        .as_str()
        .unwrap()
        .lines()
        .next()
        .unwrap();
    assert_eq!(
        first,
        format!(
            "skill package validation failed: X.yaml.catalog: catalog semantic enforcement \
             rejected the package: default_runner_is_planning_only on runner \"default\": \
             {PLANNING}; provider_readback_unreachable on runner \"default\": {READBACK}; \
             adapter_unreachable on runner \"default\": {ADAPTER}; approval_unreachable on \
             runner \"default\": {APPROVAL}"
        )
    );
}

#[test]
fn a_graph_whose_result_does_not_read_the_fetch_reports_provider_readback_unreachable() {
    let dir = web_fetch_returning_a_detached_step("internal");
    let inspection = inspect(dir.path(), "web-fetch");
    assert_eq!(
        inspection["semantic_report"],
        json!({
            "mode": "enforced",
            "skill": "web-fetch",
            "defaultRunner": "web-fetch",
            "diagnostics": [{
                "code": "provider_readback_unreachable",
                "skill": "web-fetch",
                "runner": "web-fetch",
                "claimedExecution": "read",
                "claimedCompletion": "provider_readback",
                "observed": [
                    "native_network_boundary",
                    "provider_boundary_reachable",
                    "tool:runx.skill.inspect",
                    "tool:web.fetch",
                ],
                "requiredCorrection": READBACK,
            }],
            "readiness": unevaluated(),
        })
    );
    let dir = web_fetch_returning_a_detached_step("public");
    let inspection = inspect(dir.path(), "web-fetch");
    assert_eq!(
        inspection["error"]
            .as_str()
            .unwrap()
            .lines()
            .next()
            .unwrap(),
        format!(
            "skill package validation failed: X.yaml.catalog: catalog semantic enforcement \
             rejected the package: provider_readback_unreachable on runner \"web-fetch\": \
             {READBACK}"
        )
    );
}

#[test]
fn a_demo_default_is_refused_when_public_and_unjudged_when_internal() {
    let dir = web_fetch_with_a_demo_default("public");
    let inspection = inspect(dir.path(), "web-fetch");
    assert_eq!(
        inspection["error"]
            .as_str()
            .unwrap()
            .lines()
            .next()
            .unwrap(),
        format!(
            "skill package validation failed: X.yaml.catalog: catalog semantic enforcement \
             rejected the package: mock_default on runner \"demo\": {MOCK}"
        )
    );
    let dir = web_fetch_with_a_demo_default("internal");
    let inspection = inspect(dir.path(), "web-fetch");
    assert_eq!(
        inspection["semantic_report"],
        json!({
            "mode": "enforced",
            "skill": "web-fetch",
            "defaultRunner": "demo",
            "diagnostics": [],
            "readiness": unevaluated(),
        })
    );
}
