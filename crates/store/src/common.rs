//! What both backends share that is not SQL: how list and map columns are written and read,
//! and how a score window takes a new use.

use std::collections::{BTreeMap, VecDeque};

use mindrune_core::{Measure, SCORE_WINDOW, ScoreInput, UseSample, score};

use crate::{AgentId, HeaderState, Outcome, SharingKind};

/// The columns the row readers of both backends take, in their order (the same SQL on both).
pub(crate) const OWNER_COLUMNS: &str = "owner_id, name, key_digest, eager_sharing, created_at";
pub(crate) const AGENT_COLUMNS: &str = "agent_id, owner_id, name, workspace, created_at, mirror_refreshed_at, last_turn_at, last_wrapup_at, mirror";
/// A skill's columns, with the skills table as `s`.
pub(crate) const SKILL_COLUMNS: &str = "s.skill_id, s.owner_id, s.agent_id, s.agent_name, s.name, s.path, s.kind, s.current_version_id, s.created_at, s.deleted_at,
    s.tags, s.header, s.goal, s.preconditions, s.params, s.result, s.from_skill, s.topics, s.file_digest";
pub(crate) const SKILL_COLUMN_COUNT: usize = 19;
/// A version's columns, with the versions table as `v`.
pub(crate) const VERSION_COLUMNS: &str = "v.version_id, v.owner_id, v.skill_id, v.number, v.digest, v.code, v.parent_version_id, v.lineage, v.inherited, v.uses, v.ok, v.score, v.breakdown, v.measure_key, v.rate_per_minute, v.created_at, v.last_used_at, v.shared_at";
pub(crate) const VERSION_COLUMN_COUNT: usize = 18;
pub(crate) const SNIPPET_COLUMNS: &str =
    "snippet_id, agent_id, digest, code, uses, ok, first_at, last_used_at";

/// A newline-joined list column as a list.
pub(crate) fn lines_of(text: String) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

pub(crate) fn json_map(map: &BTreeMap<String, f64>) -> Option<String> {
    if map.is_empty() {
        None
    } else {
        serde_json::to_string(map).ok()
    }
}

pub(crate) fn parse_map(json: Option<String>) -> BTreeMap<String, f64> {
    json.and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

pub(crate) fn sample_from(outcome: &Outcome, agent: AgentId) -> UseSample {
    UseSample {
        at: outcome.at.div_euclid(1000),
        ok: outcome.ok,
        agent: agent.0,
        duration_ms: outcome.duration_ms,
        xp: outcome.xp.clone(),
        items: outcome.items.clone(),
        goal_progress: outcome.goal_progress,
        deaths: outcome.deaths,
        stuck: outcome.stuck,
        items_lost: outcome.items_lost,
    }
}

/// Puts `sample` in its place in time in a newest-first window (a replayed event may be older
/// than the newest use), cuts the window to the score's, and says where the sample went; a
/// place past the window's end means it fell off.
///
/// The score reads the window as one slice (`make_contiguous`). A new sample mostly goes in
/// front, and once the ring's front reached its buffer's start every such insert wrapped, so
/// that making it one slice again moved every sample, on every use (a thirtieth of the writer's
/// time under `bench serve`). When an insert wraps, the window is laid out again at the end of
/// a buffer with room for a quarter of a window in front of it: the next inserts in front move
/// nothing, and a sample is moved about four times per insert instead of two hundred. (Room
/// for a whole window would move fewer, but a server keeps hundreds of windows: 7 MiB more
/// peak memory under `bench serve`.)
pub(crate) fn insert_sample(window: &mut VecDeque<UseSample>, sample: UseSample) -> usize {
    // Among equal times the newer insert counts as newer, as `use_id DESC` orders it.
    let position = window
        .iter()
        .position(|s| s.at <= sample.at)
        .unwrap_or(window.len());
    window.insert(position, sample);
    window.truncate(SCORE_WINDOW);
    if !window.as_slices().1.is_empty() {
        let mut laid_out = VecDeque::with_capacity(SCORE_WINDOW + SCORE_WINDOW / 4 + 1);
        // Pushed in front from the oldest, the samples fill the buffer from its end down.
        while let Some(oldest) = window.pop_back() {
            laid_out.push_front(oldest);
        }
        *window = laid_out;
    }
    position
}

pub(crate) fn sorted(tags: &[String]) -> Vec<String> {
    let mut tags = tags.to_vec();
    tags.sort();
    tags.dedup();
    tags
}

/// What a version's row says about its runs and score, as the audit reads it.
pub(crate) struct StoredVersion {
    pub version: i64,
    pub label: String,
    pub uses: i64,
    pub ok: i64,
    pub score: f64,
    pub inherited: Option<f64>,
    pub peer_rate: Option<f64>,
    /// The skill's tags, newline-joined (as the skills table keeps them).
    pub tags: String,
}

/// Compares a version's stored counters and score with a recomputation from its uses: the
/// counted rows, and the score of its newest uses under the peer rate its last use recorded.
/// Returns what disagrees, one line each.
pub(crate) fn audit_version(
    stored: &StoredVersion,
    counted_uses: i64,
    counted_ok: i64,
    window: &[UseSample],
) -> Vec<String> {
    let mut problems = Vec::new();
    let label = format!("{} (version {})", stored.label, stored.version);
    if stored.uses != counted_uses || stored.ok != counted_ok {
        problems.push(format!(
            "{label}: the row counts {} runs ({} ok) but {counted_uses} runs ({counted_ok} ok) are recorded",
            stored.uses, stored.ok
        ));
    }
    if counted_uses > 0 {
        let tags = lines_of(stored.tags.clone());
        let measure = Measure::choose(&tags, window);
        let recomputed = score(&ScoreInput {
            window,
            measure: &measure,
            peer_median_rate: if tags.is_empty() {
                None
            } else {
                stored.peer_rate
            },
            inherited: stored.inherited,
        })
        .total;
        if (recomputed - stored.score).abs() > 1e-6 {
            problems.push(format!(
                "{label}: the stored score is {:.3} but its runs give {recomputed:.3}",
                stored.score
            ));
        }
    }
    problems
}

/// What the family sees of a skill at one moment.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct SharingState {
    /// Shared with the family now: headed, its file present, and a version was shared.
    pub visible: bool,
    /// The newest version that was ever shared.
    pub newest_shared: Option<i64>,
}

