//! PostgreSQL rows as the store's types. Every read uses `try_get`, which reports a column of an
//! unexpected type as an error where `get` would panic.

use postgres::Row;
use postgres::types::FromSql;

use super::PgResult;
use mindrune_core::UseSample;

pub(crate) use crate::common::{
    AGENT_COLUMNS, OWNER_COLUMNS, SKILL_COLUMN_COUNT, SKILL_COLUMNS, SNIPPET_COLUMNS,
    VERSION_COLUMN_COUNT, VERSION_COLUMNS,
};
use crate::common::{lines_of, parse_map};
use crate::rules::VersionRow;
use crate::{
    Agent, AgentId, HeaderState, Lineage, Owner, OwnerId, Skill, SkillHeader, SkillId, Snippet,
    SnippetId, Version, VersionId,
};

/// What a use needs of its version (`rules::VersionRow`), from `versions v` joined to its
/// skill `s` and owner `o`; read by [`version_row_at`].
pub(crate) const VERSION_ROW_COLUMNS: &str =
    "v.skill_id, v.number, v.uses, v.ok, v.score, v.inherited, v.measure_key, v.peer_rate,
     v.peer_checked_uses, s.tags,
     COALESCE(s.header = 'skill' AND s.deleted_at IS NULL AND s.current_version_id = v.version_id
              AND v.shared_at IS NULL, FALSE),
     o.eager_sharing";

/// A use as a score window's sample, from `uses`; read by [`sample_at`].
pub(crate) const SAMPLE_COLUMNS: &str =
    "at, ok, agent_id, duration_ms, xp, items, goal_progress, deaths, stuck, items_lost";

/// The [`VERSION_ROW_COLUMNS`] starting at column `at`.
pub(crate) fn version_row_at(row: &Row, at: usize) -> PgResult<VersionRow> {
    Ok(VersionRow {
        skill: SkillId(col(row, at)?),
        number: col(row, at + 1)?,
        uses: col(row, at + 2)?,
        ok: col(row, at + 3)?,
        score: col(row, at + 4)?,
        inherited: col(row, at + 5)?,
        measure_key: col(row, at + 6)?,
        peer_rate: col(row, at + 7)?,
        peer_checked_uses: col(row, at + 8)?,
        tags: col(row, at + 9)?,
        may_share: col(row, at + 10)?,
        eager_sharing: col(row, at + 11)?,
    })
}

/// The [`SAMPLE_COLUMNS`] starting at column `at`.
pub(crate) fn sample_at(row: &Row, at: usize) -> PgResult<UseSample> {
    Ok(UseSample {
        at: col::<i64>(row, at)?.div_euclid(1000),
        ok: col(row, at + 1)?,
        agent: col::<Option<i64>>(row, at + 2)?.unwrap_or(0),
        duration_ms: col::<i64>(row, at + 3)?.max(0) as u64,
        xp: parse_map(col(row, at + 4)?),
        items: parse_map(col(row, at + 5)?),
        goal_progress: col(row, at + 6)?,
        deaths: col::<i64>(row, at + 7)?.clamp(0, i64::from(u32::MAX)) as u32,
        stuck: col(row, at + 8)?,
        items_lost: col::<i64>(row, at + 9)?.clamp(0, i64::from(u32::MAX)) as u32,
    })
}

/// One column, by index.
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, index: usize) -> PgResult<T> {
    Ok(row.try_get(index)?)
}

pub(crate) fn owner_from(row: &Row) -> PgResult<Owner> {
    Ok(Owner {
        id: OwnerId(col(row, 0)?),
        name: col(row, 1)?,
        key_digest: col(row, 2)?,
        eager_sharing: col(row, 3)?,
        created_at: col(row, 4)?,
    })
}

pub(crate) fn agent_from(row: &Row) -> PgResult<Agent> {
    Ok(Agent {
        id: AgentId(col(row, 0)?),
        owner: OwnerId(col(row, 1)?),
        name: col(row, 2)?,
        workspace: col(row, 3)?,
        created_at: col(row, 4)?,
        mirror_refreshed_at: col(row, 5)?,
        last_turn_at: col(row, 6)?,
        last_wrapup_at: col(row, 7)?,
        mirror: col(row, 8)?,
    })
}

/// A skill from `SKILL_COLUMNS` starting at column `base`.
pub(crate) fn skill_from_at(row: &Row, base: usize) -> PgResult<Skill> {
    Ok(Skill {
        id: SkillId(col(row, base)?),
        owner: OwnerId(col(row, base + 1)?),
        agent: col::<Option<i64>>(row, base + 2)?.map(AgentId),
        agent_name: col(row, base + 3)?,
        name: col(row, base + 4)?,
        path: col(row, base + 5)?,
        kind: col(row, base + 6)?,
        current_version: col::<Option<i64>>(row, base + 7)?.map(VersionId),
        created_at: col(row, base + 8)?,
        deleted_at: col(row, base + 9)?,
        tags: lines_of(col(row, base + 10)?),
        header: SkillHeader {
            state: HeaderState::parse(col(row, base + 11)?),
            goal: col(row, base + 12)?,
            preconditions: col(row, base + 13)?,
            params: col(row, base + 14)?,
            result: col(row, base + 15)?,
            from: col(row, base + 16)?,
            topics: lines_of(col(row, base + 17)?),
        },
        file_digest: col(row, base + 18)?,
    })
}

pub(crate) fn skill_from(row: &Row) -> PgResult<Skill> {
    skill_from_at(row, 0)
}

/// A version from `VERSION_COLUMNS` starting at column `base`.
pub(crate) fn version_from_at(row: &Row, base: usize) -> PgResult<Version> {
    let breakdown: Option<String> = col(row, base + 12)?;
    let lineage: Option<&str> = col(row, base + 7)?;
    Ok(Version {
        id: VersionId(col(row, base)?),
        owner: OwnerId(col(row, base + 1)?),
        skill: SkillId(col(row, base + 2)?),
        number: col(row, base + 3)?,
        digest: col(row, base + 4)?,
        code: col(row, base + 5)?,
        parent: col::<Option<i64>>(row, base + 6)?.map(VersionId),
        lineage: lineage.and_then(Lineage::parse),
        inherited: col(row, base + 8)?,
        uses: col(row, base + 9)?,
        ok: col(row, base + 10)?,
        score: col(row, base + 11)?,
        breakdown: breakdown.and_then(|json| serde_json::from_str(&json).ok()),
        measure_key: col(row, base + 13)?,
        rate_per_minute: col(row, base + 14)?,
        created_at: col(row, base + 15)?,
        last_used_at: col(row, base + 16)?,
        shared_at: col(row, base + 17)?,
    })
}

pub(crate) fn version_from(row: &Row) -> PgResult<Version> {
    version_from_at(row, 0)
}

/// A snippet from `SNIPPET_COLUMNS`.
pub(crate) fn snippet_from(row: &Row) -> PgResult<Snippet> {
    Ok(Snippet {
        id: SnippetId(col(row, 0)?),
        agent: col::<Option<i64>>(row, 1)?.map(AgentId),
        digest: col(row, 2)?,
        code: col(row, 3)?,
        uses: col(row, 4)?,
        ok: col(row, 5)?,
        first_at: col(row, 6)?,
        last_used_at: col(row, 7)?,
    })
}

/// Every row, mapped.
pub(crate) fn all<T>(rows: Vec<Row>, map: impl Fn(&Row) -> PgResult<T>) -> PgResult<Vec<T>> {
    rows.iter().map(map).collect()
}
