//! The embedded default: SQLite (bundled, WAL).
//!
//! Durability: WAL with `synchronous=NORMAL`. A committed use survives a crash of any process;
//! only a power cut or kernel crash may lose the last few commits, which SQLite's own docs
//! describe as the WAL trade-off. `MINDRUNE_SYNC=full` selects `synchronous=FULL` for hosts
//! that need power-loss durability at some throughput cost.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::rules::{self, KnownWindow};
use crate::{AgentId, Millis, OwnerId, Recording, Result, Store, StoreError};

use checkpointer::Checkpointer;
use family_tx::SqliteTx;
use group_writes::GroupWaiting;
use recording::Access;

mod alerts;
mod checkpointer;
mod directory;
mod family;
mod family_tx;
mod group_writes;
mod recording;
mod records;
mod rows;
mod version_writes;
mod views;

/// The migration that renames `owners.api_key` to `key_digest`; right after it runs, the keys
/// still stored in clear are turned into their digests.
const OWNER_KEY_DIGEST_MIGRATION: i64 = 13;

/// The migrations, in order. Never edit one that has landed: add the next.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/sqlite/0001_init.sql"),
    include_str!("../../migrations/sqlite/0002_sharing.sql"),
    include_str!("../../migrations/sqlite/0003_vocabulary.sql"),
    include_str!("../../migrations/sqlite/0004_wrapups.sql"),
    include_str!("../../migrations/sqlite/0005_server.sql"),
    include_str!("../../migrations/sqlite/0006_names_nocase.sql"),
    include_str!("../../migrations/sqlite/0007_host_runs.sql"),
    include_str!("../../migrations/sqlite/0008_failures.sql"),
    include_str!("../../migrations/sqlite/0009_wealth_history.sql"),
    include_str!("../../migrations/sqlite/0010_uses_fewer_indexes.sql"),
    include_str!("../../migrations/sqlite/0011_unmeasured.sql"),
    include_str!("../../migrations/sqlite/0012_looks.sql"),
    include_str!("../../migrations/sqlite/0013_owner_key_digest.sql"),
    include_str!("../../migrations/sqlite/0014_server_health.sql"),
    include_str!("../../migrations/sqlite/0015_alerts.sql"),
    include_str!("../../migrations/sqlite/0016_progress_history.sql"),
];

/// How long a writer waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How many times a transaction that found the database busy is tried again.
const BUSY_RETRIES: u32 = 20;
/// The connection's page cache, in KiB. SQLite's default (2 MiB) holds little of the uses'
/// indexes once a library has a few hundred thousand uses, and every insert then reads index
/// pages back from the OS (`bench serve`: a quarter of the writer's time in index seeks).
const CACHE_KIB: u32 = 16 * 1024;
/// Prepared statements each connection keeps: every statement of the store's hot paths.
const STATEMENT_CACHE: usize = 256;
/// Score windows kept in memory; past this the cache is cleared (it is only a cache).
pub(super) const WINDOW_CACHE_LIMIT: usize = 20_000;

pub(super) struct Inner {
    conn: Connection,
    /// Each version's window as this process last wrote it (see `rules::KnownWindow`).
    windows: HashMap<i64, CachedWindow>,
    /// Counts the uses of the connection other than recording a use ([`SqliteStore::lock`]): a
    /// window's version row is good for the next use only while this has not moved since, and
    /// only inside the write group it was written in (see [`SqliteStore::record_use`]).
    epoch: u64,
    /// Whether a write group holds the connection's open transaction ([`Store::write_group`]):
    /// only its handle ([`recording::Access::group`]) uses the connection then; all other work
    /// waits for it to end.
    group: bool,
    /// The error after which SQLite rolled the group's transaction back by itself (a full
    /// disk, an I/O error): the group's later writes and its commit answer it.
    group_lost: Option<StoreError>,
    /// The group's uses not inserted yet and rescores not written to their rows yet (empty
    /// outside a write group; see [`group_writes`]).
    waiting: GroupWaiting,
    /// The agents the group found to be their family's (empty outside a write group, and
    /// forgotten whenever anything else uses the connection: it may remove an agent).
    group_agents: HashSet<(i64, i64)>,
    /// SQLite's `data_version` as the last write group that committed found it when it began:
    /// while a group finds it unchanged, no other connection committed since that group began
    /// (none can while a group holds the write lock), so the rows its uses kept still stand for
    /// the table (see [`Store::write_group`]).
    group_data_version: Option<i64>,
}

