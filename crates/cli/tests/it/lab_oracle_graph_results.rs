//! What Runx asks of a graph's result producers and of an inline agent-task step, held to what
//! the real Runx said.
//!
//! Before a graph runs, Runx refuses one whose `result_from` names a step declaring no
//! semantic output contract (`runx-runtime/src/execution/operator_context.rs`,
//! `validate_graph_result_contracts`): an inline source without `outputs`, a tool whose
//! contract emits no artifact, a sibling runner or another package's runner without
//! `outputs`, unless the step's `artifacts` has a `wrap_as` or `named_emits`; an approval is
//! a result. A child graph runner is judged first, at its own node path. At load, an inline
//! agent-task step with `command` or `args` is refused in the graph parser's words. Observed
//! from runx-cli 0.8.2 (`AutoMerchLab/runx` at commit
//! `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand with the nightly toolchain, run by
//! hand on 2026-12-07) with `runx harness skills/gstep --json` on the files written below; no
//! Runx binary or recipe is kept.

use std::fs;
use std::path::Path;

use serde_json::Value;

/// A workspace holding `skills/gstep`, whose graph runner `flow` takes its result from
/// `result_from` and runs `steps` (YAML at the steps' indentation), with `extra` runners after
/// it, and one case answering the agent act `gstep-note`.
fn workspace(result_from: &str, steps: &str, extra: &str) -> tempfile::TempDir {
    crate::util::gstep_package(&format!(
        "    - name: smoke\n      \
             runner: flow\n      inputs:\n        topic: x\n      caller:\n        answers:\n          \
             agent_task.gstep-note.output:\n            note: done\n      expect:\n        \
             status: sealed\nrunners:\n  flow:\n    default: true\n    type: graph\n    inputs:\n      \
             topic:\n        type: string\n        required: true\n        description: What to \
             note.\n    graph:\n      name: flow\n      result_from: [{result_from}]\n      \
             steps:\n{steps}{extra}"
    ))
}

fn lab(verb: &str, root: &Path) -> Value {
    crate::util::lab_json(verb, root, "skills/gstep")
}

const AGENT_NOTE: &str = "        - id: note\n          run:\n            type: agent-task\n            \
                          agent: builder\n            task: gstep-note\n";

/// Runx's refusal of a result producer, as its harness printed it after `execution failed:
/// skill run failed: `.
fn refusal(step: &str) -> String {
    format!(
        "graph result producer 'entry.{step}' declares no semantic output contract; add \
         run.outputs or artifacts.wrap_as/named_emits before execution"
    )
}

#[test]
fn a_result_producer_without_an_output_contract_is_refused_before_the_graph_runs_in_runx_words() {
    // Runx's `runx harness` → `failed`, assertion error `smoke: expected status sealed,
    // execution failed: skill run failed: graph result producer 'entry.note' declares no
    // semantic output contract; …` (and `'entry.read'`, `'entry.sub'` for the others).
    let cases = [
        ("an agent-task step without outputs", "note", AGENT_NOTE.to_owned(), ""),
        (
            "a tool whose contract emits no artifact",
            "read",
            "        - id: read\n          tool: evidence.index_sources\n          inputs:\n            \
             sources: []\n"
                .to_owned(),
            "",
        ),
        (
            "a sibling runner without outputs",
            "sub",
            "        - id: sub\n          skill: .\n          runner: inner\n".to_owned(),
            "  inner:\n    type: agent-task\n    agent: builder\n    task: gstep-note\n",
        ),
    ];
    for (what, step, steps, extra) in cases {
        let dir = workspace(step, &steps, extra);
        let report = lab("validate", dir.path());
        assert_eq!(report["verdict"], "validation_failed", "{what}: {report}");
        let reason = report["harness"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "smoke: expected status sealed, execution failed: skill run failed: {}",
                refusal(step)
            )),
            "{what}: {reason}"
        );
    }
}

