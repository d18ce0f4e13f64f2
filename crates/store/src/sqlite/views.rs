//! Read-only views of a family's runs on SQLite, for the owner's dashboard: a script's runs
//! with their outcomes and outputs, and the family's runs per day. Free functions over the
//! connection, so the backend's `impl Store` only delegates to them.

use super::SqliteStore;
use crate::RunViews;
use crate::sqlite_and_postgres_sql as sql;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::common::parse_map;
use crate::{
    AgentId, DAY_MILLIS, DayRuns, Millis, Outcome, OwnerId, Result, RunFilter, ScriptRun, SkillId,
    StoreError,
};

/// These are reads: a full disk or a read-only folder cannot make them fail, so every error is
/// the database's.
fn read_err(err: rusqlite::Error) -> StoreError {
    StoreError::Database(err.to_string())
}

pub(crate) fn script_runs(
    conn: &Connection,
    owner: OwnerId,
    skill: SkillId,
    filter: &RunFilter,
    limit: usize,
    offset: usize,
) -> Result<Vec<ScriptRun>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let offset = i64::try_from(offset).unwrap_or(i64::MAX);
    let mut statement = conn
        .prepare_cached(
            "SELECT v.number, u.agent_id, u.at, u.ok, u.duration_ms, u.xp, u.items, u.goal_progress,
                    u.deaths, u.stuck, u.items_lost, u.failure, u.output, u.unmeasured, u.use_id
             FROM uses u JOIN versions v ON v.version_id = u.version_id
             WHERE u.owner_id = ?1 AND v.owner_id = ?1 AND v.skill_id = ?2
               AND (?3 IS NULL OR u.ok = ?3) AND (?4 IS NULL OR v.number = ?4)
               AND (?5 IS NULL OR u.agent_id = ?5)
             ORDER BY u.at DESC, u.use_id DESC LIMIT ?6 OFFSET ?7",
        )
        .map_err(read_err)?;
    statement
        .query_map(
            params![
                owner.0,
                skill.0,
                filter.ok,
                filter.version,
                filter.agent.map(|a| a.0),
                limit,
                offset
            ],
            run_from,
        )
        .map_err(read_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(read_err)
}

/// One run of a script by its use's id, with the skill it ran; `None` when the family has no
/// such run.
pub(crate) fn script_run(
    conn: &Connection,
    owner: OwnerId,
    use_id: i64,
) -> Result<Option<(SkillId, ScriptRun)>> {
    let mut statement = conn
        .prepare_cached(
            "SELECT v.number, u.agent_id, u.at, u.ok, u.duration_ms, u.xp, u.items, u.goal_progress,
                    u.deaths, u.stuck, u.items_lost, u.failure, u.output, u.unmeasured, u.use_id,
                    v.skill_id
             FROM uses u JOIN versions v ON v.version_id = u.version_id
             WHERE u.owner_id = ?1 AND v.owner_id = ?1 AND u.use_id = ?2",
        )
        .map_err(read_err)?;
    statement
        .query_row(params![owner.0, use_id], |r| {
            Ok((SkillId(r.get(15)?), run_from(r)?))
        })
        .optional()
        .map_err(read_err)
}

fn run_from(r: &Row<'_>) -> rusqlite::Result<ScriptRun> {
    Ok(ScriptRun {
        id: r.get(14)?,
        version: r.get(0)?,
        agent: r.get::<_, Option<i64>>(1)?.map(AgentId),
        outcome: Outcome {
            at: r.get(2)?,
            ok: r.get(3)?,
            duration_ms: r.get::<_, i64>(4)?.max(0).unsigned_abs(),
            xp: parse_map(r.get(5)?),
            items: parse_map(r.get(6)?),
            goal_progress: r.get(7)?,
            deaths: u32::try_from(r.get::<_, i64>(8)?.max(0)).unwrap_or(u32::MAX),
            stuck: r.get(9)?,
            items_lost: u32::try_from(r.get::<_, i64>(10)?.max(0)).unwrap_or(u32::MAX),
            failure: r.get(11)?,
            unmeasured: r.get(13)?,
        },
        output: r.get(12)?,
    })
}

