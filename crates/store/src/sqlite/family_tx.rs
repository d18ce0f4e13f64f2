//! SQLite's steps for the store's rules (`crate::rules`): one statement each, in SQLite's SQL.

use std::collections::{HashSet, VecDeque};

use mindrune_core::{SCORE_WINDOW, UseSample};
use rusqlite::{Connection, OptionalExtension, params};

use super::db_err;
use super::group_writes::{self, GroupWaiting};
use super::rows::{agent_from, skill_from, snippet_from, version_from};
use super::version_writes;
use crate::common::{SharingState, StoredVersion, json_map, parse_map};
use crate::rules::{
    FamilyTx, NewLessonRow, NewVersion, Rescore, ShareCandidate, SharingEvent, SkillForChange,
    UseInsert, VersionRow,
};
use crate::sqlite_and_postgres_sql as sql;
use crate::{
    Agent, AgentId, Millis, NewSnippetUse, NewUse, OwnerId, Result, Skill, SkillHeader, SkillId,
    Snippet, StoreError, Version, VersionId,
};

/// A transaction (or, for the audit, the connection itself) on the library's connection.
pub(crate) struct SqliteTx<'a> {
    raw: &'a Connection,
    /// Inside a write group, what waits to be written (see [`super::group_writes`]).
    deferred: Option<Deferred<'a>>,
}

/// What one write of a write group does with the group's waiting writes.
struct Deferred<'a> {
    /// The group's, from its earlier writes.
    group: &'a mut GroupWaiting,
    /// The agents the group found to be their family's (an insert's check, once a group).
    agents: &'a mut HashSet<(i64, i64)>,
    /// This write's own: the group's once the write is kept.
    own: GroupWaiting,
    /// Whether this write's savepoint was begun (before its first statement that needs what
    /// waits).
    savepoint: bool,
    /// A write of the group's waiting writes failed: the group's transaction holds part of them.
    lost: Option<StoreError>,
}

impl<'a> SqliteTx<'a> {
    /// Every statement on `conn` as it comes.
    pub(crate) fn new(conn: &'a Connection) -> SqliteTx<'a> {
        SqliteTx {
            raw: conn,
            deferred: None,
        }
    }

    /// One write of a write group: its uses and rescores wait with the group's (`group`), and
    /// it begins its own savepoint before any other statement, so that it succeeds or fails on
    /// its own. End it with [`SqliteTx::finish`].
    pub(super) fn in_group(
        conn: &'a Connection,
        group: &'a mut GroupWaiting,
        agents: &'a mut HashSet<(i64, i64)>,
    ) -> SqliteTx<'a> {
        SqliteTx {
            raw: conn,
            deferred: Some(Deferred {
                group,
                agents,
                own: GroupWaiting::default(),
                savepoint: false,
                lost: None,
            }),
        }
    }

    /// Ends a write with its work's `outcome`: inside a write group, its savepoint (if it
    /// began one) is released or rolled back, and its waiting writes join the group's when it
    /// is kept. Also answers the error that lost the group, if one did.
    pub(super) fn finish<T>(mut self, outcome: Result<T>) -> (Result<T>, Option<StoreError>) {
        let Some(mut deferred) = self.deferred.take() else {
            return (outcome, None);
        };
        let outcome = match outcome {
            Ok(value) if deferred.savepoint => self.end_savepoint(true).map(|()| value),
            outcome => outcome,
        };
        if outcome.is_ok() {
            deferred.group.append(std::mem::take(&mut deferred.own));
        } else if deferred.savepoint {
            let _ = self.end_savepoint(false);
        }
        (outcome, deferred.lost)
    }

    /// Releases this write's savepoint (`keep`), or rolls it back and ends it. Prepared once
    /// per connection (rusqlite's `Savepoint` formats and parses them on every write).
    fn end_savepoint(&self, keep: bool) -> Result<()> {
        if !keep && self.raw.is_autocommit() {
            // SQLite rolled the whole transaction back by itself (a full disk): there is no
            // savepoint left to roll back to.
            return Ok(());
        }
        let statements: &[&str] = if keep {
            &["RELEASE group_write"]
        } else {
            &["ROLLBACK TO group_write", "RELEASE group_write"]
        };
        for sql in statements {
            self.raw
                .prepare_cached(sql)
                .and_then(|mut statement| statement.execute([]))
                .map_err(db_err)?;
        }
        Ok(())
    }

