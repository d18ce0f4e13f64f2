//! The store's decisions, written once for both backends.
//!
//! What happens when a script file is matched, a use is recorded, a version clears the family's
//! bar, a file goes, a lab log's lessons change or an agent is deleted is decided here, over
//! [`FamilyTx`]: the small set of typed SQL steps each backend provides inside one of its
//! family's write transactions (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: the family's advisory
//! lock). A backend opens the transaction, hands its handle to a rule, and commits what the
//! rule returns; it decides nothing itself.
//!
//! Architecture invariant: a rule of the store (which version a file is, how a use rescores its
//! version, when a version is shared and how the change is logged, the peers' median, what
//! deleting an agent keeps) exists once, in this module. A backend's [`FamilyTx`] step is one
//! statement (or one statement per row) and holds no `if` about the domain; a difference
//! between the backends that is not SQL dialect is a bug. `tests/store_story.rs` runs every
//! story on both.

use std::collections::VecDeque;

use mindrune_core::UseSample;

use crate::common::SharingState;
use crate::{
    Agent, AgentId, Lineage, Millis, NewSnippetUse, NewUse, OwnerId, SharingKind, Skill,
    SkillHeader, SkillId, Snippet, StoreError, Version, VersionId,
};

pub(crate) mod family;
pub(crate) mod recording;

pub use recording::origin_of_new_file;
pub(crate) mod sharing;
pub(crate) mod vocabulary;

/// The steps a backend offers inside one family's write transaction (and, for the audit, inside
/// a read of one snapshot). Every step filters by the owner it is given.
pub(crate) trait FamilyTx {
    /// The backend's error inside a transaction: it may carry "try again" for the backend's
    /// retry loop, and takes the store's own answers (not found, conflict).
    type Error: From<StoreError>;

    /// The family's agent; "agent N not found" when it is not one of them.
    fn agent(&mut self, owner: OwnerId, agent: AgentId) -> Result<Agent, Self::Error>;

    /// The skill at an agent's path (by the agent's name, which a deleted agent's kept skills
    /// still carry).
    fn skill_at(
        &mut self,
        owner: OwnerId,
        agent_name: &str,
        path: &str,
    ) -> Result<Option<Skill>, Self::Error>;
    /// The family's skill; "skill N not found" when it is not one of them.
    fn skill(&mut self, owner: OwnerId, skill: SkillId) -> Result<Skill, Self::Error>;
    /// Brings a skill whose file had gone (or whose agent was deleted) back to `agent`.
    fn revive_skill(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        agent: AgentId,
    ) -> Result<(), Self::Error>;
    fn insert_skill(
        &mut self,
        owner: OwnerId,
        agent: &Agent,
        name: &str,
        path: &str,
        now: Millis,
    ) -> Result<SkillId, Self::Error>;
    fn set_current_version(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        version: VersionId,
    ) -> Result<(), Self::Error>;
    /// The skill's tags, sorted byte by byte.
    fn skill_tags(&mut self, owner: OwnerId, skill: SkillId) -> Result<Vec<String>, Self::Error>;
    /// Replaces the skill's tags (the list column and the rows of `skill_tags`) with `tags`,
    /// which are sorted and without repeats.
    fn set_skill_tags(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        tags: &[String],
    ) -> Result<(), Self::Error>;
    /// Writes the header as the file now has it; a `file_digest` of `None` keeps the one stored.
    fn set_header(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        header: &SkillHeader,
        file_digest: Option<&str>,
    ) -> Result<(), Self::Error>;
    /// Marks the skill's file gone (and forgets its digest); false when it was gone already.
    fn mark_skill_gone(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        now: Millis,
    ) -> Result<bool, Self::Error>;

