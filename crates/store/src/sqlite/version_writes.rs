//! A write group's rescores of versions, kept in memory and written once per version.
//!
//! Every recorded use rescores its version (`rules::recording::record_use`): one `UPDATE` of
//! the version's row, which holds its code, so the row is rewritten whole. Inside a write group
//! the grouped uses of one script rewrote it once each (`bench record` in groups of 100: a
//! twelfth of the time, its breakdown's JSON included). Here a group's rescores of a version
//! add up in memory instead, and the row is written once, with the same result as one at a
//! time: the counts added, the later of the times, the last use's score.
//!
//! Architecture invariant: a rescore waits here only while nothing but recording uses has
//! touched the connection. Anything else that uses it writes the waiting rescores first: the
//! store's `lock` (every other operation of the store, the group's commit included), and every
//! statement of a [`super::family_tx::SqliteTx`] but inserting a use. So no statement ever
//! reads a version's row, a family's scores or its sharing without the group's rescores.

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use rusqlite::{Connection, params};

use super::db_err;
use crate::Result;
use crate::rules::Rescore;
use crate::{Millis, OwnerId};

/// The rescores of versions not written yet, by version.
#[derive(Default)]
pub(super) struct VersionWrites {
    waiting: BTreeMap<i64, Waiting>,
}

/// One version's rescores since its row was last written.
struct Waiting {
    owner: OwnerId,
    /// Uses recorded, and how many of them succeeded.
    uses: i64,
    ok: i64,
    /// The latest of the uses' times.
    last_used_at: Millis,
    /// The last use's rescore: its score, breakdown, measure and peers stand for the row.
    last: Rescore,
}

impl VersionWrites {
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Keeps a use's rescore of `version` to be written later.
    pub(super) fn keep(&mut self, owner: OwnerId, version: i64, rescore: Rescore) {
        self.add(version, Waiting::one(owner, rescore));
    }

    /// Adds `later`'s rescores after these (the writes of one write of the group, once it is
    /// kept).
    pub(super) fn append(&mut self, later: VersionWrites) {
        for (version, next) in later.waiting {
            self.add(version, next);
        }
    }

    /// `next` after what waits for `version`.
    fn add(&mut self, version: i64, next: Waiting) {
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

    /// Writes every waiting rescore to its version's row, and forgets them; what was written is
    /// also moved into `written` when given (to be kept again if the savepoint it was written in
    /// rolls back). On an error the rescores not written yet stay.
    pub(super) fn write(
        &mut self,
        conn: &Connection,
        mut written: Option<&mut VersionWrites>,
    ) -> Result<()> {
        while let Some((version, waiting)) = self.waiting.pop_first() {
            if let Err(err) = write_one(conn, version, &waiting) {
                self.waiting.insert(version, waiting);
                return Err(err);
            }
            if let Some(written) = written.as_deref_mut() {
                written.add(version, waiting);
            }
        }
        Ok(())
    }
}

impl Waiting {
    fn one(owner: OwnerId, rescore: Rescore) -> Waiting {
        Waiting {
            owner,
            uses: 1,
            ok: i64::from(rescore.ok),
            last_used_at: rescore.at,
            last: rescore,
        }
    }
}

/// Writes one use's rescore of `version` to its row at once (outside a write group).
pub(super) fn write_now(
    conn: &Connection,
    owner: OwnerId,
    version: i64,
    rescore: Rescore,
) -> Result<()> {
    write_one(conn, version, &Waiting::one(owner, rescore))
}

/// One version's row rescored at once, as its rescores one at a time would leave it.
fn write_one(conn: &Connection, version: i64, waiting: &Waiting) -> Result<()> {
    let last = &waiting.last;
    conn.prepare_cached(
        "UPDATE versions SET uses = uses + ?3, ok = ok + ?4, score = ?5, breakdown = ?6, measure_key = ?7,
                rate_per_minute = ?8, last_used_at = MAX(COALESCE(last_used_at, ?9), ?9),
                peer_rate = ?10, peer_checked_uses = ?11
         WHERE owner_id = ?1 AND version_id = ?2",
    )
    .map_err(db_err)?
    .execute(params![
        waiting.owner.0,
        version,
        waiting.uses,
        waiting.ok,
        last.breakdown.total,
        last.breakdown_json(),
        last.measure_key,
        last.breakdown.rate_per_minute,
        waiting.last_used_at,
        last.peer_rate,
        last.peer_checked_uses,
    ])
    .map_err(db_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_core::score::ScoreBreakdown;

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
    }
}
