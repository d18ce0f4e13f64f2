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
//! Unlike the SQLite backend, recording a use keeps no score windows in memory: several server
//! processes may record uses of one version, so each use reads its version's window from
//! `uses` (one range of the `uses_window` index) inside the family's transaction.

use std::collections::HashMap;

use super::conn::Tx;
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_core::score::{self, Measure, ScoreBreakdown, ScoreInput, UseSample};

use super::rows::{
    AGENT_COLUMNS, SKILL_COLUMN_COUNT, SKILL_COLUMNS, SNIPPET_COLUMNS, VERSION_COLUMN_COUNT,
    VERSION_COLUMNS, agent_from, all, col, skill_from, snippet_from, version_from, version_from_at,
};
use super::sharing::{
    SharingState, note_sharing_change, peer_median_rate, share_if_qualified, sharing_state,
    skill_tags,
};
use super::{PgResult, PgStore};
use crate::common::{VersionRow, json_map, lines_of, parse_map, sorted};
use crate::{
    Agent, AgentId, FailedRun, Lineage, Matched, Millis, NewSnippetUse, NewUse, OwnerId,
    RecordedSnippetUse, RecordedUse, Result, ScriptSnapshot, Skill, SkillEntry, SkillId, Snippet,
    SnippetId, SnippetRuns, StoreError, UnrecordedCall, UnrecordedReason, Version, VersionId,
    VersionStats,
};

/// How many uses of a version pass before the family's peer median is looked up again (the
/// SQLite backend's rule: the refresh points change the scores, so both keep the same).
const PEER_REFRESH_USES: i64 = 20;

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

fn load_version(tx: &mut Tx<'_>, owner: OwnerId, version: VersionId) -> PgResult<Version> {
    let row = tx.query_opt(
        &format!(
            "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.version_id = $2"
        ),
        &[&owner.0, &version.0],
    )?;
    match row {
        Some(row) => version_from(&row),
        None => Err(StoreError::NotFound(format!("version {}", version.0)).into()),
    }
}

fn load_agent(tx: &mut Tx<'_>, owner: OwnerId, agent: AgentId) -> PgResult<Agent> {
    let row = tx.query_opt(
        &format!("SELECT {AGENT_COLUMNS} FROM agents WHERE owner_id = $1 AND agent_id = $2"),
        &[&owner.0, &agent.0],
    )?;
    match row {
        Some(row) => agent_from(&row),
        None => Err(StoreError::NotFound(format!("agent {}", agent.0)).into()),
    }
}

fn load_skill(tx: &mut Tx<'_>, owner: OwnerId, skill: SkillId) -> PgResult<Option<Skill>> {
    tx.query_opt(
        &format!("SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.skill_id = $2"),
        &[&owner.0, &skill.0],
    )?
    .map(|row| skill_from(&row))
    .transpose()
}

/// A version's newest uses (newest first), as the score reads them.
pub(super) fn read_window(
    tx: &mut Tx<'_>,
    owner: OwnerId,
    version: VersionId,
) -> PgResult<Vec<UseSample>> {
    let rows = tx.query(
        "SELECT at, ok, agent_id, duration_ms, xp, items, goal_progress, deaths, stuck, items_lost
         FROM uses WHERE owner_id = $1 AND version_id = $2
         ORDER BY at DESC, use_id DESC LIMIT $3",
        &[&owner.0, &version.0, &(score::WINDOW as i64)],
    )?;
    all(rows, |row| {
        Ok(UseSample {
            at: col::<i64>(row, 0)?.div_euclid(1000),
            ok: col(row, 1)?,
            agent: col::<Option<i64>>(row, 2)?.unwrap_or(0),
            duration_ms: col::<i64>(row, 3)?.max(0) as u64,
            xp: parse_map(col(row, 4)?),
            items: parse_map(col(row, 5)?),
            goal_progress: col(row, 6)?,
            deaths: col::<i64>(row, 7)?.clamp(0, i64::from(u32::MAX)) as u32,
            stuck: col(row, 8)?,
            items_lost: col::<i64>(row, 9)?.clamp(0, i64::from(u32::MAX)) as u32,
        })
    })
}

pub(super) fn skill_at_path(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    path: &str,
) -> Result<Option<Skill>> {
    store.read(|tx| {
        tx.query_opt(
            &format!(
                "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_id = $2 AND s.path = $3"
            ),
            &[&owner.0, &agent.0, &path],
        )?
        .map(|row| skill_from(&row))
        .transpose()
    })
}

