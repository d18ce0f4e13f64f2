//! A family's skills, versions, uses and snippets on SQLite: looking them up, and an agent's
//! inline snippets with the suggestions made from them. Recording is a rule (`crate::rules`).

use crate::sqlite_and_postgres_sql as sql;
use crate::{Recording, SkillRecords};
use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::family_tx::SqliteTx;
use super::recording::Access;
use super::rows::{skill_from, snippet_from, version_from, version_from_at};
use super::{SNIPPET_RUNS_SINCE, SqliteStore, db_err};
use crate::common::{
    SKILL_COLUMN_COUNT, SKILL_COLUMNS, SNIPPET_COLUMNS, VERSION_COLUMN_COUNT, VERSION_COLUMNS,
};
use crate::rules::FamilyTx as _;
use crate::{
    AgentId, FailedRun, Millis, OwnerId, Result, RunTotals, Skill, SkillEntry, SkillId, Snippet,
    SnippetId, SnippetRuns, UnmeasuredScope, UnrecordedCall, UnrecordedReason, Version, VersionId,
};

pub(super) fn skill_at_path(
    store: &Access<'_>,
    owner: OwnerId,
    agent: AgentId,
    path: &str,
) -> Result<Option<Skill>> {
    let inner = store.lock();
    inner
        .conn
        .prepare_cached(&format!(
            "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.agent_id = ?2 AND s.path = ?3"
        ))
        .map_err(db_err)?
        .query_row(params![owner.0, agent.0, path], skill_from)
        .optional()
        .map_err(db_err)
}

pub(super) fn skill_by_name(
    store: &Access<'_>,
    owner: OwnerId,
    agent_name: &str,
    name: &str,
) -> Result<Option<Skill>> {
    let inner = store.lock();
    inner
        .conn
        .prepare_cached(&format!(
            "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = ?1 AND s.agent_name = ?2 AND s.name = ?3
             ORDER BY s.deleted_at IS NOT NULL, s.skill_id DESC LIMIT 1"
        ))
        .map_err(db_err)?
        .query_row(params![owner.0, agent_name, name], skill_from)
        .optional()
        .map_err(db_err)
}

