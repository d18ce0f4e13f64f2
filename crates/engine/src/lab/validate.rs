//! Candidate validation and the native `runx.skill.*` tools the harness replay calls.
//!
//! A staged candidate passes when it loads as a Runx package (strict YAML, closed field sets,
//! SKILL.md frontmatter) and its declared harness replays without an assertion error. The
//! replay is the harness module's; this module supplies what it asks the caller for: the
//! native Skill Lab tools (so the skill-lab package's own fixtures replay through the same
//! code the `mindrune lab` runners use) and a receipt sealer.

use std::path::{Component, Path, PathBuf};

use mindrune_core::SnapshotFile;
use mindrune_core::{
    ArchitectureDecision, ArchitecturePlan, ChangeBundle, ChangeDraft, parse_contract, to_json,
};
use mindrune_core::{Mode, bind_change, normalize_target_dir, plan_change};
use mindrune_core::{Package, RUNX_VALIDATION_PREFIX, load_package};
use mindrune_core::{failure_message, inspect_packets};
use mindrune_core::{resource_usage, validate_resources};
use serde_json::{Value, json};

use super::apply::{CandidateCheck, CandidateReport, apply_change};
use super::harness::packet_inputs::check_packet_inputs;
use super::harness::{
    CaseSealer, FIXTURE_PATH_KEY, HarnessOptions, HarnessRun, HarnessStatus, NativeTools,
    PacketCatalog, declared_cases, run_harness,
};
use super::inspect::{inspect_workspace, load_nested};
use super::snapshot_walk::{PackageSnapshot, SnapshotError, snapshot_package};

/// How deep a harness may nest another apply (a skill-lab fixture that builds a package whose
/// own harness is replayed). One level is all Runx's own fixtures need; the limit keeps a
/// package that applies itself from recursing without end.
const MAX_NESTING: usize = 2;

/// Makes a fresh sealer for one harness replay: every replay gets its own throwaway store.
pub(crate) type SealerFactory = dyn Fn() -> Box<dyn CaseSealer>;

/// Replays a loaded package's declared harness. `dir` is where the package lies: its declared
/// packet schemas are looked up from there, as Runx looks them up ([`PacketCatalog`]).
pub(crate) fn replay_package(
    dir: &Path,
    files: &[SnapshotFile],
    package: &Package,
    tools: &mut dyn NativeTools,
    sealer: &mut dyn CaseSealer,
    options: &HarnessOptions,
) -> HarnessRun {
    // Runx runs a `kind: skill` fixture against the package its `target` names, relative to
    // the fixture; the Lab replays only this package, so a fixture naming any other folder
    // (one outside the package, as `../../..`, fails in Runx too) fails here, unreplayed.
    let (fixtures, strays): (Vec<_>, Vec<_>) = package.fixtures().iter().partition(|fixture| {
        fixture.kind != "skill" || targets_own_package(&fixture.path, &fixture.target)
    });
    let fixtures: Vec<(String, Value)> = fixtures
        .into_iter()
        .map(|fixture| {
            let mut json = fixture.json.clone();
            // A graph fixture's `target` is read from the fixture's own folder, and Runx names
            // the fixture file in every error it reports for it.
            if let Some(doc) = json.as_object_mut() {
                doc.insert(
                    FIXTURE_PATH_KEY.to_owned(),
                    Value::String(fixture.path.clone()),
                );
            }
            (fixture.path.clone(), json)
        })
        .collect();
    let profile = package.profile_json();
    let cases = declared_cases(profile, &fixtures);
    let packets = if package.declared_packet_ids().is_empty() {
        PacketCatalog::empty()
    } else {
        PacketCatalog::for_package(dir)
    };
    // A graph's result producers naming other package folders are read from this one's.
    let options = HarnessOptions {
        package_dir: Some(dir.to_path_buf()),
        ..options.clone()
    };
    let mut run = run_harness(files, profile, &cases, tools, sealer, &packets, &options);
    for fixture in strays {
        run.report.case_count += 1;
        run.report.case_names.push(fixture.name.clone());
        run.report.assertion_errors.push(format!(
            "{}: target: {:?} is not this package (a skill fixture's target, relative to the \
             fixture, must be the package folder: `..` from fixtures/); Runx would load that \
             folder as the package under test",
            fixture.path, fixture.target
        ));
        run.report.assertion_error_count = run.report.assertion_errors.len();
        run.report.status = HarnessStatus::Failed;
    }
    run
}

