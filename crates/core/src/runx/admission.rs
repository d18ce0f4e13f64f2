//! The Skill Lab's native checks, pure: binding a decision to a base digest (`plan`), binding a
//! draft to a plan (`bind`), the contract checks `apply` runs before it touches anything, path
//! and secret admission for every write and delete, and package metrics.
//!
//! The refusal messages are Runx's own (`skill_packages/change/admission.rs`, `path.rs`), word
//! for word, so an author moving between Runx and MindRune reads the same reason for the same
//! mistake. Only the order of the checks matters beyond the words: each function runs them in
//! Runx's order, so the first refusal is the one Runx would give.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::contracts::{
    ApplyResult, ApplyResultSchema, ApplyVerdict, ArchitectureDecision, ArchitecturePlan,
    BundleSchema, ChangeBundle, ChangeDecision, ChangeDraft, Disposition, IdentityAction, Lane,
    NonEmpty, PackageDelta, PackageMetrics, PlanSchema, ProofKind, Visibility, to_json,
};
use super::snapshot::SnapshotFile;
use super::stable_json::stable_digest;

/// A refusal by one of the native steps, in Runx's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(pub String);

fn refuse<T>(message: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(message.into()))
}

/// The three authoring modes of `runx.skill.apply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Build,
    Improve,
    Harness,
}

impl Mode {
    pub fn parse(text: &str) -> Result<Self, Refusal> {
        match text {
            "build" => Ok(Self::Build),
            "improve" => Ok(Self::Improve),
            "harness" => Ok(Self::Harness),
            _ => refuse("mode must be build, improve, or harness"),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Build => "build",
            Self::Improve => "improve",
            Self::Harness => "harness",
        }
    }
}

/// Checks that `value` is `sha256:` and 64 hex digits.
pub fn validate_digest(field: &str, value: &str) -> Result<(), Refusal> {
    let Some(hex) = value.strip_prefix("sha256:") else {
        return refuse(format!("{field} must be a sha256-prefixed digest"));
    };
    if hex.len() != 64 || !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return refuse(format!(
            "{field} must contain exactly 64 hexadecimal characters"
        ));
    }
    Ok(())
}

/// `plan_digest` = sha256 of the stable JSON of `{"base_digest", "architecture"}`.
pub(crate) fn architecture_digest(
    base_digest: &str,
    architecture: &ArchitectureDecision,
) -> Result<String, Refusal> {
    let value = json!({ "base_digest": base_digest, "architecture": to_json(architecture) });
    stable_digest(&value).map_err(|err| Refusal(format!("canonicalizing architecture: {err}")))
}

/// The bundle digest kept in the application record: sha256 of the bundle's stable JSON.
pub fn bundle_digest(bundle: &ChangeBundle) -> Result<String, Refusal> {
    stable_digest(&to_json(bundle))
        .map_err(|err| Refusal(format!("canonicalizing change bundle: {err}")))
}

/// `runx.skill.plan`: admits the decision and binds it to the inspected base digest.
pub fn plan(
    base_digest: &str,
    architecture: ArchitectureDecision,
) -> Result<ArchitecturePlan, Refusal> {
    validate_digest("base_digest", base_digest)?;
    validate_architecture_decision(&architecture)?;
    let plan_digest = architecture_digest(base_digest, &architecture)?;
    Ok(ArchitecturePlan {
        schema: PlanSchema::V1,
        base_digest: NonEmpty::from(base_digest),
        plan_digest: NonEmpty::from(plan_digest.as_str()),
        architecture,
    })
}

/// `runx.skill.bind`: the integrity fields of the bundle come from the plan, never the draft,
/// and a plan whose digest does not bind its own base and decision is refused.
pub fn bind(plan: &ArchitecturePlan, draft: ChangeDraft) -> Result<ChangeBundle, Refusal> {
    validate_digest("base_digest", plan.base_digest.as_str())?;
    validate_digest("plan_digest", plan.plan_digest.as_str())?;
    validate_architecture_decision(&plan.architecture)?;
    let expected = architecture_digest(plan.base_digest.as_str(), &plan.architecture)?;
    if plan.plan_digest.as_str() != expected {
        return refuse("architecture plan digest does not bind its base and decision");
    }
    let bundle = ChangeBundle {
        schema: BundleSchema::V1,
        decision: draft.decision,
        base_digest: plan.base_digest.clone(),
        plan_digest: plan.plan_digest.clone(),
        architecture: plan.architecture.clone(),
        summary: draft.summary,
        non_goals: draft.non_goals,
        writes: draft.writes,
        deletes: draft.deletes,
        expected_outputs: draft.expected_outputs,
    };
    validate_change_shape(&bundle)?;
    validate_architecture(&bundle)?;
    Ok(bundle)
}