#[test]
fn result_producers_declaring_a_contract_are_admitted_and_run() {
    // Runx admits these and runs them: with `artifacts.wrap_as` the agent-task step then fails
    // for want of outputs (`harness expectation mismatch at expect.status: expected sealed,
    // actual failure`); `fs.read` and an approval run (failure, needs_agent); a sibling runner
    // declaring `outputs: {note: string}` passes.
    let cases = [
        (
            "note",
            format!("{AGENT_NOTE}          artifacts:\n            wrap_as: note_packet\n"),
            "",
        ),
        (
            "read",
            "        - id: read\n          tool: fs.read\n          inputs:\n            path: \
             SKILL.md\n"
                .to_owned(),
            "",
        ),
        (
            "gate",
            "        - id: gate\n          run:\n            type: approval\n".to_owned(),
            "",
        ),
        (
            "sub",
            "        - id: sub\n          skill: .\n          runner: inner\n".to_owned(),
            "  inner:\n    type: agent-task\n    agent: builder\n    task: gstep-note\n    \
             outputs:\n      note: string\n",
        ),
    ];
    for (step, steps, extra) in cases {
        let dir = workspace(step, &steps, extra);
        let report = lab("validate", dir.path());
        let reason = report["harness"]["reason"].as_str().unwrap_or("");
        assert!(
            !reason.contains("declares no semantic output contract"),
            "{step}: {reason}"
        );
    }
}

#[test]
fn an_inline_agent_task_step_with_a_command_or_args_is_refused_at_load_in_runx_words() {
    // Runx (`runx skill inspect skills/gstep --json`): `invalid skill credential declaration:
    // skill package validation failed: X.yaml: steps.0.run is not a valid inline source:
    // agent-task sources must not declare source.command or source.args.`; with a tool step
    // before it, `steps.1.run`.
    let outputs = "            outputs:\n              note: string\n";
    let first = format!("{AGENT_NOTE}            command: node\n{outputs}");
    let second = format!(
        "        - id: other\n          tool: fs.read\n          inputs:\n            path: \
         SKILL.md\n{AGENT_NOTE}            args: [x]\n{outputs}"
    );
    for (steps, index) in [(first, 0), (second, 1)] {
        let dir = workspace("note", &steps, "");
        let inspection = lab("inspect", dir.path())["target_inspection"].clone();
        assert_eq!(inspection["status"], "invalid", "{inspection}");
        let error = inspection["error"].as_str().unwrap();
        assert_eq!(
            error.lines().next(),
            Some(
                format!(
                    "skill package validation failed: X.yaml: steps.{index}.run is not a valid \
                     inline source: agent-task sources must not declare source.command or \
                     source.args."
                )
                .as_str()
            ),
            "{error}"
        );
    }
}

/// `skills/other` beside `skills/gstep`: an agent-task default runner `main` declaring no
/// outputs, and a graph runner `deepg` whose result producer `bare` declares none either.
fn with_other_package(dir: &Path) {
    let other = dir.join("skills/other");
    fs::create_dir_all(&other).unwrap();
    fs::write(
        other.join("SKILL.md"),
        "---\nname: other\ndescription: Note another topic.\n---\nNote it.\n",
    )
    .unwrap();
    fs::write(
        other.join("X.yaml"),
        "skill: other\nversion: \"0.1.0\"\ncatalog:\n  kind: skill\n  audience: public\n  \
         visibility: internal\n  role: canonical\nrunners:\n  main:\n    default: true\n    \
         type: agent-task\n    agent: builder\n    task: other-note\n  deepg:\n    type: graph\n    \
         graph:\n      name: deepg\n      result_from: [bare]\n      steps:\n        - id: bare\n          \
         run:\n            type: agent-task\n            agent: builder\n            task: \
         other-bare\n",
    )
    .unwrap();
}

