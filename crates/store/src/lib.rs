//! The library's storage: one [`Store`] trait and its backends.
//!
//! Architecture invariant: owner isolation lives here, not in callers. Every method but the
//! identity look-ups ([`Store::agent_by_name`], [`Store::owner_by_name`]) and the topic-tag
//! vocabulary's (global reference data: the game's page names, no family's data) takes the
//! [`OwnerId`] it acts for, and every query it runs filters by that owner, so an id that
//! belongs to another family is simply not found.
//!
//! Architecture invariant: recording a use and rescoring its version happen in one
//! transaction, so concurrent writers (threads or processes) never lose a use or an update.

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

use std::collections::BTreeMap;

use mindrune_core::ScoreBreakdown;
use serde::{Deserialize, Serialize};

mod alerts;
mod common;
mod copy;
mod directory;
mod family_sharing;
mod group_work;
mod postgres;
mod recording;
mod rules;
mod run_views;
mod skill_records;
mod sqlite;
mod sqlite_and_postgres_sql;
mod version_writes;

pub use alerts::{
    AlertDelivery, AlertEvent, AlertLedger, AlertSync, AlertTarget, DeliveryAttempt, RaisedAlert,
};
pub use copy::{CopyReport, TableCopy, copy_library};
pub use directory::Directory;
pub use family_sharing::FamilySharing;
pub use postgres::{PgStore, redact_url, split_schema};
pub use recording::Recording;
pub use rules::origin_of_new_file;
pub use run_views::RunViews;
pub use skill_records::SkillRecords;
pub use sqlite::SqliteStore;

macro_rules! id_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);
    };
}

id_type!(
    /// An owner account: a family is all agents of one owner.
    OwnerId
);
id_type!(
    /// An agent (an avatar or an assistant).
    AgentId
);
id_type!(
    /// A skill: one agent's file.
    SkillId
);
id_type!(
    /// One version of a skill: one content digest.
    VersionId
);
id_type!(
    /// One inline snippet's history.
    SnippetId
);

/// Unix time in milliseconds, the one time unit of the store.
pub type Millis = i64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Owner {
    pub id: OwnerId,
    pub name: String,
    /// The digest of the owner's key (`mindrune_core::secret_digest`), never the key:
    /// the key is shown once when it is made, and the library keeps nothing an agent reading
    /// the file could log in with.
    pub key_digest: String,
    pub eager_sharing: bool,
    pub created_at: Millis,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub id: AgentId,
    pub owner: OwnerId,
    pub name: String,
    /// The agent's workspace on this machine; its scripts are `bots/<name>/*.ts` below it.
    pub workspace: String,
    pub created_at: Millis,
    /// When its `family-skills/` was last written (refreshes are at most once a minute).
    pub mirror_refreshed_at: Option<Millis>,
    /// When its last turn ended.
    pub last_turn_at: Option<Millis>,
    /// When it last had a wrap-up.
    pub last_wrapup_at: Option<Millis>,
    /// Where its `family-skills/` is written, relative to the workspace (`None`:
    /// `family-skills` at the workspace's root).
    pub mirror: Option<String>,
}

/// The `@skill` header a skill's file carried when it was last read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderState {
    /// No header (or one too broken to name the skill): private.
    #[default]
    None,
    /// An `@skill` header: shared once a version has proven itself.
    Skill,
    /// An `@skill` header with `@private` in it: private.
    Private,
}

impl HeaderState {
    pub fn as_str(self) -> &'static str {
        match self {
            HeaderState::None => "none",
            HeaderState::Skill => "skill",
            HeaderState::Private => "private",
        }
    }

    pub fn parse(text: &str) -> HeaderState {
        match text {
            "skill" => HeaderState::Skill,
            "private" => HeaderState::Private,
            _ => HeaderState::None,
        }
    }
}