pub(super) fn skill(store: &PgStore, owner: OwnerId, skill: SkillId) -> Result<Skill> {
    store.read(|tx| {
        load_skill(tx, owner, skill)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill.0)).into())
    })
}

pub(super) fn skill_by_name(
    store: &PgStore,
    owner: OwnerId,
    agent_name: &str,
    name: &str,
) -> Result<Option<Skill>> {
    store.read(|tx| {
        tx.query_opt(
            &format!(
                "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_name = $2 AND s.name = $3
                 ORDER BY s.deleted_at IS NOT NULL, s.skill_id DESC LIMIT 1"
            ),
            &[&owner.0, &agent_name, &name],
        )?
        .map(|row| skill_from(&row))
        .transpose()
    })
}

pub(super) fn versions_with_digest(
    store: &PgStore,
    owner: OwnerId,
    digest: &str,
) -> Result<Vec<(Skill, Version)>> {
    store.read(|tx| {
        let rows = tx.query(
            &format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS} FROM versions v
                 JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
                 WHERE v.owner_id = $1 AND s.owner_id = $1 AND v.digest = $2 ORDER BY v.version_id"
            ),
            &[&owner.0, &digest],
        )?;
        all(rows, |row| {
            Ok((skill_from(row)?, version_from_at(row, SKILL_COLUMN_COUNT)?))
        })
    })
}

pub(super) fn version(store: &PgStore, owner: OwnerId, version: VersionId) -> Result<Version> {
    store.read(|tx| load_version(tx, owner, version))
}

