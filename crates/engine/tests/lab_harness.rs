//! Harness replay over the real Runx packages in `shared/data/runx/packages`, plus the sandbox
//! and isolation guarantees the replay makes.
//!
//! The packages are read from the shared folder (never copied into the repository); the
//! JavaScript modules they lack are ours, under `tests/data/runx-modules/<package>/`, and each
//! test assembles package plus module in a temporary folder before reading it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mindrune_core::{SnapshotFile, sort_in_walk_order};
use mindrune_engine::{
    CaseOutcome, CaseSealer, CaseStatus, HarnessOptions, HarnessRun, HarnessStatus, NoNativeTools,
    PacketCatalog, declared_cases, run_harness,
};
use mindrune_engine::{JsError, JsInvocation, JsLimits, run_module};
use serde_json::{Value, json};

fn shared_dir() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    )
}

fn modules_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/runx-modules"
    ))
}

/// A package assembled in a temporary folder: the shared files plus our module, if any.
struct Package {
    _dir: tempfile::TempDir,
    files: Vec<SnapshotFile>,
    profile: Value,
    cases: Vec<Value>,
    /// The packet schemas its replay finds (Runx's `dist/packets` of the workspace).
    packets: PacketCatalog,
}

/// Writes Runx's packet schemas for the shared packages into `<workspace>/dist/packets`, with
/// the `pnpm-workspace.yaml` that makes `workspace` the packages' source workspace. Runx's
/// repository generates `dist/packets/runx.skill.*.schema.json` from the schemas in
/// `shared/data/runx/schemas/` by adding `x-runx-packet-id` (the schema's `x-runx-schema`);
/// weather-forecast's is the one the oracle's run had (its `workspace/dist/packets`).
fn write_runx_packets(workspace: &Path) {
    let packets = workspace.join("dist/packets");
    std::fs::create_dir_all(&packets).expect("create dist/packets");
    std::fs::write(workspace.join("pnpm-workspace.yaml"), "packages: []\n").expect("write");
    let schemas = shared_dir().join("data/runx/schemas");
    for entry in std::fs::read_dir(&schemas).expect("read shared schemas") {
        let path = entry.expect("dir entry").path();
        let mut schema: Value =
            serde_json::from_slice(&std::fs::read(&path).expect("read schema")).expect("JSON");
        let id = schema["x-runx-schema"].clone();
        assert!(id.is_string(), "{} has no x-runx-schema", path.display());
        schema["x-runx-packet-id"] = id;
        let name = path.file_name().expect("file name");
        std::fs::write(packets.join(name), schema.to_string()).expect("write schema");
    }
    let weather = shared_dir().join("data/runx/oracle/cases/js-import-ok/workspace/dist/packets");
    copy_tree(&weather, &packets);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create package dir");
    for entry in std::fs::read_dir(from).expect("read package dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).expect("read file"))
                .expect("write file");
        }
    }
}

fn read_tree(root: &Path, dir: &Path, files: &mut Vec<SnapshotFile>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let entry = entry.expect("dir entry");
        let path = entry.path();
        if entry.file_type().expect("file type").is_dir() {
            read_tree(root, &path, files);
        } else {
            let relative = path
                .strip_prefix(root)
                .expect("inside root")
                .to_string_lossy()
                .replace('\\', "/");
            files.push(SnapshotFile {
                path: relative,
                mode: 0o100644,
                contents: std::fs::read(&path).expect("read file"),
            });
        }
    }
}

fn yaml(text: &str) -> Value {
    yaml_serde::from_str::<Value>(text).expect("YAML parses")
}

