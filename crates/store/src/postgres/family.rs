//! What a family shares on PostgreSQL: skills that become shared or stop being shared, the
//! shared skills as siblings see them, how siblings use one skill, the lessons of the lab logs,
//! deleting an agent and the family's reuse of its skills.
//!
//! Every change runs as the family's write, under its lock, so sharing decisions see each
//! other's results as on SQLite; every read of several statements sees one snapshot. Every
//! statement names the family (`owner_id`), and text is ordered with the `C` collation, byte by
//! byte, as SQLite orders it.

use crate::sqlite_and_postgres_sql as sql;
use crate::{FamilySharing, LessonsChange, NewLesson, rules};
use std::collections::HashSet;

use postgres::Row;

use super::rows::{SKILL_COLUMN_COUNT, SKILL_COLUMNS, all, col, skill_from};
use super::{PgResult, PgStore};
use crate::{
    AgentId, FamilyReuse, Lesson, Millis, OwnerId, Result, SharedSkill, SharingChange, SharingKind,
    SiblingUse, SkillId, StoreError, VersionId, VersionSummary,
};

impl FamilySharing for PgStore {
    fn shared_skills(&self, owner: OwnerId) -> Result<Vec<SharedSkill>> {
        self.read(|tx| {
            let rows = tx.query(
                &format!(
                    "SELECT {SKILL_COLUMNS}, v.version_id, v.number, v.digest, v.uses, v.ok, v.score, v.shared_at,
                            v.breakdown, v.inherited, v.last_used_at
                     FROM skills s JOIN versions v ON v.skill_id = s.skill_id AND v.owner_id = s.owner_id
                     WHERE s.owner_id = $1 AND s.header = 'skill' AND s.deleted_at IS NULL
                       AND EXISTS (SELECT 1 FROM versions x
                                   WHERE x.owner_id = s.owner_id AND x.skill_id = s.skill_id AND x.shared_at IS NOT NULL)
                     ORDER BY s.agent_name COLLATE \"C\", s.name COLLATE \"C\", s.skill_id, v.number DESC"
                ),
                &[&owner.0],
            )?;
            let mut shared: Vec<SharedSkill> = Vec::new();
            let base = SKILL_COLUMN_COUNT;
            for row in &rows {
                let skill_id = SkillId(col(row, 0)?);
                let version = VersionSummary {
                    id: VersionId(col(row, base)?),
                    number: col(row, base + 1)?,
                    digest: col(row, base + 2)?,
                    uses: col(row, base + 3)?,
                    ok: col(row, base + 4)?,
                    score: col(row, base + 5)?,
                    shared_at: col(row, base + 6)?,
                    breakdown: {
                        let json: Option<String> = col(row, base + 7)?;
                        json.and_then(|json| serde_json::from_str(&json).ok())
                    },
                    inherited: col(row, base + 8)?,
                    last_used_at: col(row, base + 9)?,
                };
                match shared.last_mut() {
                    Some(last) if last.skill.id == skill_id => last.versions.push(version),
                    _ => shared.push(SharedSkill {
                        skill: skill_from(row)?,
                        versions: vec![version],
                    }),
                }
            }
            Ok(shared)
        })
    }

    fn sibling_use(&self, owner: OwnerId, skill: SkillId, since: Millis) -> Result<SiblingUse> {
        self.read(|tx| {
            let author: Option<i64> = match tx.query_opt(
                sql::SKILL_AGENT.postgres(),
                &[&owner.0, &skill.0],
            )? {
                Some(row) => col(&row, 0)?,
                None => return Err(StoreError::NotFound(format!("skill {}", skill.0)).into()),
            };
            // A copy is a sibling's skill whose first version was built on one of this skill's
            // versions (copied from the mirror with its From: line); its later versions are its own
            // edits, so it is shown at its latest.
            let copies: Vec<(i64, String, i64)> = tx
                .query(
                    "SELECT c.skill_id, c.agent_name || '/' || c.name,
                            (SELECT MAX(l.number) FROM versions l WHERE l.owner_id = c.owner_id AND l.skill_id = c.skill_id)
                     FROM versions p
                     JOIN versions f ON f.parent_version_id = p.version_id AND f.owner_id = p.owner_id AND f.lineage = 'sibling'
                     JOIN skills c ON c.skill_id = f.skill_id AND c.owner_id = f.owner_id
                     WHERE p.owner_id = $1 AND p.skill_id = $2 AND c.deleted_at IS NULL AND c.skill_id <> $2
                     GROUP BY c.owner_id, c.skill_id, c.agent_name, c.name
                     ORDER BY c.agent_name COLLATE \"C\", c.name COLLATE \"C\", c.skill_id",
                    &[&owner.0, &skill.0],
                )?
                .iter()
                .map(|row| Ok((col(row, 0)?, col(row, 1)?, col(row, 2)?)))
                .collect::<PgResult<_>>()?;
            let usage =
                "SELECT u.agent_id, COUNT(*), COUNT(*) FILTER (WHERE NOT u.ok AND u.at >= $4)
                 FROM versions v JOIN uses u ON u.version_id = v.version_id AND u.owner_id = v.owner_id
                 WHERE v.owner_id = $1 AND v.skill_id = $2 AND u.agent_id IS NOT NULL
                   AND ($3::bigint IS NULL OR u.agent_id <> $3)
                 GROUP BY u.agent_id";
            let mut used_by: HashSet<i64> = HashSet::new();
            let mut runs = 0;
            let mut failures_since = 0;
            for skill_id in std::iter::once(skill.0).chain(copies.iter().map(|c| c.0)) {
                for row in tx.query(usage, &[&owner.0, &skill_id, &author, &since])? {
                    used_by.insert(col(&row, 0)?);
                    runs += col::<i64>(&row, 1)?;
                    failures_since += col::<i64>(&row, 2)?;
                }
            }
            Ok(SiblingUse {
                used_by: used_by.len(),
                runs,
                failures_since,
                copies: copies.into_iter().map(|(_, label, n)| (label, n)).collect(),
            })
        })
    }

