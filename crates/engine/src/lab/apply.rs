//! `runx.skill.apply`: the one transaction that writes a package.
//!
//! The order is Runx's (`skill_packages/change.rs`): resolve the target and snapshot it, check
//! the bundle's contract against that snapshot, admit every path and its contents, return at
//! once for a decision that writes nothing, recognise an idempotent re-apply by its application
//! record, build the candidate in a staging folder beside the target, validate the candidate
//! (parse, inspect, budget, harness replay), and only then take the per-target lock, re-check
//! that the target still has the base digest, and commit with verification: if the committed
//! files do not hash to the validated candidate, every path is put back.
//!
//! Architecture invariant: the target is written only inside [`commit`], under the lock, after
//! the candidate passed; any refusal before that leaves the target byte for byte as it was.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use mindrune_core::{
    AdmittedChange, Mode, Refusal, admit_change, bundle_digest, normalize_target_dir,
    package_delta, package_metrics, unchanged_result, validate_change_contract, validate_digest,
    validate_resource_budget,
};
use mindrune_core::{
    ApplyResult, ApplyResultSchema, ApplyVerdict, ArchitectureDecision, ChangeBundle,
    ChangeDecision, CheckStatus, NonEmpty, ValidationCheck, ValidationResult, ValidationSchema,
};
use serde::{Deserialize, Serialize};

use super::apply_error::ApplyError;
use super::apply_error::io_error;
use super::commit::{self, Operation};
use super::snapshot_walk::{PackageSnapshot, snapshot_package};
use crate::atomic_file::write_atomic;

/// The mode a newly written package file gets, whatever the umask (see [`write_atomic`]).
const NEW_FILE_MODE: u32 = 0o644;

/// What the candidate check found, for the validation result's `focused_harness` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateReport {
    /// `passed`, `not_declared` or `skipped`; a failed harness is an error, not a report.
    pub harness_status: String,
}

/// Validates a package folder as a candidate: the package contract, inspection and the
/// harness replay. It is a trait so the transaction can be tested with a check that misbehaves
/// (one that edits the target mid-validation, as a concurrent writer would).
pub trait CandidateCheck {
    fn check(
        &mut self,
        package_dir: &Path,
        snapshot: &PackageSnapshot,
        architecture: &ArchitectureDecision,
    ) -> Result<CandidateReport, String>;
}

/// The target of an apply, resolved and snapshotted.
struct Target {
    repo_root: PathBuf,
    relative: String,
    path: PathBuf,
    before: PackageSnapshot,
}

impl Target {
    fn resolve(repo_root: &Path, target_dir: &str) -> Result<Self, ApplyError> {
        let repo_root = fs::canonicalize(repo_root).map_err(io_error("resolve", repo_root))?;
        if !repo_root.is_dir() {
            return Err(Refusal("skill workspace must be a directory".into()).into());
        }
        let relative = normalize_target_dir(target_dir)?;
        let path = repo_root.join(&relative);
        refuse_symlinked_ancestors(&repo_root, &relative)?;
        finish_interrupted_apply(&repo_root, &relative)?;
        let before = snapshot_package(&path)?;
        Ok(Self {
            repo_root,
            relative,
            path,
            before,
        })
    }
}

/// Every path a bundle writes or deletes must be a regular file in the target, or absent: a
/// write over a folder (even an empty one, which no snapshot shows) is refused up front,
/// naming the draft's path, rather than at commit time.
fn refuse_non_files(target: &Target, admitted: &AdmittedChange) -> Result<(), ApplyError> {
    let paths = admitted
        .writes
        .iter()
        .map(|(relative, _)| relative)
        .chain(&admitted.deletes);
    for relative in paths {
        let path = target.path.join(relative);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_file() => {}
            Ok(meta) if meta.is_dir() => {
                return Err(Refusal(format!(
                    "{relative} is a folder in the target package, not a file"
                ))
                .into());
            }
            Ok(_) => {
                return Err(Refusal(format!(
                    "{relative} is not a regular file in the target package"
                ))
                .into());
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            // A parent that is a file (`SKILL.md/x`) surfaces here; the stage names it too.
            Err(err) if err.kind() == io::ErrorKind::NotADirectory => {
                return Err(Refusal(format!(
                    "{relative}: a parent of it is a file in the target package"
                ))
                .into());
            }
            Err(source) => return Err(io_error("read", &path)(source)),
        }
    }
    Ok(())
}

