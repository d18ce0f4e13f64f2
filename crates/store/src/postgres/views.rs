//! Read-only views of a family's runs on PostgreSQL, for the owner's dashboard; each does what
//! the function of the same name in `sqlite::views` does, with the same results and order.

use super::rows::{all, col};
use super::{PgResult, PgStore};
use crate::RunViews;
use crate::common::parse_map;
use crate::sqlite_and_postgres_sql as sql;
use crate::{
    AgentId, DAY_MILLIS, DayRuns, Millis, Outcome, OwnerId, Result, RunFilter, ScriptRun, SkillId,
};

fn run_from(row: &postgres::Row) -> PgResult<ScriptRun> {
    Ok(ScriptRun {
        id: col(row, 14)?,
        version: col(row, 0)?,
        agent: col::<Option<i64>>(row, 1)?.map(AgentId),
        outcome: Outcome {
            at: col(row, 2)?,
            ok: col(row, 3)?,
            duration_ms: col::<i64>(row, 4)?.max(0).unsigned_abs(),
            xp: parse_map(col(row, 5)?),
            items: parse_map(col(row, 6)?),
            goal_progress: col(row, 7)?,
            deaths: u32::try_from(col::<i64>(row, 8)?.max(0)).unwrap_or(u32::MAX),
            stuck: col(row, 9)?,
            items_lost: u32::try_from(col::<i64>(row, 10)?.max(0)).unwrap_or(u32::MAX),
            failure: col(row, 11)?,
            unmeasured: col(row, 13)?,
        },
        output: col(row, 12)?,
    })
}

impl RunViews for PgStore {
    fn script_runs_where(
        &self,
        owner: OwnerId,
        skill: SkillId,
        filter: &RunFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ScriptRun>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let agent = filter.agent.map(|a| a.0);
        self.read(|tx| {
            let rows = tx.query(
                "SELECT v.number, u.agent_id, u.at, u.ok, u.duration_ms, u.xp, u.items, u.goal_progress,
                        u.deaths, u.stuck, u.items_lost, u.failure, u.output, u.unmeasured, u.use_id
                 FROM uses u JOIN versions v ON v.owner_id = u.owner_id AND v.version_id = u.version_id
                 WHERE u.owner_id = $1 AND v.skill_id = $2
                   AND ($3::BOOLEAN IS NULL OR u.ok = $3::BOOLEAN)
                   AND ($4::BIGINT IS NULL OR v.number = $4::BIGINT)
                   AND ($5::BIGINT IS NULL OR u.agent_id = $5::BIGINT)
                 ORDER BY u.at DESC, u.use_id DESC LIMIT $6 OFFSET $7",
                &[
                    &owner.0,
                    &skill.0,
                    &filter.ok,
                    &filter.version,
                    &agent,
                    &limit,
                    &offset,
                ],
            )?;
            all(rows, run_from)
        })
    }

    /// One run of a script by its use's id, with the skill it ran; `None` when the family has no
    /// such run.
    fn script_run(&self, owner: OwnerId, use_id: i64) -> Result<Option<(SkillId, ScriptRun)>> {
        self.read(|tx| {
            let rows = tx.query(
                "SELECT v.number, u.agent_id, u.at, u.ok, u.duration_ms, u.xp, u.items, u.goal_progress,
                        u.deaths, u.stuck, u.items_lost, u.failure, u.output, u.unmeasured, u.use_id,
                        v.skill_id
                 FROM uses u JOIN versions v ON v.owner_id = u.owner_id AND v.version_id = u.version_id
                 WHERE u.owner_id = $1 AND u.use_id = $2",
                &[&owner.0, &use_id],
            )?;
            let found = all(rows, |row| Ok((SkillId(col(row, 15)?), run_from(row)?)))?;
            Ok(found.into_iter().next())
        })
    }

    fn gone_skills(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<SkillId>> {
        self.read(|tx| {
            let rows = tx.query(sql::GONE_SKILLS.postgres(), &[&owner.0, &agent.0])?;
            all(rows, |row| Ok(SkillId(col(row, 0)?)))
        })
    }

    fn runs_per_day(&self, owner: OwnerId, since: Millis) -> Result<Vec<DayRuns>> {
        self.read(|tx| {
            let rows = tx.query(
                "SELECT u.at / $3 AS day, u.agent_id,
                        COUNT(*) FILTER (WHERE u.ok), COUNT(*) FILTER (WHERE NOT u.ok)
                 FROM uses u WHERE u.owner_id = $1 AND u.at >= $2
                 GROUP BY day, u.agent_id ORDER BY day, u.agent_id NULLS FIRST",
                &[&owner.0, &since, &DAY_MILLIS],
            )?;
            all(rows, |row| {
                Ok(DayRuns {
                    day: col(row, 0)?,
                    agent: col::<Option<i64>>(row, 1)?.map(AgentId),
                    ok: col(row, 2)?,
                    failed: col(row, 3)?,
                })
            })
        })
    }

    fn runs_between(
        &self,
        owner: OwnerId,
        from: Millis,
        to: Millis,
    ) -> Result<Vec<crate::PeriodRuns>> {
        self.read(|tx| {
            let rows = tx.query(
                "SELECT u.agent_id, COUNT(*) FILTER (WHERE u.ok), COUNT(*) FILTER (WHERE NOT u.ok)
                 FROM uses u WHERE u.owner_id = $1 AND u.at >= $2 AND u.at < $3
                 GROUP BY u.agent_id ORDER BY u.agent_id NULLS FIRST",
                &[&owner.0, &from, &to],
            )?;
            all(rows, |row| {
                Ok(crate::PeriodRuns {
                    agent: col::<Option<i64>>(row, 0)?.map(AgentId),
                    ok: col(row, 1)?,
                    failed: col(row, 2)?,
                })
            })
        })
    }

    fn database_size(&self) -> Result<Option<u64>> {
        self.read(|tx| {
            let rows = tx.query("SELECT pg_database_size(current_database())", &[])?;
            let bytes: i64 = col(&rows[0], 0)?;
            Ok(u64::try_from(bytes).ok())
        })
    }
}
