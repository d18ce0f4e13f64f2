//! SQLite's writes of a write group's waiting rescores ([`crate::version_writes`]).
//!
//! They wait with the group's uses, under the invariant of [`super::group_writes`]: reading a
//! version's row for a use writes that version's own rescores first (and reads no other
//! version's row), and a window is uses alone. So no statement ever reads a version's row, a
//! family's scores or its sharing without the group's rescores.

use rusqlite::{Connection, params};

use super::db_err;
use crate::Result;
use crate::rules::Rescore;
use crate::version_writes::{VersionWrites, Waiting};
use crate::{Millis, OwnerId};

/// Writes every waiting rescore of `writes` to its version's row, and forgets them. On an error
/// the rescores not written yet stay.
pub(super) fn write(writes: &mut VersionWrites, conn: &Connection) -> Result<()> {
    while let Some((version, waiting)) = writes.pop_first() {
        if let Err(err) = write_one(conn, version, &waiting) {
            writes.add(version, waiting);
            return Err(err);
        }
    }
    Ok(())
}

/// Writes `version`'s waiting rescores of `writes` to its row, if any wait, like [`write`].
pub(super) fn write_version(
    writes: &mut VersionWrites,
    version: i64,
    conn: &Connection,
) -> Result<()> {
    let Some(waiting) = writes.take(version) else {
        return Ok(());
    };
    write_one(conn, version, &waiting).inspect_err(|_| writes.add(version, waiting))
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
