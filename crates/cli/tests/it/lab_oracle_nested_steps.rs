//! A graph step naming a runner of the same package (`skill: .`, with `runner:` or the
//! package's default), replayed as Runx runs it: the runner's declared inputs only (defaults
//! filled, undeclared ones dropped, a missing required one refused), its output held to its
//! `outputs`, which address the step's outputs; a graph runner's result adopted whole, its own
//! steps absent from the trace; an agent act answered from `caller.answers` under Runx's
//! request id; a nested failure or needs-agent ending the case as it ends the step. A step
//! naming another package's folder (`skill: ../other`) is refused, where Runx runs it
//! (docs/lab.md, Differences from Runx).
//!
//! The behaviour is Runx's, read from the source of runx-cli 0.8.2 (`AutoMerchLab/runx` at
//! commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`): `runx-runtime/src/execution/runner/
//! step_handlers.rs` (`run_subskill_step`, `run_loaded_skill_step`,
//! `run_nested_graph_skill_step`, `adopt_nested_graph_result`, `run_agent_skill_step`),
//! `step_handlers/output.rs` (`build_step_output_projection`), `input_contract.rs`
//! (`materialize_nested_runner_inputs`), `agent_invocation.rs` (`agent_act_invocation_id`) and
//! `runx-contracts/src/output.rs` (`validate_output_value`).
//!
//! OBSERVED from the real binary (runx-cli 0.8.2 at 3c8315b9, built by hand, run on
//! 2026-12-07, from the workspace root: each verdict asserted here (`tested` or
//! `validation_failed`) from `runx.skill.validate` run as the one step of a graph skill with
//! `allow_execute_harness: true`, whose harness reason is Runx's assertion error below;
//! `runx harness skills/gstep --json` for each case's
//! status, assertion errors and trace, `runx skill skills/gstep -i topic=x --json` for the
//! texts and results, then `runx resume <run> - --json` with an agent's answer on stdin), each test's comment says what; the cli-tool, graph, agent-task, agent,
//! failure, needs-agent (a sibling agent runner unanswered, and a sibling graph stopping on an
//! inner agent act) and other-package layouts were all run. (An `approval` runner is no
//! sibling to test: Runx refuses the package at load, `source.type approval is not a supported
//! source type.`, as the Lab does.) NOT OBSERVED: the JavaScript
//! sibling (the hand-built binary has no `runx-js-worker` beside it, so Runx failed it with
//! `runx-js-worker is not installed beside the Runx binary`); its expected output follows
//! the cli-tool's, read from the same source path (`invoke_regular_skill_step`). No Runx
//! binary or recipe is kept.

use std::fs;
use std::path::Path;

use serde_json::Value;

/// A workspace holding `skills/gstep`, whose default graph runner `flow` (input `topic`) runs
/// `steps` and takes its result from `result_from`; its one case `smoke` passes `topic: x`
/// with `case` (its `caller` and `expect`, YAML at the case's keys' indentation); `runners`
/// follow `flow`; `files` are written into the package.
fn workspace(
    case: &str,
    steps: &str,
    result_from: &str,
    runners: &str,
    files: &[(&str, &str)],
) -> tempfile::TempDir {
    let dir = crate::util::gstep_package(&format!(
        "    - name: smoke\n      \
             runner: flow\n      inputs:\n        topic: x\n{case}runners:\n  flow:\n    \
             default: true\n    type: graph\n    inputs:\n      topic:\n        type: string\n        \
             required: true\n        description: What to note.\n    graph:\n      name: flow\n      \
             result_from: [{result_from}]\n      steps:\n{steps}{runners}"
    ));
    let package = dir.path().join("skills/gstep");
    for (name, text) in files {
        fs::write(package.join(name), text).unwrap();
    }
    dir
}

/// A script printing the note on its topic and the inputs it was given.
const RUN_CJS: &str = "const inputs = JSON.parse(process.env.RUNX_INPUTS_JSON ?? \"null\");\n\
     process.stdout.write(JSON.stringify({ note: `noted ${process.env.RUNX_INPUT_TOPIC}`, \
     inputs }));\n";

/// A cli-tool runner `noter` running [`RUN_CJS`], declaring `topic` (required) and `depth`
/// (default 2) and the outputs `note` and `inputs`.
const NOTER: &str = "  noter:\n    type: cli-tool\n    command: node\n    args: [./run.cjs]\n    \
     inputs:\n      topic:\n        type: string\n        required: true\n      depth:\n        \
     type: integer\n        default: 2\n    outputs:\n      note: string\n      inputs: object\n";