/// The checks `apply` runs on a bundle before it looks at any file besides the target's digest.
pub fn validate_change_contract(
    change: &ChangeBundle,
    mode: Mode,
    current_digest: &str,
) -> Result<(), Refusal> {
    validate_digest("base_digest", change.base_digest.as_str())?;
    validate_digest("plan_digest", change.plan_digest.as_str())?;
    let expected = architecture_digest(change.base_digest.as_str(), &change.architecture)?;
    if change.plan_digest.as_str() != expected {
        return refuse("plan_digest does not bind the supplied architecture decision");
    }
    validate_mode_decision(mode, change.decision)?;
    validate_change_shape(change)?;
    if change.decision != ChangeDecision::Write && change.base_digest.as_str() != current_digest {
        return refuse("non-write decision is stale against the inspected base digest");
    }
    validate_architecture(change)
}

fn validate_mode_decision(mode: Mode, decision: ChangeDecision) -> Result<(), Refusal> {
    use ChangeDecision::{NeedsCore, NoChange, NoSkill, Write};
    let allowed = match mode {
        Mode::Build => matches!(decision, Write | NoSkill | NeedsCore),
        Mode::Improve => matches!(decision, Write | NoChange | NeedsCore),
        Mode::Harness => matches!(decision, Write | NoChange),
    };
    if allowed {
        return Ok(());
    }
    refuse(format!(
        "{} is not a valid decision in {} mode",
        decision.as_str(),
        mode.as_str()
    ))
}

fn validate_change_shape(change: &ChangeBundle) -> Result<(), Refusal> {
    let empty = change.writes.is_empty() && change.deletes.is_empty();
    if change.decision != ChangeDecision::Write && !empty {
        return refuse("non-write bundles must not contain writes or deletes");
    }
    if change.decision == ChangeDecision::Write && empty {
        return refuse("a write decision must contain at least one write or delete");
    }
    Ok(())
}

fn validate_architecture(change: &ChangeBundle) -> Result<(), Refusal> {
    use ChangeDecision as D;
    use Disposition as A;
    let agrees = matches!(
        (change.decision, change.architecture.disposition),
        (D::Write, A::Build | A::ExtendExisting)
            | (D::NoChange, A::ExtendExisting)
            | (D::NoSkill, A::NoSkill)
            | (D::NeedsCore, A::NeedsCore)
    );
    if !agrees {
        return refuse("change decision conflicts with the architecture disposition");
    }
    validate_architecture_decision(&change.architecture)?;
    let planned: BTreeSet<&str> = change
        .architecture
        .deletions
        .iter()
        .map(NonEmpty::as_str)
        .collect();
    let bundled: BTreeSet<&str> = change.deletes.iter().map(NonEmpty::as_str).collect();
    if planned != bundled {
        return refuse("bundle deletes must exactly match architecture deletions");
    }
    Ok(())
}

/// The admission rules for an architecture decision, run at plan, bind and apply time.
pub(crate) fn validate_architecture_decision(
    architecture: &ArchitectureDecision,
) -> Result<(), Refusal> {
    validate_completeness(architecture)?;
    validate_operator_contract(architecture)?;
    let selected: BTreeSet<&str> = architecture
        .native_reuse
        .selected_capabilities
        .iter()
        .map(NonEmpty::as_str)
        .collect();
    let inspected: BTreeSet<&str> = architecture
        .native_reuse
        .inspected_capabilities
        .iter()
        .map(NonEmpty::as_str)
        .collect();
    if !selected.is_subset(&inspected) {
        return refuse("selected native capabilities must be present in inspected_capabilities");
    }
    for behavior in &architecture.required_behaviors {
        match behavior.lane {
            Lane::DomainModule if behavior.domain_module_justification.is_none() => {
                return refuse(format!(
                    "domain-module behavior '{}' requires a justification",
                    behavior.id
                ));
            }
            Lane::NativeCapability => {
                let Some(reuse) = &behavior.reuse_ref else {
                    return refuse(format!(
                        "native behavior '{}' requires reuse_ref",
                        behavior.id
                    ));
                };
                if !selected.contains(reuse.as_str()) {
                    return refuse(format!(
                        "native behavior '{}' must reference a selected capability",
                        behavior.id
                    ));
                }
            }
            _ => {}
        }
    }
    let provider_lane = architecture
        .required_behaviors
        .iter()
        .any(|behavior| behavior.lane == Lane::ProviderAdapter);
    let provider_effect = architecture
        .effects
        .iter()
        .any(|effect| effect.provider_boundary);
    if provider_lane != provider_effect {
        return refuse(
            "provider-adapter behavior and provider-boundary effect evidence must agree",
        );
    }
    Ok(())
}