/// Rolls back an apply to this target that a crash interrupted (its journal is still there),
/// so nothing reads a half-committed package. Cheap when there is none: one `stat`, and no
/// lock file is created, so a read-only step leaves no trace in the workspace.
pub fn finish_interrupted_apply(repo_root: &Path, relative: &str) -> Result<bool, ApplyError> {
    if !commit::has_journal(repo_root, relative) {
        return Ok(false);
    }
    let _lock = commit::lock(repo_root, relative)?;
    commit::recover(repo_root, relative)
}

/// A symlinked folder between the repo root and the target would let a write land outside
/// the workspace, so every existing ancestor must be a real folder.
fn refuse_symlinked_ancestors(repo_root: &Path, relative: &str) -> Result<(), ApplyError> {
    let mut path = repo_root.to_path_buf();
    let parts: Vec<&str> = relative.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        path.push(part);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(Refusal(format!(
                    "target_dir must stay inside repo_root: {} is a symlink",
                    path.display()
                ))
                .into());
            }
            Ok(meta) if !meta.is_dir() => {
                return Err(Refusal(format!("{} is not a directory", path.display())).into());
            }
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => break,
            Err(source) => return Err(io_error("read", &path)(source)),
        }
    }
    Ok(())
}

/// Applies a bound change bundle to `repo_root/target_dir` in `mode`.
pub fn apply_change(
    repo_root: &Path,
    target_dir: &str,
    mode: Mode,
    change: &ChangeBundle,
    checker: &mut dyn CandidateCheck,
) -> Result<ApplyResult, ApplyError> {
    let target = Target::resolve(repo_root, target_dir)?;
    validate_change_contract(change, mode, &target.before.digest)?;
    let admitted = admit_change(change, mode, |relative| {
        target.before.file(relative).is_some()
    })?;
    refuse_non_files(&target, &admitted)?;
    if change.decision != ChangeDecision::Write {
        return Ok(unchanged_result(
            &target.relative,
            change,
            &target.before.digest,
        ));
    }
    if target.before.digest != change.base_digest.as_str() {
        return reapplied_result(&target, change, checker);
    }
    let stage = Stage::prepare(&target, &admitted)?;
    let candidate = snapshot_package(&stage.package)?;
    let before_metrics = package_metrics(&target.before.files);
    let after_metrics = package_metrics(&candidate.files);
    validate_resource_budget(&change.architecture, &after_metrics)?;
    let report = checker
        .check(&stage.package, &candidate, &change.architecture)
        .map_err(ApplyError::CandidateInvalid)?;
    let validation = validation_result(
        &target.relative,
        change,
        &target.before.digest,
        &candidate.digest,
        before_metrics,
        after_metrics,
        &report,
    );
    let package_digest = commit(&target, change, &admitted, &candidate.digest)?;
    drop(stage);
    Ok(ApplyResult {
        schema: ApplyResultSchema::V1,
        target_dir: NonEmpty::from(target.relative.as_str()),
        decision: ChangeDecision::Write,
        verdict: ApplyVerdict::ValidatedAndApplied,
        base_digest: change.base_digest.clone(),
        plan_digest: change.plan_digest.clone(),
        package_digest: NonEmpty::from(package_digest.as_str()),
        changed_paths: change
            .writes
            .iter()
            .map(|write| write.path.clone())
            .collect(),
        deleted_paths: change.deletes.clone(),
        validation: Some(validation),
        residual_risks: Vec::new(),
    })
}