/// What a skill's header says: its description, as last read from the file (scrubbed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SkillHeader {
    pub state: HeaderState,
    pub goal: Option<String>,
    pub preconditions: Option<String>,
    pub params: Option<String>,
    pub result: Option<String>,
    /// `From: <sibling>/<name>` as written.
    pub from: Option<String>,
    /// Topic tags found in the header's words.
    pub topics: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    pub id: SkillId,
    pub owner: OwnerId,
    /// `None` once the agent was deleted: the skill stays with the family.
    pub agent: Option<AgentId>,
    pub agent_name: String,
    pub name: String,
    /// Workspace-relative path, e.g. `bots/buzz/chop-oaks.ts`.
    pub path: String,
    pub kind: String,
    /// The version the file had when it was last seen.
    pub current_version: Option<VersionId>,
    pub created_at: Millis,
    /// Set while the file is gone (deleted or renamed); a file that comes back clears it.
    pub deleted_at: Option<Millis>,
    /// The header's `Tags:` as written.
    pub tags: Vec<String>,
    pub header: SkillHeader,
    /// The digest of the whole file (header included) when it was last read.
    pub file_digest: Option<String>,
}

/// How a version came from its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lineage {
    /// The same file, changed.
    Edit,
    /// Another file of the same agent with the same code (a copy or a rename).
    Copy,
    /// A copy of a sibling's skill (its `From:` line), changed.
    Sibling,
}

impl Lineage {
    pub fn as_str(self) -> &'static str {
        match self {
            Lineage::Edit => "edit",
            Lineage::Copy => "copy",
            Lineage::Sibling => "sibling",
        }
    }

    pub fn parse(text: &str) -> Option<Lineage> {
        match text {
            "edit" => Some(Lineage::Edit),
            "copy" => Some(Lineage::Copy),
            "sibling" => Some(Lineage::Sibling),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    pub id: VersionId,
    pub owner: OwnerId,
    pub skill: SkillId,
    /// v1, v2, … within the skill.
    pub number: i64,
    pub digest: String,
    /// The code without its header, scrubbed of secrets.
    pub code: String,
    pub parent: Option<VersionId>,
    pub lineage: Option<Lineage>,
    /// 0.9 × the parent's score when this version was created.
    pub inherited: Option<f64>,
    pub uses: i64,
    pub ok: i64,
    pub score: f64,
    pub breakdown: Option<ScoreBreakdown>,
    pub measure_key: String,
    pub rate_per_minute: f64,
    pub created_at: Millis,
    pub last_used_at: Option<Millis>,
    /// When this version cleared the sharing bar while it was the headed file's version.
    pub shared_at: Option<Millis>,
}

/// What the engine found in a script file, to be matched to a skill and version.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptSnapshot {
    pub agent: AgentId,
    /// Workspace-relative path, e.g. `bots/buzz/chop-oaks.ts`.
    pub path: String,
    /// The file stem: the skill's name.
    pub name: String,
    pub digest: String,
    /// Code without header, already scrubbed.
    pub code: String,
    /// `Tags:` from the header, as written.
    pub tags: Vec<String>,
    /// The header as read from the file (its state decides sharing).
    pub header: SkillHeader,
    /// The digest of the whole file, header included.
    pub file_digest: Option<String>,
    /// Where a new skill's first version comes from, when it is a copy, a rename or a
    /// sibling's skill adapted.
    pub origin: Option<(VersionId, Lineage)>,
}

/// The outcome of matching a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Matched {
    pub skill: Skill,
    pub version: Version,
    pub new_skill: bool,
    pub new_version: bool,
    /// The skill became shared, shared a newer version, or stopped being shared.
    pub sharing: Option<SharingChange>,
}

/// A change in what the family sees of a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharingChange {
    pub skill: SkillId,
    /// `<agent>/<name>`.
    pub label: String,
    pub kind: SharingKind,
    /// The version siblings now get a chance at (for `shared`).
    pub version: Option<i64>,
    /// Why, in words: "cleared the bar (5 runs, score 624)", "the header was removed", …
    pub reason: String,
    pub at: Millis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SharingKind {
    Shared,
    Unshared,
}

