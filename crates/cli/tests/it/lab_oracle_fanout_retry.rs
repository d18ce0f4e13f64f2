//! A graph step's `retry` and a graph's fanout groups, replayed as Runx replays them: a failed
//! step runs again while `retry.max_attempts` allows, each attempt a row of the trace; a fanout
//! group's branches all run (a failed one retried after the round while its budget lasts), then
//! the group's policy decides: proceed, fail the run itself (`failed planning`, no receipt), or
//! on a gate's `pause`/`escalate` seal a failed run whose trace repeats the first branch.
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2 (`AutoMerchLab/runx` at
//! commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`): `runx-runtime/src/execution/runner/
//! graph_engine.rs` (`retry_budget_remaining`, `commit_step_run`, `run_fanout_plan`),
//! `runx-core/src/state_machine/sequential_graph/fanout_group.rs`, `state_machine/fanout.rs`
//! (`evaluate_fanout_sync`, `threshold.rs`, `conflict.rs`), `runx-parser/src/graph/fanout.rs`
//! (the defaults) and `skill_front/graph.rs` (a paused or escalated graph sealed as failed).
//!
//! OBSERVED from the release binary of that commit, run on 2026-12-07 with
//! `runx harness skills/gstep --json` from the workspace root (a `pnpm-workspace.yaml` there,
//! `HOME` and `RUNX_HOME` a scratch folder) on the same layouts as below, each case expecting a
//! wrong status or trace so that Runx names the actual one; each test quotes what it said.

use std::path::Path;

use serde_json::Value;

/// `ok.cjs <id> [score]` prints `{note: "ok <id>", score}`; `bad.cjs` exits 3; `flaky.cjs <id>
/// <fails>` fails its first `<fails>` runs (counted in a file beside it), then prints
/// `{note: "ok <id> after <n>", attempts: n}`.
const OK: &str = "const id = process.argv[2] || \"x\";\nconst score = Number(process.argv[3] || 0);\n\
    process.stdout.write(JSON.stringify({ note: `ok ${id}`, score }));\n";
const BAD: &str = "process.stderr.write(\"boom\\n\"); process.exit(3);\n";
const FLAKY: &str = "const fs = require(\"fs\"); const path = require(\"path\");\n\
    const id = process.argv[2]; const fails = Number(process.argv[3]);\n\
    const f = path.join(process.argv[4], `count-${id}`);\n\
    let n = 0; try { n = Number(fs.readFileSync(f, \"utf8\")); } catch {}\n\
    n += 1; fs.writeFileSync(f, String(n));\n\
    if (n <= fails) { process.stderr.write(`fail ${n}\\n`); process.exit(4); }\n\
    process.stdout.write(JSON.stringify({ note: `ok ${id} after ${n}`, attempts: n }));\n";

/// A graph step `id` running `script` with `args`; in fanout group `g` when `fanout`, with
/// `retry` attempts when given.
fn step(id: &str, script: &str, args: &[&str], fanout: bool, retry: Option<u32>) -> String {
    let mut text = format!("        - id: {id}\n");
    if fanout {
        text.push_str("          mode: fanout\n          fanout_group: g\n");
    }
    if let Some(attempts) = retry {
        text.push_str(&format!("          retry: {{max_attempts: {attempts}}}\n"));
    }
    let args: Vec<String> = std::iter::once(format!("./{script}.cjs"))
        .chain(args.iter().map(|arg| format!("\"{arg}\"")))
        .collect();
    let outputs = if script == "flaky" {
        "{note: string, attempts: number}"
    } else {
        "{note: string, score: number}"
    };
    text.push_str(&format!(
        "          run: {{type: cli-tool, command: node, args: [{}], outputs: {outputs}}}\n",
        args.join(", ")
    ));
    text
}

/// `skills/gstep` whose graph runner `flow` has the group policy `policy` (lines of
/// `fanout.groups.g`, none: no `fanout`), the `steps`, its result from `result_from`, and the
/// one case `smoke` expecting `expect` (YAML at the expect block's keys' indentation).
fn workspace(
    policy: &[&str],
    steps: &[String],
    result_from: &str,
    expect: &str,
) -> tempfile::TempDir {
    let mut fanout = String::new();
    if !policy.is_empty() {
        fanout.push_str("      fanout:\n        groups:\n          g:\n");
        for line in policy {
            fanout.push_str(&format!("            {line}\n"));
        }
    }
    let dir = crate::util::gstep_package(&format!(
        "    - name: smoke\n      runner: flow\n      inputs:\n        topic: x\n      expect:\n\
         {expect}runners:\n  flow:\n    default: true\n    type: graph\n    inputs:\n      topic:\n        \
         type: string\n        required: true\n        description: What to note.\n    graph:\n      \
         name: flow\n      result_from: [{result_from}]\n{fanout}      steps:\n{}",
        steps.concat()
    ));
    let package = dir.path().join("skills/gstep");
    for (name, text) in [("ok.cjs", OK), ("bad.cjs", BAD), ("flaky.cjs", FLAKY)] {
        std::fs::write(package.join(name), text).unwrap();
    }
    dir
}

/// The harness report's assertion errors and how many receipts it names.
fn harness(root: &Path) -> (Vec<String>, usize) {
    let report = crate::util::lab_json("validate", root, "skills/gstep");
    let harness = &report["harness"];
    assert_eq!(harness["attempted"], true, "{report}");
    let errors = harness["assertion_errors"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    (
        errors,
        harness["receipt_ids"].as_array().map_or(0, Vec::len),
    )
}

fn one(error: &str, receipts: usize) -> (Vec<String>, usize) {
    (vec![format!("smoke: {error}")], receipts)
}

fn flaky(id: &str, fails: &str, dir: &Path) -> Vec<String> {
    vec![id.to_owned(), fails.to_owned(), dir.display().to_string()]
}

/// A `flaky` step's args, its counter kept in a folder of its own.
fn flaky_step(
    id: &str,
    fails: &str,
    fanout: bool,
    retry: Option<u32>,
) -> (String, tempfile::TempDir) {
    let counter = tempfile::tempdir().unwrap();
    let args = flaky(id, fails, counter.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    (step(id, "flaky", &args, fanout, retry), counter)
}

#[test]
fn a_retried_step_that_fails_once_then_succeeds_is_traced_twice_and_keeps_its_last_outputs() {
    // OBSERVED: `smoke: harness expectation mismatch at expect.steps: expected zzz, actual a,a`
    // (one receipt); with `step_outputs: {a: {exact: {note: zzz}}}`: `… at
    // expect.step_outputs.a.exact: expected {"note":"zzz"}, actual {"attempts":2,"note":"ok a
    // after 2"}`.
    let (a, _counter) = flaky_step("a", "1", false, Some(2));
    let dir = workspace(
        &[],
        std::slice::from_ref(&a),
        "a",
        "        status: sealed\n        steps: [zzz]\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual a,a",
            1
        )
    );
    let (a, _counter) = flaky_step("a", "1", false, Some(2));
    let dir = workspace(
        &[],
        &[a],
        "a",
        "        status: sealed\n        step_outputs:\n          a: {exact: {note: zzz}}\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.step_outputs.a.exact: expected \
             {\"note\":\"zzz\"}, actual {\"attempts\":2,\"note\":\"ok a after 2\"}",
            1
        )
    );
}

#[test]
fn a_step_failing_past_its_retry_budget_fails_the_case_after_each_attempt() {
    // OBSERVED: `smoke: harness expectation mismatch at expect.steps: expected zzz, actual c,c`
    // with `status: failure` (one receipt); without `retry`, `a,c` (c tried once).
    let (c, _counter) = flaky_step("c", "5", false, Some(2));
    let dir = workspace(
        &[],
        &[c],
        "c",
        "        status: failure\n        steps: [zzz]\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual c,c",
            1
        )
    );
    let (c, _counter) = flaky_step("c", "5", false, None);
    let a = step("a", "ok", &["a"], false, None);
    let dir = workspace(
        &[],
        &[a, c],
        "c",
        "        status: failure\n        steps: [zzz]\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual a,c",
            1
        )
    );
}