/// The target no longer has the base digest: that is fine only when this very bundle was
/// applied already and the target still holds what it produced.
fn reapplied_result(
    target: &Target,
    change: &ChangeBundle,
    checker: &mut dyn CandidateCheck,
) -> Result<ApplyResult, ApplyError> {
    if !recorded_application_matches(target, change)? {
        return Err(Refusal(
            "target package changed since inspection; inspect and author against the current base digest"
                .into(),
        )
        .into());
    }
    let metrics = package_metrics(&target.before.files);
    validate_resource_budget(&change.architecture, &metrics)?;
    let report = checker
        .check(&target.path, &target.before, &change.architecture)
        .map_err(ApplyError::CandidateInvalid)?;
    let validation = validation_result(
        &target.relative,
        change,
        &target.before.digest,
        &target.before.digest,
        metrics,
        metrics,
        &report,
    );
    Ok(ApplyResult {
        schema: ApplyResultSchema::V1,
        target_dir: NonEmpty::from(target.relative.as_str()),
        decision: ChangeDecision::Write,
        verdict: ApplyVerdict::Unchanged,
        base_digest: change.base_digest.clone(),
        plan_digest: change.plan_digest.clone(),
        package_digest: NonEmpty::from(target.before.digest.as_str()),
        changed_paths: Vec::new(),
        deleted_paths: Vec::new(),
        validation: Some(validation),
        residual_risks: Vec::new(),
    })
}

fn validation_result(
    target_dir: &str,
    change: &ChangeBundle,
    base_digest: &str,
    candidate_digest: &str,
    before: mindrune_core::PackageMetrics,
    after: mindrune_core::PackageMetrics,
    report: &CandidateReport,
) -> ValidationResult {
    let check = |name: &str, detail: &str| ValidationCheck {
        name: NonEmpty::from(name),
        status: CheckStatus::Passed,
        detail: NonEmpty::from(detail),
    };
    let harness_detail = if report.harness_status == "passed" {
        "focused package harness passed"
    } else {
        "focused package harness completed without failure"
    };
    ValidationResult {
        schema: ValidationSchema::V1,
        target_dir: NonEmpty::from(target_dir),
        base_digest: NonEmpty::from(base_digest),
        plan_digest: change.plan_digest.clone(),
        candidate_digest: NonEmpty::from(candidate_digest),
        checks: vec![
            check("package_contract", "aggregate package validation passed"),
            check("package_inspection", "package inspection passed"),
            check("focused_harness", harness_detail),
            check(
                "resource_budget",
                "declared file, executable-line, fan-out, process, network, and domain-module budgets passed",
            ),
        ],
        before,
        after,
        delta: package_delta(&before, &after),
        residual_risks: Vec::new(),
    }
}

/// `runx.skill.application_record.v1`, written beside the package's files in the same commit,
/// so a retried apply of the same bundle recognises its own result.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ApplicationRecord {
    schema: String,
    target_dir: String,
    base_digest: String,
    plan_digest: String,
    bundle_digest: String,
    package_digest: String,
}

const APPLICATION_RECORD_SCHEMA: &str = "runx.skill.application_record.v1";

fn application_record_relative(plan_digest: &str) -> Result<String, Refusal> {
    validate_digest("plan_digest", plan_digest)?;
    let hex = plan_digest.trim_start_matches("sha256:");
    Ok(format!(".runx/authoring/applications/{hex}.json"))
}

fn recorded_application_matches(
    target: &Target,
    change: &ChangeBundle,
) -> Result<bool, ApplyError> {
    let path = target
        .repo_root
        .join(application_record_relative(change.plan_digest.as_str())?);
    let text = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(source) => return Err(io_error("read", &path)(source)),
    };
    let Ok(record) = serde_json::from_str::<ApplicationRecord>(&text) else {
        // A damaged record proves nothing; the change is then simply stale.
        return Ok(false);
    };
    Ok(record.schema == APPLICATION_RECORD_SCHEMA
        && record.target_dir == target.relative
        && record.base_digest == change.base_digest.as_str()
        && record.plan_digest == change.plan_digest.as_str()
        && record.bundle_digest == bundle_digest(change)?
        && record.package_digest == target.before.digest)
}

/// The staging folder: a copy of the target with the bundle applied, under
/// `.runx/staging/` (which no package walk ever includes), removed on drop.
///
/// Runx stages beside the target so a candidate can reach sibling packages by relative path;
/// MindRune validates a candidate from its snapshot alone, so it stages where a crash leaves
/// nothing inside the workspace's packages: a stage left by a killed process is swept by the
/// next apply ([`sweep_stale_stages`]).
struct Stage {
    root: PathBuf,
    package: PathBuf,
}

