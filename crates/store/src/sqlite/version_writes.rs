//! SQLite's writes of a write group's waiting rescores ([`crate::version_writes`]).
//!
//! Architecture invariant: a rescore waits only while nothing but recording uses has touched
//! the connection. Anything else that uses it writes the waiting rescores first: the store's
//! `lock` (every other operation of the store, the group's commit included), and every
//! statement of a [`super::family_tx::SqliteTx`] but inserting a use. So no statement ever
//! reads a version's row, a family's scores or its sharing without the group's rescores.

use rusqlite::{Connection, params};

use super::db_err;
use crate::Result;
use crate::rules::Rescore;
use crate::version_writes::{VersionWrites, Waiting};
use crate::{Millis, OwnerId};

/// Writes every waiting rescore of `writes` to its version's row, and forgets them; what was
/// written is also moved into `written` when given (to be kept again if the savepoint it was
/// written in rolls back). On an error the rescores not written yet stay.
pub(super) fn write(
    writes: &mut VersionWrites,
    conn: &Connection,
    mut written: Option<&mut VersionWrites>,
) -> Result<()> {
    while let Some((version, waiting)) = writes.pop_first() {
        if let Err(err) = write_one(conn, version, &waiting) {
            writes.add(version, waiting);
            return Err(err);
        }
        if let Some(written) = written.as_deref_mut() {
            written.add(version, waiting);
        }
    }
    Ok(())
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
    let last_used_at: Millis = waiting.last_used_at;
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
        last_used_at,
        last.peer_rate,
        last.peer_checked_uses,
    ])
    .map_err(db_err)?;
    Ok(())
}