fn implements_package(disposition: Disposition) -> bool {
    matches!(
        disposition,
        Disposition::Build | Disposition::ExtendExisting
    )
}

fn validate_completeness(architecture: &ArchitectureDecision) -> Result<(), Refusal> {
    if implements_package(architecture.disposition)
        && (architecture.required_behaviors.is_empty() || architecture.proof_plan.is_empty())
    {
        return refuse("build and extension architectures require behaviors and a proof plan");
    }
    let missing = &architecture.native_reuse.missing_capabilities;
    if architecture.disposition == Disposition::NeedsCore && missing.is_empty() {
        return refuse(
            "needs_core architecture must identify at least one missing native capability",
        );
    }
    if !missing.is_empty() && architecture.disposition != Disposition::NeedsCore {
        return refuse("missing native capabilities require a needs_core architecture decision");
    }
    Ok(())
}

fn validate_operator_contract(architecture: &ArchitectureDecision) -> Result<(), Refusal> {
    if !implements_package(architecture.disposition) {
        if architecture.identity.is_some()
            || architecture.direct_use.is_some()
            || architecture.chain_use.is_some()
        {
            return refuse(
                "no_skill and needs_core architectures must not invent a package identity or operator contract",
            );
        }
        return Ok(());
    }
    let Some(identity) = &architecture.identity else {
        return refuse("build and extension architectures require an identity decision");
    };
    let current = identity.current_name.as_ref().map(NonEmpty::as_str);
    let proposed = identity.proposed_name.as_ref().map(NonEmpty::as_str);
    let consistent = match (architecture.disposition, identity.action, current, proposed) {
        (Disposition::Build, IdentityAction::Create, None, Some(_)) => true,
        (
            Disposition::ExtendExisting,
            IdentityAction::Keep | IdentityAction::Internalize,
            Some(current),
            Some(proposed),
        ) => current == proposed,
        (Disposition::ExtendExisting, IdentityAction::Rename, Some(current), Some(proposed)) => {
            current != proposed
        }
        _ => false,
    };
    if !consistent {
        return refuse(
            "identity action, current_name, and proposed_name conflict with the architecture disposition",
        );
    }
    if identity.action == IdentityAction::Internalize && identity.visibility != Visibility::Internal
    {
        return refuse("an internalize identity decision must select internal visibility");
    }
    match identity.visibility {
        Visibility::Public => {
            let Some(direct) = &architecture.direct_use else {
                return refuse("public architectures require a direct_use contract");
            };
            let Some(chain) = &architecture.chain_use else {
                return refuse("public architectures require a chain_use contract");
            };
            if direct.trigger_requests.is_empty() || direct.non_trigger_requests.is_empty() {
                return refuse(
                    "public direct_use requires at least one trigger request and one non-trigger request",
                );
            }
            if chain.accepted_inputs.is_empty() || chain.must_not_repeat.is_empty() {
                return refuse(
                    "public chain_use requires accepted inputs and work that must not repeat",
                );
            }
            let kinds: BTreeSet<ProofKind> = architecture
                .proof_plan
                .iter()
                .map(|proof| proof.kind)
                .collect();
            let required = [
                ProofKind::SelectionTrial,
                ProofKind::StandaloneOperatorJourney,
                ProofKind::ComposedOperatorJourney,
            ];
            if !required.iter().all(|kind| kinds.contains(kind)) {
                return refuse(
                    "public architectures require selection_trial, standalone_operator_journey, and composed_operator_journey proofs",
                );
            }
        }
        Visibility::Internal => {
            if architecture.direct_use.is_some() {
                return refuse(
                    "internal architectures must not declare a public direct_use trigger contract",
                );
            }
            if identity.action == IdentityAction::Internalize && architecture.chain_use.is_none() {
                return refuse(
                    "internalized architectures require a chain_use contract for their runtime owner",
                );
            }
        }
    }
    Ok(())
}

