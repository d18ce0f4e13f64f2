//! A family's skills, versions, uses and snippets on PostgreSQL: looking them up, matching a
//! script file to its skill and version, recording a use and rescoring its version, and an
//! agent's inline snippets with the suggestions made from them.
//!
//! Each function does what the SQLite backend's method of the same name does, with the same
//! results, errors and ordering. Writes run through [`PgStore::write`], under the family's
//! lock, so they see each other's results as SQLite's writers do; reads run in one snapshot.
//! Every statement filters each family table it touches by the owner. Text is ordered with the
//! `C` collation (byte by byte, as SQLite orders it), whatever the database's own collation is.
//! A row that may already exist is looked up before it is inserted, not inserted with
//! `ON CONFLICT DO NOTHING`: a conflicting insert would still use up an id of the identity, and
//! SQLite's ids have no such gaps.
//!
//! Recording a use keeps each version's score window in memory between transactions, as the
//! SQLite backend does (`PgStore::windows`), but not its row: several server processes may
//! record uses of one version, so each use reads its version's row inside the family's
//! transaction and takes the kept window only when the row's use count is the window's; else it
//! reads the window from `uses` (one range of the `uses_window` index). A write group, which
//! holds its families' locks until it commits, also keeps rows for its own length
//! (`Group::windows` in `mod.rs`).

use crate::sqlite_and_postgres_sql as sql;
use crate::{Recording, SkillRecords};
use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;

use postgres::Row;

use super::conn::Tx;
use mindrune_core::{SCORE_WINDOW, UseSample};

use super::rows::{
    SAMPLE_COLUMNS, SKILL_COLUMN_COUNT, SKILL_COLUMNS, SNIPPET_COLUMNS, VERSION_COLUMN_COUNT,
    VERSION_COLUMNS, VERSION_ROW_COLUMNS, all, col, sample_at, skill_from, snippet_from,
    version_from_at, version_row_at,
};
use super::{PgResult, PgStore};
use crate::rules::{FamilyTx, VersionRow};
use crate::{
    AgentId, FailedRun, Millis, OwnerId, Result, RunTotals, Skill, SkillEntry, SkillId, Snippet,
    SnippetId, SnippetRuns, UnmeasuredScope, Version, VersionId,
};

/// Each snippet of an agent run since a time, with its runs since then, most recently run
/// first. `last_used_at` is the newest use's time, so snippets not run since are skipped before
/// their uses are read; the owner is checked on both tables.
const SNIPPET_RUNS_SINCE: &str =
    "SELECT s.snippet_id, s.digest, s.code, COUNT(*) FILTER (WHERE u.ok), COUNT(*), MAX(u.at)
     FROM snippets s JOIN snippet_uses u ON u.snippet_id = s.snippet_id AND u.owner_id = s.owner_id
     WHERE s.owner_id = $1 AND u.owner_id = $1 AND s.agent_id = $2 AND s.last_used_at >= $3
       AND u.at >= $3
     GROUP BY s.snippet_id, s.digest, s.code
     ORDER BY MAX(u.at) DESC, s.snippet_id";

/// A version's newest uses (newest first), as the score reads them.
pub(super) fn read_window(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    version: VersionId,
) -> PgResult<Vec<UseSample>> {
    let rows = tx.query_of_version(
        version.0,
        &format!(
            "SELECT {SAMPLE_COLUMNS} FROM uses WHERE owner_id = $1 AND version_id = $2
             ORDER BY at DESC, use_id DESC LIMIT $3"
        ),
        &[&owner.0, &version.0, &(SCORE_WINDOW as i64)],
    )?;
    all(rows, |row| sample_at(row, 0))
}