/// One step `sub` running the runner `runner` of the package, given an undeclared `extra`.
fn sub(runner: &str) -> String {
    format!(
        "        - id: sub\n          skill: .\n          runner: {runner}\n          inputs:\n            \
         extra: fixed\n"
    )
}

/// A case expecting the graph to seal with the trace `steps` and the note on `x` as output.
fn expect_noted(steps: &str) -> String {
    format!(
        "      expect:\n        status: sealed\n        steps: [{steps}]\n        output:\n          \
         exact:\n            note: noted x\n            inputs:\n              topic: x\n              \
         depth: 2\n"
    )
}

fn validate(root: &Path) -> Value {
    crate::util::lab_json("validate", root, "skills/gstep")
}

fn reason(report: &Value) -> String {
    report["harness"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no harness reason: {report}"))
        .to_owned()
}

#[test]
fn a_sibling_cli_tool_runner_gets_only_its_declared_inputs_and_its_outputs_are_the_steps() {
    // OBSERVED: `runx harness` passes the case (the result `{note: noted x, inputs: {topic: x,
    // depth: 2}}`: `extra` is not given to the runner, `depth` takes its default).
    let dir = workspace(
        &expect_noted("sub"),
        &sub("noter"),
        "sub",
        NOTER,
        &[("run.cjs", RUN_CJS)],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
}

#[test]
fn a_sibling_graph_runner_gives_its_result_and_only_the_outer_step_is_traced() {
    // OBSERVED: `runx harness` passes the case with `steps: [sub]`; with `steps: [sub, zzz]`
    // it fails with `smoke: harness expectation mismatch at expect.steps: expected sub,zzz,
    // actual sub`. The inner graph's inline step gets the nested runner's inputs.
    let inner = "  inner:\n    type: graph\n    inputs:\n      topic:\n        type: string\n        \
         required: true\n      depth:\n        type: integer\n        default: 2\n    graph:\n      \
         name: inner\n      result_from: [t]\n      steps:\n        - id: t\n          run:\n            \
         type: cli-tool\n            command: node\n            args: [./run.cjs]\n            \
         outputs:\n              note: string\n              inputs: object\n";
    let dir = workspace(
        &expect_noted("sub"),
        &sub("inner"),
        "sub",
        inner,
        &[("run.cjs", RUN_CJS)],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
    let dir = workspace(
        &expect_noted("sub, zzz"),
        &sub("inner"),
        "sub",
        inner,
        &[("run.cjs", RUN_CJS)],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.steps: expected sub,zzz, actual sub"
        ),
        "{report}"
    );
}

/// A case answering `key` with `{note: done}` and expecting that as output; an agent runner
/// `asker` of `kind` (with `task`, if any) declaring the output `note`.
fn agent(key: &str, kind: &str, task: &str) -> tempfile::TempDir {
    let case = format!(
        "      caller:\n        answers:\n          {key}:\n            note: done\n      \
         expect:\n        status: sealed\n        output:\n          exact:\n            note: \
         done\n"
    );
    let task = if task.is_empty() {
        String::new()
    } else {
        format!("    task: {task}\n")
    };
    let asker = format!(
        "  asker:\n    type: {kind}\n    agent: builder\n{task}    inputs:\n      topic:\n        \
         type: string\n        required: true\n    outputs:\n      note: string\n"
    );
    workspace(
        &case,
        "        - id: sub\n          skill: .\n          runner: asker\n",
        "sub",
        &asker,
        &[],
    )
}

#[test]
fn a_sibling_agent_task_runner_is_answered_under_its_normalized_task() {
    // OBSERVED: with `task: draft note`, `runx harness` passes the case answered as
    // `agent_task.draft_note.output`.
    let report = validate(agent("agent_task.draft_note.output", "agent-task", "draft note").path());
    assert_eq!(report["verdict"], "tested", "{report}");
}

#[test]
fn a_sibling_agent_runner_is_answered_under_its_runner_name_else_it_needs_the_agent() {
    // OBSERVED: `runx harness` passes the case answered as `agent.asker.output`; answered as
    // `agent.gstep.output` it fails, `smoke: harness expectation mismatch at expect.status:
    // expected sealed, actual needs_agent`, with no receipt.
    let report = validate(agent("agent.asker.output", "agent", "").path());
    assert_eq!(report["verdict"], "tested", "{report}");
    let report = validate(agent("agent.gstep.output", "agent", "").path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual \
             needs_agent"
        ),
        "{report}"
    );
}

/// A cli-tool runner `noter` printing `boom` on stderr and exiting 3, declaring `topic` and an
/// `other` input, required as `required` says.
fn failing(required: bool) -> tempfile::TempDir {
    let noter = format!(
        "  noter:\n    type: cli-tool\n    command: node\n    args: [./run.cjs]\n    inputs:\n      \
         topic:\n        type: string\n        required: true\n      other:\n        type: \
         string\n        required: {required}\n    outputs:\n      note: string\n"
    );
    workspace(
        "      expect:\n        status: sealed\n",
        "        - id: sub\n          skill: .\n          runner: noter\n",
        "sub",
        &noter,
        &[(
            "run.cjs",
            "process.stderr.write(\"boom\\n\"); process.exit(3);\n",
        )],
    )
}

#[test]
fn a_nested_runner_missing_a_required_input_fails_in_runx_words() {
    // OBSERVED: `runx harness` fails the case (`actual failure`); `runx skill` gives the step's
    // error `runner input contract failed at '/other': runner input 'other' is required`.
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    let dir = failing(true);
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{report}"
    );
    assert!(
        crate::util::sealed_receipts(dir.path())
            .contains("runner input contract failed at '/other': runner input 'other' is required"),
        "{report}"
    );
}

