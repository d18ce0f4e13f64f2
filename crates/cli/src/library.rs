//! Opening the library: the SQLite file in MINDRUNE_HOME (the embedded default), or the
//! PostgreSQL database that `--database` / MINDRUNE_DATABASE_URL names.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context as _, bail};
use mindrune_store::{Owner, PgStore, SqliteStore, Store};

/// The database file inside the library's home.
pub(crate) fn database_path(home: &Path) -> PathBuf {
    home.join("library.db")
}

/// A library's database, as `--database`, `--from` and `--to` name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Database {
    /// `sqlite:PATH`: a SQLite file.
    Sqlite(PathBuf),
    /// `postgres://…` (or `postgresql://…`): a PostgreSQL database.
    Postgres(String),
}

impl Database {
    /// Reads `postgres://USER@HOST:PORT/DB` or `sqlite:PATH`.
    pub(crate) fn parse(spec: &str) -> anyhow::Result<Database> {
        if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
            Ok(Database::Postgres(spec.to_string()))
        } else if let Some(path) = spec.strip_prefix("sqlite:") {
            if path.is_empty() {
                bail!("`sqlite:` needs a file after it, e.g. sqlite:.mindrune/library.db");
            }
            Ok(Database::Sqlite(PathBuf::from(path)))
        } else {
            bail!(
                "`{}` names no database MindRune knows\n\nhint: write postgres://USER@HOST:PORT/DATABASE \
                 or sqlite:PATH",
                mindrune_store::redact_url(spec)
            )
        }
    }

    /// Opens the library there, creating its tables if needed.
    pub(crate) fn open(&self) -> anyhow::Result<Box<dyn Store>> {
        if let Database::Sqlite(path) = self
            && let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        Ok(match self {
            Database::Sqlite(path) => Box::new(
                SqliteStore::open(path)
                    .with_context(|| format!("cannot open the library at {}", path.display()))?,
            ),
            Database::Postgres(url) => {
                Box::new(PgStore::open(url).context("cannot open the library in PostgreSQL")?)
            }
        })
    }
}

impl std::fmt::Display for Database {
    /// The database for messages, never with its password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Database::Sqlite(path) => write!(f, "{}", path.display()),
            Database::Postgres(url) => f.write_str(&mindrune_store::redact_url(url)),
        }
    }
}

/// The PostgreSQL database this process's library is in (`--database` /
/// MINDRUNE_DATABASE_URL), if one was chosen: `mindrune bench record` measures it too.
pub(crate) fn chosen_postgres(home: &Path) -> Option<String> {
    match database(home) {
        Database::Postgres(url) => Some(url),
        Database::Sqlite(_) => None,
    }
}

/// The database chosen for this process (`--database` / MINDRUNE_DATABASE_URL: PostgreSQL, or a
/// SQLite file elsewhere), set once by `main` before any command runs; without one the library
/// is MINDRUNE_HOME's SQLite file. Every command finds its library through [`database`], so
/// what it opens, makes and names in its messages is the same place.
static CHOSEN: OnceLock<Database> = OnceLock::new();

/// Chooses the database every command of this process opens instead of MINDRUNE_HOME's file.
pub(crate) fn choose_database(spec: &str) -> anyhow::Result<()> {
    let database = Database::parse(spec)?;
    let _ = CHOSEN.set(database);
    Ok(())
}

/// How a printed command names the database this process chose, so it opens the same
/// library: `--database sqlite:ABSOLUTE_PATH`, or the PostgreSQL URL (a URL holding a password
/// is named through `$MINDRUNE_DATABASE_URL` instead, never printed). `None` when no database
/// was chosen (MINDRUNE_HOME's file is the library).
pub(crate) fn chosen_flag(quote: impl Fn(&str) -> String) -> Option<String> {
    match CHOSEN.get()? {
        Database::Sqlite(path) => {
            let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            Some(format!(
                "--database {}",
                quote(&format!("sqlite:{}", path.display()))
            ))
        }
        Database::Postgres(url) if mindrune_store::redact_url(url) != *url => {
            Some("--database \"$MINDRUNE_DATABASE_URL\"".to_string())
        }
        Database::Postgres(url) => Some(format!("--database {}", quote(url))),
    }
}