/// How a change of what the family sees of a skill is logged: shared (with the version now
/// shared) or un-shared, and why. `current` is the skill's current version's number, runs and
/// score; `deleted` and `header` say what its file is now.
pub(crate) fn sharing_change(
    before: &SharingState,
    after: &SharingState,
    current: Option<(i64, i64, f64)>,
    deleted: bool,
    header: &str,
) -> (SharingKind, Option<i64>, String) {
    if after.visible {
        let newly_proven = after.newest_shared != before.newest_shared;
        let reason = match current {
            Some((number, uses, score)) if newly_proven && after.newest_shared == Some(number) => {
                format!(
                    "cleared the bar ({uses} runs, score {})",
                    score.round() as i64
                )
            }
            _ => "shared again: its header and file are back".to_string(),
        };
        (SharingKind::Shared, after.newest_shared, reason)
    } else {
        let reason = if deleted {
            "the file was deleted or renamed"
        } else if HeaderState::parse(header) == HeaderState::Private {
            "the header says @private"
        } else {
            "the @skill header was removed"
        };
        (SharingKind::Unshared, None, reason.to_string())
    }
}

/// The refusal of a new owner or agent whose name is taken, `taken` being the name already in
/// the library: names that differ only in case are one name (`Ada` and `ada` would be two
/// accounts a person cannot tell apart in a list, and two `bots/` folders on a
/// case-insensitive disk).
pub(crate) fn name_taken(kind: &str, name: &str, taken: &str) -> crate::StoreError {
    if taken == name {
        crate::StoreError::Conflict(format!("an {kind} named `{name}` already exists"))
    } else {
        crate::StoreError::Conflict(format!(
            "an {kind} named `{taken}` already exists, and names that differ only in case are one name; choose another name for `{name}`"
        ))
    }
}

/// Refuses to store an owner's key that is not a digest: the key itself must never reach the
/// library, and a caller that passed it by mistake is told so at once.
pub(crate) fn check_key_digest(key_digest: &str) -> Result<(), crate::StoreError> {
    if mindrune_core::is_secret_digest(key_digest) {
        Ok(())
    } else {
        Err(crate::StoreError::Conflict(
            "an owner's key is stored only as its digest: pass `secret_digest(key)`, not the key"
                .into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at: i64) -> UseSample {
        UseSample {
            at,
            ok: true,
            agent: 1,
            duration_ms: 1_000,
            xp: Default::default(),
            items: Default::default(),
            goal_progress: 0.0,
            deaths: 0,
            stuck: false,
            items_lost: 0,
        }
    }

    #[test]
    fn a_window_stays_one_slice_newest_first_and_cut_to_the_score_s_as_samples_come() {
        let mut window: VecDeque<UseSample> = (0..SCORE_WINDOW as i64)
            .rev()
            .map(|at| sample(at * 10))
            .collect();
        for step in 0..5 * SCORE_WINDOW as i64 {
            // Mostly a newer use, now and then a replayed older one.
            let at = if step % 7 == 3 {
                10 * step - 15
            } else {
                10 * (SCORE_WINDOW as i64 + step)
            };
            let position = insert_sample(&mut window, sample(at));
            assert!(
                window.as_slices().1.is_empty(),
                "step {step}: the window wraps"
            );
            assert!(window.len() <= SCORE_WINDOW);
            assert!(
                window
                    .iter()
                    .zip(window.iter().skip(1))
                    .all(|(a, b)| a.at >= b.at),
                "step {step}: not newest first"
            );
            if position < window.len() {
                assert_eq!(window[position].at, at, "step {step}");
            }
        }
    }
}