pub(super) fn match_script(
    store: &PgStore,
    owner: OwnerId,
    snapshot: &ScriptSnapshot,
    now: Millis,
) -> Result<Matched> {
    store.write(owner, |tx| {
        let agent = load_agent(tx, owner, snapshot.agent)?;
        let existing = tx
            .query_opt(
                &format!(
                    "SELECT {SKILL_COLUMNS} FROM skills s WHERE s.owner_id = $1 AND s.agent_name = $2 AND s.path = $3"
                ),
                &[&owner.0, &agent.name, &snapshot.path],
            )?
            .map(|row| skill_from(&row))
            .transpose()?;
        let new_skill = existing.is_none();
        // A new file's first version builds on its origin, if it has one. It is read before the
        // skill is inserted, so an unknown origin uses up no id of the identity (SQLite's ids
        // have no such gaps).
        let mut first_parent = match (&existing, snapshot.origin) {
            (None, Some((origin, lineage))) => Some((load_version(tx, owner, origin)?, lineage)),
            _ => None,
        };
        let before = match &existing {
            Some(skill) => sharing_state(tx, owner, skill.id)?,
            None => SharingState::default(),
        };
        let skill_id = match &existing {
            Some(skill) => {
                if skill.deleted_at.is_some() || skill.agent.is_none() {
                    tx.execute(
                        "UPDATE skills SET deleted_at = NULL, agent_id = $3 WHERE owner_id = $1 AND skill_id = $2",
                        &[&owner.0, &skill.id.0, &agent.id.0],
                    )?;
                }
                skill.id
            }
            None => {
                let row = tx.query_one(
                    "INSERT INTO skills (owner_id, agent_id, agent_name, name, path, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING skill_id",
                    &[
                        &owner.0,
                        &agent.id.0,
                        &agent.name,
                        &snapshot.name,
                        &snapshot.path,
                        &now,
                    ],
                )?;
                SkillId(col(&row, 0)?)
            }
        };
        let found = tx
            .query_opt(
                &format!(
                    "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.skill_id = $2 AND v.digest = $3"
                ),
                &[&owner.0, &skill_id.0, &snapshot.digest],
            )?
            .map(|row| version_from(&row))
            .transpose()?;
        let new_version = found.is_none();
        let version_id = match found {
            Some(version) => version.id,
            None => {
                // An edit builds on the version the file had; a new file builds on its origin
                // (a copy, a rename, a sibling's skill), if it has one.
                let parent = match existing.as_ref().and_then(|s| s.current_version) {
                    Some(current) => Some((load_version(tx, owner, current)?, Lineage::Edit)),
                    None => match (first_parent.take(), snapshot.origin) {
                        (Some(loaded), _) => Some(loaded),
                        (None, Some((origin, lineage))) => {
                            Some((load_version(tx, owner, origin)?, lineage))
                        }
                        (None, None) => None,
                    },
                };
                let number: i64 = col(
                    &tx.query_one(
                        "SELECT COALESCE(MAX(number), 0) + 1 FROM versions WHERE owner_id = $1 AND skill_id = $2",
                        &[&owner.0, &skill_id.0],
                    )?,
                    0,
                )?;
                let inherited = parent
                    .as_ref()
                    .map(|(p, _)| score::inherited_from_parent(p.score));
                let row = tx.query_one(
                    "INSERT INTO versions (owner_id, skill_id, number, digest, code, parent_version_id, lineage,
                                           inherited, score, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING version_id",
                    &[
                        &owner.0,
                        &skill_id.0,
                        &number,
                        &snapshot.digest,
                        &snapshot.code,
                        &parent.as_ref().map(|(p, _)| p.id.0),
                        &parent.as_ref().map(|(_, l)| l.as_str()),
                        &inherited,
                        &inherited.unwrap_or(0.0),
                        &now,
                    ],
                )?;
                VersionId(col(&row, 0)?)
            }
        };
        tx.execute(
            "UPDATE skills SET current_version_id = $3 WHERE owner_id = $1 AND skill_id = $2",
            &[&owner.0, &skill_id.0, &version_id.0],
        )?;
        let new_tags = sorted(&snapshot.tags);
        if skill_tags(tx, owner, skill_id)? != new_tags {
            tx.execute(
                "UPDATE skills SET tags = $3 WHERE owner_id = $1 AND skill_id = $2",
                &[&owner.0, &skill_id.0, &new_tags.join("\n")],
            )?;
            tx.execute(
                "DELETE FROM skill_tags WHERE owner_id = $1 AND skill_id = $2",
                &[&owner.0, &skill_id.0],
            )?;
            // The tags are deduplicated and the old rows gone, so no insert can conflict.
            for tag in &new_tags {
                tx.execute(
                    "INSERT INTO skill_tags (owner_id, skill_id, tag) VALUES ($1, $2, $3)",
                    &[&owner.0, &skill_id.0, tag],
                )?;
            }
        }
        let header = &snapshot.header;
        tx.execute(
            "UPDATE skills SET header = $3, goal = $4, preconditions = $5, params = $6, result = $7,
                    from_skill = $8, topics = $9, file_digest = COALESCE($10, file_digest)
             WHERE owner_id = $1 AND skill_id = $2",
            &[
                &owner.0,
                &skill_id.0,
                &header.state.as_str(),
                &header.goal,
                &header.preconditions,
                &header.params,
                &header.result,
                &header.from,
                &header.topics.join("\n"),
                &snapshot.file_digest,
            ],
        )?;
        share_if_qualified(tx, owner, skill_id, now)?;
        let sharing = note_sharing_change(tx, owner, skill_id, &before, now)?;
        let skill = load_skill(tx, owner, skill_id)?
            .ok_or_else(|| StoreError::NotFound(format!("skill {}", skill_id.0)))?;
        let version = load_version(tx, owner, version_id)?;
        Ok(Matched {
            skill,
            version,
            new_skill,
            new_version,
            sharing,
        })
    })
}

