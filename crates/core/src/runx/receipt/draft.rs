//! The draft: what a caller knows when a path ends — references, disposition, criteria, act,
//! authority, intent, closure, seal and lineage — as the typed fields a receipt is sealed from.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::ReceiptError;
use crate::runx::stable_json::{self, stable_digest};

/// A pointer to something outside the receipt (`runx.reference.v1`): a harness, a principal, a
/// signal, another receipt. `kind` is Runx's reference `type` (`harness`, `principal`,
/// `receipt`, `artifact`, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reference {
    #[serde(rename = "type")]
    pub kind: ReferenceType,
    pub uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locator: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
}

/// What a reference points at: Runx's closed list (`runx-contracts` `ReferenceType`, serde
/// snake_case). `runx verify` refuses a receipt naming any other type (`receipt_parse_error:
/// unknown variant`), so the type is an enum here and a receipt cannot be sealed with another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReferenceType {
    GithubIssue,
    GithubPullRequest,
    GithubRepo,
    SlackThread,
    SentryEvent,
    ProviderThread,
    ProviderEvent,
    ProviderComment,
    TrackingItem,
    ChangeRequest,
    Repository,
    SupportTicket,
    Signal,
    Act,
    Receipt,
    GraphReceipt,
    Artifact,
    Verification,
    Harness,
    Host,
    Deployment,
    Surface,
    Target,
    Opportunity,
    ThesisAssessment,
    Selection,
    SkillBinding,
    TargetTransitionEntry,
    SelectionCycle,
    Decision,
    ReflectionEntry,
    FeedEntry,
    Principal,
    AuthorityProof,
    ScopeAdmission,
    Grant,
    Mandate,
    Credential,
    WebhookDelivery,
    RedactionPolicy,
    ExternalUrl,
}

impl ReferenceType {
    /// Every type, in Runx's order.
    pub const ALL: [Self; 41] = [
        Self::GithubIssue,
        Self::GithubPullRequest,
        Self::GithubRepo,
        Self::SlackThread,
        Self::SentryEvent,
        Self::ProviderThread,
        Self::ProviderEvent,
        Self::ProviderComment,
        Self::TrackingItem,
        Self::ChangeRequest,
        Self::Repository,
        Self::SupportTicket,
        Self::Signal,
        Self::Act,
        Self::Receipt,
        Self::GraphReceipt,
        Self::Artifact,
        Self::Verification,
        Self::Harness,
        Self::Host,
        Self::Deployment,
        Self::Surface,
        Self::Target,
        Self::Opportunity,
        Self::ThesisAssessment,
        Self::Selection,
        Self::SkillBinding,
        Self::TargetTransitionEntry,
        Self::SelectionCycle,
        Self::Decision,
        Self::ReflectionEntry,
        Self::FeedEntry,
        Self::Principal,
        Self::AuthorityProof,
        Self::ScopeAdmission,
        Self::Grant,
        Self::Mandate,
        Self::Credential,
        Self::WebhookDelivery,
        Self::RedactionPolicy,
        Self::ExternalUrl,
    ];

    /// The wire name, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::GithubIssue => "github_issue",
            Self::GithubPullRequest => "github_pull_request",
            Self::GithubRepo => "github_repo",
            Self::SlackThread => "slack_thread",
            Self::SentryEvent => "sentry_event",
            Self::ProviderThread => "provider_thread",
            Self::ProviderEvent => "provider_event",
            Self::ProviderComment => "provider_comment",
            Self::TrackingItem => "tracking_item",
            Self::ChangeRequest => "change_request",
            Self::Repository => "repository",
            Self::SupportTicket => "support_ticket",
            Self::Signal => "signal",
            Self::Act => "act",
            Self::Receipt => "receipt",
            Self::GraphReceipt => "graph_receipt",
            Self::Artifact => "artifact",
            Self::Verification => "verification",
            Self::Harness => "harness",
            Self::Host => "host",
            Self::Deployment => "deployment",
            Self::Surface => "surface",
            Self::Target => "target",
            Self::Opportunity => "opportunity",
            Self::ThesisAssessment => "thesis_assessment",
            Self::Selection => "selection",
            Self::SkillBinding => "skill_binding",
            Self::TargetTransitionEntry => "target_transition_entry",
            Self::SelectionCycle => "selection_cycle",
            Self::Decision => "decision",
            Self::ReflectionEntry => "reflection_entry",
            Self::FeedEntry => "feed_entry",
            Self::Principal => "principal",
            Self::AuthorityProof => "authority_proof",
            Self::ScopeAdmission => "scope_admission",
            Self::Grant => "grant",
            Self::Mandate => "mandate",
            Self::Credential => "credential",
            Self::WebhookDelivery => "webhook_delivery",
            Self::RedactionPolicy => "redaction_policy",
            Self::ExternalUrl => "external_url",
        }
    }
}

