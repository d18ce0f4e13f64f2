//! A family's lessons, deleting one of its agents, and the audit of its stored scores.

use std::collections::HashMap;

use super::{FamilyTx, NewLessonRow};
use crate::common::audit_version;
use crate::{AgentId, DeletedAgent, LessonsChange, Millis, NewLesson, OwnerId, VersionId};

/// Makes the agent's stored lessons the lab log's: lessons gone from the log are removed, kept
/// ones take their new line, new ones are added. One lesson per text (its digest).
pub(crate) fn replace_lessons<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    agent: AgentId,
    lessons: &[NewLesson],
    now: Millis,
) -> Result<LessonsChange, T::Error> {
    tx.agent(owner, agent)?;
    let mut wanted: HashMap<String, &NewLesson> = HashMap::new();
    for lesson in lessons {
        wanted
            .entry(mindrune_core::sha256(lesson.text.as_bytes()))
            .or_insert(lesson);
    }
    let existing: HashMap<String, String> = tx.lessons_of(owner, agent)?.into_iter().collect();
    let mut change = LessonsChange::default();
    for (digest, text) in &existing {
        if !wanted.contains_key(digest) {
            tx.delete_lesson(owner, agent, digest)?;
            change.removed.push(text.clone());
        }
    }
    // Lessons keep the order of the log: a line further down is newer.
    let mut fresh: Vec<(&String, &&NewLesson)> = wanted.iter().collect();
    fresh.sort_by_key(|(_, lesson)| lesson.line);
    for (digest, lesson) in fresh {
        let line = lesson.line as i64;
        if existing.contains_key(digest) {
            tx.set_lesson_line(owner, agent, digest, line)?;
            change.kept += 1;
        } else {
            tx.insert_lesson(
                owner,
                agent,
                &NewLessonRow {
                    digest,
                    text: &lesson.text,
                    line,
                    first_seen_at: now,
                },
            )?;
            change.added.push(lesson.text.clone());
        }
    }
    change.removed.sort();
    Ok(change)
}

/// The agent's skills that go: every one still linked to it once its shared skills are let go.
/// `?1` is the owner and `?2` the agent in every statement below.
const DOOMED_SKILLS: &str = "SELECT skill_id FROM skills WHERE owner_id = ?1 AND agent_id = ?2";

/// Lets go of the agent's shared skills: they stay with the family, linked to no agent.
const KEEP_SHARED_SKILLS: &str = "UPDATE skills SET agent_id = NULL
     WHERE owner_id = ?1 AND agent_id = ?2 AND header = 'skill' AND deleted_at IS NULL
       AND EXISTS (SELECT 1 FROM versions v WHERE v.owner_id = ?1
                   AND v.skill_id = skills.skill_id AND v.shared_at IS NOT NULL)";

/// Everything else the agent wrote, removed in an order that leaves no reference dangling at
/// any statement (PostgreSQL checks foreign keys per statement).
fn agent_removal() -> Vec<String> {
    let doomed_versions = format!(
        "SELECT version_id FROM versions WHERE owner_id = ?1 AND skill_id IN ({DOOMED_SKILLS})"
    );
    let mut statements = vec![
        format!(
            "UPDATE versions SET parent_version_id = NULL
             WHERE owner_id = ?1 AND parent_version_id IN ({doomed_versions})"
        ),
        format!("DELETE FROM uses WHERE owner_id = ?1 AND version_id IN ({doomed_versions})"),
        format!("DELETE FROM sharing_events WHERE owner_id = ?1 AND skill_id IN ({DOOMED_SKILLS})"),
        format!("DELETE FROM skill_tags WHERE owner_id = ?1 AND skill_id IN ({DOOMED_SKILLS})"),
        format!(
            "UPDATE skills SET current_version_id = NULL WHERE owner_id = ?1 AND skill_id IN ({DOOMED_SKILLS})"
        ),
        format!("DELETE FROM versions WHERE owner_id = ?1 AND skill_id IN ({DOOMED_SKILLS})"),
    ];
    statements.extend(
        [
            "DELETE FROM skills WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM snippet_uses WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM snippets WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM lessons WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM snippet_suggestions WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM unrecorded_calls WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM runner_tokens WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM avatar_states WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM avatar_wealth WHERE owner_id = ?1 AND agent_id = ?2",
            "UPDATE uses SET agent_id = NULL WHERE owner_id = ?1 AND agent_id = ?2",
            "UPDATE sharing_events SET agent_id = NULL WHERE owner_id = ?1 AND agent_id = ?2",
            "DELETE FROM agents WHERE owner_id = ?1 AND agent_id = ?2",
        ]
        .map(str::to_string),
    );
    statements
}

/// Deletes an agent: its shared skills stay with the family (linked to no agent), everything
/// else it wrote goes.
pub(crate) fn delete_agent<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    agent: AgentId,
) -> Result<DeletedAgent, T::Error> {
    tx.agent(owner, agent)?;
    let kept = tx.run_for_agent(KEEP_SHARED_SKILLS, owner, agent)?;
    let removed = tx.agent_skill_count(owner, agent)?;
    for statement in agent_removal() {
        tx.run_for_agent(&statement, owner, agent)?;
    }
    Ok(DeletedAgent {
        scripts_removed: removed as usize,
        skills_kept: kept as usize,
    })
}

/// Every version's stored counters and score against a recomputation from its uses; what
/// disagrees, one line each (empty for a sound family).
pub(crate) fn audit<T: FamilyTx>(tx: &mut T, owner: OwnerId) -> Result<Vec<String>, T::Error> {
    let mut problems = Vec::new();
    for (stored, counted_uses, counted_ok) in tx.versions_for_audit(owner)? {
        let window: Vec<_> = tx.window(owner, VersionId(stored.version))?.into();
        problems.extend(audit_version(&stored, counted_uses, counted_ok, &window));
    }
    Ok(problems)
}