#[test]
fn a_nested_runner_failing_fails_the_case() {
    // OBSERVED: `runx harness` fails the case (`actual failure`); Runx words the step's error
    // `skill 'sub' failed: boom`, as the run's result does in the Lab too
    // (`lab_oracle_failures`); the Lab's receipt keeps `cli-tool node exited 3: boom`.
    let dir = failing(false);
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    let reason = reason(&report);
    assert!(
        reason.contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{reason}"
    );
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path()).contains("boom"),
        "{reason}"
    );
}

#[test]
fn a_nested_runner_output_outside_its_declared_outputs_fails_in_runx_words() {
    // OBSERVED: with `outputs: {note: string, env_extra: string}` and a script printing
    // `env_extra: null`, `runx skill` fails the step: `skill 'noter' failed: runner output
    // contract violation at $.env_extra: null is not of type "string"`.
    let noter = "  noter:\n    type: cli-tool\n    command: node\n    args: [./run.cjs]\n    \
         inputs:\n      topic:\n        type: string\n        required: true\n    outputs:\n      \
         note: string\n      env_extra: string\n";
    let dir = workspace(
        "      expect:\n        status: sealed\n",
        &sub("noter"),
        "sub",
        noter,
        &[(
            "run.cjs",
            "process.stdout.write(JSON.stringify({ note: \"n\", env_extra: null }));\n",
        )],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{report}"
    );
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path()).contains(
            "skill 'noter' failed: runner output contract violation at $.env_extra: null is not \
             of type \"string\""
        ),
        "{report}"
    );
}

#[test]
fn a_sibling_javascript_runner_runs_as_a_cli_tool_sibling_does() {
    // READ FROM SOURCE (not observed: see the header): the runner's declared inputs, its
    // outputs addressing the step, read by a later step through `context`.
    let js = "  noter:\n    type: javascript\n    module: note.mjs\n    export: run\n    inputs:\n      \
         topic:\n        type: string\n        required: true\n      depth:\n        type: integer\n        \
         default: 2\n    outputs:\n      note: string\n      inputs: object\n";
    let steps = format!(
        "{}        - id: use\n          context:\n            got: sub.inputs\n          run:\n            \
         type: javascript\n            module: echo.mjs\n            export: run\n            \
         outputs:\n              note: string\n              inputs: object\n",
        sub("noter")
    );
    let dir = workspace(
        &expect_noted("sub, use"),
        &steps,
        "use",
        js,
        &[
            (
                "note.mjs",
                "export function run(inputs) {\n  return { note: `noted ${inputs.topic}`, inputs };\n}\n",
            ),
            (
                "echo.mjs",
                "export function run(inputs) {\n  return { note: `noted ${inputs.topic}`, inputs: \
                 inputs.got };\n}\n",
            ),
        ],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
}

#[test]
fn a_step_naming_another_package_is_refused_where_runx_runs_it() {
    // OBSERVED: Runx runs `skills/other`'s default cli-tool runner from `skill: ../other` and
    // passes the case; the Lab refuses the step (docs/lab.md, Differences from Runx).
    let dir = workspace(
        "      expect:\n        status: sealed\n        output:\n          exact:\n            \
         note: noted x\n",
        "        - id: sub\n          skill: ../other\n",
        "sub",
        "",
        &[],
    );
    let other = dir.path().join("skills/other");
    fs::create_dir_all(&other).unwrap();
    fs::write(
        other.join("SKILL.md"),
        "---\nname: other\ndescription: Note.\n---\nNote.\n",
    )
    .unwrap();
    fs::write(
        other.join("X.yaml"),
        "skill: other\nversion: \"0.1.0\"\nrunners:\n  main:\n    default: true\n    type: \
         cli-tool\n    command: node\n    args: [./run.cjs]\n    inputs:\n      topic:\n        \
         type: string\n        required: true\n    outputs:\n      note: string\n",
    )
    .unwrap();
    fs::write(
        other.join("run.cjs"),
        "process.stdout.write(JSON.stringify({ note: `noted ${process.env.RUNX_INPUT_TOPIC}` }));\n",
    )
    .unwrap();
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    let reason = reason(&report);
    let (first, second) = reason.split_once('\n').unwrap_or((&reason, ""));
    assert!(
        first.contains("step sub: skill \"../other\" names a skill package outside the package"),
        "{reason}"
    );
    assert!(
        second.contains("Runx runs a step's skill from the package folder it names")
            && second.contains("MindRune is stricter"),
        "{reason}"
    );
}

#[test]
fn a_sibling_graph_stopping_on_an_unanswered_agent_act_needs_the_agent() {
    // OBSERVED: `runx harness` fails the case, `smoke: harness expectation mismatch at
    // expect.status: expected sealed, actual needs_agent`.
    let inner = "  inner:\n    type: graph\n    inputs:\n      topic:\n        type: string\n        \
         required: true\n    graph:\n      name: inner\n      result_from: [a]\n      steps:\n        \
         - id: a\n          run:\n            type: agent-task\n            agent: builder\n            \
         task: inner-note\n            outputs:\n              note: string\n";
    let dir = workspace(
        "      expect:\n        status: sealed\n",
        "        - id: sub\n          skill: .\n          runner: inner\n",
        "sub",
        inner,
        &[],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual \
             needs_agent"
        ),
        "{report}"
    );
}