pub(super) fn record_use(store: &PgStore, owner: OwnerId, new_use: &NewUse) -> Result<RecordedUse> {
    store.write(owner, |tx| {
        let found = tx.query_opt(
            "SELECT v.skill_id, v.number, v.uses, v.ok, v.score, v.inherited, v.measure_key, v.peer_rate,
                    v.peer_checked_uses, s.tags,
                    COALESCE(s.header = 'skill' AND s.deleted_at IS NULL AND s.current_version_id = v.version_id
                             AND v.shared_at IS NULL, FALSE),
                    o.eager_sharing
             FROM versions v JOIN skills s ON s.skill_id = v.skill_id AND s.owner_id = v.owner_id
             JOIN owners o ON o.owner_id = v.owner_id
             WHERE v.owner_id = $1 AND s.owner_id = $1 AND v.version_id = $2",
            &[&owner.0, &new_use.version.0],
        )?;
        let Some(r) = found else {
            return Err(StoreError::NotFound(format!("version {}", new_use.version.0)).into());
        };
        let row = VersionRow {
            skill: SkillId(col(&r, 0)?),
            number: col(&r, 1)?,
            uses: col(&r, 2)?,
            ok: col(&r, 3)?,
            score: col(&r, 4)?,
            inherited: col(&r, 5)?,
            measure_key: col(&r, 6)?,
            peer_rate: col(&r, 7)?,
            peer_checked_uses: col(&r, 8)?,
            tags: col(&r, 9)?,
            may_share: col(&r, 10)?,
        };
        let bar = SharingBar::for_family(col(&r, 11)?);
        let stats = |uses, ok, score| VersionStats {
            id: new_use.version,
            skill: row.skill,
            number: row.number,
            uses,
            ok,
            score,
        };
        // Exactly once by event id: the family's lock is held, so no other writer can store
        // the same event between the check in the insert and the insert itself (the unique
        // index `uses_event` stands behind it). The check rides in the insert, saving a round
        // trip on every use; an insert of nothing is then a retry or an unknown agent.
        let outcome = &new_use.outcome;
        let inserted = tx.execute(
            "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                               deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure)
             SELECT owner_id, $2::bigint, agent_id, $4::bigint, $5::boolean, $6::bigint, $7::text, $8::text,
                    $9::double precision, $10::bigint, $11::boolean, $12::bigint, $13::text, $14::text,
                    $15::text, $16::text, $17::bigint, $18::text
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
            ],
        )?;
        if inserted != 1 {
            if let Some(event_id) = &new_use.event_id {
                let seen = tx.query_opt(
                    "SELECT use_id FROM uses WHERE owner_id = $1 AND event_id = $2",
                    &[&owner.0, event_id],
                )?;
                if seen.is_some() {
                    return Ok(RecordedUse {
                        added: false,
                        version: stats(row.uses, row.ok, row.score),
                        shared: None,
                    });
                }
            }
            return Err(StoreError::NotFound(format!("agent {}", new_use.agent.0)).into());
        }

        // The window, read from the table (which now holds the new use too).
        let window = read_window(tx, owner, new_use.version)?;
        let tags = lines_of(row.tags.clone());
        let measure = Measure::choose(&tags, &window);
        let measure_key = measure.key();
        // The family's median is looked up again every PEER_REFRESH_USES uses of this version
        // (or when its measure changes), and kept in the version's row: the same for every
        // process, and no scan of the family's skills on every run.
        let refresh_peers = row.measure_key != measure_key
                || row
                    .peer_checked_uses
                    .is_none_or(|checked| row.uses - checked >= PEER_REFRESH_USES);
        let (peers, peer_checked_uses) = if tags.is_empty() {
            (None, None)
        } else if refresh_peers {
            (
                peer_median_rate(tx, owner, row.skill, &measure_key)?,
                Some(row.uses),
            )
        } else {
            (row.peer_rate, row.peer_checked_uses)
        };
        let breakdown: ScoreBreakdown = score::score(&ScoreInput {
            window: &window,
            measure: &measure,
            peer_median_rate: peers,
            inherited: row.inherited,
        });
        tx.execute(
            "UPDATE versions SET uses = uses + 1, ok = ok + $3, score = $4, breakdown = $5, measure_key = $6,
                    rate_per_minute = $7, last_used_at = GREATEST(COALESCE(last_used_at, $8), $8),
                    peer_rate = $9, peer_checked_uses = $10
             WHERE owner_id = $1 AND version_id = $2",
            &[
                &owner.0,
                &new_use.version.0,
                &i64::from(outcome.ok),
                &breakdown.total,
                &serde_json::to_string(&breakdown).ok(),
                &measure_key,
                &breakdown.rate_per_minute,
                &outcome.at,
                &peers,
                &peer_checked_uses,
            ],
        )?;
        // A headed script is shared right after the run that makes it qualify; the family's
        // bar came with the version's row, so a run below it costs no further statement.
        let shared = if row.may_share && bar.cleared_by(row.uses + 1, breakdown.total) {
            let before = sharing_state(tx, owner, row.skill)?;
            share_if_qualified(tx, owner, row.skill, new_use.recorded_at)?;
            note_sharing_change(tx, owner, row.skill, &before, new_use.recorded_at)?
        } else {
            None
        };
        Ok(RecordedUse {
            added: true,
            version: stats(
                row.uses + 1,
                row.ok + i64::from(outcome.ok),
                breakdown.total,
            ),
            shared,
        })
    })
}

