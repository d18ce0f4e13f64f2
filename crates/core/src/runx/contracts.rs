//! The Skill Lab's contracts, shaped exactly as Runx's `runx_contracts::skill_authoring`:
//! `architecture_decision`, `architecture_plan`, `change_draft`, `change_bundle`,
//! `validation_result` and `apply_result`.
//!
//! Every struct refuses unknown fields and empty strings, as Runx's do (its JSON schemas in
//! `shared/data/runx/schemas/` are generated from those types, and the tests check our output
//! against them). Optional fields are omitted when absent, because the plan digest hashes the
//! serialized decision and Runx omits them too; a `null` in the input reads as absent.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A string that is not empty (Runx's `NonEmptyString`, `minLength: 1` in the schemas).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct NonEmpty(String);

impl NonEmpty {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for NonEmpty {
    type Error = &'static str;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.is_empty() {
            // Runx's `NonEmptyString` words it so.
            Err("string must be non-empty")
        } else {
            Ok(Self(value))
        }
    }
}

impl From<NonEmpty> for String {
    fn from(value: NonEmpty) -> Self {
        value.0
    }
}

impl From<&str> for NonEmpty {
    /// For literals in code and tests; an empty literal is a programming error caught at once.
    fn from(value: &str) -> Self {
        assert!(!value.is_empty(), "NonEmpty::from(\"\")");
        Self(value.to_owned())
    }
}

impl fmt::Display for NonEmpty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Declares a one-value enum for a contract's `schema` field, so a wrong schema id is refused
/// by deserialization itself.
macro_rules! schema_id {
    ($name:ident, $id:literal) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
        pub enum $name {
            #[default]
            #[serde(rename = $id)]
            V1,
        }
        impl $name {
            pub const ID: &'static str = $id;
        }
    };
}