/// Whether a fixture's `target`, read from the fixture's folder, is the package folder.
fn targets_own_package(fixture_path: &str, target: &str) -> bool {
    let mut depth: Vec<&str> = fixture_path
        .rsplit_once('/')
        .map(|(dir, _)| dir.split('/').collect())
        .unwrap_or_default();
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            name => depth.push(name),
        }
    }
    depth.is_empty()
}

/// The candidate check `apply` uses: the package must load, and its harness must not fail.
pub struct PackageValidator<'a> {
    pub sealers: &'a SealerFactory,
    /// How every replay runs, nested ones included (the CLI's names the JavaScript worker).
    pub harness: &'a HarnessOptions,
    depth: usize,
}

impl<'a> PackageValidator<'a> {
    pub fn new(sealers: &'a SealerFactory, harness: &'a HarnessOptions) -> Self {
        Self {
            sealers,
            harness,
            depth: 0,
        }
    }
}

impl CandidateCheck for PackageValidator<'_> {
    fn check(
        &mut self,
        package_dir: &Path,
        snapshot: &PackageSnapshot,
        architecture: &ArchitectureDecision,
    ) -> Result<CandidateReport, String> {
        let package = load_package(&snapshot.files).map_err(|err| err.to_string())?;
        check_packet_inputs(&package, package_dir)?;
        validate_resources(architecture, &resource_usage(&package)).map_err(|err| err.0)?;
        let mut tools = LabTools {
            sealers: self.sealers,
            harness: self.harness,
            depth: self.depth + 1,
        };
        let mut sealer = (self.sealers)();
        let run = replay_package(
            package_dir,
            &snapshot.files,
            &package,
            &mut tools,
            sealer.as_mut(),
            self.harness,
        );
        match run.report.status {
            HarnessStatus::Failed => Err(harness_failure(&run)),
            HarnessStatus::Passed => Ok(CandidateReport {
                harness_status: "passed".into(),
            }),
            HarnessStatus::NotDeclared => Ok(CandidateReport {
                harness_status: "not_declared".into(),
            }),
        }
    }
}

/// One line naming the count and the first few assertion errors.
pub(crate) fn harness_failure(run: &HarnessRun) -> String {
    let errors = &run.report.assertion_errors;
    let shown: Vec<&str> = errors.iter().take(5).map(String::as_str).collect();
    let more = errors.len().saturating_sub(shown.len());
    let mut text = format!(
        "harness failed with {} assertion error{}: {}",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" },
        shown.join("; ")
    );
    if more > 0 {
        text.push_str(&format!("; and {more} more"));
    }
    text.push_str(&stricter_note(errors));
    text
}

/// The second line of a harness failure Runx would not have: a cli-tool running a file outside
/// the package (`args: [../run.mjs]`) or a graph step running a local tool whose manifest lies
/// outside it (the workspace's `tools`), or a graph step naming another package's runner
/// (`skill: ../other`), which Runx runs and MindRune refuses (D5).
fn stricter_note(errors: &[String]) -> String {
    use super::harness::{cli_tool, local_tool, run};
    let holds = |needle: &str| errors.iter().any(|error| error.contains(needle));
    if holds(cli_tool::ARG_OUTSIDE_PACKAGE) {
        format!("\n{}", cli_tool::ARG_OUTSIDE_STRICTER)
    } else if holds(local_tool::TOOL_OUTSIDE_PACKAGE) {
        format!("\n{}", local_tool::TOOL_OUTSIDE_STRICTER)
    } else if holds(run::nested::SKILL_OUTSIDE_PACKAGE) {
        format!("\n{}", run::nested::SKILL_OUTSIDE_STRICTER)
    } else {
        String::new()
    }
}

/// The native Skill Lab tools, for a harness replay: `runx.skill.inspect`, `plan`, `bind`,
/// `validate` and `apply`, confined to the case's scratch folder (a `repo_root` of `.` is the
/// scratch folder; one that leaves it is refused).
pub struct LabTools<'a> {
    pub sealers: &'a SealerFactory,
    /// How nested replays run (the CLI's names the JavaScript worker).
    pub harness: &'a HarnessOptions,
    pub depth: usize,
}

impl<'a> LabTools<'a> {
    pub fn new(sealers: &'a SealerFactory, harness: &'a HarnessOptions) -> Self {
        Self {
            sealers,
            harness,
            depth: 1,
        }
    }
}

fn field<'v>(inputs: &'v Value, name: &str) -> Result<&'v Value, String> {
    inputs
        .get(name)
        .filter(|value| !value.is_null())
        .ok_or_else(|| format!("{name} is required"))
}

fn string_field<'v>(inputs: &'v Value, name: &str) -> Result<&'v str, String> {
    field(inputs, name)?
        .as_str()
        .filter(|text| !text.trim().is_empty())
        .ok_or_else(|| format!("{name} must be a non-empty string"))
}

