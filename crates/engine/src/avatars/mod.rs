//! The avatars' face: an rs-sdk avatar's tool calls recorded as uses of its scripts, its turn
//! ends, its wrap-ups, its topic tags, and the `family-skills/` mirror written from its
//! family's answer.
//!
//! The mechanisms more than one face uses (the hook decoder and the host guard, contained reads
//! of a workspace, atomic files, the agent runner, child processes) stay at the crate's top.

mod alerts;
mod attention;
mod family;
mod ingest;
mod mirror_writer;
mod snippets;
mod tags;
mod turn;
mod wrapup;

// What the crate root's `pub use` list takes from these files.
pub use alerts::{
    AlertFormat, DEFAULT_FAILING_STREAK, DEFAULT_QUIET_FACTOR, QuietHours, Thresholds, alert_for,
    body as alert_body, first_attempt_at, retry_at,
};
pub use attention::{Failing, Item as AttentionItem, RunnerSeen, needs_attention};
pub use family::{
    FamilyError, MIRROR_DIR, MirrorOutcome, answer as family_answer, default_dir, empty_mirror,
    mirror_plan, mirror_relative, refresh_mirror,
};
pub use ingest::{
    GroupedEvent, IngestError, PreparedOutput, Recorded, Recorder, UnreadableBotEnv,
    bot_env_secrets, now_millis,
};
pub use mirror_writer::{
    MirrorError, Wanted, empty as write_empty_mirror, held_keys, refresh as write_mirror,
};
pub use snippets::advice as snippet_advice;
pub use tags::{
    TagsError, WIKI_FOLDERS, WikiRead, Written, build_from_wiki, vocabulary as load_vocabulary,
    write_vocabulary,
};
pub use turn::{
    Boundary, MAX_LAB_LOG_BYTES, MIRROR_REFRESH_INTERVAL_MS, MirrorPolicy, Offer, TurnError,
    TurnReport, turn_boundary, turn_boundary_with,
};
pub use wrapup::{UnmeasuredRuns, WrapUp, outcome_unknown_summary, wrap_up, wrap_up_with};