pub(super) fn versions_with_digest(
    store: &Access<'_>,
    owner: OwnerId,
    digest: &str,
) -> Result<Vec<(Skill, Version)>> {
    let inner = store.lock();
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

pub(super) fn versions(store: &Access<'_>, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>> {
    let inner = store.lock();
    let mut statement = inner
        .conn
        .prepare_cached(&format!(
            "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = ?1 AND v.skill_id = ?2 ORDER BY v.number DESC"
        ))
        .map_err(db_err)?;
    let versions = statement
        .query_map(params![owner.0, skill.0], version_from)
        .map_err(db_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(db_err)?;
    Ok(versions)
}

pub(super) fn recent_outputs(
    store: &Access<'_>,
    owner: OwnerId,
    agent: AgentId,
    after: Option<Millis>,
    before: Millis,
    limit: usize,
) -> Result<Vec<String>> {
    // Uses alone: asked once a write group for each avatar, and a `lock` there made the group's
    // every script read its row again.
    let inner = store.lock_reading_uses();
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

pub(super) fn newest_output_at(
    store: &Access<'_>,
    owner: OwnerId,
    agent: AgentId,
) -> Result<Option<Millis>> {
    // Uses alone, as in `recent_outputs`.
    let inner = store.lock_reading_uses();
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

pub(super) fn note_unrecorded(
    store: &Access<'_>,
    owner: OwnerId,
    call: &UnrecordedCall,
) -> Result<bool> {
    let inner = store.lock();
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

pub(super) fn unrecorded_since(
    store: &Access<'_>,
    owner: OwnerId,
    agent: AgentId,
    since: Millis,
) -> Result<Vec<UnrecordedCall>> {
    let inner = store.lock();
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

impl SkillRecords for SqliteStore {
    fn skill(&self, owner: OwnerId, skill: SkillId) -> Result<Skill> {
        let inner = self.lock();
        SqliteTx::new(&inner.conn).skill(owner, skill)
    }

    fn version(&self, owner: OwnerId, version: VersionId) -> Result<Version> {
        let inner = self.lock();
        SqliteTx::new(&inner.conn).version(owner, version)
    }

    fn snippets(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<Snippet>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SNIPPET_COLUMNS} FROM snippets
                 WHERE owner_id = ?1 AND agent_id = ?2 ORDER BY last_used_at DESC"
            ))
            .map_err(db_err)?;
        let snippets = statement
            .query_map(params![owner.0, agent.0], snippet_from)
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(snippets)
    }

    fn snippet_runs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SnippetRuns>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(SNIPPET_RUNS_SINCE)
            .map_err(db_err)?;
        let runs = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok(SnippetRuns {
                    snippet: SnippetId(r.get(0)?),
                    digest: r.get(1)?,
                    code: r.get(2)?,
                    ok: r.get(3)?,
                    runs: r.get(4)?,
                    last_run_at: r.get(5)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(runs)
    }

    fn skills(&self, owner: OwnerId, agent: Option<AgentId>) -> Result<Vec<SkillEntry>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS},
                        (SELECT COUNT(*) FROM versions c WHERE c.owner_id = s.owner_id AND c.skill_id = s.skill_id),
                        (SELECT COALESCE(SUM(c.uses), 0) FROM versions c WHERE c.owner_id = s.owner_id AND c.skill_id = s.skill_id),
                        s.header = 'skill' AND EXISTS (SELECT 1 FROM versions x WHERE x.owner_id = s.owner_id
                            AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                 FROM skills s JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
                 WHERE s.owner_id = ?1 AND (?2 IS NULL OR s.agent_id = ?2) AND s.deleted_at IS NULL
                 ORDER BY v.score DESC, s.agent_name, s.name"
            ))
            .map_err(db_err)?;
        let base = SKILL_COLUMN_COUNT + VERSION_COLUMN_COUNT;
        let entries = statement
            .query_map(params![owner.0, agent.map(|a| a.0)], |row| {
                Ok(SkillEntry {
                    skill: skill_from(row)?,
                    version: version_from_at(row, SKILL_COLUMN_COUNT)?,
                    version_count: row.get(base)?,
                    total_runs: row.get(base + 1)?,
                    // Which other version is best is asked at a clock:
                    // `display::skills_as_of`.
                    best: None,
                    family: row.get(base + 2)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(entries)
    }

    fn use_count(&self, owner: OwnerId) -> Result<i64> {
        let inner = self.lock();
        inner
            .conn
            .query_row(sql::USE_COUNT.sqlite(), [owner.0], |r| r.get(0))
            .map_err(db_err)
    }

    fn recent_failures(
        &self,
        owner: OwnerId,
        skill: SkillId,
        limit: usize,
    ) -> Result<Vec<FailedRun>> {
        let inner = self.lock();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut statement = inner
            .conn
            .prepare_cached(
                "SELECT v.number, u.at, u.failure FROM uses u
                 JOIN versions v ON v.version_id = u.version_id
                 WHERE u.owner_id = ?1 AND v.owner_id = ?1 AND v.skill_id = ?2 AND u.ok = 0
                 ORDER BY u.at DESC, u.use_id DESC LIMIT ?3",
            )
            .map_err(db_err)?;
        let failures = statement
            .query_map(params![owner.0, skill.0, limit], |r| {
                Ok(FailedRun {
                    version: r.get(0)?,
                    at: r.get(1)?,
                    failure: r.get(2)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(failures)
    }

    fn snippet_suggestions(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<HashMap<String, i64>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(sql::SNIPPET_SUGGESTIONS.sqlite())
            .map_err(db_err)?;
        let rows = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<HashMap<String, i64>>>()
            .map_err(db_err)?;
        Ok(rows)
    }

    fn note_snippet_suggestion(
        &self,
        owner: OwnerId,
        agent: AgentId,
        group_key: &str,
        runs: i64,
        at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        inner
            .conn
            .execute(
                "INSERT INTO snippet_suggestions (owner_id, agent_id, group_key, suggested_at, suggested_runs)
                 SELECT owner_id, agent_id, ?3, ?4, ?5 FROM agents WHERE owner_id = ?1 AND agent_id = ?2
                 ON CONFLICT (owner_id, agent_id, group_key)
                 DO UPDATE SET suggested_at = excluded.suggested_at, suggested_runs = excluded.suggested_runs",
                params![owner.0, agent.0, group_key, at, runs],
            )
            .map_err(db_err)?;
        Ok(())
    }

    fn unmeasured_runs(
        &self,
        owner: OwnerId,
        scope: UnmeasuredScope,
    ) -> Result<Vec<(String, i64)>> {
        let inner = self.lock_reading_uses();
        let (sql, id, since) = match scope {
            UnmeasuredScope::AgentSince(agent, since) => {
                (sql::UNMEASURED_RUNS_OF_AGENT.sqlite(), agent.0, since)
            }
            UnmeasuredScope::Skill(skill) => {
                (sql::UNMEASURED_RUNS_OF_SKILL.sqlite(), skill.0, Millis::MIN)
            }
        };
        inner
            .conn
            .prepare_cached(sql)
            .map_err(db_err)?
            .query_map(params![owner.0, id, since], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)
    }

    fn run_totals(&self, owner: OwnerId) -> Result<RunTotals> {
        // The read-only connection: a scrape never waits for a write group.
        self.read_committed(|conn| {
            conn.prepare_cached(
                "SELECT COALESCE(SUM(ok), 0), COALESCE(SUM(uses), 0) FROM versions WHERE owner_id = ?1",
            )
            .map_err(db_err)?
            .query_row([owner.0], |r| {
                let (ok, runs): (i64, i64) = (r.get(0)?, r.get(1)?);
                Ok(RunTotals {
                    ok,
                    failed: runs - ok,
                })
            })
            .map_err(db_err)
        })
    }

    fn recent_outputs(
        &self,
        owner: OwnerId,
        agent: AgentId,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>> {
        self.recent_outputs_since(owner, agent, None, before, limit)
    }
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