fn package(name: &str) -> Package {
    let source = shared_dir().join("data/runx/packages").join(name);
    assert!(
        source.is_dir(),
        "missing shared package {}",
        source.display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join(name);
    copy_tree(&source, &root);
    let ours = modules_dir().join(name);
    if ours.is_dir() {
        copy_tree(&ours, &root);
    }
    let mut files = Vec::new();
    read_tree(&root, &root, &mut files);
    sort_in_walk_order(&mut files);
    let text_of = |path: &str| {
        files
            .iter()
            .find(|file| file.path == path)
            .map(|file| String::from_utf8(file.contents.clone()).expect("UTF-8"))
    };
    let profile = yaml(&text_of("X.yaml").expect("X.yaml"));
    let fixtures: Vec<(String, Value)> = files
        .iter()
        .filter(|file| file.path.starts_with("fixtures/") && file.path.ends_with(".yaml"))
        .map(|file| {
            let doc = yaml(std::str::from_utf8(&file.contents).expect("UTF-8"));
            (file.path.clone(), doc)
        })
        .collect();
    let cases = declared_cases(&profile, &fixtures);
    write_runx_packets(dir.path());
    let packets = PacketCatalog::for_package(&root);
    Package {
        _dir: dir,
        files,
        profile,
        cases,
        packets,
    }
}

/// A sealer that keeps nothing but hands out distinct ids.
#[derive(Default)]
struct MemorySealer {
    sealed: Vec<String>,
}

impl CaseSealer for MemorySealer {
    fn seal(&mut self, case: &CaseOutcome) -> Result<String, String> {
        let body = serde_json::to_vec(case).map_err(|err| err.to_string())?;
        let id = mindrune_core::sha256(&body);
        self.sealed.push(case.name.clone());
        Ok(id)
    }
}

fn replay(package: &Package, cases: &[Value]) -> HarnessRun {
    let mut sealer = MemorySealer::default();
    run_harness(
        &package.files,
        &package.profile,
        cases,
        &mut NoNativeTools,
        &mut sealer,
        &package.packets,
        &HarnessOptions::default(),
    )
}

fn outcome<'r>(run: &'r HarnessRun, name: &str) -> &'r CaseOutcome {
    run.cases
        .iter()
        .find(|case| case.name == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn hello_world_replays_its_inline_case_through_node() {
    if !node_available() {
        println!("skipped: `node` is not installed, and hello-world's runner is `node run.mjs`");
        return;
    }
    let package = package("hello-world");
    let run = replay(&package, &package.cases);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(run.report.status, HarnessStatus::Passed);
    assert_eq!(run.report.case_names, ["hello-world-smoke"]);
    assert_eq!(run.report.graph_case_count, 0);
    let smoke = outcome(&run, "hello-world-smoke");
    assert_eq!(smoke.output, json!({"message": "hello from docs"}));
    assert_eq!(smoke.reason_code, "process_closed");
}

#[test]
fn web_fetch_fixtures_replay_from_supplied_responses() {
    let package = package("web-fetch");
    let run = replay(&package, &package.cases);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(run.report.status, HarnessStatus::Passed);
    assert_eq!(run.report.case_count, 4);
    // Runx counts inline graph cases and `kind: graph` fixtures; these are `kind: skill`
    // fixtures of a graph runner.
    assert_eq!(run.report.graph_case_count, 0);
    // Runx seals no receipt for the case whose inputs fail its runner's contract.
    assert_eq!(run.report.receipt_ids.len(), 3);

    let missing = outcome(&run, "fetch-missing-url-fails-preflight");
    assert_eq!(missing.status, CaseStatus::Failure);
    assert!(missing.steps.is_empty(), "preflight runs no step");

    let text = outcome(&run, "fetch-text-with-default-public-hosts");
    let result = &text.step_outputs["fetch"]["fetch_result"]["data"];
    assert_eq!(
        result["extracted"],
        json!("HTTP Semantics defines interoperable request and response behavior.")
    );
    assert_eq!(result["policy"]["allowlist_checked"], json!(["*"]));
    assert_eq!(
        result["content_digest"],
        json!(mindrune_core::sha256(
            b"HTTP Semantics defines interoperable request and response behavior."
        ))
    );
}

#[test]
fn weather_forecast_fixtures_replay_through_the_javascript_finalizer() {
    let package = package("weather-forecast");
    let run = replay(&package, &package.cases);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(run.report.status, HarnessStatus::Passed);
    assert_eq!(run.report.case_count, 4);

    let invented = outcome(&run, "invented-period-stops");
    let validate = &invented.step_outputs["validate"];
    assert_eq!(validate["decision"], json!("needs_more_evidence"));
    assert_eq!(validate["forecast_packet"]["periods"], json!([]));
    assert_eq!(
        validate["weather_forecast_packet"]["data"]["decision"],
        json!("needs_more_evidence"),
        "wrap_as exposes the whole claim as one packet"
    );

    let packet = outcome(&run, "weather-forecast-packet");
    assert_eq!(packet.output["decision"], json!("ready"));
    assert_eq!(
        packet.output["forecast_packet"]["periods"],
        json!([{"name": "Tomorrow", "forecast": "Chance Showers", "wind": "8 mph"}])
    );

    let missing = outcome(&run, "missing-evidence-fails-before-agent");
    assert_eq!(missing.status, CaseStatus::Failure);
    assert!(missing.steps.is_empty());
    assert!(
        missing
            .error
            .as_deref()
            .is_some_and(|err| err.contains("forecast_evidence"))
    );
}

/// Without its packet schema, as Runx's harness without `dist/packets`: the three cases whose
/// `validate` step succeeds fail there; the one that stops at preflight never reaches it.
#[test]
fn weather_forecast_fails_where_its_packet_schema_is_not_found() {
    let mut package = package("weather-forecast");
    let bare = tempfile::tempdir().expect("tempdir");
    package.packets = PacketCatalog::for_package(bare.path());
    let run = replay(&package, &package.cases);
    assert_eq!(run.report.status, HarnessStatus::Failed);
    let failed: Vec<&str> = run
        .cases
        .iter()
        .filter(|case| {
            case.error.as_deref().is_some_and(|err| {
                err.starts_with(
                    "step validate: skill 'agent' failed: packet output \
                     'weather_forecast_packet' for 'runx.context.weather_forecast.v1': \
                     declared packet schema was not found; searched ",
                )
            })
        })
        .map(|case| case.name.as_str())
        .collect();
    assert_eq!(
        failed,
        [
            "invented-period-stops",
            "life-safety-refused",
            "weather-forecast-packet"
        ]
    );
    let packet = outcome(&run, "weather-forecast-packet");
    assert_eq!(
        packet.steps.last().map(|step| step.status.as_str()),
        Some("failed")
    );
}

/// The schema is enforced, not only found: an output it refuses fails the step.
#[test]
fn weather_forecast_output_the_packet_schema_refuses_fails_the_step() {
    let package = package("weather-forecast");
    let mut case = package
        .cases
        .iter()
        .find(|case| case["name"] == "weather-forecast-packet")
        .cloned()
        .expect("case");
    // A schema that wants `decision: refused`, where this case's module answers `ready`.
    let tight = json!({"x-runx-packet-id": "runx.context.weather_forecast.v1",
        "type": "object", "required": ["decision"],
        "properties": {"decision": {"const": "refused"}}});
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("packets")).expect("mkdir");
    std::fs::write(dir.path().join("packets/tight.json"), tight.to_string()).expect("write");
    let tight_package = Package {
        _dir: tempfile::tempdir().expect("tempdir"),
        files: package.files.clone(),
        profile: package.profile.clone(),
        cases: Vec::new(),
        packets: PacketCatalog::for_package(dir.path()),
    };
    case["name"] = json!("tight");
    let run = replay(&tight_package, &[case]);
    let tight = outcome(&run, "tight");
    let error = tight.error.as_deref().unwrap_or("");
    assert!(
        error.starts_with(
            "step validate: skill 'agent' failed: packet output 'weather_forecast_packet' for \
             'runx.context.weather_forecast.v1': output violates schema: "
        ),
        "{error}"
    );
}

