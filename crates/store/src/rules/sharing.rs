//! What the family sees of a skill: sharing a version when it clears the bar, logging every
//! change of what the family sees, un-sharing a file that went, and the peers' median rate that
//! feeds a score.
//!
//! Architecture invariant: a version becomes shared only in [`share_if_qualified`], inside the
//! transaction of the use or the match that made it qualify.

use mindrune_core::PEER_MIN_USES;
use mindrune_core::SharingBar;

use super::{FamilyTx, SharingEvent};
use crate::common::{SharingState, sharing_change};
use crate::{AgentId, Millis, OwnerId, SharingChange, SkillId};

/// Marks the skill's current version shared when the file is headed and the version clears the
/// family's bar on its own runs.
pub(crate) fn share_if_qualified<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    skill: SkillId,
    now: Millis,
) -> Result<(), T::Error> {
    if let Some(candidate) = tx.share_candidate(owner, skill)?
        && SharingBar::for_family(candidate.eager_sharing)
            .cleared_by(candidate.uses, candidate.score)
    {
        tx.mark_version_shared(owner, candidate.version, now)?;
    }
    Ok(())
}

/// Compares what the family saw of a skill before a change with what it sees now, and logs
/// (and returns) the difference.
pub(crate) fn note_sharing_change<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    skill: SkillId,
    before: &SharingState,
    now: Millis,
) -> Result<Option<SharingChange>, T::Error> {
    let after = tx.sharing_state(owner, skill)?;
    if after == *before || (!before.visible && !after.visible) {
        return Ok(None);
    }
    let now_is = tx.skill_for_sharing_change(owner, skill)?;
    let (kind, version, reason) = sharing_change(
        before,
        &after,
        now_is.current,
        now_is.deleted,
        &now_is.header,
    );
    tx.log_sharing_change(
        owner,
        &SharingEvent {
            skill,
            agent: now_is.agent,
            version,
            kind,
            reason: &reason,
            at: now,
        },
    )?;
    Ok(Some(SharingChange {
        skill,
        label: now_is.label,
        kind,
        version,
        reason,
        at: now,
    }))
}

/// Shares every skill of the agent whose current version now clears the family's bar (after the
/// bar was lowered, or at a turn boundary); the changes in skill order.
pub(crate) fn share_qualified<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    agent: AgentId,
    now: Millis,
) -> Result<Vec<SharingChange>, T::Error> {
    // Only a version that clears even the lowest bar can qualify; share_if_qualified checks the
    // family's own.
    let lowest = SharingBar::lowest();
    let candidates = tx.unshared_skills_above(owner, agent, lowest.runs, lowest.score)?;
    let mut changes = Vec::new();
    for skill in candidates {
        let before = tx.sharing_state(owner, skill)?;
        share_if_qualified(tx, owner, skill, now)?;
        changes.extend(note_sharing_change(tx, owner, skill, &before, now)?);
    }
    Ok(changes)
}

/// Marks a skill's file gone; the family stops seeing it (its history stays).
pub(crate) fn mark_file_gone<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    skill: SkillId,
    now: Millis,
) -> Result<Option<SharingChange>, T::Error> {
    let before = tx.sharing_state(owner, skill)?;
    if tx.mark_skill_gone(owner, skill, now)? {
        note_sharing_change(tx, owner, skill, &before, now)
    } else {
        Ok(None)
    }
}

/// Median rate of the family's comparable skills: same measure, a shared tag, ≥ 3 uses.
pub(crate) fn peer_median_rate<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    skill: SkillId,
    measure_key: &str,
) -> Result<Option<f64>, T::Error> {
    let rates = tx.peer_rates(owner, skill, measure_key, PEER_MIN_USES as i64)?;
    Ok(mindrune_core::peer_median_rate(rates))
}
