//! Matching a script file to its skill and version, and recording a use: the rescore of its
//! version and, right after the run that made it qualify, its sharing.

use std::collections::VecDeque;

use mindrune_core::SharingBar;
use mindrune_core::{Measure, ScoreInput, UseSample, inherited_from_parent, score_measured};

use super::sharing::{note_sharing_change, peer_median_rate, share_if_qualified};
use super::{FamilyTx, KnownWindow, NewVersion, Rescore, UseInsert, VersionRow};
use crate::common::{SharingState, insert_sample, sample_from, sorted};
use crate::{
    AgentId, Lineage, Matched, Millis, NewSnippetUse, NewUse, OwnerId, RecordedSnippetUse,
    RecordedUse, ScriptSnapshot, StoreError, VersionId, VersionStats,
};

/// How many uses of a version pass before the family's peer median is looked up again. The
/// refresh points change the scores, so every backend and process keeps this one.
pub(crate) const PEER_REFRESH_USES: i64 = 20;

/// Which version a new file (a path the agent never had a skill at) builds on, when it is not
/// an unchanged copy of a sibling's skill (that one counts for the sibling's skill itself):
/// a copy or rename of one of the agent's own files builds on the best-scored of the agent's
/// versions with the same code ([`Lineage::Copy`]); else a changed copy of a sibling's skill,
/// named by the file's `From: <agent>/<name>` line, builds on that skill's current version
/// ([`Lineage::Sibling`]); else on none.
///
/// `same_code` are the family's versions with the file's code, as (the agent of their skill,
/// the version, its score); `sibling_current` looks up the current version of
/// `<agent>/<name>`, and is asked only when the rule needs it.
pub fn origin_of_new_file<E>(
    agent: AgentId,
    agent_name: &str,
    from: Option<&str>,
    same_code: impl IntoIterator<Item = (Option<AgentId>, VersionId, f64)>,
    sibling_current: impl FnOnce(&str, &str) -> Result<Option<VersionId>, E>,
) -> Result<Option<(VersionId, Lineage)>, E> {
    if let Some((_, version, _)) = same_code
        .into_iter()
        .filter(|(owner, _, _)| *owner == Some(agent))
        .max_by(|a, b| a.2.total_cmp(&b.2))
    {
        return Ok(Some((version, Lineage::Copy)));
    }
    if let Some(from) = from
        && let Some((sibling_agent, sibling_name)) = from.split_once('/')
        && sibling_agent != agent_name
        && let Some(version) = sibling_current(sibling_agent, sibling_name)?
    {
        return Ok(Some((version, Lineage::Sibling)));
    }
    Ok(None)
}

/// Which version a new version of a skill builds on: an edit on the version the file had; a
/// new file on its origin ([`origin_of_new_file`]), if it has one.
pub(crate) fn base_of_new_version(
    current: Option<VersionId>,
    origin: Option<(VersionId, Lineage)>,
) -> Option<(VersionId, Lineage)> {
    match current {
        Some(current) => Some((current, Lineage::Edit)),
        None => origin,
    }
}

