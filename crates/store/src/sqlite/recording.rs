//! The [`Recording`] operations on the library's connection, run either on their own or as
//! pieces of a write group: which one is said by the [`Access`] they are run through (the store's
//! own, or the group's handle), never by the thread that runs them.

use std::sync::MutexGuard;

use crate::{
    Agent, AgentId, AvatarState, Matched, Millis, NewSnippetUse, NewUse, OwnerId,
    RecordedSnippetUse, RecordedUse, Recording, Result, ScriptSnapshot, Skill, SkillId, Standing,
    UnrecordedCall, Version, VocabularyEntry, rules,
};

use super::family_tx::SqliteTx;
use super::{CachedWindow, Inner, SqliteStore, UseCache, WINDOW_CACHE_LIMIT, directory, records};
use crate::recording::RecordsAlone;

/// How a piece of work reaches the library's connection: on its own, waiting for any open write
/// group to end first and running in its own transaction, or as the open group's (the handle
/// [`Store::write_group`](crate::Store::write_group) gives its work), joining its transaction.
#[derive(Clone, Copy)]
pub(crate) struct Access<'s> {
    store: &'s SqliteStore,
    group: bool,
}

impl<'s> Access<'s> {
    /// Work on its own: it waits for an open write group to end.
    pub(super) fn alone(store: &'s SqliteStore) -> Access<'s> {
        Access {
            store,
            group: false,
        }
    }

    /// The open write group's handle; only the group's own work has one.
    pub(super) fn group(store: &'s SqliteStore) -> Access<'s> {
        Access { store, group: true }
    }

    /// The connection for any work (see [`SqliteStore::lock`]).
    pub(super) fn lock(&self) -> MutexGuard<'s, Inner> {
        SqliteStore::for_any_use(self.lock_keeping_rows())
    }

    /// The connection for a read of uses alone (see [`SqliteStore::lock_reading_uses`]).
    pub(super) fn lock_reading_uses(&self) -> MutexGuard<'s, Inner> {
        SqliteStore::for_reading_uses(self.lock_keeping_rows())
    }

    /// The connection as it is: the group's at once, else once no group holds it.
    fn lock_keeping_rows(&self) -> MutexGuard<'s, Inner> {
        if self.group {
            self.store.group_guard()
        } else {
            self.store.lock_keeping_rows()
        }
    }

    /// One write (see [`SqliteStore::write_with`]): its own transaction, or a piece of the
    /// group's.
    pub(super) fn write<T>(
        &self,
        work: impl FnMut(&mut SqliteTx<'_>, &mut UseCache<'_>) -> Result<T>,
    ) -> Result<T> {
        self.store.write_with(self.lock(), work)
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
        self.write(|tx, _| rules::recording::match_script(tx, owner, snapshot, now))
    }

    fn record_use(&self, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse> {
        let version = new_use.version.0;
        // Inside a write group, a version's row as the group's last use of it left it stands
        // for the table while nothing else used the connection since (the epoch did not move):
        // no other writer can write while the group holds the library. Grouped uses of the
        // same script then read its row once (`tests/write_groups.rs` holds every answer and
        // row to one at a time).
        self.store
            .write_with(self.lock_keeping_rows(), |tx, cache| {
                let known = cache.windows.remove(&version).map(|cached| {
                    let mut window = cached.window;
                    if cache.group_epoch.is_none() || cache.group_epoch != cached.row_epoch {
                        window.row = None;
                    }
                    window
                });
                let (recorded, window) = rules::recording::record_use(tx, owner, new_use, known)?;
                Ok((recorded, window, cache.group_epoch))
            })
            .map(|(recorded, window, group_epoch)| {
                // Kept only once the transaction committed: a window of a rolled-back use must not
                // stand for the table (a group that does not commit forgets them all).
                if let Some(window) = window {
                    let mut inner = self.lock_keeping_rows();
                    if window.row.is_none() {
                        // The use checked its skill's sharing, which writes the skill's versions:
                        // no row kept from before stands for the table any more.
                        inner.epoch = inner.epoch.wrapping_add(1);
                    }
                    if inner.windows.len() >= WINDOW_CACHE_LIMIT {
                        inner.windows.clear();
                    }
                    inner.windows.insert(
                        version,
                        CachedWindow {
                            window,
                            row_epoch: group_epoch,
                        },
                    );
                }
                recorded
            })
    }

    fn record_snippet_use(
        &self,
        owner: OwnerId,
        new_use: &NewSnippetUse,
    ) -> Result<RecordedSnippetUse> {
        self.write(|tx, _| rules::recording::record_snippet_use(tx, owner, new_use))
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

/// The store's own recording: each operation on its own, after any open write group.
impl RecordsAlone for SqliteStore {
    type Access<'a> = Access<'a>;

    fn alone(&self) -> Access<'_> {
        Access::alone(self)
    }
}