/// Versions' rows ([`VERSION_ROW_COLUMNS`]) and score windows in one query: `$1` the owner,
/// `$2` the versions' ids, `$3` the window's size. A row per use in a window (the version's
/// columns repeated), or one with NULLs for a version never used; read by
/// [`versions_with_windows`].
pub(super) static VERSIONS_WITH_WINDOWS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT v.version_id, {VERSION_ROW_COLUMNS}, w.*
         FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
         JOIN owners o ON o.owner_id = v.owner_id
         LEFT JOIN LATERAL (
             SELECT {SAMPLE_COLUMNS}, use_id FROM uses
             WHERE owner_id = $1 AND version_id = v.version_id
             ORDER BY at DESC, use_id DESC LIMIT $3) w ON TRUE
         WHERE v.owner_id = $1 AND s.owner_id = $1 AND v.version_id = ANY($2)
         ORDER BY v.version_id, w.at DESC, w.use_id DESC"
    )
});

/// Each version [`VERSIONS_WITH_WINDOWS`] found, its row and its window (newest first).
pub(super) fn versions_with_windows(
    rows: &[Row],
) -> PgResult<Vec<(i64, VersionRow, VecDeque<UseSample>)>> {
    // The version's columns, then its window's.
    const WINDOW_AT: usize = 13;
    let mut read: Vec<(i64, VersionRow, VecDeque<UseSample>)> = Vec::new();
    for row in rows {
        let version: i64 = col(row, 0)?;
        if read.last().is_none_or(|(last, _, _)| *last != version) {
            read.push((version, version_row_at(row, 1)?, VecDeque::new()));
        }
        if col::<Option<i64>>(row, WINDOW_AT)?.is_some()
            && let Some((_, _, samples)) = read.last_mut()
        {
            samples.push_back(sample_at(row, WINDOW_AT)?);
        }
    }
    Ok(read)
}

impl SkillRecords for PgStore {
    fn skill(&self, owner: OwnerId, skill: SkillId) -> Result<Skill> {
        self.read(|tx| tx.skill(owner, skill))
    }

    fn version(&self, owner: OwnerId, version: VersionId) -> Result<Version> {
        self.read(|tx| tx.version(owner, version))
    }