pub(super) fn record_snippet_use(
    store: &PgStore,
    owner: OwnerId,
    new_use: &NewSnippetUse,
) -> Result<RecordedSnippetUse> {
    store.write(owner, |tx| {
        let agent = load_agent(tx, owner, new_use.agent)?;
        let outcome = &new_use.outcome;
        // An event id already stored is a retry: it answers with the snippet that event
        // recorded, whatever the retry carries (another avatar's or changed code included).
        let recorded_before: Option<i64> = match &new_use.event_id {
            Some(event_id) => tx
                .query_opt(
                    "SELECT snippet_id FROM snippet_uses WHERE owner_id = $1 AND event_id = $2",
                    &[&owner.0, event_id],
                )?
                .map(|row| col(&row, 0))
                .transpose()?,
            None => None,
        };
        let added = recorded_before.is_none();
        if added {
            // Looked up before it is inserted: an insert that conflicts would still use up an id
            // of the identity (SQLite's ids have no such gaps). The family's lock keeps another
            // writer from inserting it in between.
            let found = tx.query_opt(
                "SELECT snippet_id FROM snippets WHERE owner_id = $1 AND agent_id = $2 AND digest = $3",
                &[&owner.0, &agent.id.0, &new_use.digest],
            )?;
            let snippet_id: i64 = match found {
                Some(row) => col(&row, 0)?,
                None => col(
                    &tx.query_one(
                        "INSERT INTO snippets (owner_id, agent_id, digest, code, first_at, last_used_at)
                         VALUES ($1, $2, $3, $4, $5, $5) RETURNING snippet_id",
                        &[
                            &owner.0,
                            &agent.id.0,
                            &new_use.digest,
                            &new_use.code,
                            &outcome.at,
                        ],
                    )?,
                    0,
                )?,
            };
            tx.execute(
                "INSERT INTO snippet_uses (owner_id, snippet_id, agent_id, at, ok, duration_ms, xp, items,
                                           goal_progress, deaths, stuck, items_lost, output, event_id, recorded_at,
                                           failure)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $4, $15)",
                &[
                    &owner.0,
                    &snippet_id,
                    &agent.id.0,
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
                ],
            )?;
            tx.execute(
                "UPDATE snippets SET uses = uses + 1, ok = ok + $3, last_used_at = GREATEST(last_used_at, $4)
                 WHERE owner_id = $1 AND snippet_id = $2",
                &[
                    &owner.0,
                    &snippet_id,
                    &i64::from(outcome.ok),
                    &outcome.at,
                ],
            )?;
        }
        let row = match recorded_before {
            Some(snippet_id) => tx.query_one(
                &format!(
                    "SELECT {SNIPPET_COLUMNS} FROM snippets WHERE owner_id = $1 AND snippet_id = $2"
                ),
                &[&owner.0, &snippet_id],
            )?,
            None => tx.query_one(
                &format!(
                    "SELECT {SNIPPET_COLUMNS} FROM snippets WHERE owner_id = $1 AND agent_id = $2 AND digest = $3"
                ),
                &[&owner.0, &agent.id.0, &new_use.digest],
            )?,
        };
        Ok(RecordedSnippetUse {
            added,
            snippet: snippet_from(&row)?,
        })
    })
}

