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
use rusqlite::{OptionalExtension, params};

use super::rows::{agent_from, skill_from, version_from, version_from_at};
use super::{
    CachedWindow, Inner, SqliteStore, UseCache, WINDOW_CACHE_LIMIT, agent_missing, db_err,
};
use crate::common::{SKILL_COLUMN_COUNT, SKILL_COLUMNS, VERSION_COLUMNS, lines_of};
use crate::recording::RecordsAlone;
use crate::sqlite_and_postgres_sql as sql;
use crate::{StoreError, UnrecordedReason, WEALTH_HISTORY_MILLIS, wealth_hour};

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
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::AGENT_BY_NAME.sqlite())
            .map_err(db_err)?
            .query_row([name], agent_from)
            .optional()
            .map_err(db_err)
    }

    fn skill_at_path(&self, owner: OwnerId, agent: AgentId, path: &str) -> Result<Option<Skill>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::SKILL_AT_PATH.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, agent.0, path], skill_from)
            .optional()
            .map_err(db_err)
    }

    fn skill_by_name(&self, owner: OwnerId, agent_name: &str, name: &str) -> Result<Option<Skill>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::SKILL_BY_NAME.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, agent_name, name], skill_from)
            .optional()
            .map_err(db_err)
    }

    fn versions_with_digest(&self, owner: OwnerId, digest: &str) -> Result<Vec<(Skill, Version)>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS} FROM versions v
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 AND v.digest = ?2 ORDER BY v.version_id"
            ))
            .map_err(db_err)?;
        let found = statement
            .query_map(params![owner.0, digest], |row| {
                Ok((skill_from(row)?, version_from_at(row, SKILL_COLUMN_COUNT)?))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(found)
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
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(sql::VERSIONS_OF_SKILL.sqlite())
            .map_err(db_err)?;
        let versions = statement
            .query_map(params![owner.0, skill.0], version_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(versions)
    }

    fn recent_outputs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        after: Option<Millis>,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        // Uses alone: asked once a write group for each avatar, and a `lock` there made the group's
        // every script read its row again.
        let inner = self.lock_reading_uses();
        let limit_sql = i64::try_from(limit).unwrap_or(i64::MAX);
        // Each side's newest few, read in the order of its `…_by_agent_time` index (without the
        // limits SQLite collects and sorts the agent's whole history on every run: a quadratic
        // recording, found by `bench record`: 1,055 uses/s after 5,000 uses), then merged here.
        // One statement with a UNION ALL and an outer ORDER BY … LIMIT sorted in a temporary
        // b-tree, whose page cache SQLite allocated and freed on every run (a tenth of recording
        // in write groups went to the kernel zeroing those pages again).
        let side = |sql: &str| -> Result<Vec<(Millis, i64, String)>> {
            inner
                .conn
                .prepare_cached(sql)
                .map_err(db_err)?
                .query_map(
                    params![
                        owner.0,
                        agent.0,
                        before,
                        limit_sql,
                        after.unwrap_or(Millis::MIN)
                    ],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .map_err(db_err)?
                .collect::<rusqlite::Result<_>>()
                .map_err(db_err)
        };
        let uses = side(
            "SELECT at, use_id, output FROM uses
             WHERE owner_id = ?1 AND agent_id = ?2 AND at < ?3 AND at > ?5 AND output IS NOT NULL
             ORDER BY at DESC, use_id DESC LIMIT ?4",
        )?;
        let snippets = side(
            "SELECT at, use_id, output FROM snippet_uses
             WHERE owner_id = ?1 AND agent_id = ?2 AND at < ?3 AND at > ?5 AND output IS NOT NULL
             ORDER BY at DESC, use_id DESC LIMIT ?4",
        )?;
        // Looks (`bun sdk/cli.ts NAME`) print a state too: the next run is measured against the
        // newest of all three. Read by `unrecorded_calls_by_time`; an agent has few such rows.
        let looks = side(
            "SELECT at, rowid, output FROM unrecorded_calls
             WHERE owner_id = ?1 AND agent_id = ?2 AND at < ?3 AND at > ?5
               AND reason = 'look' AND output IS NOT NULL
             ORDER BY at DESC, rowid DESC LIMIT ?4",
        )?;
        Ok(newest_of([uses, snippets, looks], limit))
    }

    fn newest_output_at(&self, owner: OwnerId, agent: AgentId) -> Result<Option<Millis>> {
        // Uses alone, as in `recent_outputs`.
        let inner = self.lock_reading_uses();
        let mut statement = inner
            .conn
            .prepare_cached(
                // Each side's newest by its `…_by_agent_time` index, as in `recent_outputs`. (No temporary
                // b-tree here: `max` of two rows needs no sort.)
                "SELECT max(at) FROM (
                     SELECT * FROM (SELECT at FROM uses
                                    WHERE owner_id = ?1 AND agent_id = ?2 AND output IS NOT NULL
                                    ORDER BY at DESC, use_id DESC LIMIT 1)
                     UNION ALL
                     SELECT * FROM (SELECT at FROM snippet_uses
                                    WHERE owner_id = ?1 AND agent_id = ?2 AND output IS NOT NULL
                                    ORDER BY at DESC, use_id DESC LIMIT 1)
                     UNION ALL
                     SELECT * FROM (SELECT at FROM unrecorded_calls
                                    WHERE owner_id = ?1 AND agent_id = ?2 AND reason = 'look'
                                      AND output IS NOT NULL
                                    ORDER BY at DESC LIMIT 1)
                 )",
            )
            .map_err(db_err)?;
        statement
            .query_row(params![owner.0, agent.0], |r| r.get(0))
            .map_err(db_err)
    }

    fn note_unrecorded(&self, owner: OwnerId, call: &UnrecordedCall) -> Result<bool> {
        let inner = self.lock();
        let added = inner
            .conn
            .execute(
                "INSERT INTO unrecorded_calls (owner_id, agent_id, event_id, at, reason, detail, output)
                 SELECT owner_id, agent_id, ?3, ?4, ?5, ?6, ?7 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (owner_id, agent_id, event_id) DO NOTHING",
                params![
                    owner.0,
                    call.agent.0,
                    call.event_id,
                    call.at,
                    call.reason.as_str(),
                    call.detail,
                    call.output
                ],
            )
            .map_err(db_err)?;
        Ok(added > 0)
    }

    fn unrecorded_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<UnrecordedCall>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(sql::UNRECORDED_SINCE.sqlite())
            .map_err(db_err)?;
        let rows = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, Millis>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                ))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(rows
            .into_iter()
            .filter_map(|(event_id, at, reason, detail, output)| {
                Some(UnrecordedCall {
                    agent,
                    event_id,
                    at,
                    reason: UnrecordedReason::parse(&reason)?,
                    detail,
                    output,
                })
            })
            .collect())
    }

    fn save_avatar_state(
        &self,
        owner: OwnerId,
        agent: AgentId,
        state: &str,
        standing: Option<Standing>,
        reported_at: Millis,
    ) -> Result<()> {
        self.write(|tx, _| {
            let conn = tx.conn()?;
            let changed = conn
                .prepare_cached(
                    "INSERT INTO avatar_states (owner_id, agent_id, state, reported_at)
                     SELECT owner_id, agent_id, ?3, ?4 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                     ON CONFLICT (agent_id) DO UPDATE SET state = excluded.state, reported_at = excluded.reported_at
                     WHERE excluded.reported_at >= avatar_states.reported_at",
                )
                .map_err(db_err)?
                .execute(params![owner.0, agent.0, state, reported_at])
                .map_err(db_err)?;
            // A state older than the one kept changes nothing; an unknown agent is an error.
            if changed == 0 && agent_missing(conn, owner, agent)? {
                return Err(StoreError::NotFound(format!("agent {}", agent.0)));
            }
            let Some(standing) = standing else {
                return Ok(());
            };
            // A late report still fills its own hour, but never replaces a newer one of that hour.
            conn.prepare_cached(
                "INSERT INTO avatar_wealth (owner_id, agent_id, hour, coins, reported_at, total_xp, total_level)
                 SELECT owner_id, agent_id, ?3, ?4, ?5, ?6, ?7 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (owner_id, agent_id, hour) DO UPDATE
                 SET coins = excluded.coins, reported_at = excluded.reported_at,
                     total_xp = excluded.total_xp, total_level = excluded.total_level
                 WHERE excluded.reported_at >= avatar_wealth.reported_at",
            )
            .map_err(db_err)?
            .execute(params![
                owner.0,
                agent.0,
                wealth_hour(reported_at),
                standing.coins,
                reported_at,
                standing.total_xp,
                standing.total_level
            ])
            .map_err(db_err)?;
            // Measured from the avatar's newest point, not the clock, so a late report from long
            // ago is dropped at once and a quiet avatar keeps its last months.
            conn.prepare_cached(
                "DELETE FROM avatar_wealth WHERE owner_id = ?1 AND agent_id = ?2 AND hour < (
                     SELECT MAX(hour) FROM avatar_wealth WHERE owner_id = ?1 AND agent_id = ?2
                 ) - ?3",
            )
            .map_err(db_err)?
            .execute(params![owner.0, agent.0, WEALTH_HISTORY_MILLIS / 1000])
            .map_err(db_err)?;
            Ok(())
        })
    }

    fn avatar_state(&self, owner: OwnerId, agent: AgentId) -> Result<Option<AvatarState>> {
        let inner = self.lock();
        inner
            .conn
            .prepare_cached(sql::AVATAR_STATE.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, agent.0], |r| {
                Ok(AvatarState {
                    agent: AgentId(r.get(0)?),
                    state: r.get(1)?,
                    reported_at: r.get(2)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn vocabulary(&self) -> Result<Vec<VocabularyEntry>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT kind, slug, title, source, aliases FROM vocabulary ORDER BY kind, slug",
            )
            .map_err(db_err)?;
        let entries = statement
            .query_map([], |r| {
                let source: String = r.get(3)?;
                Ok(crate::VocabularyEntry {
                    kind: r.get(0)?,
                    slug: r.get(1)?,
                    title: r.get(2)?,
                    // Only MindRune writes the column; an unknown value reads as a wiki page.
                    source: crate::VocabularySource::parse(&source)
                        .unwrap_or(crate::VocabularySource::Wiki),
                    aliases: lines_of(r.get(4)?),
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(entries)
    }

    fn vocabulary_digest(&self) -> Result<Option<String>> {
        let inner = self.lock();
        inner
            .conn
            .query_row(sql::VOCABULARY_DIGEST.sqlite(), [], |r| r.get(0))
            .optional()
            .map_err(db_err)
    }
}

/// The store's own recording: each operation on its own, after any open write group.
impl RecordsAlone for SqliteStore {
    type Access<'a> = Access<'a>;

    fn alone(&self) -> Access<'_> {
        Access::alone(self)
    }
}

/// The `limit` newest of lists each newest first, by time; at the same time the earlier list
/// first (a script's use, then a snippet's, then a look), then the newer row: the order
/// PostgreSQL's one statement reads.
fn newest_of<const N: usize>(sides: [Vec<(Millis, i64, String)>; N], limit: usize) -> Vec<String> {
    let mut sides = sides.map(|side| side.into_iter().peekable());
    let mut newest = Vec::with_capacity(limit.min(16));
    while newest.len() < limit {
        let mut pick: Option<(usize, Millis)> = None;
        for (index, side) in sides.iter_mut().enumerate() {
            if let Some(&(at, _, _)) = side.peek()
                && pick.is_none_or(|(_, best)| at > best)
            {
                pick = Some((index, at));
            }
        }
        let Some((index, _)) = pick else { break };
        newest.extend(sides[index].next().map(|(_, _, output)| output));
    }
    newest
}

#[cfg(test)]
mod tests {
    use super::newest_of;

    fn runs(rows: &[(i64, i64, &str)]) -> Vec<(i64, i64, String)> {
        rows.iter()
            .map(|&(at, id, text)| (at, id, text.to_string()))
            .collect()
    }

    #[test]
    fn the_newest_outputs_of_scripts_and_snippets_merge_by_time_a_script_first_on_a_tie() {
        let uses = runs(&[(30, 7, "use 30"), (20, 9, "use 20 b"), (20, 4, "use 20 a")]);
        let snippets = runs(&[(25, 3, "snippet 25"), (20, 8, "snippet 20"), (5, 1, "old")]);
        assert_eq!(
            newest_of([uses.clone(), snippets.clone()], 10),
            [
                "use 30",
                "snippet 25",
                "use 20 b",
                "use 20 a",
                "snippet 20",
                "old"
            ]
        );
        assert_eq!(
            newest_of([uses, snippets], 3),
            ["use 30", "snippet 25", "use 20 b"]
        );
    }

    #[test]
    fn either_side_may_be_empty() {
        assert_eq!(newest_of([runs(&[(1, 1, "a")]), Vec::new()], 5), ["a"]);
        assert_eq!(newest_of([Vec::new(), runs(&[(1, 1, "s")])], 5), ["s"]);
        assert!(newest_of([Vec::new(), Vec::new()], 5).is_empty());
        assert!(newest_of([runs(&[(1, 1, "a")]), Vec::new()], 0).is_empty());
    }

    #[test]
    fn a_look_newer_than_every_run_comes_first_and_loses_a_tie_to_them() {
        let uses = runs(&[(20, 1, "use 20")]);
        let snippets = runs(&[(10, 1, "snippet 10")]);
        let looks = runs(&[(30, 5, "look 30"), (20, 4, "look 20")]);
        assert_eq!(
            newest_of([uses, snippets, looks], 10),
            ["look 30", "use 20", "look 20", "snippet 10"]
        );
    }
}