/// Branches `b1`, `b2` (and `b3`) in group `g`, each `ok` unless named in `bad`, then `c`.
fn branches(count: usize, bad: &[&str]) -> Vec<String> {
    let mut steps: Vec<String> = (1..=count)
        .map(|index| {
            let id = format!("b{index}");
            if bad.contains(&id.as_str()) {
                step(&id, "bad", &[], true, None)
            } else {
                step(&id, "ok", &[&id], true, None)
            }
        })
        .collect();
    steps.push(step("c", "ok", &["c"], false, None));
    steps
}

const SEALED_TRACE: &str = "        status: sealed\n        steps: [zzz]\n";
const ESCALATED: &str = "        status: escalated\n";

#[test]
fn a_fanout_group_whose_branches_all_succeed_proceeds_in_order() {
    // OBSERVED: `… at expect.steps: expected zzz, actual b1,b2,c` (three receipts over the
    // three cases tried).
    let dir = workspace(&["strategy: all"], &branches(2, &[]), "c", SEALED_TRACE);
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,c",
            1
        )
    );
}

#[test]
fn a_failed_branch_under_halt_fails_planning_after_every_branch_ran_and_seals_nothing() {
    // OBSERVED: `s: expected status sealed, execution failed: graph step 'b1' failed planning:
    // 1/3 branches failed and on_branch_failure is halt` (no receipt; a case expecting
    // `failure` passes).
    let dir = workspace(&["strategy: all"], &branches(3, &["b2"]), "c", ESCALATED);
    assert_eq!(
        harness(dir.path()),
        one(
            "expected status escalated, execution failed: graph step 'b1' failed planning: 1/3 \
             branches failed and on_branch_failure is halt",
            0
        )
    );
    let dir = workspace(
        &["strategy: all"],
        &branches(3, &["b2"]),
        "c",
        "        status: failure\n",
    );
    assert_eq!(harness(dir.path()), (vec![], 0));
}

