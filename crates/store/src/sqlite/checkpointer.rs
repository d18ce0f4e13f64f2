//! WAL checkpoints on a thread of their own.
//!
//! SQLite copies the write-ahead log back into the database file (a checkpoint) from inside
//! the commit that pushed the log past 1,000 pages, on the committing thread. That commit
//! then waits for the copy and its `fsync`: under the server's load it was a sixth of the
//! writer's time (`perf`, `bench serve`), time in which no other group could commit. Here the
//! library's connection only notes, after each commit, that the log is long; a second
//! connection on its own thread runs the checkpoint (`PASSIVE`: it never blocks a writer or a
//! reader), so the writer goes on with the next group while the log is copied. The thread is
//! nudged once a stretch of new log gathered ([`CHECKPOINT_PAGES`]), not at every commit: a
//! checkpoint copies a page once however many commits wrote it.
//!
//! A checkpoint that runs beside the writer never finishes the log, though: by the time it has
//! copied what it saw, the writer has appended more, and SQLite starts the log over only after
//! a checkpoint that copied all of it. Left alone, the log grew by 200 MB a second under
//! `bench serve` (4 GB in 20 s), and every commit paid the kernel for zeroing the new end of
//! the file. So once the log is [`CATCH_UP_PAGES`] long, the committing connection copies the
//! rest itself (little is left: over the last stretch the thread is nudged at every commit), and
//! the next write starts the log over from its beginning. SQLite runs one checkpoint at a time
//! and fails a second at once, so the two take turns on a lock of their own rather than the
//! committing one retrying until the thread happens to pause.
//!
//! That copy is the one time a commit waits for a checkpoint, and every request queued behind
//! the commit waits with it: two `fsync` calls (the log's, then the library's), 20–50 ms on a
//! virtual disk. Under `bench serve` the log reached 16,000 pages about every 0.4 s (at the rate
//! it reaches 64,000 in 1.5 s) and the catch-ups were what made the requests' p99 (72 ms
//! against a p50 of 20). So the log may grow
//! to [`CATCH_UP_PAGES`] = 64,000 pages (256 MiB, reached every 1.5 s under that load; a
//! library that is not under load never comes near it), the thread is not nudged again once
//! the log is that long, and a commit that finds the thread still copying does not wait for it
//! (which would be the rest of the thread's copy and its `fsync` calls, then its own): the next
//! commit tries again, and only a log [`CHECKPOINT_PAGES`] past the catch-up waits.
//!
//! Nothing about durability changes: a commit is in the log before it is answered either way,
//! and a checkpoint only moves committed pages. When the store is dropped the thread is
//! stopped and joined before the library's connection closes, so that connection is still
//! the last one and its close checkpoints and removes the log as before.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, TrySendError};
use std::sync::{Arc, Mutex, TryLockError};
use std::thread::JoinHandle;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

use super::{BUSY_TIMEOUT, db_err};
use crate::Result;

/// How much new log, in pages, the thread lets gather before it copies it. A checkpoint copies
/// each page once, its newest frame, however often the log holds it; and the pages a group
/// writes are much the same from one group to the next (each version's newest leaf of the
/// uses' indexes, the versions' rows). Copying every commit's frames as they came (a nudge at
/// every commit past SQLite's 1,000) copied about every frame: three pages per event under
/// `bench serve`; copying stretches of 4,000 copies 1.7, and the thread's share of the
/// machine went from a sixth to a tenth.
const CHECKPOINT_PAGES: i32 = 4_000;
/// The log's length, in pages, at which the committing connection finishes the checkpoint
/// itself, so that the log starts over (see the module docs): about 256 MiB of log.
const CATCH_UP_PAGES: i32 = 16 * CHECKPOINT_PAGES;
/// The log's length at which the committing connection waits for the thread's copy to end
/// before it finishes the checkpoint: the thread has been copying for a stretch.
const CATCH_UP_WAITING_PAGES: i32 = CATCH_UP_PAGES + CHECKPOINT_PAGES;

