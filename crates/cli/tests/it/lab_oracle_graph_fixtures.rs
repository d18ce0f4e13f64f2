//! A `kind: graph` fixture replayed as the real Runx replays it: the graph file its `target`
//! names runs on the fixture's `inputs`, its inline processes in the graph file's folder, its
//! trace is its steps, and its result is only what `result_from` names.
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2:
//! `runx-runtime/src/execution/harness/runner.rs` (`run_graph_fixture`,
//! `replay_output_from_graph`) and `execution/runner.rs` (`graph_run_result`, which builds a
//! result from the `result_from` steps only).
//!
//! OBSERVED from the release binary, run on 2026-12-08 with `runx harness skills/demo --json`
//! from the workspace root (a `pnpm-workspace.yaml` there, `HOME` and `RUNX_HOME` a scratch
//! folder) on the layouts below; each test quotes what it said. Runx words a fixture file's
//! failures apart from an inline case's: `<absolute fixture path>: harness expectation
//! mismatch at …; receipt=<its receipt id>; disposition=Closed; reason=graph_closed;
//! summary=graph flow completed; skill_value=<the result>; skill_failure=`, and lists a failing
//! fixture in neither `case_names`, `graph_case_count` nor `receipt_ids`. The path and the
//! receipt id are the run's own: the Lab names the fixture under the package folder it was
//! given and the receipt it sealed, which these tests read back as `<fixture>` and
//! `sha256:…`.

use serde_json::Value;

/// `ok.cjs <id>` prints `{note: "ok <id>", inputs}`, its inputs as Runx handed them; `ok.cjs
/// fail` writes `boom` to stderr and exits 3.
const OK: &str = "const a = process.argv.slice(2);\nif (a[0] === 'fail') { \
                  process.stderr.write('boom'); process.exit(3); }\nconst inputs = \
                  JSON.parse(process.env.RUNX_INPUTS_JSON || '{}');\n\
                  process.stdout.write(JSON.stringify({note: `ok ${a[0]}`, inputs}));\n";

/// An inline step `id` running `../ok.cjs <arg>`: the path is relative to the graph file's
/// folder, where Runx runs it (from the package's root it says `Cannot find module
/// '…/skills/demo/graphs/ok.cjs'` for `./ok.cjs`).
fn step(id: &str, arg: &str, extra: &str) -> String {
    format!(
        "  - id: {id}\n{extra}    run: {{type: cli-tool, command: node, args: [../ok.cjs, {arg}], \
         outputs: {{note: string, inputs: object}}}}\n"
    )
}

/// `a`, then `b` reading `a.note` as its input `prev`.
fn two_steps() -> String {
    format!(
        "{}{}",
        step("a", "a", ""),
        step("b", "b", "    context:\n      prev: a.note\n")
    )
}

/// `skills/demo`, whose one runner is the cli-tool `solo` (which the fixture must not run),
/// with `graphs/flow.yaml` holding `graph` and `fixtures/g.yaml` the graph fixture expecting
/// `expect` (YAML at the expect block's keys' indentation).
fn workspace(graph: &str, expect: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("skills/demo");
    std::fs::create_dir_all(package.join("fixtures")).unwrap();
    std::fs::create_dir_all(package.join("graphs")).unwrap();
    std::fs::write(dir.path().join("pnpm-workspace.yaml"), "").unwrap();
    std::fs::write(
        package.join("SKILL.md"),
        "---\nname: demo\ndescription: Note a topic.\n---\nNote the topic.\n",
    )
    .unwrap();
    std::fs::write(
        package.join("X.yaml"),
        "skill: demo\nversion: \"0.1.0\"\ncatalog:\n  kind: skill\n  audience: public\n  \
         visibility: internal\n  role: canonical\nrunners:\n  solo:\n    default: true\n    \
         type: cli-tool\n    command: node\n    args: [./ok.cjs, solo]\n    inputs:\n      \
         topic:\n        type: string\n        required: false\n",
    )
    .unwrap();
    std::fs::write(package.join("ok.cjs"), OK).unwrap();
    std::fs::write(
        package.join("graphs/flow.yaml"),
        format!("name: flow\n{graph}"),
    )
    .unwrap();
    std::fs::write(
        package.join("fixtures/g.yaml"),
        format!(
            "name: g\nkind: graph\ntarget: ../graphs/flow.yaml\ninputs:\n  topic: x\nexpect:\n\
             {expect}"
        ),
    )
    .unwrap();
    dir
}

