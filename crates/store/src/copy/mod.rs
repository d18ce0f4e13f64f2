//! Copying a whole library from SQLite into PostgreSQL (`mindrune migrate`).
//!
//! Every table is copied in foreign-key order with its ids kept, so every reference stays
//! right, in batches of [`BATCH_ROWS`] rows, one transaction each. A batch inserts with
//! `ON CONFLICT DO NOTHING`: a copy that was stopped halfway is simply run again and goes on,
//! and a row already in the destination is never overwritten. Afterwards each identity
//! sequence is moved past the largest id, so new rows get fresh ids, and every table is
//! verified: its row count and a SHA-256 digest over its rows in primary-key order, computed
//! the same way from both sides ([`TableDigest`]).
//!
//! The source is read in one SQLite read transaction, so the copy and its verification see one
//! state of the library, even while another process writes to it (what it writes after the copy
//! began is not copied).
//!
//! The destination must be empty or a partial copy of the same library. Its owners and agents
//! are compared with the source's before anything is written, so a database holding another
//! library is refused untouched; any other difference (a row with the same key and other
//! content, a row the source does not hold) fails the verification, which names the table and
//! the first rows that differ.

use std::collections::HashMap;

use postgres::error::SqlState;
use postgres::fallible_iterator::FallibleIterator as _;
use postgres::types::ToSql;

use crate::postgres::pg_err;
use crate::{PgStore, Result, SqliteStore, StoreError};

/// Rows per batch, and so per destination transaction.
const BATCH_ROWS: usize = 2_000;
/// PostgreSQL takes at most this many parameters in one statement.
const MAX_PARAMS: usize = 65_535;
/// How many differing rows an error names per table.
const SHOWN_ROWS: usize = 3;

mod tables;
mod value;
mod verify;

use tables::{CHECKED_FIRST, Flag, Int, Real, TABLES, Table, Text};
use value::{TableDigest, Value, from_postgres, from_sqlite};
use verify::{Differences, Mismatch, differences, mismatch_error, verify};

/// What the copy did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    pub table: &'static str,
    /// Rows this run inserted; rows an earlier run copied are not counted again.
    pub copied: u64,
    /// Rows of the source, all of them in the destination once verified.
    pub rows: u64,
    /// `sha256:<hex>` over the rows in primary-key order, the same from either side.
    pub digest: String,
}

/// A finished copy. [`copy_library`] returns one only when every table was verified: the same
/// row count and digest in the destination as in the source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyReport {
    pub tables: Vec<TableCopy>,
}

impl CopyReport {
    /// Rows this run inserted.
    pub fn copied(&self) -> u64 {
        self.tables.iter().map(|t| t.copied).sum()
    }

    /// Rows of the whole library.
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }
}

/// Copies the whole library from `source` into `dest` (opened, so its tables exist), then
/// verifies every table. `on_table` hears of each table as its copy is done, before the
/// verification.
///
/// Run again after an interruption, it goes on where the last run stopped: rows already there
/// are kept as they are. A destination that holds another library, or rows that differ from
/// the source's, is an error ([`StoreError::Conflict`]) naming the tables, their counts and
/// digests on both sides, and the first rows that differ; nothing in it is overwritten.
pub fn copy_library(
    source: &SqliteStore,
    dest: &PgStore,
    on_table: &mut dyn FnMut(&TableCopy),
) -> Result<CopyReport> {
    copy_in_batches(source, dest, BATCH_ROWS, on_table, &mut || Ok(()))
}

/// Why one table's copy stopped.
enum Fail {
    Sqlite(rusqlite::Error),
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<rusqlite::Error> for Fail {
    fn from(err: rusqlite::Error) -> Fail {
        Fail::Sqlite(err)
    }
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

/// Where the copy reads and writes, for its messages.
struct Sides<'a> {
    source: &'a str,
    dest: &'a str,
}

impl Sides<'_> {
    fn store_err(&self, fail: Fail) -> StoreError {
        match fail {
            Fail::Sqlite(err) => StoreError::Database(format!(
                "reading the source library at {} failed: {err}",
                self.source
            )),
            Fail::Pg(err) => pg_err(err, self.dest),
            Fail::Store(err) => err,
        }
    }
}

