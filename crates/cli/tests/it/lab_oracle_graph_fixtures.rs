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
//! failures apart from an inline case's (`<absolute fixture path>: harness expectation
//! mismatch at …; receipt=…; disposition=Closed; reason=graph_closed; summary=graph flow
//! completed; skill_value=…; skill_failure=`), which the Lab does not yet: these tests pin the
//! mismatch itself, after the Lab's `g: `.

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

/// The harness report, and its assertion errors.
fn harness(dir: &tempfile::TempDir) -> (Value, Vec<String>) {
    let report = crate::util::lab_json("validate", dir.path(), "skills/demo");
    let harness = report["harness"].clone();
    assert_eq!(harness["attempted"], true, "{report}");
    let errors = harness["assertion_errors"]
        .as_array()
        .map(|errors| {
            errors
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    (harness, errors)
}

#[test]
fn a_two_step_graph_fixture_with_context_runs_its_graph_file_and_passes() {
    // OBSERVED (`result_from: [b]`, `b` reading `a.note`; expecting `sealed`, `steps: [a, b]`,
    // `step_outputs.a.subset: {note: ok a}`, `output.subset: {note: ok b, inputs: {prev: ok
    // a}}`): `"status": "passed"`, `case_names: ["g"]`, `graph_case_count: 1`, one receipt.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let expect = "  status: sealed\n  steps: [a, b]\n  step_outputs:\n    a: {subset: {note: ok \
                  a}}\n  output:\n    subset: {note: ok b, inputs: {prev: ok a}}\n";
    let (report, errors) = harness(&workspace(&graph, expect));
    assert_eq!(errors, Vec::<String>::new(), "{report}");
    assert_eq!(report["status"], "passed", "{report}");
    assert_eq!(report["case_names"], serde_json::json!(["g"]), "{report}");
    assert_eq!(report["graph_case_count"], 1, "{report}");
}

#[test]
fn a_graph_fixture_trace_is_the_graph_files_steps() {
    // OBSERVED (expecting `steps: [a, c]`): `harness expectation mismatch at expect.steps:
    // expected a,c, actual a,b; receipt=…`.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let (_, errors) = harness(&workspace(&graph, "  status: sealed\n  steps: [a, c]\n"));
    assert_eq!(
        errors,
        ["g: harness expectation mismatch at expect.steps: expected a,c, actual a,b"]
    );
}

#[test]
fn a_graph_fixture_output_subset_mismatch_names_the_first_differing_key() {
    // OBSERVED (expecting `output.subset: {note: ok b, inputs: {prev: nope}}`): `harness
    // expectation mismatch at expect.output.subset.inputs.prev: expected "nope", actual "ok
    // a"; …; skill_value={"inputs":{"prev":"ok a"},"note":"ok b"}`: `b` got only its
    // `context`, not the fixture's `topic`.
    let graph = format!("result_from: [b]\nsteps:\n{}", two_steps());
    let expect = "  status: sealed\n  output:\n    subset: {note: ok b, inputs: {prev: nope}}\n";
    let (_, errors) = harness(&workspace(&graph, expect));
    assert_eq!(
        errors,
        [
            "g: harness expectation mismatch at expect.output.subset.inputs.prev: expected \
             \"nope\", actual \"ok a\""
        ]
    );
}

#[test]
fn a_graph_fixture_without_result_from_answers_null_not_its_last_step() {
    // OBSERVED (one step `a`, no `result_from`, expecting `output.exact: {note: nope}`):
    // `harness expectation mismatch at expect.output.exact: expected {"note":"nope"}, actual
    // null; …; skill_value=`.
    let graph = format!("steps:\n{}", step("a", "a", ""));
    let expect = "  status: sealed\n  output:\n    exact: {note: nope}\n";
    let (_, errors) = harness(&workspace(&graph, expect));
    assert_eq!(
        errors,
        [
            "g: harness expectation mismatch at expect.output.exact: expected \
             {\"note\":\"nope\"}, actual null"
        ]
    );
}

#[test]
fn a_graph_fixture_whose_step_exits_non_zero_fails_with_runxs_message() {
    // OBSERVED (`a`, then `b` running `ok.cjs fail`, expecting `failure`): `<fixture path>:
    // skill 'b' failed: boom`, no case name and no receipt: Runx fails the fixture itself.
    // The Lab seals a failed case whose result carries that message.
    let graph = format!("steps:\n{}{}", step("a", "a", ""), step("b", "fail", ""));
    let expect = "  status: failure\n  output:\n    exact: {note: nope}\n";
    let (_, errors) = harness(&workspace(&graph, expect));
    assert_eq!(
        errors,
        [
            "g: harness expectation mismatch at expect.output.exact: expected \
             {\"note\":\"nope\"}, actual {\"code\":\"runtime_error\",\"message\":\"skill 'b' \
             failed: boom\"}"
        ]
    );
}
