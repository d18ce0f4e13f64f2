//! How a failed harness case reads in the report, and when it leaves a receipt, held to what
//! the real Runx said.
//!
//! Runx's harness (`runx-runtime/src/execution/skill_front/inline_harness.rs`) reports the
//! first mismatch of a case that ran as `<case>: harness expectation mismatch at <field>:
//! expected <x>, actual <y>` (`HarnessReplayError::Mismatch`), judging `expect.status`, then
//! `expect.steps` (ids joined by `,`), `expect.output` (`exact`, then `subset`, at its JSON
//! path) and `expect.step_outputs`. A case it stops before it runs reads `<case>: expected
//! status <x>, execution failed: skill run failed: <text>` (`<case>: skill run failed: <text>`
//! when it names no status; nothing when it expects `failure`), and a case whose inputs fail
//! the runner's contract `<case>: expected status <x>, got failure`; neither seals a receipt,
//! nor does a case left waiting on an agent. Observed from runx-cli 0.8.2 (`AutoMerchLab/runx`
//! at commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand, run by hand on
//! 2026-12-07) with `runx harness skills/gstep --json` on the files written below; no Runx
//! binary or recipe is kept.

use serde_json::Value;

/// The runners every case below picks from: `flow` (an agent-task step `note` declaring
/// `note`, taking `topic`), `bare` (the same step without outputs, refused before it runs) and
/// `boom` (a `cli-tool` step exiting 3).
const RUNNERS: &str = "runners:\n  flow:\n    default: true\n    type: graph\n    inputs:\n      \
    topic:\n        type: string\n        required: true\n        description: What to note.\n    \
    graph:\n      name: flow\n      result_from: [note]\n      steps:\n        - id: note\n          \
    run:\n            type: agent-task\n            agent: builder\n            task: gstep-note\n            \
    outputs:\n              note: string\n  bare:\n    type: graph\n    graph:\n      name: bare\n      \
    result_from: [note]\n      steps:\n        - id: note\n          run:\n            type: \
    agent-task\n            agent: builder\n            task: gstep-note\n  boom:\n    type: graph\n    \
    graph:\n      name: boom\n      result_from: [b]\n      steps:\n        - id: b\n          run:\n            \
    type: cli-tool\n            command: sh\n            args: [\"-c\", \"echo boom >&2; exit 3\"]\n            \
    outputs:\n              note: string\n";

const ANSWERED: &str =
    "      caller:\n        answers:\n          agent_task.gstep-note.output: {note: done}\n";

/// `mindrune lab validate` on `skills/gstep` holding the one case `name`, run by `runner` with
/// `inputs`, `caller` and `expect` (YAML at the case's indentation): its harness report.
fn harness(name: &str, runner: &str, inputs: &str, caller: &str, expect: &str) -> Value {
    let dir = crate::util::gstep_package(&format!(
        "    - name: {name}\n      \
             runner: {runner}\n      inputs: {inputs}\n{caller}      expect:\n{expect}{RUNNERS}"
    ));
    let report = crate::util::lab_json("validate", dir.path(), "skills/gstep");
    assert_eq!(report["harness"]["attempted"], true, "{report}");
    report["harness"].clone()
}

