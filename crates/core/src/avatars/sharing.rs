//! The sharing bar, and which version of a shared skill siblings get.
//!
//! A headed script is shared only once its current version has proven itself: enough recorded
//! runs of that version and a high enough score. The owner can lower the bar for the family
//! (eager family sharing). Nothing here decides whether a script has a header: that is the
//! agent's choice, read from the file; this module only answers "has it proven itself?".

use crate::score::{EAGER_SHARE_BAR_RUNS, EAGER_SHARE_BAR_SCORE, SHARE_BAR_RUNS, SHARE_BAR_SCORE};

/// What a version must reach, on its own runs, before a headed script is shared.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SharingBar {
    /// Recorded runs of the version itself (inherited score brings no runs).
    pub runs: i64,
    /// The version's score, 0–1000.
    pub score: f64,
}

impl SharingBar {
    /// The standard bar: 5 runs and a score of 600.
    pub const STANDARD: SharingBar = SharingBar {
        runs: SHARE_BAR_RUNS as i64,
        score: SHARE_BAR_SCORE,
    };
    /// Eager family sharing: 3 runs and a score of 500.
    pub const EAGER: SharingBar = SharingBar {
        runs: EAGER_SHARE_BAR_RUNS as i64,
        score: EAGER_SHARE_BAR_SCORE,
    };

    /// The bar for a family, by its owner's setting.
    pub fn for_family(eager: bool) -> SharingBar {
        if eager {
            SharingBar::EAGER
        } else {
            SharingBar::STANDARD
        }
    }

    /// The lowest bar any family can have: below it no version can qualify, so callers may skip
    /// the look-ups a sharing decision needs.
    pub fn lowest() -> SharingBar {
        SharingBar {
            runs: SharingBar::STANDARD.runs.min(SharingBar::EAGER.runs),
            score: SharingBar::STANDARD.score.min(SharingBar::EAGER.score),
        }
    }

    /// Whether a version with these counts has proven itself.
    pub fn cleared_by(&self, runs: i64, score: f64) -> bool {
        runs >= self.runs && score >= self.score
    }

    /// The progress line of a headed script that is not shared yet, as the wrap-up and the
    /// turn report print it: `skill-fight.ts: 3/5 runs, score 540/600 — not shared yet`.
    pub fn progress(&self, file: &str, runs: i64, score: f64) -> String {
        let (score, bar) = (score.round() as i64, self.score.round() as i64);
        if runs < self.runs {
            format!(
                "{file}: {runs}/{} runs, score {score}/{bar} — not shared yet",
                self.runs
            )
        } else {
            // Past the runs bar, the runs are said as they are: "5/5" of a script with 14 runs
            // would hide how long it has been held back by its score.
            format!(
                "{file}: {runs} runs (bar {}), score {score} (bar {bar}) — not shared yet",
                self.runs
            )
        }
    }
}

/// One version of a skill as the choice of the siblings' version sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VersionStanding {
    pub number: i64,
    pub runs: i64,
    pub score: f64,
    /// The version was shared: it cleared the bar while it was the headed file's version.
    pub shared: bool,
}