impl SharingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SharingKind::Shared => "shared",
            SharingKind::Unshared => "unshared",
        }
    }

    /// Reads the kind as the store writes it; anything but `shared` is an un-sharing.
    pub fn parse(text: &str) -> SharingKind {
        match text {
            "shared" => SharingKind::Shared,
            _ => SharingKind::Unshared,
        }
    }
}

/// A shared skill with every version's standing (no code), newest version first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedSkill {
    pub skill: Skill,
    pub versions: Vec<VersionSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionSummary {
    pub id: VersionId,
    pub number: i64,
    pub digest: String,
    pub uses: i64,
    pub ok: i64,
    /// The score as of its newest use (what sharing decided on); [`VersionSummary::score_at`]
    /// is the score as of a later time.
    pub score: f64,
    pub shared_at: Option<Millis>,
    pub breakdown: Option<ScoreBreakdown>,
    pub inherited: Option<f64>,
    pub last_used_at: Option<Millis>,
}

impl VersionSummary {
    /// The version as every view shows it at `now`: its `score` aged to `now`
    /// ([`VersionSummary::score_at`]). Every face reads a version through this (or
    /// [`Version::as_of`]) before it shows it, so two views at one clock show one number.
    pub fn as_of(mut self, now: Millis) -> VersionSummary {
        self.score = self.score_at(now);
        self
    }

    /// Its score as of `now`: freshness aged with the clock since its newest use.
    pub fn score_at(&self, now: Millis) -> f64 {
        score_as_of(
            self.score,
            self.breakdown.as_ref(),
            self.inherited,
            self.uses,
            self.last_used_at,
            now,
        )
    }
}

impl Version {
    /// The version as every view shows it at `now`: its `score` aged to `now`.
    pub fn as_of(mut self, now: Millis) -> Version {
        self.score = self.score_at(now);
        self
    }

    /// Its score as of `now`: freshness aged with the clock since its newest use, so a skill
    /// left unused drifts back to the middle. The stored `score` is the one as of that use.
    pub fn score_at(&self, now: Millis) -> f64 {
        score_as_of(
            self.score,
            self.breakdown.as_ref(),
            self.inherited,
            self.uses,
            self.last_used_at,
            now,
        )
    }
}

const MILLIS_PER_DAY: f64 = 86_400_000.0;

fn score_as_of(
    score: f64,
    breakdown: Option<&ScoreBreakdown>,
    inherited: Option<f64>,
    uses: i64,
    last_used_at: Option<Millis>,
    now: Millis,
) -> f64 {
    match (breakdown, last_used_at) {
        (Some(breakdown), Some(at)) => mindrune_core::aged_total(
            breakdown,
            uses,
            inherited,
            (now as f64 - at as f64) / MILLIS_PER_DAY,
        )
        .unwrap_or(score),
        _ => score,
    }
}

/// A version as the choice of the siblings' version reads it.
impl From<&VersionSummary> for mindrune_core::VersionStanding {
    fn from(v: &VersionSummary) -> Self {
        mindrune_core::VersionStanding {
            number: v.number,
            runs: v.uses,
            score: v.score,
            shared: v.shared_at.is_some(),
        }
    }
}

impl From<&Version> for mindrune_core::VersionStanding {
    fn from(v: &Version) -> Self {
        mindrune_core::VersionStanding {
            number: v.number,
            runs: v.uses,
            score: v.score,
            shared: v.shared_at.is_some(),
        }
    }
}

/// How the family's other avatars use one skill: its runs and the runs of their copies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SiblingUse {
    /// Siblings that ran any version of the skill or a copy of it.
    pub used_by: usize,
    pub runs: i64,
    /// Their failed runs since the given time.
    pub failures_since: i64,
    /// Siblings' skills built on it (`<agent>/<name>`, latest version number).
    pub copies: Vec<(String, i64)>,
}

