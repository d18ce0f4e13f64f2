//! The real Runx's answers (`shared/data/runx/oracle/cases/`), held against `mindrune lab`.
//!
//! Each case folder holds one input (a package, its workspace, an agent's answers or a receipt)
//! and what the real Runx 0.8.2 said of it. This test lays every case out as the cases'
//! README says (`workspace/` at a fresh scratch root, `package/` at `target_dir`, files 0644,
//! folders 0755), runs the case's `mindrune_command` on the real binary and compares the
//! decision, the first line of the reason where `contract` names it, and `checks` where present.
//! It reads the cases from the shared data (`$MINDRUNE_SHARED`, else `../shared` beside the
//! checkout) and never copies them into the repository.
//!
//! It prints a tally and every divergent case with both answers, and fails on a divergence
//! that is not in [`STILL_TO_FIX`] (and on an entry there that no longer diverges, so the list
//! only shrinks). A case with `known_divergence` records where MindRune differs on purpose: it
//! is held to MindRune's documented answer (`mindrune_7081593`), with Runx's kept beside it.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Cases where MindRune still answers differently from Runx, each with the reason. A case
/// leaves this list when it agrees; the test fails if a listed case agrees (remove it).
const STILL_TO_FIX: &[(&str, &str)] = &[];

pub(crate) fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    )
}

/// Copies a folder with plain modes: files 0644, folders 0755.
pub(crate) fn lay_out(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    fs::set_permissions(to, fs::Permissions::from_mode(0o755)).unwrap();
    let mut entries: Vec<_> = fs::read_dir(from)
        .unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (set MINDRUNE_SHARED)",
                from.display()
            )
        })
        .map(Result::unwrap)
        .collect();
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            lay_out(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).unwrap()).unwrap();
            fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// What MindRune answered on one case.
#[derive(Debug, Default)]
struct Answer {
    decision: String,
    first_line: String,
    /// The whole reason, for the cases where MindRune's second line matters.
    reason: String,
    /// `checks`' values, by kind.
    checks: BTreeMap<String, Value>,
}

fn input_names(runner: &Value) -> Value {
    Value::Array(
        runner["inputs"]
            .as_array()
            .map(|inputs| inputs.iter().map(|input| input["name"].clone()).collect())
            .unwrap_or_default(),
    )
}

fn first_line(text: &str, scratch: &Path, target_dir: Option<&str>) -> String {
    let line = text.lines().next().unwrap_or("").to_owned();
    let mut roots = vec![scratch.to_path_buf()];
    if let Ok(canonical) = scratch.canonicalize() {
        roots.insert(0, canonical);
    }
    let mut line = line;
    for root in &roots {
        let root = root.to_str().unwrap();
        if let Some(target_dir) = target_dir {
            line = line.replace(&format!("{root}/{target_dir}"), "$PACKAGE");
        }
        line = line.replace(root, "$SCRATCH");
    }
    line
}

