//! The runner protocol's wire types: what runners send to `/v1/` and what the server answers.
//!
//! Architecture invariant: only this module defines wire types. The server's handlers and the
//! runner both use them, so the two cannot drift; `docs/openapi.json` documents the same shapes
//! and the API tests validate every answer against it.
//!
//! Every request type rejects unknown fields: a runner that sends something the server does not
//! understand gets a 400 naming the field, never a silent drop.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The protocol version, the first segment of every runner path.
pub const API_VERSION: &str = "v1";

/// The most events one batch may carry.
pub const MAX_BATCH_EVENTS: usize = 500;
/// The largest request body of the event and state endpoints.
pub const MAX_EVENTS_BODY: usize = 8 * 1024 * 1024;
/// The largest turn body: every script of the avatar plus its lab log.
pub const MAX_TURN_BODY: usize = 64 * 1024 * 1024;
/// The largest body of any other request (dashboard forms, mirror requests).
pub const MAX_SMALL_BODY: usize = 1024 * 1024;

/// A file the runner read beside the avatar's sandbox, or why it could not read it. A script
/// path that a snapshot does not list does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WireFile {
    /// The file's text (already scrubbed of the bot's own secrets by the runner).
    Text(String),
    /// The runner found the path but could not read it.
    Unreadable(FileProblem),
}

/// Why a runner could not read a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileProblem {
    Symlink,
    NotAFile,
    TooLarge,
    NotText,
}

/// `POST /v1/events`: tool calls of the runner's avatar, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventBatch {
    pub events: Vec<WireEvent>,
}

/// One tool call: the event contract's object (its `id` is required here, so a retried batch
/// never counts twice; its `agent` may be left out, and if given must be the token's avatar),
/// with the scripts it ran as the runner read them when the call finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WireEvent {
    pub event: serde_json::Value,
    /// Workspace-relative path (`bots/<bot>/<name>.ts`) → the file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, WireFile>,
}

/// What happened to one event of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventStatus {
    /// Stored now.
    Recorded,
    /// Stored before (a retried batch): nothing counted twice.
    Duplicate,
    /// Nothing to store (a detached run, a call that runs no script); the warnings say why.
    Ignored,
    /// Refused (a script outside the workspace, another bot's script); `error` says why. A
    /// runner does not send it again.
    Rejected,
}

/// One script run an event recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireRun {
    /// `<agent>/<name>`.
    pub skill: String,
    pub version: i64,
    pub ok: bool,
    pub score: f64,
    pub uses: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventResult {
    pub id: String,
    pub status: EventStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<WireRun>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The answer to a batch: one result per event, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventsAnswer {
    pub results: Vec<EventResult>,
}

/// Which boundary a turn request marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireBoundary {
    /// The agent's turn ended.
    TurnEnd,
    /// The agent is starting: every header is re-checked and the mirror always comes back.
    Start,
}

/// `POST /v1/turns`: a turn boundary with the avatar's file snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnRequest {
    pub boundary: WireBoundary,
    /// Every file directly in `bots/<bot>/` the runner reads: its scripts and `lab_log.md`
    /// (never `bot.env`), by workspace-relative path.
    pub files: BTreeMap<String, WireFile>,
    /// The keys of the mirror files the runner holds; with it, the answer carries the mirror
    /// when it is due (at most once a minute at turn ends, always at a start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<MirrorRequest>,
}

/// The answer to a turn boundary: what changed (the engine's turn report) and, when due, the
/// mirror.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnAnswer {
    pub report: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<MirrorAnswer>,
}

/// `POST /v1/mirror`: the keys of the files the runner's `family-skills/` holds (from its
/// manifest), so unchanged files come back without their content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorRequest {
    #[serde(default)]
    pub have: BTreeMap<String, String>,
}

/// One file of the avatar's `family-skills/`: `INDEX.md`, `LESSONS.md` or
/// `<sibling>/<name>.ts`. `content` is left out when the runner already has this key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorFile {
    pub path: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// Everything the avatar's `family-skills/` should hold, and nothing else.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorAnswer {
    pub files: Vec<MirrorFile>,
}

/// `POST /v1/wrapup`: a wrap-up at a goal's or step's end, with the same file snapshot as a
/// turn boundary (a wrap-up marks one). The answer is the engine's wrap-up as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WrapUpRequest {
    pub files: BTreeMap<String, WireFile>,
}

/// `GET /v1/instructions`: the agent's instruction text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionsAnswer {
    pub text: String,
}

/// `GET /v1/whoami`: the avatar a runner's token stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WhoAmI {
    pub agent: String,
    pub api_version: String,
}

/// `POST /v1/state`: the avatar's latest game state, as the dashboard shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AvatarStats {
    /// RFC 3339 time the state was read; the server's clock when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// Skill name → level.
    #[serde(default)]
    pub levels: BTreeMap<String, u32>,
    /// Skill name → experience points. Left out by runners older than it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub xp: BTreeMap<String, u64>,
    /// Quests done.
    #[serde(default)]
    pub quests: Vec<String>,
    /// Coins carried and banked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wealth: Option<i64>,
    /// Equipped items.
    #[serde(default)]
    pub gear: Vec<String>,
    /// Item name → count, as last seen in the bank.
    #[serde(default)]
    pub bank: BTreeMap<String, i64>,
    /// The recorder read this state from the World State a run printed (no state file): its
    /// bank and quests are not printed, so they are as the last report had them. A runner's
    /// report is never printed; the server sets it to `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub printed: bool,
}

/// Every error answer: a status code and this body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// A stable, machine-readable code: `bad_request`, `unauthorized`, `forbidden`,
    /// `not_found`, `gone`, `too_large`, `unavailable`, `internal`.
    pub code: String,
    /// What happened and what to do, for a person.
    pub message: String,
    /// The request field at fault (`events[3].event.kind`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// The hint every old loopback skill endpoint answers with (410 Gone).
pub const SKILLS_ARE_FILES: &str = "skills are files now: add the @skill header";

/// The header a runner sends with every request: how many items its spool still holds, for
/// the operator's console.
pub const SPOOL_HEADER: &str = "x-mindrune-spool";
/// How many times the avatar's Claude Code hooks could not do their job in the last 24 hours
/// (the hook notes each in its relay folder, the runner's spool): sent by the runner with every
/// request, so the console and `/metrics` show what the hooks said on a machine nobody watches.
pub const HOOK_FAILURES_HEADER: &str = "x-mindrune-hook-failures";