/// Normalizes a repo-relative `target_dir`: non-empty, trimmed, `/`-separated, and made only of
/// normal components (no `.`, `..`, root or `\`).
pub fn normalize_target_dir(value: &str) -> Result<String, Refusal> {
    if value.trim() != value || value.is_empty() || value.contains('\\') {
        return refuse("target_dir must be a non-empty repo-relative POSIX path");
    }
    normal_components(value)
        .ok_or_else(|| Refusal("target_dir must stay inside repo_root".into()))?
        .ok_or_else(|| Refusal("target_dir must name a child path".into()))
}

/// Normalizes a package-relative file path of a write or delete, with the same rules as
/// [`normalize_target_dir`]. Runx refuses a bad write path with its `target_dir` words (it
/// checks the joined path with the same function); MindRune leads with them and names the
/// file on a second line.
pub fn normalize_package_file(value: &str) -> Result<String, Refusal> {
    if value.trim() != value || value.is_empty() || value.contains('\\') {
        return refuse(format!(
            "target_dir must be a non-empty repo-relative POSIX path\n  {value:?} must be a non-empty package-relative POSIX path"
        ));
    }
    if value.chars().any(char::is_control) {
        return refuse(format!(
            "{value:?} has a control character; package paths are printable"
        ));
    }
    let relative = normal_components(value)
        .ok_or_else(|| {
            Refusal(format!(
                "target_dir must stay inside repo_root\n  {value} must stay inside the target package"
            ))
        })?
        .ok_or_else(|| {
            Refusal(format!(
                "{value:?} must name a file inside the target package"
            ))
        })?;
    for part in relative.split('/') {
        // A package walk skips these names, so a file under one would land unvalidated and
        // outside the package digest.
        if super::snapshot::is_ignored(part) {
            return refuse(format!(
                "{relative}: {part} is never part of a package (Runx skips it); put the file elsewhere"
            ));
        }
        if part.len() > MAX_NAME_BYTES {
            return refuse(format!(
                "{relative}: a file or folder name may be at most {MAX_NAME_BYTES} bytes"
            ));
        }
    }
    Ok(relative)
}

/// The longest file or folder name a package may use: the filesystem's 255 less room for the
/// temporary name an atomic write uses beside it.
pub(crate) const MAX_NAME_BYTES: usize = 200;

/// `None` when a component leaves the folder (`.`, `..`, a root); `Some(None)` when nothing is
/// left; otherwise the components joined with `/` (doubled slashes collapse, as `Path` does).
fn normal_components(value: &str) -> Option<Option<String>> {
    if value.starts_with('/') {
        return None;
    }
    let mut parts = Vec::new();
    for part in value.split('/') {
        match part {
            "" => {}
            "." | ".." => return None,
            part => parts.push(part),
        }
    }
    Some((!parts.is_empty()).then(|| parts.join("/")))
}

/// Runx's auxiliary docs, matched without regard to case: `Readme.md` is the same bloat.
fn is_auxiliary_doc(basename: &str) -> bool {
    [
        "README.md",
        "CHANGELOG.md",
        "INSTALLATION_GUIDE.md",
        "QUICK_REFERENCE.md",
    ]
    .iter()
    .any(|doc| doc.eq_ignore_ascii_case(basename))
}

fn basename(relative: &str) -> &str {
    relative.rsplit('/').next().unwrap_or(relative)
}

fn assert_harness_path(relative: &str, mode: Mode) -> Result<(), Refusal> {
    if mode == Mode::Harness
        && !(relative.starts_with("fixtures/")
            && (relative.ends_with(".yaml") || relative.ends_with(".yml")))
    {
        return refuse(format!(
            "harness mode may only change fixtures/*.yaml files: {relative}"
        ));
    }
    Ok(())
}

/// Whether a write to `relative` is admitted in `mode`; `exists` says whether the target
/// already has that file (improve may maintain an existing README, never add one).
pub fn assert_allowed_write_path(relative: &str, exists: bool, mode: Mode) -> Result<(), Refusal> {
    let name = basename(relative);
    if is_auxiliary_doc(name) && !(mode == Mode::Improve && exists) {
        return refuse(format!(
            "{name} is auxiliary package bloat; keep operating guidance in SKILL.md"
        ));
    }
    assert_harness_path(relative, mode)
}

/// Whether a delete of `relative` is admitted in `mode`.
pub fn assert_allowed_delete_path(relative: &str, mode: Mode) -> Result<(), Refusal> {
    let name = basename(relative);
    if is_auxiliary_doc(name) {
        return refuse(format!(
            "{name} is an existing public package surface and cannot be deleted by skill-lab"
        ));
    }
    assert_harness_path(relative, mode)
}