/// The wire names of [`ReferenceType`], in Runx's order: what a receipt's every `type` of a
/// reference must be one of.
pub(crate) const REFERENCE_TYPES: [&str; 41] = [
    "github_issue",
    "github_pull_request",
    "github_repo",
    "slack_thread",
    "sentry_event",
    "provider_thread",
    "provider_event",
    "provider_comment",
    "tracking_item",
    "change_request",
    "repository",
    "support_ticket",
    "signal",
    "act",
    "receipt",
    "graph_receipt",
    "artifact",
    "verification",
    "harness",
    "host",
    "deployment",
    "surface",
    "target",
    "opportunity",
    "thesis_assessment",
    "selection",
    "skill_binding",
    "target_transition_entry",
    "selection_cycle",
    "decision",
    "reflection_entry",
    "feed_entry",
    "principal",
    "authority_proof",
    "scope_admission",
    "grant",
    "mandate",
    "credential",
    "webhook_delivery",
    "redaction_policy",
    "external_url",
];

impl Reference {
    pub fn new(kind: ReferenceType, uri: impl Into<String>) -> Self {
        Self {
            kind,
            uri: uri.into(),
            provider: None,
            locator: None,
            label: None,
            observed_at: None,
        }
    }

    /// The same reference with a locator, which is how a parent commits a child receipt's
    /// digest next to its id.
    pub fn with_locator(mut self, locator: impl Into<String>) -> Self {
        self.locator = Some(locator.into());
        self
    }

    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }
}

/// How a path ended (`seal.disposition`, `closure.disposition`); Runx's `ClosureDisposition`,
/// also read from a fixture's `expect.receipt.disposition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// Runx's name, which serde's refusals of a non-string value name (`expected enum
// ClosureDisposition`); the JSON of a variant is its snake_case name either way.
#[serde(rename = "ClosureDisposition", rename_all = "snake_case")]
pub enum Disposition {
    Closed,
    Deferred,
    Superseded,
    Declined,
    Blocked,
    Failed,
    Killed,
    TimedOut,
}

/// Whether a success criterion held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionStatus {
    Verified,
    Failed,
    Pending,
    NotApplicable,
    Unknown,
}

/// What kind of act an act was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActForm {
    Revision,
    Reply,
    Review,
    Observation,
    Verification,
}

/// Who issued a receipt. Runx's production verifier only trusts real signatures from `hosted`
/// and `ci` issuers; a MindRune workspace key is honestly `local`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssuerType {
    Local,
    Hosted,
    Ci,
    Verifier,
}

/// Which bytes a commitment covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommitmentScope {
    Input,
    Output,
    Stdout,
    Stderr,
    Error,
}

/// The hash a commitment uses; `runx.receipt.v1` has only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HashAlgorithm {
    Sha256,
}

/// A scoped digest the receipt binds, such as the digest of the run's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commitment {
    pub scope: CommitmentScope,
    pub algorithm: HashAlgorithm,
    pub value: String,
    pub canonicalization: String,
}

impl Commitment {
    /// Commits to a JSON value by its `runx.stable-json.v1` digest.
    pub fn stable_json(scope: CommitmentScope, value: &Value) -> Result<Self, ReceiptError> {
        Ok(Self {
            scope,
            algorithm: HashAlgorithm::Sha256,
            value: stable_digest(value).map_err(|err| ReceiptError::InvalidDraft {
                field: "subject.commitments".to_owned(),
                problem: err.to_string(),
            })?,
            canonicalization: stable_json::CANONICALIZATION.to_owned(),
        })
    }
}

