//! How every face (the command line, the dashboard, the console, INDEX.md) writes a time, a
//! score and a skill's best version, so they never disagree on what they show.
//!
//! Architecture invariant: a score is shown as of a clock. Every view reads its skills through
//! [`skills_as_of`] (or a version through `Version::as_of`) with the clock it shows, so the
//! same version at the same clock is the same number everywhere: freshness aged to that clock,
//! as the spec's freshness says old records drift back to the middle.

use mindrune_store::{Millis, OwnerId, SkillEntry, Store, StoreError, Version};

/// A time as every face shows it: `2025-06-01 14:02` (UTC); `never` when there is none, `?`
/// when it is outside the calendar.
pub fn when(millis: Option<i64>) -> String {
    let Some(millis) = millis else {
        return "never".into();
    };
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(millis) * 1_000_000)
    else {
        return "?".into();
    };
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]");
    at.format(&format).unwrap_or_else(|_| "?".into())
}

/// How long ago `at` was, as a person says it at `now`: `just now`, `5 min ago`, `3 h ago`,
/// `8 d ago` (a time ahead of `now`, from a clock that is ahead, is `just now`).
pub fn ago(at: i64, now: i64) -> String {
    let seconds = (now - at).max(0) / 1000;
    match seconds {
        0..60 => "just now".into(),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// Scores are kept exact and shown as whole points (0–1000).
pub fn points(score: f64) -> i64 {
    score.round() as i64
}

/// The best-scoring other version than `shown`, when it scored higher than `shown`.
pub fn best_other<'a>(versions: &'a [Version], shown: &Version) -> Option<&'a Version> {
    versions
        .iter()
        .filter(|v| v.id != shown.id && v.score > shown.score)
        .max_by(|a, b| a.score.total_cmp(&b.score))
}

/// The owner's skills (of one agent, or all) as every view shows them at `now`: each shown
/// version's score aged to `now`, and "best" the best other version at `now` (a version's age
/// changes its score, so the best is chosen again at the clock).
pub fn skills_as_of(
    store: &dyn Store,
    owner: OwnerId,
    agent: Option<mindrune_store::AgentId>,
    now: Millis,
) -> Result<Vec<SkillEntry>, StoreError> {
    let mut entries = store.skills(owner, agent)?;
    for entry in &mut entries {
        entry.version = entry.version.clone().as_of(now);
        if entry.version_count > 1 {
            let versions: Vec<Version> = store
                .versions(owner, entry.skill.id)?
                .into_iter()
                .map(|v| v.as_of(now))
                .collect();
            entry.best = best_other(&versions, &entry.version).map(|b| (b.number, b.score));
        }
    }
    // Best score first, as the store gives them, at the clock.
    entries.sort_by(|a, b| b.version.score.total_cmp(&a.version.score));
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_ago_is_said_in_the_largest_whole_unit() {
        let now = 100 * 86_400_000;
        assert_eq!(ago(now - 5_000, now), "just now");
        assert_eq!(ago(now - 5 * 60_000, now), "5 min ago");
        assert_eq!(ago(now - 3 * 3_600_000 - 59_000, now), "3 h ago");
        assert_eq!(ago(now - 8 * 86_400_000 - 1, now), "8 d ago");
        assert_eq!(ago(now + 60_000, now), "just now");
    }
    use mindrune_store::{OwnerId, SkillId, VersionId};

    fn version(id: i64, score: f64) -> Version {
        Version {
            id: VersionId(id),
            owner: OwnerId(1),
            skill: SkillId(1),
            number: id,
            digest: String::new(),
            code: String::new(),
            parent: None,
            lineage: None,
            inherited: None,
            uses: 0,
            ok: 0,
            score,
            breakdown: None,
            measure_key: "none".into(),
            rate_per_minute: 0.0,
            created_at: 0,
            last_used_at: None,
            shared_at: None,
        }
    }

    #[test]
    fn times_are_minutes_in_utc() {
        assert_eq!(when(None), "never");
        assert_eq!(when(Some(0)), "1970-01-01 00:00");
        assert_eq!(when(Some(1_748_786_520_000)), "2025-06-01 14:02");
        assert_eq!(when(Some(i64::MAX)), "?");
    }

    #[test]
    fn points_round_to_the_nearest_whole() {
        assert_eq!(points(811.5), 812);
        assert_eq!(points(811.49), 811);
        assert_eq!(points(0.0), 0);
    }

    #[test]
    fn the_best_other_version_beats_the_shown_one_or_is_none() {
        let versions = [version(3, 500.0), version(2, 812.0), version(1, 700.0)];
        assert_eq!(
            best_other(&versions, &versions[0]).map(|v| v.number),
            Some(2)
        );
        assert_eq!(best_other(&versions, &versions[1]), None);
        assert_eq!(best_other(&versions[..1], &versions[0]), None);
    }
}
