//! What a failed run answers with, held to what the real Runx said: a graph run that a step
//! fails answers with the error that ended it (`{"code": "runtime_error", "message": …}`,
//! whatever `result_from` names), so `expect.output` on a failed case reads that object; a
//! failed single-source runner answers with what it printed; a fanout branch that failed
//! while its group proceeded has `{}` as its step outputs.
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2 (`AutoMerchLab/runx` at
//! commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`): `runx-runtime/src/execution/
//! skill_front/graph.rs` (`seal_terminal_graph_skill_run`: a failed graph's result is the
//! error's `public_failure_projection`), `execution/runner/graph_engine.rs`
//! (`commit_step_run`: a terminal step failure is `skill '<step>' failed: <diagnostic>`),
//! `execution/runner.rs` (`StepOutcome::failure_message`: a process's stderr as printed, else
//! `process failed with exit code Some(<code>)`) and `skill_front/inline_harness.rs` (the
//! result and the checkpoint's step contracts the expectations read).
//!
//! OBSERVED from the release binary of that commit, run on 2026-12-08 with
//! `runx harness skills/gstep --json` from the workspace root (a `pnpm-workspace.yaml` there,
//! `HOME` and `RUNX_HOME` a scratch folder) on the layouts below, each case expecting an
//! output it cannot have so that Runx names the actual one; each test quotes what it said.

use serde_json::Value;

/// `bad.cjs` prints `boom` on stderr and exits 3; `quiet.cjs` exits 3 saying nothing;
/// `half.cjs` prints `{"note":"half"}` on stdout, then fails as `bad.cjs` does; `ok.cjs <id>`
/// prints `{note: "ok <id>", score: 0}`; `other.cjs` prints `{other: 1}`, no `note`.
const SCRIPTS: [(&str, &str); 5] = [
    (
        "bad.cjs",
        "process.stderr.write(\"boom\\n\"); process.exit(3);\n",
    ),
    ("quiet.cjs", "process.exit(3);\n"),
    (
        "half.cjs",
        "process.stdout.write(JSON.stringify({note: \"half\"})); \
         process.stderr.write(\"boom\\n\"); process.exit(3);\n",
    ),
    (
        "ok.cjs",
        "process.stdout.write(JSON.stringify({note: `ok ${process.argv[2]}`, score: 0}));\n",
    ),
    (
        "other.cjs",
        "process.stdout.write(JSON.stringify({other: 1}));\n",
    ),
];

/// A `cli-tool` source running `script` with `args` and declaring `outputs`, as a flow
/// mapping.
fn cli(script: &str, args: &str, outputs: &str) -> String {
    format!("{{type: cli-tool, command: node, args: [./{script}{args}], outputs: {outputs}}}")
}

const NOTE: &str = "{note: string}";

/// `skills/gstep` with the one case `smoke`, run by `runner` and expecting `expect` (YAML at
/// the expect block's keys' indentation), and the package's `runners` (YAML at the runners'
/// names' indentation).
fn workspace(runner: &str, expect: &str, runners: &str) -> tempfile::TempDir {
    let dir = crate::util::gstep_package(&format!(
        "    - name: smoke\n      runner: {runner}\n      inputs:\n        topic: x\n      \
         expect:\n{expect}runners:\n{runners}"
    ));
    let package = dir.path().join("skills/gstep");
    for (name, text) in SCRIPTS {
        std::fs::write(package.join(name), text).unwrap();
    }
    dir
}

/// A graph runner `name` taking its result from `result_from`, its steps given as
/// `(id, body)`, each body the step's keys after its id (YAML at the step's keys' indentation).
fn graph(name: &str, result_from: &str, steps: &[(&str, &str)]) -> String {
    let mut text = format!(
        "  {name}:\n    type: graph\n    inputs:\n      topic:\n        type: string\n        \
         required: false\n    graph:\n      name: {name}\n      result_from: [{result_from}]\n      \
         steps:\n"
    );
    for (id, body) in steps {
        text.push_str(&format!("        - id: {id}\n{body}"));
    }
    text
}

fn run(source: &str) -> String {
    format!("          run: {source}\n")
}

/// The case's one assertion error (it must have exactly one).
fn error(dir: &tempfile::TempDir) -> String {
    let report = crate::util::lab_json("validate", dir.path(), "skills/gstep");
    let harness = &report["harness"];
    assert_eq!(harness["attempted"], true, "{report}");
    let errors: Vec<&str> = harness["assertion_errors"]
        .as_array()
        .map(|errors| errors.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert_eq!(errors.len(), 1, "{report}");
    errors[0].to_owned()
}

const FAILED_EXACT: &str = "        status: failure\n        output: {exact: {note: x}}\n";

fn exact_mismatch(actual: &str) -> String {
    format!(
        "smoke: harness expectation mismatch at expect.output.exact: expected {{\"note\":\"x\"}}, \
         actual {actual}"
    )
}

#[test]
fn a_graph_failed_by_a_step_answers_with_runx_runtime_error_naming_the_step() {
    // OBSERVED: `actual {"code":"runtime_error","message":"skill 'b' failed: boom\n"}`.
    let runners = graph("flow", "b", &[("b", &run(&cli("bad.cjs", "", NOTE)))]);
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch("{\"code\":\"runtime_error\",\"message\":\"skill 'b' failed: boom\\n\"}")
    );
}

#[test]
fn a_failed_case_reads_expect_output_subset_at_its_field_against_the_error_object() {
    // OBSERVED: `smoke: harness expectation mismatch at expect.output.subset.note: expected
    // "x", actual null`.
    let runners = graph("flow", "b", &[("b", &run(&cli("bad.cjs", "", NOTE)))]);
    let dir = workspace(
        "flow",
        "        status: failure\n        output: {subset: {note: x}}\n",
        &runners,
    );
    assert_eq!(
        error(&dir),
        "smoke: harness expectation mismatch at expect.output.subset.note: expected \"x\", \
         actual null"
    );
}

#[test]
fn a_step_failing_silently_is_named_by_its_exit_code_as_runx_prints_it() {
    // OBSERVED: `actual {"code":"runtime_error","message":"skill 'b' failed: process failed
    // with exit code Some(3)"}`.
    let runners = graph("flow", "b", &[("b", &run(&cli("quiet.cjs", "", NOTE)))]);
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch(
            "{\"code\":\"runtime_error\",\"message\":\"skill 'b' failed: process failed with \
             exit code Some(3)\"}"
        )
    );
}