/// Finds (or makes) the skill at the snapshot's path and the version of its code, makes it the
/// skill's current version, writes the header and tags, and shares or un-shares as the header
/// now says.
pub(crate) fn match_script<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    snapshot: &ScriptSnapshot,
    now: Millis,
) -> Result<Matched, T::Error> {
    let agent = tx.agent(owner, snapshot.agent)?;
    let existing = tx.skill_at(owner, &agent.name, &snapshot.path)?;
    let new_skill = existing.is_none();
    // A new file's first version builds on its origin, if it has one. It is read before the skill
    // is inserted, so an unknown origin takes no id (PostgreSQL's identity would keep a gap).
    let mut first_parent = match (&existing, snapshot.origin) {
        (None, Some((origin, lineage))) => Some((tx.version(owner, origin)?, lineage)),
        _ => None,
    };
    let before = match &existing {
        Some(skill) => tx.sharing_state(owner, skill.id)?,
        None => SharingState::default(),
    };
    let skill_id = match &existing {
        Some(skill) => {
            if skill.deleted_at.is_some() || skill.agent.is_none() {
                tx.revive_skill(owner, skill.id, agent.id)?;
            }
            skill.id
        }
        None => tx.insert_skill(owner, &agent, &snapshot.name, &snapshot.path, now)?,
    };
    let found = tx.version_with_digest(owner, skill_id, &snapshot.digest)?;
    let new_version = found.is_none();
    let version_id = match found {
        Some(version) => version.id,
        None => {
            let base = base_of_new_version(
                existing.as_ref().and_then(|s| s.current_version),
                snapshot.origin,
            );
            let parent = match (base, first_parent.take()) {
                (Some((base, _)), Some(loaded)) if loaded.0.id == base => Some(loaded),
                (Some((base, lineage)), _) => Some((tx.version(owner, base)?, lineage)),
                (None, _) => None,
            };
            let number = tx.next_version_number(owner, skill_id)?;
            let inherited = parent.as_ref().map(|(p, _)| inherited_from_parent(p.score));
            tx.insert_version(
                owner,
                &NewVersion {
                    skill: skill_id,
                    number,
                    digest: &snapshot.digest,
                    code: &snapshot.code,
                    parent: parent.as_ref().map(|(p, _)| p.id),
                    lineage: parent.as_ref().map(|(_, l)| *l),
                    inherited,
                    score: inherited.unwrap_or(0.0),
                    created_at: now,
                },
            )?
        }
    };
    tx.set_current_version(owner, skill_id, version_id)?;
    let new_tags = sorted(&snapshot.tags);
    if tx.skill_tags(owner, skill_id)? != new_tags {
        tx.set_skill_tags(owner, skill_id, &new_tags)?;
    }
    tx.set_header(
        owner,
        skill_id,
        &snapshot.header,
        snapshot.file_digest.as_deref(),
    )?;
    share_if_qualified(tx, owner, skill_id, now)?;
    let sharing = note_sharing_change(tx, owner, skill_id, &before, now)?;
    let skill = tx.skill(owner, skill_id)?;
    let version = tx.version(owner, version_id)?;
    Ok(Matched {
        skill,
        version,
        new_skill,
        new_version,
        sharing,
    })
}