/// The harness report, and its assertion errors with the fixture's absolute path read back
/// as `<fixture>` and each receipt id as `sha256:…`.
fn harness(dir: &tempfile::TempDir) -> (Value, Vec<String>) {
    let fixture = format!("{}/skills/demo/fixtures/g.yaml", dir.path().display());
    let report = crate::util::lab_json("validate", dir.path(), "skills/demo");
    let harness = report["harness"].clone();
    assert_eq!(harness["attempted"], true, "{report}");
    let errors = harness["assertion_errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(Value::as_str)
                .map(|error| without_receipt_id(&error.replace(&fixture, "<fixture>")))
                .collect()
        })
        .unwrap_or_default();
    (harness, errors)
}

/// `error` with the id after `receipt=` read back as `sha256:…`, once it is seen to be one.
fn without_receipt_id(error: &str) -> String {
    let Some((head, tail)) = error.split_once("; receipt=sha256:") else {
        return error.to_owned();
    };
    let (id, rest) = tail.split_at(64);
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{error}");
    format!("{head}; receipt=sha256:…{rest}")
}

/// Each error cut before its `skill_value`: the Lab hands a graph step the fixture's `inputs`
/// beside its `context` (`{"prev":"ok a","topic":"x"}`) where Runx hands it its `context`
/// only, so a graph fixture's result differs there.
fn up_to_skill_value(errors: &[String]) -> Vec<&str> {
    errors
        .iter()
        .map(|error| {
            error
                .split_once("; skill_value=")
                .map_or(error.as_str(), |(head, _)| head)
        })
        .collect()
}

/// A failing fixture is in none of the report's lists.
fn assert_unlisted(report: &Value) {
    assert_eq!(report["case_count"], 1, "{report}");
    assert_eq!(report["case_names"], serde_json::json!([]), "{report}");
    assert_eq!(report["receipt_ids"], serde_json::json!([]), "{report}");
    assert_eq!(report["graph_case_count"], 0, "{report}");
    assert_eq!(report["status"], "failed", "{report}");
}