/// Resolves a tool's `repo_root` inside the scratch folder.
fn contained_root(scratch: &Path, inputs: &Value) -> Result<PathBuf, String> {
    let requested = inputs
        .get("repo_root")
        .and_then(Value::as_str)
        .unwrap_or(".");
    let mut root = scratch.to_path_buf();
    for component in Path::new(requested).components() {
        match component {
            Component::CurDir => {}
            Component::Normal(part) => root.push(part),
            _ => {
                return Err(format!(
                    "repo_root {requested:?} must stay inside the workspace"
                ));
            }
        }
    }
    Ok(root)
}

impl NativeTools for LabTools<'_> {
    fn call(
        &mut self,
        tool: &str,
        inputs: &Value,
        scratch: &Path,
    ) -> Option<Result<Value, String>> {
        let result = match tool {
            "runx.skill.inspect" => contained_root(scratch, inputs).and_then(|root| {
                let target = inputs.get("target_dir").and_then(Value::as_str);
                inspect_workspace(&root, target)
                    .map(|context| json!({"authoring_context": context}))
                    .map_err(|err| err.to_string())
            }),
            "runx.skill.plan" => (|| {
                let base = string_field(inputs, "base_digest")?;
                let decision: ArchitectureDecision =
                    parse_contract("architecture_decision", field(inputs, "architecture")?)
                        .map_err(|err| err.to_string())?;
                let plan = plan_change(base, decision).map_err(|err| err.0)?;
                Ok(json!({"architecture_plan": to_json(&plan)}))
            })(),
            "runx.skill.bind" => (|| {
                let plan: ArchitecturePlan =
                    parse_contract("architecture_plan", field(inputs, "architecture_plan")?)
                        .map_err(|err| err.to_string())?;
                let draft: ChangeDraft =
                    parse_contract("change_draft", field(inputs, "change_draft")?)
                        .map_err(|err| err.to_string())?;
                let bundle = bind_change(&plan, draft).map_err(|err| err.0)?;
                Ok(json!({"change_bundle": to_json(&bundle)}))
            })(),
            "runx.skill.apply" => (|| {
                if self.depth > MAX_NESTING {
                    return Err("runx.skill.apply is nested too deeply in harness replays".into());
                }
                let root = contained_root(scratch, inputs)?;
                let target_dir = string_field(inputs, "target_dir")?;
                let mode = Mode::parse(
                    inputs
                        .get("mode")
                        .and_then(Value::as_str)
                        .unwrap_or("build"),
                )
                .map_err(|err| err.0)?;
                let bundle: ChangeBundle =
                    parse_contract("change_bundle", field(inputs, "change_bundle")?)
                        .map_err(|err| err.to_string())?;
                let mut validator = PackageValidator {
                    sealers: self.sealers,
                    harness: self.harness,
                    depth: self.depth,
                };
                let result = apply_change(&root, target_dir, mode, &bundle, &mut validator)
                    .map_err(|err| err.to_string())?;
                Ok(json!({"apply_result": to_json(&result)}))
            })(),
            "runx.skill.validate" => contained_root(scratch, inputs).and_then(|root| {
                if self.depth > MAX_NESTING {
                    return Err(
                        "runx.skill.validate is nested too deeply in harness replays".into(),
                    );
                }
                let requested = inputs
                    .get("skill_ref")
                    .or_else(|| inputs.get("target_dir"))
                    .and_then(Value::as_str)
                    .unwrap_or(".");
                // Only a package inside the case's workspace; `.` is the workspace itself.
                let target = if requested == "." {
                    String::new()
                } else {
                    normalize_target_dir(requested).map_err(|err| err.0)?
                };
                let allow = inputs
                    .get("allow_execute_harness")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let mut tools = LabTools {
                    sealers: self.sealers,
                    harness: self.harness,
                    depth: self.depth + 1,
                };
                validate_package(
                    &root.join(&target),
                    requested,
                    &target,
                    allow,
                    &mut tools,
                    self.sealers,
                    self.harness,
                )
                .map(|validation| json!({"skill_validation": validation}))
            }),
            _ => return None,
        };
        Some(result)
    }
}

