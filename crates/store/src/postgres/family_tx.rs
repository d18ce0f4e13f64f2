//! PostgreSQL's steps for the store's rules (`crate::rules`): one statement each (one per row
//! for tags), in PostgreSQL's SQL, run inside the family's locked transaction.
//!
//! Text is ordered with the `C` collation (byte by byte, as SQLite orders it). A row that may
//! already exist is looked up before it is inserted, never inserted with `ON CONFLICT DO
//! NOTHING`: a conflicting insert would still take an id of the identity, and SQLite's ids have
//! no such gaps.

use std::collections::VecDeque;

use mindrune_core::{SCORE_WINDOW, UseSample};

use super::conn::Tx;
use super::records::{VERSIONS_WITH_WINDOWS, read_window, versions_with_windows};
use super::rows::{
    VERSION_ROW_COLUMNS, agent_from, all, col, skill_from, snippet_from, version_from,
    version_row_at,
};
use super::{Fail, PgResult};
use crate::common::{SharingState, StoredVersion, json_map};
use crate::rules::{
    FamilyTx, NewLessonRow, NewVersion, Rescore, ShareCandidate, SharingEvent, SkillForChange,
    UseInsert, VersionRow,
};
use crate::sqlite_and_postgres_sql as sql;
use crate::{
    Agent, AgentId, Millis, NewSnippetUse, NewUse, OwnerId, Skill, SkillHeader, SkillId, Snippet,
    StoreError, Version, VersionId,
};

/// SQLite's `?N` placeholders as PostgreSQL's `$N`, for the few statements the rules write once
/// for both (`rules::family`'s agent removal). Those statements hold no `?` in a literal.
fn numbered_placeholders(sql: &str) -> String {
    sql.replace('?', "$")
}