/// Our module compares timestamps through `Date.parse`: the same instant in another ISO form
/// is the evidence's time, a different instant is an invented one.
#[test]
fn weather_forecast_module_compares_generation_times_as_instants() {
    let package = package("weather-forecast");
    let base = package
        .cases
        .iter()
        .find(|case| case["name"] == "weather-forecast-packet")
        .cloned()
        .expect("fixture");
    let draft = "/caller/answers/agent_task.weather-forecast-interpret.output/forecast_draft/forecast_packet/generated_at";

    let mut same = base.clone();
    same["name"] = json!("same-instant");
    *same.pointer_mut(draft).expect("draft time") = json!("2026-06-09T02:00:00+02:00");

    let mut other = base;
    other["name"] = json!("other-instant");
    *other.pointer_mut(draft).expect("draft time") = json!("2026-06-08T23:00:00Z");
    other["expect"]["step_outputs"]["validate"]["subset"]["decision"] =
        json!("needs_more_evidence");

    let run = replay(&package, &[same, other]);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(
        outcome(&run, "same-instant").output["decision"],
        json!("ready")
    );
    let stopped = &outcome(&run, "other-instant").output;
    assert_eq!(stopped["decision"], json!("needs_more_evidence"));
    assert!(
        stopped["stop_conditions"].as_array().is_some_and(
            |notes| notes.contains(&json!("draft generated_at differs from the evidence"))
        ),
        "{stopped}"
    );
}

