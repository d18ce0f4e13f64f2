//! The sharding rule, checked on the SQL itself: every statement that touches a family's table
//! names the family. On a sharded PostgreSQL (Citus, distributed by `owner_id`) such a statement
//! goes to the one shard that holds the family; without the filter it would fan out to every
//! shard, and worse, it could read or change another family's rows.
//!
//! The test reads the backends' source, takes every string literal that is SQL, and checks
//! each reference to a family table: an `INSERT` lists `owner_id` among its columns; any other
//! statement compares the table's `owner_id` (through its alias, when it has one) and compares
//! some `owner_id` with a bound parameter, so the family comes from the caller.

use std::path::Path;

/// Tables holding one family's data (docs/architecture.md, "PostgreSQL"). The directory tables
/// (owners, agents, tokens, sessions, the vocabulary) are looked up by name or digest before the
/// family is known, and are reference tables on Citus.
const FAMILY_TABLES: &[&str] = &[
    "skills",
    "versions",
    "skill_tags",
    "uses",
    "snippets",
    "snippet_uses",
    "sharing_events",
    "lessons",
    "snippet_suggestions",
    "avatar_states",
    "avatar_wealth",
    "unrecorded_calls",
    "alerts",
    "alert_deliveries",
];

const SQL_WORDS: &[&str] = &["SELECT ", "INSERT ", "UPDATE ", "DELETE "];

/// The string literals of a Rust source file, with their line numbers. Comments are skipped;
/// the sources hold no raw strings or `'"'` character literals, which this does not read.
fn string_literals(source: &str) -> Vec<(usize, String)> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' => {
                let start_line = line;
                let mut text = String::new();
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' && i + 1 < bytes.len() {
                        // `\` at a line end continues the string; other escapes keep their
                        // character.
                        if bytes[i + 1] == b'\n' {
                            line += 1;
                        } else {
                            text.push(bytes[i + 1] as char);
                        }
                        i += 2;
                        continue;
                    }
                    if bytes[i] == b'\n' {
                        line += 1;
                    }
                    text.push(bytes[i] as char);
                    i += 1;
                }
                i += 1;
                found.push((start_line, text));
            }
            _ => i += 1,
        }
    }
    found
}

fn is_sql(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    SQL_WORDS.iter().any(|word| upper.contains(word))
        && (upper.contains(" FROM ") || upper.contains("INSERT INTO") || upper.contains("UPDATE "))
}

/// Words that follow a table name but are not an alias.
const NOT_ALIASES: &[&str] = &[
    "where",
    "set",
    "on",
    "join",
    "left",
    "cross",
    "inner",
    "group",
    "order",
    "limit",
    "values",
    "select",
    "returning",
    "using",
    "union",
    "and",
    "or",
    "as",
    "default",
    "(",
];

