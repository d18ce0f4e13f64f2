//! The apply transaction, mirroring Runx's own tests (`skill_packages/tests.rs`,
//! `change/commit_tests.rs`): non-write decisions touch nothing, an invalid candidate never
//! reaches the target, a stale base or plan drift is refused, a re-apply is idempotent and
//! reports deletions, and a change between validation and commit leaves no partial apply.
//! The architecture decisions and drafts are the real ones from the skill-lab package's
//! fixtures in `shared/data/runx/packages/skill-lab/fixtures/`.

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use mindrune_core::{
    ApplyVerdict, ArchitectureDecision, ChangeBundle, ChangeDraft, parse_contract, to_json,
};
use mindrune_core::{Mode, bind_change, plan_change};
use mindrune_engine::ApplyError;
use mindrune_engine::{CandidateCheck, CandidateReport, apply_change};
use mindrune_engine::{PackageSnapshot, snapshot_package};
use serde_json::{Value, json};

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    )
}

/// The agent answers of one of the skill-lab package's fixtures.
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

fn fixture_decision(name: &str) -> ArchitectureDecision {
    let answers = fixture_answers(name);
    parse_contract(
        "architecture_decision",
        &answers["agent_task.skill-lab-architecture.output"]["architecture_decision"],
    )
    .unwrap()
}

fn fixture_draft(name: &str) -> ChangeDraft {
    let answers = fixture_answers(name);
    parse_contract(
        "change_draft",
        &answers["agent_task.skill-lab-author.output"]["change_draft"],
    )
    .unwrap()
}

/// The thin-skill fixture's package files: a real SKILL.md and X.yaml.
fn thin_skill_files() -> Vec<(String, String)> {
    fixture_draft("build-thin-skill.yaml")
        .writes
        .into_iter()
        .map(|write| (write.path.to_string(), write.contents))
        .collect()
}

/// An extend_existing decision (the no-change fixture's) with room for a small package and
/// the given planned deletions.
fn extend_decision(deletions: &[&str]) -> ArchitectureDecision {
    let mut decision = fixture_decision("no-change-skips-write.yaml");
    decision.resource_budget.max_files = 8;
    decision.resource_budget.max_fanout = 1;
    decision.deletions = deletions.iter().map(|path| (*path).into()).collect();
    decision
}

fn write_draft(writes: &[(&str, &str)], deletes: &[&str]) -> ChangeDraft {
    let writes: Vec<Value> = writes
        .iter()
        .map(|(path, contents)| json!({"path": path, "contents": contents}))
        .collect();
    parse_contract(
        "change_draft",
        &json!({
            "schema": "runx.skill.change_draft.v1", "decision": "write",
            "summary": "Maintain the package.", "non_goals": ["Do not publish."],
            "writes": writes, "deletes": deletes, "expected_outputs": []
        }),
    )
    .unwrap()
}

fn bundle_for(base: &str, decision: ArchitectureDecision, draft: ChangeDraft) -> ChangeBundle {
    bind_change(&plan_change(base, decision).unwrap(), draft).unwrap()
}

/// A candidate check that accepts any package with SKILL.md and X.yaml, and can run a side
/// effect while "validating" (a concurrent writer).
struct Check<F: FnMut()> {
    during: F,
    calls: usize,
}

impl<F: FnMut()> CandidateCheck for Check<F> {
    fn check(
        &mut self,
        package_dir: &Path,
        snapshot: &PackageSnapshot,
        _architecture: &ArchitectureDecision,
    ) -> Result<CandidateReport, String> {
        self.calls += 1;
        (self.during)();
        for required in ["SKILL.md", "X.yaml"] {
            if snapshot.file(required).is_none() {
                return Err(format!("{}: missing {required}", package_dir.display()));
            }
        }
        Ok(CandidateReport {
            harness_status: "passed".into(),
        })
    }
}

fn accept() -> Check<impl FnMut()> {
    Check {
        during: || {},
        calls: 0,
    }
}

/// A repo with an existing package `skills/demo` made of the thin skill's files.
fn repo_with_package(extra: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let repo = tempfile::tempdir().unwrap();
    let target = repo.path().join("skills/demo");
    fs::create_dir_all(&target).unwrap();
    for (path, contents) in thin_skill_files() {
        fs::write(target.join(path), contents).unwrap();
    }
    for (path, contents) in extra {
        fs::write(target.join(path), contents).unwrap();
    }
    (repo, target)
}