/// Where the run's input came from: a source, a short human preview and the input's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InputContext {
    pub source: String,
    pub preview: String,
    pub value_hash: String,
}

/// What ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Subject {
    /// Open kind, such as `skill` or `graph`.
    pub kind: String,
    #[serde(rename = "ref")]
    pub reference: Reference,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_context: Option<InputContext>,
    pub commitments: Vec<Commitment>,
}

/// The three deduplication keys. Runx treats them as opaque non-empty strings; callers
/// normally make them digests, which [`Idempotency::from_inputs`] does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Idempotency {
    pub intent_key: String,
    pub trigger_fingerprint: String,
    pub content_hash: String,
}

impl Idempotency {
    /// The keys as the `runx.stable-json.v1` digests of what identifies the intent, the
    /// trigger and the content, so the same request always gets the same keys.
    pub fn from_inputs(
        intent: &Value,
        trigger: &Value,
        content: &Value,
    ) -> Result<Self, ReceiptError> {
        let digest_of = |field: &str, value: &Value| {
            stable_digest(value).map_err(|err| ReceiptError::InvalidDraft {
                field: format!("idempotency.{field}"),
                problem: err.to_string(),
            })
        };
        Ok(Self {
            intent_key: digest_of("intent_key", intent)?,
            trigger_fingerprint: digest_of("trigger_fingerprint", trigger)?,
            content_hash: digest_of("content_hash", content)?,
        })
    }
}

/// Whether this authority was narrowed from a parent's. Runx writes both fields as `null`
/// when there is no parent, so they are never left out.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Attenuation {
    pub parent_authority_ref: Option<Reference>,
    pub subset_proof: Option<Value>,
}

/// The enforcement profile the run ran under, kept as a hash plus the readable references.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Enforcement {
    pub profile_hash: String,
    pub redaction_refs: Vec<Reference>,
    pub setup_refs: Vec<Reference>,
    pub teardown_refs: Vec<Reference>,
}

impl Enforcement {
    /// A profile hashed as Runx's runtime hashes its own (`seal.rs`,
    /// `enforcement_profile_hash`): the digest of `{profile_id, redaction_refs, setup_refs,
    /// teardown_refs}` in canonical JSON.
    pub fn for_profile(
        profile_id: &str,
        redaction_refs: Vec<Reference>,
        setup_refs: Vec<Reference>,
        teardown_refs: Vec<Reference>,
    ) -> Result<Self, ReceiptError> {
        let as_value = |refs: &[Reference]| serde_json::to_value(refs).unwrap_or(Value::Null);
        let identity = serde_json::json!({
            "profile_id": profile_id,
            "redaction_refs": as_value(&redaction_refs),
            "setup_refs": as_value(&setup_refs),
            "teardown_refs": as_value(&teardown_refs),
        });
        let profile_hash = stable_digest(&identity).map_err(|err| ReceiptError::InvalidDraft {
            field: "authority.enforcement.profile_hash".to_owned(),
            problem: err.to_string(),
        })?;
        Ok(Self {
            profile_hash,
            redaction_refs,
            setup_refs,
            teardown_refs,
        })
    }
}

/// What allowed the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Authority {
    pub actor_ref: Reference,
    pub grant_refs: Vec<Reference>,
    pub scope_refs: Vec<Reference>,
    pub authority_proof_refs: Vec<Reference>,
    pub attenuation: Attenuation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mandate_ref: Option<Reference>,
    /// Runx's authority terms, passed through as given.
    pub terms: Vec<Value>,
    pub enforcement: Enforcement,
}

impl Authority {
    /// An actor acting under an enforcement profile, with no grants, scopes or parent.
    pub fn new(actor_ref: Reference, enforcement: Enforcement) -> Self {
        Self {
            actor_ref,
            grant_refs: Vec::new(),
            scope_refs: Vec::new(),
            authority_proof_refs: Vec::new(),
            attenuation: Attenuation::default(),
            mandate_ref: None,
            terms: Vec::new(),
            enforcement,
        }
    }
}

