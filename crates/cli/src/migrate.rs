//! `mindrune migrate`: copies a whole library from SQLite into PostgreSQL, verifies every
//! table, and goes on where it stopped when run again.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_store::{PgStore, SqliteStore, TableCopy, copy_library};

use crate::commands::thousands;
use crate::library::Database;
use crate::progress::Progress;

/// `mindrune migrate --from sqlite:PATH --to postgres://…`.
pub(crate) fn migrate(from: &str, to: &str) -> anyhow::Result<ExitCode> {
    let source = Database::parse(from).context("--from")?;
    let dest = Database::parse(to).context("--to")?;
    let (path, url) = match (&source, &dest) {
        (Database::Sqlite(path), Database::Postgres(url)) => (path, url),
        (Database::Sqlite(_), Database::Sqlite(_)) => bail!(
            "`mindrune migrate` copies a SQLite library into PostgreSQL, and --to {dest} is a \
             SQLite file\n\nhint: write --to postgres://USER@HOST:PORT/DATABASE; to copy a SQLite \
             library to another file, copy its library.db while no mindrune uses it"
        ),
        (Database::Postgres(_), _) => bail!(
            "`mindrune migrate` copies a SQLite library into PostgreSQL; copying out of \
             PostgreSQL ({source}) is not supported\n\nhint: write --from sqlite:PATH --to \
             postgres://USER@HOST:PORT/DATABASE"
        ),
    };
    if !path.is_file() {
        let hint = if path.join("library.db").is_file() {
            format!(
                "--from names the database file, not its folder: --from sqlite:{}",
                path.join("library.db").display()
            )
        } else {
            "--from names the library's database file, e.g. sqlite:.mindrune/library.db".into()
        };
        bail!(
            "no MindRune library at {}; nothing was copied\n\nhint: {hint}",
            path.display()
        );
    }
    let is_library = SqliteStore::holds_library(path);
    if !is_library {
        bail!(
            "{} is not a MindRune library (it has no owners table); nothing was copied\n\nhint: \
             --from names a library's database file, e.g. sqlite:.mindrune/library.db",
            path.display()
        );
    }
    let source_store = SqliteStore::open(path)
        .with_context(|| format!("cannot open the library at {}", path.display()))?;
    let dest_store = PgStore::open(url).with_context(|| format!("cannot open {dest}"))?;

    let mut out = std::io::stdout().lock();
    writeln!(out, "Copying the library at {} into {dest}", path.display())?;
    let mut printed: std::io::Result<()> = Ok(());
    let progress = Progress::spinner("copying the first table");
    let report = copy_library(&source_store, &dest_store, &mut |table: &TableCopy| {
        if printed.is_ok() {
            printed = progress.suspend(|| {
                writeln!(
                    out,
                    "  {:<20} {:>10} copied {:>10} in all",
                    table.table,
                    thousands(table.copied as usize),
                    thousands(table.rows as usize)
                )
            });
        }
        progress.say(&format!("copying the table after {}", table.table));
    })
    .with_context(|| format!("copying into {dest}"))?;
    drop(progress);
    printed?;

    let (copied, rows) = (report.copied(), report.rows());
    let before = rows - copied;
    if before == 0 {
        writeln!(out, "Copied {} rows.", thousands(copied as usize))?;
    } else if copied == 0 {
        writeln!(
            out,
            "Copied no new rows: all {} were there from an earlier run.",
            thousands(rows as usize)
        )?;
    } else {
        writeln!(
            out,
            "Copied {} new rows; {} were there from an earlier run ({} in all).",
            thousands(copied as usize),
            thousands(before as usize),
            thousands(rows as usize)
        )?;
    }
    writeln!(
        out,
        "Verified {} tables: row counts and SHA-256 digests match the source.",
        report.tables.len()
    )?;
    // Quoted for the shell when the URL has a `?` or `&` (a schema or other parameters).
    let shown = dest.to_string();
    let shown = if shown.contains(['?', '&']) {
        format!("'{shown}'")
    } else {
        shown
    };
    writeln!(
        out,
        "\nTo use it, pass --database {shown} or set MINDRUNE_DATABASE_URL; without either, \
         MindRune keeps using the SQLite library."
    )?;
    Ok(ExitCode::SUCCESS)
}
