//! WAL checkpoints on a thread of their own.
//!
//! SQLite copies the write-ahead log back into the database file (a checkpoint) from inside
//! the commit that pushed the log past 1,000 pages, on the committing thread. That commit
//! then waits for the copy and its `fsync`: under the server's load it was a sixth of the
//! writer's time (`perf`, `bench serve`), time in which no other group could commit. Here the
//! library's connection only notes, after each commit, that the log is long; a second
//! connection on its own thread runs the checkpoint (`PASSIVE`: it never blocks a writer or a
//! reader), so the writer goes on with the next group while the log is copied.
//!
//! Nothing about durability changes: a commit is in the log before it is answered either way,
//! and a checkpoint only moves committed pages. When the store is dropped the thread is
//! stopped and joined before the library's connection closes, so that connection is still
//! the last one and its close checkpoints and removes the log as before.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, TrySendError};
use std::thread::JoinHandle;

use rusqlite::Connection;
use rusqlite::wal::CheckpointMode;

use super::{BUSY_TIMEOUT, db_err};
use crate::Result;

/// The log's length, in pages, past which a checkpoint is asked for: SQLite's own default for
/// the automatic checkpoint it replaces.
const CHECKPOINT_PAGES: i32 = 1_000;

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
        let thread = std::thread::Builder::new()
            .name("mindrune-checkpoint".into())
            .spawn(move || checkpoint_when_nudged(&own, &nudged))
            .map_err(|err| {
                crate::StoreError::Database(format!(
                    "could not start the library's checkpoint thread: {err}"
                ))
            })?;
        // Setting a WAL hook replaces SQLite's automatic checkpoint on this connection.
        conn.wal_hook(Some(
            move |wal: &mut rusqlite::hooks::Wal, pages: std::ffi::c_int| {
                if pages >= CHECKPOINT_PAGES
                    && let Err(TrySendError::Disconnected(())) = nudge.try_send(())
                {
                    // The thread is gone (it does not panic, but if it did): the log must not
                    // grow without end, so this commit checkpoints as SQLite would have. Its
                    // failure is no failure of the commit, as with SQLite's own.
                    let _ = wal.checkpoint_v2(CheckpointMode::PASSIVE);
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

fn checkpoint_when_nudged(conn: &Connection, nudged: &Receiver<()>) {
    while nudged.recv().is_ok() {
        if let Err(err) = conn.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            // The log stays as it is and the next commit asks again; nothing committed is at
            // stake.
            tracing::warn!("the library's checkpoint failed (it is tried again): {err}");
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
        // About 2,500 pages through the log, one commit each: past the checkpoint's 1,000.
        store.with_connection(|conn| {
            conn.execute_batch("CREATE TABLE filler (bytes BLOB)")
                .unwrap();
            for _ in 0..2_500 {
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
}
