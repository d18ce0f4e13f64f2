//! A SQLite write group's uses and rescores, kept in memory and written when something needs
//! them: before any other statement of the group, and before its commit.
//!
//! Every grouped use was its own savepoint (so that it fails alone): `SAVEPOINT`, the insert,
//! `RELEASE`, and SQLite copying each page the insert touched (the table's and its three
//! indexes') into the savepoint's journal first, about a tenth of a grouped use in
//! `bench record`. A use whose version's row and window the group keeps needs no other
//! statement: what its insert checked in SQL (is the event id stored? is the agent the
//! family's?) is answered from the table and from what waits here, and the insert itself waits.
//! Its piece of the group then runs no statement that writes, and needs no savepoint
//! (`SqliteTx` begins one only before the first statement that needs what waits).
//!
//! Architecture invariant: a use or rescore waits here only while nothing but recording uses
//! has touched the connection. Whatever else uses it writes what waits first: the store's
//! `lock` (every other operation of the store, the group's commit included), a read of uses
//! (`lock_reading_uses`), and every statement of a [`super::family_tx::SqliteTx`] but the
//! look-ups that know what waits (an event id, an agent; a version's row, which writes that
//! version's rescores first; a peer look-up, the rescores; a window, the uses). The
//! group's waiting writes are written outside the savepoint of a later piece of work, so that
//! piece's failure cannot take them back with it; a write that fails there loses the group: it
//! rolls back instead of committing, and every request in it is answered with the error.

use std::collections::HashSet;

use rusqlite::{Connection, params};

use super::{db_err, version_writes};
use crate::common::json_map;
use crate::version_writes::VersionWrites;
use crate::{NewUse, OwnerId, Result};

/// Uses recorded and not inserted yet, and rescores not written yet.
#[derive(Default)]
pub(crate) struct GroupWaiting {
    /// In the order they were recorded: their row ids follow it, as one at a time.
    uses: Vec<(OwnerId, NewUse)>,
    /// The event ids of `uses` (a hit is checked against its use's owner).
    event_ids: HashSet<String>,
    pub(super) versions: VersionWrites,
}

impl GroupWaiting {
    pub(super) fn is_empty(&self) -> bool {
        self.uses.is_empty() && self.versions.is_empty()
    }

    pub(super) fn has_uses(&self) -> bool {
        !self.uses.is_empty()
    }

    /// Whether a waiting use of `owner`'s family has the event id `id`.
    pub(super) fn holds_event(&self, owner: OwnerId, id: &str) -> bool {
        self.event_ids.contains(id)
            && self
                .uses
                .iter()
                .any(|(of, u)| *of == owner && u.event_id.as_deref() == Some(id))
    }

    /// Keeps a use to be inserted later.
    pub(super) fn keep_use(&mut self, owner: OwnerId, new_use: NewUse) {
        if let Some(id) = &new_use.event_id {
            self.event_ids.insert(id.clone());
        }
        self.uses.push((owner, new_use));
    }

    /// Adds `later`'s writes after these (one piece of the group's, once it is kept).
    pub(super) fn append(&mut self, later: GroupWaiting) {
        self.uses.extend(later.uses);
        self.event_ids.extend(later.event_ids);
        self.versions.append(later.versions);
    }

    /// Inserts every waiting use and writes every waiting rescore. After an error part of them
    /// may be written: the caller loses the group (or the piece of it they belong to).
    pub(super) fn write(&mut self, conn: &Connection) -> Result<()> {
        self.write_uses(conn)?;
        version_writes::write(&mut self.versions, conn)
    }

    /// Inserts every waiting use, in order (see [`GroupWaiting::write`] for an error).
    pub(super) fn write_uses(&mut self, conn: &Connection) -> Result<()> {
        if self.uses.is_empty() {
            return Ok(());
        }
        self.event_ids.clear();
        let mut insert = conn
            .prepare_cached(
                "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                                   deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
            )
            .map_err(db_err)?;
        for (owner, new_use) in self.uses.drain(..) {
            insert_row(&mut insert, owner, &new_use)?;
        }
        Ok(())
    }
}

/// Runs `insert` for one use's row, its 19 parameters the columns in the order of
/// [`GroupWaiting::write_uses`]; answers the rows inserted.
pub(super) fn insert_row(
    insert: &mut rusqlite::Statement<'_>,
    owner: OwnerId,
    new_use: &NewUse,
) -> Result<usize> {
    let outcome = &new_use.outcome;
    insert
        .execute(params![
            owner.0,
            new_use.version.0,
            new_use.agent.0,
            outcome.at,
            outcome.ok,
            outcome.duration_ms.min(i64::MAX as u64) as i64,
            json_map(&outcome.xp),
            json_map(&outcome.items),
            outcome.goal_progress,
            outcome.deaths,
            outcome.stuck,
            outcome.items_lost,
            new_use.source,
            new_use.call,
            new_use.output,
            new_use.event_id,
            new_use.recorded_at,
            outcome.failure,
            outcome.unmeasured,
        ])
        .map_err(db_err)
}
