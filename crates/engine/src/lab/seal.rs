//! Sealing the Skill Lab's receipts: one per terminal path of a `mindrune lab` run (sealed,
//! failed, refused, waiting for an agent) and one per harness case.
//!
//! The receipt's subject commits the run's inputs and its result by their `runx.stable-json.v1`
//! digests, so a receipt proves which inputs produced which result without carrying either;
//! the local read aid (`metadata`, outside the digest) keeps the runner and step trace.

use std::path::{Path, PathBuf};

use mindrune_core::ApplyVerdict;
use mindrune_core::{
    Authority, Commitment, CommitmentScope, CriterionBinding, CriterionStatus, Enforcement,
    Idempotency, IssuerType, ReceiptDisposition, ReceiptDraft, ReceiptError, Reference,
    ReferenceType, Seal, SigningKey, Subject, seal_receipt,
};
use serde_json::{Map, Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::harness::scratch::{ScratchKind, scratch_dir};
use super::harness::{CaseOutcome, CaseSealer};
use super::receipt_store::{LocalSigningKey, ReceiptStore};
use super::runners::{RunEnd, RunReport};

/// What one terminal path seals.
#[derive(Debug, Clone)]
pub struct SealRequest {
    /// The subject kind (open in Runx): `skill` for a lab run, `harness_case` for a replayed
    /// case. The subject's reference is a `harness` reference either way.
    pub kind: &'static str,
    /// What ran, as a URI (`mindrune:lab/build`, `runx:skill/web-fetch#fixture-name`).
    pub subject_uri: String,
    pub inputs: Value,
    pub output: Value,
    pub disposition: ReceiptDisposition,
    pub reason_code: String,
    pub summary: String,
    /// Named criteria and whether each held (a step, an expectation).
    pub criteria: Vec<(String, bool)>,
    /// Unsigned read aid.
    pub metadata: Map<String, Value>,
}

/// The current time as Runx writes receipt timestamps (`2026-05-22T00:00:00.123Z`).
pub(crate) fn now_timestamp() -> String {
    let now = OffsetDateTime::now_utc();
    let now = now
        .replace_nanosecond(now.millisecond() as u32 * 1_000_000)
        .unwrap_or(now);
    now.format(&Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Builds the receipt draft for `request`, closed at `at`.
pub(crate) fn draft(request: &SealRequest, at: &str) -> Result<ReceiptDraft, ReceiptError> {
    // The subject kind is open in Runx; its reference type is not. Runx's runtime names what
    // ran by a `harness` reference (`hrn_<graph>_<node>`), and so does the lab, for a run and a
    // replayed case alike.
    let subject = Subject {
        kind: request.kind.to_owned(),
        reference: Reference::new(ReferenceType::Harness, request.subject_uri.clone()),
        input_context: None,
        commitments: vec![
            Commitment::stable_json(CommitmentScope::Input, &request.inputs)?,
            Commitment::stable_json(CommitmentScope::Output, &request.output)?,
        ],
    };
    let idempotency = Idempotency::from_inputs(
        &json!({"subject": request.subject_uri, "inputs": request.inputs}),
        &json!({"kind": request.kind, "subject": request.subject_uri}),
        &request.output,
    )?;
    let enforcement =
        Enforcement::for_profile("mindrune.lab.local", Vec::new(), Vec::new(), Vec::new())?;
    let authority = Authority::new(
        Reference::new(
            ReferenceType::Principal,
            "mindrune:principal:local-operator",
        ),
        enforcement,
    );
    let criteria = request
        .criteria
        .iter()
        .map(|(name, held)| {
            CriterionBinding::new(
                name.clone(),
                if *held {
                    CriterionStatus::Verified
                } else {
                    CriterionStatus::Failed
                },
            )
        })
        .collect();
    let seal = Seal::terminal(
        request.disposition,
        request.reason_code.clone(),
        request.summary.clone(),
        at,
        criteria,
    );
    let mut draft = ReceiptDraft::new(at, idempotency, subject, authority, seal);
    // Runx's verifier checks a real signature only from a `hosted` or `ci` issuer and refuses
    // one from `local` or `verifier` (`signature_unsupported_issuer`) even when it holds the
    // key. MindRune is the host the run happened in (not a CI job, not a verifier), and the
    // trust still comes only from the operator handing the key to `runx verify`, so `hosted`
    // is the type under which the signature is actually checked rather than refused.
    draft.issuer_type = IssuerType::Hosted;
    if !request.metadata.is_empty() {
        draft.metadata = Some(request.metadata.clone());
    }
    Ok(draft)
}

/// Seals `request` with `key` and stores it; returns the receipt id and its file.
pub(crate) fn seal_into(
    store: &ReceiptStore,
    key: &SigningKey,
    request: &SealRequest,
) -> Result<(String, PathBuf), String> {
    let at = now_timestamp();
    let sealed = draft(request, &at)
        .and_then(|draft| seal_receipt(&draft, key))
        .map_err(|err| format!("cannot seal the receipt: {err}"))?;
    let id = sealed["id"].as_str().unwrap_or_default().to_owned();
    let path = store.store(&sealed).map_err(|err| err.to_string())?;
    Ok((id, path))
}

/// The receipt of a lab run, for every way it can end.
pub fn run_request(report: &RunReport) -> SealRequest {
    let (disposition, reason_code, summary) = match &report.end {
        RunEnd::Planned => (
            ReceiptDisposition::Closed,
            "skill_lab_planned".to_owned(),
            "architecture plan bound to the inspected base digest".to_owned(),
        ),
        RunEnd::Applied(result) => (
            ReceiptDisposition::Closed,
            match result.verdict {
                ApplyVerdict::ValidatedAndApplied => "skill_lab_applied",
                ApplyVerdict::Unchanged => "skill_lab_unchanged",
                ApplyVerdict::NeedsCore => "skill_lab_needs_core",
            }
            .to_owned(),
            format!(
                "{} {}: {} written, {} deleted",
                result.target_dir,
                serde_json::to_value(result.verdict)
                    .unwrap_or_default()
                    .as_str()
                    .unwrap_or(""),
                result.changed_paths.len(),
                result.deleted_paths.len()
            ),
        ),
        RunEnd::NeedsAgent { act, .. } => (
            ReceiptDisposition::Deferred,
            "skill_lab_needs_agent".to_owned(),
            format!("waiting for an answer to the {} act", act.task()),
        ),
        RunEnd::Failed { step, reason } => (
            // A refusal by a native step blocks the change; anything else failed.
            if matches!(*step, "plan" | "bind" | "apply") {
                ReceiptDisposition::Blocked
            } else {
                ReceiptDisposition::Failed
            },
            format!("skill_lab_{step}_refused"),
            format!("{step}: {reason}"),
        ),
    };
    let criteria = report
        .steps
        .iter()
        .map(|step| (format!("step:{}", step.step), step.status == "sealed"))
        .collect();
    let mut metadata = Map::new();
    metadata.insert("runner".into(), json!(report.runner.as_str()));
    metadata.insert(
        "steps".into(),
        json!(
            report
                .steps
                .iter()
                .map(|s| json!({"step": s.step, "status": s.status}))
                .collect::<Vec<_>>()
        ),
    );
    SealRequest {
        kind: "skill",
        subject_uri: format!("mindrune:lab/{}", report.runner.as_str()),
        inputs: report.inputs.clone(),
        output: report.result_json(),
        disposition,
        reason_code,
        summary,
        criteria,
        metadata,
    }
}

/// The receipt a harness case seals, from its outcome.
pub(crate) fn case_request(outcome: &CaseOutcome) -> SealRequest {
    let disposition = match outcome.disposition.as_str() {
        "closed" => ReceiptDisposition::Closed,
        "deferred" => ReceiptDisposition::Deferred,
        "blocked" => ReceiptDisposition::Blocked,
        "declined" => ReceiptDisposition::Declined,
        _ => ReceiptDisposition::Failed,
    };
    let criteria = outcome
        .steps
        .iter()
        .map(|step| (format!("step:{}", step.step_id), step.status == "succeeded"))
        .collect();
    let mut metadata = Map::new();
    metadata.insert("runner".into(), json!(outcome.runner));
    metadata.insert("steps".into(), json!(outcome.steps));
    if let Some(error) = &outcome.error {
        metadata.insert("error".into(), json!(error));
    }
    SealRequest {
        kind: "harness_case",
        subject_uri: format!("runx:harness/{}#{}", outcome.runner, outcome.name),
        inputs: outcome.inputs.clone(),
        output: outcome.output.clone(),
        disposition,
        reason_code: outcome.reason_code.clone(),
        summary: match &outcome.error {
            Some(error) => format!("{}: {error}", outcome.name),
            None => format!("{}: {}", outcome.name, outcome.status.as_str()),
        },
        criteria,
        metadata,
    }
}

/// Seals harness cases into a receipt store with a given key.
pub struct StoreSealer {
    store: ReceiptStore,
    key: SigningKey,
    /// Keeps a throwaway store's folder alive as long as the sealer.
    _folder: Option<tempfile::TempDir>,
}

impl StoreSealer {
    pub fn new(store: ReceiptStore, key: SigningKey) -> Self {
        Self {
            store,
            key,
            _folder: None,
        }
    }

    /// A sealer over a fresh temporary store and a one-time key: a harness replay of a staged
    /// candidate must not write into the operator's receipts or use their key.
    pub fn throwaway() -> Result<Self, String> {
        let folder = scratch_dir(ScratchKind::Receipts)
            .map_err(|err| format!("cannot create a receipt store: {err}"))?;
        let store = ReceiptStore::open(folder.path()).map_err(|err| err.to_string())?;
        let key_path = folder.path().join("throwaway.ed25519");
        let key = LocalSigningKey::load_or_create(&key_path).map_err(|err| err.to_string())?;
        Ok(Self {
            store,
            key: key.signing_key().clone(),
            _folder: Some(folder),
        })
    }

    /// The repository's store and local key (`.runx/receipts`, `.runx/keys`). Their default
    /// folders are made without following a symlink, so a planted `.runx` link cannot send
    /// receipts or a new key out of the workspace.
    pub fn for_repo(repo_root: &Path) -> Result<Self, String> {
        for (env, folder) in [
            (super::receipt_store::RECEIPT_DIR_ENV, ".runx/receipts"),
            (super::receipt_store::SIGNING_KEY_ENV, ".runx/keys"),
        ] {
            if std::env::var_os(env).is_none_or(|value| value.is_empty()) {
                super::commit::create_contained_dir(repo_root, folder)
                    .map_err(|err| err.to_string())?;
            }
        }
        let store = ReceiptStore::for_repo(repo_root).map_err(|err| err.to_string())?;
        let key = LocalSigningKey::for_repo(repo_root).map_err(|err| err.to_string())?;
        Ok(Self::new(store, key.signing_key().clone()))
    }

    pub fn store(&self) -> &ReceiptStore {
        &self.store
    }

    /// Seals any request into this sealer's store.
    pub fn seal_request(&self, request: &SealRequest) -> Result<(String, PathBuf), String> {
        seal_into(&self.store, &self.key, request)
    }
}

impl CaseSealer for StoreSealer {
    fn seal(&mut self, case: &CaseOutcome) -> Result<String, String> {
        self.seal_request(&case_request(case)).map(|(id, _)| id)
    }
}

/// A sealer factory for candidate validation: each replay gets its own throwaway store. When
/// a throwaway store cannot be made, the replay's cases report the sealing failure as
/// assertion errors, so the candidate fails rather than passing unsealed.
pub fn throwaway_sealer() -> Box<dyn CaseSealer> {
    match StoreSealer::throwaway() {
        Ok(sealer) => Box::new(sealer),
        Err(reason) => Box::new(FailingSealer(reason)),
    }
}

struct FailingSealer(String);

impl CaseSealer for FailingSealer {
    fn seal(&mut self, _case: &CaseOutcome) -> Result<String, String> {
        Err(self.0.clone())
    }
}
