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
use super::rows::{
    SKILL_COLUMN_COUNT, SKILL_COLUMNS, VERSION_COLUMNS, agent_from, all, col, skill_from,
    version_from, version_from_at,
};
use super::{Group, PgResult, PgStore, Scope};
use crate::common::lines_of;
use crate::recording::RecordsAlone;
use crate::sqlite_and_postgres_sql as sql;
use crate::{StoreError, UnrecordedReason, VocabularySource, WEALTH_HISTORY_MILLIS, wealth_hour};

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
        self.read(|tx| {
            tx.query_opt(sql::AGENT_BY_NAME.postgres(), &[&name])?
                .as_ref()
                .map(agent_from)
                .transpose()
        })
    }

    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>> {
        self.read(|tx| {
            tx.query_opt(sql::SKILL_AT_PATH.postgres(), &[&owner.0, &agent.0, &path])?
                .map(|row| skill_from(&row))
                .transpose()
        })
    }

    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>> {
        self.read(|tx| {
            tx.query_opt(
                sql::SKILL_BY_NAME.postgres(),
                &[&owner.0, &agent_name, &name],
            )?
            .map(|row| skill_from(&row))
            .transpose()
        })
    }

    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!(
                    "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS} FROM versions v
                     JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                     WHERE v.owner_id = $1 AND s.owner_id = $1 AND v.digest = $2 ORDER BY v.version_id"
                ),
                &[&owner.0, &digest],
            )?;
            all(rows, |row| {
                Ok((skill_from(row)?, version_from_at(row, SKILL_COLUMN_COUNT)?))
            })
        })
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
        self.read(|tx| {
            let rows = tx.query(sql::VERSIONS_OF_SKILL.postgres(), &[&owner.0, &skill.0])?;
            all(rows, version_from)
        })
    }

    fn recent_outputs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        after: Option<Millis>,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read_one(|tx| {
            let rows = tx.query(
                // Each side cut to its newest few first, as on SQLite, so no run reads the
                // agent's whole history.
                "SELECT output FROM (
                     (SELECT output, at, use_id, 0 AS kind FROM uses
                      WHERE owner_id = $1 AND agent_id = $2 AND at < $3 AND at > $5 AND output IS NOT NULL
                      ORDER BY at DESC, use_id DESC LIMIT $4)
                     UNION ALL
                     (SELECT output, at, use_id, 1 AS kind FROM snippet_uses
                      WHERE owner_id = $1 AND agent_id = $2 AND at < $3 AND at > $5 AND output IS NOT NULL
                      ORDER BY at DESC, use_id DESC LIMIT $4)
                     UNION ALL
                     -- Looks (`bun sdk/cli.ts NAME`) print a state too; they have no row id, and
                     -- two of one avatar at the same millisecond are ordered by their event id.
                     (SELECT output, at, 0 AS use_id, 2 AS kind FROM unrecorded_calls
                      WHERE owner_id = $1 AND agent_id = $2 AND at < $3 AND at > $5
                        AND reason = 'look' AND output IS NOT NULL
                      ORDER BY at DESC, event_id DESC LIMIT $4)
                 ) runs ORDER BY at DESC, kind, use_id DESC LIMIT $4",
                &[&owner.0, &agent.0, &before, &limit, &after.unwrap_or(Millis::MIN)],
            )?;
            all(rows, |row| col::<String>(row, 0))
        })
    }

    fn newest_output_at(&self, owner: OwnerId, agent: AgentId) -> Result<Option<Millis>> {
        self.read_one(|tx| {
            let rows = tx.query(
                "SELECT max(at) FROM (
                     (SELECT at FROM uses
                      WHERE owner_id = $1 AND agent_id = $2 AND output IS NOT NULL
                      ORDER BY at DESC, use_id DESC LIMIT 1)
                     UNION ALL
                     (SELECT at FROM snippet_uses
                      WHERE owner_id = $1 AND agent_id = $2 AND output IS NOT NULL
                      ORDER BY at DESC, use_id DESC LIMIT 1)
                     UNION ALL
                     (SELECT at FROM unrecorded_calls
                      WHERE owner_id = $1 AND agent_id = $2 AND reason = 'look' AND output IS NOT NULL
                      ORDER BY at DESC LIMIT 1)
                 ) runs",
                &[&owner.0, &agent.0],
            )?;
            let newest = all(rows, |row| col::<Option<Millis>>(row, 0))?;
            Ok(newest.into_iter().next().flatten())
        })
    }

    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool> {
        self.write(owner, |tx| {
            // An unknown agent stores nothing, as on SQLite.
            let added = tx.execute(
                "INSERT INTO unrecorded_calls (owner_id, agent_id, event_id, at, reason, detail, output)
                 SELECT owner_id, agent_id, $3::text, $4::bigint, $5::text, $6::text, $7::text FROM agents WHERE owner_id = $1 AND agent_id = $2
                 ON CONFLICT (owner_id, agent_id, event_id) DO NOTHING",
                &[
                    &owner.0,
                    &call.agent.0,
                    &call.event_id,
                    &call.at,
                    &call.reason.as_str(),
                    &call.detail,
                    &call.output,
                ],
            )?;
            Ok(added > 0)
        })
    }

    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>> {
        self.read(|tx| {
            let rows = tx.query(
                sql::UNRECORDED_SINCE.postgres(),
                &[&owner.0, &agent.0, &since],
            )?;
            let mut calls = Vec::with_capacity(rows.len());
            for row in &rows {
                let reason: String = col(row, 2)?;
                if let Some(reason) = UnrecordedReason::parse(&reason) {
                    calls.push(UnrecordedCall {
                        agent,
                        event_id: col(row, 0)?,
                        at: col(row, 1)?,
                        reason,
                        detail: col(row, 3)?,
                        output: col(row, 4)?,
                    });
                }
            }
            Ok(calls)
        })
    }

    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        standing: Option<Standing>,
        reported_at: Millis,
    ) -> Result<()> {
        self.write(owner, |tx| {
            let changed = tx.execute(
                "INSERT INTO avatar_states (owner_id, agent_id, state, reported_at)
                 SELECT owner_id, agent_id, $3::text, $4::bigint FROM agents
                 WHERE owner_id = $1 AND agent_id = $2
                 ON CONFLICT (owner_id, agent_id) DO UPDATE
                 SET state = EXCLUDED.state, reported_at = EXCLUDED.reported_at
                 WHERE EXCLUDED.reported_at >= avatar_states.reported_at",
                &[&owner.0, &agent.0, &state, &reported_at],
            )?;
            // A state older than the one kept changes nothing; an unknown agent is an error.
            if changed == 0 && agent_missing(tx, owner, agent)? {
                return Err(StoreError::NotFound(format!("agent {}", agent.0)).into());
            }
            let Some(standing) = standing else {
                return Ok(());
            };
            // A late report still fills its own hour, but never replaces a newer one of that hour.
            tx.execute(
                "INSERT INTO avatar_wealth (owner_id, agent_id, hour, coins, reported_at, total_xp, total_level)
                 SELECT owner_id, agent_id, $3::bigint, $4::bigint, $5::bigint, $6::bigint, $7::bigint FROM agents
                 WHERE owner_id = $1 AND agent_id = $2
                 ON CONFLICT (owner_id, agent_id, hour) DO UPDATE
                 SET coins = EXCLUDED.coins, reported_at = EXCLUDED.reported_at,
                     total_xp = EXCLUDED.total_xp, total_level = EXCLUDED.total_level
                 WHERE EXCLUDED.reported_at >= avatar_wealth.reported_at",
                &[
                    &owner.0,
                    &agent.0,
                    &wealth_hour(reported_at),
                    &standing.coins,
                    &reported_at,
                    &standing.total_xp,
                    &standing.total_level,
                ],
            )?;
            // Measured from the avatar's newest point, not the clock, so a late report from long
            // ago is dropped at once and a quiet avatar keeps its last months.
            tx.execute(
                "DELETE FROM avatar_wealth WHERE owner_id = $1 AND agent_id = $2 AND hour < (
                     SELECT MAX(hour) FROM avatar_wealth WHERE owner_id = $1 AND agent_id = $2
                 ) - $3::bigint",
                &[&owner.0, &agent.0, &(WEALTH_HISTORY_MILLIS / 1000)],
            )?;
            Ok(())
        })
    }

    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>> {
        self.read(|tx| {
            tx.query_opt(sql::AVATAR_STATE.postgres(), &[&owner.0, &agent.0])?
                .map(|row| {
                    Ok(AvatarState {
                        agent: AgentId(col(&row, 0)?),
                        state: col(&row, 1)?,
                        reported_at: col(&row, 2)?,
                    })
                })
                .transpose()
        })
    }

    fn vocabulary(&self) -> Result<Vec<VocabularyEntry>> {
        self.read(|tx| {
            let rows = tx.query(
                "SELECT kind, slug, title, source, aliases FROM vocabulary
                 ORDER BY kind COLLATE \"C\", slug COLLATE \"C\"",
                &[],
            )?;
            all(rows, |row| {
                let source: &str = col(row, 3)?;
                Ok(VocabularyEntry {
                    kind: col(row, 0)?,
                    slug: col(row, 1)?,
                    title: col(row, 2)?,
                    // Only MindRune writes the column; an unknown value reads as a wiki page.
                    source: VocabularySource::parse(source).unwrap_or(VocabularySource::Wiki),
                    aliases: lines_of(col(row, 4)?),
                })
            })
        })
    }

    fn vocabulary_digest(&self) -> Result<Option<String>> {
        self.read(|tx| {
            tx.query_opt(sql::VOCABULARY_DIGEST.postgres(), &[])?
                .map(|row| col(&row, 0))
                .transpose()
        })
    }
}

/// The store's own recording: each operation on its own.
impl RecordsAlone for PgStore {
    type Access<'a> = Access<'a>;

    fn alone(&self) -> Access<'_> {
        Access::alone(self)
    }
}

/// Whether an owner's agent does not exist (an update that changed nothing, told apart from
/// one that had nothing to change).
fn agent_missing(tx: &mut Tx<'_>, owner: OwnerId, agent: AgentId) -> PgResult<bool> {
    let found = tx.query_opt(
        "SELECT 1 FROM agents WHERE owner_id = $1 AND agent_id = $2",
        &[&owner.0, &agent.0],
    )?;
    Ok(found.is_none())
}