/// A `Share:` line of an agent's lab log, as the engine read it (scrubbed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewLesson {
    pub line: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lesson {
    pub agent: AgentId,
    pub agent_name: String,
    pub text: String,
    pub line: usize,
    pub first_seen_at: Millis,
}

/// What replacing an agent's lessons changed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LessonsChange {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub kept: usize,
}

/// What deleting an agent did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeletedAgent {
    /// Its private scripts, removed with their history.
    pub scripts_removed: usize,
    /// Its shared skills, kept for the family and no longer linked to it.
    pub skills_kept: usize,
}

/// The measured results of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub at: Millis,
    pub ok: bool,
    pub duration_ms: u64,
    pub xp: BTreeMap<String, f64>,
    pub items: BTreeMap<String, f64>,
    pub goal_progress: f64,
    pub deaths: u32,
    pub stuck: bool,
    pub items_lost: u32,
    /// Why the run failed, scrubbed: the error line, and the game message that explains it when
    /// the run showed one. `None` for a run that did not fail (or whose cause is unknown).
    #[serde(default)]
    pub failure: Option<String>,
    /// Why the run's gains (`xp`, `items`, `items_lost`) could not be measured, when they could
    /// not (`output cut by tail`, `no state printed before it`): they are then unknown, not zero.
    #[serde(default)]
    pub unmeasured: Option<String>,
}

/// A failed run of a skill, with its cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedRun {
    /// The version's number (`v3`).
    pub version: i64,
    pub at: Millis,
    /// `None` when the run was recorded without a cause (before causes were kept, or the host
    /// only said it failed).
    pub failure: Option<String>,
}

/// A use to record against a version.
#[derive(Debug, Clone, PartialEq)]
pub struct NewUse {
    pub version: VersionId,
    pub agent: AgentId,
    pub outcome: Outcome,
    /// `shell` or `execute_code`.
    pub source: String,
    /// The command line or script path, scrubbed.
    pub call: Option<String>,
    /// The output's tail, scrubbed.
    pub output: Option<String>,
    /// The host's event id: a second use with the same id is a retry, not a new use.
    pub event_id: Option<String>,
    /// When the library recorded it (the run itself happened at `outcome.at`).
    pub recorded_at: Millis,
}

/// A version's counters and score right after a use was recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VersionStats {
    pub id: VersionId,
    pub skill: SkillId,
    pub number: i64,
    pub uses: i64,
    pub ok: i64,
    pub score: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedUse {
    /// `false` when the event id was seen before and nothing was added.
    pub added: bool,
    pub version: VersionStats,
    /// The use made a headed script's version clear the bar: it is shared now.
    pub shared: Option<SharingChange>,
}

/// An inline snippet's use.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSnippetUse {
    pub agent: AgentId,
    pub digest: String,
    pub code: String,
    pub outcome: Outcome,
    pub output: Option<String>,
    pub event_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snippet {
    pub id: SnippetId,
    pub agent: Option<AgentId>,
    pub digest: String,
    pub code: String,
    pub uses: i64,
    pub ok: i64,
    pub first_at: Millis,
    pub last_used_at: Millis,
}

/// Why a call MindRune saw was not recorded as a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnrecordedReason {
    /// Sent to the background (`&`, Claude Code's `run_in_background`, or past its Bash
    /// timeout): how it ends is never seen, so nothing is recorded rather than a guess.
    Background,
    /// A `bun …ts` line whose file is no script of a registered bot (a wrong path, a typo).
    NoScript,
    /// A run whose output was cut (`| tail`) before how it ended, while the runner exits 0 even
    /// on a throw: neither ok nor failed is known, so it is kept out of the score. It also
    /// breaks the avatar's chain of states: the next run is not measured across it.
    OutcomeUnknown,
    /// A look (`bun sdk/cli.ts NAME`, rs-sdk's "look first"): no script ran, so it is a use of
    /// no skill, but it printed the avatar's whole state, kept with it as the state the
    /// avatar's next run is measured against. Never a thing left uncounted: the turn report and
    /// the wrap-up do not list it.
    Look,
}

