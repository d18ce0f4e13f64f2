//! The shared backend: PostgreSQL, for families that outgrow one machine.
//!
//! Several `mindrune serve` processes may point at one database. The same [`Store`] contract
//! holds as on SQLite, and the way it holds across processes is one rule:
//!
//! Architecture invariant: every write for a family runs in one transaction that first takes
//! the family's transaction-scoped advisory lock (`pg_advisory_xact_lock(owner_id)`), so the
//! writes of one family are serialised across every process and connection, while different
//! families never wait for each other. Recording a use, rescoring its version and deciding
//! whether it is now shared therefore see each other's results exactly as on SQLite (whose
//! database lock serialises every writer). Reads take no lock: a read of several statements
//! runs in one `REPEATABLE READ` transaction, so it sees one committed state of the family.
//!
//! The SQL lives in the submodules (`records`, `family`, `directory`), one per part of the
//! trait; this file holds the connection pool, the migrations and the transaction helpers.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Config, NoTls};

use conn::{Manager, Tx};
use group_writes::GroupWrites;
use mindrune_core::SCORE_WINDOW;
use recording::{Access, GroupSlot};

use crate::rules;

use crate::{OwnerId, Recording, Result, Store, StoreError, VersionId};

mod alerts;
mod conn;
mod directory;
mod family;
mod family_tx;
mod group_writes;
mod recording;
mod records;
mod rows;
mod statements;
mod views;

/// The migration that renames `owners.api_key` to `key_digest`; right after it runs, the keys
/// still stored in clear are turned into their digests.
const OWNER_KEY_DIGEST_MIGRATION: i64 = 9;

/// The migrations, in order. Never edit one that has landed: add the next.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/postgres/0001_init.sql"),
    include_str!("../../migrations/postgres/0002_names_nocase.sql"),
    include_str!("../../migrations/postgres/0003_host_runs.sql"),
    include_str!("../../migrations/postgres/0004_failures.sql"),
    include_str!("../../migrations/postgres/0005_wealth_history.sql"),
    include_str!("../../migrations/postgres/0006_uses_fewer_indexes.sql"),
    include_str!("../../migrations/postgres/0007_unmeasured.sql"),
    include_str!("../../migrations/postgres/0008_looks.sql"),
    include_str!("../../migrations/postgres/0009_owner_key_digest.sql"),
    include_str!("../../migrations/postgres/0010_server_health.sql"),
    include_str!("../../migrations/postgres/0011_alerts.sql"),
    include_str!("../../migrations/postgres/0012_progress_history.sql"),
];

/// The first key of MindRune's two-key advisory locks (the single-key space holds the
/// families' locks; PostgreSQL keeps the two spaces apart). "MR".
const LOCK_CLASS: i32 = 0x4d52;
/// Held while the schema is created or migrated, so two processes never both migrate.
const MIGRATION_LOCK: i32 = 1;
/// Held while the vocabulary is replaced.
pub(crate) const VOCABULARY_LOCK: i32 = 2;

/// How many times a transaction that lost a serialisation race or a deadlock is tried again.
const RETRIES: u32 = 20;
/// Connections per store; the server calls the store from blocking tasks, one per request.
const DEFAULT_POOL_SIZE: u32 = 8;

type Pool = r2d2::Pool<Manager>;