/// When the library's connection nudges the thread: once a stretch of [`CHECKPOINT_PAGES`]
/// gathered since the last nudge, and at every commit over the last stretch before
/// [`CATCH_UP_PAGES`], so that the copy the committing connection then makes is short; past
/// it, not at all, so that the thread's turn comes free for the committing connection.
#[derive(Debug, Default)]
struct Schedule {
    /// The log's length at the last nudge.
    asked_at: i32,
}

impl Schedule {
    /// Whether the commit that left `pages` pages in the log nudges the thread.
    fn nudge_due(&mut self, pages: i32) -> bool {
        // A shorter log than at the last nudge started over.
        if pages < self.asked_at {
            self.asked_at = 0;
        }
        let due = pages < CATCH_UP_PAGES
            && (pages >= self.asked_at + CHECKPOINT_PAGES
                || pages >= CATCH_UP_PAGES - CHECKPOINT_PAGES);
        if due {
            self.asked_at = pages;
        }
        due
    }
}

/// The checkpointing thread of one store.
pub(super) struct Checkpointer {
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts checkpointing the library at `path` for `conn` (the library's connection), whose
    /// automatic checkpoint it takes over.
    pub(super) fn start(conn: &mut Connection, path: &Path) -> Result<Checkpointer> {
        let own = Connection::open(path).map_err(db_err)?;
        own.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        // A connection learns the library is in WAL mode when it first reads it; until then a
        // checkpoint through it does nothing (and says -1).
        own.query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0))
            .map_err(db_err)?;
        // One nudge waiting is enough: the checkpoint it starts copies whatever is in the log
        // by then.
        let (nudge, nudged) = mpsc::sync_channel::<()>(1);
        let turn = Arc::new(Mutex::new(()));
        let threads_turn = Arc::clone(&turn);
        let thread = std::thread::Builder::new()
            .name("mindrune-checkpoint".into())
            .spawn(move || checkpoint_when_nudged(&own, &nudged, &threads_turn))
            .map_err(|err| {
                crate::StoreError::Database(format!(
                    "could not start the library's checkpoint thread: {err}"
                ))
            })?;
        // Setting a WAL hook replaces SQLite's automatic checkpoint on this connection.
        let mut schedule = Schedule::default();
        conn.wal_hook(Some(
            move |wal: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
                let thread_gone = schedule.nudge_due(pages)
                    && matches!(nudge.try_send(()), Err(TrySendError::Disconnected(())));
                // The log must not grow without end: past CATCH_UP_PAGES (or if the thread is
                // gone: it does not panic, but if it did) this commit checkpoints as SQLite
                // would have, when the thread is not copying; past CATCH_UP_WAITING_PAGES, once
                // the thread's copy ended. Its failure is no failure of the commit, as with
                // SQLite's own; the next commit tries again.
                if pages >= CATCH_UP_PAGES || thread_gone {
                    let my_turn = if pages >= CATCH_UP_WAITING_PAGES || thread_gone {
                        Some(turn.lock().unwrap_or_else(|e| e.into_inner()))
                    } else {
                        match turn.try_lock() {
                            Ok(held) => Some(held),
                            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                            Err(TryLockError::WouldBlock) => None,
                        }
                    };
                    if my_turn.is_some() {
                        let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
                    }
                }
                Ok(())
            },
        ))
        .map_err(db_err)?;
        Ok(Checkpointer {
            thread: Some(thread),
        })
    }

    /// Stops the thread: `conn` loses its hook (and with it the thread's only sender), and the
    /// thread ends after the checkpoint it may be running.
    pub(super) fn stop(&mut self, conn: &mut Connection) {
        let _ = conn.wal_hook(None::<fn(&mut rusqlite::hooks::Wal, std::ffi::c_int) -> _>);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn checkpoint_when_nudged(conn: &Connection, nudged: &Receiver<()>, turn: &Mutex<()>) {
    while nudged.recv().is_ok() {
        let _turn = turn.lock().unwrap_or_else(|e| e.into_inner());
        match conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            Ok(_) => {}
            // Another connection's checkpoint (another process's, or a connection closing) is
            // running: this one would have copied the same log. The next commit asks again.
            Err(rusqlite::Error::SqliteFailure(failure, _))
                if failure.code == rusqlite::ErrorCode::DatabaseBusy =>
            {
                tracing::debug!("the library's checkpoint found another one running");
            }
            // The log stays as it is and the next commit asks again; nothing committed is at
            // stake.
            Err(err) => {
                tracing::warn!("the library's checkpoint failed (it is tried again): {err}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::SqliteStore;

    #[test]
    fn a_long_log_is_copied_into_the_library_by_the_thread_and_closing_removes_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("library.db");
        let store = SqliteStore::open(&path).unwrap();
        // About 5,000 pages through the log, one commit each: past the thread's first stretch.
        store.with_connection(|conn| {
            conn.execute_batch("CREATE TABLE filler (bytes BLOB)")
                .unwrap();
            for _ in 0..5_000 {
                conn.execute("INSERT INTO filler VALUES (zeroblob(4000))", [])
                    .unwrap();
            }
        });
        // The library's own file only grows when a checkpoint copies the log into it: the
        // commits no longer do it themselves, so this is the thread's work.
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::fs::metadata(&path).unwrap().len() < 4_000_000 {
            assert!(
                Instant::now() < deadline,
                "no checkpoint copied the log into the library within 20 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(store);
        assert!(
            !dir.path().join("library.db-wal").exists(),
            "the library's connection was not the last to close: the log was left behind"
        );
    }

    #[test]
    fn under_commits_without_pause_the_log_starts_over_instead_of_growing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("library.db");
        let store = SqliteStore::open(&path).unwrap();
        let wal = dir.path().join("library.db-wal");
        let mut longest = 0;
        // Pages through the log, one commit after another: two and a half times the length
        // past which the committing connection finishes the checkpoint itself.
        store.with_connection(|conn| {
            conn.execute_batch("CREATE TABLE filler (bytes BLOB)")
                .unwrap();
            for _ in 0..super::CATCH_UP_PAGES * 5 / 2 {
                conn.execute("INSERT INTO filler VALUES (zeroblob(4000))", [])
                    .unwrap();
                longest = longest.max(std::fs::metadata(&wal).map_or(0, |m| m.len()));
            }
        });
        // A page of log is a 4 KiB page and a 24-byte frame header; a few commits may pass
        // while the thread holds the checkpoint.
        let bound = (super::CATCH_UP_WAITING_PAGES as u64 + 1_000) * (4_096 + 24);
        assert!(
            longest < bound,
            "the log grew to {longest} bytes under steady commits (bound {bound})"
        );
    }

    #[test]
    fn the_thread_is_nudged_once_a_stretch_has_gathered_then_at_every_commit_before_the_catch_up() {
        use super::{CATCH_UP_PAGES, CHECKPOINT_PAGES, Schedule};
        let mut schedule = Schedule::default();
        let nudged: Vec<i32> = (1..=CATCH_UP_PAGES)
            .step_by(100)
            .filter(|&pages| schedule.nudge_due(pages))
            .collect();
        let last_stretch = CATCH_UP_PAGES - CHECKPOINT_PAGES;
        let stretches: Vec<i32> = nudged
            .iter()
            .copied()
            .take_while(|&p| p < last_stretch)
            .collect();
        assert_eq!(
            stretches,
            (1..CATCH_UP_PAGES / CHECKPOINT_PAGES - 1)
                .map(|stretch| stretch * CHECKPOINT_PAGES + 1)
                .collect::<Vec<_>>(),
            "one nudge a stretch"
        );
        assert!(
            nudged[stretches.len()..]
                .windows(2)
                .all(|pair| pair[1] - pair[0] == 100),
            "every commit over the last stretch nudges: {nudged:?}"
        );
        // Past the catch-up the committing connection copies the rest; the thread is left
        // alone so that it is not copying then.
        assert!(!schedule.nudge_due(CATCH_UP_PAGES));
        assert!(!schedule.nudge_due(CATCH_UP_PAGES + CHECKPOINT_PAGES));
        // The log started over: the count starts over with it.
        assert!(!schedule.nudge_due(300));
        assert!(!schedule.nudge_due(CHECKPOINT_PAGES - 1));
        assert!(schedule.nudge_due(CHECKPOINT_PAGES));
    }
}