    fn sharing_changes(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SharingChange>> {
        self.read(|tx| {
            let rows = tx.query(
                sql::SHARING_CHANGES.postgres(),
                &[&owner.0, &agent.0, &since],
            )?;
            all(rows, |row| {
                let kind: &str = col(row, 2)?;
                Ok(SharingChange {
                    skill: SkillId(col(row, 0)?),
                    label: col(row, 1)?,
                    kind: SharingKind::parse(kind),
                    version: col(row, 3)?,
                    reason: col(row, 4)?,
                    at: col(row, 5)?,
                })
            })
        })
    }

    fn lessons(&self, owner: OwnerId) -> Result<Vec<Lesson>> {
        self.read(|tx| {
            let rows = tx.query(sql::LESSONS.postgres(), &[&owner.0])?;
            all(rows, |row: &Row| {
                Ok(Lesson {
                    agent: AgentId(col(row, 0)?),
                    agent_name: col(row, 1)?,
                    text: col(row, 2)?,
                    line: col::<i64>(row, 3)? as usize,
                    first_seen_at: col(row, 4)?,
                })
            })
        })
    }

    fn family_reuse(&self, owner: OwnerId, since: Millis) -> Result<FamilyReuse> {
        self.read(|tx| {
            // A run is "from a family skill" when the avatar ran a sibling's version (an unchanged
            // copy from family-skills/ counts for the sibling's skill) or its own skill built on a
            // sibling's (a version with lineage `sibling` anywhere in the skill's history).
            let row = tx.query_one(
                "SELECT COUNT(*), COUNT(*) FILTER (WHERE
                        (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                        OR s.skill_id IN (SELECT b.skill_id FROM versions b
                                          WHERE b.owner_id = $1 AND b.lineage = 'sibling'))
                 FROM uses u
                 JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE u.owner_id = $1 AND u.at >= $2 AND u.agent_id IS NOT NULL",
                &[&owner.0, &since],
            )?;
            let runs: i64 = col(&row, 0)?;
            let runs_from_family: i64 = col(&row, 1)?;
            // Skills reused by a sibling: run by another avatar, or built on by a copy that ran.
            let row = tx.query_one(
                "SELECT COUNT(DISTINCT reused) FROM (
                   SELECT s.skill_id AS reused
                   FROM uses u
                   JOIN versions v ON v.version_id = u.version_id AND v.owner_id = u.owner_id
                   JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                   WHERE u.owner_id = $1 AND u.at >= $2 AND u.agent_id IS NOT NULL
                     AND (s.agent_id IS NULL OR u.agent_id <> s.agent_id)
                   UNION
                   SELECT p.skill_id
                   FROM versions f
                   JOIN versions p ON p.version_id = f.parent_version_id AND p.owner_id = f.owner_id
                   WHERE f.owner_id = $1 AND f.lineage = 'sibling' AND p.skill_id <> f.skill_id
                     AND EXISTS (SELECT 1 FROM versions cv
                                 JOIN uses cu ON cu.version_id = cv.version_id AND cu.owner_id = cv.owner_id
                                 WHERE cv.owner_id = $1 AND cv.skill_id = f.skill_id AND cu.at >= $2)
                 ) AS reused_skills",
                &[&owner.0, &since],
            )?;
            Ok(FamilyReuse {
                runs,
                runs_from_family,
                skills_reused: col(&row, 0)?,
            })
        })
    }

    fn replace_lessons(
        &self,
        owner: OwnerId,
        agent: AgentId,
        lessons: &[NewLesson],
        now: Millis,
    ) -> Result<LessonsChange> {
        self.write(owner, |tx| {
            rules::family::replace_lessons(tx, owner, agent, lessons, now)
        })
    }

    fn share_qualified(
        &self,
        owner: OwnerId,
        agent: AgentId,
        now: Millis,
    ) -> Result<Vec<SharingChange>> {
        self.write(owner, |tx| {
            rules::sharing::share_qualified(tx, owner, agent, now)
        })
    }

    fn mark_file_gone(
        &self,
        owner: OwnerId,
        skill: SkillId,
        now: Millis,
    ) -> Result<Option<SharingChange>> {
        self.write(owner, |tx| {
            rules::sharing::mark_file_gone(tx, owner, skill, now)
        })
    }
}