/// What a transaction's body can fail with: PostgreSQL's own error (which may mean "try
/// again") or the store's answer (not found, conflict). `?` turns either into it.
#[derive(Debug)]
pub(crate) enum Fail {
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for Fail {
    fn from(err: postgres::Error) -> Fail {
        Fail::Pg(err)
    }
}

impl From<StoreError> for Fail {
    fn from(err: StoreError) -> Fail {
        Fail::Store(err)
    }
}

pub(crate) type PgResult<T> = std::result::Result<T, Fail>;

impl Fail {
    /// The store's error for the caller, naming the database for PostgreSQL's own errors.
    fn into_store(self, location: &str) -> StoreError {
        match self {
            Fail::Pg(err) => pg_err(err, location),
            Fail::Store(err) => err,
        }
    }
}

/// Whether PostgreSQL asks for the transaction to be run again.
fn is_retryable(err: &postgres::Error) -> bool {
    matches!(
        err.code(),
        Some(&SqlState::T_R_SERIALIZATION_FAILURE) | Some(&SqlState::T_R_DEADLOCK_DETECTED)
    )
}

/// Whether the error is a unique constraint's (a name or token already taken).
pub(crate) fn is_unique_violation(fail: &Fail) -> bool {
    matches!(fail, Fail::Pg(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION))
}

pub(crate) fn pg_err(err: postgres::Error, location: &str) -> StoreError {
    if let Some(db) = err.as_db_error() {
        let what = match *db.code() {
            SqlState::DISK_FULL => {
                ": the database server's disk is full; free space on it and run the command \
                 again (the change that failed was not stored; what was stored before is kept)"
            }
            SqlState::READ_ONLY_SQL_TRANSACTION => {
                ": the database is read-only (a standby?); point MindRune at the primary and \
                 run the command again (nothing was stored)"
            }
            _ => "",
        };
        if *db.code() == SqlState::DISK_FULL {
            return StoreError::DiskFull(format!("{db}{what}"));
        }
        return StoreError::Database(format!("{db}{what}"));
    }
    if err.is_closed() || std::error::Error::source(&err).is_some_and(|s| s.is::<std::io::Error>())
    {
        return StoreError::Database(format!(
            "cannot reach PostgreSQL at {location}: {err}; check that it runs and that \
             --database / MINDRUNE_DATABASE_URL names it"
        ));
    }
    StoreError::Database(err.to_string())
}

/// Where a database is, for messages: host, port and database name, never the password.
fn describe(config: &Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            postgres::config::Host::Tcp(name) => name.clone(),
            postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".into());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

/// A schema name MindRune creates and names in SQL: lower-case letters, digits and `_`.
fn checked_schema(schema: &str) -> Result<&str> {
    let valid = !schema.is_empty()
        && schema.len() <= 63
        && schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && !schema.as_bytes()[0].is_ascii_digit();
    if valid {
        Ok(schema)
    } else {
        Err(StoreError::Database(format!(
            "`{schema}` is not a schema name MindRune uses: lower-case letters, digits and `_`, \
             starting with a letter, at most 63 characters"
        )))
    }
}

/// The library in a PostgreSQL database (or one schema of it).
pub struct PgStore {
    pool: Pool,
    location: String,
    schema: Option<String>,
    /// Each version's newest-200 window as this process's last committed use of it left it,
    /// without its row: a use reads the row (inside the family's lock) and takes the window
    /// only when the row's use count is the window's, so another process's use is never missed.
    windows: Mutex<HashMap<i64, rules::KnownWindow>>,
}

/// Windows kept in memory; past this the cache starts over (it is only a cache).
const WINDOW_CACHE_LIMIT: usize = 20_000;

/// An open write group ([`Store::write_group`]): the connection holding its transaction and
/// the families whose locks it holds.
struct Group {
    conn: r2d2::PooledConnection<Manager>,
    owners: Vec<i64>,
    /// Each version's window as the group's last use of it left it, and the group's epoch
    /// then. The group holds its families' locks, so no other writer can record a use of their
    /// versions until it ends: a window (and, while the epoch has not moved, the version's row)
    /// stands for the table for the group's length, and is forgotten with the group.
    windows: HashMap<i64, (rules::KnownWindow, u64)>,
    /// Moved by every piece of work the group runs other than recording a use, and by a use's
    /// sharing check (which writes the skill's versions): a version row kept from before stands
    /// for the table no more.
    epoch: u64,
    /// The uses and rescores the group recorded and has not written yet, and what it looked up
    /// of its families ([`group_writes`]).
    writes: GroupWrites,
}

impl Group {
    /// One piece of the group's work in a savepoint of its transaction, so it succeeds or fails
    /// on its own.
    fn in_savepoint<T>(&mut self, work: impl FnOnce(&mut Tx<'_>) -> PgResult<T>) -> PgResult<T> {
        // What the group's uses left waiting is written first, outside the savepoint, so the
        // work sees it and cannot take it back.
        self.conn.write_waiting(&mut self.writes)?;
        self.writes.forget_look_ups();
        let mut tx = self.conn.savepoint()?;
        let value = work(&mut tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// One piece of the group's work that records a use: its use and rescore wait with the
    /// group's, and its savepoint opens only if it runs a statement ([`conn::Conn::deferring`]).
    fn recording<T>(&mut self, work: impl FnOnce(&mut Tx<'_>) -> PgResult<T>) -> PgResult<T> {
        let mut tx = self.conn.deferring(&mut self.writes);
        let value = work(&mut tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// A look-up that needs nothing written first, outside any savepoint: when it fails, the
    /// transaction is unusable and the group is lost.
    fn look_up(
        &mut self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> PgResult<Vec<postgres::Row>> {
        self.conn.query_as_is(sql, params).map_err(|err| {
            self.writes.lost = true;
            err.into()
        })
    }

    /// Reads the rows and score windows of those of `versions` the group has not used yet, in
    /// one query, and keeps them as the group keeps a window its last use left: a use of one of
    /// them then reads neither (see [`Group::windows`]).
    fn look_up_versions(&mut self, owner: OwnerId, versions: &[VersionId]) -> PgResult<()> {
        let mut unknown: Vec<i64> = versions
            .iter()
            .map(|version| version.0)
            .filter(|version| {
                !self.windows.contains_key(version) && !self.writes.waiting.touches(*version)
            })
            .collect();
        unknown.sort_unstable();
        unknown.dedup();
        if unknown.is_empty() {
            return Ok(());
        }
        let rows = self.look_up(
            &records::VERSIONS_WITH_WINDOWS,
            &[&owner.0, &unknown, &(SCORE_WINDOW as i64)],
        )?;
        for (version, row, samples) in records::versions_with_windows(&rows)? {
            let window = rules::KnownWindow::unmeasured(row, samples);
            self.windows.insert(version, (window, self.epoch));
        }
        Ok(())
    }

    /// Looks up which of `event_ids` a use of `owner`'s family stored before the group, those
    /// the group does not know yet, in one query.
    fn look_up_events(&mut self, owner: OwnerId, event_ids: &[&str]) -> PgResult<()> {
        let unknown: Vec<&str> = event_ids
            .iter()
            .copied()
            .filter(|id| self.writes.event_recorded(None, owner, id).is_none())
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        let rows = self.look_up(
            "SELECT event_id FROM uses WHERE owner_id = $1 AND event_id = ANY($2)",
            &[&owner.0, &unknown],
        )?;
        let stored: HashSet<String> = rows
            .iter()
            .map(|row| rows::col::<String>(row, 0))
            .collect::<PgResult<_>>()?;
        for id in unknown {
            self.writes.note_stored(owner, id, stored.contains(id));
        }
        Ok(())
    }
}

/// Which transaction a piece of work done through a write group's handle needs, so the group
/// can tell whether it joins.
#[derive(Clone, Copy)]
enum Scope {
    /// A family's write: joins the group when the group holds that family's lock.
    Family(OwnerId),
    /// A read: joins the group, so it sees what the group wrote.
    Read,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.location)
            .field("schema", &self.schema)
            .finish()
    }
}

impl PgStore {
    /// Opens the library in the database at `url` (`postgres://user@host:port/db`), creating
    /// its tables or bringing them up to date. A `schema=NAME` query parameter keeps the library in
    /// that schema (created if needed) instead of the connection's default.
    pub fn open(url: &str) -> Result<PgStore> {
        let (url, schema) = split_schema(url);
        Self::connect(&url, schema.as_deref(), DEFAULT_POOL_SIZE, Make::Yes)
    }

    /// Opens a library that exists already (migrating it if it is older), and makes nothing:
    /// a database or `schema=NAME` without MindRune's tables is [`StoreError::NoLibrary`], so a
    /// mistyped schema never becomes a new, empty library.
    pub fn open_existing(url: &str) -> Result<PgStore> {
        let (url, schema) = split_schema(url);
        Self::connect(&url, schema.as_deref(), DEFAULT_POOL_SIZE, Make::No)
    }

    /// Opens the library in one schema of the database (created if needed): each test gets
    /// its own, so tests run in parallel on one database.
    pub fn open_in_schema(url: &str, schema: &str) -> Result<PgStore> {
        Self::connect(url, Some(schema), DEFAULT_POOL_SIZE, Make::Yes)
    }

    fn connect(url: &str, schema: Option<&str>, pool_size: u32, make: Make) -> Result<PgStore> {
        let mut config: Config = url.parse().map_err(|err| {
            StoreError::Database(format!(
                "`{}` is not a PostgreSQL URL ({err}); write it as postgres://USER@HOST:PORT/DATABASE",
                redact_url(url)
            ))
        })?;
        let location = describe(&config);
        if config.get_application_name().is_none() {
            // Operators see MindRune's connections in pg_stat_activity by this name.
            config.application_name("mindrune");
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if let Some(schema) = schema {
            let schema = checked_schema(schema)?;
            config.options(&format!("-c search_path={schema}"));
        }
        // One connection first, outside the pool: it says at once (not after the pool's
        // timeout) when the database cannot be reached, and it migrates.
        let mut first = config
            .connect(NoTls)
            .map_err(|err| pg_err(err, &location))?;
        migrate(&mut first, schema, &location, make)?;
        drop(first);
        let pool = r2d2::Pool::builder()
            .max_size(pool_size)
            .min_idle(Some(0))
            // No test query on every check-out (a round trip per transaction): a connection
            // found closed when its transaction begins is replaced then (`transaction`).
            .test_on_check_out(false)
            .connection_timeout(Duration::from_secs(30))
            .build_unchecked(Manager { config });
        Ok(PgStore {
            pool,
            location,
            schema: schema.map(str::to_string),
            windows: Mutex::new(HashMap::new()),
        })
    }

    /// Where the library is, for messages (never the password).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Drops the store's schema and everything in it (tests clean up after themselves).
    pub fn drop_schema(&self) -> Result<()> {
        let Some(schema) = &self.schema else {
            return Err(StoreError::Database(
                "the library is not in its own schema; nothing was dropped".into(),
            ));
        };
        let mut conn = self.connection()?;
        conn.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .map_err(|err| pg_err(err, &self.location))
    }

    pub(crate) fn connection(&self) -> Result<r2d2::PooledConnection<Manager>> {
        self.pool.get().map_err(|err| {
            StoreError::Database(format!(
                "cannot reach PostgreSQL at {}: {err}; check that it runs and accepts connections",
                self.location
            ))
        })
    }

    /// Runs one write for a family: one transaction, serialised with every other write for
    /// that family in any process (see the module's invariant), tried again when PostgreSQL
    /// reports a deadlock or a serialisation failure.
    pub(crate) fn write<T>(
        &self,
        owner: OwnerId,
        work: impl FnMut(&mut Tx<'_>) -> PgResult<T>,
    ) -> Result<T> {
        let begin = format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({})",
            owner.0
        );
        self.transaction(Some(&begin), work)
    }

    /// Runs one write that is not a family's (owners, tokens, the vocabulary); `lock`, when
    /// given, is a two-key advisory lock held for the transaction.
    pub(crate) fn write_global<T>(
        &self,
        lock: Option<i32>,
        work: impl FnMut(&mut Tx<'_>) -> PgResult<T>,
    ) -> Result<T> {
        let begin = match lock {
            Some(key) => format!(
                "BEGIN ISOLATION LEVEL READ COMMITTED; SELECT pg_advisory_xact_lock({LOCK_CLASS}, {key})"
            ),
            None => "BEGIN ISOLATION LEVEL READ COMMITTED".to_string(),
        };
        self.transaction(Some(&begin), work)
    }

    /// Runs a read: one snapshot for all its statements.
    pub(crate) fn read<T>(&self, work: impl FnMut(&mut Tx<'_>) -> PgResult<T>) -> Result<T> {
        self.transaction(
            Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
            work,
        )
    }

    /// Runs a read of one statement (`work` runs exactly one): it needs no transaction, its
    /// statement being one snapshot.
    pub(crate) fn read_one<T>(&self, work: impl FnMut(&mut Tx<'_>) -> PgResult<T>) -> Result<T> {
        self.transaction(None, work)
    }

    /// Runs `work` in a transaction begun with `begin` (`None`: no transaction, for a read of
    /// one statement) on a pooled connection.
    fn transaction<T>(
        &self,
        begin: Option<&str>,
        mut work: impl FnMut(&mut Tx<'_>) -> PgResult<T>,
    ) -> Result<T> {
        crate::group_work::refuse_inside_group_work();
        let mut conn = self.connection()?;
        let mut attempt = 0;
        let mut reconnected = false;
        loop {
            let mut began = false;
            let outcome = (|| -> PgResult<T> {
                let mut tx = match begin {
                    Some(begin) => {
                        let tx = conn.begin(begin)?;
                        began = true;
                        tx
                    }
                    // A read of one statement that met a closed connection did nothing on it:
                    // a fresh one takes it, as a transaction that did not begin.
                    None => conn.one_statement(),
                };
                let value = work(&mut tx)?;
                tx.commit()?;
                Ok(value)
            })();
            match outcome {
                Ok(value) => return Ok(value),
                // The server closed this idle connection (a restart, an administrator, an idle
                // timeout: its last word is a FATAL error, then the socket closes) before the
                // transaction began: nothing was done on it, so a fresh connection takes
                // the whole transaction, once.
                Err(Fail::Pg(err))
                    if !began && (err.is_closed() || conn.is_closed()) && !reconnected =>
                {
                    reconnected = true;
                    conn = self.connection()?;
                }
                Err(Fail::Pg(err)) if is_retryable(&err) && attempt < RETRIES => {
                    attempt += 1;
                    std::thread::sleep(Duration::from_millis(2 * u64::from(attempt)));
                }
                Err(Fail::Pg(err)) if is_retryable(&err) => {
                    return Err(StoreError::Database(format!(
                        "{}: gave up after {RETRIES} tries, the family is under heavy concurrent \
                         writes; run the command again (nothing of this change was stored)",
                        pg_err(err, &self.location)
                    )));
                }
                Err(fail) => return Err(fail.into_store(&self.location)),
            }
        }
    }
}

impl PgStore {
    fn windows(&self) -> std::sync::MutexGuard<'_, HashMap<i64, rules::KnownWindow>> {
        self.windows.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The window this process kept for `version`, taken out (a use puts back what it leaves).
    fn cached_window(&self, version: i64) -> Option<rules::KnownWindow> {
        self.windows().remove(&version)
    }

    /// Keeps committed windows, without their rows (a row stands only for its group).
    fn keep_windows(&self, committed: impl IntoIterator<Item = (i64, rules::KnownWindow)>) {
        let mut windows = self.windows();
        for (version, mut window) in committed {
            if windows.len() >= WINDOW_CACHE_LIMIT {
                windows.clear();
            }
            window.row = None;
            windows.insert(version, window);
        }
    }

    fn run_group(
        &self,
        owners: &[OwnerId],
        work: &mut dyn FnMut(&dyn Recording) -> Result<()>,
    ) -> Result<()> {
        let mut owners: Vec<i64> = owners.iter().map(|owner| owner.0).collect();
        owners.sort_unstable();
        owners.dedup();
        // The families' locks in ascending order, every group alike, so two groups never wait
        // for each other in a circle (a single write takes one lock and waits for nothing else).
        let mut begin = "BEGIN ISOLATION LEVEL READ COMMITTED".to_string();
        for owner in &owners {
            begin.push_str(&format!("; SELECT pg_advisory_xact_lock({owner})"));
        }
        let mut conn = self.connection()?;
        if let Err(err) = conn.batch_execute(&begin) {
            let _ = conn.batch_execute("ROLLBACK");
            return Err(pg_err(err, &self.location));
        }
        let slot: GroupSlot = RefCell::new(Some(Group {
            conn,
            owners,
            windows: HashMap::new(),
            epoch: 0,
            writes: GroupWrites::default(),
        }));
        let ended = PgGroupEnd { slot: &slot };
        let outcome = {
            let _work = crate::group_work::GroupWork::begin();
            work(&Access::group(self, &slot))
        };
        let Some(mut group) = ended.take() else {
            return Err(StoreError::Database(
                "the write group's connection was lost; nothing of the batch was stored".into(),
            ));
        };
        match outcome {
            Ok(()) => {
                if let Err(err) = group.conn.write_waiting(&mut group.writes) {
                    let _ = group.conn.batch_execute("ROLLBACK");
                    return Err(pg_err(err, &self.location));
                }
                if group.writes.lost {
                    // A write failed outside a savepoint: PostgreSQL would answer the COMMIT
                    // of the failed transaction by rolling it back.
                    let _ = group.conn.batch_execute("ROLLBACK");
                    return Err(StoreError::Database(
                        "a write of the group failed, so nothing of it was stored; send it again"
                            .into(),
                    ));
                }
                group
                    .conn
                    .batch_execute("COMMIT")
                    .map_err(|err| pg_err(err, &self.location))?;
                // Committed: the group's windows stand for the table for this process now.
                self.keep_windows(
                    group
                        .windows
                        .into_iter()
                        .map(|(version, (window, _))| (version, window)),
                );
                Ok(())
            }
            Err(err) => {
                let _ = group.conn.batch_execute("ROLLBACK");
                Err(err)
            }
        }
    }
}

/// Takes the group out of its slot however its work ended: dropped without
/// [`PgGroupEnd::take`] (a panic), the group's connection rolls back and goes back to the pool.
struct PgGroupEnd<'a> {
    slot: &'a GroupSlot,
}

impl PgGroupEnd<'_> {
    fn take(self) -> Option<Group> {
        let group = self.slot.borrow_mut().take();
        std::mem::forget(self);
        group
    }
}

impl Drop for PgGroupEnd<'_> {
    fn drop(&mut self) {
        if let Some(mut group) = self.slot.borrow_mut().take() {
            let _ = group.conn.batch_execute("ROLLBACK");
        }
    }
}

/// Takes MindRune's own `schema=NAME` parameter out of a URL's query (the driver would refuse
/// it), leaving the others (`sslmode=…`, `connect_timeout=…`) in place.
pub fn split_schema(url: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_string(), None);
    };
    let mut schema = None;
    let rest: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.strip_prefix("schema=") {
            Some(name) => {
                schema = Some(name.to_string());
                false
            }
            None => true,
        })
        .collect();
    if rest.is_empty() {
        (base.to_string(), schema)
    } else {
        (format!("{base}?{}", rest.join("&")), schema)
    }
}

/// A database URL as messages show it: `postgres://ada:***@db/lib` for
/// `postgres://ada:secret@db/lib` (a URL without a password is shown as it is).
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

/// Whether opening may make the library (its schema and tables) where there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Make {
    Yes,
    No,
}

/// Creates the schema if asked for one, then runs the migrations the database has not seen, all
/// in one transaction under the migration lock. With [`Make::No`] a database without the
/// library's migrations table is refused before anything is created.
fn migrate(
    conn: &mut postgres::Client,
    schema: Option<&str>,
    location: &str,
    make: Make,
) -> Result<()> {
    let known = MIGRATIONS.len() as i64;
    let run = |conn: &mut postgres::Client| -> PgResult<()> {
        let mut tx = conn.transaction()?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&LOCK_CLASS, &MIGRATION_LOCK],
        )?;
        if make == Make::No {
            // The search path names the schema asked for, so this looks there and nowhere else.
            let present: bool = tx
                .query_one("SELECT to_regclass('mindrune_migrations') IS NOT NULL", &[])?
                .try_get(0)?;
            if !present {
                let place = match schema {
                    Some(schema) => format!("{location} (schema {schema})"),
                    None => location.to_string(),
                };
                return Err(Fail::Store(StoreError::NoLibrary(place)));
            }
        }
        if let Some(schema) = schema {
            tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))?;
        }
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS mindrune_migrations (
                 version    BIGINT PRIMARY KEY,
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
             )",
        )?;
        let found: i64 = tx
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM mindrune_migrations",
                &[],
            )?
            .try_get(0)?;
        if found > known {
            return Err(Fail::Store(StoreError::TooNew {
                path: location.to_string(),
                found,
                known,
            }));
        }
        for (index, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
            tx.batch_execute(sql)?;
            tx.execute(
                "INSERT INTO mindrune_migrations (version) VALUES ($1)",
                &[&(index as i64 + 1)],
            )?;
            // Digested in Rust, not with PostgreSQL's `sha256()`, so both backends keep one rule
            // for what a secret's digest is (`secret_digest`), shared with the tokens.
            if index as i64 + 1 == OWNER_KEY_DIGEST_MIGRATION {
                digest_plain_owner_keys(&mut tx)?;
            }
        }
        tx.commit()?;
        Ok(())
    };
    run(conn).map_err(|fail| fail.into_store(location))
}