/// Which version siblings get, as an index into `versions`: the newest shared version that
/// clears the bar on its own runs; if none does, the best-scoring shared one. `None` when no
/// version was ever shared. A newer version that has not proven itself never replaces a proven
/// one, because only shared versions are candidates and a version is shared only by clearing
/// the bar.
pub fn version_for_siblings(versions: &[VersionStanding], bar: SharingBar) -> Option<usize> {
    let shared = versions.iter().enumerate().filter(|(_, v)| v.shared);
    let proven = shared
        .clone()
        .filter(|(_, v)| bar.cleared_by(v.runs, v.score))
        .max_by_key(|(_, v)| v.number);
    proven
        .or_else(|| {
            shared.max_by(|(_, a), (_, b)| {
                a.score
                    .total_cmp(&b.score)
                    .then_with(|| a.number.cmp(&b.number))
            })
        })
        .map(|(index, _)| index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(number: i64, runs: i64, score: f64, shared: bool) -> VersionStanding {
        VersionStanding {
            number,
            runs,
            score,
            shared,
        }
    }

    #[test]
    fn the_standard_bar_is_five_runs_and_600() {
        assert!(SharingBar::STANDARD.cleared_by(5, 600.0));
        assert!(!SharingBar::STANDARD.cleared_by(4, 900.0));
        assert!(!SharingBar::STANDARD.cleared_by(50, 599.9));
    }

    #[test]
    fn the_eager_bar_is_three_runs_and_500() {
        assert_eq!(SharingBar::for_family(true), SharingBar::EAGER);
        assert!(SharingBar::EAGER.cleared_by(3, 500.0));
        assert!(!SharingBar::EAGER.cleared_by(2, 800.0));
        assert_eq!(SharingBar::lowest(), SharingBar::EAGER);
    }

    #[test]
    fn the_progress_line_reads_like_the_spec() {
        assert_eq!(
            SharingBar::STANDARD.progress("skill-fight.ts", 3, 540.2),
            "skill-fight.ts: 3/5 runs, score 540/600 — not shared yet"
        );
    }

    #[test]
    fn past_the_runs_bar_the_progress_line_says_the_runs_as_they_are() {
        assert_eq!(
            SharingBar::STANDARD.progress("mine-iron.ts", 14, 492.4),
            "mine-iron.ts: 14 runs (bar 5), score 492 (bar 600) — not shared yet"
        );
        assert_eq!(
            SharingBar::EAGER.progress("fish.ts", 3, 480.0),
            "fish.ts: 3 runs (bar 3), score 480 (bar 500) — not shared yet"
        );
    }

    #[test]
    fn siblings_get_the_newest_proven_shared_version() {
        let versions = [
            v(1, 9, 640.0, true),
            v(2, 6, 700.0, true),
            v(3, 2, 590.0, false),
        ];
        assert_eq!(
            version_for_siblings(&versions, SharingBar::STANDARD),
            Some(1)
        );
    }

    #[test]
    fn an_unproven_newer_version_never_replaces_a_proven_one() {
        // v2 was shared but has since dropped below the bar; v1 still clears it.
        let versions = [v(1, 9, 640.0, true), v(2, 7, 560.0, true)];
        assert_eq!(
            version_for_siblings(&versions, SharingBar::STANDARD),
            Some(0)
        );
    }

    #[test]
    fn without_a_proven_version_the_best_scoring_shared_one_is_given() {
        // Shared under the eager bar, then eager was switched off: the skill stays shared.
        let versions = [v(1, 3, 540.0, true), v(2, 4, 560.0, true)];
        assert_eq!(
            version_for_siblings(&versions, SharingBar::STANDARD),
            Some(1)
        );
    }

    #[test]
    fn a_skill_never_shared_gives_siblings_nothing() {
        let versions = [v(1, 9, 900.0, false)];
        assert_eq!(version_for_siblings(&versions, SharingBar::STANDARD), None);
    }

    proptest! {
        #[test]
        fn the_chosen_version_is_always_a_shared_one(
            versions in proptest::collection::vec((0i64..20, 0.0f64..1000.0, any::<bool>()), 0..12),
            eager in any::<bool>(),
        ) {
            let versions: Vec<VersionStanding> = versions
                .into_iter()
                .enumerate()
                .map(|(i, (runs, score, shared))| v(i as i64 + 1, runs, score, shared))
                .collect();
            let chosen = version_for_siblings(&versions, SharingBar::for_family(eager));
            prop_assert_eq!(chosen.is_some(), versions.iter().any(|v| v.shared));
            if let Some(index) = chosen {
                prop_assert!(versions[index].shared);
            }
        }
    }
}
