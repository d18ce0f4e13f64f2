//! SQLite rows as the store's types.

use rusqlite::Row;

use crate::common::lines_of;
use crate::{
    Agent, AgentId, HeaderState, Lineage, Owner, OwnerId, Skill, SkillHeader, SkillId, Snippet,
    SnippetId, Version, VersionId,
};

pub(crate) fn owner_from(row: &Row<'_>) -> rusqlite::Result<Owner> {
    Ok(Owner {
        id: OwnerId(row.get(0)?),
        name: row.get(1)?,
        key_digest: row.get(2)?,
        eager_sharing: row.get(3)?,
        created_at: row.get(4)?,
    })
}

pub(crate) fn agent_from(row: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        id: AgentId(row.get(0)?),
        owner: OwnerId(row.get(1)?),
        name: row.get(2)?,
        workspace: row.get(3)?,
        created_at: row.get(4)?,
        mirror_refreshed_at: row.get(5)?,
        last_turn_at: row.get(6)?,
        last_wrapup_at: row.get(7)?,
        mirror: row.get(8)?,
    })
}

pub(crate) fn skill_from(row: &Row<'_>) -> rusqlite::Result<Skill> {
    Ok(Skill {
        id: SkillId(row.get(0)?),
        owner: OwnerId(row.get(1)?),
        agent: row.get::<_, Option<i64>>(2)?.map(AgentId),
        agent_name: row.get(3)?,
        name: row.get(4)?,
        path: row.get(5)?,
        kind: row.get(6)?,
        current_version: row.get::<_, Option<i64>>(7)?.map(VersionId),
        created_at: row.get(8)?,
        deleted_at: row.get(9)?,
        tags: lines_of(row.get(10)?),
        header: SkillHeader {
            state: HeaderState::parse(&row.get::<_, String>(11)?),
            goal: row.get(12)?,
            preconditions: row.get(13)?,
            params: row.get(14)?,
            result: row.get(15)?,
            from: row.get(16)?,
            topics: lines_of(row.get(17)?),
        },
        file_digest: row.get(18)?,
    })
}

pub(crate) fn version_from_at(row: &Row<'_>, base: usize) -> rusqlite::Result<Version> {
    let breakdown: Option<String> = row.get(base + 12)?;
    let lineage: Option<String> = row.get(base + 7)?;
    Ok(Version {
        id: VersionId(row.get(base)?),
        owner: OwnerId(row.get(base + 1)?),
        skill: SkillId(row.get(base + 2)?),
        number: row.get(base + 3)?,
        digest: row.get(base + 4)?,
        code: row.get(base + 5)?,
        parent: row.get::<_, Option<i64>>(base + 6)?.map(VersionId),
        lineage: lineage.as_deref().and_then(Lineage::parse),
        inherited: row.get(base + 8)?,
        uses: row.get(base + 9)?,
        ok: row.get(base + 10)?,
        score: row.get(base + 11)?,
        breakdown: breakdown.and_then(|json| serde_json::from_str(&json).ok()),
        measure_key: row.get(base + 13)?,
        rate_per_minute: row.get(base + 14)?,
        created_at: row.get(base + 15)?,
        last_used_at: row.get(base + 16)?,
        shared_at: row.get(base + 17)?,
    })
}

pub(crate) fn version_from(row: &Row<'_>) -> rusqlite::Result<Version> {
    version_from_at(row, 0)
}

pub(crate) fn snippet_from(row: &Row<'_>) -> rusqlite::Result<Snippet> {
    Ok(Snippet {
        id: SnippetId(row.get(0)?),
        agent: row.get::<_, Option<i64>>(1)?.map(AgentId),
        digest: row.get(2)?,
        code: row.get(3)?,
        uses: row.get(4)?,
        ok: row.get(5)?,
        first_at: row.get(6)?,
        last_used_at: row.get(7)?,
    })
}