/// Removes staging folders whose process is gone (their name carries its pid).
fn sweep_stale_stages(staging: &Path) {
    let Ok(entries) = fs::read_dir(staging) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(".runx-candidate-")
            .and_then(|rest| rest.rsplit('-').nth(1))
            .and_then(|pid| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

impl Stage {
    fn prepare(target: &Target, admitted: &AdmittedChange) -> Result<Self, ApplyError> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let name = target.relative.rsplit('/').next().unwrap_or("skill");
        let stage_name = format!(".runx-candidate-{name}-{}-{nanos}", std::process::id());
        let staging = commit::create_contained_dir(&target.repo_root, ".runx/staging")?;
        sweep_stale_stages(&staging);
        let root = commit::create_contained_dir(
            &target.repo_root,
            &format!(".runx/staging/{stage_name}"),
        )?;
        let stage = Self {
            package: root.clone(),
            root,
        };
        for file in &target.before.files {
            let path = stage.package.join(&file.path);
            create_parent(&path)?;
            write_atomic(&path, &file.contents, file.mode).map_err(io_error("stage", &path))?;
        }
        for (relative, contents) in &admitted.writes {
            let path = stage.package.join(relative);
            let mode = target
                .before
                .file(relative)
                .map_or(NEW_FILE_MODE, |file| file.mode);
            if path.is_dir() {
                return Err(Refusal(format!("{relative} is a directory, not a file")).into());
            }
            create_parent(&path)?;
            write_atomic(&path, contents.as_bytes(), mode).map_err(io_error("stage", &path))?;
        }
        for relative in &admitted.deletes {
            if target.before.file(relative).is_none() {
                return Err(Refusal(format!(
                    "cannot delete {relative}: the target package has no such file"
                ))
                .into());
            }
            let path = stage.package.join(relative);
            fs::remove_file(&path).map_err(io_error("stage a delete of", &path))?;
        }
        Ok(stage)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn create_parent(path: &Path) -> Result<(), ApplyError> {
    match path.parent() {
        Some(parent) => fs::create_dir_all(parent).map_err(io_error("create", parent)),
        None => Ok(()),
    }
}

/// Commits the admitted change to the target under its lock, with an undo journal, and
/// verifies the result hashes to the candidate; returns the committed package digest.
fn commit(
    target: &Target,
    change: &ChangeBundle,
    admitted: &AdmittedChange,
    candidate_digest: &str,
) -> Result<String, ApplyError> {
    let _lock = commit::lock(&target.repo_root, &target.relative)?;
    // Again under the lock: a folder swapped for a symlink since the target was resolved
    // must not redirect the commit.
    refuse_symlinked_ancestors(&target.repo_root, &target.relative)?;
    if snapshot_package(&target.path)?.digest != target.before.digest {
        return Err(Refusal(
            "target package changed during validation; inspect and retry against the current files"
                .into(),
        )
        .into());
    }
    let record = ApplicationRecord {
        schema: APPLICATION_RECORD_SCHEMA.into(),
        target_dir: target.relative.clone(),
        base_digest: change.base_digest.to_string(),
        plan_digest: change.plan_digest.to_string(),
        bundle_digest: bundle_digest(change)?,
        package_digest: candidate_digest.to_owned(),
    };
    let record_text = format!(
        "{}\n",
        serde_json::to_string_pretty(&record).unwrap_or_default()
    );
    let mut operations: Vec<Operation> = admitted
        .writes
        .iter()
        .map(|(relative, contents)| Operation {
            path: format!("{}/{relative}", target.relative),
            content: Some((
                contents.as_bytes().to_vec(),
                target
                    .before
                    .file(relative)
                    .map_or(NEW_FILE_MODE, |file| file.mode),
            )),
        })
        .collect();
    operations.extend(admitted.deletes.iter().map(|relative| Operation {
        path: format!("{}/{relative}", target.relative),
        content: None,
    }));
    operations.push(Operation {
        path: application_record_relative(change.plan_digest.as_str())?,
        content: Some((record_text.into_bytes(), NEW_FILE_MODE)),
    });
    commit::commit_verified(&target.repo_root, &target.relative, &operations, || {
        let applied = snapshot_package(&target.path)?;
        if applied.digest != candidate_digest {
            return Err(Refusal(
                "applied package digest does not match the validated candidate".into(),
            )
            .into());
        }
        Ok(applied.digest)
    })
}