pub struct SqliteStore {
    inner: Mutex<Inner>,
    /// Woken when a write group ends, for the threads waiting to use the connection.
    group_ended: Condvar,
    location: String,
    /// Runs the WAL's checkpoints off the writer's thread (none for an in-memory library).
    checkpointer: Option<Checkpointer>,
    /// A second connection for the reads of every request that must not wait for a write
    /// group (none for an in-memory library): see [`SqliteStore::read_committed`]. Boxed: a
    /// store is moved around by value, and a connection with its statement cache is large.
    reader: Option<Box<Mutex<Connection>>>,
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        // The library's own connection closes last, so its close checkpoints and removes the
        // log.
        drop(self.reader.take());
        if let Some(mut checkpointer) = self.checkpointer.take() {
            let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
            checkpointer.stop(&mut inner.conn);
        }
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("location", &self.location)
            .finish()
    }
}

fn db_err(err: rusqlite::Error) -> StoreError {
    // A full disk and a failing write are the library's surroundings, not a bug: say so, and
    // what to do. SQLite reports a write past the process's file-size limit (EFBIG) as an I/O
    // error, and a short write on a full disk as `SQLITE_FULL`.
    match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::DiskFull) => StoreError::DiskFull(format!(
            "{err}: the disk holding the library is full; free space on it and run the command \
             again (the change that failed was not stored; what was stored before is kept)"
        )),
        Some(rusqlite::ErrorCode::SystemIoFailure) => StoreError::Database(format!(
            "{err}: the library's files could not be written; check that their disk has free \
             space and is writable (and the process's file-size limit, `ulimit -f`), then run \
             the command again (the change that failed was not stored; what was stored before \
             is kept)"
        )),
        Some(rusqlite::ErrorCode::ReadOnly) => StoreError::Database(format!(
            "{err}: the library's folder or files are read-only; make them writable (or point \
             MINDRUNE_HOME at a writable library) and run the command again (nothing was stored)"
        )),
        _ => StoreError::Database(err.to_string()),
    }
}

/// Below this much free space an I/O failure of the library is taken for a full disk.
const NEARLY_FULL: u64 = 1024 * 1024;

/// A failure of the library at `path` as a full disk, when its disk is (nearly) full. SQLite
/// says `SQLITE_FULL` for a write that finds no room, but only "disk I/O error" when mapping
/// its shared-memory file (`-shm`) on a full disk at open, and the errno behind that is out of
/// safe reach; the disk's free space tells them apart.
fn disk_full_at(path: &Path, err: StoreError) -> StoreError {
    let StoreError::Database(message) = err else {
        return err;
    };
    let folder = path.parent().filter(|f| !f.as_os_str().is_empty());
    let available = folder
        .and_then(|folder| rustix::fs::statvfs(folder).ok())
        .map(|stat| stat.f_bavail.saturating_mul(stat.f_frsize));
    match (folder, available) {
        (Some(folder), Some(available)) if available < NEARLY_FULL => {
            StoreError::DiskFull(format!(
                "{message} (the disk holding {} has {available} bytes free: it is full)",
                folder.display()
            ))
        }
        _ => StoreError::Database(message),
    }
}

/// The name already in `table` that `name` collides with (the same letters in any case), for
/// the refusal; `name` itself when the row cannot be found.
fn name_taken(conn: &Connection, table: &str, name: &str) -> Result<String> {
    let taken: Option<String> = conn
        .query_row(
            &format!("SELECT name FROM {table} WHERE lower(name) = lower(?1)"),
            [name],
            |row| row.get(0),
        )
        .optional()
        .map_err(db_err)?;
    Ok(taken.unwrap_or_else(|| name.to_string()))
}

fn is_busy(err: &StoreError) -> bool {
    matches!(err, StoreError::Database(msg) if msg.contains("database is locked") || msg.contains("database is busy"))
}