/// Refuses file contents that carry a private key or a Nitrosend key, as Runx does, or any
/// credential MindRune's scrubber recognises.
pub fn reject_secret_material(relative: &str, contents: &str) -> Result<(), Refusal> {
    // Runx's rule: a line that is, trimmed, one of four private-key headers (a header after a
    // YAML `#` is not one to Runx; MindRune's detector below still refuses it).
    let private_key = contents.lines().any(|line| {
        matches!(
            line.trim()
                .strip_prefix("-----BEGIN ")
                .and_then(|label| label.strip_suffix("-----")),
            Some("PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" | "OPENSSH PRIVATE KEY")
        )
    });
    let nitrosend_key = contents
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|token| token.starts_with("nskey_live_") || token.starts_with("nskey_test_"));
    // Beyond Runx's two rules, MindRune's own credential detector (the one that scrubs saved
    // code, run output and mirror files): a package is an output path too, and a secret in it
    // would be published with it. Refused, not scrubbed, because a write lands byte for byte.
    if private_key || nitrosend_key {
        return refuse(format!("refusing secret-like material in {relative}"));
    }
    // A private-key header anywhere else (after a YAML `#`, a DSA or encrypted key) is one
    // too, to MindRune.
    let any_private_key = contents.lines().any(|line| {
        line.split_once("-----BEGIN ")
            .is_some_and(|(_, rest)| rest.contains("PRIVATE KEY-----"))
    });
    if any_private_key || crate::secrets::Scrubber::new(&[]).contains_secret(contents) {
        // Runx would write this file: say that the refusal is MindRune's own.
        return refuse(format!(
            "refusing secret-like material in {relative}\n  a credential MindRune recognises \
             (such as a ghp_ GitHub token, or a private key Runx's four header lines miss); Runx \
             accepts it, MindRune is stricter: move the secret to a credential and keep it out \
             of the package"
        ));
    }
    Ok(())
}

/// A bundle's writes and deletes after admission, with normalized package-relative paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmittedChange {
    pub writes: Vec<(String, String)>,
    pub deletes: Vec<String>,
}

/// Admits every write and delete of `change` (paths, auxiliary docs, harness mode, secrets,
/// `SKILL.md`), in Runx's order: all writes first, then all deletes.
pub fn admit_change(
    change: &ChangeBundle,
    mode: Mode,
    exists: impl Fn(&str) -> bool,
) -> Result<AdmittedChange, Refusal> {
    let mut seen = BTreeSet::new();
    let mut writes = Vec::with_capacity(change.writes.len());
    for write in &change.writes {
        let relative = normalize_package_file(write.path.as_str())?;
        assert_allowed_write_path(&relative, exists(&relative), mode)?;
        reject_secret_material(&relative, &write.contents)?;
        if !seen.insert(relative.clone()) {
            return refuse(format!("{relative} appears more than once in the bundle"));
        }
        writes.push((relative, write.contents.clone()));
    }
    let mut deletes = Vec::with_capacity(change.deletes.len());
    for delete in &change.deletes {
        let relative = normalize_package_file(delete.as_str())?;
        assert_allowed_delete_path(&relative, mode)?;
        if relative == "SKILL.md" {
            return refuse("SKILL.md cannot be deleted");
        }
        if !seen.insert(relative.clone()) {
            return refuse(format!("{relative} appears more than once in the bundle"));
        }
        deletes.push(relative);
    }
    if writes.len() + deletes.len() > MAX_BUNDLE_OPERATIONS {
        return refuse(format!(
            "a change bundle may hold at most {MAX_BUNDLE_OPERATIONS} operations"
        ));
    }
    let bytes: usize = writes.iter().map(|(_, contents)| contents.len()).sum();
    if bytes as u64 > super::snapshot::MAX_BYTES {
        return refuse("a change bundle may write at most 20 MiB");
    }
    Ok(AdmittedChange { writes, deletes })
}

/// Runx's limit on the operations of one bundle.
pub(crate) const MAX_BUNDLE_OPERATIONS: usize = 500;