/// [`copy_library`] with the batch size given, and `after_batch` run after each committed
/// batch (a test stops the copy there, as a killed process would).
pub(crate) fn copy_in_batches(
    source: &SqliteStore,
    dest: &PgStore,
    batch_rows: usize,
    on_table: &mut dyn FnMut(&TableCopy),
    after_batch: &mut dyn FnMut() -> Result<()>,
) -> Result<CopyReport> {
    let sides = Sides {
        source: source.location(),
        dest: dest.location(),
    };
    let mut client = dest.connection()?;
    let client: &mut postgres::Client = &mut client;
    source.with_connection(|conn| {
        // One read transaction for the whole copy and its verification: one state of the
        // source. It only reads, so it ends by being dropped (rolled back).
        let tx = conn
            .transaction()
            .map_err(|err| sides.store_err(err.into()))?;
        check_source_schema(&tx).map_err(|fail| sides.store_err(fail))?;
        refuse_another_library(&tx, client, &sides)?;

        let mut report = CopyReport::default();
        for (index, table) in TABLES.iter().enumerate() {
            match copy_table(&tx, client, table, batch_rows, after_batch) {
                Ok((copied, digest)) => {
                    let (rows, digest) = digest.finish();
                    let entry = TableCopy {
                        table: table.name,
                        copied,
                        rows,
                        digest,
                    };
                    on_table(&entry);
                    report.tables.push(entry);
                }
                Err(Fail::Pg(err)) if is_integrity_violation(&err) => {
                    // A row the source refers to is not the destination's, or a unique name
                    // is taken by another row: find which in the tables copied so far.
                    let mismatches = verify(&tx, client, &TABLES[..index], &report)
                        .map_err(|fail| sides.store_err(fail))?;
                    let cause = pg_err(err, sides.dest);
                    if mismatches.is_empty() {
                        return Err(StoreError::Conflict(format!(
                            "copying {} failed: {cause}\n\nhint: the source library has a row \
                             that refers to a row it does not hold (`PRAGMA foreign_key_check` \
                             on it names the row); the rows copied so far are kept, so run the \
                             copy again once the source is repaired",
                            table.name
                        )));
                    }
                    return Err(mismatch_error(&mismatches, report.copied(), Some(&cause)));
                }
                Err(fail) => {
                    let err = sides.store_err(fail);
                    return Err(StoreError::Database(format!(
                        "copying {} failed: {err} (the rows copied so far are kept: run the copy \
                         again to go on)",
                        table.name
                    )));
                }
            }
        }
        reset_sequences(client).map_err(|fail| sides.store_err(fail))?;
        let mismatches =
            verify(&tx, client, TABLES, &report).map_err(|fail| sides.store_err(fail))?;
        if !mismatches.is_empty() {
            return Err(mismatch_error(&mismatches, report.copied(), None));
        }
        Ok(report)
    })
}

/// Whether an insert broke a foreign key or a unique constraint (`ON CONFLICT DO NOTHING`
/// takes every unique conflict, so in practice a foreign key).
fn is_integrity_violation(err: &postgres::Error) -> bool {
    matches!(
        err.code(),
        Some(&SqlState::FOREIGN_KEY_VIOLATION) | Some(&SqlState::UNIQUE_VIOLATION)
    )
}