impl SqliteStore {
    /// Opens (creating if needed) the library database at `path` and brings its schema up to
    /// date.
    pub fn open(path: &Path) -> Result<SqliteStore> {
        let opened = Connection::open(path)
            .map_err(db_err)
            .and_then(|conn| Self::setup(conn, path.display().to_string()))
            .and_then(|mut store| {
                let inner = store.inner.get_mut().unwrap_or_else(|e| e.into_inner());
                store.checkpointer = Some(Checkpointer::start(&mut inner.conn, path)?);
                store.reader = Some(Box::new(Mutex::new(Self::open_reader(path)?)));
                Ok(store)
            });
        opened.map_err(|err| disk_full_at(path, err))
    }

    /// A private in-memory library, for tests.
    pub fn open_in_memory() -> Result<SqliteStore> {
        let conn = Connection::open_in_memory().map_err(db_err)?;
        Self::setup(conn, ":memory:".into())
    }

    fn setup(conn: Connection, location: String) -> Result<SqliteStore> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        // The query-planner stability guarantee: without it SQLite re-prepares a statement
        // whenever a bound id changes to or from 0 or 1 (owner 1, version 1, …), which cost
        // more than the rest of recording a use. Every query here is keyed by ids, so one plan
        // per statement is the right plan.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map_err(db_err)?;
        // rusqlite keeps 16 prepared statements by default, fewer than one recorded use runs
        // (its own, the group's savepoint, the avatar's newest output, the family's peers): past
        // 16 the least recently used is parsed again on its next use.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let sync = Self::synchronous();
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; \
             PRAGMA cache_size = -{CACHE_KIB};"
        ))
        .map_err(db_err)?;
        let mut store = SqliteStore {
            inner: Mutex::new(Inner {
                conn,
                windows: HashMap::new(),
                epoch: 0,
                waiting: Default::default(),
                group_agents: HashSet::new(),
                group: false,
                group_lost: None,
                group_data_version: None,
            }),
            group_ended: Condvar::new(),
            location,
            checkpointer: None,
            reader: None,
        };
        store.migrate()?;
        Ok(store)
    }

    fn migrate(&mut self) -> Result<()> {
        let location = self.location.clone();
        let inner = self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
        let conn = &mut inner.conn;
        let known = MIGRATIONS.len() as i64;
        let mut digested = false;
        // Two processes opening a new library at once must not both run the migrations, so
        // the check and the work share one immediate transaction.
        with_retry(|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let found: i64 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(db_err)?;
            if found > known {
                return Err(StoreError::TooNew {
                    path: location.clone(),
                    found,
                    known,
                });
            }
            for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
                tx.execute_batch(sql).map_err(db_err)?;
                tx.pragma_update(None, "user_version", index as i64 + 1)
                    .map_err(db_err)?;
                // SQL cannot hash here: the keys the rename kept in clear are digested in Rust,
                // in the migration's own transaction.
                if index as i64 + 1 == OWNER_KEY_DIGEST_MIGRATION {
                    directory::digest_plain_owner_keys(&tx)?;
                    digested = true;
                }
            }
            tx.commit().map_err(db_err)
        })?;
        if digested {
            // The keys' old pages are still in the file until a checkpoint copies the new ones
            // over them: copy them now, so the key is gone from the file as the library opens.
            // Best effort: a reader in the way only delays it to the next checkpoint.
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        }
        Ok(())
    }

    /// Runs one write: `BEGIN IMMEDIATE`, the work, `COMMIT`, tried again while another process
    /// holds the database. Through a write group's handle ([`Access::write`]) it is a piece of the group's
    /// transaction instead, in a savepoint begun before its first statement that needs what the
    /// group keeps waiting (`group_writes`): it succeeds or fails on its own, and is durable
    /// with the group. The work gets the transaction and this process's window cache.
    pub(super) fn write<T>(
        &self,
        work: impl FnMut(&mut SqliteTx<'_>, &mut UseCache<'_>) -> Result<T>,
    ) -> Result<T> {
        self.write_with(self.lock(), work)
    }

    pub(super) fn write_with<T>(
        &self,
        mut guard: MutexGuard<'_, Inner>,
        mut work: impl FnMut(&mut SqliteTx<'_>, &mut UseCache<'_>) -> Result<T>,
    ) -> Result<T> {
        let Inner {
            conn,
            windows,
            epoch,
            group,
            group_lost,
            waiting,
            group_agents,
            ..
        } = &mut *guard;
        let mut cache = UseCache {
            windows,
            group_epoch: group.then_some(*epoch),
        };
        if *group {
            if let Some(lost) = group_lost {
                return Err(lost.clone());
            }
            let mut tx = SqliteTx::in_group(conn, waiting, group_agents);
            let outcome = work(&mut tx, &mut cache);
            let (outcome, lost) = tx.finish(outcome);
            if let Some(lost) = lost {
                // The group's transaction holds part of its waiting writes.
                *group_lost = Some(lost);
            } else if let Err(err) = &outcome
                && conn.is_autocommit()
            {
                // SQLite rolls a transaction back by itself on a few errors (a full disk, an
                // I/O error): the group's earlier writes are gone, so none may follow them.
                *group_lost = Some(err.clone());
            }
            return outcome;
        }
        with_retry(|| {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let value = work(&mut SqliteTx::new(&tx), &mut cache)?;
            tx.commit().map_err(db_err)?;
            Ok(value)
        })
    }

    /// A read-only connection to the library file, beside the library's own.
    fn open_reader(path: &Path) -> Result<Connection> {
        let conn = Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(db_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db_err)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )
        .map_err(db_err)?;
        Ok(conn)
    }

    /// Runs a read of what is committed, without waiting for an open write group.
    ///
    /// A runner's every request first looks up its token; on the library's one connection
    /// that lookup waited for the group being written, and the requests reached the writer's
    /// queue only between its groups (`bench serve`: the machine a fifth idle under load). A
    /// second connection reads the last committed state beside the writer (WAL lets readers
    /// and one writer go on at once). The thread holding a write group reads through the
    /// group's handle instead, so it sees its own writes; an in-memory library reads through
    /// its one connection.
    pub(super) fn read_committed<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        if let Some(reader) = &self.reader {
            return read(&reader.lock().unwrap_or_else(|e| e.into_inner()));
        }
        read(&self.lock().conn)
    }

    /// The connection, once no write group holds it. A panic while holding the
    /// lock leaves no half-done transaction behind (rusqlite rolls back on drop, a group's end
    /// rolls back its own), so the connection is still good to use.
    ///
    /// Whatever is done with it may change a version's row, so the rows kept with the windows
    /// are good no more (recording a use keeps them: [`SqliteStore::lock_keeping_rows`]).
    ///
    /// Inside a write group, the uses and rescores waiting are written first, so whatever is
    /// done sees them; when that fails, the group is lost and answers the error.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        Self::for_any_use(self.lock_keeping_rows())
    }

    /// Readies the connection for any use: the rows kept stand no more, and a group's waiting
    /// writes are written.
    fn for_any_use(mut guard: MutexGuard<'_, Inner>) -> MutexGuard<'_, Inner> {
        guard.epoch = guard.epoch.wrapping_add(1);
        guard.group_agents.clear();
        Self::write_waiting(&mut guard, |waiting, conn| waiting.write(conn));
        guard
    }

    /// The connection, for a read of uses alone (no version's row, no family's scores), once
    /// no write group holds it: a group's waiting uses are inserted first, and
    /// the rows kept stay good.
    fn lock_reading_uses(&self) -> MutexGuard<'_, Inner> {
        Self::for_reading_uses(self.lock_keeping_rows())
    }

    /// Readies the connection for a read of uses: a group's waiting uses are inserted.
    fn for_reading_uses(mut guard: MutexGuard<'_, Inner>) -> MutexGuard<'_, Inner> {
        Self::write_waiting(&mut guard, |waiting, conn| waiting.write_uses(conn));
        guard
    }

    /// Writes (some of) a write group's waiting writes with `write`; a failure loses the group.
    fn write_waiting(
        guard: &mut Inner,
        write: impl FnOnce(&mut GroupWaiting, &Connection) -> Result<()>,
    ) {
        if guard.waiting.is_empty() {
            return;
        }
        let Inner {
            conn,
            waiting,
            group_lost,
            ..
        } = guard;
        if let Err(err) = write(waiting, conn) {
            group_lost.get_or_insert(err);
        }
    }

    /// The connection, once no write group holds it, for recording a use (which
    /// keeps its row itself and knows what waits): a group's waiting writes stay waiting, and
    /// the rows kept stay good.
    fn lock_keeping_rows(&self) -> MutexGuard<'_, Inner> {
        crate::group_work::refuse_inside_group_work();
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        while guard.group {
            guard = self
                .group_ended
                .wait(guard)
                .unwrap_or_else(|e| e.into_inner());
        }
        guard
    }

    /// The connection as the open write group's handle uses it: the group holds it, so there
    /// is nothing to wait for.
    fn group_guard(&self) -> MutexGuard<'_, Inner> {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(guard.group, "a write group's handle outlived its group");
        guard
    }

    /// Runs `work` on the library's connection, holding it for the whole call (the copy into
    /// PostgreSQL reads every table in one transaction through it).
    pub(crate) fn with_connection<T>(&self, work: impl FnOnce(&mut Connection) -> T) -> T {
        work(&mut self.lock().conn)
    }

    /// Where the library is (its file), for messages.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// The `synchronous` setting every connection gets: `NORMAL`, or `FULL` with
    /// `MINDRUNE_SYNC=full` (see the module docs).
    pub fn synchronous() -> &'static str {
        match std::env::var("MINDRUNE_SYNC").as_deref() {
            Ok("full") => "FULL",
            _ => "NORMAL",
        }
    }

    /// The page cache every library connection gets, in KiB (`PRAGMA cache_size = -N`); a
    /// benchmark's bare connection takes the same.
    pub fn cache_kib() -> u32 {
        CACHE_KIB
    }

    /// Whether the file at `path` is a MindRune library (it has the owners table), looked at
    /// read-only: opening a file as a library would give it MindRune's tables. `false` for a
    /// file SQLite cannot read.
    pub fn holds_library(path: &Path) -> bool {
        Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|conn| {
                conn.query_row(
                    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'owners')",
                    [],
                    |row| row.get::<_, bool>(0),
                )
            })
            .unwrap_or(false)
    }

    /// SQLite's own integrity check; `ok` when the file is sound.
    pub fn integrity_check(&self) -> Result<String> {
        let inner = self.lock();
        inner
            .conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .map_err(db_err)
    }
}