impl UnrecordedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnrecordedReason::Background => "background",
            UnrecordedReason::NoScript => "no-script",
            UnrecordedReason::OutcomeUnknown => "outcome-unknown",
            UnrecordedReason::Look => "look",
        }
    }

    pub fn parse(text: &str) -> Option<UnrecordedReason> {
        match text {
            "background" => Some(UnrecordedReason::Background),
            "no-script" => Some(UnrecordedReason::NoScript),
            "outcome-unknown" => Some(UnrecordedReason::OutcomeUnknown),
            "look" => Some(UnrecordedReason::Look),
            _ => None,
        }
    }
}

/// Whose runs [`Store::unmeasured_runs`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnmeasuredScope {
    /// An avatar's runs at or after a time.
    AgentSince(AgentId, Millis),
    /// Every run of a skill, by any avatar.
    Skill(SkillId),
}

/// A call that could not be recorded as a run ([`Store::note_unrecorded`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnrecordedCall {
    pub agent: AgentId,
    /// The event's id: the same call delivered twice is kept once.
    pub event_id: String,
    pub at: Millis,
    pub reason: UnrecordedReason,
    /// What was not counted, scrubbed: the command, or the file it named.
    pub detail: String,
    /// A look's output, scrubbed and cut like a run's: the state it printed. `None` for every
    /// other reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// A snippet's runs in a window of time ([`Store::snippet_runs_since`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnippetRuns {
    pub snippet: SnippetId,
    pub digest: String,
    pub code: String,
    /// Successful runs in the window.
    pub ok: i64,
    /// All runs in the window.
    pub runs: i64,
    /// The window's last run.
    pub last_run_at: Millis,
}

/// A snippet's window as the near-repeat suggestions take it.
impl From<SnippetRuns> for mindrune_core::RecentSnippet {
    fn from(runs: SnippetRuns) -> Self {
        mindrune_core::RecentSnippet {
            digest: runs.digest,
            code: runs.code,
            ok_runs: runs.ok,
            last_run_at: runs.last_run_at,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordedSnippetUse {
    pub added: bool,
    pub snippet: Snippet,
}

/// One entry per skill, as every view shows it: the skill at its current version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    pub skill: Skill,
    pub version: Version,
    pub version_count: i64,
    /// Runs of all versions together.
    pub total_runs: i64,
    /// The best-scoring other version, when it scored higher than the shown one, as of a clock:
    /// set by `mindrune_engine::skills_as_of` (the one place that rule lives, since
    /// scores age), `None` as the store reads the entry.
    pub best: Option<(i64, f64)>,
    /// Shared with the family (👪).
    pub family: bool,
}

/// An owner's dashboard login, found by its session secret's digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub owner: OwnerId,
    /// Sent with every dashboard form; a form without it changes nothing.
    pub csrf_token: String,
    pub expires_at: Millis,
}

/// The latest game state a runner reported for its avatar, as the JSON it sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AvatarState {
    pub agent: AgentId,
    pub state: String,
    pub reported_at: Millis,
}

/// How long an avatar's wealth history reaches back from its newest point.
pub const WEALTH_HISTORY_MILLIS: Millis = 90 * 24 * 3_600_000;

/// One hour of an avatar's wealth history: the coins of the hour's newest report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WealthPoint {
    /// The hour's start, in milliseconds since the epoch.
    pub hour: Millis,
    pub coins: i64,
    /// When the report that set it was read.
    pub reported_at: Millis,
    /// The avatar's XP over all its skills and its total level, from the same report (`None`
    /// when the report had none, or was kept before the library kept them).
    pub total_xp: Option<i64>,
    pub total_level: Option<i64>,
}