fn digest_of(path: &Path) -> String {
    snapshot_package(path).unwrap().digest
}

fn assert_matches_schema(schema_file: &str, value: &Value) {
    let path = shared().join("data/runx/schemas").join(schema_file);
    let schema: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{schema_file}: {errors:#?}");
}

#[test]
fn build_creates_the_planned_package_and_reports_it() {
    let repo = tempfile::tempdir().unwrap();
    let base = digest_of(&repo.path().join("skills/note"));
    let bundle = bundle_for(
        &base,
        fixture_decision("build-thin-skill.yaml"),
        fixture_draft("build-thin-skill.yaml"),
    );
    let result = apply_change(
        repo.path(),
        "skills/note",
        Mode::Build,
        &bundle,
        &mut accept(),
    )
    .unwrap();
    let target = repo.path().join("skills/note");
    assert_eq!(result.verdict, ApplyVerdict::ValidatedAndApplied);
    assert_eq!(result.package_digest.as_str(), digest_of(&target));
    assert_eq!(
        result
            .changed_paths
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["SKILL.md", "X.yaml"]
    );
    let mode = fs::metadata(target.join("SKILL.md"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode, 0o100644, "new files get 0644 whatever the umask");
    let validation = result.validation.as_ref().unwrap();
    assert_eq!(validation.delta.files, 2);
    assert_eq!(validation.candidate_digest, result.package_digest);
    assert_matches_schema("skill-apply-result.schema.json", &to_json(&result));
    assert_matches_schema("skill-validation-result.schema.json", &to_json(validation));
    // The staging folder is gone and the application record is in place.
    let leftovers: Vec<_> = fs::read_dir(repo.path().join("skills"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["note"]);
    let hex = bundle.plan_digest.as_str().trim_start_matches("sha256:");
    let record: Value = serde_json::from_str(
        &fs::read_to_string(
            repo.path()
                .join(format!(".runx/authoring/applications/{hex}.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(record["schema"], "runx.skill.application_record.v1");
    assert_eq!(record["package_digest"], result.package_digest.as_str());
}

#[test]
fn no_skill_and_needs_core_do_not_touch_the_workspace() {
    let repo = tempfile::tempdir().unwrap();
    let base = digest_of(&repo.path().join("skills/demo"));
    for (fixture, verdict) in [
        ("build-no-skill-skips-write.yaml", ApplyVerdict::Unchanged),
        ("build-needs-core.yaml", ApplyVerdict::NeedsCore),
    ] {
        let bundle = bundle_for(&base, fixture_decision(fixture), fixture_draft(fixture));
        let mut check = accept();
        let result =
            apply_change(repo.path(), "skills/demo", Mode::Build, &bundle, &mut check).unwrap();
        assert_eq!(result.verdict, verdict, "{fixture}");
        assert_eq!(result.package_digest.as_str(), base);
        assert!(result.validation.is_none());
        assert_eq!(check.calls, 0);
        assert_matches_schema("skill-apply-result.schema.json", &to_json(&result));
    }
    assert_eq!(
        fs::read_dir(repo.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}

#[test]
fn no_change_does_not_touch_the_workspace() {
    let (repo, target) = repo_with_package(&[]);
    let before = digest_of(&target);
    let bundle = bundle_for(
        &before,
        fixture_decision("no-change-skips-write.yaml"),
        fixture_draft("no-change-skips-write.yaml"),
    );
    let result = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap();
    assert_eq!(result.verdict, ApplyVerdict::Unchanged);
    assert_eq!(digest_of(&target), before);
    assert!(!repo.path().join(".runx").exists());
}

#[test]
fn an_invalid_candidate_does_not_touch_the_target() {
    let repo = tempfile::tempdir().unwrap();
    let base = digest_of(&repo.path().join("skills/demo"));
    let mut decision = fixture_decision("build-thin-skill.yaml");
    decision.resource_budget.max_files = 8;
    let bundle = bundle_for(
        &base,
        decision,
        write_draft(&[("SKILL.md", "not valid skill frontmatter")], &[]),
    );
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Build,
        &bundle,
        &mut accept(),
    )
    .unwrap_err();
    assert!(matches!(err, ApplyError::CandidateInvalid(_)), "{err}");
    assert!(!repo.path().join("skills/demo").exists());
    let staging = repo.path().join(".runx/staging");
    assert!(!staging.exists() || fs::read_dir(staging).unwrap().next().is_none());
}

#[test]
fn a_stale_base_and_plan_drift_are_refused_and_change_nothing() {
    let (repo, target) = repo_with_package(&[]);
    let base = digest_of(&target);
    let mut drifted = bundle_for(
        &base,
        extend_decision(&[]),
        write_draft(&[("SKILL.md", "---\nname: demo\n---\nchanged\n")], &[]),
    );
    drifted.plan_digest = format!("sha256:{}", "f".repeat(64)).as_str().into();
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &drifted,
        &mut accept(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "plan_digest does not bind the supplied architecture decision"
    );
    assert_eq!(digest_of(&target), base);

    let bundle = bundle_for(
        &base,
        extend_decision(&[]),
        write_draft(&[("SKILL.md", "---\nname: demo\n---\nchanged\n")], &[]),
    );
    fs::write(target.join("operator-note.txt"), "concurrent change\n").unwrap();
    let changed = digest_of(&target);
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "target package changed since inspection; inspect and author against the current base digest"
    );
    assert_eq!(digest_of(&target), changed);
}

#[test]
fn apply_is_idempotent_and_reports_the_deletion_delta() {
    let (repo, target) = repo_with_package(&[("obsolete.txt", "old path\n")]);
    let base = digest_of(&target);
    let bundle = bundle_for(
        &base,
        extend_decision(&["obsolete.txt"]),
        write_draft(&[], &["obsolete.txt"]),
    );
    let first = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap();
    assert_eq!(first.verdict, ApplyVerdict::ValidatedAndApplied);
    assert_eq!(
        first
            .deleted_paths
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>(),
        ["obsolete.txt"]
    );
    assert_eq!(first.validation.as_ref().unwrap().delta.files, -1);
    assert!(!target.join("obsolete.txt").exists());

    let mut check = accept();
    let retry = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut check,
    )
    .unwrap();
    assert_eq!(retry.verdict, ApplyVerdict::Unchanged);
    assert_eq!(retry.package_digest, first.package_digest);
    assert_eq!(
        check.calls, 1,
        "the re-apply revalidates the current target"
    );
    assert!(!target.join("obsolete.txt").exists());
}

#[test]
fn a_change_between_validation_and_commit_does_not_partially_apply() {
    let (repo, target) = repo_with_package(&[]);
    let base = digest_of(&target);
    let bundle = bundle_for(
        &base,
        extend_decision(&[]),
        write_draft(
            &[
                ("SKILL.md", "---\nname: demo\n---\nnew manual\n"),
                ("fixtures/new.yaml", "name: new\n"),
            ],
            &[],
        ),
    );
    let note = target.join("operator-note.txt");
    let mut check = Check {
        during: || fs::write(&note, "written while the candidate was validated\n").unwrap(),
        calls: 0,
    };
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut check,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "target package changed during validation; inspect and retry against the current files"
    );
    // Only the concurrent writer's file is new; none of the bundle's writes landed.
    assert!(!target.join("fixtures").exists());
    let skill = fs::read_to_string(target.join("SKILL.md")).unwrap();
    assert_eq!(skill, thin_skill_files()[0].1);
    assert!(!repo.path().join(".runx/authoring/applications").exists());
}

/// Writes, deletes, mode and the refusal expected.
type RefusedCase = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    Mode,
    &'static str,
);

#[test]
fn refused_drafts_leave_the_target_byte_for_byte_unchanged() {
    let cases: [RefusedCase; 5] = [
        (
            &[("../outside.md", "x")],
            &[],
            Mode::Improve,
            "target_dir must stay inside repo_root\n  ../outside.md must stay inside the target package",
        ),
        (
            &[],
            &["SKILL.md"],
            Mode::Improve,
            "SKILL.md cannot be deleted",
        ),
        (
            &[("README.md", "# Demo\n")],
            &[],
            Mode::Improve,
            "README.md is auxiliary package bloat; keep operating guidance in SKILL.md",
        ),
        (
            &[("notes.md", "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n")],
            &[],
            Mode::Improve,
            "refusing secret-like material in notes.md",
        ),
        (
            &[("SKILL.md", "---\nname: demo\n---\n")],
            &[],
            Mode::Harness,
            "harness mode may only change fixtures/*.yaml files: SKILL.md",
        ),
    ];
    for (writes, deletes, mode, expected) in cases {
        let (repo, target) = repo_with_package(&[]);
        let base = digest_of(&target);
        let bundle = bundle_for(
            &base,
            extend_decision(deletes),
            write_draft(writes, deletes),
        );
        let err =
            apply_change(repo.path(), "skills/demo", mode, &bundle, &mut accept()).unwrap_err();
        assert_eq!(err.to_string(), expected);
        assert_eq!(digest_of(&target), base, "{expected}");
        assert!(!repo.path().join("outside.md").exists());
        assert!(!repo.path().join(".runx").exists());
    }
}

#[test]
fn a_candidate_over_its_file_budget_is_refused() {
    let (repo, target) = repo_with_package(&[]);
    let base = digest_of(&target);
    let mut decision = extend_decision(&[]);
    decision.resource_budget.max_files = 2;
    let bundle = bundle_for(
        &base,
        decision,
        write_draft(&[("fixtures/a.yaml", "name: a\n")], &[]),
    );
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidate has 3 files, exceeding architecture budget 2"
    );
    assert_eq!(digest_of(&target), base);
}

#[test]
fn an_existing_file_keeps_its_mode_when_rewritten() {
    let (repo, target) = repo_with_package(&[("run.sh", "echo hi\n")]);
    fs::set_permissions(target.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let base = digest_of(&target);
    let mut decision = extend_decision(&[]);
    decision.resource_budget.max_executable_lines = 10;
    let bundle = bundle_for(
        &base,
        decision,
        write_draft(&[("run.sh", "echo hello\n")], &[]),
    );
    let result = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap();
    assert_eq!(result.verdict, ApplyVerdict::ValidatedAndApplied);
    let mode = fs::metadata(target.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode, 0o100755);
}

/// Builds the thin skill at `skills/note` in a repo where `link` is a symlink to a folder
/// outside it; returns the refusal and that outside folder.
fn thin_build_through_symlink(link: &str) -> (ApplyError, tempfile::TempDir, tempfile::TempDir) {
    let repo = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join(link)).unwrap();
    let base = digest_of(&repo.path().join("nothing-here"));
    let bundle = bundle_for(
        &base,
        fixture_decision("build-thin-skill.yaml"),
        fixture_draft("build-thin-skill.yaml"),
    );
    let err = apply_change(
        repo.path(),
        "skills/note",
        Mode::Build,
        &bundle,
        &mut accept(),
    )
    .unwrap_err();
    (err, repo, outside)
}

#[test]
fn a_symlinked_parent_folder_is_refused() {
    let (err, _repo, outside) = thin_build_through_symlink("skills");
    assert!(
        err.to_string()
            .starts_with("target_dir must stay inside repo_root"),
        "{err}"
    );
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[test]
fn a_commit_interrupted_after_its_writes_is_rolled_back_by_the_next_step() {
    use mindrune_engine::{Operation, commit_verified};
    let (repo, target) = repo_with_package(&[]);
    let before = digest_of(&target);
    let operations = [
        Operation {
            path: "skills/demo/SKILL.md".into(),
            content: Some((b"---\nname: demo\n---\nhalf done\n".to_vec(), 0o644)),
        },
        Operation {
            path: "skills/demo/fixtures/new.yaml".into(),
            content: Some((b"name: new\n".to_vec(), 0o644)),
        },
        Operation {
            path: "skills/demo/X.yaml".into(),
            content: None,
        },
    ];
    // A panic in the verification step stands in for the process dying mid-commit: the
    // writes have landed and the journal is left behind, as after a kill -9.
    let crashed = std::panic::catch_unwind(|| {
        commit_verified(repo.path(), "skills/demo", &operations, || {
            panic!("the process dies here")
        })
    });
    assert!(crashed.is_err());
    assert_ne!(
        digest_of(&target),
        before,
        "the writes landed before the crash"
    );

    // The next lab step that reads the target rolls the commit back first.
    let context = mindrune_engine::inspect_workspace(repo.path(), Some("skills/demo")).unwrap();
    assert_eq!(context["base_digest"], before.as_str());
    assert_eq!(digest_of(&target), before);
    assert!(
        !target.join("fixtures").exists(),
        "the folder it created is gone"
    );
    // The target's catalog entry describes the package rolled back to, not the one the crash
    // left (which had lost its X.yaml): it is the same read as the inspection.
    let catalog = context["catalog_skills"].as_array().unwrap();
    assert_eq!(
        catalog
            .iter()
            .map(|entry| (
                entry["path"].as_str().unwrap(),
                entry["status"].as_str().unwrap()
            ))
            .collect::<Vec<_>>(),
        [("skills/demo/X.yaml", "ok")],
        "{catalog:?}"
    );
    assert_eq!(
        context,
        mindrune_engine::inspect_workspace(repo.path(), Some("skills/demo")).unwrap()
    );
    let journals = repo.path().join(".runx/authoring/journal");
    assert_eq!(
        journals.read_dir().unwrap().count(),
        0,
        "the journal is gone"
    );
}

#[test]
fn a_failed_verification_rolls_every_path_back_at_once() {
    use mindrune_engine::{Operation, commit_verified};
    let (repo, target) = repo_with_package(&[]);
    let before = digest_of(&target);
    let operations = [Operation {
        path: "skills/demo/new/deep/file.md".into(),
        content: Some((b"x".to_vec(), 0o644)),
    }];
    let err = commit_verified(repo.path(), "skills/demo", &operations, || {
        Err(ApplyError::CandidateInvalid("digest mismatch".into()))
    })
    .unwrap_err();
    assert!(matches!(err, ApplyError::CandidateInvalid(_)));
    assert_eq!(digest_of(&target), before);
    assert!(!target.join("new").exists());
}

#[test]
fn a_planted_journal_that_names_paths_outside_the_package_is_not_trusted() {
    let (repo, target) = repo_with_package(&[]);
    let before = digest_of(&target);
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.path().join("linkout")).unwrap();
    fs::write(repo.path().join("keep.md"), "mine\n").unwrap();
    let hex = mindrune_core::sha256(b"skills/demo");
    let journal = repo
        .path()
        .join(".runx/authoring/journal")
        .join(hex.trim_start_matches("sha256:"));
    fs::create_dir_all(&journal).unwrap();
    fs::write(journal.join("prior-0"), "#!/bin/sh\n").unwrap();
    let planted = [
        json!({"path": "linkout/evil.sh", "prior": "prior-0", "mode": 0o104755}),
        json!({"path": "keep.md", "prior": null, "mode": 0o100644}),
        json!({"path": "skills/demo/SKILL.md", "prior": "../../../../keep.md", "mode": 0o100644}),
    ];
    for entry in planted {
        let manifest = json!({
            "schema": "mindrune.lab.apply_journal.v1", "target_dir": "skills/demo",
            "entries": [entry], "created_dirs": []
        });
        fs::write(journal.join("manifest.json"), manifest.to_string()).unwrap();
        let err = mindrune_engine::inspect_workspace(repo.path(), Some("skills/demo")).unwrap_err();
        assert!(err.to_string().contains("cannot be trusted"), "{err}");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
        assert_eq!(
            fs::read_to_string(repo.path().join("keep.md")).unwrap(),
            "mine\n"
        );
        assert_eq!(digest_of(&target), before);
    }
}

#[test]
fn a_symlinked_runx_folder_is_refused_before_anything_is_written() {
    let (err, repo, outside) = thin_build_through_symlink(".runx");
    assert!(err.to_string().contains("is a symlink"), "{err}");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    assert!(!repo.path().join("skills/note").exists());
}

#[test]
fn a_write_over_a_folder_is_refused_by_its_draft_path_and_leaves_nothing_behind() {
    let (repo, target) = repo_with_package(&[]);
    fs::create_dir_all(target.join("fixtures/empty")).unwrap();
    let base = digest_of(&target);
    let bundle = bundle_for(
        &base,
        extend_decision(&[]),
        write_draft(&[("fixtures/empty", "name: x\n")], &[]),
    );
    let err = apply_change(
        repo.path(),
        "skills/demo",
        Mode::Improve,
        &bundle,
        &mut accept(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "fixtures/empty is a folder in the target package, not a file"
    );
    assert_eq!(digest_of(&target), base);
    assert!(!repo.path().join(".runx").exists());
}