/// Runs a write transaction, trying again while another process holds the database.
fn with_retry<T>(mut work: impl FnMut() -> Result<T>) -> Result<T> {
    let mut attempt = 0;
    loop {
        match work() {
            Err(err) if is_busy(&err) && attempt < BUSY_RETRIES => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(5 * u64::from(attempt)));
            }
            other => return other,
        }
    }
}

/// Each snippet of an agent run since a time, with its runs since then. The plan walks the
/// agent's snippets by `snippets`' unique index (owner_id, agent_id, digest), skips those not run
/// since (`last_used_at` is the newest use's time), and seeks each one's window in
/// `snippet_uses_by_snippet` (snippet_id, at DESC); snippet ids are unique across owners, and
/// the owner is checked on both tables.
const SNIPPET_RUNS_SINCE: &str =
    "SELECT s.snippet_id, s.digest, s.code, SUM(u.ok), COUNT(*), MAX(u.at)
     FROM snippets s JOIN snippet_uses u ON u.snippet_id = s.snippet_id AND u.owner_id = s.owner_id
     WHERE s.owner_id = ?1 AND s.agent_id = ?2 AND s.last_used_at >= ?3 AND u.at >= ?3
     GROUP BY s.snippet_id
     ORDER BY MAX(u.at) DESC, s.snippet_id";

