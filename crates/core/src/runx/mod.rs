//! Runx skill packages: the pure pieces the Skill Lab needs to agree with Runx byte for byte.
//!
//! Runx identifies a package version and a change plan by digests. Those digests only mean
//! something if we compute them exactly as Runx does, so this module holds the canonical JSON
//! (`runx.stable-json.v1`) and the package snapshot digest as pure functions; reading the
//! package folder from disk belongs to the crates that do I/O.

mod admission;
mod closure;
mod contracts;
mod inspect;
mod package;
mod receipt;
mod resources;
mod snapshot;
mod stable_json;
mod yaml;

// What the crate root's `pub use` list takes from these files: what the engine, the fuzz targets
// and the tests use of the contracts, the package model, the resource budget, the canonical JSON,
// admission, inspection, receipts and snapshots. A name that reads only beside its file (`plan`,
// `bind`, `verify`, `MAX_BYTES`) is renamed here (`plan_change`, `bind_change`, `verify_receipt`,
// `SNAPSHOT_MAX_BYTES`).
pub use admission::{
    AdmittedChange, Mode, Refusal, admit_change, assert_allowed_delete_path,
    assert_allowed_write_path, bind as bind_change, bundle_digest, metrics_json,
    normalize_package_file, normalize_target_dir, package_delta, package_metrics,
    plan as plan_change, reject_secret_material, unchanged_result, validate_change_contract,
    validate_digest, validate_resource_budget,
};
pub use closure::{NestedPackage, unsupported_runner};
pub use contracts::{
    ApplyResult, ApplyResultSchema, ApplyVerdict, ArchitectureDecision, ArchitecturePlan,
    ChangeBundle, ChangeDecision, ChangeDraft, CheckStatus, DecisionSchema, Disposition,
    DraftSchema, NonEmpty, PackageMetrics, ProofKind, ValidationCheck, ValidationResult,
    ValidationSchema, Visibility, parse_contract, to_json,
};
pub use inspect::{
    PacketSchema, PacketSchemas, failure_message, inspect as inspect_packets,
    invalid as invalid_inspection,
};
pub use package::{
    InputDef, PROFILE_FILE, Package, PackageTool, RUNX_VALIDATION_PREFIX, inspect_package,
    load_package,
};
pub use receipt::{
    Authority, Commitment, CommitmentScope, CriterionBinding, CriterionStatus,
    Disposition as ReceiptDisposition, Enforcement, Idempotency, IssuerType,
    LOCAL_DEVELOPMENT_SIGNATURE_PREFIX, RUNX_VERIFY_KID_ENV, RUNX_VERIFY_PUBLIC_KEY_ENV,
    ReceiptDraft, ReceiptError, Reference, ReferenceType, Seal, SignatureCheck, SigningKey,
    Subject, TrustedKey, VerifiedReceipt, VerifyOptions, VerifyingKey,
    check_integrity as check_receipt_integrity, key_id as receipt_key_id, public_key_base64,
    receipt_file_name, receipt_id_from_file_name, seal as seal_receipt, verify as verify_receipt,
};
pub use resources::{resource_usage, validate_resources};
pub use snapshot::{
    IGNORED as SNAPSHOT_IGNORED, MAX_BYTES as SNAPSHOT_MAX_BYTES, MAX_FILES as SNAPSHOT_MAX_FILES,
    SnapshotFile, absent_digest, snapshot_digest, sort_in_walk_order,
};
pub use stable_json::{canonicalize_text, stable_digest};

/// A package's YAML document as JSON, read with the same YAML subset its load-time checks
/// used, so a replay sees the document those checks passed.
pub fn yaml_document_json(file: &str, text: &str) -> Result<serde_json::Value, String> {
    yaml::parse(file, text)
        .map(|node| node.to_json())
        .map_err(|err| err.to_string())
}
