//! The [`Recording`] operations on PostgreSQL, run either on their own or as pieces of a write
//! group: which one is said by the [`Access`] they are run through (the store's own, or the
//! group's handle), never by the thread that runs them.

use std::cell::RefCell;

use crate::{
    Agent, AgentId, AvatarState, Matched, Millis, NewSnippetUse, NewUse, OwnerId,
    RecordedSnippetUse, RecordedUse, Recording, Result, ScriptSnapshot, Skill, SkillId, Standing,
    UnrecordedCall, Version, VersionId, VocabularyEntry, rules,
};

use super::conn::Tx;
use super::{Group, PgResult, PgStore, Scope, directory, records};
use crate::recording::RecordsAlone;

/// Where an open write group's state waits between two pieces of its work: taken out by the
/// piece that runs, put back when it ends.
pub(super) type GroupSlot = RefCell<Option<Group>>;

/// How a piece of work reaches the library: on its own (its own transaction on a pooled
/// connection), or through an open write group's handle (the handle
/// [`Store::write_group`](crate::Store::write_group) gives its work), joining the group's
/// transaction when the group holds the work's family (or the work only reads).
#[derive(Clone, Copy)]
pub(crate) struct Access<'s> {
    store: &'s PgStore,
    group: Option<&'s GroupSlot>,
}

impl<'s> Access<'s> {
    /// Work on its own.
    pub(super) fn alone(store: &'s PgStore) -> Access<'s> {
        Access { store, group: None }
    }

    /// The handle of the group waiting in `slot`.
    pub(super) fn group(store: &'s PgStore, slot: &'s GroupSlot) -> Access<'s> {
        Access {
            store,
            group: Some(slot),
        }
    }