    /// Runs one write of the group's waiting writes outside this write's savepoint (none is
    /// begun yet); its failure loses the group.
    fn write_for_group(
        deferred: &mut Deferred<'_>,
        write: impl FnOnce(&mut GroupWaiting) -> Result<()>,
    ) -> Result<()> {
        debug_assert!(!deferred.savepoint);
        write(deferred.group).inspect_err(|err| {
            deferred.lost.get_or_insert_with(|| err.clone());
        })
    }

    /// The connection, for a statement that may read (or change) what waits: the group's
    /// waiting writes are written first, outside this write's savepoint, then the savepoint
    /// begins, then this write's own waiting writes are written in it.
    pub(super) fn conn(&mut self) -> Result<&'a Connection> {
        let raw = self.raw;
        if let Some(deferred) = &mut self.deferred {
            if !deferred.savepoint {
                Self::write_for_group(deferred, |group| group.write(raw))?;
                raw.prepare_cached("SAVEPOINT group_write")
                    .and_then(|mut begin| begin.execute([]))
                    .map_err(db_err)?;
                deferred.savepoint = true;
            }
            deferred.own.write(raw)?;
        }
        Ok(raw)
    }

    /// The connection, for a read that needs only part of what waits: `write` writes that
    /// part of the group's waiting writes, outside any savepoint and beginning none; when this
    /// write's own waiting writes hold some of it (`own_waits`), it goes through
    /// [`SqliteTx::conn`] instead. Once the savepoint began the group's are all written.
    fn conn_for_read(
        &mut self,
        own_waits: impl FnOnce(&GroupWaiting) -> bool,
        write: impl FnOnce(&mut GroupWaiting, &Connection) -> Result<()>,
    ) -> Result<&'a Connection> {
        let raw = self.raw;
        match &mut self.deferred {
            Some(deferred) if own_waits(&deferred.own) => self.conn(),
            Some(deferred) if !deferred.savepoint => {
                Self::write_for_group(deferred, |group| write(group, raw))?;
                Ok(raw)
            }
            _ => Ok(raw),
        }
    }

    /// The connection, for a statement that reads `version`'s row and no other version's: only
    /// that version's waiting rescores are written first. A write group's first use of each
    /// script reads its row, and writing every waiting rescore there wrote most rows twice a
    /// group (`bench record` in groups of 100: 39.5 row writes a group for 20 scripts).
    fn conn_for_version(&mut self, version: VersionId) -> Result<&'a Connection> {
        self.conn_for_read(
            |own| own.versions.has(version.0),
            |group, raw| version_writes::write_version(&mut group.versions, version.0, raw),
        )
    }

    /// The connection, for a read of versions' rows (and skills, tags and owners), not uses:
    /// every waiting rescore is written first, and no savepoint is begun for it. A use's peer
    /// look-up comes after its insert waits, and beginning its write's savepoint there cost
    /// the use a savepoint and its insert's page copies after all.
    fn conn_for_versions(&mut self) -> Result<&'a Connection> {
        self.conn_for_read(
            |own| !own.versions.is_empty(),
            |group, raw| version_writes::write(&mut group.versions, raw),
        )
    }

    /// The connection, for a statement that reads uses: the waiting ones are inserted first.
    fn conn_for_uses(&mut self) -> Result<&'a Connection> {
        self.conn_for_read(GroupWaiting::has_uses, GroupWaiting::write_uses)
    }

    /// Inside a write group, whether `agent` is `owner`'s, asked once a group.
    fn known_agent(&mut self, owner: OwnerId, agent: AgentId) -> Result<bool> {
        let Some(deferred) = &mut self.deferred else {
            return Ok(true);
        };
        if deferred.agents.contains(&(owner.0, agent.0)) {
            return Ok(true);
        }
        let found = self
            .raw
            .prepare_cached("SELECT 1 FROM agents WHERE owner_id = ?1 AND agent_id = ?2")
            .map_err(db_err)?
            .exists(params![owner.0, agent.0])
            .map_err(db_err)?;
        if found {
            deferred.agents.insert((owner.0, agent.0));
        }
        Ok(found)
    }
}

