//! What recording an agent's calls reads and writes: the one job of the store that runs both on
//! its own (each operation its own transaction, through the [`Store`]) and as a piece of a write
//! group (through the group's handle, which [`Store::write_group`] gives its work).
//!
//! The handle is the only way into a group: there is no ambient group a thread is "in", and
//! what is done through the [`Store`] itself while a group is open waits for it or runs beside it
//! exactly as any other caller's work would.

#[cfg(doc)]
use crate::Store;
use crate::{
    Agent, AgentId, AvatarState, Matched, Millis, NewSnippetUse, NewUse, OwnerId,
    RecordedSnippetUse, RecordedUse, Result, ScriptSnapshot, Skill, SkillId, Standing,
    UnrecordedCall, Version, VersionId, VocabularyEntry,
};

/// The reads and writes of recording a call: implemented by each backend's store (each on its
/// own) and by its write group's handle (each a piece of the group's transaction, seeing what
/// the group wrote before it).
pub trait Recording {
    /// Identity look-up: which agent (and so which owner) an event is from.
    fn agent_by_name(&self, name: &str) -> Result<Option<Agent>>;
    /// The skill of one agent's file, if the library has seen it.
    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>>;
    /// A skill by its agent's name and its own (`buzz/chop-oaks`).
    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>>;
    /// Versions in this family with this digest, with their skills.
    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>>;
    /// Finds or creates the skill and version a snapshot of a file belongs to, in one
    /// transaction: an unknown file is a new skill (built on its origin, if any); a new digest
    /// of a known file is its next version, built on the current one.
    fn match_script(
        &self,
        owner: OwnerId,
        snapshot: &ScriptSnapshot,
        now: Millis,
    ) -> Result<Matched>;
    /// Records a use and rescores its version, atomically.
    fn record_use(&self, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse>;
    /// Whether [`Recording::expect_uses`] does anything, so a caller with nothing else to gain
    /// skips working out what to tell it.
    fn expects_uses(&self) -> bool {
        false
    }
    /// Inside a write group: what a batch is about to record for `owner`'s family, as far as
    /// the caller knows it: its uses' event ids, and the versions they run. A backend that pays
    /// a round trip for each look-up reads them together (PostgreSQL: one query for the event
    /// ids and one for the versions' rows and score windows, instead of one per use and two per
    /// version). Changes nothing and answers nothing: a wrong guess only costs the look-up.
    /// Outside a group, and on SQLite, it does nothing.
    fn expect_uses(
        &self,
        owner: OwnerId,
        event_ids: &[&str],
        versions: &[VersionId],
    ) -> Result<()> {
        let _ = (owner, event_ids, versions);
        Ok(())
    }
    /// Records a use of an inline snippet in its agent's snippet history.
    fn record_snippet_use(
        &self,
        owner: OwnerId,
        new_use: &NewSnippetUse,
    ) -> Result<RecordedSnippetUse>;
    /// A skill's versions, newest first.
    fn versions(&self, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>>;
    /// [`Store::recent_outputs`](crate::Store::recent_outputs) of the outputs after `after` alone (a turn end, a call of
    /// unknown outcome: the states before it are not the one a run started from).
    fn recent_outputs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        after: Option<Millis>,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>>;
    /// When the newest of an agent's stored outputs (scripts and inline code alike) happened;
    /// None when it has none. Inside a write group this is what the group will find before
    /// the outputs it records itself, since no other writer can add one meanwhile.
    fn newest_output_at(&self, owner: OwnerId, agent: AgentId) -> Result<Option<Millis>>;
    /// Keeps a call that could not be recorded as a run, once per event id; whether it was new.
    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool>;
    /// The agent's unrecorded calls at or after `since`, oldest first.
    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>>;
    /// Keeps the latest game state a runner reported for its avatar, and (in the same
    /// transaction) its wealth as the point of the report's hour in the wealth history: the
    /// hour's newest report wins, and points more than [`WEALTH_HISTORY_MILLIS`] older than
    /// the avatar's newest are dropped. A state older than the one kept leaves the state as it
    /// is but still gives its hour a point, if that hour has no newer one.
    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        standing: Option<Standing>,
        reported_at: Millis,
    ) -> Result<()>;
    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>>;
    /// Every entry of the vocabulary, by kind and slug.
    fn vocabulary(&self) -> Result<Vec<VocabularyEntry>>;
    /// The digest of the vocabulary as last written, or `None` before the first build: one
    /// read tells a process whether the vocabulary it compiled is still current.
    fn vocabulary_digest(&self) -> Result<Option<String>>;
}

/// A backend's store, which records each operation on its own through an access of its own (the
/// same code a write group's handle runs, in a transaction of the operation's own).
pub(crate) trait RecordsAlone {
    type Access<'a>: Recording
    where
        Self: 'a;

    fn alone(&self) -> Self::Access<'_>;
}

/// Every backend's store records through its own access: written once here for both.
impl<T: RecordsAlone> Recording for T {
    fn agent_by_name(&self, name: &str) -> Result<Option<Agent>> {
        self.alone().agent_by_name(name)
    }

    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>> {
        self.alone().skill_at_path(owner, agent, path)
    }

    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>> {
        self.alone().skill_by_name(owner, agent_name, name)
    }

    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>> {
        self.alone().versions_with_digest(owner, digest)
    }

    fn match_script(
        &self,
        owner: OwnerId,
        snapshot: &ScriptSnapshot,
        now: Millis,
    ) -> Result<Matched> {
        self.alone().match_script(owner, snapshot, now)
    }

    fn record_use(&self, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse> {
        self.alone().record_use(owner, new_use)
    }

    fn record_snippet_use(
        &self,
        owner: OwnerId,
        new_use: &NewSnippetUse,
    ) -> Result<RecordedSnippetUse> {
        self.alone().record_snippet_use(owner, new_use)
    }

    fn versions(&self, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>> {
        self.alone().versions(owner, skill)
    }

    fn recent_outputs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        after: Option<Millis>,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.alone()
            .recent_outputs_since(owner, agent, after, before, limit)
    }

    fn newest_output_at(&self, owner: OwnerId, agent: AgentId) -> Result<Option<Millis>> {
        self.alone().newest_output_at(owner, agent)
    }

    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool> {
        self.alone().note_unrecorded(owner, call)
    }

    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>> {
        self.alone().unrecorded_since(owner, agent, since)
    }

    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        standing: Option<Standing>,
        reported_at: Millis,
    ) -> Result<()> {
        self.alone()
            .save_avatar_state(owner, agent, state, standing, reported_at)
    }

    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>> {
        self.alone().avatar_state(owner, agent)
    }

    fn vocabulary(&self) -> Result<Vec<VocabularyEntry>> {
        self.alone().vocabulary()
    }

    fn vocabulary_digest(&self) -> Result<Option<String>> {
        self.alone().vocabulary_digest()
    }
}