/// Records a use of a version, exactly once by its event id, rescores the version on its newest
/// window, and shares it when this run made it clear the family's bar.
///
/// `known` is a window this process read before (a cache the caller keeps; it is used only when
/// the version's use count says nothing was written since). Returns the version's window as it
/// is after this use, for the caller to keep once the transaction committed.
pub(crate) fn record_use<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    new_use: &NewUse,
    known: Option<KnownWindow>,
) -> Result<(RecordedUse, Option<KnownWindow>), T::Error> {
    let not_found = || StoreError::NotFound(format!("version {}", new_use.version.0));
    // The version's row, and its window as it is before this use: the known one when no writer
    // touched this version since it was read, else read now (before the insert, so that a
    // backend that keeps the insert waiting in memory need not write it first; the new use
    // joins it as it joins a known window).
    let (row, before) = match known {
        Some(mut known) => {
            let row = match known.row.take() {
                Some(row) => row,
                None => tx
                    .version_for_use(owner, new_use.version)?
                    .ok_or_else(not_found)?,
            };
            if known.uses == row.uses {
                (row, Ok(known))
            } else {
                let window = tx.window(owner, new_use.version)?;
                (row, Err(window))
            }
        }
        None => {
            let (row, window) = tx
                .version_and_window(owner, new_use.version)?
                .ok_or_else(not_found)?;
            (row, Err(window))
        }
    };
    let stats = |uses, ok, score| VersionStats {
        id: new_use.version,
        skill: row.skill,
        number: row.number,
        uses,
        ok,
        score,
    };
    match tx.insert_use(owner, new_use)? {
        UseInsert::Inserted => {}
        UseInsert::AlreadyRecorded => {
            let recorded = RecordedUse {
                added: false,
                version: stats(row.uses, row.ok, row.score),
                shared: None,
            };
            // Nothing was written: the row is as it was read.
            let known = before.ok().map(|known| KnownWindow {
                row: Some(row),
                ..known
            });
            return Ok((recorded, known));
        }
        UseInsert::NoSuchAgent => {
            return Err(StoreError::NotFound(format!("agent {}", new_use.agent.0)).into());
        }
    }
    let outcome = &new_use.outcome;
    let sample = sample_from(outcome, new_use.agent);
    let (mut window, known_results) = match before {
        Ok(mut known) => {
            let position = insert_sample(&mut known.samples, sample);
            (
                known.samples,
                Some((known.measured, known.results, position)),
            )
        }
        Err(mut read) => {
            insert_sample(&mut read, sample);
            (read, None)
        }
    };
    // The stored tag lines, lent (`lines_of` without its copies).
    let tags = row.tags.lines().filter(|line| !line.is_empty());
    // Newest-first in one slice, rotated in place (no copy of the samples).
    let contiguous: &[UseSample] = window.make_contiguous();
    let measure = Measure::choose_among(tags.clone(), contiguous);
    let measure_key = measure.key();
    // The window's results under this measure: the known ones and the new use's, or all of
    // them when the measure changed or the window was read from the table.
    let mut results: VecDeque<f64> = match known_results {
        Some((measured, mut results, position)) if measured == measure_key => {
            if let Some(sample) = contiguous.get(position) {
                results.insert(position, measure.result_of(sample));
            }
            results.truncate(contiguous.len());
            results
        }
        _ => contiguous.iter().map(|u| measure.result_of(u)).collect(),
    };
    // The family's median is looked up again every PEER_REFRESH_USES uses of this version (or
    // when its measure changes), and kept in the version's row: the same for every process, and
    // no scan of the family's skills on every run.
    let refresh_peers = row.measure_key != measure_key
        || row
            .peer_checked_uses
            .is_none_or(|checked| row.uses - checked >= PEER_REFRESH_USES);
    let (peers, peer_checked_uses) = if tags.clone().next().is_none() {
        (None, None)
    } else if refresh_peers {
        (
            peer_median_rate(tx, owner, row.skill, &measure_key)?,
            Some(row.uses),
        )
    } else {
        (row.peer_rate, row.peer_checked_uses)
    };
    let breakdown = score_measured(
        &ScoreInput {
            window: contiguous,
            measure: &measure,
            peer_median_rate: peers,
            inherited: row.inherited,
        },
        results.make_contiguous(),
    );
    tx.rescore_version(
        owner,
        new_use.version,
        Rescore {
            ok: outcome.ok,
            breakdown,
            measure_key: measure_key.clone(),
            at: outcome.at,
            peer_rate: peers,
            peer_checked_uses,
        },
    )?;
    // A headed script is shared right after the run that makes it qualify; the family's bar came
    // with the version's row, so a run below it costs no further statement.
    let bar = SharingBar::for_family(row.eager_sharing);
    let sharing_checked = row.may_share && bar.cleared_by(row.uses + 1, breakdown.total);
    let shared = if sharing_checked {
        let before = tx.sharing_state(owner, row.skill)?;
        share_if_qualified(tx, owner, row.skill, new_use.recorded_at)?;
        note_sharing_change(tx, owner, row.skill, &before, new_use.recorded_at)?
    } else {
        None
    };
    let uses = row.uses + 1;
    let ok = row.ok + i64::from(outcome.ok);
    let recorded = RecordedUse {
        added: true,
        version: stats(uses, ok, breakdown.total),
        shared,
    };
    // The row as `rescore_version` left it, unless sharing may have changed it.
    let row_after = (!sharing_checked).then(|| VersionRow {
        uses,
        ok,
        score: breakdown.total,
        measure_key: measure_key.clone(),
        peer_rate: peers,
        peer_checked_uses,
        ..row
    });
    Ok((
        recorded,
        Some(KnownWindow {
            row: row_after,
            uses,
            samples: window,
            results,
            measured: measure_key,
        }),
    ))
}