    /// The family's version; "version N not found" when it is not one of them.
    fn version(&mut self, owner: OwnerId, version: VersionId) -> Result<Version, Self::Error>;
    fn version_with_digest(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        digest: &str,
    ) -> Result<Option<Version>, Self::Error>;
    /// The number the skill's next version takes (one past its highest).
    fn next_version_number(&mut self, owner: OwnerId, skill: SkillId) -> Result<i64, Self::Error>;
    fn insert_version(
        &mut self,
        owner: OwnerId,
        version: &NewVersion<'_>,
    ) -> Result<VersionId, Self::Error>;
    /// What recording a use reads of its version, its skill and its family.
    fn version_for_use(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> Result<Option<VersionRow>, Self::Error>;
    /// A version's row and its window together, for a use that knows neither: the two steps
    /// above, or one statement where a backend pays a round trip for each (PostgreSQL).
    fn version_and_window(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> Result<Option<(VersionRow, VecDeque<UseSample>)>, Self::Error> {
        let Some(row) = self.version_for_use(owner, version)? else {
            return Ok(None);
        };
        Ok(Some((row, self.window(owner, version)?)))
    }
    /// Writes a version's counters and score after one more use.
    fn rescore_version(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        rescore: Rescore,
    ) -> Result<(), Self::Error>;

    /// Inserts a use, unless its event id is stored already or its agent is not the family's.
    fn insert_use(&mut self, owner: OwnerId, new_use: &NewUse) -> Result<UseInsert, Self::Error>;
    /// The version's newest uses, newest first (at most `score::WINDOW`).
    fn window(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> Result<VecDeque<UseSample>, Self::Error>;
    /// The current rates of the family's comparable skills: another live skill sharing a tag
    /// with this one, its current version on the same measure with at least `min_uses` uses
    /// (`score::PEER_MIN_USES`).
    fn peer_rates(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        measure_key: &str,
        min_uses: i64,
    ) -> Result<Vec<f64>, Self::Error>;

    /// What the family sees of the skill now (the default for a skill not found).
    fn sharing_state(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> Result<SharingState, Self::Error>;
    /// The skill's current version when the file is headed `@skill`, present, and the version
    /// is not shared yet; with the family's choice of bar.
    fn share_candidate(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> Result<Option<ShareCandidate>, Self::Error>;
    fn mark_version_shared(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        at: Millis,
    ) -> Result<(), Self::Error>;
    /// The agent's headed, present skills whose current version is not shared yet and has at
    /// least `runs` runs and a score of at least `score`, by id.
    fn unshared_skills_above(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        runs: i64,
        score: f64,
    ) -> Result<Vec<SkillId>, Self::Error>;
    /// A skill as a sharing change names and explains it.
    fn skill_for_sharing_change(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> Result<SkillForChange, Self::Error>;
    fn log_sharing_change(
        &mut self,
        owner: OwnerId,
        change: &SharingEvent<'_>,
    ) -> Result<(), Self::Error>;

    /// The snippet a stored event recorded a use of, if the event is stored.
    fn snippet_of_event(
        &mut self,
        owner: OwnerId,
        event_id: &str,
    ) -> Result<Option<i64>, Self::Error>;
    fn snippet_with_digest(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
    ) -> Result<Option<i64>, Self::Error>;
    fn insert_snippet(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> Result<i64, Self::Error>;
    /// Inserts the snippet's use and counts it on the snippet's row.
    fn insert_snippet_use(
        &mut self,
        owner: OwnerId,
        snippet: i64,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> Result<(), Self::Error>;
    fn snippet(&mut self, owner: OwnerId, snippet: i64) -> Result<Snippet, Self::Error>;

    /// The agent's lessons: digest and text.
    fn lessons_of(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
    ) -> Result<Vec<(String, String)>, Self::Error>;
    fn delete_lesson(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
    ) -> Result<(), Self::Error>;
    fn set_lesson_line(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
        line: i64,
    ) -> Result<(), Self::Error>;
    fn insert_lesson(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        lesson: &NewLessonRow<'_>,
    ) -> Result<(), Self::Error>;

    /// How many skills are still linked to the agent.
    fn agent_skill_count(&mut self, owner: OwnerId, agent: AgentId) -> Result<u64, Self::Error>;
    /// Runs one statement of deleting an agent (`family::delete_agent`), written with SQLite's
    /// `?1` (owner) and `?2` (agent); returns the rows it changed.
    fn run_for_agent(
        &mut self,
        sql: &str,
        owner: OwnerId,
        agent: AgentId,
    ) -> Result<u64, Self::Error>;

    /// Every version of the family with its stored counters, and its uses counted, for the audit.
    fn versions_for_audit(
        &mut self,
        owner: OwnerId,
    ) -> Result<Vec<(crate::common::StoredVersion, i64, i64)>, Self::Error>;
}

/// A new version's row.
pub(crate) struct NewVersion<'a> {
    pub skill: SkillId,
    pub number: i64,
    pub digest: &'a str,
    pub code: &'a str,
    pub parent: Option<VersionId>,
    pub lineage: Option<Lineage>,
    pub inherited: Option<f64>,
    /// The score it starts with: its inheritance, else 0.
    pub score: f64,
    pub created_at: Millis,
}

/// What recording a use reads of its version.
#[derive(Debug)]
pub(crate) struct VersionRow {
    pub skill: SkillId,
    pub number: i64,
    pub uses: i64,
    pub ok: i64,
    pub score: f64,
    pub inherited: Option<f64>,
    pub measure_key: String,
    pub peer_rate: Option<f64>,
    pub peer_checked_uses: Option<i64>,
    /// Newline-joined, sorted.
    pub tags: String,
    /// The version is a headed file's current version and not shared yet: a use may make it
    /// clear the bar.
    pub may_share: bool,
    /// The family's choice of bar.
    pub eager_sharing: bool,
}

/// A version's counters and score after one more use.
pub(crate) struct Rescore {
    pub ok: bool,
    /// The new score and its parts: the row's `score` and `rate_per_minute` are its total and
    /// rate, its `breakdown` column the whole as JSON ([`Rescore::breakdown_json`], made only when
    /// the row is written: a write group writes a version's row once for all its uses).
    pub breakdown: mindrune_core::ScoreBreakdown,
    pub measure_key: String,
    /// The use's time: `last_used_at` becomes the later of it and the stored one.
    pub at: Millis,
    pub peer_rate: Option<f64>,
    pub peer_checked_uses: Option<i64>,
}

impl Rescore {
    /// The breakdown as the `breakdown` column holds it.
    pub(crate) fn breakdown_json(&self) -> Option<String> {
        serde_json::to_string(&self.breakdown).ok()
    }
}

/// What inserting a use did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UseInsert {
    Inserted,
    /// Its event id is stored already: a retry.
    AlreadyRecorded,
    /// Its agent is not the family's.
    NoSuchAgent,
}

/// A version that may become shared.
pub(crate) struct ShareCandidate {
    pub version: VersionId,
    pub uses: i64,
    pub score: f64,
    pub eager_sharing: bool,
}

/// A skill as a sharing change describes it.
pub(crate) struct SkillForChange {
    pub agent: Option<AgentId>,
    /// `agent/name`.
    pub label: String,
    pub header: String,
    pub deleted: bool,
    /// The current version's number, runs and score.
    pub current: Option<(i64, i64, f64)>,
}

/// A row of `sharing_events`.
pub(crate) struct SharingEvent<'a> {
    pub skill: SkillId,
    pub agent: Option<AgentId>,
    pub version: Option<i64>,
    pub kind: SharingKind,
    pub reason: &'a str,
    pub at: Millis,
}

/// A row of `lessons`.
pub(crate) struct NewLessonRow<'a> {
    pub digest: &'a str,
    pub text: &'a str,
    pub line: i64,
    pub first_seen_at: Millis,
}

/// A version's window as this process last read it, with the version's use count then. It is
/// only a cache: the count tells a stale one (any writer, in this process or another, bumps it
/// in the transaction of its insert).
pub(crate) struct KnownWindow {
    /// The version's row as the use that left this window left it, for the next use of the
    /// version in the same write group with nothing else written or read in between: the
    /// backend passes it back only then (see `sqlite::SqliteStore::record_use`), and a use
    /// given it reads no row.
    pub row: Option<VersionRow>,
    pub uses: i64,
    pub samples: VecDeque<UseSample>,
    /// Each sample's result under the measure whose key is `measured`, in the samples' order:
    /// the next use of the version measures only itself (`score::score_measured`).
    pub results: VecDeque<f64>,
    pub measured: String,
}

impl KnownWindow {
    /// A version's row and window as just read, with no sample measured yet (no measure's key
    /// is empty, so the use measures them all).
    pub(crate) fn unmeasured(row: VersionRow, samples: VecDeque<UseSample>) -> KnownWindow {
        KnownWindow {
            uses: row.uses,
            row: Some(row),
            samples,
            results: VecDeque::new(),
            measured: String::new(),
        }
    }
}
