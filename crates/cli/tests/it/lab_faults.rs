//! `mindrune lab` killed in the middle of its commit, at every mutation in turn: afterwards
//! the next lab step finds the target byte for byte as it was, with no journal left, and a
//! clean retry applies the change whole. And `lab build` SIGKILLed at random moments, a hundred
//! times: afterwards the next `lab inspect` finds the package absent or whole, never a mix
//! (seeded; the seed is printed and `MINDRUNE_FAULT_SEED` replays a run).
//!
//! The debug binary honours `MINDRUNE_LAB_CRASH_AT=N`, which aborts the process (SIGABRT, no
//! unwinding, no cleanup, as a `kill -9` would) just before the commit's N-th mutation.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    )
}

/// The agent answers of one of the skill-lab package's own fixtures.
fn fixture_answers(name: &str) -> Value {
    let path = shared()
        .join("data/runx/packages/skill-lab/fixtures")
        .join(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    });
    let fixture: Value = yaml_serde::from_str(&text).unwrap();
    fixture["caller"]["answers"].clone()
}

/// Every file of a folder (recursively, skipping `.runx`) with its bytes and mode.
fn tree(root: &Path) -> BTreeMap<String, (String, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == ".runx") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                let mode = fs::metadata(&path).unwrap().permissions().mode();
                let relative = path.strip_prefix(root).unwrap().display().to_string();
                let text = String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned();
                files.insert(relative, (text, mode));
            }
        }
    }
    files
}

fn lab(repo: &Path, args: &[&str], crash_at: Option<usize>) -> std::process::Output {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
    cmd.arg("lab").args(args).arg("--repo-root").arg(repo);
    cmd.env_remove("MINDRUNE_LAB_CRASH_AT")
        .env_remove("MINDRUNE_LOG");
    if let Some(step) = crash_at {
        cmd.env("MINDRUNE_LAB_CRASH_AT", step.to_string());
    }
    cmd.output().unwrap()
}

/// Crashes `lab <runner>` at each commit mutation in turn until a run completes; after each
/// crash, the `recover` step (`inspect` or `validate`, which roll an interrupted commit back
/// before reading) must leave exactly the `before` files.
fn crash_at_every_point(repo: &Path, target: &str, runner_args: &[&str], recover: &str) -> usize {
    let before = tree(repo);
    for step in 1..50 {
        let run = lab(repo, runner_args, Some(step));
        if run.status.success() {
            return step;
        }
        assert_eq!(
            run.status.code(),
            None,
            "crash point {step}: the run should have been killed, not fail: {}",
            String::from_utf8_lossy(&run.stdout)
        );
        let recovered = lab(repo, &[recover, "--target-dir", target, "--json"], None);
        // The old package's own verdict may be anything; what matters is that the step ran on
        // the restored files, so it printed its JSON and did not stop at the journal.
        assert!(
            serde_json::from_slice::<Value>(&recovered.stdout).is_ok(),
            "crash point {step}: {} {}",
            String::from_utf8_lossy(&recovered.stdout),
            String::from_utf8_lossy(&recovered.stderr)
        );
        assert_eq!(
            tree(repo),
            before,
            "crash point {step}: the target was not restored"
        );
        let journal = repo.join(".runx/authoring/journal");
        assert!(
            !journal.exists() || fs::read_dir(&journal).unwrap().next().is_none(),
            "crash point {step}: the journal was left behind"
        );
    }
    panic!("the run never completed");
}

#[test]
fn a_build_killed_at_any_commit_step_leaves_no_package_and_a_retry_builds_it_whole() {
    let repo = tempfile::tempdir().unwrap();
    fs::create_dir(repo.path().join("skills")).unwrap();
    let answers = repo.path().join("answers.json");
    fs::write(
        &answers,
        json!({"answers": fixture_answers("build-thin-skill.yaml")}).to_string(),
    )
    .unwrap();
    let args = [
        "build",
        "--target-dir",
        "skills/note",
        "--objective",
        "Create a bounded decision-note skill",
        "--answers",
        answers.to_str().unwrap(),
    ];
    let completed_at = crash_at_every_point(repo.path(), "skills/note", &args, "inspect");
    // The commit creates the package folder and the record folder, writes two files and the
    // record, and verifies: every one of those was a crash point before the run completed.
    assert!(completed_at >= 6, "only {completed_at} crash points");
    let files = tree(&repo.path().join("skills/note"));
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        ["SKILL.md", "X.yaml"]
    );
}