/// Where this process's library is.
pub(crate) fn database(home: &Path) -> Database {
    CHOSEN
        .get()
        .cloned()
        .unwrap_or_else(|| Database::Sqlite(database_path(home)))
}

/// Whether the library exists already. A PostgreSQL database counts as one when MindRune can
/// reach it: whether it holds a library is known only by opening it ([`open_if_made`]).
pub(crate) fn exists(home: &Path) -> bool {
    match database(home) {
        Database::Sqlite(path) => path.exists(),
        Database::Postgres(_) => true,
    }
}

/// The existing library, or `None` when there is none yet (nothing is made either way): what
/// `setup` builds its plan on.
pub(crate) fn open_if_made(home: &Path) -> anyhow::Result<Option<Box<dyn Store>>> {
    if !exists(home) {
        return Ok(None);
    }
    match open(home) {
        Ok(store) => Ok(Some(store)),
        Err(err)
            if matches!(
                err.downcast_ref::<mindrune_store::StoreError>(),
                Some(mindrune_store::StoreError::NoLibrary(_))
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// Opens an existing library and makes nothing: a missing one (no SQLite file, or a PostgreSQL
/// database or schema without MindRune's tables) is an error that names the place looked at and
/// says how to make it. Only `init` and `setup` make a library.
pub(crate) fn open(home: &Path) -> anyhow::Result<Box<dyn Store>> {
    let database = database(home);
    if let Database::Sqlite(path) = &database
        && !path.exists()
    {
        let init = if CHOSEN.get().is_some() {
            format!("`mindrune --database sqlite:{} init`", path.display())
        } else {
            "`mindrune init`".to_string()
        };
        bail!(
            "no MindRune library at {}\n\nhint: run {init} to make one (or set MINDRUNE_HOME, \
             or --database / MINDRUNE_DATABASE_URL for a library elsewhere)",
            path.display()
        );
    }
    match &database {
        Database::Sqlite(_) => database.open(),
        Database::Postgres(url) => match PgStore::open_existing(url) {
            Ok(store) => Ok(Box::new(store)),
            Err(err @ mindrune_store::StoreError::NoLibrary(_)) => Err(anyhow::Error::new(err)
                .context(format!(
                    "no MindRune library in PostgreSQL at {database}\n\nhint: check the URL and its schema=; `mindrune --database URL init` makes a library there"
                ))),
            Err(err) => Err(err).context("cannot open the library in PostgreSQL"),
        },
    }
}

/// Finds the owner a command acts for: the one named, or the only one there is.
pub(crate) fn resolve_owner(store: &dyn Store, name: Option<&str>) -> anyhow::Result<Owner> {
    if let Some(name) = name {
        return store.owner_by_name(name)?.with_context(|| {
            format!("no owner named `{name}`\n\nhint: `mindrune owner list` shows the owners; `mindrune owner add {name}` adds one")
        });
    }
    let mut owners = store.owners()?;
    match owners.len() {
        0 => bail!("the library has no owners yet\n\nhint: add one with `mindrune owner add NAME`"),
        1 => Ok(owners.remove(0)),
        _ => bail!(
            "the library has {} owners ({}); name one with --owner",
            owners.len(),
            owners
                .iter()
                .map(|o| o.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_named_by_a_postgres_url_or_a_sqlite_path() {
        assert_eq!(
            Database::parse("postgres://ada@db:5432/lib").unwrap(),
            Database::Postgres("postgres://ada@db:5432/lib".into())
        );
        assert_eq!(
            Database::parse("sqlite:lib/library.db").unwrap(),
            Database::Sqlite("lib/library.db".into())
        );
        for bad in ["mysql://x", "sqlite:", "library.db"] {
            assert!(Database::parse(bad).is_err(), "{bad}");
        }
        let typo = Database::parse("postgress://ada:hunter2@db/lib").unwrap_err();
        assert!(!typo.to_string().contains("hunter2"), "{typo}");
    }

    #[test]
    fn a_database_is_shown_without_its_password() {
        let db = Database::parse("postgres://ada:hunter2@db:5432/lib").unwrap();
        assert_eq!(db.to_string(), "postgres://ada:***@db:5432/lib");
    }
}