/// Turns every owner's key still stored as itself into its digest, in the migration's
/// transaction; idempotent, since a digest is left as it is.
fn digest_plain_owner_keys(tx: &mut postgres::Transaction<'_>) -> PgResult<()> {
    let rows = tx.query("SELECT owner_id, key_digest FROM owners", &[])?;
    for row in rows {
        let id: i64 = row.try_get(0)?;
        let stored: String = row.try_get(1)?;
        if !mindrune_core::is_secret_digest(&stored) {
            tx.execute(
                "UPDATE owners SET key_digest = $2 WHERE owner_id = $1",
                &[&id, &mindrune_core::secret_digest(&stored)],
            )?;
        }
    }
    Ok(())
}

impl Store for PgStore {
    fn write_group(
        &self,
        owners: &[OwnerId],
        work: &mut dyn FnMut(&dyn Recording) -> Result<()>,
    ) -> Result<()> {
        self.run_group(owners, work)
    }

    fn write_lanes(&self) -> usize {
        // Each lane's group holds a connection for its whole length; half the pool is left to
        // the reads and the writes that are no family's.
        (self.pool.max_size() as usize / 2).max(1)
    }

    fn audit(&self, owner: OwnerId) -> Result<Vec<String>> {
        self.read(|tx| rules::family::audit(tx, owner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Directory as _;
    use mindrune_core::secret_digest;

    #[test]
    fn a_password_never_appears_in_a_message() {
        assert_eq!(
            redact_url("postgres://ada:hunter2@db:5432/lib"),
            "postgres://ada:***@db:5432/lib"
        );
        assert_eq!(redact_url("postgres://ada@db/lib"), "postgres://ada@db/lib");
    }

    #[test]
    fn the_schema_parameter_is_taken_out_of_the_url_and_the_others_stay() {
        assert_eq!(
            split_schema("postgres://h/db?schema=fam&sslmode=disable"),
            ("postgres://h/db?sslmode=disable".into(), Some("fam".into()))
        );
        assert_eq!(
            split_schema("postgres://h/db?schema=fam"),
            ("postgres://h/db".into(), Some("fam".into()))
        );
        assert_eq!(
            split_schema("postgres://h/db"),
            ("postgres://h/db".into(), None)
        );
    }

    #[test]
    fn only_plain_schema_names_are_accepted() {
        assert!(checked_schema("mindrune_t1").is_ok());
        for bad in ["", "1abc", "Abc", "a;drop", "a b", &"x".repeat(64)] {
            assert!(checked_schema(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_connection_the_server_closed_is_replaced_before_the_next_transaction() {
        let url = std::env::var("MINDRUNE_TEST_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
        let schema = format!("mindrune_unit_reconnect_{}", std::process::id());
        let store = PgStore::open_in_schema(&url, &schema)
            .unwrap_or_else(|err| panic!("PostgreSQL at {url} is not reachable: {err}"));
        let pid: i32 = store
            .read(|tx| Ok(tx.query_one("SELECT pg_backend_pid()", &[])?.try_get(0)?))
            .unwrap();
        // The pool's one idle connection is closed by the server, as a restart would.
        let mut admin = postgres::Client::connect(&url, NoTls).unwrap();
        admin
            .execute("SELECT pg_terminate_backend($1)", &[&pid])
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let owner = store.create_owner("ada", &secret_digest("mrk_ada"), 0);
        let dropped = store.drop_schema();
        let owner = owner.expect("the next transaction runs on a fresh connection");
        assert_eq!(owner.name, "ada");
        dropped.unwrap();
    }
}