/// Every reference to a family table in a statement: (table, alias, is_insert, columns of an
/// insert).
fn family_references(sql: &str) -> Vec<(String, Option<String>, Option<String>)> {
    let words: Vec<String> = sql
        .replace('(', " ( ")
        .replace(')', " ) ")
        .replace(',', " , ")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut references = Vec::new();
    for (k, word) in words.iter().enumerate() {
        let lower = word.to_ascii_lowercase();
        if !matches!(lower.as_str(), "from" | "join" | "update" | "into") {
            continue;
        }
        let Some(table) = words.get(k + 1) else {
            continue;
        };
        let table = table.to_ascii_lowercase();
        if !FAMILY_TABLES.contains(&table.as_str()) {
            continue;
        }
        if lower == "into" {
            // The column list of `INSERT INTO table (…)`.
            let columns = words[k + 2..]
                .iter()
                .skip_while(|w| *w == "(")
                .take_while(|w| *w != ")")
                .map(|w| w.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(" ");
            references.push((table, None, Some(columns)));
            continue;
        }
        let mut alias = words.get(k + 2).map(|w| w.to_ascii_lowercase());
        if alias.as_deref() == Some("as") {
            alias = words.get(k + 3).map(|w| w.to_ascii_lowercase());
        }
        let alias = alias.filter(|a| {
            !NOT_ALIASES.contains(&a.as_str())
                && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        references.push((table, alias, None));
    }
    references
}

/// Whether some `owner_id` is compared with a bound parameter (`$1`, `?1`), directly or through
/// an `IN`.
fn binds_the_owner(sql: &str) -> bool {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut rest = flat.as_str();
    while let Some(at) = rest.find("owner_id") {
        let after = rest[at + "owner_id".len()..].trim_start();
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            if value.starts_with('$') || value.starts_with('?') {
                return true;
            }
        }
        rest = &rest[at + "owner_id".len()..];
    }
    false
}

fn check_file(path: &Path, problems: &mut Vec<String>) -> usize {
    let source = std::fs::read_to_string(path).unwrap();
    let mut checked = 0;
    for (line, sql) in string_literals(&source) {
        if !is_sql(&sql) {
            continue;
        }
        let references = family_references(&sql);
        if references.is_empty() {
            continue;
        }
        checked += 1;
        let place = format!("{}:{line}", path.display());
        let lower = sql.to_ascii_lowercase();
        let mut needs_bound_owner = false;
        for (table, alias, insert_columns) in references {
            match (insert_columns, alias) {
                (Some(columns), _) => {
                    if !columns.split_whitespace().any(|c| c == "owner_id") {
                        problems.push(format!("{place}: INSERT INTO {table} without owner_id"));
                    }
                }
                (None, Some(alias)) => {
                    needs_bound_owner = true;
                    if !lower.contains(&format!("{alias}.owner_id")) {
                        problems.push(format!(
                            "{place}: {table} {alias} is read without {alias}.owner_id"
                        ));
                    }
                }
                (None, None) => {
                    needs_bound_owner = true;
                    if !lower.contains("owner_id") {
                        problems.push(format!("{place}: {table} is read without owner_id"));
                    }
                }
            }
        }
        if needs_bound_owner && !lower.contains("insert into") && !binds_the_owner(&sql) {
            problems.push(format!(
                "{place}: no owner_id is compared with a bound parameter:\n{sql}"
            ));
        }
    }
    checked
}

fn backend_sources(dir: &str) -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let path = root.join(dir);
    if path.is_file() {
        return vec![path];
    }
    let mut files: Vec<_> = std::fs::read_dir(&path)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_postgres_statement_on_a_family_table_is_filtered_by_its_owner() {
    let mut problems = Vec::new();
    // The backend's own SQL, and the statements written once for both (in PostgreSQL's
    // placeholders; SQLite takes them with its own).
    let checked: usize = backend_sources("postgres")
        .iter()
        .chain(&backend_sources("alerts.rs"))
        .chain(&backend_sources("sqlite_and_postgres_sql.rs"))
        .map(|file| check_file(file, &mut problems))
        .sum();
    assert!(
        checked > 60,
        "only {checked} statements were found: is the reader broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_sqlite_statement_on_a_family_table_is_filtered_by_its_owner() {
    let mut problems = Vec::new();
    // The backend's own SQL, the statements the rules write once for both (in SQLite's
    // placeholders; PostgreSQL's steps number them its way), and those both backends run
    // alike.
    let checked: usize = backend_sources("sqlite")
        .iter()
        .chain(&backend_sources("rules"))
        .chain(&backend_sources("sqlite_and_postgres_sql.rs"))
        .map(|file| check_file(file, &mut problems))
        .sum();
    assert!(
        checked > 60,
        "only {checked} statements were found: is the reader broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_sqlite_view_statement_on_a_family_table_is_filtered_by_its_owner() {
    let mut problems = Vec::new();
    let checked = check_file(&backend_sources("sqlite/views.rs")[0], &mut problems);
    assert!(
        checked >= 2,
        "only {checked} statements were found: is the reader broken?"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_catches_a_statement_without_the_owner() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.rs");
    std::fs::write(
        &file,
        r#"const A: &str = "SELECT v.score FROM versions v WHERE v.version_id = $1";
const B: &str = "INSERT INTO uses (version_id, at) VALUES ($1, $2)";
const C: &str = "SELECT s.name FROM skills s JOIN versions v ON v.version_id = s.current_version_id WHERE s.owner_id = $1";
const D: &str = "UPDATE snippets SET uses = uses + 1 WHERE snippet_id = $1";
const OK: &str = "SELECT v.score FROM versions v WHERE v.owner_id = $1 AND v.version_id = $2";
"#,
    )
    .unwrap();
    let mut problems = Vec::new();
    assert_eq!(check_file(&file, &mut problems), 5);
    let lines: Vec<&str> = problems
        .iter()
        .map(|p| p.split_once(": ").unwrap().1.lines().next().unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            "versions v is read without v.owner_id",
            "no owner_id is compared with a bound parameter:",
            "INSERT INTO uses without owner_id",
            "versions v is read without v.owner_id",
            "snippets is read without owner_id",
            "no owner_id is compared with a bound parameter:",
        ]
    );
    assert!(problems[3].starts_with(&format!("{}:3:", file.display())));
}