#[test]
fn an_improve_killed_at_any_commit_step_leaves_the_old_package_byte_for_byte() {
    let repo = tempfile::tempdir().unwrap();
    let target = repo.path().join("skills/demo");
    fs::create_dir_all(target.join("fixtures")).unwrap();
    let thin = fixture_answers("build-thin-skill.yaml");
    let writes = thin["agent_task.skill-lab-author.output"]["change_draft"]["writes"]
        .as_array()
        .unwrap()
        .clone();
    for write in &writes {
        fs::write(
            target.join(write["path"].as_str().unwrap()),
            write["contents"].as_str().unwrap(),
        )
        .unwrap();
    }
    fs::write(target.join("fixtures/obsolete.yaml"), "name: obsolete\n").unwrap();

    // The no-change fixture's extend_existing decision, made to plan one deletion, and a draft
    // that rewrites the manual, adds a fixture and deletes the obsolete one.
    let mut answers = fixture_answers("no-change-skips-write.yaml");
    let decision =
        &mut answers["agent_task.skill-lab-architecture.output"]["architecture_decision"];
    decision["resource_budget"]["max_files"] = json!(8);
    decision["resource_budget"]["max_fanout"] = json!(1);
    decision["deletions"] = json!(["fixtures/obsolete.yaml"]);
    let manual = writes[0]["contents"].as_str().unwrap().replace(
        "one bounded recommendation",
        "one bounded, reviewable recommendation",
    );
    answers["agent_task.skill-lab-author.output"]["change_draft"] = json!({
        "schema": "runx.skill.change_draft.v1",
        "decision": "write",
        "summary": "Sharpen the manual and replace the obsolete fixture.",
        "non_goals": ["Do not change the runner."],
        "writes": [
            {"path": "SKILL.md", "contents": manual},
            {"path": "fixtures/ready.yaml", "contents": "name: ready\nkind: skill\ntarget: ..\nrunner: note\ninputs:\n  objective: Choose the next action.\ncaller:\n  answers:\n    agent_task.fixture-decision-note.output:\n      decision_note:\n        objective: Choose the next action.\n        recommendation: Read the evidence first.\nexpect:\n  status: sealed\n"}
        ],
        "deletes": ["fixtures/obsolete.yaml"],
        "expected_outputs": []
    });
    let answers_path = repo.path().join("answers.json");
    fs::write(&answers_path, json!({ "answers": answers }).to_string()).unwrap();
    let args = [
        "improve",
        "--target-dir",
        "skills/demo",
        "--objective",
        "Sharpen the decision-note manual",
        "--answers",
        answers_path.to_str().unwrap(),
    ];
    crash_at_every_point(repo.path(), "skills/demo", &args, "validate");
    let files = tree(&target);
    assert!(files.contains_key("fixtures/ready.yaml"));
    assert!(!files.contains_key("fixtures/obsolete.yaml"));
    assert_eq!(files["SKILL.md"].0, manual, "the manual landed whole");
}

/// A repository with an empty `skills/` and the thin-skill fixture's answers beside it; the
/// arguments of `lab build` that drafts `skills/note` from them.
fn build_repo(answers: &Value) -> (tempfile::TempDir, Vec<String>) {
    let repo = tempfile::tempdir().unwrap();
    fs::create_dir(repo.path().join("skills")).unwrap();
    let path = repo.path().join("answers.json");
    fs::write(&path, json!({ "answers": answers }).to_string()).unwrap();
    let args = [
        "build",
        "--target-dir",
        "skills/note",
        "--objective",
        "Create a bounded decision-note skill",
        "--answers",
        path.to_str().unwrap(),
    ];
    (repo, args.map(str::to_owned).to_vec())
}