#[test]
fn a_broken_expectation_names_the_case_and_the_json_path() {
    let package = package("weather-forecast");
    let mut case = package
        .cases
        .iter()
        .find(|case| case["name"] == "invented-period-stops")
        .cloned()
        .expect("fixture");
    case["expect"]["step_outputs"]["validate"]["subset"]["decision"] = json!("ready");
    let mut both = case.clone();
    both["expect"]["steps"] = json!(["interpret"]);
    // As Runx's harness, only the first mismatch is reported: `expect.steps` is judged before
    // `expect.step_outputs`.
    let run = replay(&package, &[both]);
    assert_eq!(run.report.status, HarnessStatus::Failed);
    assert_eq!(
        run.report.assertion_errors,
        [
            "invented-period-stops: harness expectation mismatch at expect.steps: expected interpret, actual interpret,validate"
        ]
    );
    let run = replay(&package, &[case]);
    assert_eq!(run.report.status, HarnessStatus::Failed);
    assert_eq!(
        run.report.assertion_errors,
        [
            "invented-period-stops: harness expectation mismatch at expect.step_outputs.validate.subset.decision: expected \"ready\", actual \"needs_more_evidence\""
        ]
    );
    assert_eq!(run.report.assertion_error_count, 1);
}

#[test]
fn agent_answers_are_oracles_and_a_missing_answer_needs_the_agent() {
    let package = package("weather-forecast");
    let base = package
        .cases
        .iter()
        .find(|case| case["name"] == "weather-forecast-packet")
        .cloned()
        .expect("fixture");

    let mut unanswered = base.clone();
    unanswered["name"] = json!("unanswered");
    unanswered["caller"] = json!({});
    unanswered["expect"] = json!({"status": "needs_agent", "steps": ["interpret"]});

    let mut stray = base;
    stray["name"] = json!("stray-answer");
    stray["caller"]["answers"]["agent_task.unused-task.output"] = json!({"note": "never asked"});

    let run = replay(&package, &[unanswered, stray]);
    assert_eq!(outcome(&run, "unanswered").status, CaseStatus::NeedsAgent);
    assert_eq!(outcome(&run, "unanswered").state, "deferred");
    assert_eq!(
        run.report.assertion_errors,
        [
            "stray-answer: caller.answers.agent_task.unused-task.output: expected the supplied answer to be observable in the run's output, got no step or result that contains it"
        ]
    );
}

#[test]
fn report_serialises_with_runx_field_names() {
    let package = package("web-fetch");
    let run = replay(&package, &package.cases[..1]);
    let report = serde_json::to_value(&run.report).expect("report serialises");
    let mut keys: Vec<&str> = report
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "assertion_error_count",
            "assertion_errors",
            "case_count",
            "case_names",
            "graph_case_count",
            "receipt_ids",
            "status"
        ]
    );
    assert_eq!(report["status"], json!("passed"));
    let empty = replay(&package, &[]);
    assert_eq!(empty.report.status, HarnessStatus::NotDeclared);
}