#[test]
fn all_with_continue_short_of_every_branch_fails_planning_on_the_count() {
    // OBSERVED: `expected status sealed, execution failed: graph step 'b1' failed planning: 1/2
    // branches succeeded; required 2`.
    let policy = ["strategy: all", "on_branch_failure: continue"];
    let dir = workspace(
        &policy,
        &branches(2, &["b2"]),
        "c",
        "        status: sealed\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "expected status sealed, execution failed: graph step 'b1' failed planning: 1/2 \
             branches succeeded; required 2",
            0
        )
    );
}

#[test]
fn any_proceeds_past_a_failed_branch_whether_or_not_it_says_continue() {
    // OBSERVED: `… at expect.steps: expected zzz, actual b1,b2,c` both for `strategy: any` with
    // `on_branch_failure: continue` and for `strategy: any` alone (its default is continue).
    for policy in [
        &["strategy: any", "on_branch_failure: continue"][..],
        &["strategy: any"],
    ] {
        let dir = workspace(policy, &branches(2, &["b2"]), "c", SEALED_TRACE);
        assert_eq!(
            harness(dir.path()),
            one(
                "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,c",
                1
            ),
            "{policy:?}"
        );
    }
}

#[test]
fn quorum_proceeds_at_min_success_and_fails_planning_short_of_it() {
    // OBSERVED: with b2 failing, `… actual b1,b2,b3,c`; with b1 and b2 failing, `expected
    // status sealed, execution failed: graph step 'b1' failed planning: 1/3 branches
    // succeeded; required 2`.
    let policy = [
        "strategy: quorum",
        "min_success: 2",
        "on_branch_failure: continue",
    ];
    let dir = workspace(&policy, &branches(3, &["b2"]), "c", SEALED_TRACE);
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,b3,c",
            1
        )
    );
    let dir = workspace(
        &policy,
        &branches(3, &["b1", "b2"]),
        "c",
        "        status: sealed\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "expected status sealed, execution failed: graph step 'b1' failed planning: 1/3 \
             branches succeeded; required 2",
            0
        )
    );
}