    fn snippets(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<Snippet>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!(
                    "SELECT {SNIPPET_COLUMNS} FROM snippets
                     WHERE owner_id = $1 AND agent_id = $2 ORDER BY last_used_at DESC, digest COLLATE \"C\""
                ),
                &[&owner.0, &agent.0],
            )?;
            all(rows, snippet_from)
        })
    }

    fn snippet_runs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SnippetRuns>> {
        self.read(|tx| {
            let rows = tx.query(SNIPPET_RUNS_SINCE, &[&owner.0, &agent.0, &since])?;
            all(rows, |r| {
                Ok(SnippetRuns {
                    snippet: SnippetId(col(r, 0)?),
                    digest: col(r, 1)?,
                    code: col(r, 2)?,
                    ok: col(r, 3)?,
                    runs: col(r, 4)?,
                    last_run_at: col(r, 5)?,
                })
            })
        })
    }

    fn skills(&self, owner: OwnerId, agent: Option<AgentId>) -> Result<Vec<SkillEntry>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!(
                    "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS},
                            (SELECT COUNT(*) FROM versions c WHERE c.owner_id = $1 AND c.skill_id = s.skill_id),
                            (SELECT COALESCE(SUM(c.uses), 0)::bigint FROM versions c
                              WHERE c.owner_id = $1 AND c.skill_id = s.skill_id),
                            s.header = 'skill' AND EXISTS (SELECT 1 FROM versions x WHERE x.owner_id = $1
                                AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                     FROM skills s JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
                     WHERE s.owner_id = $1 AND v.owner_id = $1 AND ($2::bigint IS NULL OR s.agent_id = $2)
                       AND s.deleted_at IS NULL
                     ORDER BY v.score DESC, s.agent_name COLLATE \"C\", s.name COLLATE \"C\""
                ),
                &[&owner.0, &agent.map(|a| a.0)],
            )?;
            let base = SKILL_COLUMN_COUNT + VERSION_COLUMN_COUNT;
            all(rows, |row| {
                Ok(SkillEntry {
                    skill: skill_from(row)?,
                    version: version_from_at(row, SKILL_COLUMN_COUNT)?,
                    version_count: col(row, base)?,
                    total_runs: col(row, base + 1)?,
                    // Which other version is best is asked at a clock:
                    // `display::skills_as_of`.
                    best: None,
                    family: col(row, base + 2)?,
                })
            })
        })
    }

    fn use_count(&self, owner: OwnerId) -> Result<i64> {
        self.read(|tx| col(&tx.query_one(sql::USE_COUNT.postgres(), &[&owner.0])?, 0))
    }

    fn recent_failures(
        &self,
        owner: OwnerId,
        skill: SkillId,
        limit: usize,
    ) -> Result<Vec<FailedRun>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            let rows = tx.query(
                "SELECT v.number, u.at, u.failure FROM uses u
                 JOIN versions v ON v.owner_id = u.owner_id AND v.version_id = u.version_id
                 WHERE u.owner_id = $1 AND v.skill_id = $2 AND NOT u.ok
                 ORDER BY u.at DESC, u.use_id DESC LIMIT $3",
                &[&owner.0, &skill.0, &limit],
            )?;
            all(rows, |row| {
                Ok(FailedRun {
                    version: col(row, 0)?,
                    at: col(row, 1)?,
                    failure: col(row, 2)?,
                })
            })
        })
    }

    fn snippet_suggestions(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<HashMap<String, i64>> {
        self.read(|tx| {
            let rows = tx.query(
                sql::SNIPPET_SUGGESTIONS.postgres(),
                &[&owner.0, &agent.0, &since],
            )?;
            rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
        })
    }

    fn note_snippet_suggestion(
        &self,
        owner: OwnerId,
        agent: AgentId,
        group_key: &str,
        runs: i64,
        at: Millis,
    ) -> Result<()> {
        self.write(owner, |tx| {
            // An unknown agent stores nothing, as on SQLite.
            tx.execute(
                "INSERT INTO snippet_suggestions (owner_id, agent_id, group_key, suggested_at, suggested_runs)
                 SELECT owner_id, agent_id, $3::text, $4::bigint, $5::bigint FROM agents WHERE owner_id = $1 AND agent_id = $2
                 ON CONFLICT (owner_id, agent_id, group_key)
                 DO UPDATE SET suggested_at = EXCLUDED.suggested_at, suggested_runs = EXCLUDED.suggested_runs",
                &[&owner.0, &agent.0, &group_key, &at, &runs],
            )?;
            Ok(())
        })
    }

    fn unmeasured_runs(
        &self,
        owner: OwnerId,
        scope: UnmeasuredScope,
    ) -> Result<Vec<(String, i64)>> {
        let (sql, id, since) = match scope {
            UnmeasuredScope::AgentSince(agent, since) => {
                (sql::UNMEASURED_RUNS_OF_AGENT.postgres(), agent.0, since)
            }
            UnmeasuredScope::Skill(skill) => (
                sql::UNMEASURED_RUNS_OF_SKILL.postgres(),
                skill.0,
                Millis::MIN,
            ),
        };
        self.read(|tx| {
            let rows = tx.query(sql, &[&owner.0, &id, &since])?;
            rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
        })
    }

    fn run_totals(&self, owner: OwnerId) -> Result<RunTotals> {
        self.read_one(|tx| {
            let row = tx.query_one(
                "SELECT COALESCE(SUM(ok), 0)::BIGINT, COALESCE(SUM(uses), 0)::BIGINT FROM versions
                 WHERE owner_id = $1",
                &[&owner.0],
            )?;
            let (ok, runs): (i64, i64) = (col(&row, 0)?, col(&row, 1)?);
            Ok(RunTotals {
                ok,
                failed: runs - ok,
            })
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