/// Lays the case out, runs MindRune's counterpart and reads its answer.
fn run_case(case_dir: &Path, case: &Value) -> Answer {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let aside = dir.path().join("aside");
    fs::create_dir_all(&aside).unwrap();
    fs::create_dir_all(&scratch).unwrap();
    if case_dir.join("workspace").is_dir() {
        lay_out(&case_dir.join("workspace"), &scratch);
    }
    let target_dir = case["target_dir"].as_str();
    if let Some(target_dir) = target_dir
        && case_dir.join("package").is_dir()
    {
        lay_out(&case_dir.join("package"), &scratch.join(target_dir));
    }
    let command_text = case["mindrune_command"].as_str().unwrap();
    let verb = command_text
        .strip_prefix("mindrune lab ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("unknown mindrune_command {command_text}"));
    let mut command = lab_command(case_dir, case, verb, &scratch, &aside, target_dir);
    let output = command.output().unwrap();
    read_answer(verb, &output, &scratch, target_dir)
}

/// MindRune's counterpart of the case's Runx command, laid out in `scratch` (its other files in
/// `aside`).
fn lab_command(
    case_dir: &Path,
    case: &Value,
    verb: &str,
    scratch: &Path,
    aside: &Path,
    target_dir: Option<&str>,
) -> Command {
    let scratch_arg = scratch.to_str().unwrap().to_owned();
    let command_text = case["mindrune_command"].as_str().unwrap();
    let mut command = Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
    command
        .arg("lab")
        .arg(verb)
        .env("MINDRUNE_HOME", aside.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_LAB_CRASH_AT")
        .env_remove("MINDRUNE_LAB_SIGNING_KEY")
        .current_dir(scratch);
    match verb {
        "inspect" => {
            command.args([
                "--repo-root",
                &scratch_arg,
                "--target-dir",
                target_dir.unwrap(),
            ]);
        }
        "validate" => {
            command.args([
                "--repo-root",
                &scratch_arg,
                "--target-dir",
                target_dir.unwrap(),
                "--allow-execute-harness",
            ]);
        }
        "build" | "improve" | "harness" => {
            command.args([
                "--repo-root",
                &scratch_arg,
                "--target-dir",
                target_dir.unwrap(),
                "--objective",
                case["objective"].as_str().unwrap(),
            ]);
            let answers: Value =
                serde_json::from_slice(&fs::read(case_dir.join("answers.json")).unwrap()).unwrap();
            if case_dir.join("mutate.sh").is_file() {
                // An agent that prints the act's answer, and before the author act runs
                // mutate.sh in the workspace root.
                for act in ["skill-lab-architecture", "skill-lab-author"] {
                    let answer = &answers["answers"][format!("agent_task.{act}.output")];
                    fs::write(
                        aside.join(format!("{act}.json")),
                        serde_json::to_vec(answer).unwrap(),
                    )
                    .unwrap();
                }
                fs::copy(case_dir.join("mutate.sh"), aside.join("mutate.sh")).unwrap();
                let agent = format!(
                    "cat >/dev/null; if [ \"$MINDRUNE_LAB_ACT\" = skill-lab-author ]; then \
                     (cd '{scratch_arg}' && sh '{aside}/mutate.sh'); fi; \
                     cat \"{aside}/$MINDRUNE_LAB_ACT.json\"",
                    aside = aside.display()
                );
                fs::write(aside.join("agent.sh"), agent).unwrap();
                command.args([
                    "--agent-cmd",
                    &format!("sh '{}'", aside.join("agent.sh").display()),
                ]);
            } else {
                fs::copy(case_dir.join("answers.json"), aside.join("answers.json")).unwrap();
                command.args(["--answers", aside.join("answers.json").to_str().unwrap()]);
            }
        }
        "verify" => {
            let receipt = scratch.join("receipt.json");
            fs::copy(case_dir.join("receipt.json"), &receipt).unwrap();
            command.arg(&receipt).args(["--repo-root", &scratch_arg]);
            if command_text.contains("MINDRUNE_LAB_SIGNING_KEY naming") {
                let key = aside.join("key.ed25519");
                fs::write(&key, [7u8; 32]).unwrap();
                fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
                command.env("MINDRUNE_LAB_SIGNING_KEY", &key);
            }
        }
        other => panic!("unknown lab command {other}"),
    }
    command.arg("--json");
    command
}

/// MindRune's decision and first line, read from what the command printed.
fn read_answer(
    verb: &str,
    output: &std::process::Output,
    scratch: &Path,
    target_dir: Option<&str>,
) -> Answer {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let json: Option<Value> = serde_json::from_str(&stdout).ok();
    let line = |text: &str| first_line(text, scratch, target_dir);
    let mut answer = Answer::default();
    match (verb, json) {
        ("inspect", Some(json)) if output.status.success() => {
            let inspection = &json["target_inspection"];
            answer.decision = if inspection["status"] == "ok" {
                "ok"
            } else {
                "refused"
            }
            .to_owned();
            answer.first_line = line(inspection["error"].as_str().unwrap_or(""));
            let mut per_runner = serde_json::Map::new();
            for runner in inspection["runner_inspections"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let name = runner["name"]
                    .as_str()
                    .or_else(|| runner["runner"]["name"].as_str())
                    .unwrap_or("")
                    .to_owned();
                per_runner.insert(name, input_names(&runner["runner"]));
            }
            answer.checks.insert(
                "inputs_order".to_owned(),
                serde_json::json!({
                    "runner": input_names(&inspection["runner"]),
                    "runner_inspections": per_runner,
                }),
            );
            answer
                .checks
                .insert("catalog_skills".to_owned(), json["catalog_skills"].clone());
        }
        ("validate", Some(json)) => {
            answer.decision = json["verdict"].as_str().unwrap_or("").to_owned();
            let reason = if json["inspect"]["status"] == "ok" {
                json["harness"]["reason"].as_str()
            } else {
                json["inspect"]["error"].as_str()
            };
            answer.first_line = line(reason.unwrap_or(""));
            answer.reason = reason.unwrap_or("").to_owned();
        }
        ("build" | "improve" | "harness", Some(json)) => {
            if let Some(verdict) = json["apply_result"]["verdict"].as_str() {
                answer.decision = verdict.to_owned();
            } else if json["reason"].is_string() {
                answer.decision = "refused".to_owned();
            } else {
                answer.decision = format!("(no verdict: exit {:?})", output.status.code());
            }
            answer.first_line = line(json["reason"].as_str().unwrap_or(""));
            answer.reason = json["reason"].as_str().unwrap_or("").to_owned();
        }
        ("verify", Some(json)) if json["verdict"].is_string() => {
            answer.decision = json["verdict"].as_str().unwrap().to_owned();
            answer.first_line = line(
                json["reason"]
                    .as_str()
                    .or_else(|| json["error"].as_str())
                    .unwrap_or(""),
            );
        }
        _ => {
            answer.decision = "refused".to_owned();
            let text = if stderr.trim().is_empty() {
                &stdout
            } else {
                &stderr
            };
            answer.first_line = line(text.trim().trim_start_matches("error: "));
        }
    }
    answer
}

/// The `checks` of a case that MindRune's answer does not meet, described.
fn unmet_checks(case: &Value, answer: &Answer) -> Vec<String> {
    let mut unmet = Vec::new();
    for check in case["checks"].as_array().into_iter().flatten() {
        let kind = check["kind"].as_str().unwrap();
        let ours = answer.checks.get(kind).cloned().unwrap_or(Value::Null);
        if ours != check["runx"] {
            unmet.push(format!(
                "{kind}:\n        runx:     {}\n        mindrune: {ours}",
                check["runx"]
            ));
        }
    }
    unmet
}

#[test]
fn every_runx_oracle_case_gets_runx_decision_and_first_line() {
    let cases_root = shared().join("data/runx/oracle/cases");
    let mut names: Vec<String> = fs::read_dir(&cases_root)
        .unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (set MINDRUNE_SHARED)",
                cases_root.display()
            )
        })
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(names.len() >= 40, "only {} cases found", names.len());

    let (mut decisions, mut decisions_equal) = (0, 0);
    let (mut lines, mut lines_equal) = (0, 0);
    let mut divergent: Vec<(String, String)> = Vec::new();
    let mut known: Vec<String> = Vec::new();
    for name in &names {
        let case_dir = cases_root.join(name);
        let case: Value =
            serde_json::from_slice(&fs::read(case_dir.join("runx.json")).unwrap()).unwrap();
        let answer = run_case(&case_dir, &case);
        let contract = case["contract"].as_str().unwrap();
        let runx_decision = case["decision"].as_str().unwrap();
        let runx_line = case["first_line"].as_str().unwrap();
        decisions += 1;
        let decision_equal = answer.decision == runx_decision;
        decisions_equal += usize::from(decision_equal);
        let wants_line = contract.contains("first line");
        let line_equal = answer.first_line == runx_line;
        if wants_line {
            lines += 1;
            lines_equal += usize::from(line_equal);
        }
        let unmet = unmet_checks(&case, &answer);
        if case["known_divergence"].is_string() {
            // MindRune differs on purpose: hold it to its documented answer.
            let documented = case["mindrune_7081593"]["decision"].as_str().unwrap();
            known.push(format!(
                "  {name}: runx {runx_decision}, mindrune {} (documented: {documented})",
                answer.decision
            ));
            // Where MindRune refuses what Runx applies (D7) or fails what Runx tests (D5),
            // the refusal says so on its second line.
            let says_stricter = !case["classes"]
                .as_array()
                .is_some_and(|classes| classes.iter().any(|class| class == "D7" || class == "D5"))
                || answer
                    .reason
                    .lines()
                    .nth(1)
                    .is_some_and(|line| line.contains("MindRune is stricter"));
            if answer.decision != documented || !says_stricter {
                divergent.push((
                    name.clone(),
                    format!(
                        "known divergence: documented {documented}, got {} ({})",
                        answer.decision, answer.reason
                    ),
                ));
            }
            continue;
        }
        if decision_equal && (!wants_line || line_equal) && unmet.is_empty() {
            continue;
        }
        let mut report = format!(
            "decision  runx {runx_decision:?}, mindrune {:?}",
            answer.decision
        );
        if wants_line && !line_equal {
            report.push_str(&format!(
                "\n      first line\n        runx:     {runx_line}\n        mindrune: {}",
                answer.first_line
            ));
        }
        for check in unmet {
            report.push_str(&format!("\n      {check}"));
        }
        divergent.push((name.clone(), report));
    }

    println!(
        "runx oracle cases: {decisions_equal}/{decisions} decisions equal, \
         {lines_equal}/{lines} first lines equal"
    );
    println!("known divergences (MindRune stricter on purpose):");
    for line in &known {
        println!("{line}");
    }
    println!("divergent cases: {}", divergent.len());
    for (name, report) in &divergent {
        println!("  {name}: {report}");
    }

    let allowed: BTreeMap<&str, &str> = STILL_TO_FIX.iter().copied().collect();
    let unexpected: Vec<&str> = divergent
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|name| !allowed.contains_key(name))
        .collect();
    let fixed: Vec<&str> = allowed
        .keys()
        .copied()
        .filter(|name| !divergent.iter().any(|(divergent, _)| divergent == name))
        .collect();
    assert!(
        unexpected.is_empty(),
        "cases diverging from Runx and not in STILL_TO_FIX: {unexpected:?}"
    );
    assert!(
        fixed.is_empty(),
        "cases in STILL_TO_FIX that now agree with Runx (remove them): {fixed:?}"
    );
}