    /// Runs one write for a family (see [`PgStore::write`]); inside the group when it holds
    /// the family.
    pub(super) fn write<T>(
        &self,
        owner: OwnerId,
        work: impl FnMut(&mut Tx<'_>) -> PgResult<T>,
    ) -> Result<T> {
        match self.take_group(Scope::Family(owner)) {
            Some(group) => self.in_group(group, work),
            None => {
                // Through a group's handle, a write for a family the group does not hold runs
                // beside it, on its own; the store's own access is refused inside group work.
                let _beside = self
                    .group
                    .map(|_| crate::group_work::GroupWork::handle_runs_alone());
                self.store.write(owner, work)
            }
        }
    }

    /// Runs a read (see [`PgStore::read`]); inside the group, so it sees the group's writes.
    pub(super) fn read<T>(&self, work: impl FnMut(&mut Tx<'_>) -> PgResult<T>) -> Result<T> {
        match self.take_group(Scope::Read) {
            Some(group) => self.in_group(group, work),
            None => self.store.read(work),
        }
    }

    /// Runs a read of one statement (see [`PgStore::read_one`]); inside the group, so it sees
    /// the group's writes.
    pub(super) fn read_one<T>(&self, work: impl FnMut(&mut Tx<'_>) -> PgResult<T>) -> Result<T> {
        match self.take_group(Scope::Read) {
            Some(group) => self.in_group(group, work),
            None => self.store.read_one(work),
        }
    }

    /// A piece of the group's work in a savepoint of its transaction, no retry (the group holds
    /// its families' locks, so no family write of it can deadlock).
    fn in_group<T>(
        &self,
        mut group: Group,
        mut work: impl FnMut(&mut Tx<'_>) -> PgResult<T>,
    ) -> Result<T> {
        group.epoch = group.epoch.wrapping_add(1);
        let outcome = group.in_savepoint(&mut work);
        self.put_group(group);
        outcome.map_err(|fail| fail.into_store(&self.store.location))
    }

    /// The group, taken out for one piece of work, when that work joins it: a read always, a
    /// family's write when the group holds that family's lock.
    fn take_group(&self, scope: Scope) -> Option<Group> {
        let slot = self.group?;
        let mut slot = slot.borrow_mut();
        let joins = match (scope, slot.as_ref()) {
            (_, None) => false,
            (Scope::Read, Some(_)) => true,
            (Scope::Family(owner), Some(group)) => group.owners.contains(&owner.0),
        };
        if joins { slot.take() } else { None }
    }

    fn put_group(&self, group: Group) {
        if let Some(slot) = self.group {
            *slot.borrow_mut() = Some(group);
        }
    }
}

impl Recording for Access<'_> {
    fn agent_by_name(&self, name: &str) -> Result<Option<Agent>> {
        directory::agent_by_name(self, name)
    }

    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>> {
        records::skill_at_path(self, owner, agent, path)
    }

    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>> {
        records::skill_by_name(self, owner, agent_name, name)
    }

    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>> {
        records::versions_with_digest(self, owner, digest)
    }

    fn match_script(
        &self,
        owner: OwnerId,
        snapshot: &ScriptSnapshot,
        now: Millis,
    ) -> Result<Matched> {
        self.write(owner, |tx| {
            rules::recording::match_script(tx, owner, snapshot, now)
        })
    }

    fn record_use(&self, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse> {
        let Some(mut group) = self.take_group(Scope::Family(owner)) else {
            // On its own, every use reads its version's row from what is committed (another
            // server may have recorded a use of it since), and takes the window this process
            // kept only when the row's use count says nothing was recorded since.
            let version = new_use.version.0;
            let mut known = self.store.cached_window(version);
            let (recorded, window) = self.write(owner, |tx| {
                rules::recording::record_use(tx, owner, new_use, known.take())
            })?;
            if let Some(window) = window {
                self.store.keep_windows([(version, window)]);
            }
            return Ok(recorded);
        };
        // Inside a write group, the group's last use of the version (or the batch's look-up,
        // `expect_uses`) left its window and row as the table holds them (see `Group::windows`):
        // the use reads neither again; else it takes the window this process kept.
        let version = new_use.version.0;
        let epoch = group.epoch;
        let known = match group.windows.remove(&version) {
            Some((mut window, kept_at)) => {
                if kept_at != epoch {
                    window.row = None;
                }
                Some(window)
            }
            None => self.store.cached_window(version),
        };
        let outcome = group.recording(|tx| rules::recording::record_use(tx, owner, new_use, known));
        let answer = match outcome {
            Ok((recorded, window)) => {
                if let Some(window) = window {
                    if window.row.is_none() {
                        // The use checked its skill's sharing, which writes the skill's versions.
                        group.epoch = group.epoch.wrapping_add(1);
                    }
                    group.windows.insert(version, (window, group.epoch));
                }
                Ok(recorded)
            }
            Err(fail) => Err(fail.into_store(&self.store.location)),
        };
        self.put_group(group);
        answer
    }

    fn expects_uses(&self) -> bool {
        // On its own each use reads what it needs in its own transaction: nothing to gain.
        self.group.is_some()
    }

    fn expect_uses(
        &self,
        owner: OwnerId,
        event_ids: &[&str],
        versions: &[VersionId],
    ) -> Result<()> {
        let Some(mut group) = self.take_group(Scope::Family(owner)) else {
            // On its own, each use reads what it needs in its own transaction.
            return Ok(());
        };
        let outcome = group
            .look_up_events(owner, event_ids)
            .and_then(|()| group.look_up_versions(owner, versions));
        self.put_group(group);
        outcome.map_err(|fail| fail.into_store(&self.store.location))
    }

    fn record_snippet_use(
        &self,
        owner: OwnerId,
        new_use: &NewSnippetUse,
    ) -> Result<RecordedSnippetUse> {
        self.write(owner, |tx| {
            rules::recording::record_snippet_use(tx, owner, new_use)
        })
    }

    fn versions(&self, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>> {
        records::versions(self, owner, skill)
    }

    fn recent_outputs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        after: Option<Millis>,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        records::recent_outputs(self, owner, agent, after, before, limit)
    }

    fn newest_output_at(&self, owner: OwnerId, agent: AgentId) -> Result<Option<Millis>> {
        records::newest_output_at(self, owner, agent)
    }

    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool> {
        records::note_unrecorded(self, owner, call)
    }

    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>> {
        records::unrecorded_since(self, owner, agent, since)
    }

    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        standing: Option<Standing>,
        reported_at: Millis,
    ) -> Result<()> {
        directory::save_avatar_state(self, owner, agent, state, standing, reported_at)
    }

    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>> {
        directory::avatar_state(self, owner, agent)
    }

    fn vocabulary(&self) -> Result<Vec<VocabularyEntry>> {
        directory::vocabulary(self)
    }

    fn vocabulary_digest(&self) -> Result<Option<String>> {
        directory::vocabulary_digest(self)
    }
}

/// The store's own recording: each operation on its own.
impl RecordsAlone for PgStore {
    type Access<'a> = Access<'a>;

    fn alone(&self) -> Access<'_> {
        Access::alone(self)
    }
}