impl Drop for SqliteTx<'_> {
    /// A write of a group that ended without [`SqliteTx::finish`] (a panic) leaves nothing in
    /// the group: its savepoint is rolled back.
    fn drop(&mut self) {
        if self.deferred.as_ref().is_some_and(|d| d.savepoint) {
            let _ = self.end_savepoint(false);
        }
    }
}

impl FamilyTx for SqliteTx<'_> {
    type Error = StoreError;

    fn agent(&mut self, owner: OwnerId, agent: AgentId) -> Result<Agent> {
        load_agent(self.conn()?, owner, agent)
    }

    fn skill_at(&mut self, owner: OwnerId, agent_name: &str, path: &str) -> Result<Option<Skill>> {
        self.conn()?
            .prepare_cached(sql::SKILL_OF_AGENT_NAME_AT_PATH.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, agent_name, path], skill_from)
            .optional()
            .map_err(db_err)
    }

    fn skill(&mut self, owner: OwnerId, skill: SkillId) -> Result<Skill> {
        self.conn()?
            .prepare_cached(sql::SKILL_BY_ID.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], skill_from)
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill.0)))
    }

    fn revive_skill(&mut self, owner: OwnerId, skill: SkillId, agent: AgentId) -> Result<()> {
        self.conn()?
            .execute(
                sql::REVIVE_SKILL.sqlite(),
                params![owner.0, skill.0, agent.0],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn insert_skill(
        &mut self,
        owner: OwnerId,
        agent: &Agent,
        name: &str,
        path: &str,
        now: Millis,
    ) -> Result<SkillId> {
        self.conn()?
            .execute(
                "INSERT INTO skills (owner_id, agent_id, agent_name, name, path, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![owner.0, agent.id.0, agent.name, name, path, now],
            )
            .map_err(db_err)?;
        Ok(SkillId(self.raw.last_insert_rowid()))
    }

    fn set_current_version(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        version: VersionId,
    ) -> Result<()> {
        self.conn()?
            .prepare_cached(sql::SET_CURRENT_VERSION.sqlite())
            .map_err(db_err)?
            .execute(params![owner.0, skill.0, version.0])
            .map_err(db_err)?;
        Ok(())
    }

    fn skill_tags(&mut self, owner: OwnerId, skill: SkillId) -> Result<Vec<String>> {
        let mut statement = self
            .conn()?
            .prepare_cached(
                "SELECT tag FROM skill_tags WHERE owner_id = ?1 AND skill_id = ?2 ORDER BY tag",
            )
            .map_err(db_err)?;
        statement
            .query_map(params![owner.0, skill.0], |row| row.get(0))
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<String>>>()
            .map_err(db_err)
    }

    fn set_skill_tags(&mut self, owner: OwnerId, skill: SkillId, tags: &[String]) -> Result<()> {
        self.conn()?
            .execute(
                sql::SET_SKILL_TAGS.sqlite(),
                params![owner.0, skill.0, tags.join("\n")],
            )
            .map_err(db_err)?;
        self.conn()?
            .execute(sql::CLEAR_SKILL_TAGS.sqlite(), params![owner.0, skill.0])
            .map_err(db_err)?;
        for tag in tags {
            self.conn()?
                .execute(
                    sql::INSERT_SKILL_TAG.sqlite(),
                    params![owner.0, skill.0, tag],
                )
                .map_err(db_err)?;
        }
        Ok(())
    }

    fn set_header(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        header: &SkillHeader,
        file_digest: Option<&str>,
    ) -> Result<()> {
        self.conn()?
            .prepare_cached(sql::SET_HEADER.sqlite())
            .map_err(db_err)?
            .execute(params![
                owner.0,
                skill.0,
                header.state.as_str(),
                header.goal,
                header.preconditions,
                header.params,
                header.result,
                header.from,
                header.topics.join("\n"),
                file_digest,
            ])
            .map_err(db_err)?;
        Ok(())
    }

    fn mark_skill_gone(&mut self, owner: OwnerId, skill: SkillId, now: Millis) -> Result<bool> {
        let changed = self
            .conn()?
            .execute(
                sql::MARK_SKILL_GONE.sqlite(),
                params![owner.0, skill.0, now],
            )
            .map_err(db_err)?;
        Ok(changed > 0)
    }

    fn version(&mut self, owner: OwnerId, version: VersionId) -> Result<Version> {
        load_version(self.conn()?, owner, version)
    }

    fn version_with_digest(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        digest: &str,
    ) -> Result<Option<Version>> {
        self.conn()?
            .prepare_cached(sql::VERSION_WITH_DIGEST.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0, digest], version_from)
            .optional()
            .map_err(db_err)
    }

    fn next_version_number(&mut self, owner: OwnerId, skill: SkillId) -> Result<i64> {
        self.conn()?
            .query_row(
                sql::NEXT_VERSION_NUMBER.sqlite(),
                params![owner.0, skill.0],
                |r| r.get(0),
            )
            .map_err(db_err)
    }

    fn insert_version(&mut self, owner: OwnerId, version: &NewVersion<'_>) -> Result<VersionId> {
        self.conn()?
            .execute(
                "INSERT INTO versions (owner_id, skill_id, number, digest, code, parent_version_id, lineage,
                                       inherited, score, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    owner.0,
                    version.skill.0,
                    version.number,
                    version.digest,
                    version.code,
                    version.parent.map(|p| p.0),
                    version.lineage.map(|l| l.as_str()),
                    version.inherited,
                    version.score,
                    version.created_at
                ],
            )
            .map_err(db_err)?;
        Ok(VersionId(self.raw.last_insert_rowid()))
    }

    fn version_for_use(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> Result<Option<VersionRow>> {
        self.conn_for_version(version)?
            .prepare_cached(
                "SELECT v.skill_id, v.number, v.uses, v.ok, v.score, v.inherited, v.measure_key, v.peer_rate,
                        v.peer_checked_uses, s.tags,
                        s.header = 'skill' AND s.deleted_at IS NULL AND s.current_version_id = v.version_id
                            AND v.shared_at IS NULL,
                        o.eager_sharing
                 FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 JOIN owners o ON o.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 AND v.version_id = ?2",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, version.0], |r| {
                Ok(VersionRow {
                    skill: SkillId(r.get(0)?),
                    number: r.get(1)?,
                    uses: r.get(2)?,
                    ok: r.get(3)?,
                    score: r.get(4)?,
                    inherited: r.get(5)?,
                    measure_key: r.get(6)?,
                    peer_rate: r.get(7)?,
                    peer_checked_uses: r.get(8)?,
                    tags: r.get(9)?,
                    may_share: r.get(10)?,
                    eager_sharing: r.get(11)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn rescore_version(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        rescore: Rescore,
    ) -> Result<()> {
        match &mut self.deferred {
            Some(deferred) => {
                deferred.own.versions.keep(owner, version.0, rescore);
                Ok(())
            }
            None => version_writes::write_now(self.raw, owner, version.0, rescore),
        }
    }

    fn insert_use(&mut self, owner: OwnerId, new_use: &NewUse) -> Result<UseInsert> {
        if let Some(event_id) = &new_use.event_id {
            if self.deferred.as_ref().is_some_and(|deferred| {
                deferred.group.holds_event(owner, event_id)
                    || deferred.own.holds_event(owner, event_id)
            }) {
                return Ok(UseInsert::AlreadyRecorded);
            }
            let seen = self
                .raw
                .prepare_cached("SELECT 1 FROM uses WHERE owner_id = ?1 AND event_id = ?2")
                .map_err(db_err)?
                .exists(params![owner.0, event_id])
                .map_err(db_err)?;
            if seen {
                return Ok(UseInsert::AlreadyRecorded);
            }
        }
        if self.deferred.is_some() {
            // Inside a write group the use waits (see `super::group_writes`).
            if !self.known_agent(owner, new_use.agent)? {
                return Ok(UseInsert::NoSuchAgent);
            }
            if let Some(deferred) = &mut self.deferred {
                deferred.own.keep_use(owner, new_use.clone());
            }
            return Ok(UseInsert::Inserted);
        }
        let mut insert = self
            .raw
            .prepare_cached(
                "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                                   deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured)
                 SELECT ?1, ?2, agent_id, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19
                 FROM agents WHERE owner_id = ?1 AND agent_id = ?3",
            )
            .map_err(db_err)?;
        let inserted = group_writes::insert_row(&mut insert, owner, new_use)?;
        Ok(if inserted == 1 {
            UseInsert::Inserted
        } else {
            UseInsert::NoSuchAgent
        })
    }

    fn window(&mut self, owner: OwnerId, version: VersionId) -> Result<VecDeque<UseSample>> {
        // A window is uses alone: no waiting rescore changes it.
        read_window(self.conn_for_uses()?, owner, version)
    }

    fn peer_rates(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        measure_key: &str,
        min_uses: i64,
    ) -> Result<Vec<f64>> {
        let mut statement = self
            .conn_for_versions()?
            .prepare_cached(
                // The peers are found from this skill's own tags (its few rows by the primary
                // key, then each tag's skills by skill_tags_by_tag), once; each peer is then one
                // look-up. The unary `+` keeps SQLite from walking the whole family by owner_id
                // instead: with every skill tagged alike, that was a scan of the family's tags
                // per skill of the family, quadratic in its size, on every recorded use.
                "SELECT v.rate_per_minute FROM skills s
                 JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
                 WHERE s.skill_id IN (SELECT peer.skill_id FROM skill_tags mine
                                      CROSS JOIN skill_tags peer ON peer.owner_id = mine.owner_id AND peer.tag = mine.tag
                                      WHERE +mine.owner_id = ?1 AND mine.skill_id = ?2 AND peer.skill_id <> ?2)
                   AND +s.owner_id = ?1 AND s.deleted_at IS NULL
                   AND v.measure_key = ?3 AND v.uses >= ?4",
            )
            .map_err(db_err)?;
        statement
            .query_map(params![owner.0, skill.0, measure_key, min_uses], |row| {
                row.get::<_, f64>(0)
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<f64>>>()
            .map_err(db_err)
    }

    fn sharing_state(&mut self, owner: OwnerId, skill: SkillId) -> Result<SharingState> {
        self.conn()?
            .prepare_cached(sql::SHARING_STATE.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], |r| {
                let headed: bool = r.get(0)?;
                let newest_shared: Option<i64> = r.get(1)?;
                Ok(SharingState {
                    visible: headed && newest_shared.is_some(),
                    newest_shared,
                })
            })
            .optional()
            .map_err(db_err)
            .map(Option::unwrap_or_default)
    }

    fn share_candidate(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> Result<Option<ShareCandidate>> {
        self.conn()?
            .prepare_cached(sql::SHARE_CANDIDATE.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], |r| {
                Ok(ShareCandidate {
                    version: VersionId(r.get(0)?),
                    uses: r.get(1)?,
                    score: r.get(2)?,
                    eager_sharing: r.get(3)?,
                })
            })
            .optional()
            .map_err(db_err)
    }

    fn mark_version_shared(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        at: Millis,
    ) -> Result<()> {
        self.conn()?
            .prepare_cached(sql::MARK_VERSION_SHARED.sqlite())
            .map_err(db_err)?
            .execute(params![owner.0, version.0, at])
            .map_err(db_err)?;
        Ok(())
    }

    fn unshared_skills_above(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        runs: i64,
        score: f64,
    ) -> Result<Vec<SkillId>> {
        self.conn()?
            .prepare_cached(sql::UNSHARED_SKILLS_ABOVE.sqlite())
            .map_err(db_err)?
            .query_map(params![owner.0, agent.0, runs, score], |r| {
                r.get(0).map(SkillId)
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)
    }

    fn skill_for_sharing_change(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> Result<SkillForChange> {
        self.conn()?
            .prepare_cached(sql::SKILL_FOR_SHARING_CHANGE.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], |r| {
                let number: Option<i64> = r.get(4)?;
                Ok(SkillForChange {
                    agent: r.get::<_, Option<i64>>(0)?.map(AgentId),
                    label: r.get(1)?,
                    header: r.get(2)?,
                    deleted: r.get(3)?,
                    current: match number {
                        Some(n) => Some((n, r.get(5)?, r.get(6)?)),
                        None => None,
                    },
                })
            })
            .map_err(db_err)
    }

    fn log_sharing_change(&mut self, owner: OwnerId, change: &SharingEvent<'_>) -> Result<()> {
        self.conn()?
            .prepare_cached(sql::LOG_SHARING_CHANGE.sqlite())
            .map_err(db_err)?
            .execute(params![
                owner.0,
                change.skill.0,
                change.agent.map(|a| a.0),
                change.version,
                change.kind.as_str(),
                change.reason,
                change.at
            ])
            .map_err(db_err)?;
        Ok(())
    }

    fn snippet_of_event(&mut self, owner: OwnerId, event_id: &str) -> Result<Option<i64>> {
        self.conn()?
            .query_row(
                sql::SNIPPET_OF_EVENT.sqlite(),
                params![owner.0, event_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)
    }

    fn snippet_with_digest(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
    ) -> Result<Option<i64>> {
        self.conn()?
            .query_row(
                sql::SNIPPET_WITH_DIGEST.sqlite(),
                params![owner.0, agent.0, digest],
                |r| r.get(0),
            )
            .optional()
            .map_err(db_err)
    }

    fn insert_snippet(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> Result<i64> {
        self.conn()?
            .execute(
                "INSERT INTO snippets (owner_id, agent_id, digest, code, first_at, last_used_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                params![
                    owner.0,
                    agent.0,
                    new_use.digest,
                    new_use.code,
                    new_use.outcome.at
                ],
            )
            .map_err(db_err)?;
        Ok(self.raw.last_insert_rowid())
    }

    fn insert_snippet_use(
        &mut self,
        owner: OwnerId,
        snippet: i64,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> Result<()> {
        let outcome = &new_use.outcome;
        self.conn()?
            .execute(
                sql::INSERT_SNIPPET_USE.sqlite(),
                params![
                    owner.0,
                    snippet,
                    agent.0,
                    outcome.at,
                    outcome.ok,
                    outcome.duration_ms.min(i64::MAX as u64) as i64,
                    json_map(&outcome.xp),
                    json_map(&outcome.items),
                    outcome.goal_progress,
                    outcome.deaths,
                    outcome.stuck,
                    outcome.items_lost,
                    new_use.output,
                    new_use.event_id,
                    outcome.failure,
                    outcome.unmeasured,
                ],
            )
            .map_err(db_err)?;
        self.conn()?
            .execute(
                "UPDATE snippets SET uses = uses + 1, ok = ok + ?3, last_used_at = MAX(last_used_at, ?4)
                 WHERE owner_id = ?1 AND snippet_id = ?2",
                params![owner.0, snippet, i64::from(outcome.ok), outcome.at],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn snippet(&mut self, owner: OwnerId, snippet: i64) -> Result<Snippet> {
        self.conn()?
            .query_row(
                sql::SNIPPET_BY_ID.sqlite(),
                params![owner.0, snippet],
                snippet_from,
            )
            .map_err(db_err)
    }

    fn lessons_of(&mut self, owner: OwnerId, agent: AgentId) -> Result<Vec<(String, String)>> {
        self.conn()?
            .prepare_cached(sql::AGENT_LESSON_DIGESTS.sqlite())
            .map_err(db_err)?
            .query_map(params![owner.0, agent.0], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)
    }

    fn delete_lesson(&mut self, owner: OwnerId, agent: AgentId, digest: &str) -> Result<()> {
        self.conn()?
            .execute(
                sql::DELETE_LESSON.sqlite(),
                params![owner.0, agent.0, digest],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn set_lesson_line(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
        line: i64,
    ) -> Result<()> {
        self.conn()?
            .execute(
                sql::SET_LESSON_LINE.sqlite(),
                params![owner.0, agent.0, digest, line],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn insert_lesson(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        lesson: &NewLessonRow<'_>,
    ) -> Result<()> {
        self.conn()?
            .execute(
                sql::INSERT_LESSON.sqlite(),
                params![
                    owner.0,
                    agent.0,
                    lesson.digest,
                    lesson.text,
                    lesson.line,
                    lesson.first_seen_at
                ],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn agent_skill_count(&mut self, owner: OwnerId, agent: AgentId) -> Result<u64> {
        let count: i64 = self
            .conn()?
            .query_row(
                sql::AGENT_SKILL_COUNT.sqlite(),
                params![owner.0, agent.0],
                |r| r.get(0),
            )
            .map_err(db_err)?;
        Ok(count.max(0) as u64)
    }

    fn run_for_agent(&mut self, sql: &str, owner: OwnerId, agent: AgentId) -> Result<u64> {
        let changed = self
            .conn()?
            .execute(sql, params![owner.0, agent.0])
            .map_err(db_err)?;
        Ok(changed as u64)
    }

    fn versions_for_audit(&mut self, owner: OwnerId) -> Result<Vec<(StoredVersion, i64, i64)>> {
        self.conn()?
            .prepare(
                "SELECT v.version_id, s.agent_name || '/' || s.name, v.uses, v.ok, v.score, v.inherited,
                        v.peer_rate, s.tags,
                        (SELECT COUNT(*) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id),
                        (SELECT COALESCE(SUM(u.ok), 0) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id)
                 FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 ORDER BY v.version_id",
            )
            .map_err(db_err)?
            .query_map([owner.0], |r| {
                Ok((
                    StoredVersion {
                        version: r.get(0)?,
                        label: r.get(1)?,
                        uses: r.get(2)?,
                        ok: r.get(3)?,
                        score: r.get(4)?,
                        inherited: r.get(5)?,
                        peer_rate: r.get(6)?,
                        tags: r.get(7)?,
                    },
                    r.get::<_, i64>(8)?,
                    r.get::<_, i64>(9)?,
                ))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)
    }
}

pub(crate) fn load_version(
    conn: &Connection,
    owner: OwnerId,
    version: VersionId,
) -> Result<Version> {
    conn.query_row(
        sql::VERSION_BY_ID.sqlite(),
        params![owner.0, version.0],
        version_from,
    )
    .optional()
    .map_err(db_err)?
    .ok_or_else(|| StoreError::NotFound(format!("version {}", version.0)))
}

pub(crate) fn load_agent(conn: &Connection, owner: OwnerId, agent: AgentId) -> Result<Agent> {
    conn.query_row(
        sql::AGENT_OF_OWNER.sqlite(),
        params![owner.0, agent.0],
        agent_from,
    )
    .optional()
    .map_err(db_err)?
    .ok_or_else(|| StoreError::NotFound(format!("agent {}", agent.0)))
}

/// Reads a version's newest uses (newest first), as the score needs them.
pub(crate) fn read_window(
    conn: &Connection,
    owner: OwnerId,
    version: VersionId,
) -> Result<VecDeque<UseSample>> {
    let mut statement = conn
        .prepare_cached(
            "SELECT at, ok, agent_id, duration_ms, xp, items, goal_progress, deaths, stuck, items_lost
             FROM uses WHERE owner_id = ?1 AND version_id = ?2
             ORDER BY at DESC, use_id DESC LIMIT ?3",
        )
        .map_err(db_err)?;
    let rows = statement
        .query_map(params![owner.0, version.0, SCORE_WINDOW as i64], |row| {
            Ok(UseSample {
                at: row.get::<_, i64>(0)?.div_euclid(1000),
                ok: row.get(1)?,
                agent: row.get::<_, Option<i64>>(2)?.unwrap_or(0),
                duration_ms: row.get::<_, i64>(3)?.max(0) as u64,
                xp: parse_map(row.get(4)?),
                items: parse_map(row.get(5)?),
                goal_progress: row.get(6)?,
                deaths: row.get::<_, i64>(7)?.clamp(0, i64::from(u32::MAX)) as u32,
                stuck: row.get(8)?,
                items_lost: row.get::<_, i64>(9)?.clamp(0, i64::from(u32::MAX)) as u32,
            })
        })
        .map_err(db_err)?;
    rows.collect::<rusqlite::Result<VecDeque<_>>>()
        .map_err(db_err)
}
