//! A family's skills, versions, uses and snippets on SQLite: looking them up, and an agent's
//! inline snippets with the suggestions made from them. Recording is a rule (`crate::rules`).

use crate::sqlite_and_postgres_sql as sql;
use crate::{Recording, SkillRecords};
use std::collections::HashMap;

use rusqlite::params;

use super::family_tx::SqliteTx;
use super::rows::{skill_from, snippet_from, version_from_at};
use super::{SNIPPET_RUNS_SINCE, SqliteStore, db_err};
use crate::common::{
    SKILL_COLUMN_COUNT, SKILL_COLUMNS, SNIPPET_COLUMNS, VERSION_COLUMN_COUNT, VERSION_COLUMNS,
};
use crate::rules::FamilyTx as _;
use crate::{
    AgentId, FailedRun, Millis, OwnerId, Result, RunTotals, Skill, SkillEntry, SkillId, Snippet,
    SnippetId, SnippetRuns, UnmeasuredScope, Version, VersionId,
};

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