pub(super) fn snippets(store: &PgStore, owner: OwnerId, agent: AgentId) -> Result<Vec<Snippet>> {
    store.read(|tx| {
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

pub(super) fn snippet_runs_since(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    since: Millis,
) -> Result<Vec<SnippetRuns>> {
    store.read(|tx| {
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

pub(super) fn skills(
    store: &PgStore,
    owner: OwnerId,
    agent: Option<AgentId>,
) -> Result<Vec<SkillEntry>> {
    store.read(|tx| {
        let rows = tx.query(
            &format!(
                "SELECT {SKILL_COLUMNS}, {VERSION_COLUMNS},
                        (SELECT COUNT(*) FROM versions c WHERE c.owner_id = $1 AND c.skill_id = s.skill_id),
                        (SELECT COALESCE(SUM(c.uses), 0)::bigint FROM versions c
                          WHERE c.owner_id = $1 AND c.skill_id = s.skill_id),
                        (SELECT b.number FROM versions b WHERE b.owner_id = $1 AND b.skill_id = s.skill_id
                            AND b.version_id <> v.version_id AND b.score > v.score ORDER BY b.score DESC LIMIT 1),
                        (SELECT MAX(b.score) FROM versions b WHERE b.owner_id = $1 AND b.skill_id = s.skill_id
                            AND b.version_id <> v.version_id AND b.score > v.score),
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
            let best_number: Option<i64> = col(row, base + 2)?;
            let best_score: Option<f64> = col(row, base + 3)?;
            Ok(SkillEntry {
                skill: skill_from(row)?,
                version: version_from_at(row, SKILL_COLUMN_COUNT)?,
                version_count: col(row, base)?,
                total_runs: col(row, base + 1)?,
                best: best_number.zip(best_score),
                family: col(row, base + 4)?,
            })
        })
    })
}

pub(super) fn versions(store: &PgStore, owner: OwnerId, skill: SkillId) -> Result<Vec<Version>> {
    store.read(|tx| {
        let rows = tx.query(
            &format!(
                "SELECT {VERSION_COLUMNS} FROM versions v WHERE v.owner_id = $1 AND v.skill_id = $2 ORDER BY v.number DESC"
            ),
            &[&owner.0, &skill.0],
        )?;
        all(rows, version_from)
    })
}

pub(super) fn use_count(store: &PgStore, owner: OwnerId) -> Result<i64> {
    store.read(|tx| {
        col(
            &tx.query_one("SELECT COUNT(*) FROM uses WHERE owner_id = $1", &[&owner.0])?,
            0,
        )
    })
}

pub(super) fn recent_outputs(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    before: Millis,
    limit: usize,
) -> Result<Vec<String>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    store.read(|tx| {
        let rows = tx.query(
            "SELECT output FROM (
                 SELECT output, at, use_id, 0 AS kind FROM uses
                 WHERE owner_id = $1 AND agent_id = $2 AND at < $3 AND output IS NOT NULL
                 UNION ALL
                 SELECT output, at, use_id, 1 AS kind FROM snippet_uses
                 WHERE owner_id = $1 AND agent_id = $2 AND at < $3 AND output IS NOT NULL
             ) runs ORDER BY at DESC, kind, use_id DESC LIMIT $4",
            &[&owner.0, &agent.0, &before, &limit],
        )?;
        all(rows, |row| col::<String>(row, 0))
    })
}

pub(super) fn recent_failures(
    store: &PgStore,
    owner: OwnerId,
    skill: SkillId,
    limit: usize,
) -> Result<Vec<FailedRun>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    store.read(|tx| {
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

pub(super) fn snippet_suggestions(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    since: Millis,
) -> Result<HashMap<String, i64>> {
    store.read(|tx| {
        let rows = tx.query(
            "SELECT group_key, suggested_runs FROM snippet_suggestions
             WHERE owner_id = $1 AND agent_id = $2 AND suggested_at >= $3",
            &[&owner.0, &agent.0, &since],
        )?;
        rows.iter().map(|r| Ok((col(r, 0)?, col(r, 1)?))).collect()
    })
}

pub(super) fn note_unrecorded(
    store: &PgStore,
    owner: OwnerId,
    call: &UnrecordedCall,
) -> Result<bool> {
    store.write(owner, |tx| {
        // An unknown agent stores nothing, as on SQLite.
        let added = tx.execute(
            "INSERT INTO unrecorded_calls (owner_id, agent_id, event_id, at, reason, detail)
             SELECT owner_id, agent_id, $3::text, $4::bigint, $5::text, $6::text FROM agents WHERE owner_id = $1 AND agent_id = $2
             ON CONFLICT (owner_id, agent_id, event_id) DO NOTHING",
            &[
                &owner.0,
                &call.agent.0,
                &call.event_id,
                &call.at,
                &call.reason.as_str(),
                &call.detail,
            ],
        )?;
        Ok(added > 0)
    })
}

pub(super) fn unrecorded_since(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    since: Millis,
) -> Result<Vec<UnrecordedCall>> {
    store.read(|tx| {
        let rows = tx.query(
            "SELECT event_id, at, reason, detail FROM unrecorded_calls
             WHERE owner_id = $1 AND agent_id = $2 AND at >= $3 ORDER BY at, event_id",
            &[&owner.0, &agent.0, &since],
        )?;
        let mut calls = Vec::with_capacity(rows.len());
        for row in &rows {
            let reason: String = col(row, 2)?;
            if let Some(reason) = UnrecordedReason::parse(&reason) {
                calls.push(UnrecordedCall {
                    agent,
                    event_id: col(row, 0)?,
                    at: col(row, 1)?,
                    reason,
                    detail: col(row, 3)?,
                });
            }
        }
        Ok(calls)
    })
}

pub(super) fn note_snippet_suggestion(
    store: &PgStore,
    owner: OwnerId,
    agent: AgentId,
    group_key: &str,
    runs: i64,
    at: Millis,
) -> Result<()> {
    store.write(owner, |tx| {
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
