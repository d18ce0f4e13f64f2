//! A write group's rescores of versions, kept in memory and written once per version, on
//! either backend.
//!
//! Every recorded use rescores its version (`rules::recording::record_use`): one `UPDATE` of
//! the version's row, which holds its code, so the row is rewritten whole. Inside a write group
//! the grouped uses of one script rewrote it once each (`bench record` in groups of 100: a
//! twelfth of the time, its breakdown's JSON included; on PostgreSQL a round trip each). Here a
//! group's rescores of a version add up in memory instead, and the row is written once, with
//! the same result as one at a time: the counts added, the later of the times, the last use's
//! score. Each backend writes them with its own SQL (`sqlite::version_writes`,
//! `postgres::group_writes`), and says when in its architecture invariant.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::rules::Rescore;
use crate::{Millis, OwnerId};

/// The rescores of versions not written yet, by version.
#[derive(Default)]
pub(crate) struct VersionWrites {
    waiting: BTreeMap<i64, Waiting>,
}

/// One version's rescores since its row was last written.
pub(crate) struct Waiting {
    pub owner: OwnerId,
    /// Uses recorded, and how many of them succeeded.
    pub uses: i64,
    pub ok: i64,
    /// The latest of the uses' times.
    pub last_used_at: Millis,
    /// The last use's rescore: its score, breakdown, measure and peers stand for the row.
    pub last: Rescore,
}

impl VersionWrites {
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Keeps a use's rescore of `version` to be written later.
    pub(crate) fn keep(&mut self, owner: OwnerId, version: i64, rescore: Rescore) {
        self.add(version, Waiting::one(owner, rescore));
    }

    /// Adds `later`'s rescores after these (the writes of one write of the group, once it is
    /// kept).
    pub(crate) fn append(&mut self, later: VersionWrites) {
        for (version, next) in later.waiting {
            self.add(version, next);
        }
    }

    /// `next` after what waits for `version`.
    pub(crate) fn add(&mut self, version: i64, next: Waiting) {
        match self.waiting.entry(version) {
            Entry::Vacant(entry) => {
                entry.insert(next);
            }
            Entry::Occupied(mut entry) => {
                let waiting = entry.get_mut();
                waiting.uses += next.uses;
                waiting.ok += next.ok;
                waiting.last_used_at = waiting.last_used_at.max(next.last_used_at);
                waiting.last = next.last;
            }
        }
    }

    /// Whether rescores of `version` wait.
    pub(crate) fn has(&self, version: i64) -> bool {
        self.waiting.contains_key(&version)
    }

    /// `version`'s rescores, taken out.
    pub(crate) fn take(&mut self, version: i64) -> Option<Waiting> {
        self.waiting.remove(&version)
    }

    /// The version with the lowest id and its rescores, taken out.
    pub(crate) fn pop_first(&mut self) -> Option<(i64, Waiting)> {
        self.waiting.pop_first()
    }

    /// Every waiting version and its rescores, by version id.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, &Waiting)> {
        self.waiting
            .iter()
            .map(|(version, waiting)| (*version, waiting))
    }
}

impl Waiting {
    /// One use's rescore.
    pub(crate) fn one(owner: OwnerId, rescore: Rescore) -> Waiting {
        Waiting {
            owner,
            uses: 1,
            ok: i64::from(rescore.ok),
            last_used_at: rescore.at,
            last: rescore,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_core::ScoreBreakdown;

    fn rescore(ok: bool, score: f64, at: Millis) -> Rescore {
        Rescore {
            ok,
            breakdown: ScoreBreakdown {
                reliability: 0.0,
                effectiveness: 0.0,
                confidence: 0.0,
                freshness: 0.0,
                damage: 0.0,
                own: score,
                total: score,
                rate_per_minute: score / 10.0,
                fresh_weight: None,
                fresh_weighted_ok: None,
            },
            measure_key: "xp".into(),
            at,
            peer_rate: None,
            peer_checked_uses: Some(1),
        }
    }

    #[test]
    fn rescores_of_a_version_add_their_counts_keep_the_latest_time_and_the_last_score() {
        let mut writes = VersionWrites::default();
        writes.keep(OwnerId(1), 7, rescore(true, 10.0, 300));
        writes.keep(OwnerId(1), 7, rescore(false, 20.0, 100));
        let mut later = VersionWrites::default();
        later.keep(OwnerId(1), 7, rescore(true, 30.0, 200));
        later.keep(OwnerId(1), 8, rescore(true, 40.0, 50));
        writes.append(later);
        let seven = &writes.waiting[&7];
        assert_eq!((seven.uses, seven.ok, seven.last_used_at), (3, 2, 300));
        assert_eq!(seven.last.breakdown.total, 30.0);
        assert_eq!(writes.waiting[&8].uses, 1);
        let order: Vec<i64> = writes.iter().map(|(version, _)| version).collect();
        assert_eq!(order, [7, 8]);
    }
}
