//! Runx skill packages: the pure pieces the Skill Lab needs to agree with Runx byte for byte.
//!
//! Runx identifies a package version and a change plan by digests. Those digests only mean
//! something if we compute them exactly as Runx does, so this module holds the canonical JSON
//! (`runx.stable-json.v1`) and the package snapshot digest as pure functions; reading the
//! package folder from disk belongs to the crates that do I/O.

pub mod admission;
mod closure;
mod contracts;
pub mod inspect;
mod package;
pub mod receipt;
mod resources;
pub mod snapshot;
mod stable_json;
mod yaml;

// What the engine, the fuzz targets and the tests use of the contracts, the package model, the
// resource budget and the canonical JSON; `admission`, `inspect`, `receipt` and `snapshot` stay
// namespaces (their names — `plan`, `bind`, `verify`, `MAX_BYTES` — read as theirs).
pub use closure::{LoadNested, NestedPackage, unsupported_runner};
pub use contracts::{
    ApplyResult, ApplyResultSchema, ApplyVerdict, ArchitectureDecision, ArchitecturePlan,
    ChangeBundle, ChangeDecision, ChangeDraft, CheckStatus, DecisionSchema, Disposition,
    DraftSchema, NonEmpty, PackageMetrics, ProofKind, ValidationCheck, ValidationResult,
    ValidationSchema, Visibility, parse_contract, to_json,
};
pub use package::{
    InputDef, PROFILE_FILE, Package, RUNX_VALIDATION_PREFIX, inspect_package, load_package,
};
pub use resources::{resource_usage, validate_resources};
pub use stable_json::{canonicalize_text, stable_digest};