/// Checks that the source has exactly the tables and columns this copy knows. Opening the
/// library brought it up to this MindRune's schema, so a difference is MindRune's own bug: a
/// new migration without its table here.
fn check_source_schema(tx: &rusqlite::Transaction<'_>) -> std::result::Result<(), Fail> {
    let mut names = tx.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
    )?;
    let found: Vec<String> = names
        .query_map([], |row| row.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let unknown: Vec<&String> = found
        .iter()
        .filter(|name| !TABLES.iter().any(|t| t.name == name.as_str()))
        .collect();
    let mut problems = Vec::new();
    if !unknown.is_empty() {
        problems.push(format!(
            "tables it does not copy: {}",
            unknown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut columns = tx.prepare("SELECT name, upper(type) FROM pragma_table_info(?1)")?;
    for table in TABLES {
        let have: Vec<(String, String)> = columns
            .query_map([table.name], |row| Ok((row.get(0)?, row.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let want: Vec<(String, String)> = table
            .columns
            .iter()
            .map(|(name, kind)| {
                let ty = match kind {
                    Int | Flag => "INTEGER",
                    Real => "REAL",
                    Text => "TEXT",
                };
                ((*name).to_string(), ty.to_string())
            })
            .collect();
        let mut have_sorted = have.clone();
        have_sorted.sort();
        let mut want_sorted = want;
        want_sorted.sort();
        if have_sorted != want_sorted {
            problems.push(format!(
                "table {} has columns {}",
                table.name,
                have.iter()
                    .map(|(name, ty)| format!("{name} {ty}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Fail::Store(StoreError::Database(format!(
            "the source library's schema is not the one this MindRune copies ({}); nothing was \
             copied (a bug in MindRune: please report it)",
            problems.join("; ")
        ))))
    }
}

/// Refuses, before anything is written, a destination whose owners or agents are not the
/// source's: it holds another library.
fn refuse_another_library(
    tx: &rusqlite::Transaction<'_>,
    client: &mut postgres::Client,
    sides: &Sides<'_>,
) -> Result<()> {
    let mut mismatches = Vec::new();
    for table in TABLES.iter().filter(|t| CHECKED_FIRST.contains(&t.name)) {
        let found = differences(tx, client, table).map_err(|fail| sides.store_err(fail))?;
        // Rows the destination lacks are what the copy is for.
        if !found.dest_only.is_empty() || !found.differing.is_empty() {
            mismatches.push(Mismatch {
                table: table.name,
                source: None,
                dest: None,
                found: Differences {
                    source_only: Vec::new(),
                    source_only_count: 0,
                    ..found
                },
            });
        }
    }
    if mismatches.is_empty() {
        return Ok(());
    }
    let mut message = String::from("the destination holds another library: nothing was copied\n");
    for mismatch in &mismatches {
        mismatch.explain(&mut message);
    }
    message.push_str(
        "\nhint: copy into an empty database or schema (e.g. add ?schema=NAME to the URL), or \
         into a partial copy of this same library",
    );
    Err(StoreError::Conflict(message))
}

/// Copies one table in batches; returns how many rows this run inserted and the digest of the
/// source's rows.
fn copy_table(
    tx: &rusqlite::Transaction<'_>,
    client: &mut postgres::Client,
    table: &Table,
    batch_rows: usize,
    after_batch: &mut dyn FnMut() -> Result<()>,
) -> std::result::Result<(u64, TableDigest), Fail> {
    let batch_rows = table.batch_rows(batch_rows);
    let mut statements: HashMap<usize, postgres::Statement> = HashMap::new();
    let mut digest = TableDigest::default();
    let mut copied = 0;
    let mut batch: Vec<Vec<Value>> = Vec::with_capacity(batch_rows);
    let mut select = tx.prepare(&table.select(false))?;
    let mut rows = select.query([])?;
    let mut flush = |batch: &mut Vec<Vec<Value>>| -> std::result::Result<(), Fail> {
        let statement = match statements.get(&batch.len()) {
            Some(statement) => statement.clone(),
            None => {
                let statement = client.prepare(&table.insert(batch.len()))?;
                statements.insert(batch.len(), statement.clone());
                statement
            }
        };
        let params: Vec<&(dyn ToSql + Sync)> = batch
            .iter()
            .flat_map(|row| {
                row.iter()
                    .zip(table.columns)
                    .map(|(value, (_, kind))| value.param(*kind))
            })
            .collect();
        let mut pg = client.transaction()?;
        copied += pg.execute(&statement, &params)?;
        pg.commit()?;
        batch.clear();
        after_batch()?;
        Ok(())
    };
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(table.columns.len());
        for (at, (column, kind)) in table.columns.iter().enumerate() {
            let value = from_sqlite(*kind, row.get_ref(at)?).map_err(|what| {
                Fail::Store(StoreError::Database(format!(
                    "the source's {}.{column} {what} (in the row after {} copied rows of {})",
                    table.name, digest.rows, table.name
                )))
            })?;
            values.push(value);
        }
        digest.add(&values);
        batch.push(values);
        if batch.len() == batch_rows {
            flush(&mut batch)?;
        }
    }
    if !batch.is_empty() {
        flush(&mut batch)?;
    }
    Ok((copied, digest))
}

/// Moves every identity sequence past the largest id, so new rows get fresh ids.
fn reset_sequences(client: &mut postgres::Client) -> std::result::Result<(), Fail> {
    for table in TABLES {
        if let Some(column) = table.identity {
            client.execute(
                &format!(
                    "SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX({column}), 0) + 1, false) FROM {}",
                    table.name
                ),
                &[&table.name, &column],
            )?;
        }
    }
    Ok(())
}

/// The destination's row count and digest of one table.
fn dest_digest(
    client: &mut postgres::Client,
    table: &Table,
) -> std::result::Result<(u64, String), Fail> {
    let mut digest = TableDigest::default();
    let mut rows = client.query_raw(
        table.select(true).as_str(),
        std::iter::empty::<&(dyn ToSql + Sync)>(),
    )?;
    let mut values = Vec::with_capacity(table.columns.len());
    while let Some(row) = rows.next()? {
        values.clear();
        for (at, (_, kind)) in table.columns.iter().enumerate() {
            values.push(from_postgres(*kind, &row, at)?);
        }
        digest.add(&values);
    }
    Ok(digest.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Directory as _, FamilySharing as _, Recording as _, SkillRecords as _};
    use rusqlite::types::ValueRef;
    use sha2::{Digest as _, Sha256};
    use std::cmp::Ordering;

    fn digest(rows: &[Vec<Value>]) -> String {
        let mut digest = TableDigest::default();
        for row in rows {
            digest.add(row);
        }
        digest.finish().1
    }

    #[test]
    fn a_flag_digests_alike_from_sqlite_integer_and_postgres_boolean() {
        let from_sqlite = vec![
            from_sqlite(Flag, ValueRef::Integer(1)).unwrap(),
            from_sqlite(Flag, ValueRef::Integer(0)).unwrap(),
        ];
        let from_postgres = vec![Value::flag(true), Value::flag(false)];
        assert_eq!(digest(&[from_sqlite]), digest(&[from_postgres]));
        // A flag is its integer: true is 1, as SQLite keeps it.
        assert_eq!(
            digest(&[vec![Value::flag(true)]]),
            digest(&[vec![Value::Int(1)]])
        );
    }

    #[test]
    fn a_flag_other_than_0_or_1_is_refused_not_guessed() {
        let err = from_sqlite(Flag, ValueRef::Integer(2)).unwrap_err();
        assert!(err.contains("holds 2"), "{err}");
        assert!(from_sqlite(Int, ValueRef::Text(b"12")).is_err());
        assert!(from_sqlite(Text, ValueRef::Blob(b"x")).is_err());
        assert!(from_sqlite(Text, ValueRef::Text(b"\xff")).is_err());
        assert!(from_sqlite(Text, ValueRef::Text(b"a\0b")).is_err());
    }

    #[test]
    fn null_is_distinct_from_zero_empty_text_and_zero_real() {
        let null = digest(&[vec![Value::Null]]);
        for other in [Value::Int(0), Value::Text(String::new()), Value::Real(0.0)] {
            assert_ne!(null, digest(&[vec![other.clone()]]), "{other:?}");
        }
        assert_eq!(
            from_sqlite(Int, ValueRef::Null).unwrap().to_string(),
            "NULL"
        );
    }

    #[test]
    fn text_is_length_prefixed_so_values_cannot_run_together() {
        let ab_c = digest(&[vec![Value::Text("ab".into()), Value::Text("c".into())]]);
        let a_bc = digest(&[vec![Value::Text("a".into()), Value::Text("bc".into())]]);
        assert_ne!(ab_c, a_bc);
        // Row boundaries fall where the columns do: two rows of one are not one row of two
        // only by the row count, which is compared too.
        let mut one = TableDigest::default();
        one.add(&[Value::Int(1), Value::Int(2)]);
        let mut two = TableDigest::default();
        two.add(&[Value::Int(1)]);
        two.add(&[Value::Int(2)]);
        assert_ne!(one.finish().0, two.finish().0);
    }

    #[test]
    fn reals_digest_by_their_bits_and_whole_sqlite_reals_read_as_reals() {
        assert_eq!(
            digest(&[vec![from_sqlite(Real, ValueRef::Integer(3)).unwrap()]]),
            digest(&[vec![Value::Real(3.0)]])
        );
        assert_ne!(
            digest(&[vec![Value::Real(3.0)]]),
            digest(&[vec![Value::Int(3)]])
        );
        assert_ne!(
            digest(&[vec![Value::Real(0.1 + 0.2)]]),
            digest(&[vec![Value::Real(0.3)]])
        );
        assert!(Value::Real(0.1 + 0.2).same(&Value::Real(0.1 + 0.2)));
        assert!(!Value::Real(0.0).same(&Value::Real(-0.0)));
    }

    #[test]
    fn the_digest_encoding_is_pinned() {
        // Both sides of every copy ever verified used this encoding; changing it would make
        // an older MindRune's copy fail to verify against a newer one's reading.
        let row = vec![
            Value::Int(1),
            Value::Null,
            Value::Real(0.5),
            Value::Text("ada".into()),
            Value::flag(true),
        ];
        let mut expected = Sha256::new();
        expected.update([1u8]);
        expected.update(1i64.to_be_bytes());
        expected.update([0u8]);
        expected.update([2u8]);
        expected.update(0.5f64.to_bits().to_be_bytes());
        expected.update([3u8]);
        expected.update(3u64.to_be_bytes());
        expected.update(b"ada");
        expected.update([1u8]);
        expected.update(1i64.to_be_bytes());
        let hex: String = expected
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest(&[row]), format!("sha256:{hex}"));
        assert_eq!(digest(&[]), format!("sha256:{}", EMPTY_SHA256));
    }

    const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn keys_order_numbers_by_value_and_text_by_bytes() {
        assert_eq!(Value::Int(9).compare(&Value::Int(10)), Ordering::Less);
        assert_eq!(
            Value::Text("Z".into()).compare(&Value::Text("a".into())),
            Ordering::Less
        );
        assert_eq!(
            Value::Text("item:b".into()).compare(&Value::Text("item:ab".into())),
            Ordering::Greater
        );
    }

    #[test]
    fn statements_name_every_column_and_order_text_keys_bytewise_on_postgres() {
        let tags = TABLES.iter().find(|t| t.name == "skill_tags").unwrap();
        assert_eq!(
            tags.select(true),
            "SELECT owner_id, skill_id, tag FROM skill_tags ORDER BY owner_id, skill_id, tag COLLATE \"C\""
        );
        assert_eq!(
            tags.select(false),
            "SELECT owner_id, skill_id, tag FROM skill_tags ORDER BY owner_id, skill_id, tag"
        );
        assert_eq!(
            tags.insert(2),
            "INSERT INTO skill_tags (owner_id, skill_id, tag) VALUES ($1, $2, $3), ($4, $5, $6) \
             ON CONFLICT DO NOTHING"
        );
        for table in TABLES {
            assert!(table.batch_rows(BATCH_ROWS) * table.columns.len() <= MAX_PARAMS);
            for key in table.key {
                assert!(
                    table.columns.iter().any(|(name, _)| name == key),
                    "{}.{key}",
                    table.name
                );
            }
        }
    }

    #[test]
    fn the_copy_knows_every_table_and_column_of_the_sqlite_schema() {
        let store = SqliteStore::open_in_memory().unwrap();
        store.with_connection(|conn| {
            let tx = conn.transaction().unwrap();
            if let Err(fail) = check_source_schema(&tx) {
                let sides = Sides {
                    source: ":memory:",
                    dest: "-",
                };
                panic!("{}", sides.store_err(fail));
            }
        });
    }

    #[test]
    fn the_postgres_schema_has_the_tables_and_columns_the_copy_writes() {
        // Read from the migrations themselves, so this needs no database: every table's
        // columns, in order, with the types the copy binds (a later migration's
        // `ALTER TABLE … ADD COLUMN` included).
        let sql = [
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
        ]
        .join("\n");
        for table in TABLES {
            let start = sql
                .find(&format!("CREATE TABLE {} (", table.name))
                .unwrap_or_else(|| panic!("no table {}", table.name));
            let body = &sql[start..];
            let body = &body[..body.find("\n);").unwrap()];
            let columns: Vec<(String, String)> = body
                .lines()
                .skip(1)
                .map(str::trim)
                .filter(|line| {
                    !line.is_empty()
                        && !line.starts_with("--")
                        && !line.starts_with("PRIMARY KEY")
                        && !line.starts_with("UNIQUE")
                        && !line.starts_with("FOREIGN KEY")
                })
                .map(|line| {
                    let mut words = line.split_whitespace();
                    let name = words.next().unwrap().to_string();
                    let ty = words.next().unwrap().trim_end_matches(',').to_string();
                    let ty = if ty == "DOUBLE" {
                        "DOUBLE PRECISION".into()
                    } else {
                        ty
                    };
                    (name, ty)
                })
                .chain(sql.lines().filter_map(|line| {
                    let added =
                        line.strip_prefix(&format!("ALTER TABLE {} ADD COLUMN ", table.name))?;
                    let mut words = added.split_whitespace();
                    let name = words.next()?.to_string();
                    let ty = words.next()?.trim_end_matches(';').to_string();
                    Some((name, ty))
                }))
                .map(|(name, ty)| {
                    // A later `ALTER TABLE … RENAME COLUMN old TO new` (the owner's key, kept as
                    // its digest since 0009) names the column as the copy must.
                    let renamed = sql.lines().find_map(|line| {
                        let rest = line.strip_prefix(&format!(
                            "ALTER TABLE {} RENAME COLUMN {name} TO ",
                            table.name
                        ))?;
                        Some(rest.trim_end_matches(';').to_string())
                    });
                    (renamed.unwrap_or(name), ty)
                })
                .collect();
            let expected: Vec<(String, String)> = table
                .columns
                .iter()
                .map(|(name, kind)| {
                    let ty = match kind {
                        Int => "BIGINT",
                        Flag => "BOOLEAN",
                        Real => "DOUBLE PRECISION",
                        Text => "TEXT",
                    };
                    ((*name).to_string(), ty.to_string())
                })
                .collect();
            let mut sorted = columns.clone();
            sorted.sort();
            let mut expected_sorted = expected.clone();
            expected_sorted.sort();
            assert_eq!(sorted, expected_sorted, "{}", table.name);
        }
        let tables = sql.matches("CREATE TABLE ").count();
        assert_eq!(tables, TABLES.len(), "a table the copy does not know");
    }

    /// The copy against a real PostgreSQL: the database at `MINDRUNE_TEST_DATABASE_URL`
    /// (default `postgres://postgres@127.0.0.1:5432/test`), a schema of its own per test.
    mod postgres_side {
        use std::collections::BTreeMap;
        use std::sync::atomic::{AtomicU32, Ordering};

        use super::*;
        use crate::AlertLedger as _;
        use crate::{
            AgentId, HeaderState, NewLesson, NewSnippetUse, NewUse, Outcome, OwnerId,
            ScriptSnapshot, SkillHeader, VocabularyEntry, VocabularySource,
        };
        use mindrune_core::secret_digest;

        /// A test's own schema, dropped when the test ends (also when it failed).
        struct Dest {
            store: PgStore,
        }

        impl Drop for Dest {
            fn drop(&mut self) {
                if let Err(err) = self.store.drop_schema() {
                    eprintln!("could not drop a test schema: {err}");
                }
            }
        }

        impl Dest {
            fn new() -> Dest {
                static COUNTER: AtomicU32 = AtomicU32::new(0);
                let url = std::env::var("MINDRUNE_TEST_DATABASE_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos();
                let schema = format!(
                    "mindrune_copy_{}_{}_{nanos}",
                    std::process::id(),
                    COUNTER.fetch_add(1, Ordering::Relaxed)
                );
                let store = PgStore::open_in_schema(&url, &schema).unwrap_or_else(|err| {
                    panic!(
                        "these tests need PostgreSQL at {url} (MINDRUNE_TEST_DATABASE_URL): {err}"
                    )
                });
                Dest { store }
            }

            fn sql(&self, sql: &str) {
                self.store.connection().unwrap().batch_execute(sql).unwrap();
            }

            fn count(&self, table: &str) -> i64 {
                self.store
                    .connection()
                    .unwrap()
                    .query_one(&format!("SELECT COUNT(*) FROM {table}"), &[])
                    .unwrap()
                    .get(0)
            }
        }

        fn outcome(at: i64, n: u32) -> Outcome {
            Outcome {
                at,
                ok: !n.is_multiple_of(4),
                duration_ms: 30_000 + u64::from(n) * 1_000,
                xp: BTreeMap::from([("Woodcutting".to_string(), f64::from(n) * 12.5)]),
                items: if n.is_multiple_of(2) {
                    BTreeMap::from([("Oak logs".to_string(), f64::from(n % 7))])
                } else {
                    BTreeMap::new()
                },
                goal_progress: f64::from(n % 10) / 10.0,
                deaths: n % 9 / 8,
                stuck: n.is_multiple_of(11),
                items_lost: n % 3,
                failure: n
                    .is_multiple_of(4)
                    .then(|| format!("Error: run {n} failed")),
                unmeasured: n
                    .is_multiple_of(5)
                    .then(|| "output cut by tail".to_string()),
            }
        }

        fn snapshot(agent: AgentId, bot: &str, name: &str, edit: u32) -> ScriptSnapshot {
            let code = format!("await bot.walkTo(3200, {edit}); // {name}\n");
            ScriptSnapshot {
                agent,
                path: format!("bots/{bot}/{name}.ts"),
                name: name.into(),
                digest: mindrune_core::sha256(code.as_bytes()),
                code,
                tags: vec!["item:oak-logs".into(), "skill:woodcutting".into()],
                header: SkillHeader {
                    state: HeaderState::Skill,
                    goal: Some(format!("{name} well")),
                    topics: vec!["skill:woodcutting".into()],
                    ..SkillHeader::default()
                },
                file_digest: Some(format!("f-{name}-{edit}")),
                origin: None,
            }
        }

        /// A library with rows in every table: two families, edits, runs, snippets, lessons,
        /// sharing, a deleted agent, the vocabulary, tokens, a session, avatar states and wealth.
        #[expect(
            clippy::too_many_lines,
            reason = "a fixture: a library with rows in every table, built row by row"
        )]
        fn library() -> SqliteStore {
            let store = SqliteStore::open_in_memory().unwrap();
            let ada = store
                .create_owner("ada", &secret_digest("key-ada-s3cret"), 1_000)
                .unwrap()
                .id;
            let eve = store
                .create_owner("eve", &secret_digest("key-eve-s3cret"), 1_500)
                .unwrap()
                .id;
            store.set_eager_sharing(ada, true).unwrap();
            store
                .save_server_health(1_600, r#"{"refused":{"401 Unauthorized":2}}"#)
                .unwrap();
            // An alert, delivered once and resolved, with its resolve still to go.
            let hook = crate::AlertTarget {
                webhook: "http://127.0.0.1:9/hook".into(),
                format: "json".into(),
                not_before: 1_700,
            };
            let raised = crate::RaisedAlert {
                id: "ada/failing/1/2".into(),
                kind: "failing".into(),
                subject: "buzz/chop.ts".into(),
                body: r#"{"title":"buzz/chop.ts failed its last 3 runs"}"#.into(),
                targets: vec![hook.clone()],
            };
            store
                .sync_alerts(ada, &[raised], std::slice::from_ref(&hook), 1_700)
                .unwrap();
            store
                .note_alert_attempt(
                    ada,
                    "ada/failing/1/2",
                    crate::AlertEvent::Open,
                    &hook.webhook,
                    &crate::DeliveryAttempt {
                        delivered_at: Some(1_750),
                        status: Some(200),
                        error: None,
                        next_attempt_at: 1_750,
                    },
                )
                .unwrap();
            store.sync_alerts(ada, &[], &[hook], 1_800).unwrap();
            let mut at = 10_000;
            let agents: Vec<(OwnerId, AgentId, &str)> = [
                (ada, "buzz"),
                (ada, "pickles"),
                (eve, "mallory"),
                (ada, "rnchk"),
            ]
            .into_iter()
            .map(|(owner, name)| {
                let agent = store
                    .create_agent(owner, name, &format!("/ws/{name}"), 2_000)
                    .unwrap();
                (owner, agent.id, name)
            })
            .collect();
            let mut n = 0;
            for &(owner, agent, bot) in &agents {
                for name in ["chop-oaks", "mine-iron"] {
                    for edit in 0..3 {
                        let matched = store
                            .match_script(owner, &snapshot(agent, bot, name, edit), at)
                            .unwrap();
                        for _ in 0..7 {
                            n += 1;
                            at += 60_000;
                            store
                                .record_use(
                                    owner,
                                    &NewUse {
                                        version: matched.version.id,
                                        agent,
                                        outcome: outcome(at, n),
                                        source: "shell".into(),
                                        call: Some(format!("bun bots/{bot}/{name}.ts")),
                                        output: n.is_multiple_of(3).then(|| format!("done {n}")),
                                        event_id: n.is_multiple_of(2).then(|| format!("ev-{n}")),
                                        recorded_at: at + 5,
                                    },
                                )
                                .unwrap();
                        }
                    }
                }
                for k in 0..4 {
                    n += 1;
                    at += 1_000;
                    let code = format!("await bot.chopTree({});", k % 2);
                    store
                        .record_snippet_use(
                            owner,
                            &NewSnippetUse {
                                agent,
                                digest: mindrune_core::sha256(code.as_bytes()),
                                code,
                                outcome: outcome(at, n),
                                output: None,
                                event_id: Some(format!("snip-{n}")),
                            },
                        )
                        .unwrap();
                }
                store.share_qualified(owner, agent, at).unwrap();
                store
                    .replace_lessons(
                        owner,
                        agent,
                        &[
                            NewLesson {
                                line: 3,
                                text: format!("[quest:restless-ghost] {bot}: Father Aereck"),
                            },
                            NewLesson {
                                line: 9,
                                text: "bank first — the inventory fills".into(),
                            },
                        ],
                        at,
                    )
                    .unwrap();
                store.note_turn_end(owner, agent, at).unwrap();
                store
                    .set_agent_mirror(owner, agent, Some(&format!("bots/{bot}/family-skills")))
                    .unwrap();
                store
                    .note_unrecorded(
                        owner,
                        &crate::UnrecordedCall {
                            agent,
                            event_id: format!("bg-{bot}"),
                            at,
                            reason: crate::UnrecordedReason::Background,
                            detail: format!("bun bots/{bot}/chop.ts &"),
                            output: None,
                        },
                    )
                    .unwrap();
                // A look keeps the state it printed: the copy carries it over.
                store
                    .note_unrecorded(
                        owner,
                        &crate::UnrecordedCall {
                            agent,
                            event_id: format!("look-{bot}"),
                            at: at + 1,
                            reason: crate::UnrecordedReason::Look,
                            detail: format!("bun sdk/cli.ts {bot}"),
                            output: Some("## Skills\nWoodcutting: 1 (0 xp)\n".to_string()),
                        },
                    )
                    .unwrap();
                store.note_mirror_refresh(owner, agent, at + 1).unwrap();
                store.note_wrapup(owner, agent, at + 2).unwrap();
                store
                    .note_snippet_suggestion(owner, agent, "near:chopTree", 6, at)
                    .unwrap();
                store
                    .issue_runner_token(owner, agent, &format!("hash-{bot}"), at)
                    .unwrap();
                store
                    .save_avatar_state(
                        owner,
                        agent,
                        &format!("{{\"levels\":{{\"{bot}\":1}},\"wealth\":{at}}}"),
                        Some(crate::Standing {
                            coins: at,
                            total_xp: Some(at * 10),
                            total_level: Some(1),
                        }),
                        at,
                    )
                    .unwrap();
            }
            let (owner, rnchk, _) = agents[3];
            store.delete_agent(owner, rnchk).unwrap();
            store
                .replace_vocabulary(
                    &[
                        VocabularyEntry::new(
                            "quest",
                            "restless-ghost",
                            "The Restless Ghost",
                            VocabularySource::Wiki,
                        ),
                        VocabularyEntry::new(
                            "item",
                            "oak-logs",
                            "Oak logs",
                            VocabularySource::Wiki,
                        ),
                        VocabularyEntry::new(
                            "place",
                            "lumbridge",
                            "Lumbridge",
                            VocabularySource::Places,
                        ),
                    ],
                    at,
                )
                .unwrap();
            store.issue_operator_token("operator-hash", at).unwrap();
            store
                .create_session(ada, "session-hash", "csrf", at, at + 3_600_000)
                .unwrap();
            store
        }

        fn copy(source: &SqliteStore, dest: &Dest) -> Result<CopyReport> {
            copy_library(source, &dest.store, &mut |_| {})
        }

        #[test]
        fn a_whole_library_is_copied_and_verified_and_a_second_run_copies_nothing() {
            let source = library();
            let dest = Dest::new();
            let mut heard = Vec::new();
            let report = copy_library(&source, &dest.store, &mut |t| heard.push(t.table)).unwrap();
            assert_eq!(heard, TABLES.iter().map(|t| t.name).collect::<Vec<_>>());
            for table in &report.tables {
                assert!(
                    table.rows > 0,
                    "{} is empty: the test misses it",
                    table.table
                );
                assert_eq!(table.copied, table.rows, "{}", table.table);
                assert_eq!(
                    dest.count(table.table),
                    table.rows as i64,
                    "{}",
                    table.table
                );
            }
            assert!(report.rows() > 200);
            // The columns later migrations added came through: why a run was not measured,
            // and a look's state.
            dest.sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM uses WHERE unmeasured = 'output cut by tail') THEN RAISE 'no unmeasured use'; END IF; END $$");
            dest.sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM snippet_uses WHERE unmeasured IS NOT NULL) THEN RAISE 'no unmeasured snippet use'; END IF; END $$");
            dest.sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM unrecorded_calls WHERE reason = 'look' AND output LIKE '## Skills%') THEN RAISE 'no look'; END IF; END $$");
            // A NULL agent (the deleted agent's shared skills stay) came through as NULL.
            dest.sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM skills WHERE agent_id IS NULL) THEN RAISE 'no NULL agent'; END IF; END $$");

            let again = copy(&source, &dest).unwrap();
            assert_eq!(again.copied(), 0);
            assert_eq!(again.rows(), report.rows());
            for (first, second) in report.tables.iter().zip(&again.tables) {
                assert_eq!(first.digest, second.digest, "{}", first.table);
            }

            // New rows get fresh ids, past the copied ones.
            let next: i64 = dest
                .store
                .connection()
                .unwrap()
                .query_one(
                    "INSERT INTO operator_tokens (token_hash, created_at) VALUES ('new', 0) RETURNING token_id",
                    &[],
                )
                .unwrap()
                .get(0);
            assert_eq!(next, 2);
            let next: i64 = dest
                .store
                .connection()
                .unwrap()
                .query_one(
                    "INSERT INTO owners (name, key_digest, created_at) VALUES ('zed', 'k', 0) RETURNING owner_id",
                    &[],
                )
                .unwrap()
                .get(0);
            assert_eq!(next, 3);
        }

        #[test]
        fn a_copy_stopped_halfway_goes_on_when_run_again() {
            let source = library();
            let dest = Dest::new();
            let mut batches = 0;
            let stopped = copy_in_batches(&source, &dest.store, 7, &mut |_| {}, &mut || {
                batches += 1;
                if batches == 30 {
                    Err(StoreError::Database("killed".into()))
                } else {
                    Ok(())
                }
            });
            let err = stopped.unwrap_err().to_string();
            assert!(
                err.contains("killed") && err.contains("run the copy again"),
                "{err}"
            );
            let kept: i64 = TABLES.iter().map(|t| dest.count(t.name)).sum();
            let (skills, versions) = (dest.count("skills"), dest.count("versions"));
            assert!(
                kept > 100 && skills > 0 && versions > 0,
                "every committed batch is kept"
            );
            assert_eq!(
                dest.count("lessons"),
                0,
                "the copy stopped before the lessons"
            );

            let report =
                copy_in_batches(&source, &dest.store, 7, &mut |_| {}, &mut || Ok(())).unwrap();
            assert_eq!(report.copied(), report.rows() - kept as u64);
            let fresh = copy(&source, &Dest::new()).unwrap();
            assert_eq!(
                report.tables.iter().map(|t| &t.digest).collect::<Vec<_>>(),
                fresh.tables.iter().map(|t| &t.digest).collect::<Vec<_>>()
            );
        }

        #[test]
        fn a_row_that_differs_is_named_and_kept_as_it_was() {
            let source = library();
            let dest = Dest::new();
            copy(&source, &dest).unwrap();
            dest.sql("UPDATE uses SET duration_ms = 1, stuck = NOT stuck WHERE use_id = 3");
            let err = copy(&source, &dest).unwrap_err();
            assert!(matches!(err, StoreError::Conflict(_)), "{err:?}");
            let err = err.to_string();
            assert!(
                err.contains("does not match its source in 1 table (uses)"),
                "{err}"
            );
            assert!(
                err.contains("rows with the same key differ")
                    && err.contains("(owner_id=1, use_id=3) (in duration_ms, stuck)"),
                "{err}"
            );
            let uses = report_line(&err, "uses:");
            assert!(
                uses.contains("the source has") && uses.matches("sha256:").count() == 2,
                "{uses}"
            );
            let kept: i64 = dest
                .store
                .connection()
                .unwrap()
                .query_one("SELECT duration_ms FROM uses WHERE use_id = 3", &[])
                .unwrap()
                .get(0);
            assert_eq!(kept, 1, "not overwritten");
        }

        #[test]
        fn rows_the_source_does_not_hold_are_named() {
            let source = library();
            let dest = Dest::new();
            copy(&source, &dest).unwrap();
            dest.sql(
                "INSERT INTO operator_tokens (token_id, token_hash, created_at) VALUES (40, 'x', 0), (41, 'y', 0)",
            );
            let err = copy(&source, &dest).unwrap_err().to_string();
            assert!(
                err.contains(
                    "the destination holds rows the source does not: token_id=40, token_id=41"
                ),
                "{err}"
            );
            assert!(
                err.contains("the source has 1 row (") && err.contains("the destination 3"),
                "{err}"
            );
        }

        #[test]
        fn another_library_is_refused_before_anything_is_written() {
            let source = library();
            let dest = Dest::new();
            dest.sql(
                "INSERT INTO owners (owner_id, name, key_digest, created_at) VALUES (1, 'bob', 'k', 0), (7, 'ada', 'k', 0)",
            );
            let err = copy(&source, &dest).unwrap_err().to_string();
            assert!(
                err.contains("holds another library: nothing was copied"),
                "{err}"
            );
            assert!(
                err.contains("the destination holds rows the source does not: owner_id=7"),
                "{err}"
            );
            assert!(
                err.contains("owner_id=1 (in name, key_digest, eager_sharing, created_at)"),
                "{err}"
            );
            assert!(
                !err.contains("key-ada-s3cret"),
                "no values, which may be secrets: {err}"
            );
            assert_eq!(dest.count("agents"), 0);
            assert_eq!(dest.count("owners"), 2);
        }

        #[test]
        fn a_source_row_that_refers_to_nothing_is_named_and_the_rows_before_it_are_kept() {
            let source = library();
            source.with_connection(|conn| {
                conn.execute_batch(
                    "PRAGMA foreign_keys = OFF;
                     INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, source, recorded_at)
                     VALUES (1, 999, 1, 0, 1, 10, 'shell', 0);
                     PRAGMA foreign_keys = ON;",
                )
                .unwrap();
            });
            let dest = Dest::new();
            let err = copy(&source, &dest).unwrap_err().to_string();
            assert!(
                err.contains("copying uses failed") && err.contains("foreign key"),
                "{err}"
            );
            assert!(err.contains("PRAGMA foreign_key_check"), "{err}");
            assert!(dest.count("versions") > 0, "the tables before are kept");
        }

        fn report_line<'a>(text: &'a str, start: &str) -> &'a str {
            text.lines()
                .find(|line| line.trim_start().starts_with(start))
                .unwrap_or_else(|| panic!("no {start} line in {text}"))
        }
    }
}