#[test]
fn a_failed_branch_with_retry_budget_runs_again_after_the_round() {
    // OBSERVED: `… at expect.steps: expected zzz, actual b1,b2,b1,c`.
    let (b1, _counter) = flaky_step("b1", "1", true, Some(2));
    let steps = [
        b1,
        step("b2", "ok", &["b2"], true, None),
        step("c", "ok", &["c"], false, None),
    ];
    let dir = workspace(&["strategy: all"], &steps, "c", SEALED_TRACE);
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,b1,c",
            1
        )
    );
}

/// Branches `b1` (score `score`) and `b2`, then `c`.
fn scored(score: &str) -> Vec<String> {
    vec![
        step("b1", "ok", &["b1", score], true, None),
        step("b2", "ok", &["b2"], true, None),
        step("c", "ok", &["c"], false, None),
    ]
}

#[test]
fn a_gate_that_escalates_or_pauses_seals_a_failure_tracing_the_first_branch_again() {
    // OBSERVED (escalate and pause alike): `expected escalated, actual failure`; with `status:
    // failure`, `… at expect.steps: expected zzz, actual b1,b2,b1`; `step_outputs.b1` stays the
    // branch's success, `{"note":"ok b1","score":9}`; the result is `{"code":"runtime_error",
    // "message":"graph step 'b1' escalated: b1.score=9 exceeded 5"}`. Below the threshold the
    // group proceeds (`b1,b2,c`).
    for action in ["escalate", "pause"] {
        let gate = format!("  - {{step: b1, field: score, above: 5, action: {action}}}");
        let policy = ["strategy: all", "threshold_gates:", gate.as_str()];
        let dir = workspace(&policy, &scored("9"), "c", ESCALATED);
        assert_eq!(
            harness(dir.path()),
            one(
                "harness expectation mismatch at expect.status: expected escalated, actual failure",
                1
            )
        );
        let dir = workspace(
            &policy,
            &scored("9"),
            "c",
            "        status: failure\n        steps: [zzz]\n",
        );
        assert_eq!(
            harness(dir.path()),
            one(
                "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,b1",
                1
            )
        );
        let dir = workspace(
            &policy,
            &scored("9"),
            "c",
            "        status: failure\n        step_outputs:\n          b1: {exact: {note: zzz}}\n",
        );
        assert_eq!(
            harness(dir.path()),
            one(
                "harness expectation mismatch at expect.step_outputs.b1.exact: expected \
                 {\"note\":\"zzz\"}, actual {\"note\":\"ok b1\",\"score\":9}",
                1
            )
        );
        let dir = workspace(&policy, &scored("3"), "c", SEALED_TRACE);
        assert_eq!(
            harness(dir.path()),
            one(
                "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,c",
                1
            )
        );
    }
}

#[test]
fn a_conflict_gate_on_disagreeing_branches_seals_a_failure() {
    // OBSERVED: `expected escalated, actual failure`; with `status: failure`, `actual
    // b1,b2,b1`.
    let policy = [
        "strategy: all",
        "conflict_gates:",
        "  - {field: note, action: escalate}",
    ];
    let dir = workspace(
        &policy,
        &branches(2, &[]),
        "c",
        "        status: failure\n        steps: [zzz]\n",
    );
    assert_eq!(
        harness(dir.path()),
        one(
            "harness expectation mismatch at expect.steps: expected zzz, actual b1,b2,b1",
            1
        )
    );
}