#[test]
fn a_sibling_agent_answer_outside_the_runners_outputs_fails_in_runx_words() {
    // OBSERVED: `runx harness` fails the case answered `{note: done, extra: 1}` (`actual
    // failure`); `runx skill` then `runx resume <run> -` with that answer gives `skill 'asker'
    // failed: runner output contract violation at $.extra: Additional properties are not
    // allowed ('extra' was unexpected)`.
    let dir = agent("agent.asker.output", "agent", "");
    let profile = dir.path().join("skills/gstep/X.yaml");
    let text = fs::read_to_string(&profile).unwrap().replacen(
        "            note: done\n      expect",
        "            note: done\n            extra: 1\n      expect",
        1,
    );
    fs::write(&profile, text).unwrap();
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    assert!(
        reason(&report).contains(
            "smoke: harness expectation mismatch at expect.status: expected sealed, actual failure"
        ),
        "{report}"
    );
    // The report names the status only, as Runx's; the step's error is in the case's receipt.
    assert!(
        crate::util::sealed_receipts(dir.path()).contains(
            "skill 'asker' failed: runner output contract violation at $.extra: Additional \
             properties are not allowed ('extra' was unexpected)"
        ),
        "{report}"
    );
}

#[test]
fn a_sibling_runners_artifacts_expose_its_packet_at_the_steps_packet_data() {
    // OBSERVED: `runx harness` passes the case and the validator says `tested`: the runner's
    // `artifacts: {wrap_as: note_packet}` makes its whole output the step's
    // `sub.note_packet.data`, read by a later step through `context`.
    let noter = "  noter:\n    type: cli-tool\n    command: node\n    args: [./run.cjs]\n    \
         inputs:\n      topic:\n        type: string\n        required: true\n    outputs:\n      \
         note: string\n      inputs: object\n    artifacts:\n      wrap_as: note_packet\n";
    let steps = "        - id: sub\n          skill: .\n          runner: noter\n        - id: use\n          \
         context:\n            got: sub.note_packet.data\n          run:\n            type: cli-tool\n            \
         command: node\n            args: [./echo.cjs]\n            outputs:\n              seen: object\n";
    let case = "      expect:\n        status: sealed\n        output:\n          exact:\n            \
         seen:\n              note: noted x\n              inputs:\n                topic: x\n";
    let echo = "process.stdout.write(JSON.stringify({ seen: \
         JSON.parse(process.env.RUNX_INPUTS_JSON).got }));\n";
    let dir = workspace(
        case,
        steps,
        "use",
        noter,
        &[("run.cjs", RUN_CJS), ("echo.cjs", echo)],
    );
    let report = validate(dir.path());
    assert_eq!(report["verdict"], "tested", "{report}");
}