fn sandbox(source: &str, limits: JsLimits) -> Result<Value, JsError> {
    let bundle = BTreeMap::from([("main.mjs".to_owned(), source.to_owned())]);
    run_module(&JsInvocation {
        bundle: &bundle,
        entry: "main.mjs",
        export: "default",
        inputs: &json!({}),
        environment: &BTreeMap::new(),
        limits,
    })
}

#[test]
fn javascript_sandbox_has_a_pinned_clock_and_no_randomness_or_network() {
    assert_eq!(
        sandbox(
            "export default () => ({ date: typeof Date, now: Date.now(), epoch: new Date().toISOString(), fetch: typeof fetch, require: typeof require, process: typeof process, performance: typeof performance });",
            JsLimits::default()
        ),
        Ok(
            json!({"date": "function", "now": 0, "epoch": "1970-01-01T00:00:00.000Z", "fetch": "undefined", "require": "undefined", "process": "undefined", "performance": "undefined"})
        )
    );
    let random = sandbox("export default () => Math.random();", JsLimits::default());
    assert!(
        matches!(&random, Err(JsError::Execution(message)) if message.contains("Math.random")),
        "{random:?}"
    );
    let date = sandbox(
        "export default () => new Date().getTime();",
        JsLimits::default(),
    );
    assert_eq!(date, Ok(json!(0)), "the clock never moves");
    let fetched = sandbox(
        "export default () => fetch('https://example.com');",
        JsLimits::default(),
    );
    assert!(matches!(fetched, Err(JsError::Execution(_))), "{fetched:?}");
}

#[test]
fn javascript_sandbox_stops_an_infinite_loop_at_the_wall_limit() {
    let limits = JsLimits::for_timeout(Some(1)).expect("1 s is allowed");
    let started = Instant::now();
    let result = sandbox("export default () => { for (;;) {} };", limits);
    let elapsed = started.elapsed();
    assert_eq!(result, Err(JsError::WallLimit(Duration::from_secs(1))));
    assert!(
        elapsed < Duration::from_millis(1800),
        "stopped after {elapsed:?}"
    );
    assert!(JsLimits::for_timeout(Some(31)).is_err());
    assert!(JsLimits::for_timeout(Some(0)).is_err());
    assert_eq!(JsLimits::default().wall, Duration::from_secs(2));
}

#[test]
fn javascript_sandbox_refuses_imports_outside_the_bundle() {
    let outside = sandbox(
        "import secret from '../outside.mjs'; export default () => secret;",
        JsLimits::default(),
    );
    assert!(
        matches!(&outside, Err(JsError::ModuleRejected(message)) if message.contains("outside.mjs")),
        "{outside:?}"
    );
    let node = sandbox(
        "import { readFileSync } from 'node:fs'; export default () => readFileSync('/etc/passwd', 'utf8');",
        JsLimits::default(),
    );
    assert!(matches!(node, Err(JsError::ModuleRejected(_))), "{node:?}");
    let absent = sandbox(
        "export default async () => (await import('./absent.mjs')).value;",
        JsLimits::default(),
    );
    assert!(absent.is_err(), "{absent:?}");
}

/// A one-runner package whose `cli-tool` runner is `command args`.
fn cli_package(command: &str, args: &[&str]) -> Package {
    let profile = json!({
        "skill": "probe",
        "runners": {"default": {
            "default": true,
            "type": "cli-tool",
            "command": command,
            "args": args,
            "inputs": {"message": {"type": "string", "required": true}},
        }},
    });
    Package {
        _dir: tempfile::tempdir().expect("tempdir"),
        files: vec![
            SnapshotFile {
                path: "SKILL.md".to_owned(),
                mode: 0o100644,
                contents: b"---\nname: probe\n---\n\nProbe.\n".to_vec(),
            },
            SnapshotFile {
                path: "X.yaml".to_owned(),
                mode: 0o100644,
                contents: Vec::new(),
            },
        ],
        profile,
        cases: Vec::new(),
        packets: PacketCatalog::empty(),
    }
}

