//! Opening the library in MINDRUNE_HOME.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use mindrune_store::{Owner, SqliteStore, Store as _};

/// The database file inside the library's home.
pub fn database_path(home: &Path) -> PathBuf {
    home.join("library.db")
}

/// Opens an existing library; a missing one is an error that says how to make it.
pub fn open(home: &Path) -> anyhow::Result<SqliteStore> {
    let path = database_path(home);
    if !path.exists() {
        bail!(
            "no MindRune library at {}\n\nhint: run `mindrune init` to make one (or set MINDRUNE_HOME)",
            home.display()
        );
    }
    SqliteStore::open(&path)
        .with_context(|| format!("cannot open the library at {}", path.display()))
}

/// Finds the owner a command acts for: the one named, or the only one there is.
pub fn resolve_owner(store: &SqliteStore, name: Option<&str>) -> anyhow::Result<Owner> {
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
