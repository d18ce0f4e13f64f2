//! What a family shares on SQLite: the shared skills as siblings see them, how siblings use one
//! skill, the sharing changes, the lessons of the lab logs and the family's reuse of its skills.

use crate::sqlite_and_postgres_sql as sql;
use crate::{FamilySharing, LessonsChange, NewLesson, rules};
use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::rows::skill_from;
use super::{SqliteStore, db_err};
use crate::common::{SKILL_COLUMN_COUNT, SKILL_COLUMNS};
use crate::{
    AgentId, FamilyReuse, Lesson, Millis, OwnerId, Result, SharedSkill, SharingChange, SharingKind,
    SiblingUse, SkillId, StoreError, VersionId, VersionSummary,
};

impl FamilySharing for SqliteStore {
    fn shared_skills(&self, owner: OwnerId) -> Result<Vec<SharedSkill>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(&format!(
                "SELECT {SKILL_COLUMNS}, v.version_id, v.number, v.digest, v.uses, v.ok, v.score, v.shared_at,
                        v.breakdown, v.inherited, v.last_used_at
                 FROM skills s JOIN versions v ON v.skill_id = s.skill_id AND v.owner_id = s.owner_id
                 WHERE s.owner_id = ?1 AND s.header = 'skill' AND s.deleted_at IS NULL
                   AND EXISTS (SELECT 1 FROM versions x
                               WHERE x.owner_id = s.owner_id AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                 ORDER BY s.agent_name, s.name, s.skill_id, v.number DESC"
            ))
            .map_err(db_err)?;
        let mut rows = statement.query(params![owner.0]).map_err(db_err)?;
        let mut shared: Vec<SharedSkill> = Vec::new();
        let base = SKILL_COLUMN_COUNT;
        while let Some(row) = rows.next().map_err(db_err)? {
            let skill_id = SkillId(row.get(0).map_err(db_err)?);
            let version = VersionSummary {
                id: VersionId(row.get(base).map_err(db_err)?),
                number: row.get(base + 1).map_err(db_err)?,
                digest: row.get(base + 2).map_err(db_err)?,
                uses: row.get(base + 3).map_err(db_err)?,
                ok: row.get(base + 4).map_err(db_err)?,
                score: row.get(base + 5).map_err(db_err)?,
                shared_at: row.get(base + 6).map_err(db_err)?,
                breakdown: {
                    let json: Option<String> = row.get(base + 7).map_err(db_err)?;
                    json.and_then(|json| serde_json::from_str(&json).ok())
                },
                inherited: row.get(base + 8).map_err(db_err)?,
                last_used_at: row.get(base + 9).map_err(db_err)?,
            };
            match shared.last_mut() {
                Some(last) if last.skill.id == skill_id => last.versions.push(version),
                _ => shared.push(SharedSkill {
                    skill: skill_from(row).map_err(db_err)?,
                    versions: vec![version],
                }),
            }
        }
        Ok(shared)
    }