/// Where an avatar stands by one report, kept as its hour's point of the history: its coins,
/// and its total XP and total level when the report had them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Standing {
    pub coins: i64,
    pub total_xp: Option<i64>,
    pub total_level: Option<i64>,
}

impl Standing {
    /// A standing of coins only.
    pub fn coins(coins: i64) -> Standing {
        Standing {
            coins,
            ..Standing::default()
        }
    }

    /// A report's standing: its coins, the sum of its skills' XP and the sum of its levels
    /// (the "Total level" every page shows); a total the report has nothing for is `None`.
    pub fn of_report(
        coins: i64,
        levels: &std::collections::BTreeMap<String, u32>,
        xp: &std::collections::BTreeMap<String, u64>,
    ) -> Standing {
        let total_level =
            (!levels.is_empty()).then(|| levels.values().map(|l| i64::from(*l)).sum());
        let total_xp = (!xp.is_empty()).then(|| {
            xp.values()
                .map(|x| i64::try_from(*x).unwrap_or(i64::MAX))
                .fold(0_i64, i64::saturating_add)
        });
        Standing {
            coins,
            total_xp,
            total_level,
        }
    }
}

/// The start of the hour `at` falls in, as the wealth history keys its points (unix seconds).
pub(crate) fn wealth_hour(at: Millis) -> i64 {
    at.div_euclid(3_600_000) * 3_600
}

/// The first second at or after `since`, to compare with the history's hours.
pub(crate) fn wealth_since(since: Millis) -> i64 {
    since.saturating_add(999).div_euclid(1000)
}

/// An operator token as `mindrune token list --operator` shows it: its id, never the token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorToken {
    pub id: i64,
    pub created_at: Millis,
    /// When it was revoked; a revoked token opens neither the console nor `/metrics`.
    pub revoked_at: Option<Millis>,
}

/// Which operator token to revoke: the token's digest (the operator holds the token) or its id
/// (as `mindrune token list --operator` shows it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorTokenKey<'a> {
    Digest(&'a str),
    Id(i64),
}

/// What revoking an operator token did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorRevoke {
    /// It was live and is revoked now.
    Revoked(OperatorToken),
    /// It was revoked before; nothing changed.
    AlreadyRevoked(OperatorToken),
    /// No operator token has that digest or id.
    Unknown,
}

/// A family's recorded script runs, all time: what `/metrics` exports per owner.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunTotals {
    pub ok: i64,
    pub failed: i64,
}

/// How much one family reused its family skills over a window (the operator's console).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyReuse {
    /// Script runs of the family's avatars.
    pub runs: i64,
    /// Of those, runs of a sibling's skill: an unchanged copy from `family-skills/` (a run of
    /// the sibling's own version) or the avatar's own version built on a sibling's skill.
    pub runs_from_family: i64,
    /// Skills of the family that another avatar ran (any version, or a copy of it).
    pub skills_reused: i64,
}

/// One recorded run of a script, as the owner's page of the script shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptRun {
    /// The use's id: the run's page is `/dashboard/runs/{id}`.
    #[serde(default)]
    pub id: i64,
    /// The number of the version that ran (`v3`).
    pub version: i64,
    /// The avatar that ran it; `None` once that avatar was deleted.
    pub agent: Option<AgentId>,
    pub outcome: Outcome,
    /// The output's tail, scrubbed when it was recorded.
    pub output: Option<String>,
}

/// Which of a script's runs a list shows: every field left `None` lets all runs through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only the runs that went well (`Some(true)`) or failed (`Some(false)`).
    pub ok: Option<bool>,
    /// Only the runs of this version number (`3` for v3).
    pub version: Option<i64>,
    /// Only the runs of this avatar.
    pub agent: Option<AgentId>,
}