/// One criterion's outcome, with the evidence for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CriterionBinding {
    pub criterion_id: String,
    pub status: CriterionStatus,
    pub evidence_refs: Vec<Reference>,
    pub verification_refs: Vec<Reference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl CriterionBinding {
    pub fn new(criterion_id: impl Into<String>, status: CriterionStatus) -> Self {
        Self {
            criterion_id: criterion_id.into(),
            status,
            evidence_refs: Vec::new(),
            verification_refs: Vec::new(),
            summary: None,
        }
    }

    pub fn with_summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }
}

/// A criterion an act set out to meet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SuccessCriterion {
    pub criterion_id: String,
    pub statement: String,
    pub required: bool,
}

/// Why an act was done and what would count as success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Intent {
    pub purpose: String,
    pub legitimacy: String,
    pub success_criteria: Vec<SuccessCriterion>,
    pub constraints: Vec<String>,
    pub derived_from: Vec<Reference>,
}

/// How one act ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Closure {
    pub disposition: Disposition,
    pub reason_code: String,
    pub summary: String,
    pub closed_at: String,
}

/// Which runner did an agent act. Runx writes all three fields, `null` when unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunnerProvenance {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub prompt_version: Option<String>,
}

/// One thing the run did, inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Act {
    pub id: String,
    pub form: ActForm,
    pub intent: Intent,
    pub summary: String,
    pub criterion_bindings: Vec<CriterionBinding>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<RunnerProvenance>,
    pub source_refs: Vec<Reference>,
    pub target_refs: Vec<Reference>,
    pub artifact_refs: Vec<Reference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_ref: Option<Reference>,
    pub closure: Closure,
}

/// The outcome: exactly one per receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Seal {
    pub disposition: Disposition,
    pub reason_code: String,
    pub summary: String,
    pub closed_at: String,
    /// Equals `closed_at` for a terminal seal; later only for a deferred run still observed.
    pub last_observed_at: String,
    pub criteria: Vec<CriterionBinding>,
}

impl Seal {
    /// A terminal seal: observed last when it closed.
    pub fn terminal(
        disposition: Disposition,
        reason_code: impl Into<String>,
        summary: impl Into<String>,
        closed_at: impl Into<String>,
        criteria: Vec<CriterionBinding>,
    ) -> Self {
        let closed_at = closed_at.into();
        Self {
            disposition,
            reason_code: reason_code.into(),
            summary: summary.into(),
            last_observed_at: closed_at.clone(),
            closed_at,
            criteria,
        }
    }
}

/// Graph wiring, which the id leaves out so a parent can name its children by id.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lineage {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<Reference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<Reference>,
    pub children: Vec<Reference>,
    /// Runx's fanout sync points, passed through as given.
    pub sync: Vec<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_ref: Option<Reference>,
}

/// Everything a caller knows when a path ends; [`seal`](super::seal) adds the issuer, id, digest and
/// signature. Timestamps are RFC 3339 UTC strings (`2026-05-22T00:00:00Z`) passed in, so
/// sealing stays pure and reproducible.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiptDraft {
    pub created_at: String,
    pub issuer_type: IssuerType,
    pub idempotency: Idempotency,
    pub subject: Subject,
    pub authority: Authority,
    pub signals: Vec<Reference>,
    pub acts: Vec<Act>,
    pub seal: Seal,
    pub lineage: Option<Lineage>,
    /// Unsigned local read aid: outside the digest and the id.
    pub metadata: Option<Map<String, Value>>,
}

impl ReceiptDraft {
    /// A `local` draft with no signals, acts, lineage or metadata.
    pub fn new(
        created_at: impl Into<String>,
        idempotency: Idempotency,
        subject: Subject,
        authority: Authority,
        seal: Seal,
    ) -> Self {
        Self {
            created_at: created_at.into(),
            issuer_type: IssuerType::Local,
            idempotency,
            subject,
            authority,
            signals: Vec::new(),
            acts: Vec::new(),
            seal,
            lineage: None,
            metadata: None,
        }
    }
}

/// `receipt.issuer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Issuer {
    #[serde(rename = "type")]
    pub(super) issuer_type: IssuerType,
    pub(super) kid: String,
    pub(super) public_key_sha256: String,
}
