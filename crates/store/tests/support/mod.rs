//! The backends the store's story is told against, and a fresh library on each for every test.
//!
//! PostgreSQL: the database at `MINDRUNE_TEST_DATABASE_URL` (default [`DEFAULT_DATABASE_URL`]).
//! Every test gets a schema of its own there, dropped when the test ends, passed or failed.

use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use mindrune_store::{PgStore, SqliteStore, Store, StoreError};

pub(crate) const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// One `#[test]` per backend for every story named: `sqlite::<story>` and `postgres::<story>`
/// both run the body `fn <story>(backend: Backend)`. A body left out of the list runs on no
/// backend, and rustc warns that it is never used.
macro_rules! on_every_backend {
    ($($story:ident),* $(,)?) => {
        mod sqlite {
            $(#[test]
            fn $story() {
                super::$story(crate::support::Backend::Sqlite)
            })*
        }
        mod postgres {
            $(#[test]
            fn $story() {
                super::$story(crate::support::Backend::Postgres)
            })*
        }
    };
}
pub(crate) use on_every_backend;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// A new, empty library on this backend; dropping it removes it.
    pub(crate) fn open(self) -> Library {
        match self {
            Backend::Sqlite => {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("library.db");
                let store = SqliteStore::open(&path).unwrap();
                Library::Sqlite {
                    store: Box::new(store),
                    path,
                    _dir: dir,
                }
            }
            Backend::Postgres => {
                let url = database_url();
                let name = unique_schema_name();
                match PgStore::open_in_schema(&url, &name) {
                    Ok(store) => Library::Postgres(Schema { store, url, name }),
                    Err(err) => panic!("{}", unreachable_message(&url, &err)),
                }
            }
        }
    }
}

/// One library: a SQLite file in a temporary folder, or a PostgreSQL schema of its own.
/// It derefs to the store, so a test calls `library.create_owner(…)`.
pub(crate) enum Library {
    Sqlite {
        // Boxed: a SQLite store is several times a PostgreSQL one's size.
        store: Box<SqliteStore>,
        path: PathBuf,
        _dir: tempfile::TempDir,
    },
    Postgres(Schema),
}

/// A test's own schema; dropping it drops the schema, also when the test panicked.
pub(crate) struct Schema {
    store: PgStore,
    url: String,
    name: String,
}

impl Drop for Schema {
    fn drop(&mut self) {
        // No panic here: during a failed test's unwinding it would abort the run.
        if let Err(err) = self.store.drop_schema() {
            eprintln!("could not drop the test schema {}: {err}", self.name);
        }
    }
}

impl Deref for Library {
    type Target = dyn Store;

    fn deref(&self) -> &(dyn Store + 'static) {
        match self {
            Library::Sqlite { store, .. } => store.as_ref(),
            Library::Postgres(schema) => &schema.store,
        }
    }
}

impl Library {
    /// Another handle on the same library, as a second process would open it.
    pub(crate) fn open_again(&self) -> Result<Box<dyn Store>, StoreError> {
        Ok(match self {
            Library::Sqlite { path, .. } => Box::new(SqliteStore::open(path)?),
            Library::Postgres(schema) => {
                Box::new(PgStore::open_in_schema(&schema.url, &schema.name)?)
            }
        })
    }

    /// Makes the library look written by a MindRune whose schema is at `version`.
    pub(crate) fn stamp_schema_version(&self, version: i64) {
        match self {
            Library::Sqlite { path, .. } => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.pragma_update(None, "user_version", version).unwrap();
            }
            Library::Postgres(schema) => {
                let mut client =
                    ::postgres::Client::connect(&schema.url, ::postgres::NoTls).unwrap();
                let sql = format!(
                    "INSERT INTO {}.mindrune_migrations (version) VALUES ($1)",
                    schema.name
                );
                client.execute(&sql, &[&version]).unwrap();
            }
        }
    }

    /// The bytes of a SQLite library's files (the database and its `-wal`); `None` on
    /// PostgreSQL, whose files are the server's.
    pub(crate) fn file_bytes(&self) -> Option<Vec<u8>> {
        let Library::Sqlite { path, .. } = self else {
            return None;
        };
        let mut bytes = std::fs::read(path).unwrap();
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        if let Ok(log) = std::fs::read(wal) {
            bytes.extend(log);
        }
        Some(bytes)
    }

    /// Makes the library look written before a migration: SQLite's schema at `sqlite`,
    /// PostgreSQL's at `postgres` (the later migrations forgotten, to be run at the next open).
    pub(crate) fn rewind_schema(&self, sqlite: i64, postgres: i64) {
        match self {
            Library::Sqlite { path, .. } => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.pragma_update(None, "user_version", sqlite).unwrap();
            }
            Library::Postgres(schema) => {
                let mut client =
                    ::postgres::Client::connect(&schema.url, ::postgres::NoTls).unwrap();
                let sql = format!(
                    "DELETE FROM {}.mindrune_migrations WHERE version > $1",
                    schema.name
                );
                client.execute(&sql, &[&postgres]).unwrap();
            }
        }
    }

    /// Runs one statement straight on the library's database, behind the store's back (the
    /// same SQL reads alike on both backends for the simple updates tests make).
    pub(crate) fn tamper(&self, sql: &str) {
        match self {
            Library::Sqlite { path, .. } => {
                let conn = rusqlite::Connection::open(path).unwrap();
                conn.execute_batch(sql).unwrap();
            }
            Library::Postgres(schema) => {
                let mut client =
                    ::postgres::Client::connect(&schema.url, ::postgres::NoTls).unwrap();
                client
                    .batch_execute(&format!("SET search_path TO {}; {sql}", schema.name))
                    .unwrap();
            }
        }
    }

    /// The library is sound: SQLite's own check passes, and on both backends every family's
    /// stored run counts and scores agree with a recomputation from its uses.
    pub(crate) fn assert_integrity_ok(&self) {
        if let Library::Sqlite { store, .. } = self {
            assert_eq!(store.integrity_check().unwrap(), "ok");
        }
        for owner in self.owners().unwrap() {
            assert_eq!(self.audit(owner.id).unwrap(), Vec::<String>::new());
        }
    }
}

fn database_url() -> String {
    std::env::var("MINDRUNE_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into())
}

/// `mindrune_test_<pid>_<counter>_<nanos>`: unique across the tests of one run and across runs
/// (and machines) sharing one database.
fn unique_schema_name() -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "mindrune_test_{}_{}_{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Why the PostgreSQL half cannot run. It fails rather than skips: CI must not pass without it.
fn unreachable_message(url: &str, err: &StoreError) -> String {
    let url = mindrune_store::redact_url(url);
    let what = if err.to_string().contains("cannot reach") {
        format!("PostgreSQL at {url} is not reachable")
    } else {
        format!("PostgreSQL at {url} refused a test library")
    };
    format!(
        "{what}: {err}\n\
         The postgres:: tests need a PostgreSQL database they may create schemas in: start one, \
         or point MINDRUNE_TEST_DATABASE_URL at one, e.g.\n    \
         MINDRUNE_TEST_DATABASE_URL=postgres://USER:PASSWORD@HOST:5432/DATABASE \
         cargo test -p mindrune-store --test store_story postgres::\n\
         (default: {DEFAULT_DATABASE_URL}; run only the SQLite half with `sqlite::`)"
    )
}