    fn sibling_use(&self, owner: OwnerId, skill: SkillId, since: Millis) -> Result<SiblingUse> {
        let inner = self.lock();
        let conn = &inner.conn;
        let author: Option<i64> = conn
            .prepare_cached(sql::SKILL_AGENT.sqlite())
            .map_err(db_err)?
            .query_row(params![owner.0, skill.0], |r| r.get(0))
            .optional()
            .map_err(db_err)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill.0)))?;
        // A copy is a sibling's skill whose first version was built on one of this skill's
        // versions (copied from the mirror with its From: line); its later versions are its own
        // edits, so it is shown at its latest.
        let copies: Vec<(i64, String, i64)> = conn
            .prepare_cached(
                "SELECT c.skill_id, c.agent_name || '/' || c.name,
                        (SELECT MAX(l.number) FROM versions l WHERE l.owner_id = c.owner_id AND l.skill_id = c.skill_id)
                 FROM versions p
                 -- CROSS JOIN keeps this skill's few versions outside: copies are then found
                 -- through versions_by_parent, not by walking the family's versions.
                 CROSS JOIN versions f ON f.parent_version_id = p.version_id AND f.owner_id = p.owner_id AND f.lineage = 'sibling'
                 JOIN skills c ON c.skill_id = f.skill_id AND c.owner_id = f.owner_id
                 WHERE p.owner_id = ?1 AND p.skill_id = ?2 AND c.deleted_at IS NULL AND c.skill_id <> ?2
                 GROUP BY c.skill_id ORDER BY c.agent_name, c.name",
            )
            .map_err(db_err)?
            .query_map(params![owner.0, skill.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(db_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(db_err)?;
        let mut per_agent: HashMap<i64, ()> = HashMap::new();
        let mut runs = 0;
        let mut failures_since = 0;
        let mut usage = conn
            .prepare_cached(
                "SELECT u.agent_id, COUNT(*), COALESCE(SUM(u.ok = 0 AND u.at >= ?4), 0)
                 FROM versions v JOIN uses u ON u.version_id = v.version_id AND u.owner_id = v.owner_id
                 WHERE v.owner_id = ?1 AND v.skill_id = ?2 AND u.agent_id IS NOT NULL
                   AND (?3 IS NULL OR u.agent_id <> ?3)
                 GROUP BY u.agent_id",
            )
            .map_err(db_err)?;
        for skill_id in std::iter::once(skill.0).chain(copies.iter().map(|c| c.0)) {
            let rows = usage
                .query_map(params![owner.0, skill_id, author, since], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(db_err)?;
            for row in rows {
                let (agent, count, failed) = row.map_err(db_err)?;
                per_agent.insert(agent, ());
                runs += count;
                failures_since += failed;
            }
        }
        Ok(SiblingUse {
            used_by: per_agent.len(),
            runs,
            failures_since,
            copies: copies.into_iter().map(|(_, label, n)| (label, n)).collect(),
        })
    }

    fn sharing_changes(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SharingChange>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(sql::SHARING_CHANGES.sqlite())
            .map_err(db_err)?;
        let changes = statement
            .query_map(params![owner.0, agent.0, since], |r| {
                let kind: String = r.get(2)?;
                Ok(SharingChange {
                    skill: SkillId(r.get(0)?),
                    label: r.get(1)?,
                    kind: SharingKind::parse(&kind),
                    version: r.get(3)?,
                    reason: r.get(4)?,
                    at: r.get(5)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(changes)
    }

    fn lessons(&self, owner: OwnerId) -> Result<Vec<Lesson>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(sql::LESSONS.sqlite())
            .map_err(db_err)?;
        let lessons = statement
            .query_map(params![owner.0], |r| {
                Ok(Lesson {
                    agent: AgentId(r.get(0)?),
                    agent_name: r.get(1)?,
                    text: r.get(2)?,
                    line: r.get::<_, i64>(3)? as usize,
                    first_seen_at: r.get(4)?,
                })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        Ok(lessons)
    }

    fn family_reuse(&self, owner: OwnerId, since: Millis) -> Result<FamilyReuse> {
        let inner = self.lock();
        let conn = &inner.conn;
        // A run is "from a family skill" when the avatar ran a sibling's version (an unchanged
        // copy from family-skills/ counts for the sibling's skill) or its own skill built on a
        // sibling's (a version with lineage `sibling` anywhere in the skill's history).
        let (runs, runs_from_family): (i64, i64) = conn
            .prepare_cached(
                "SELECT COUNT(*), COALESCE(SUM(
                        (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                        OR s.skill_id IN (SELECT b.skill_id FROM versions b
                                          WHERE b.owner_id = ?1 AND b.lineage = 'sibling')), 0)
                 FROM uses u
                 JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE u.owner_id = ?1 AND u.at >= ?2 AND u.agent_id IS NOT NULL",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, since], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db_err)?;
        // Skills reused by a sibling: run by another avatar, or built on by a copy that ran.
        let skills_reused: i64 = conn
            .prepare_cached(
                "SELECT COUNT(DISTINCT reused) FROM (
                   SELECT s.skill_id AS reused
                   FROM uses u
                   JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                   JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                   WHERE u.owner_id = ?1 AND u.at >= ?2 AND u.agent_id IS NOT NULL
                     AND (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                   UNION
                   SELECT p.skill_id
                   FROM versions f
                   JOIN versions p ON p.version_id = f.parent_version_id AND p.owner_id = f.owner_id
                   WHERE f.owner_id = ?1 AND f.lineage = 'sibling' AND p.skill_id <> f.skill_id
                     AND EXISTS (SELECT 1 FROM versions cv
                                 JOIN uses u ON u.version_id = cv.version_id AND u.owner_id = cv.owner_id
                                 WHERE cv.owner_id = ?1 AND cv.skill_id = f.skill_id AND u.at >= ?2))",
            )
            .map_err(db_err)?
            .query_row(params![owner.0, since], |r| r.get(0))
            .map_err(db_err)?;
        Ok(FamilyReuse {
            runs,
            runs_from_family,
            skills_reused,
        })
    }

    fn replace_lessons(
        &self,
        owner: OwnerId,
        agent: AgentId,
        lessons: &[NewLesson],
        now: Millis,
    ) -> Result<LessonsChange> {
        self.write(|tx, _| rules::family::replace_lessons(tx, owner, agent, lessons, now))
    }

    fn share_qualified(
        &self,
        owner: OwnerId,
        agent: AgentId,
        now: Millis,
    ) -> Result<Vec<SharingChange>> {
        self.write(|tx, _| rules::sharing::share_qualified(tx, owner, agent, now))
    }

    fn mark_file_gone(
        &self,
        owner: OwnerId,
        skill: SkillId,
        now: Millis,
    ) -> Result<Option<SharingChange>> {
        self.write(|tx, _| rules::sharing::mark_file_gone(tx, owner, skill, now))
    }
}
