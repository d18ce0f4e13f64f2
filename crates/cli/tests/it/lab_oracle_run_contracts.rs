//! What a run owes its runner's contracts, held to what the real Runx said: a case's inputs
//! are the runner's declared inputs and nothing else; a runner's process output, and an inline
//! graph step's, is exactly the object its `outputs` declare; context skills go to agent
//! runners only.
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2 (`AutoMerchLab/runx` at
//! commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`): `runx-runtime/src/input_contract.rs`
//! (`materialize_complete_runner_inputs`, which `execution/skill_front/inline_harness.rs`
//! applies to a case before it runs and answers only with a failed status),
//! `output_contract.rs` (`verified_runner_metadata_with_artifacts`, called for a runner by
//! `execution/skill_front/runner_manifest.rs` and for a step by
//! `execution/runner/step_handlers.rs`, whose errors the graph engine words as an invalid run
//! configuration of the step, `RuntimeError::at_graph_step`) and
//! `execution/operator_context.rs` (`expand_graph_step`, refusing context skills on a step
//! whose runner is no agent before the run starts).
//!
//! OBSERVED from the release binary of that commit, run on 2026-12-08 with
//! `runx harness skills/gstep --json` from the workspace root (a `pnpm-workspace.yaml` there,
//! `HOME` and `RUNX_HOME` a scratch folder) on the layouts below; each test quotes what it said.

use serde_json::Value;

/// `ok.cjs <id>` prints `{note: "ok <id>", score: 0}`.
const OK: &str =
    "process.stdout.write(JSON.stringify({note: `ok ${process.argv[2]}`, score: 0}));\n";

/// `skills/gstep` with the one case `smoke`, run by `runner` with `topic: x` and expecting
/// `expect` (YAML at the expect block's keys' indentation), and the package's `runners` (YAML
/// at the runners' names' indentation).
fn workspace(runner: &str, expect: &str, runners: &str) -> tempfile::TempDir {
    let dir = crate::util::gstep_package(&format!(
        "    - name: smoke\n      runner: {runner}\n      inputs:\n        topic: x\n      \
         expect:\n{expect}runners:\n{runners}"
    ));
    std::fs::write(dir.path().join("skills/gstep/ok.cjs"), OK).unwrap();
    dir
}

/// A `cli-tool` runner `name` running `ok.cjs <name>`, with the given YAML lines (at the
/// runner's keys' indentation) declaring what it declares.
fn cli_runner(name: &str, declared: &str) -> String {
    format!(
        "  {name}:\n    type: cli-tool\n    command: node\n    args: [./ok.cjs, {name}]\n{declared}"
    )
}

const TOPIC: &str = "    inputs:\n      topic:\n        type: string\n        required: false\n";

/// A graph runner `flow` taking its input `topic` and its result from its one step, whose
/// keys after its id are `step` (YAML at the step's keys' indentation).
fn flow(step_id: &str, step: &str) -> String {
    format!(
        "  flow:\n    type: graph\n{TOPIC}    graph:\n      name: flow\n      result_from: \
         [{step_id}]\n      steps:\n        - id: {step_id}\n{step}"
    )
}

/// The harness report, and its assertion errors.
fn harness(dir: &tempfile::TempDir) -> (Value, Vec<String>) {
    let report = crate::util::lab_json("validate", dir.path(), "skills/gstep");
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

const SEALED: &str = "        status: sealed\n";
const FAILED_EXACT: &str = "        status: failure\n        output: {exact: {note: x}}\n";

fn no_receipts(harness: &Value) {
    assert_eq!(harness["receipt_ids"], serde_json::json!([]), "{harness}");
}

#[test]
fn a_case_passing_an_input_its_runner_does_not_declare_fails_before_it_runs() {
    // OBSERVED (`solo` declaring no `inputs`, the case giving `topic: x`): expecting `sealed`,
    // `smoke: expected status sealed, got failure` and no receipt; expecting `failure` with an
    // output it cannot have, `"status": "passed"`: the output is not read.
    let runner = cli_runner("solo", "    outputs: {note: string, score: number}\n");
    let (report, errors) = harness(&workspace("solo", SEALED, &runner));
    assert_eq!(errors, ["smoke: expected status sealed, got failure"]);
    no_receipts(&report);
    let (report, errors) = harness(&workspace("solo", FAILED_EXACT, &runner));
    assert_eq!(errors, Vec::<String>::new(), "{report}");
    assert_eq!(report["status"], "passed", "{report}");
    no_receipts(&report);
}

#[test]
fn a_runner_output_beyond_its_declared_outputs_fails_the_run_before_it_is_sealed() {
    // OBSERVED (`solo` declaring `outputs: {note: string}`, printing `score` too): `smoke:
    // expected status sealed, execution failed: skill 'solo' failed: runner output contract
    // violation at $.score: Additional properties are not allowed ('score' was unexpected)`,
    // and no receipt.
    let runner = cli_runner("solo", &format!("{TOPIC}    outputs: {{note: string}}\n"));
    let (report, errors) = harness(&workspace("solo", SEALED, &runner));
    assert_eq!(
        errors,
        [
            "smoke: expected status sealed, execution failed: skill 'solo' failed: runner \
             output contract violation at $.score: Additional properties are not allowed \
             ('score' was unexpected)"
        ]
    );
    no_receipts(&report);
}

#[test]
fn an_inline_step_output_off_its_declared_outputs_fails_the_step_as_an_invalid_configuration() {
    // OBSERVED (`b` running `ok.cjs b`, declaring `outputs: {note: number, score: number}`):
    // `actual {"code":"runtime_error","message":"graph step 'b' has invalid run configuration:
    // skill 'b' failed: runner output contract violation at $.note: \"ok b\" is not of type
    // \"number\""}`; expecting `sealed`, `smoke: harness expectation mismatch at expect.status:
    // expected sealed, actual failure`.
    let step = "          run: {type: cli-tool, command: node, args: [./ok.cjs, b], outputs: \
                {note: number, score: number}}\n";
    let (_, errors) = harness(&workspace("flow", FAILED_EXACT, &flow("b", step)));
    assert_eq!(
        errors,
        [
            "smoke: harness expectation mismatch at expect.output.exact: expected \
             {\"note\":\"x\"}, actual {\"code\":\"runtime_error\",\"message\":\"graph step 'b' \
             has invalid run configuration: skill 'b' failed: runner output contract violation \
             at $.note: \\\"ok b\\\" is not of type \\\"number\\\"\"}"
        ]
    );
    let (_, errors) = harness(&workspace("flow", SEALED, &flow("b", step)));
    assert_eq!(
        errors,
        ["smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"]
    );
}

#[test]
fn context_skills_on_a_step_whose_runner_is_no_agent_are_refused_before_the_run_starts() {
    // OBSERVED (step `sub`, `skill: .`, runner `noter` a cli-tool, `context_skills:
    // [context/helper]`, `context/helper/SKILL.md` a manual): `smoke: expected status sealed,
    // execution failed: graph step 'sub' has invalid run configuration: context_skills is only
    // supported for agent and agent-task steps`, and no receipt; with `sub` running a graph
    // runner `inner` whose step `deep` is that step, the same naming `deep`.
    let noter = cli_runner("noter", "    outputs: {note: string, score: number}\n");
    let with_context = |runner: &str| {
        format!(
            "          skill: .\n          runner: {runner}\n          context_skills: \
             [context/helper]\n"
        )
    };
    let inner = format!(
        "  inner:\n    type: graph\n    graph:\n      name: inner\n      result_from: [deep]\n      \
         steps:\n        - id: deep\n{}",
        with_context("noter")
    );
    let layouts = [
        (
            "sub",
            format!("{}{noter}", flow("sub", &with_context("noter"))),
        ),
        (
            "deep",
            format!(
                "{}{inner}{noter}",
                flow("sub", "          skill: .\n          runner: inner\n")
            ),
        ),
    ];
    for (refused, runners) in layouts {
        let dir = workspace("flow", SEALED, &runners);
        let helper = dir.path().join("skills/gstep/context/helper");
        std::fs::create_dir_all(&helper).unwrap();
        std::fs::write(
            helper.join("SKILL.md"),
            "---\nname: helper\ndescription: Help.\n---\nHelp.\n",
        )
        .unwrap();
        let (report, errors) = harness(&dir);
        assert_eq!(
            errors,
            [format!(
                "smoke: expected status sealed, execution failed: graph step '{refused}' has \
                 invalid run configuration: context_skills is only supported for agent and \
                 agent-task steps"
            )]
        );
        no_receipts(&report);
    }
}