/// The report's one assertion error (none: `None`) and how many receipts it names.
fn verdict(report: &Value) -> (Option<String>, usize) {
    let errors = report["assertion_errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(errors.len() <= 1, "{report}");
    (
        errors.first().and_then(Value::as_str).map(str::to_owned),
        report["receipt_ids"].as_array().map_or(0, Vec::len),
    )
}

const REFUSAL: &str = "skill run failed: graph result producer 'entry.note' declares no semantic \
                       output contract; add run.outputs or artifacts.wrap_as/named_emits before \
                       execution";

#[test]
fn a_case_stopped_before_it_runs_reads_execution_failed_and_seals_nothing() {
    let report = harness("stop-sealed", "bare", "{}", "", "        status: sealed\n");
    assert_eq!(
        verdict(&report),
        (
            Some(format!(
                "stop-sealed: expected status sealed, execution failed: {REFUSAL}"
            )),
            0
        ),
        "{report}"
    );
    let report = harness(
        "stop-needs",
        "bare",
        "{}",
        "",
        "        status: needs_agent\n",
    );
    assert_eq!(
        verdict(&report),
        (
            Some(format!(
                "stop-needs: expected status needs_agent, execution failed: {REFUSAL}"
            )),
            0
        ),
        "{report}"
    );
    // Naming no status, the error alone; expecting failure, the case passes.
    let report = harness(
        "stop-none",
        "bare",
        "{}",
        "",
        "        output:\n          subset: {note: x}\n",
    );
    assert_eq!(
        verdict(&report),
        (Some(format!("stop-none: {REFUSAL}")), 0),
        "{report}"
    );
    let report = harness(
        "stop-failure",
        "bare",
        "{}",
        "",
        "        status: failure\n",
    );
    assert_eq!(verdict(&report), (None, 0), "{report}");
    assert_eq!(report["status"], "passed", "{report}");
}

#[test]
fn a_case_whose_inputs_fail_the_runner_contract_reads_got_failure_and_seals_nothing() {
    let report = harness("inp-sealed", "flow", "{}", "", "        status: sealed\n");
    assert_eq!(
        verdict(&report),
        (
            Some("inp-sealed: expected status sealed, got failure".to_owned()),
            0
        ),
        "{report}"
    );
}

#[test]
fn a_failed_step_is_a_status_mismatch_with_a_receipt() {
    let report = harness("boom", "boom", "{}", "", "        status: sealed\n");
    assert_eq!(
        verdict(&report),
        (
            Some(
                "boom: harness expectation mismatch at expect.status: expected sealed, actual \
                 failure"
                    .to_owned()
            ),
            1
        ),
        "{report}"
    );
}

#[test]
fn a_case_waiting_on_an_agent_seals_nothing_and_only_its_status_is_reported() {
    // The status mismatch is the first; the output expectation after it is not reported.
    let report = harness(
        "needs",
        "flow",
        "{topic: x}",
        "",
        "        status: sealed\n        output:\n          subset: {note: x}\n",
    );
    assert_eq!(
        verdict(&report),
        (
            Some(
                "needs: harness expectation mismatch at expect.status: expected sealed, actual \
                 needs_agent"
                    .to_owned()
            ),
            0
        ),
        "{report}"
    );
    let report = harness(
        "needs-ok",
        "flow",
        "{topic: x}",
        "",
        "        status: needs_agent\n",
    );
    assert_eq!(verdict(&report), (None, 0), "{report}");
}

#[test]
fn output_steps_and_step_output_mismatches_read_at_their_field() {
    let cases = [
        (
            "out-subset",
            "        status: sealed\n        output:\n          subset: {note: other}\n",
            "out-subset: harness expectation mismatch at expect.output.subset.note: expected \
             \"other\", actual \"done\"",
        ),
        (
            "out-exact",
            "        output:\n          exact: {note: other}\n",
            "out-exact: harness expectation mismatch at expect.output.exact: expected \
             {\"note\":\"other\"}, actual {\"note\":\"done\"}",
        ),
        (
            "steps",
            "        steps: [note, other]\n",
            "steps: harness expectation mismatch at expect.steps: expected note,other, actual \
             note",
        ),
        (
            "stepout",
            "        step_outputs:\n          note:\n            subset: {note: zz}\n",
            "stepout: harness expectation mismatch at expect.step_outputs.note.subset.note: \
             expected \"zz\", actual \"done\"",
        ),
    ];
    for (name, expect, error) in cases {
        let report = harness(name, "flow", "{topic: x}", ANSWERED, expect);
        assert_eq!(
            verdict(&report),
            (Some(error.to_owned()), 1),
            "{name}: {report}"
        );
    }
}