schema_id!(DecisionSchema, "runx.skill.architecture_decision.v1");
schema_id!(PlanSchema, "runx.skill.architecture_plan.v1");
schema_id!(DraftSchema, "runx.skill.change_draft.v1");
schema_id!(BundleSchema, "runx.skill.change_bundle.v1");
schema_id!(ValidationSchema, "runx.skill.validation_result.v1");
schema_id!(ApplyResultSchema, "runx.skill.apply_result.v1");

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    Build,
    ExtendExisting,
    NoSkill,
    NeedsCore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdentityAction {
    Keep,
    Rename,
    Create,
    Internalize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    Public,
    Internal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    Manual,
    Graph,
    AgentTask,
    NativeCapability,
    DomainModule,
    CliTool,
    ProviderAdapter,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EffectKind {
    None,
    Read,
    Draft,
    Mutate,
    Financial,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    None,
    Policy,
    Human,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProofKind {
    Contract,
    Harness,
    Regression,
    Security,
    Performance,
    SelectionTrial,
    StandaloneOperatorJourney,
    ComposedOperatorJourney,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_name: Option<NonEmpty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposed_name: Option<NonEmpty>,
    pub action: IdentityAction,
    pub visibility: Visibility,
    pub rationale: NonEmpty,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectUse {
    pub trigger_requests: Vec<NonEmpty>,
    pub non_trigger_requests: Vec<NonEmpty>,
    pub default_outcome: NonEmpty,
    pub routine_host_work: Vec<NonEmpty>,
    pub runx_boundary: NonEmpty,
    pub terminal_result: NonEmpty,
    pub blocker_behavior: NonEmpty,
    pub native_escape: NonEmpty,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChainUse {
    pub accepted_inputs: Vec<NonEmpty>,
    pub result: NonEmpty,
    pub reused_evidence: Vec<NonEmpty>,
    pub reused_effects: Vec<NonEmpty>,
    pub must_not_repeat: Vec<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KnowledgeContract {
    pub purpose: NonEmpty,
    pub evidence_required: Vec<NonEmpty>,
    pub decision_logic: Vec<NonEmpty>,
    pub stop_conditions: Vec<NonEmpty>,
    pub recovery: Vec<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Behavior {
    pub id: NonEmpty,
    pub outcome: NonEmpty,
    pub lane: Lane,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_ref: Option<NonEmpty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_module_justification: Option<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeReuse {
    pub inspected_capabilities: Vec<NonEmpty>,
    pub selected_capabilities: Vec<NonEmpty>,
    pub missing_capabilities: Vec<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effect {
    pub effect: EffectKind,
    pub authority_scopes: Vec<NonEmpty>,
    pub approval: Approval,
    pub provider_boundary: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillChain {
    pub context_skills: Vec<NonEmpty>,
    pub routes: Vec<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceBudget {
    pub max_files: u64,
    pub max_executable_lines: u64,
    pub max_fanout: u64,
    pub max_process_spawns: u64,
    pub network_allowed: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Proof {
    pub name: NonEmpty,
    pub kind: ProofKind,
    pub expected: NonEmpty,
}

/// `runx.skill.architecture_decision.v1`: the architecture agent's closed design.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureDecision {
    pub schema: DecisionSchema,
    pub disposition: Disposition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_use: Option<DirectUse>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_use: Option<ChainUse>,
    pub objective: NonEmpty,
    pub operator_value: NonEmpty,
    pub knowledge_contract: KnowledgeContract,
    pub required_behaviors: Vec<Behavior>,
    pub native_reuse: NativeReuse,
    pub effects: Vec<Effect>,
    pub skill_chain: SkillChain,
    pub resource_budget: ResourceBudget,
    pub preservation_obligations: Vec<NonEmpty>,
    pub deletions: Vec<NonEmpty>,
    pub proof_plan: Vec<Proof>,
}

/// `runx.skill.architecture_plan.v1`: a decision bound by native code to a base digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArchitecturePlan {
    pub schema: PlanSchema,
    pub base_digest: NonEmpty,
    pub plan_digest: NonEmpty,
    pub architecture: ArchitectureDecision,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeDecision {
    Write,
    NoSkill,
    NoChange,
    NeedsCore,
}

impl ChangeDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Write => "write",
            Self::NoSkill => "no_skill",
            Self::NoChange => "no_change",
            Self::NeedsCore => "needs_core",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileWrite {
    pub path: NonEmpty,
    pub contents: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedOutput {
    pub name: NonEmpty,
    pub value_type: NonEmpty,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packet: Option<NonEmpty>,
}

/// `runx.skill.change_draft.v1`: the author agent's bytes and intent. It deliberately carries
/// no digest: a draft with `base_digest` or `plan_digest` is refused as an unknown field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeDraft {
    pub schema: DraftSchema,
    pub decision: ChangeDecision,
    pub summary: NonEmpty,
    pub non_goals: Vec<NonEmpty>,
    pub writes: Vec<FileWrite>,
    pub deletes: Vec<NonEmpty>,
    pub expected_outputs: Vec<ExpectedOutput>,
}

/// `runx.skill.change_bundle.v1`: plan and draft bound together by native code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeBundle {
    pub schema: BundleSchema,
    pub decision: ChangeDecision,
    pub base_digest: NonEmpty,
    pub plan_digest: NonEmpty,
    pub architecture: ArchitectureDecision,
    pub summary: NonEmpty,
    pub non_goals: Vec<NonEmpty>,
    pub writes: Vec<FileWrite>,
    pub deletes: Vec<NonEmpty>,
    pub expected_outputs: Vec<ExpectedOutput>,
}

/// Runx's `SkillPackageMetrics`: what a package weighs, by line class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageMetrics {
    pub files: u64,
    pub bytes: u64,
    pub production_lines: u64,
    pub test_lines: u64,
    pub generated_lines: u64,
    pub executable_files: u64,
    pub executable_lines: u64,
}

/// The change from one [`PackageMetrics`] to another, signed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageDelta {
    pub files: i64,
    pub bytes: i64,
    pub production_lines: i64,
    pub test_lines: i64,
    pub generated_lines: i64,
    pub executable_files: i64,
    pub executable_lines: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Skipped,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationCheck {
    pub name: NonEmpty,
    pub status: CheckStatus,
    pub detail: NonEmpty,
}

/// `runx.skill.validation_result.v1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidationResult {
    pub schema: ValidationSchema,
    pub target_dir: NonEmpty,
    pub base_digest: NonEmpty,
    pub plan_digest: NonEmpty,
    pub candidate_digest: NonEmpty,
    pub checks: Vec<ValidationCheck>,
    pub before: PackageMetrics,
    pub after: PackageMetrics,
    pub delta: PackageDelta,
    pub residual_risks: Vec<NonEmpty>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApplyVerdict {
    Unchanged,
    NeedsCore,
    ValidatedAndApplied,
}

/// `runx.skill.apply_result.v1`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApplyResult {
    pub schema: ApplyResultSchema,
    pub target_dir: NonEmpty,
    pub decision: ChangeDecision,
    pub verdict: ApplyVerdict,
    pub base_digest: NonEmpty,
    pub plan_digest: NonEmpty,
    pub package_digest: NonEmpty,
    pub changed_paths: Vec<NonEmpty>,
    pub deleted_paths: Vec<NonEmpty>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ValidationResult>,
    pub residual_risks: Vec<NonEmpty>,
}

/// A contract that did not parse, with the JSON path of the offending field. It displays as
/// Runx's typed-input refusal (`invalid typed input: unknown field `bogus`, expected one of …`)
/// with the contract and path MindRune found on a second line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid typed input: {message}\n  at {contract}: {path}")]
pub struct ContractError {
    /// The contract being read (`change_draft`, `architecture_decision`, …).
    pub contract: &'static str,
    /// The JSON path of the field (`writes[0].path`), or `.` for the whole value.
    pub path: String,
    pub message: String,
}

/// Reads a contract from JSON, naming the field that is wrong when it is not one.
pub fn parse_contract<T: DeserializeOwned>(
    contract: &'static str,
    value: &Value,
) -> Result<T, ContractError> {
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        ContractError {
            contract,
            path: if path.is_empty() { ".".into() } else { path },
            message: err.into_inner().to_string(),
        }
    })
}

/// Serializes a contract to JSON. The contracts hold only strings, numbers, booleans, arrays and
/// maps with string keys, so this cannot fail.
pub fn to_json<T: Serialize>(contract: &T) -> Value {
    serde_json::to_value(contract).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_draft_carrying_a_digest_is_refused_by_name() {
        let err = parse_contract::<ChangeDraft>(
            "change_draft",
            &json!({
                "schema": "runx.skill.change_draft.v1", "decision": "no_change",
                "summary": "s", "non_goals": [], "writes": [], "deletes": [],
                "expected_outputs": [], "base_digest": "sha256:00"
            }),
        )
        .unwrap_err();
        assert_eq!(err.contract, "change_draft");
        assert!(err.message.contains("unknown field `base_digest`"), "{err}");
    }

    #[test]
    fn an_empty_string_is_refused_with_its_path() {
        let err = parse_contract::<ChangeDraft>(
            "change_draft",
            &json!({
                "schema": "runx.skill.change_draft.v1", "decision": "write",
                "summary": "s", "non_goals": [], "writes": [{"path": "", "contents": ""}],
                "deletes": [], "expected_outputs": []
            }),
        )
        .unwrap_err();
        assert_eq!(err.path, "writes[0].path");
        assert_eq!(err.message, "string must be non-empty");
        // Runx's `plan-empty-objective` refusal, then where MindRune found it.
        assert_eq!(
            err.to_string(),
            "invalid typed input: string must be non-empty\n  at change_draft: writes[0].path"
        );
    }

    /// The typed-input refusals of `shared/data/runx/oracle/plan-bind-refusals.txt`, as Runx
    /// words them after its `skill 'runx.skill.plan' failed: ` wrapper.
    #[test]
    fn typed_input_refusals_read_as_runx_words_them() {
        let first_line = |err: ContractError| err.to_string().lines().next().unwrap().to_owned();
        let draft = parse_contract::<ChangeDraft>(
            "change_draft",
            &json!({
                "schema": "runx.skill.change_draft.v1", "decision": "no_change",
                "summary": "s", "non_goals": [], "writes": [], "deletes": [],
                "expected_outputs": [], "base_digest": "sha256:00"
            }),
        )
        .unwrap_err();
        assert_eq!(
            first_line(draft),
            "invalid typed input: unknown field `base_digest`, expected one of `schema`, `decision`, `summary`, `non_goals`, `writes`, `deletes`, `expected_outputs`"
        );
        let variant = parse_contract::<ArchitectureDecision>(
            "architecture_decision",
            &json!({"schema": "runx.skill.architecture_decision.v1", "disposition": "rewrite"}),
        )
        .unwrap_err();
        assert_eq!(
            first_line(variant),
            "invalid typed input: unknown variant `rewrite`, expected one of `build`, `extend_existing`, `no_skill`, `needs_core`"
        );
    }

    #[test]
    fn a_wrong_schema_id_is_refused() {
        let err = parse_contract::<ChangeDraft>(
            "change_draft",
            &json!({"schema": "runx.skill.change_draft.v2"}),
        )
        .unwrap_err();
        assert_eq!(err.path, "schema");
    }

    #[test]
    fn absent_optional_fields_are_omitted_and_null_reads_as_absent() {
        let identity: Identity = serde_json::from_value(json!({
            "current_name": null, "proposed_name": "demo", "action": "create",
            "visibility": "public", "rationale": "r"
        }))
        .unwrap();
        assert_eq!(identity.current_name, None);
        assert!(to_json(&identity).get("current_name").is_none());
    }
}