/// How many script runs one avatar of a family had on one UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DayRuns {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    /// `None` for runs of avatars that were deleted since.
    pub agent: Option<AgentId>,
    pub ok: i64,
    pub failed: i64,
}

/// One avatar's runs in a period ([`Store::runs_between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodRuns {
    /// `None` for runs of avatars that were deleted since.
    pub agent: Option<AgentId>,
    pub ok: i64,
    pub failed: i64,
}

/// Milliseconds in a day: [`DayRuns::day`] is a run's time divided by it.
pub const DAY_MILLIS: Millis = 86_400_000;

/// The free space of the disk a library is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSpace {
    /// The folder holding the library's files.
    pub folder: String,
    /// Bytes this process may still write there.
    pub available: u64,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("{0} not found")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error(
        "the library at {path} was written by a newer MindRune (schema {found}, this one knows {known}); upgrade mindrune"
    )]
    TooNew {
        path: String,
        found: i64,
        known: i64,
    },
    /// A library opened to be read or used finds none where it looked (and was not asked to
    /// make one: only `init` and `setup` make a library).
    #[error("no MindRune library at {0}")]
    NoLibrary(String),
    #[error("database error: {0}")]
    Database(String),
    /// The disk holding the library (or the database server's) is full: nothing of the write
    /// was stored. Its own variant, so a server answers 507 with the reason and a mirror's
    /// caller keeps the old files instead of blaming the library.
    #[error("database error: {0}")]
    DiskFull(String),
}

impl StoreError {
    /// Whether the write failed because a disk is full.
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::DiskFull(_))
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The library's storage. Synchronous: the CLI needs no runtime, and the server calls it from
/// blocking tasks.
pub trait Store:
    Directory + Recording + SkillRecords + FamilySharing + RunViews + AlertLedger + Send + Sync
{
    /// Runs `work` with a group's handle: every read and write made through it joins one
    /// transaction, which commits once `work` returns `Ok` and rolls back whole otherwise: many
    /// writes for the cost of one commit (a runner's batch, or several requests' batches at
    /// once). `owners` are the families written for (PostgreSQL takes their locks, in order, for
    /// the whole group; a write through the handle for another family runs on its own). Each
    /// write inside still succeeds or fails by itself (a savepoint, or nothing written before it
    /// is known to stand), so a refused write leaves the others; none is durable before this
    /// returns `Ok`, so nothing may be acknowledged before. The handle's reads see the group's
    /// writes.
    ///
    /// The handle is the group: work done through the store itself meanwhile is not part of it
    /// (on SQLite it waits for the group to end, so `work` must not use the store directly).
    fn write_group(
        &self,
        owners: &[OwnerId],
        work: &mut dyn FnMut(&dyn Recording) -> Result<()>,
    ) -> Result<()>;
    /// How many write groups of different families can usefully run at once: SQLite has one
    /// writer for the whole library; PostgreSQL serialises only each family's writes.
    fn write_lanes(&self) -> usize {
        1
    }
    /// The free space of the disk holding the library, when this process can see that disk
    /// (SQLite's folder; not a PostgreSQL server's, which says so on a write instead).
    fn disk_space(&self) -> Option<DiskSpace> {
        None
    }

    /// Checks the family's stored run counts and scores against a recomputation from its
    /// recorded uses: one line per disagreement, none when every version agrees. A lost or
    /// doubled use, or a score computed from a stale window, shows here.
    fn audit(&self, owner: OwnerId) -> Result<Vec<String>>;
}

/// One tag of the topic-tag vocabulary and the names that mean it (kind, slug, title, source,
/// aliases).
pub use mindrune_core::{Entry as VocabularyEntry, Source as VocabularySource};

/// What replacing the vocabulary changed, by tag (`quest:restless-ghost`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VocabularyChange {
    /// Tags new to the vocabulary, sorted.
    pub added: Vec<String>,
    /// Tags no longer in it, sorted.
    pub removed: Vec<String>,
    /// Tags kept.
    pub kept: usize,
}