#[test]
fn cli_tool_sees_a_scrubbed_environment_and_an_isolated_home() {
    let package = cli_package("env", &[]);
    let case =
        json!({"name": "env", "inputs": {"message": "hi there"}, "expect": {"status": "sealed"}});
    let run = replay(&package, &[case]);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    let Value::String(printed) = &run.cases[0].output else {
        panic!("env prints text, got {:?}", run.cases[0].output);
    };
    let vars: BTreeMap<&str, &str> = printed
        .lines()
        .filter_map(|line| line.split_once('='))
        .collect();
    let allowed = [
        "PATH",
        "LANG",
        "LC_ALL",
        "SHELL",
        "HOME",
        "RUNX_CWD",
        "RUNX_INPUTS_JSON",
        "RUNX_INPUT_MESSAGE",
    ];
    for name in vars.keys() {
        assert!(allowed.contains(name), "{name} leaked into the child");
    }
    assert_eq!(vars.get("RUNX_INPUT_MESSAGE"), Some(&"hi there"));
    assert_eq!(
        vars.get("RUNX_INPUTS_JSON"),
        Some(&"{\"message\":\"hi there\"}")
    );
    let home = vars.get("HOME").copied().unwrap_or_default();
    assert_ne!(Some(home), std::env::var("HOME").ok().as_deref());
    assert!(home.contains("mindrune-harness-"), "{home}");
}

#[test]
fn cases_run_in_separate_scratch_copies() {
    let package = cli_package(
        "sh",
        &[
            "-c",
            "test ! -e marker && touch marker && echo '{\"fresh\": true}'",
        ],
    );
    let first = json!({"name": "first", "inputs": {"message": "a"}, "expect": {"status": "sealed", "output": {"exact": {"fresh": true}}}});
    let mut second = first.clone();
    second["name"] = json!("second");
    let run = replay(&package, &[first, second]);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(run.report.status, HarnessStatus::Passed);
}

#[test]
fn cli_tool_is_stopped_at_its_timeout() {
    let mut package = cli_package("sleep", &["5"]);
    package.profile["runners"]["default"]["timeout_seconds"] = json!(1);
    let started = Instant::now();
    let run = replay(
        &package,
        &[json!({"name": "slow", "inputs": {"message": "a"}, "expect": {"status": "failure"}})],
    );
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert!(
        run.cases[0]
            .error
            .as_deref()
            .is_some_and(|err| err.contains("timeout"))
    );
}

/// A package with just SKILL.md, X.yaml text we never parse (the profile is given as JSON)
/// and the extra files named.
fn synthetic(profile: Value, extra: &[(&str, &str)]) -> Package {
    let mut files = vec![SnapshotFile {
        path: "SKILL.md".to_owned(),
        mode: 0o100644,
        contents: b"---\nname: synthetic\n---\n\nSynthetic.\n".to_vec(),
    }];
    for (path, contents) in extra {
        files.push(SnapshotFile {
            path: (*path).to_owned(),
            mode: 0o100644,
            contents: contents.as_bytes().to_vec(),
        });
    }
    Package {
        _dir: tempfile::tempdir().expect("tempdir"),
        files,
        profile,
        cases: Vec::new(),
        packets: PacketCatalog::empty(),
    }
}

#[test]
fn javascript_runner_gets_only_declared_environment_from_the_case() {
    let package = synthetic(
        json!({"runners": {"compute": {
            "type": "javascript",
            "default": true,
            "module": "lib/compute.mjs",
            "export": "compute",
            "environment": {"required": ["REGION"], "optional": ["TIER"]},
            "inputs": {"n": {"type": "number", "required": true}},
        }}}),
        &[
            (
                "lib/compute.mjs",
                "import { twice } from './math.mjs'; export function compute(inputs, context) { return { value: twice(inputs.n), environment: context.environment }; }",
            ),
            ("lib/math.mjs", "export const twice = (n) => n * 2;"),
        ],
    );
    let with_env = json!({"name": "with-env", "inputs": {"n": 21}, "env": {"REGION": "eu", "UNDECLARED": "x"},
        "expect": {"status": "sealed", "output": {"exact": {"value": 42, "environment": {"REGION": "eu"}}}}});
    let without =
        json!({"name": "without-env", "inputs": {"n": 1}, "expect": {"status": "failure"}});
    let run = replay(&package, &[with_env, without]);
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert!(
        outcome(&run, "without-env")
            .error
            .as_deref()
            .is_some_and(|err| err.contains("REGION"))
    );
}

