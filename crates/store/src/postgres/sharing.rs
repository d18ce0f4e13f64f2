//! What the family sees of a skill, inside a family's write transaction: whether it is shared,
//! sharing it when its current version clears the bar, logging a change, and the peers' median
//! rate that feeds a score. The same rules as the SQLite backend's, in PostgreSQL's SQL.

use super::conn::Tx;
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_core::score;

use super::PgResult;
use super::rows::col;
pub(super) use crate::common::SharingState;
use crate::common::sharing_change;
use crate::{Millis, OwnerId, SharingChange, SkillId};

pub(super) fn sharing_state(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    skill: SkillId,
) -> PgResult<SharingState> {
    let row = tx.query_opt(
        "SELECT s.header = 'skill' AND s.deleted_at IS NULL,
                (SELECT MAX(v.number) FROM versions v
                  WHERE v.owner_id = s.owner_id AND v.skill_id = s.skill_id AND v.shared_at IS NOT NULL)
         FROM skills s WHERE s.owner_id = $1 AND s.skill_id = $2",
        &[&owner.0, &skill.0],
    )?;
    let Some(row) = row else {
        return Ok(SharingState::default());
    };
    let headed: bool = col(&row, 0)?;
    let newest_shared: Option<i64> = col(&row, 1)?;
    Ok(SharingState {
        visible: headed && newest_shared.is_some(),
        newest_shared,
    })
}

/// Marks the skill's current version shared when the file is headed and the version clears the
/// family's bar on its own runs.
pub(super) fn share_if_qualified(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    skill: SkillId,
    now: Millis,
) -> PgResult<()> {
    let candidate = tx.query_opt(
        "SELECT v.version_id, v.uses, v.score, o.eager_sharing
         FROM skills s
         JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
         JOIN owners o ON o.owner_id = s.owner_id
         WHERE s.owner_id = $1 AND s.skill_id = $2 AND s.header = 'skill' AND s.deleted_at IS NULL
           AND v.shared_at IS NULL",
        &[&owner.0, &skill.0],
    )?;
    if let Some(row) = candidate {
        let version: i64 = col(&row, 0)?;
        let uses: i64 = col(&row, 1)?;
        let score: f64 = col(&row, 2)?;
        let eager: bool = col(&row, 3)?;
        if SharingBar::for_family(eager).cleared_by(uses, score) {
            tx.execute(
                "UPDATE versions SET shared_at = $3 WHERE owner_id = $1 AND version_id = $2",
                &[&owner.0, &version, &now],
            )?;
        }
    }
    Ok(())
}

/// Compares what the family saw of a skill before a change with what it sees now, and logs
/// (and returns) the difference.
pub(super) fn note_sharing_change(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    skill: SkillId,
    before: &SharingState,
    now: Millis,
) -> PgResult<Option<SharingChange>> {
    let after = sharing_state(tx, owner, skill)?;
    if after == *before || (!before.visible && !after.visible) {
        return Ok(None);
    }
    let row = tx.query_one(
        "SELECT s.agent_id, s.agent_name || '/' || s.name, s.header, s.deleted_at IS NOT NULL,
                v.number, v.uses, v.score
         FROM skills s LEFT JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
         WHERE s.owner_id = $1 AND s.skill_id = $2",
        &[&owner.0, &skill.0],
    )?;
    let agent: Option<i64> = col(&row, 0)?;
    let label: String = col(&row, 1)?;
    let header: &str = col(&row, 2)?;
    let deleted: bool = col(&row, 3)?;
    let number: Option<i64> = col(&row, 4)?;
    let current = match number {
        Some(n) => Some((n, col::<i64>(&row, 5)?, col::<f64>(&row, 6)?)),
        None => None,
    };
    let (kind, version, reason) = sharing_change(before, &after, current, deleted, header);
    tx.execute(
        "INSERT INTO sharing_events (owner_id, skill_id, agent_id, version_number, kind, reason, at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[
            &owner.0,
            &skill.0,
            &agent,
            &version,
            &kind.as_str(),
            &reason,
            &now,
        ],
    )?;
    Ok(Some(SharingChange {
        skill,
        label,
        kind,
        version,
        reason,
        at: now,
    }))
}

/// Median rate of the family's comparable skills: same measure, a shared tag, ≥ 3 uses.
pub(super) fn peer_median_rate(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    skill: SkillId,
    measure_key: &str,
) -> PgResult<Option<f64>> {
    let rows = tx.query(
        "SELECT v.rate_per_minute FROM skills s
         JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
         WHERE s.owner_id = $1 AND s.deleted_at IS NULL
           AND s.skill_id IN (SELECT peer.skill_id FROM skill_tags mine
                              JOIN skill_tags peer ON peer.owner_id = mine.owner_id AND peer.tag = mine.tag
                              WHERE mine.owner_id = $1 AND mine.skill_id = $2 AND peer.skill_id <> $2)
           AND v.measure_key = $3 AND v.uses >= 3",
        &[&owner.0, &skill.0, &measure_key],
    )?;
    let rates = rows
        .iter()
        .map(|row| col::<f64>(row, 0))
        .collect::<PgResult<Vec<f64>>>()?;
    Ok(score::peer_median_rate(rates))
}

/// A skill's tags, sorted.
pub(super) fn skill_tags(tx: &mut Tx<'_>, owner: OwnerId, skill: SkillId) -> PgResult<Vec<String>> {
    tx.query(
        "SELECT tag FROM skill_tags WHERE owner_id = $1 AND skill_id = $2 ORDER BY tag COLLATE \"C\"",
        &[&owner.0, &skill.0],
    )?
    .iter()
    .map(|row| col::<String>(row, 0))
    .collect()
}