#[test]
fn a_step_missing_a_declared_output_fails_the_run_as_an_invalid_run_configuration_twice_over() {
    // OBSERVED (`b` running `other.cjs`, declaring `outputs: {note: string}`): `actual
    // {"code":"runtime_error","message":"graph step 'b' has invalid run configuration: graph
    // step 'b' has invalid run configuration: skill 'b' failed: declared run output \"note\"
    // was not returned"}`.
    let runners = graph("flow", "b", &[("b", &run(&cli("other.cjs", "", NOTE)))]);
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch(
            "{\"code\":\"runtime_error\",\"message\":\"graph step 'b' has invalid run \
             configuration: graph step 'b' has invalid run configuration: skill 'b' failed: \
             declared run output \\\"note\\\" was not returned\"}"
        )
    );
}

#[test]
fn a_failed_graph_answers_with_its_error_even_when_result_from_names_a_step_that_succeeded() {
    // OBSERVED (`result_from: [a]`, `a` succeeding before `b` fails): `actual
    // {"code":"runtime_error","message":"skill 'b' failed: boom\n"}`.
    let runners = graph(
        "flow",
        "a",
        &[
            (
                "a",
                &run(&cli("ok.cjs", ", a", "{note: string, score: number}")),
            ),
            ("b", &run(&cli("bad.cjs", "", NOTE))),
        ],
    );
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch("{\"code\":\"runtime_error\",\"message\":\"skill 'b' failed: boom\\n\"}")
    );
}

