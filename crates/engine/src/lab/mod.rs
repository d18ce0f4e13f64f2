//! The Skill Lab: digest-bound authoring of Runx skill packages (`../shared/spec/skill-lab.txt`).
//!
//! The pure pieces (canonical JSON, the snapshot digest, the package model, the contracts and
//! their admission rules, receipt digests) live in `mindrune_core::runx`; this module holds what
//! touches the disk or spawns: reading a package folder, the apply transaction, harness replay
//! and the receipt store.
//!
//! Architecture invariant: nothing here writes inside a target package except the verified
//! commit of `apply`, which either leaves every byte as it was or lands the exact candidate the
//! harness replayed.

mod agent_acts;
mod apply;
mod apply_error;
mod commit;
mod harness;
mod inspect;
mod receipt_store;
mod runners;
mod seal;
mod snapshot_walk;
mod validate;

// What the crate root's `pub use` list takes from these files: what the cli, the benches and the
// Lab's tests use, the harness's and its JavaScript worker's (`harness::javascript`) included.
pub use agent_acts::RunnerAgent;
pub use apply::{CandidateCheck, CandidateReport, apply_change, finish_interrupted_apply};
pub use apply_error::ApplyError;
pub use commit::{Operation, commit_verified};
pub use harness::javascript::{
    JsError, JsInvocation, JsLimits, WorkerCommand, run_module, serve_worker,
};
pub use harness::{
    CaseOutcome, CaseProgress, CaseSealer, CaseStatus, HarnessOptions, HarnessRun, HarnessStatus,
    NativeTools, NoNativeTools, PacketCatalog, declared_cases, run_harness,
};
pub use inspect::inspect_workspace;
pub use receipt_store::{LocalSigningKey, ReceiptStore, SIGNING_KEY_ENV};
pub use runners::{
    Agent, AnswersFile, NoAgent, RunEnd, RunReport, RunRequest, Runner, answers_template, run,
};
pub use seal::{StoreSealer, run_request, throwaway_sealer};
pub use snapshot_walk::{PackageSnapshot, snapshot_package};
pub use validate::{LabTools, PackageValidator, validate_package};