impl Store for SqliteStore {
    fn disk_space(&self) -> Option<crate::DiskSpace> {
        directory::disk_space(self)
    }

    fn write_group(
        &self,
        _owners: &[OwnerId],
        work: &mut dyn FnMut(&dyn Recording) -> Result<()>,
    ) -> Result<()> {
        // One database, one writer: the group's transaction covers every family at once.
        {
            // Not `lock`: the versions' rows kept by the last group stand for the table while
            // nothing else used the connection (the epoch did not move) and no other connection
            // committed (`data_version` did not move). A group's first use of each script then
            // reads no row (`bench record` in groups of 100: a fifth of its statements).
            let mut guard = self.lock_keeping_rows();
            with_retry(|| guard.conn.execute_batch("BEGIN IMMEDIATE").map_err(db_err))?;
            guard.group = true;
            let mut end = GroupEnd {
                store: self,
                committed: false,
            };
            let data_version = guard
                .conn
                .prepare_cached("PRAGMA data_version")
                .and_then(|mut statement| statement.query_row([], |row| row.get::<_, i64>(0)))
                .map_err(db_err);
            let data_version = match data_version {
                Ok(data_version) => data_version,
                Err(err) => {
                    drop(guard);
                    return Err(err);
                }
            };
            if guard.group_data_version != Some(data_version) {
                guard.epoch = guard.epoch.wrapping_add(1);
                guard.group_data_version = Some(data_version);
            }
            drop(guard);
            {
                let _work = crate::group_work::GroupWork::begin();
                work(&Access::group(self))?;
            }
            let mut guard = self.group_guard();
            if guard.group_lost.is_none() {
                Self::write_waiting(&mut guard, |waiting, conn| waiting.write(conn));
            }
            if let Some(lost) = &guard.group_lost {
                return Err(lost.clone());
            }
            guard.conn.execute_batch("COMMIT").map_err(db_err)?;
            drop(guard);
            end.committed = true;
        }
        Ok(())
    }