/// The result of a non-write decision: nothing touched, the current digest reported.
pub fn unchanged_result(
    target_dir: &str,
    change: &ChangeBundle,
    package_digest: &str,
) -> ApplyResult {
    ApplyResult {
        schema: ApplyResultSchema::V1,
        target_dir: NonEmpty::from(target_dir),
        decision: change.decision,
        verdict: if change.decision == ChangeDecision::NeedsCore {
            ApplyVerdict::NeedsCore
        } else {
            ApplyVerdict::Unchanged
        },
        base_digest: change.base_digest.clone(),
        plan_digest: change.plan_digest.clone(),
        package_digest: NonEmpty::from(package_digest),
        changed_paths: Vec::new(),
        deleted_paths: Vec::new(),
        validation: None,
        residual_risks: Vec::new(),
    }
}

/// Whether a file counts toward the executable budget (Runx's `is_executable_path`).
pub(crate) fn is_executable_path(relative: &str) -> bool {
    ["cjs", "js", "mjs", "ts", "tsx", "py", "rb", "rs", "sh"]
        .iter()
        .any(|extension| {
            relative
                .strip_suffix(extension)
                .is_some_and(|rest| rest.ends_with('.'))
        })
}

enum LineClass {
    Production,
    Test,
    Generated,
}

fn line_class(relative: &str) -> LineClass {
    let name = basename(relative);
    if relative.starts_with("dist/")
        || relative.starts_with("generated/")
        || name.contains(".generated.")
    {
        return LineClass::Generated;
    }
    if relative.starts_with("fixtures/")
        || relative.starts_with("tests/")
        || relative.starts_with("test/")
        || name.contains(".test.")
        || name.ends_with("_test.rs")
    {
        return LineClass::Test;
    }
    LineClass::Production
}

/// Lines of a text file: newlines, plus one for an unterminated last line; binary counts 0.
fn text_line_count(contents: &[u8]) -> u64 {
    if contents.is_empty() || std::str::from_utf8(contents).is_err() {
        return 0;
    }
    let newlines = contents.iter().filter(|byte| **byte == b'\n').count() as u64;
    newlines + u64::from(contents.last() != Some(&b'\n'))
}

/// Runx's package metrics over a snapshot's files.
pub fn package_metrics(files: &[SnapshotFile]) -> PackageMetrics {
    let mut metrics = PackageMetrics::default();
    for file in files {
        metrics.files += 1;
        metrics.bytes += file.contents.len() as u64;
        let lines = text_line_count(&file.contents);
        match line_class(&file.path) {
            LineClass::Production => metrics.production_lines += lines,
            LineClass::Test => metrics.test_lines += lines,
            LineClass::Generated => metrics.generated_lines += lines,
        }
        if is_executable_path(&file.path) {
            metrics.executable_files += 1;
            metrics.executable_lines += lines;
        }
    }
    metrics
}

/// `after - before`, field by field.
pub fn package_delta(before: &PackageMetrics, after: &PackageMetrics) -> PackageDelta {
    let delta = |after: u64, before: u64| {
        i64::try_from(after)
            .and_then(|after| i64::try_from(before).map(|before| after - before))
            .unwrap_or(if after >= before { i64::MAX } else { i64::MIN })
    };
    PackageDelta {
        files: delta(after.files, before.files),
        bytes: delta(after.bytes, before.bytes),
        production_lines: delta(after.production_lines, before.production_lines),
        test_lines: delta(after.test_lines, before.test_lines),
        generated_lines: delta(after.generated_lines, before.generated_lines),
        executable_files: delta(after.executable_files, before.executable_files),
        executable_lines: delta(after.executable_lines, before.executable_lines),
    }
}

/// The metrics as the authoring context shows them: Runx adds `text_lines`, the sum of the
/// three line classes.
pub fn metrics_json(metrics: &PackageMetrics) -> Value {
    let mut value = to_json(metrics);
    if let Some(object) = value.as_object_mut() {
        object.insert(
            "text_lines".into(),
            json!(metrics.production_lines + metrics.test_lines + metrics.generated_lines),
        );
    }
    value
}

/// Refuses a candidate over the decision's file or executable-line budget.
pub fn validate_resource_budget(
    architecture: &ArchitectureDecision,
    metrics: &PackageMetrics,
) -> Result<(), Refusal> {
    let budget = &architecture.resource_budget;
    if metrics.files > budget.max_files {
        return refuse(format!(
            "candidate has {} files, exceeding architecture budget {}",
            metrics.files, budget.max_files
        ));
    }
    if metrics.executable_lines > budget.max_executable_lines {
        return refuse(format!(
            "candidate has {} executable lines, exceeding architecture budget {}",
            metrics.executable_lines, budget.max_executable_lines
        ));
    }
    Ok(())
}