#[test]
fn a_failed_cli_tool_runner_answers_with_what_it_printed() {
    // OBSERVED: `actual {"note":"half"}` for a runner printing that before exiting 3; `actual
    // ""` for one printing nothing.
    for (script, actual) in [("half.cjs", "{\"note\":\"half\"}"), ("bad.cjs", "\"\"")] {
        let runner = format!(
            "  solo:\n    type: cli-tool\n    command: node\n    args: [./{script}]\n    \
             inputs:\n      topic:\n        type: string\n        required: false\n    \
             outputs: {NOTE}\n"
        );
        let dir = workspace("solo", FAILED_EXACT, &runner);
        assert_eq!(error(&dir), exact_mismatch(actual), "{script}");
    }
}

#[test]
fn a_failing_nested_cli_tool_runner_fails_the_run_in_the_steps_name() {
    // OBSERVED (step `sub`, `skill: .`, runner `noter` running `bad.cjs`): `actual
    // {"code":"runtime_error","message":"skill 'sub' failed: boom\n"}`.
    let mut runners = graph(
        "flow",
        "sub",
        &[("sub", "          skill: .\n          runner: noter\n")],
    );
    runners.push_str(&format!(
        "  noter:\n    type: cli-tool\n    command: node\n    args: [./bad.cjs]\n    outputs: \
         {NOTE}\n"
    ));
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch("{\"code\":\"runtime_error\",\"message\":\"skill 'sub' failed: boom\\n\"}")
    );
}

#[test]
fn a_failing_nested_graph_fails_the_run_as_an_invalid_run_configuration_of_its_step() {
    // OBSERVED (step `sub` running the graph runner `inner`, whose step `b` runs `bad.cjs`):
    // `actual {"code":"runtime_error","message":"graph step 'sub' has invalid run
    // configuration: skill 'b' failed: boom\n"}`.
    let mut runners = graph(
        "flow",
        "sub",
        &[("sub", "          skill: .\n          runner: inner\n")],
    );
    runners.push_str(&graph(
        "inner",
        "b",
        &[("b", &run(&cli("bad.cjs", "", NOTE)))],
    ));
    let dir = workspace("flow", FAILED_EXACT, &runners);
    assert_eq!(
        error(&dir),
        exact_mismatch(
            "{\"code\":\"runtime_error\",\"message\":\"graph step 'sub' has invalid run \
             configuration: skill 'b' failed: boom\\n\"}"
        )
    );
}

#[test]
fn a_fanout_branch_that_failed_while_its_group_proceeded_has_empty_step_outputs() {
    // OBSERVED (`strategy: any`, `b1` succeeding, `b2` running `bad.cjs`, then `c`): with
    // `step_outputs: {b2: {exact: {note: zzz}}}`, `… at expect.step_outputs.b2.exact: expected
    // {"note":"zzz"}, actual {}`; with `subset`, `… at expect.step_outputs.b2.subset.note:
    // expected "zzz", actual null`.
    let scored = "{note: string, score: number}";
    let branch = |source: String| {
        format!("          mode: fanout\n          fanout_group: g\n          run: {source}\n")
    };
    let mut runners = graph(
        "flow",
        "c",
        &[
            ("b1", &branch(cli("ok.cjs", ", b1", scored))),
            ("b2", &branch(cli("bad.cjs", "", scored))),
            ("c", &run(&cli("ok.cjs", ", c", scored))),
        ],
    );
    runners = runners.replace(
        "      steps:\n",
        "      fanout:\n        groups:\n          g:\n            strategy: any\n      steps:\n",
    );
    for (kind, actual) in [
        (
            "exact",
            "smoke: harness expectation mismatch at expect.step_outputs.b2.exact: \
                   expected {\"note\":\"zzz\"}, actual {}",
        ),
        (
            "subset",
            "smoke: harness expectation mismatch at expect.step_outputs.b2.subset.note: \
                    expected \"zzz\", actual null",
        ),
    ] {
        let expect = format!(
            "        status: sealed\n        step_outputs:\n          b2: {{{kind}: {{note: zzz}}}}\n"
        );
        let dir = workspace("flow", &expect, &runners);
        assert_eq!(error(&dir), actual, "{kind}");
    }
}
