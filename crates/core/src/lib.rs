//! MindRune's pure domain.
//!
//! Architecture invariant: this crate does no I/O. It knows nothing about SQL, HTTP, MCP or the
//! filesystem; every function here takes values and returns values (plus diagnostics), so it
//! can be tested and fuzzed in isolation.

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod avatars;
mod digest;
mod header;
mod near_repeat;
mod playbook;
#[expect(
    clippy::too_many_lines,
    reason = "runx::package::inputs::check_source (171 lines), in a module being reworked in its own branch: split it there and drop this"
)]
mod runx;
mod score;
#[cfg_attr(
    test,
    expect(
        clippy::too_many_lines,
        reason = "secrets::tests::positive_cases, a table of secrets and their kinds (in a module being reworked in its own branch)"
    )
)]
mod secrets;
mod shell_line;
mod shell_writes;

// The crate's public surface: every item another crate, a test, a bench, a fuzz target or a doc
// example names, by area; its modules are private.

// Shared mechanisms: digests, script headers, near repeats, the score, secrets, shell lines.
pub use digest::{
    code_without_header, is_secret_digest, script_digest, secret_digest, sha256, sha256_text,
    snippet_digest,
};
pub use header::{Header, is_valid_name, parse as parse_header};
pub use near_repeat::{
    Analysis as NearRepeatAnalysis, MAX_QUOTE_LINES, RecentSnippet, Suggestion,
    WINDOW_MS as NEAR_REPEAT_WINDOW_MS, analyze as analyze_near_repeat, shape as near_repeat_shape,
    suggestions,
};
pub use score::{
    Measure, PEER_MIN_USES, ScoreBreakdown, ScoreInput, UseSample, WINDOW as SCORE_WINDOW,
    aged_total, inherited_from_parent, peer_median_rate, score, score_measured,
};
pub use secrets::{
    MIN_KNOWN_SECRET_CHARS, REDACTED, Scrubber, secrets_in_bot_env_bytes, trigger_literals,
};
pub use shell_line::{
    ShellContext, ShellRuns, classify_shell_line, look_target, shell_line_writes,
};
pub use shell_writes::{Reach, Target};

// The avatars face: events, the mirror's texts, lessons, sharing, topics and the vocabulary.
pub use avatars::{
    Call, Entry, Event, EventError, EventKind, INDEX_CAP, LESSONS_CAP, LessonEntry, LessonView,
    MAX_LESSON_CHARS, MAX_SCRIPTS_AT_START, OwnSharedSkill, RawEvent, RunOutput, SharingBar,
    SiblingSkill, SkillFileHeader, Source, TOPIC_KINDS, VersionStanding, Vocabulary,
    check_control_characters, check_event, command_cuts_output, exact_tags, instructions_text,
    leading_tags_end, lesson_view, measure_against, normalize_tag, parse_line, parse_listing,
    parse_run_output, render_index, render_lessons, render_line, render_skill_file, share_lines,
    version_for_siblings,
};

// The playbook face: skill files, permissions, the observer, the fisher and transcripts.
pub use playbook::{
    Act, CheckContext, Comparison, MAX_SKILL_BYTES, MAX_STEPS, MIN_READS, MIN_STEPS, MIN_TURNS,
    Permissions, Policy, SkillFile, Status, Step, Verdict, blocking_checks, compare_revisions,
    describe_repeat, owed_fields, parse_skill_file, parse_transcript, redone_in_last_turn,
    render_skill, tool_sequence,
};

// Runx and the Skill Lab: contracts, packages, admission, inspection, receipts, snapshots.
pub use runx::{
    AdmittedChange, ApplyResult, ApplyResultSchema, ApplyVerdict, ArchitectureDecision,
    ArchitecturePlan, Authority, ChangeBundle, ChangeDecision, ChangeDraft, CheckStatus,
    Commitment, CommitmentScope, CriterionBinding, CriterionStatus, DecisionSchema, Disposition,
    DraftSchema, Enforcement, Idempotency, InputDef, IssuerType,
    LOCAL_DEVELOPMENT_SIGNATURE_PREFIX, Mode, NestedPackage, NonEmpty, PROFILE_FILE, Package,
    PackageMetrics, PackageTool, PacketSchema, PacketSchemas, ProofKind, RUNX_VALIDATION_PREFIX,
    RUNX_VERIFY_KID_ENV, RUNX_VERIFY_PUBLIC_KEY_ENV, ReceiptDisposition, ReceiptDraft,
    ReceiptError, Reference, ReferenceType, Refusal, SNAPSHOT_IGNORED, SNAPSHOT_MAX_BYTES,
    SNAPSHOT_MAX_FILES, Seal, SignatureCheck, SigningKey, SnapshotFile, Subject, TrustedKey,
    ValidationCheck, ValidationResult, ValidationSchema, VerifiedReceipt, VerifyOptions,
    VerifyingKey, Visibility, absent_digest, admit_change, assert_allowed_delete_path,
    assert_allowed_write_path, bind_change, bundle_digest, canonicalize_text,
    check_receipt_integrity, failure_message, inspect_package, inspect_packets, invalid_inspection,
    load_package, metrics_json, normalize_package_file, normalize_target_dir, package_delta,
    package_metrics, parse_contract, plan_change, public_key_base64, receipt_file_name,
    receipt_id_from_file_name, receipt_key_id, reject_secret_material, resource_usage,
    seal_receipt, snapshot_digest, sort_in_walk_order, stable_digest, to_json, unchanged_result,
    unsupported_runner, validate_change_contract, validate_digest, validate_resource_budget,
    validate_resources, verify_receipt, yaml_document_json,
};