fn lab_command(repo: &Path, args: &[String]) -> std::process::Command {
    let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
    cmd.arg("lab").args(args).arg("--repo-root").arg(repo);
    cmd.env_remove("MINDRUNE_LAB_CRASH_AT")
        .env_remove("MINDRUNE_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// The entries of a folder, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `mindrune lab build` SIGKILLed at a random moment (not only at a commit mutation: while it
/// plans, binds, writes its record or its receipt too) until a hundred kills have landed: each
/// time the next `lab inspect` finds the package absent (not even an empty folder or a temp
/// file) or exactly the drafted files, never a mix, and leaves no journal behind, and no
/// harness scratch folder of the killed build is left in the temp folder.
#[test]
fn a_build_killed_at_a_random_moment_leaves_no_package_or_the_whole_drafted_one() {
    use std::os::unix::process::ExitStatusExt as _;
    use std::time::{Duration, Instant};
    let mut rng = crate::util::Rng(crate::util::fault_seed("lab faults (random kills)"));
    let answers = fixture_answers("build-thin-skill.yaml");
    // The drafted files, and the package a build run to the end makes of them (with the
    // modes it gives them): how long it takes is the range the kill delays are drawn from.
    let drafted: BTreeMap<String, String> =
        answers["agent_task.skill-lab-author.output"]["change_draft"]["writes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|write| {
                (
                    write["path"].as_str().unwrap().to_owned(),
                    write["contents"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
    // Every run gets a temp folder of the test's own: what a killed build leaves there (its
    // harness scratch copies, its replay's throwaway receipts) is seen, and never reaches /tmp.
    let temp = tempfile::tempdir().unwrap();
    let (reference, args) = build_repo(&answers);
    let start = Instant::now();
    let status = lab_command(reference.path(), &args)
        .env("TMPDIR", temp.path())
        .status()
        .unwrap();
    let full = start.elapsed();
    assert!(status.success());
    assert_eq!(
        entries(temp.path()),
        Vec::<String>::new(),
        "a finished build left scratch folders"
    );
    let whole = tree(&reference.path().join("skills/note"));
    assert_eq!(
        whole
            .iter()
            .map(|(path, (text, _))| (path.clone(), text.clone()))
            .collect::<BTreeMap<_, _>>(),
        drafted,
        "the build did not write exactly the drafted files"
    );

    // Rounds until a hundred kills have landed inside a build (one that finished first counts
    // as a round, not a kill).
    let wanted = 100;
    let (mut rounds, mut killed, mut absent, mut complete, mut swept) = (0, 0, 0, 0, 0);
    while killed < wanted {
        let round = rounds;
        rounds += 1;
        assert!(
            rounds <= 4 * wanted,
            "only {killed} of {round} kills landed inside the build"
        );
        let (repo, args) = build_repo(&answers);
        let target = repo.path().join("skills/note");
        let mut child = lab_command(repo.path(), &args)
            .env("TMPDIR", temp.path())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(
            rng.below(full.as_micros() as u64 * 9 / 10),
        ));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if status.signal() == Some(9) {
            killed += 1;
        } else {
            assert!(
                status.success(),
                "round {round}: the build failed: {status}"
            );
        }
        let left = entries(temp.path());
        if !left.is_empty() {
            swept += 1;
        }
        let inspect_args = ["inspect", "--target-dir", "skills/note", "--json"].map(str::to_owned);
        let inspect = lab_command(repo.path(), &inspect_args)
            .env("TMPDIR", temp.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        assert!(
            serde_json::from_slice::<Value>(&inspect.stdout).is_ok(),
            "round {round}: inspect printed no report: {}",
            String::from_utf8_lossy(&inspect.stderr)
        );
        // Every process that made a scratch folder there is gone, so the next lab step swept
        // them all.
        assert_eq!(
            entries(temp.path()),
            Vec::<String>::new(),
            "round {round}: the killed build's scratch folders outlived the next lab step (it left {left:?})"
        );
        let files = tree(&target);
        if files.is_empty() {
            assert!(!target.exists(), "round {round}: an empty package folder");
            absent += 1;
        } else {
            assert_eq!(
                files, whole,
                "round {round}: a mix of old and drafted files"
            );
            complete += 1;
        }
        let journal = repo.path().join(".runx/authoring/journal");
        assert!(
            !journal.exists() || fs::read_dir(&journal).unwrap().next().is_none(),
            "round {round}: inspect left the journal behind"
        );
        // Nothing was written beside the package either: the repository holds skills/, the
        // answers and MindRune's own .runx/.
        let mut top: Vec<String> = fs::read_dir(repo.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        top.retain(|name| name != ".runx");
        assert_eq!(top, ["answers.json", "skills"], "round {round}");
    }
    eprintln!(
        "lab faults (random kills): {killed} of {rounds} builds killed within {full:?}; afterwards {absent} without the package, {complete} with the whole of it; {swept} left scratch folders, all swept"
    );
}