/// Answers `runx.skill.plan` and `runx.skill.apply`, counting the calls.
#[derive(Default)]
struct FakeSkillTools {
    calls: Vec<String>,
}

impl mindrune_engine::NativeTools for FakeSkillTools {
    fn call(
        &mut self,
        tool: &str,
        inputs: &Value,
        scratch: &Path,
    ) -> Option<Result<Value, String>> {
        self.calls.push(tool.to_owned());
        assert!(
            scratch.join("SKILL.md").is_file(),
            "tools run in the scratch copy"
        );
        match tool {
            "runx.skill.plan" => Some(Ok(
                json!({"architecture_plan": {"ok": inputs["objective"] == "go"}}),
            )),
            "runx.skill.apply" => Some(Ok(
                json!({"apply_result": {"verdict": "unchanged", "plan": inputs["plan"]}}),
            )),
            _ => None,
        }
    }
}

#[test]
fn graph_runs_native_tools_approvals_and_when_branches() {
    let package = synthetic(
        json!({"runners": {"build": {
            "type": "graph",
            "default": true,
            "inputs": {"objective": {"type": "string", "required": true}},
            "graph": {
                "name": "build",
                "result_from": ["apply"],
                "steps": [
                    {"id": "plan", "tool": "runx.skill.plan", "inputs": {"objective": "$input.objective"}},
                    {"id": "gate", "run": "approval"},
                    {"id": "apply", "tool": "runx.skill.apply",
                     "when": {"field": "plan.architecture_plan.data.ok", "equals": true},
                     "context": {"plan": "plan.architecture_plan.data"}},
                ],
            },
        }}}),
        &[],
    );
    let approved = json!({"name": "approved", "inputs": {"objective": "go"},
        "caller": {"approvals": {"gate": true}},
        "expect": {"status": "sealed", "steps": ["plan", "gate", "apply"],
                   "receipt": {"child_receipt_count": 3, "disposition": "closed"},
                   "output": {"subset": {"apply_result": {"data": {"verdict": "unchanged", "plan": {"ok": true}}}}}}});
    let skipped = json!({"name": "skipped", "inputs": {"objective": "stop"},
        "caller": {"approvals": {"gate": true}},
        "expect": {"status": "sealed", "steps": ["plan", "gate"]}});
    let declined = json!({"name": "declined", "inputs": {"objective": "go"},
        "caller": {"approvals": {"gate": false}},
        "expect": {"status": "failure", "steps": ["plan", "gate"]}});
    let waiting = json!({"name": "waiting", "inputs": {"objective": "go"},
        "expect": {"status": "needs_agent", "steps": ["plan", "gate"]}});
    // An agent's answer is never a human approval: the gate still waits.
    let agent_approved = json!({"name": "agent-approved", "inputs": {"objective": "go"},
        "caller": {"answers": {"gate": true}},
        "expect": {"status": "needs_agent", "steps": ["plan", "gate"]}});
    let mut tools = FakeSkillTools::default();
    let mut sealer = MemorySealer::default();
    let run = run_harness(
        &package.files,
        &package.profile,
        &[approved, skipped, declined, waiting, agent_approved],
        &mut tools,
        &mut sealer,
        &package.packets,
        &HarnessOptions::default(),
    );
    assert_eq!(run.report.assertion_errors, Vec::<String>::new());
    assert_eq!(run.report.graph_case_count, 5);
    assert_eq!(
        tools.calls,
        [
            "runx.skill.plan",
            "runx.skill.apply",
            "runx.skill.plan",
            "runx.skill.plan",
            "runx.skill.plan",
            "runx.skill.plan"
        ]
    );
    assert_eq!(
        outcome(&run, "skipped")
            .steps
            .last()
            .map(|s| s.status.as_str()),
        Some("skipped")
    );
    // Runx seals no receipt for the two cases left waiting on an agent.
    assert_eq!(sealer.sealed.len(), 3);
}