#[test]
fn a_two_step_graph_fixture_with_context_runs_its_graph_file_and_passes() {
    // OBSERVED (`result_from: [b]`, `b` reading `a.note`; expecting `sealed`, `steps: [a, b]`,
    // `step_outputs.a.subset: {note: ok a}`, `output.subset: {note: ok b, inputs: {prev: ok
    // a}}`): `"status": "passed"`, `case_names: ["g"]`, `graph_case_count: 1`, one receipt;
    // a mismatch on this graph quotes its receipt's `reason=graph_closed`, not `flow_closed`.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let expect = "  status: sealed\n  steps: [a, b]\n  step_outputs:\n    a: {subset: {note: ok \
                  a}}\n  output:\n    subset: {note: ok b, inputs: {prev: ok a}}\n";
    let dir = workspace(&graph, expect);
    let (report, errors) = harness(&dir);
    assert_eq!(
        report["receipt_ids"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    let receipts = crate::util::sealed_receipts(dir.path());
    assert!(
        receipts.lines().any(|line| line == "graph_closed"),
        "{receipts}"
    );
    assert_eq!(errors, Vec::<String>::new(), "{report}");
    assert_eq!(report["status"], "passed", "{report}");
    assert_eq!(report["case_names"], serde_json::json!(["g"]), "{report}");
    assert_eq!(report["graph_case_count"], 1, "{report}");
}

#[test]
fn a_graph_fixture_trace_is_the_graph_files_steps() {
    // OBSERVED (expecting `steps: [a, c]`): `<fixture path>: harness expectation mismatch at
    // expect.steps: expected a,c, actual a,b; receipt=sha256:…; disposition=Closed;
    // reason=graph_closed; summary=graph flow completed; skill_value={"inputs":{"prev":"ok
    // a"},"note":"ok b"}; skill_failure=`, with empty `case_names` and `receipt_ids` and a
    // `graph_case_count` of 0.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let (report, errors) = harness(&workspace(&graph, "  status: sealed\n  steps: [a, c]\n"));
    assert_eq!(
        up_to_skill_value(&errors),
        [
            "<fixture>: harness expectation mismatch at expect.steps: expected a,c, actual a,b; \
             receipt=sha256:…; disposition=Closed; reason=graph_closed; summary=graph flow \
             completed"
        ]
    );
    assert_unlisted(&report);
}

#[test]
fn a_graph_fixture_output_subset_mismatch_names_the_first_differing_key() {
    // OBSERVED (expecting `output.subset: {note: ok b, inputs: {prev: nope}}`): `harness
    // expectation mismatch at expect.output.subset.inputs.prev: expected "nope", actual "ok
    // a"; …; skill_value={"inputs":{"prev":"ok a"},"note":"ok b"}`: `b` got only its
    // `context`, not the fixture's `topic`.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let expect = "  status: sealed\n  output:\n    subset: {note: ok b, inputs: {prev: nope}}\n";
    let (report, errors) = harness(&workspace(&graph, expect));
    assert_eq!(
        up_to_skill_value(&errors),
        [
            "<fixture>: harness expectation mismatch at expect.output.subset.inputs.prev: \
             expected \"nope\", actual \"ok a\"; receipt=sha256:…; disposition=Closed; \
             reason=graph_closed; summary=graph flow completed"
        ]
    );
    assert_unlisted(&report);
}

#[test]
fn a_graph_fixture_without_result_from_answers_null_not_its_last_step() {
    // OBSERVED (one step `a`, no `result_from`, expecting `output.exact: {note: nope}`):
    // `harness expectation mismatch at expect.output.exact: expected {"note":"nope"}, actual
    // null; …; skill_value=`.
    let graph = format!("steps:\n{}", step("a", "a", ""));
    let expect = "  status: sealed\n  output:\n    exact: {note: nope}\n";
    let (report, errors) = harness(&workspace(&graph, expect));
    assert_eq!(
        errors,
        [
            "<fixture>: harness expectation mismatch at expect.output.exact: expected \
             {\"note\":\"nope\"}, actual null; receipt=sha256:…; disposition=Closed; \
             reason=graph_closed; summary=graph flow completed; skill_value=; skill_failure="
        ]
    );
    assert_unlisted(&report);
}

#[test]
fn a_graph_fixture_whose_step_exits_non_zero_fails_whatever_its_expected_status() {
    // OBSERVED (`a`, then `b` running `ok.cjs fail`), expecting `status: failure` and again
    // expecting `status: sealed`: both `<fixture path>: skill 'b' failed: boom`, no case name,
    // no receipt and a `graph_case_count` of 0: Runx fails the fixture itself.
    let graph = format!("steps:\n{}{}", step("a", "a", ""), step("b", "fail", ""));
    for status in ["failure", "sealed"] {
        let (report, errors) = harness(&workspace(&graph, &format!("  status: {status}\n")));
        assert_eq!(errors, ["<fixture>: skill 'b' failed: boom"], "{status}");
        assert_unlisted(&report);
    }
}

/// [`workspace`] whose `fixtures/g.yaml` is instead the `kind: skill` fixture `fixture`, with
/// the runner `bad` (`ok.cjs fail`) beside `solo`.
fn skill_workspace(fixture: &str) -> tempfile::TempDir {
    let dir = workspace("steps: []\n", "  status: sealed\n");
    let package = dir.path().join("skills/demo");
    let profile = std::fs::read_to_string(package.join("X.yaml")).unwrap();
    std::fs::write(
        package.join("X.yaml"),
        format!(
            "{profile}  bad:\n    type: cli-tool\n    command: node\n    args: [./ok.cjs, fail]\n"
        ),
    )
    .unwrap();
    std::fs::write(
        package.join("fixtures/g.yaml"),
        format!("name: g\nkind: skill\ntarget: ..\n{fixture}"),
    )
    .unwrap();
    dir
}

#[test]
fn a_skill_fixture_mismatch_names_its_path_and_its_runners_receipt() {
    // OBSERVED (runner `solo` on `topic: x`, expecting `output.subset: {note: nope}`): `<fixture
    // path>: harness expectation mismatch at expect.output.subset.note: expected "nope", actual
    // "ok solo"; receipt=sha256:…; disposition=Closed; reason=process_closed; summary=step solo
    // completed; skill_value={"inputs":{"topic":"x"},"note":"ok solo"}; skill_failure=`, and
    // the fixture in none of the report's lists.
    let dir = skill_workspace(
        "runner: solo\ninputs:\n  topic: x\nexpect:\n  status: sealed\n  output:\n    subset: \
         {note: nope}\n",
    );
    let (report, errors) = harness(&dir);
    assert_eq!(
        errors,
        [
            "<fixture>: harness expectation mismatch at expect.output.subset.note: expected \
             \"nope\", actual \"ok solo\"; receipt=sha256:…; disposition=Closed; \
             reason=process_closed; summary=step solo completed; \
             skill_value={\"inputs\":{\"topic\":\"x\"},\"note\":\"ok solo\"}; skill_failure="
        ]
    );
    assert_unlisted(&report);
}

#[test]
fn a_failed_skill_fixtures_mismatch_quotes_its_stderr_as_skill_failure() {
    // OBSERVED (runner `bad`, exiting 3 after `boom` on stderr), expecting `failure` and
    // `output.exact: {note: nope}`: `<fixture path>: harness expectation mismatch at
    // expect.output.exact: expected {"note":"nope"}, actual ""; receipt=sha256:…;
    // disposition=Failed; reason=process_failed; summary=step bad completed; skill_value=;
    // skill_failure=boom`; expecting `sealed`: `… at expect.status: expected sealed, actual
    // failure; …` with the same tail. Unlike a graph fixture's, the failed run is sealed.
    let dir = skill_workspace(
        "runner: bad\nexpect:\n  status: failure\n  output:\n    exact: {note: nope}\n",
    );
    let (report, errors) = harness(&dir);
    let tail = "receipt=sha256:…; disposition=Failed; reason=process_failed; summary=step bad \
                completed; skill_value=; skill_failure=boom";
    assert_eq!(
        errors,
        [format!(
            "<fixture>: harness expectation mismatch at expect.output.exact: expected \
             {{\"note\":\"nope\"}}, actual \"\"; {tail}"
        )]
    );
    assert_unlisted(&report);
    let dir = skill_workspace("runner: bad\nexpect:\n  status: sealed\n");
    let (report, errors) = harness(&dir);
    assert_eq!(
        errors,
        [format!(
            "<fixture>: harness expectation mismatch at expect.status: expected sealed, actual \
             failure; {tail}"
        )]
    );
    assert_unlisted(&report);
}

#[test]
fn a_passing_skill_fixture_beside_a_failing_one_is_the_only_one_listed() {
    // OBSERVED (`fixtures/g.yaml` passing on runner `solo`, `fixtures/h.yaml` failing on
    // `bad` while expecting `sealed`): `case_count: 2`, `case_names: ["g"]`, one receipt id,
    // one assertion error naming `h.yaml`.
    let dir = skill_workspace("runner: solo\nexpect:\n  status: sealed\n");
    std::fs::write(
        dir.path().join("skills/demo/fixtures/h.yaml"),
        "name: h\nkind: skill\ntarget: ..\nrunner: bad\nexpect:\n  status: sealed\n",
    )
    .unwrap();
    let (report, errors) = harness(&dir);
    assert_eq!(report["case_count"], 2, "{report}");
    assert_eq!(report["case_names"], serde_json::json!(["g"]), "{report}");
    assert_eq!(
        report["receipt_ids"].as_array().map(Vec::len),
        Some(1),
        "{report}"
    );
    assert_eq!(errors.len(), 1, "{report}");
    let h = format!("{}/skills/demo/fixtures/h.yaml: ", dir.path().display());
    assert!(errors[0].starts_with(&h), "{report}");
}

#[test]
fn a_skill_fixture_whose_run_fails_before_sealing_fails_even_expecting_failure() {
    // OBSERVED (runner `con` declaring `outputs: {missing: string}` while `ok.cjs` prints
    // `{note, inputs}`, expecting `failure`): `<fixture path>: skill 'con' failed: runner
    // output contract violation at $.inputs: Additional properties are not allowed ('inputs',
    // 'note' were unexpected)`, the fixture unlisted; an inline case expecting `failure`
    // passes there.
    let dir = skill_workspace("runner: con\nexpect:\n  status: failure\n");
    let package = dir.path().join("skills/demo");
    let profile = std::fs::read_to_string(package.join("X.yaml")).unwrap();
    std::fs::write(
        package.join("X.yaml"),
        format!(
            "{profile}  con:\n    type: cli-tool\n    command: node\n    args: [./ok.cjs, con]\n    \
             outputs:\n      missing: string\n"
        ),
    )
    .unwrap();
    let (report, errors) = harness(&dir);
    assert_eq!(
        errors,
        [
            "<fixture>: skill 'con' failed: runner output contract violation at $.inputs: \
             Additional properties are not allowed ('inputs', 'note' were unexpected)"
        ]
    );
    assert_unlisted(&report);
}