/// Records a run of an inline snippet, exactly once by its event id: a stored event id is a
/// retry and answers with the snippet that event recorded, whatever the retry carries (another
/// avatar's or changed code included).
pub(crate) fn record_snippet_use<T: FamilyTx>(
    tx: &mut T,
    owner: OwnerId,
    new_use: &NewSnippetUse,
) -> Result<RecordedSnippetUse, T::Error> {
    let agent = tx.agent(owner, new_use.agent)?;
    let recorded_before = match &new_use.event_id {
        Some(event_id) => tx.snippet_of_event(owner, event_id)?,
        None => None,
    };
    let snippet = match recorded_before {
        Some(snippet) => snippet,
        None => {
            // Looked up before it is inserted: a conflicting insert would still take an id of
            // PostgreSQL's identity. The transaction keeps another writer from inserting it in
            // between.
            let snippet = match tx.snippet_with_digest(owner, agent.id, &new_use.digest)? {
                Some(snippet) => snippet,
                None => tx.insert_snippet(owner, agent.id, new_use)?,
            };
            tx.insert_snippet_use(owner, snippet, agent.id, new_use)?;
            snippet
        }
    };
    Ok(RecordedSnippetUse {
        added: recorded_before.is_none(),
        snippet: tx.snippet(owner, snippet)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASH: AgentId = AgentId(1);
    const ROWAN: AgentId = AgentId(2);

    fn no_sibling(_: &str, _: &str) -> Result<Option<VersionId>, ()> {
        panic!("the sibling's skill must not be looked up")
    }

    #[test]
    fn a_copy_of_an_own_file_builds_on_its_best_scored_version() {
        let same_code = [
            (Some(ROWAN), VersionId(7), 9.0),
            (Some(ASH), VersionId(3), 1.0),
            (Some(ASH), VersionId(4), 2.5),
            (None, VersionId(8), 9.5),
        ];
        let origin = origin_of_new_file(ASH, "ash", Some("rowan/chop"), same_code, no_sibling);
        assert_eq!(origin, Ok(Some((VersionId(4), Lineage::Copy))));
    }

    #[test]
    fn a_changed_copy_of_a_sibling_builds_on_its_current_version() {
        let mut asked = None;
        let origin = origin_of_new_file(ASH, "ash", Some("rowan/chop"), [], |agent, name| {
            asked = Some(format!("{agent}/{name}"));
            Ok::<_, ()>(Some(VersionId(9)))
        });
        assert_eq!(origin, Ok(Some((VersionId(9), Lineage::Sibling))));
        assert_eq!(asked.as_deref(), Some("rowan/chop"));
        // Only another agent's code counts as a sibling's.
        let others_code = [(Some(ROWAN), VersionId(7), 9.0)];
        let origin = origin_of_new_file(ASH, "ash", Some("rowan/chop"), others_code, |_, _| {
            Ok::<_, ()>(Some(VersionId(9)))
        });
        assert_eq!(origin, Ok(Some((VersionId(9), Lineage::Sibling))));
    }

    #[test]
    fn no_origin_without_a_copy_or_a_sibling_s_skill() {
        assert_eq!(
            origin_of_new_file(ASH, "ash", None, [], no_sibling),
            Ok(None)
        );
        // Its own name, or no `<agent>/<name>`: no lookup.
        assert_eq!(
            origin_of_new_file(ASH, "ash", Some("ash/chop"), [], no_sibling),
            Ok(None)
        );
        assert_eq!(
            origin_of_new_file(ASH, "ash", Some("chop"), [], no_sibling),
            Ok(None)
        );
        // A sibling's skill without a current version (its file gone before it had one).
        let none = |_: &str, _: &str| Ok::<_, ()>(None);
        assert_eq!(
            origin_of_new_file(ASH, "ash", Some("rowan/x"), [], none),
            Ok(None)
        );
        // The lookup's error is the caller's.
        let fails = |_: &str, _: &str| Err::<Option<VersionId>, _>("down");
        assert_eq!(
            origin_of_new_file(ASH, "ash", Some("rowan/x"), [], fails),
            Err("down")
        );
    }

    #[test]
    fn an_edit_builds_on_the_current_version_and_a_new_file_on_its_origin() {
        let origin = Some((VersionId(2), Lineage::Copy));
        assert_eq!(
            base_of_new_version(Some(VersionId(5)), origin),
            Some((VersionId(5), Lineage::Edit))
        );
        assert_eq!(base_of_new_version(None, origin), origin);
        assert_eq!(base_of_new_version(None, None), None);
    }
}