/// `runx.skill.validate` on a package folder: the `runx.skill.validation.v1` report
/// (`schema, requested_ref, resolved_ref, verdict, inspect, harness`, as Runx writes it, plus
/// MindRune's `base_digest` of the folder). The package must load; the harness
/// replays when the operator allows executing it or the inspection's declared `execution` is
/// absent, `read` or `plan` — only a package that declares `execution: execute` waits for
/// approval, as Runx decides.
pub fn validate_package(
    dir: &Path,
    requested_ref: &str,
    resolved_ref: &str,
    allow_execute_harness: bool,
    tools: &mut dyn NativeTools,
    sealers: &SealerFactory,
    harness: &HarnessOptions,
) -> Result<Value, String> {
    let report = |verdict: &str, inspect: Value, harness: Value, digest: Option<&str>| {
        json!({
            "schema": "runx.skill.validation.v1",
            "requested_ref": requested_ref,
            "resolved_ref": resolved_ref,
            "verdict": verdict,
            "inspect": inspect,
            "harness": harness,
            "base_digest": digest,
        })
    };
    // Runx: an inspection that failed is `{status: failed, error}`, and the harness counts as
    // attempted (a package it could not inspect is not known to execute).
    let failed = |error: String, digest: Option<&str>| {
        report(
            "validation_failed",
            json!({"status": "failed", "error": error}),
            json!({"attempted": true, "status": "failed", "reason": error}),
            digest,
        )
    };
    let snapshot = match snapshot_package(dir) {
        Ok(snapshot) if snapshot.exists => snapshot,
        Ok(_) => return Err(format!("{} does not exist", dir.display())),
        // A package Runx's validator refuses as a source (a symlink, too many files) is a
        // failed validation, not a failed command.
        Err(SnapshotError::Io { path, source }) => {
            return Err(format!("cannot read {}: {source}", path.display()));
        }
        Err(err) => return Ok(failed(err.to_string(), None)),
    };
    let loaded = load_package(&snapshot.files).map_err(|err| err.to_string());
    let (package, packets) = match loaded.and_then(|package| {
        let packets = check_packet_inputs(&package, dir)?;
        Ok((package, packets))
    }) {
        Ok(loaded) => loaded,
        Err(err) => {
            return Ok(failed(
                format!("{RUNX_VALIDATION_PREFIX}{err}"),
                Some(&snapshot.digest),
            ));
        }
    };
    let inspection = inspect_packets(
        &package,
        &snapshot.files,
        &dir.display().to_string(),
        &packets,
        &load_nested,
    );
    // Runx's validator inspects the candidate before its harness: an inspection failing as a
    // whole (a step's package or runner that fails) fails the validation
    // (`services/skill_packages/validation.rs`, `validate_candidate`).
    if let Some(message) = failure_message(&inspection) {
        return Ok(report(
            "validation_failed",
            json!({"status": "failed", "error": message}),
            json!({
                "attempted": true,
                "status": "failed",
                "reason": format!(
                    "skill 'runx.skill.apply' failed: skill inspection failed: {message}"
                ),
            }),
            Some(&snapshot.digest),
        ));
    }
    let safe = inspection
        .pointer("/capabilities/execution")
        .and_then(Value::as_str)
        .is_none_or(|execution| matches!(execution, "read" | "plan"));
    let (verdict, harness_report) = if safe || allow_execute_harness {
        let mut sealer = sealers();
        let run = replay_package(
            dir,
            &snapshot.files,
            &package,
            tools,
            sealer.as_mut(),
            harness,
        );
        let mut harness = serde_json::to_value(&run.report).unwrap_or(Value::Null);
        harness["attempted"] = json!(true);
        if run.report.status == HarnessStatus::Failed {
            harness["reason"] = json!(format!(
                "native harness failed: {}{}",
                run.report.assertion_errors.join("; "),
                stricter_note(&run.report.assertion_errors)
            ));
            ("validation_failed", harness)
        } else {
            ("tested", harness)
        }
    } else {
        (
            "needs_consequential_harness_approval",
            json!({
                "attempted": false,
                "status": "skipped",
                "reason": "needs_consequential_harness_approval",
            }),
        )
    };
    Ok(report(
        verdict,
        inspection,
        harness_report,
        Some(&snapshot.digest),
    ))
}

#[cfg(test)]
mod fixture_target_tests {
    use super::targets_own_package;

    #[test]
    fn a_skill_fixture_targets_its_own_package_only_through_its_folder() {
        assert!(targets_own_package("fixtures/smoke.yaml", ".."));
        assert!(targets_own_package("fixtures/smoke.yaml", "../"));
        assert!(targets_own_package("fixtures/deep/smoke.yaml", "../.."));
        assert!(!targets_own_package("fixtures/smoke.yaml", "../../.."));
        assert!(!targets_own_package("fixtures/smoke.yaml", "."));
        assert!(!targets_own_package("fixtures/smoke.yaml", "../other"));
    }
}