impl FamilyTx for Tx<'_> {
    type Error = Fail;

    fn agent(&mut self, owner: OwnerId, agent: AgentId) -> PgResult<Agent> {
        let row = self.query_opt(sql::AGENT_OF_OWNER.postgres(), &[&owner.0, &agent.0])?;
        match row {
            Some(row) => agent_from(&row),
            None => Err(StoreError::NotFound(format!("agent {}", agent.0)).into()),
        }
    }

    fn skill_at(
        &mut self,
        owner: OwnerId,
        agent_name: &str,
        path: &str,
    ) -> PgResult<Option<Skill>> {
        self.query_opt(
            sql::SKILL_OF_AGENT_NAME_AT_PATH.postgres(),
            &[&owner.0, &agent_name, &path],
        )?
        .map(|row| skill_from(&row))
        .transpose()
    }

    fn skill(&mut self, owner: OwnerId, skill: SkillId) -> PgResult<Skill> {
        let row = self.query_opt(sql::SKILL_BY_ID.postgres(), &[&owner.0, &skill.0])?;
        match row {
            Some(row) => skill_from(&row),
            None => Err(StoreError::NotFound(format!("skill {}", skill.0)).into()),
        }
    }

    fn revive_skill(&mut self, owner: OwnerId, skill: SkillId, agent: AgentId) -> PgResult<()> {
        self.execute(
            sql::REVIVE_SKILL.postgres(),
            &[&owner.0, &skill.0, &agent.0],
        )?;
        Ok(())
    }

    fn insert_skill(
        &mut self,
        owner: OwnerId,
        agent: &Agent,
        name: &str,
        path: &str,
        now: Millis,
    ) -> PgResult<SkillId> {
        let row = self.query_one(
            "INSERT INTO skills (owner_id, agent_id, agent_name, name, path, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING skill_id",
            &[&owner.0, &agent.id.0, &agent.name, &name, &path, &now],
        )?;
        Ok(SkillId(col(&row, 0)?))
    }

    fn set_current_version(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        version: VersionId,
    ) -> PgResult<()> {
        self.execute(
            sql::SET_CURRENT_VERSION.postgres(),
            &[&owner.0, &skill.0, &version.0],
        )?;
        Ok(())
    }

    fn skill_tags(&mut self, owner: OwnerId, skill: SkillId) -> PgResult<Vec<String>> {
        self.query(
            "SELECT tag FROM skill_tags WHERE owner_id = $1 AND skill_id = $2 ORDER BY tag COLLATE \"C\"",
            &[&owner.0, &skill.0],
        )?
        .iter()
        .map(|row| col::<String>(row, 0))
        .collect()
    }

    fn set_skill_tags(&mut self, owner: OwnerId, skill: SkillId, tags: &[String]) -> PgResult<()> {
        self.execute(
            sql::SET_SKILL_TAGS.postgres(),
            &[&owner.0, &skill.0, &tags.join("\n")],
        )?;
        self.execute(sql::CLEAR_SKILL_TAGS.postgres(), &[&owner.0, &skill.0])?;
        for tag in tags {
            self.execute(sql::INSERT_SKILL_TAG.postgres(), &[&owner.0, &skill.0, tag])?;
        }
        Ok(())
    }

    fn set_header(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        header: &SkillHeader,
        file_digest: Option<&str>,
    ) -> PgResult<()> {
        self.execute(
            sql::SET_HEADER.postgres(),
            &[
                &owner.0,
                &skill.0,
                &header.state.as_str(),
                &header.goal,
                &header.preconditions,
                &header.params,
                &header.result,
                &header.from,
                &header.topics.join("\n"),
                &file_digest,
            ],
        )?;
        Ok(())
    }

    fn mark_skill_gone(&mut self, owner: OwnerId, skill: SkillId, now: Millis) -> PgResult<bool> {
        let changed = self.execute(sql::MARK_SKILL_GONE.postgres(), &[&owner.0, &skill.0, &now])?;
        Ok(changed > 0)
    }

    fn version(&mut self, owner: OwnerId, version: VersionId) -> PgResult<Version> {
        let row = self.query_opt(sql::VERSION_BY_ID.postgres(), &[&owner.0, &version.0])?;
        match row {
            Some(row) => version_from(&row),
            None => Err(StoreError::NotFound(format!("version {}", version.0)).into()),
        }
    }

    fn version_with_digest(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        digest: &str,
    ) -> PgResult<Option<Version>> {
        self.query_opt(
            sql::VERSION_WITH_DIGEST.postgres(),
            &[&owner.0, &skill.0, &digest],
        )?
        .map(|row| version_from(&row))
        .transpose()
    }

    fn next_version_number(&mut self, owner: OwnerId, skill: SkillId) -> PgResult<i64> {
        col(
            &self.query_one(sql::NEXT_VERSION_NUMBER.postgres(), &[&owner.0, &skill.0])?,
            0,
        )
    }

    fn insert_version(&mut self, owner: OwnerId, version: &NewVersion<'_>) -> PgResult<VersionId> {
        let row = self.query_one(
            "INSERT INTO versions (owner_id, skill_id, number, digest, code, parent_version_id, lineage,
                                   inherited, score, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING version_id",
            &[
                &owner.0,
                &version.skill.0,
                &version.number,
                &version.digest,
                &version.code,
                &version.parent.map(|p| p.0),
                &version.lineage.map(|l| l.as_str()),
                &version.inherited,
                &version.score,
                &version.created_at,
            ],
        )?;
        Ok(VersionId(col(&row, 0)?))
    }

    fn version_for_use(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> PgResult<Option<VersionRow>> {
        let found = self.query_of_version(
            version.0,
            &format!(
                "SELECT {VERSION_ROW_COLUMNS}
                 FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 JOIN owners o ON o.owner_id = v.owner_id
                 WHERE v.owner_id = $1 AND s.owner_id = $1 AND v.version_id = $2"
            ),
            &[&owner.0, &version.0],
        )?;
        found.first().map(|row| version_row_at(row, 0)).transpose()
    }

    fn version_and_window(
        &mut self,
        owner: OwnerId,
        version: VersionId,
    ) -> PgResult<Option<(VersionRow, VecDeque<UseSample>)>> {
        let rows = self.query_of_version(
            version.0,
            &VERSIONS_WITH_WINDOWS,
            &[&owner.0, &vec![version.0], &(SCORE_WINDOW as i64)],
        )?;
        Ok(versions_with_windows(&rows)?
            .into_iter()
            .next()
            .map(|(_, row, window)| (row, window)))
    }

    fn rescore_version(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        rescore: Rescore,
    ) -> PgResult<()> {
        let Some(rescore) = self.rescore_later(owner, version.0, rescore) else {
            return Ok(());
        };
        self.execute(
            "UPDATE versions SET uses = uses + 1, ok = ok + $3, score = $4, breakdown = $5, measure_key = $6,
                    rate_per_minute = $7, last_used_at = GREATEST(COALESCE(last_used_at, $8), $8),
                    peer_rate = $9, peer_checked_uses = $10
             WHERE owner_id = $1 AND version_id = $2",
            &[
                &owner.0,
                &version.0,
                &i64::from(rescore.ok),
                &rescore.breakdown.total,
                &rescore.breakdown_json(),
                &rescore.measure_key,
                &rescore.breakdown.rate_per_minute,
                &rescore.at,
                &rescore.peer_rate,
                &rescore.peer_checked_uses,
            ],
        )?;
        Ok(())
    }

    fn insert_use(&mut self, owner: OwnerId, new_use: &NewUse) -> PgResult<UseInsert> {
        if let Some(later) = self.insert_use_later(owner, new_use) {
            return Ok(later?);
        }
        // Exactly once by event id: the family's lock is held, so no other writer can store the
        // same event between the check in the insert and the insert itself (the unique index
        // `uses_event` stands behind it). The check rides in the insert, saving a round trip on
        // every use; an insert of nothing is then a retry or an unknown agent.
        let outcome = &new_use.outcome;
        let inserted = self.execute(
            "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                               deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured)
             SELECT owner_id, $2::bigint, agent_id, $4::bigint, $5::boolean, $6::bigint, $7::text, $8::text,
                    $9::double precision, $10::bigint, $11::boolean, $12::bigint, $13::text, $14::text,
                    $15::text, $16::text, $17::bigint, $18::text, $19::text
             FROM agents WHERE owner_id = $1 AND agent_id = $3
               AND ($16::text IS NULL
                    OR NOT EXISTS (SELECT 1 FROM uses WHERE owner_id = $1 AND event_id = $16::text))",
            &[
                &owner.0,
                &new_use.version.0,
                &new_use.agent.0,
                &outcome.at,
                &outcome.ok,
                &(outcome.duration_ms.min(i64::MAX as u64) as i64),
                &json_map(&outcome.xp),
                &json_map(&outcome.items),
                &outcome.goal_progress,
                &i64::from(outcome.deaths),
                &outcome.stuck,
                &i64::from(outcome.items_lost),
                &new_use.source,
                &new_use.call,
                &new_use.output,
                &new_use.event_id,
                &new_use.recorded_at,
                &outcome.failure,
                &outcome.unmeasured,
            ],
        )?;
        if inserted == 1 {
            return Ok(UseInsert::Inserted);
        }
        if let Some(event_id) = &new_use.event_id {
            let seen = self.query_opt(
                "SELECT use_id FROM uses WHERE owner_id = $1 AND event_id = $2",
                &[&owner.0, event_id],
            )?;
            if seen.is_some() {
                return Ok(UseInsert::AlreadyRecorded);
            }
        }
        Ok(UseInsert::NoSuchAgent)
    }

    fn window(&mut self, owner: OwnerId, version: VersionId) -> PgResult<VecDeque<UseSample>> {
        read_window(self, owner, version).map(VecDeque::from)
    }

    fn peer_rates(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
        measure_key: &str,
        min_uses: i64,
    ) -> PgResult<Vec<f64>> {
        self.query_of_versions(
            "SELECT v.rate_per_minute FROM skills s
             JOIN versions v ON v.version_id = s.current_version_id AND v.owner_id = s.owner_id
             WHERE s.owner_id = $1 AND s.deleted_at IS NULL
               AND s.skill_id IN (SELECT peer.skill_id FROM skill_tags mine
                                  JOIN skill_tags peer ON peer.owner_id = mine.owner_id AND peer.tag = mine.tag
                                  WHERE mine.owner_id = $1 AND mine.skill_id = $2 AND peer.skill_id <> $2)
               AND v.measure_key = $3 AND v.uses >= $4",
            &[&owner.0, &skill.0, &measure_key, &min_uses],
        )?
        .iter()
        .map(|row| col::<f64>(row, 0))
        .collect()
    }

    fn sharing_state(&mut self, owner: OwnerId, skill: SkillId) -> PgResult<SharingState> {
        let row = self.query_opt(sql::SHARING_STATE.postgres(), &[&owner.0, &skill.0])?;
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

    fn share_candidate(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> PgResult<Option<ShareCandidate>> {
        let candidate = self.query_opt(sql::SHARE_CANDIDATE.postgres(), &[&owner.0, &skill.0])?;
        candidate
            .map(|row| {
                Ok(ShareCandidate {
                    version: VersionId(col(&row, 0)?),
                    uses: col(&row, 1)?,
                    score: col(&row, 2)?,
                    eager_sharing: col(&row, 3)?,
                })
            })
            .transpose()
    }

    fn mark_version_shared(
        &mut self,
        owner: OwnerId,
        version: VersionId,
        at: Millis,
    ) -> PgResult<()> {
        self.execute(
            sql::MARK_VERSION_SHARED.postgres(),
            &[&owner.0, &version.0, &at],
        )?;
        Ok(())
    }

    fn unshared_skills_above(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        runs: i64,
        score: f64,
    ) -> PgResult<Vec<SkillId>> {
        self.query(
            sql::UNSHARED_SKILLS_ABOVE.postgres(),
            &[&owner.0, &agent.0, &runs, &score],
        )?
        .iter()
        .map(|row| col(row, 0).map(SkillId))
        .collect()
    }

    fn skill_for_sharing_change(
        &mut self,
        owner: OwnerId,
        skill: SkillId,
    ) -> PgResult<SkillForChange> {
        let row = self.query_one(
            sql::SKILL_FOR_SHARING_CHANGE.postgres(),
            &[&owner.0, &skill.0],
        )?;
        let number: Option<i64> = col(&row, 4)?;
        Ok(SkillForChange {
            agent: col::<Option<i64>>(&row, 0)?.map(AgentId),
            label: col(&row, 1)?,
            header: col(&row, 2)?,
            deleted: col(&row, 3)?,
            current: match number {
                Some(n) => Some((n, col::<i64>(&row, 5)?, col::<f64>(&row, 6)?)),
                None => None,
            },
        })
    }

    fn log_sharing_change(&mut self, owner: OwnerId, change: &SharingEvent<'_>) -> PgResult<()> {
        self.execute(
            sql::LOG_SHARING_CHANGE.postgres(),
            &[
                &owner.0,
                &change.skill.0,
                &change.agent.map(|a| a.0),
                &change.version,
                &change.kind.as_str(),
                &change.reason,
                &change.at,
            ],
        )?;
        Ok(())
    }

    fn snippet_of_event(&mut self, owner: OwnerId, event_id: &str) -> PgResult<Option<i64>> {
        self.query_opt(sql::SNIPPET_OF_EVENT.postgres(), &[&owner.0, &event_id])?
            .map(|row| col(&row, 0))
            .transpose()
    }

    fn snippet_with_digest(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
    ) -> PgResult<Option<i64>> {
        self.query_opt(
            sql::SNIPPET_WITH_DIGEST.postgres(),
            &[&owner.0, &agent.0, &digest],
        )?
        .map(|row| col(&row, 0))
        .transpose()
    }

    fn insert_snippet(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> PgResult<i64> {
        col(
            &self.query_one(
                "INSERT INTO snippets (owner_id, agent_id, digest, code, first_at, last_used_at)
                 VALUES ($1, $2, $3, $4, $5, $5) RETURNING snippet_id",
                &[
                    &owner.0,
                    &agent.0,
                    &new_use.digest,
                    &new_use.code,
                    &new_use.outcome.at,
                ],
            )?,
            0,
        )
    }

    fn insert_snippet_use(
        &mut self,
        owner: OwnerId,
        snippet: i64,
        agent: AgentId,
        new_use: &NewSnippetUse,
    ) -> PgResult<()> {
        let outcome = &new_use.outcome;
        self.execute(
            sql::INSERT_SNIPPET_USE.postgres(),
            &[
                &owner.0,
                &snippet,
                &agent.0,
                &outcome.at,
                &outcome.ok,
                &(outcome.duration_ms.min(i64::MAX as u64) as i64),
                &json_map(&outcome.xp),
                &json_map(&outcome.items),
                &outcome.goal_progress,
                &i64::from(outcome.deaths),
                &outcome.stuck,
                &i64::from(outcome.items_lost),
                &new_use.output,
                &new_use.event_id,
                &outcome.failure,
                &outcome.unmeasured,
            ],
        )?;
        self.execute(
            "UPDATE snippets SET uses = uses + 1, ok = ok + $3, last_used_at = GREATEST(last_used_at, $4)
             WHERE owner_id = $1 AND snippet_id = $2",
            &[&owner.0, &snippet, &i64::from(outcome.ok), &outcome.at],
        )?;
        Ok(())
    }

    fn snippet(&mut self, owner: OwnerId, snippet: i64) -> PgResult<Snippet> {
        snippet_from(&self.query_one(sql::SNIPPET_BY_ID.postgres(), &[&owner.0, &snippet])?)
    }

    fn lessons_of(&mut self, owner: OwnerId, agent: AgentId) -> PgResult<Vec<(String, String)>> {
        self.query(sql::AGENT_LESSON_DIGESTS.postgres(), &[&owner.0, &agent.0])?
            .iter()
            .map(|row| Ok((col(row, 0)?, col(row, 1)?)))
            .collect()
    }

    fn delete_lesson(&mut self, owner: OwnerId, agent: AgentId, digest: &str) -> PgResult<()> {
        self.execute(
            sql::DELETE_LESSON.postgres(),
            &[&owner.0, &agent.0, &digest],
        )?;
        Ok(())
    }

    fn set_lesson_line(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        digest: &str,
        line: i64,
    ) -> PgResult<()> {
        self.execute(
            sql::SET_LESSON_LINE.postgres(),
            &[&owner.0, &agent.0, &digest, &line],
        )?;
        Ok(())
    }

    fn insert_lesson(
        &mut self,
        owner: OwnerId,
        agent: AgentId,
        lesson: &NewLessonRow<'_>,
    ) -> PgResult<()> {
        self.execute(
            sql::INSERT_LESSON.postgres(),
            &[
                &owner.0,
                &agent.0,
                &lesson.digest,
                &lesson.text,
                &lesson.line,
                &lesson.first_seen_at,
            ],
        )?;
        Ok(())
    }

    fn agent_skill_count(&mut self, owner: OwnerId, agent: AgentId) -> PgResult<u64> {
        let count: i64 = col(
            &self.query_one(sql::AGENT_SKILL_COUNT.postgres(), &[&owner.0, &agent.0])?,
            0,
        )?;
        Ok(count.max(0) as u64)
    }

    fn run_for_agent(&mut self, sql: &str, owner: OwnerId, agent: AgentId) -> PgResult<u64> {
        Ok(self.execute(&numbered_placeholders(sql), &[&owner.0, &agent.0])?)
    }

    fn versions_for_audit(&mut self, owner: OwnerId) -> PgResult<Vec<(StoredVersion, i64, i64)>> {
        let rows = self.query(
            "SELECT v.version_id, s.agent_name || '/' || s.name, v.uses, v.ok, v.score, v.inherited,
                    v.peer_rate, s.tags,
                    (SELECT COUNT(*) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id),
                    (SELECT COUNT(*) FILTER (WHERE u.ok) FROM uses u WHERE u.owner_id = v.owner_id AND u.version_id = v.version_id)
             FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
             WHERE v.owner_id = $1 ORDER BY v.version_id",
            &[&owner.0],
        )?;
        all(rows, |row| {
            Ok((
                StoredVersion {
                    version: col(row, 0)?,
                    label: col(row, 1)?,
                    uses: col(row, 2)?,
                    ok: col(row, 3)?,
                    score: col(row, 4)?,
                    inherited: col(row, 5)?,
                    peer_rate: col(row, 6)?,
                    tags: col(row, 7)?,
                },
                col(row, 8)?,
                col(row, 9)?,
            ))
        })
    }
}