pub(crate) fn runs_per_day(
    conn: &Connection,
    owner: OwnerId,
    since: Millis,
) -> Result<Vec<DayRuns>> {
    // `at` is never negative, so SQLite's integer division rounds to the day the run was in,
    // as PostgreSQL's does.
    let mut statement = conn
        .prepare_cached(
            "SELECT u.at / ?3 AS day, u.agent_id, SUM(u.ok), SUM(1 - u.ok) FROM uses u
             WHERE u.owner_id = ?1 AND u.at >= ?2
             GROUP BY day, u.agent_id ORDER BY day, u.agent_id NULLS FIRST",
        )
        .map_err(read_err)?;
    statement
        .query_map(params![owner.0, since, DAY_MILLIS], |r| {
            Ok(DayRuns {
                day: r.get(0)?,
                agent: r.get::<_, Option<i64>>(1)?.map(AgentId),
                ok: r.get(2)?,
                failed: r.get(3)?,
            })
        })
        .map_err(read_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(read_err)
}

pub(crate) fn runs_between(
    conn: &Connection,
    owner: OwnerId,
    from: Millis,
    to: Millis,
) -> Result<Vec<crate::PeriodRuns>> {
    let mut statement = conn
        .prepare_cached(
            "SELECT u.agent_id, SUM(u.ok), SUM(1 - u.ok) FROM uses u
             WHERE u.owner_id = ?1 AND u.at >= ?2 AND u.at < ?3
             GROUP BY u.agent_id ORDER BY u.agent_id NULLS FIRST",
        )
        .map_err(read_err)?;
    statement
        .query_map(params![owner.0, from, to], |r| {
            Ok(crate::PeriodRuns {
                agent: r.get::<_, Option<i64>>(0)?.map(AgentId),
                ok: r.get(1)?,
                failed: r.get(2)?,
            })
        })
        .map_err(read_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(read_err)
}

pub(crate) fn gone_skills(
    conn: &Connection,
    owner: OwnerId,
    agent: AgentId,
) -> Result<Vec<SkillId>> {
    let mut statement = conn
        .prepare_cached(sql::GONE_SKILLS.sqlite())
        .map_err(read_err)?;
    statement
        .query_map(params![owner.0, agent.0], |r| Ok(SkillId(r.get(0)?)))
        .map_err(read_err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(read_err)
}

/// The library's file and its write-ahead log, together; `None` for an in-memory library (or
/// a file this process cannot see).
pub(crate) fn database_size(location: &str) -> Result<Option<u64>> {
    let size = |path: &str| std::fs::metadata(path).map(|m| m.len()).ok();
    Ok(size(location).map(|main| main + size(&format!("{location}-wal")).unwrap_or(0)))
}

impl RunViews for SqliteStore {
    fn script_runs_where(
        &self,
        owner: OwnerId,
        skill: SkillId,
        filter: &crate::RunFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<crate::ScriptRun>> {
        script_runs(&self.lock().conn, owner, skill, filter, limit, offset)
    }

    fn script_run(
        &self,
        owner: OwnerId,
        use_id: i64,
    ) -> Result<Option<(SkillId, crate::ScriptRun)>> {
        script_run(&self.lock().conn, owner, use_id)
    }

    fn gone_skills(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<SkillId>> {
        gone_skills(&self.lock().conn, owner, agent)
    }

    fn runs_per_day(&self, owner: OwnerId, since: Millis) -> Result<Vec<crate::DayRuns>> {
        runs_per_day(&self.lock().conn, owner, since)
    }

    fn runs_between(
        &self,
        owner: OwnerId,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<crate::PeriodRuns>> {
        runs_between(&self.lock().conn, owner, from, to)
    }

    fn database_size(&self) -> Result<Option<u64>> {
        database_size(&self.location)
    }
}
