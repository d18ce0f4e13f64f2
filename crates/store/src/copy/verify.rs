//! The verification after a copy: which tables differ, and the message naming their first rows.

use std::cmp::Ordering;

use postgres::fallible_iterator::FallibleIterator as _;
use postgres::types::ToSql;

use super::tables::Table;
use super::value::{Value, from_postgres, from_sqlite};
use super::{Fail, SHOWN_ROWS, dest_digest};
use crate::{CopyReport, StoreError};

/// A table whose copy does not match its source.
pub(super) struct Mismatch {
    pub(super) table: &'static str,
    /// Row count and digest of each side, when compared.
    pub(super) source: Option<(u64, String)>,
    pub(super) dest: Option<(u64, String)>,
    pub(super) found: Differences,
}

impl Mismatch {
    pub(super) fn explain(&self, out: &mut String) {
        use std::fmt::Write as _;
        match (&self.source, &self.dest) {
            (Some((source_rows, source_digest)), Some((dest_rows, dest_digest))) => {
                let _ = writeln!(
                    out,
                    "  {}: the source has {} ({source_digest}), the destination {dest_rows} \
                     ({dest_digest})",
                    self.table,
                    rows(*source_rows),
                );
            }
            _ => {
                let _ = writeln!(out, "  {}:", self.table);
            }
        }
        let found = &self.found;
        let list = |keys: &[String], total: usize| {
            let mut text = keys.join(", ");
            if total > keys.len() {
                text.push_str(&format!(" and {} more", total - keys.len()));
            }
            text
        };
        if found.dest_only_count > 0 {
            let _ = writeln!(
                out,
                "    the destination holds rows the source does not: {}",
                list(&found.dest_only, found.dest_only_count)
            );
        }
        if found.differing_count > 0 {
            let _ = writeln!(
                out,
                "    rows with the same key differ (the destination's were kept, not \
                 overwritten): {}",
                list(&found.differing, found.differing_count)
            );
        }
        if found.source_only_count > 0 {
            let _ = writeln!(
                out,
                "    rows of the source are missing from the destination: {}",
                list(&found.source_only, found.source_only_count)
            );
        }
    }
}

/// `1 row`, `2 rows`.
pub(super) fn rows(n: u64) -> String {
    format!("{n} {}", if n == 1 { "row" } else { "rows" })
}

/// The error for tables that do not match.
pub(super) fn mismatch_error(
    mismatches: &[Mismatch],
    copied: u64,
    cause: Option<&StoreError>,
) -> StoreError {
    let tables: Vec<&str> = mismatches.iter().map(|m| m.table).collect();
    let mut message = format!(
        "the copy does not match its source in {} {} ({})",
        tables.len(),
        if tables.len() == 1 { "table" } else { "tables" },
        tables.join(", ")
    );
    if let Some(cause) = cause {
        message.push_str(&format!(", and a row could not be copied: {cause}"));
    }
    message.push('\n');
    for mismatch in mismatches {
        mismatch.explain(&mut message);
    }
    message.push_str(&format!(
        "{} copied by this run; no row already in the destination was overwritten\n\n\
         hint: copy into an empty database or schema (e.g. add ?schema=NAME to the URL), or \
         into a partial copy of this same library",
        rows(copied)
    ));
    StoreError::Conflict(message)
}

/// Compares each table's destination with the source's count and digest (from the copy), and
/// finds the differing rows of those that do not match.
pub(super) fn verify(
    tx: &rusqlite::Transaction<'_>,
    client: &mut postgres::Client,
    tables: &[Table],
    report: &CopyReport,
) -> std::result::Result<Vec<Mismatch>, Fail> {
    let mut mismatches = Vec::new();
    for (table, copy) in tables.iter().zip(&report.tables) {
        let dest = dest_digest(client, table)?;
        if dest.0 != copy.rows || dest.1 != copy.digest {
            mismatches.push(Mismatch {
                table: table.name,
                source: Some((copy.rows, copy.digest.clone())),
                dest: Some(dest),
                found: differences(tx, client, table)?,
            });
        }
    }
    Ok(mismatches)
}

/// The rows of one table that differ between the two sides, the first few of each sort by key.
#[derive(Debug, Default)]
pub(super) struct Differences {
    pub(super) dest_only: Vec<String>,
    pub(super) dest_only_count: usize,
    /// `key (columns)`.
    pub(super) differing: Vec<String>,
    pub(super) differing_count: usize,
    pub(super) source_only: Vec<String>,
    pub(super) source_only_count: usize,
}

impl Differences {
    pub(super) fn note(keys: &mut Vec<String>, count: &mut usize, key: impl FnOnce() -> String) {
        if keys.len() < SHOWN_ROWS {
            keys.push(key());
        }
        *count += 1;
    }
}

/// Walks both sides of a table in key order together and notes every row that differs.
pub(super) fn differences(
    tx: &rusqlite::Transaction<'_>,
    client: &mut postgres::Client,
    table: &Table,
) -> std::result::Result<Differences, Fail> {
    let key_positions = table.key_positions();
    let compare_keys = |a: &[Value], b: &[Value]| {
        key_positions
            .iter()
            .map(|&at| a[at].compare(&b[at]))
            .find(|order| order.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let mut select = tx.prepare(&table.select(false))?;
    let mut source_rows = select.query([])?;
    let mut next_source = || -> std::result::Result<Option<Vec<Value>>, Fail> {
        let Some(row) = source_rows.next()? else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(table.columns.len());
        for (at, (column, kind)) in table.columns.iter().enumerate() {
            values.push(from_sqlite(*kind, row.get_ref(at)?).map_err(|what| {
                Fail::Store(StoreError::Database(format!(
                    "the source's {}.{column} {what}",
                    table.name
                )))
            })?);
        }
        Ok(Some(values))
    };
    let mut dest_rows = client.query_raw(
        table.select(true).as_str(),
        std::iter::empty::<&(dyn ToSql + Sync)>(),
    )?;
    let mut next_dest = || -> std::result::Result<Option<Vec<Value>>, Fail> {
        let Some(row) = dest_rows.next()? else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(table.columns.len());
        for (at, (_, kind)) in table.columns.iter().enumerate() {
            values.push(from_postgres(*kind, &row, at)?);
        }
        Ok(Some(values))
    };

    let mut found = Differences::default();
    let mut source = next_source()?;
    let mut dest = next_dest()?;
    loop {
        let order = match (&source, &dest) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(s), Some(d)) => compare_keys(s, d),
        };
        match (order, &source, &dest) {
            (Ordering::Less, Some(s), _) => {
                Differences::note(&mut found.source_only, &mut found.source_only_count, || {
                    table.describe_key(s)
                });
                source = next_source()?;
            }
            (Ordering::Greater, _, Some(d)) => {
                Differences::note(&mut found.dest_only, &mut found.dest_only_count, || {
                    table.describe_key(d)
                });
                dest = next_dest()?;
            }
            (_, Some(s), Some(d)) => {
                let columns: Vec<&str> = table
                    .columns
                    .iter()
                    .zip(s.iter().zip(d))
                    .filter(|(_, (a, b))| !a.same(b))
                    .map(|((name, _), _)| *name)
                    .collect();
                if !columns.is_empty() {
                    // Column names only: the values may be secrets (an owner's key).
                    Differences::note(&mut found.differing, &mut found.differing_count, || {
                        format!("{} (in {})", table.describe_key(s), columns.join(", "))
                    });
                }
                source = next_source()?;
                dest = next_dest()?;
            }
            _ => break,
        }
    }
    Ok(found)
}