    fn audit(&self, owner: OwnerId) -> Result<Vec<String>> {
        let inner = self.lock();
        rules::family::audit(&mut SqliteTx::new(&inner.conn), owner)
    }
}

/// A version's window as this process last wrote it, and the epoch its row is good for
/// (`None`: written outside a write group, so its row is not kept).
pub(super) struct CachedWindow {
    pub(super) window: KnownWindow,
    pub(super) row_epoch: Option<u64>,
}

/// What a write may use of the process's caches: the windows, and, inside a write group, the
/// connection's epoch (see [`Inner::epoch`]).
pub(super) struct UseCache<'a> {
    pub(super) windows: &'a mut HashMap<i64, CachedWindow>,
    pub(super) group_epoch: Option<u64>,
}

/// Ends a write group however its work ended (an error, a panic): what did not commit is rolled
/// back, the windows kept of its writes are forgotten with them, and the waiting threads go on.
struct GroupEnd<'a> {
    store: &'a SqliteStore,
    committed: bool,
}

impl Drop for GroupEnd<'_> {
    fn drop(&mut self) {
        let mut guard = self.store.inner.lock().unwrap_or_else(|e| e.into_inner());
        if !self.committed {
            if !guard.conn.is_autocommit() {
                // A connection that cannot roll back has lost its transaction already.
                let _ = guard.conn.execute_batch("ROLLBACK");
            }
            guard.windows.clear();
            // Their uses were rolled back with the group.
            guard.waiting = Default::default();
        }
        guard.group_agents.clear();
        guard.group = false;
        guard.group_lost = None;
        if !self.committed {
            // The rows kept in the group were rolled back with it.
            guard.epoch = guard.epoch.wrapping_add(1);
            guard.group_data_version = None;
        }
        drop(guard);
        self.store.group_ended.notify_all();
    }
}

/// Whether an owner's agent does not exist (an update that changed nothing, told apart from
/// one that had nothing to change).
fn agent_missing(conn: &Connection, owner: OwnerId, agent: AgentId) -> Result<bool> {
    conn.prepare_cached("SELECT 1 FROM agents WHERE owner_id = ?1 AND agent_id = ?2")
        .map_err(db_err)?
        .query_row(params![owner.0, agent.0], |_| Ok(()))
        .optional()
        .map(|found| found.is_none())
        .map_err(db_err)
}

impl SqliteStore {
    fn set_agent_time(
        &self,
        owner: OwnerId,
        agent: AgentId,
        column: &str,
        at: Millis,
    ) -> Result<()> {
        let inner = self.lock();
        let changed = inner
            .conn
            .execute(
                &format!("UPDATE agents SET {column} = ?3 WHERE owner_id = ?1 AND agent_id = ?2"),
                params![owner.0, agent.0, at],
            )
            .map_err(db_err)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("agent {}", agent.0)));
        }
        Ok(())
    }
}
