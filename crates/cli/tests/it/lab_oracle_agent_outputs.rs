//! What Runx asks of an agent-task runner, held to what the real Runx said.
//!
//! At load (`runx-parser/src/skill/source.rs`) it needs `agent` and `task` and refuses
//! `command`/`args`. That it declares at least one output is checked only when the runner runs:
//! Runx loads such a package (`runx skill inspect` says `ok`) and refuses it when building the
//! agent act's envelope, before it asks for an answer (`runx-runtime/src/agent_invocation.rs`). Observed from runx-cli 0.8.2 (`AutoMerchLab/runx`
//! at commit `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand with the nightly
//! toolchain, run by hand on 2026-12-07) on the files written below; no Runx binary or recipe is
//! kept.

use std::fs;
use std::path::Path;

use serde_json::Value;

/// A workspace holding `skills/noout`, whose agent-task runner `note` declares `outputs` as
/// given (`None`: no `outputs` key), with one case answering its agent act.
fn workspace(outputs: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("skills/noout");
    fs::create_dir_all(&package).unwrap();
    fs::write(
        package.join("SKILL.md"),
        "---\nname: noout\ndescription: Note a topic.\n---\nNote the topic.\n",
    )
    .unwrap();
    let outputs = outputs.map_or(String::new(), |o| format!("    outputs:{o}\n"));
    fs::write(
        package.join("X.yaml"),
        format!(
            "skill: noout\nversion: \"0.1.0\"\ncatalog:\n  kind: skill\n  audience: public\n  \
             visibility: internal\n  role: canonical\nharness:\n  cases:\n    - name: smoke\n      \
             runner: note\n      inputs:\n        topic: x\n      caller:\n        answers:\n          \
             agent_task.noout-note.output:\n            note: done\n      expect:\n        \
             status: sealed\nrunners:\n  note:\n    default: true\n    type: agent-task\n    \
             agent: builder\n    task: noout-note\n{outputs}    inputs:\n      topic:\n        \
             type: string\n        required: true\n        description: What to note.\n"
        ),
    )
    .unwrap();
    dir
}

/// [`workspace`] with a runner declaring an output, its X.yaml passed through `edit`.
fn edited(edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = workspace(Some("\n      note: string"));
    let profile = dir.path().join("skills/noout/X.yaml");
    let text = fs::read_to_string(&profile).unwrap();
    fs::write(&profile, edit(text)).unwrap();
    dir
}

fn lab(verb: &str, root: &Path) -> Value {
    crate::util::lab_json(verb, root, "skills/noout")
}

#[test]
fn an_agent_task_runner_without_outputs_loads_but_fails_its_case_in_runx_words() {
    // Runx: `runx skill inspect` → `ok`; `runx harness` → `failed`, assertion error `smoke:
    // expected status sealed, execution failed: skill 'note' failed: agent-mediated runners
    // must declare at least one output`, the same with `outputs: {}`.
    for outputs in [None, Some(" {}")] {
        let dir = workspace(outputs);
        assert_eq!(
            lab("inspect", dir.path())["target_inspection"]["status"],
            "ok"
        );
        let report = lab("validate", dir.path());
        assert_eq!(report["verdict"], "validation_failed", "{report}");
        let reason = report["harness"]["reason"].as_str().unwrap();
        assert!(
            reason.contains(
                "smoke: expected status sealed, execution failed: skill 'note' failed: \
                 agent-mediated runners must declare at least one output"
            ),
            "{reason}"
        );
        // Runx seals no receipt for a run that failed as a whole.
        assert_eq!(
            report["harness"]["receipt_ids"],
            serde_json::json!([]),
            "{report}"
        );
    }
}

#[test]
fn an_agent_task_runner_declaring_an_output_passes_its_case() {
    // Runx: with `outputs: {note: string}`, `runx harness` → `passed`.
    let dir = workspace(Some("\n      note: string"));
    assert_eq!(lab("validate", dir.path())["verdict"], "tested");
}

#[test]
fn an_agent_task_runner_without_agent_or_task_or_with_a_command_is_refused_at_load_in_runx_words() {
    // Runx (`runx skill inspect skills/noout --json`): `invalid skill credential declaration:
    // skill package validation failed: X.yaml: source.agent is required.` and so on; the Lab's
    // own `at X.yaml:line: …` line follows Runx's.
    let cases: [(&str, &str, &str); 4] = [
        (
            "    agent: builder\n",
            "",
            "X.yaml: source.agent is required.",
        ),
        (
            "    task: noout-note\n",
            "",
            "X.yaml: source.task is required.",
        ),
        (
            "    agent: builder\n",
            "    agent: builder\n    command: node\n",
            "X.yaml: agent-task sources must not declare source.command or source.args.",
        ),
        (
            "    agent: builder\n",
            "    agent: builder\n    args: [x]\n",
            "X.yaml: agent-task sources must not declare source.command or source.args.",
        ),
    ];
    for (from, to, runx) in cases {
        let dir = edited(|text| text.replace(from, to));
        let inspection = lab("inspect", dir.path())["target_inspection"].clone();
        assert_eq!(inspection["status"], "invalid", "{inspection}");
        let error = inspection["error"].as_str().unwrap();
        assert_eq!(
            error.lines().next(),
            Some(format!("skill package validation failed: {runx}").as_str()),
            "{error}"
        );
    }
}