#[test]
fn a_result_producer_naming_another_package_is_judged_by_that_package_runner_in_runx_words() {
    // Runx reads the package a `skill:` step names before the graph runs: `graph result
    // producer 'entry.sub' …` for its default runner without outputs, `'entry.sub.bare'` when
    // the step names its graph runner `deepg`, whose own producer declares none.
    for (runner, node) in [("", "sub"), ("          runner: deepg\n", "sub.bare")] {
        let steps = format!("        - id: sub\n          skill: ../other\n{runner}");
        let dir = workspace("sub", &steps, "");
        with_other_package(dir.path());
        let report = lab("validate", dir.path());
        assert_eq!(report["verdict"], "validation_failed", "{report}");
        let reason = report["harness"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "smoke: expected status sealed, execution failed: skill run failed: {}",
                refusal(node)
            )),
            "{runner}: {reason}"
        );
    }
}

#[test]
fn a_graph_step_naming_a_tool_that_resolves_nowhere_is_refused_before_the_graph_runs() {
    // Runx: `… execution failed: skill run failed: operator context could not resolve required
    // local tool 'foo.bar'` for a step `tool: foo.bar`, and `'zz.tool'` for a step's
    // `allowed_tools: [zz.tool, fs.read]` (no manifest under any `tools` or `.runx/tools`).
    let allowed = format!(
        "{AGENT_NOTE}            outputs:\n              note: string\n          allowed_tools: \
         [zz.tool, fs.read]\n"
    );
    for (result_from, steps, tool) in [
        (
            "read",
            "        - id: read\n          tool: foo.bar\n".to_owned(),
            "foo.bar",
        ),
        ("note", allowed, "zz.tool"),
    ] {
        let dir = workspace(result_from, &steps, "");
        let report = lab("validate", dir.path());
        let reason = report["harness"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(&format!(
                "smoke: expected status sealed, execution failed: skill run failed: operator context \
                 could not resolve required local tool '{tool}'"
            )),
            "{reason}"
        );
    }
}

#[test]
fn a_runner_own_allowed_tools_are_not_resolved_before_it_runs() {
    // Runx: a graph runner declaring `allowed_tools: [qq.tool]` fails on its result producer
    // (`graph result producer 'entry.note' …`), not on the tool.
    let dir = workspace("note", AGENT_NOTE, "");
    let profile = dir.path().join("skills/gstep/X.yaml");
    let text = fs::read_to_string(&profile).unwrap();
    let text = text.replace(
        "    type: graph\n",
        "    type: graph\n    allowed_tools: [qq.tool]\n",
    );
    fs::write(&profile, text).unwrap();
    let report = lab("validate", dir.path());
    let reason = report["harness"]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!(
            "smoke: expected status sealed, execution failed: skill run failed: {}",
            refusal("note")
        )),
        "{reason}"
    );
}

#[test]
fn a_step_tool_ref_that_is_no_catalog_name_is_refused_at_load_in_runx_words() {
    // Runx (`runx harness skills/gstep --json`): `skill package validation failed: X.yaml:
    // steps.0.tool "foobar" is not an admissible catalog tool ref: tool ref must include a
    // namespace, for example fs.read.`, and for `allowed_tools: [fs.read, ../x]` on an
    // agent-task step `… steps.0.allowed_tools entry "../x" is not an admissible agent tool
    // ref: tool ref must not contain path traversal or separators.`
    let allowed = format!(
        "{AGENT_NOTE}            outputs:\n              note: string\n          allowed_tools: \
         [fs.read, ../x]\n"
    );
    for (result_from, steps, runx) in [
        (
            "read",
            "        - id: read\n          tool: foobar\n".to_owned(),
            "steps.0.tool \"foobar\" is not an admissible catalog tool ref: tool ref must \
             include a namespace, for example fs.read.",
        ),
        (
            "note",
            allowed,
            "steps.0.allowed_tools entry \"../x\" is not an admissible agent tool ref: tool ref \
             must not contain path traversal or separators.",
        ),
    ] {
        let dir = workspace(result_from, &steps, "");
        let inspection = lab("inspect", dir.path())["target_inspection"].clone();
        assert_eq!(inspection["status"], "invalid", "{inspection}");
        let error = inspection["error"].as_str().unwrap();
        assert_eq!(
            error.lines().next(),
            Some(format!("skill package validation failed: X.yaml: {runx}").as_str()),
            "{error}"
        );
    }
}
