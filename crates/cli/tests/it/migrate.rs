//! `mindrune migrate`: a SQLite library made by the real binary on real files, copied into a
//! PostgreSQL schema of its own, verified, copied again (nothing new), and read back.
//!
//! PostgreSQL: the database at `MINDRUNE_TEST_DATABASE_URL` (default
//! `postgres://postgres@127.0.0.1:5432/test`); each test makes a schema and drops it at the end,
//! also when it fails.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::json;

use crate::tags::generate_wiki;
use crate::util::{FIXED_CLOCK, TestLibrary, script, shell, stderr, stdout};

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// Every table the library keeps, as `migrate` lists them.
const TABLES: [&str; 22] = [
    "owners",
    "agents",
    "skills",
    "versions",
    "skill_tags",
    "uses",
    "snippets",
    "snippet_uses",
    "sharing_events",
    "lessons",
    "snippet_suggestions",
    "unrecorded_calls",
    "vocabulary",
    "vocabulary_state",
    "server_health",
    "runner_tokens",
    "operator_tokens",
    "dashboard_sessions",
    "avatar_states",
    "avatar_wealth",
    "alerts",
    "alert_deliveries",
];

/// A schema of this test's own; dropping the guard drops the schema (`DROP SCHEMA … CASCADE`),
/// also while a failed test unwinds.
struct Schema {
    base: String,
    name: String,
}

impl Schema {
    fn new() -> Schema {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let base = std::env::var("MINDRUNE_TEST_DATABASE_URL")
            .unwrap_or_else(|_| DEFAULT_DATABASE_URL.into());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let name = format!(
            "mindrune_it_migrate_{}_{}_{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Schema { base, name }
    }

    /// The URL `mindrune` is given: the database with `schema=NAME`.
    fn url(&self) -> String {
        format!("{}?schema={}", self.base, self.name)
    }

    fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.base, postgres::NoTls).unwrap_or_else(|err| {
            panic!(
                "this test needs PostgreSQL at {} (set MINDRUNE_TEST_DATABASE_URL): {err}",
                self.base
            )
        })
    }

    fn sql(&self, sql: &str) {
        self.client()
            .batch_execute(&format!("SET search_path TO {}; {sql}", self.name))
            .unwrap();
    }

    fn counts(&self) -> BTreeMap<String, i64> {
        let mut client = self.client();
        TABLES
            .iter()
            .map(|table| {
                let sql = format!("SELECT COUNT(*) FROM {}.{table}", self.name);
                (
                    table.to_string(),
                    client.query_one(&sql, &[]).unwrap().get(0),
                )
            })
            .collect()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // No panic here: during a failed test's unwinding it would abort the run.
        let dropped = postgres::Client::connect(&self.base, postgres::NoTls).and_then(|mut c| {
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name))
        });
        if let Err(err) = dropped {
            eprintln!("could not drop the test schema {}: {err}", self.name);
        }
    }
}

fn sqlite_counts(lib: &TestLibrary) -> BTreeMap<String, i64> {
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    TABLES
        .iter()
        .map(|table| {
            let count = conn
                .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
                .unwrap();
            (table.to_string(), count)
        })
        .collect()
}

fn from(lib: &TestLibrary) -> String {
    format!("sqlite:{}", lib.home().join("library.db").display())
}

/// A table's line of `migrate`'s output: `(copied, in all)`.
fn table_line(out: &str, table: &str) -> (i64, i64) {
    let line = out
        .lines()
        .find(|line| line.split_whitespace().next() == Some(table))
        .unwrap_or_else(|| panic!("no line for {table} in:\n{out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[2..], ["copied", words[3], "in", "all"], "{line}");
    let number = |word: &str| word.replace(',', "").parse::<i64>().unwrap();
    (number(words[1]), number(words[3]))
}

fn headed(name: &str, goal: &str, n: u32) -> String {
    format!(
        "/** @skill {name}\n * Goal: {goal}\n * Tags: item:iron-ore\n */\n{}",
        script(n)
    )
}

fn runs(agent: &str, name: &str, ok: bool, times: usize) -> Vec<serde_json::Value> {
    (0..times)
        .map(|_| shell(agent, &format!("bun bots/{agent}/{name}.ts"), ok))
        .collect()
}

/// A library with two families and something in every table: scripts with edits and runs,
/// a shared skill, lessons, inline snippets, a deleted agent, the topic-tag vocabulary from
/// rs-sdk's real page listing, and tokens.
fn library_with_everything() -> TestLibrary {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    lib.agent("rnchk", "ada");
    lib.ok(&["owner", "add", "eve"]);
    lib.agent("mallory", "eve");
    lib.ok(&["owner", "eager", "ada", "on"]);

    let checkout = generate_wiki(lib.dir.path());
    lib.ok(&["tags", "build", "--wiki", checkout.to_str().unwrap()]);

    lib.write_script("buzz", "chop", &script(1));
    let mut events = runs("buzz", "chop", true, 6);
    events.push(shell("buzz", "bun bots/buzz/chop.ts", false));
    assert!(lib.record(&events).status.success());
    lib.write_script("buzz", "chop", &script(2));
    assert!(lib.record(&runs("buzz", "chop", true, 3)).status.success());
    // A look, a run measured against it, one not measured, and one cut before its outcome.
    let state = |xp: u32| format!("# World State\n## Skills\nWoodcutting: 1 ({xp} xp)\n");
    let call = |command: &str, output: String| {
        json!({"agent": "buzz", "kind": "shell", "command": command, "cwd": "/work", "ok": true,
               "duration_ms": 30000, "output": output})
    };
    let run = "bun bots/buzz/chop.ts";
    let events = [
        call("bun sdk/cli.ts buzz", state(0)),
        call(
            run,
            format!("── Result ──\n{{}}\n\n── World State ──\n{}", state(625)),
        ),
        call(
            &format!("{run} | tail -2"),
            "## Recent Messages\n- hi\n".into(),
        ),
        call(
            run,
            format!("── Result ──\n{{}}\n\n── World State ──\n{}", state(900)),
        ),
    ];
    assert!(lib.record(&events).status.success());

    lib.write_script("pickles", "mine-iron", &headed("mine-iron", "mine iron", 3));
    assert!(
        lib.record(&runs("pickles", "mine-iron", true, 6))
            .status
            .success()
    );
    std::fs::write(
        lib.workspace("pickles")
            .join("bots/pickles/lab_log.md"),
        "# lab log\nprivate: the bank is slow\nShare: [quest:restless-ghost] Father Aereck is in the church\n- Share: [skill:pickles/mine-iron] bank first when the inventory is full\n",
    )
    .unwrap();
    lib.ok(&["turn-end", "pickles"]);
    lib.ok(&["turn-end", "buzz"]);

    // A headed script of an agent that is then deleted: the shared skill stays, unlinked.
    lib.write_script("rnchk", "fish", &headed("fish", "fish shrimp", 4));
    assert!(lib.record(&runs("rnchk", "fish", true, 6)).status.success());
    lib.ok(&["turn-end", "rnchk"]);
    lib.ok(&["agent", "remove", "rnchk"]);

    let inline: Vec<_> = (0..7)
        .map(|n| {
            json!({"agent": "mallory", "kind": "execute_code", "ok": n % 3 != 0,
                   "code": format!("await bot.walkTo(3200, {});", n % 2), "duration_ms": 4000})
        })
        .collect();
    assert!(lib.record(&inline).status.success());
    lib.write_script("mallory", "chop", &script(1));
    assert!(
        lib.record(&runs("mallory", "chop", true, 2))
            .status
            .success()
    );
    lib.ok(&["wrapup", "mallory"]);

    lib.ok(&["token", "issue", "buzz"]);
    lib.ok(&["token", "operator"]);
    lib
}

#[test]
fn a_sqlite_library_is_copied_into_postgres_verified_and_a_second_run_goes_on() {
    let lib = library_with_everything();
    let source = sqlite_counts(&lib);
    // The columns later migrations added hold something to copy.
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let kept: (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM uses WHERE unmeasured IS NOT NULL),
                    (SELECT count(*) FROM unrecorded_calls WHERE output IS NOT NULL)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(kept, (1, 1));
    drop(conn);
    for table in [
        "owners", "agents", "skills", "versions", "uses", "snippets", "lessons",
    ] {
        assert!(source[table] > 0, "the library has no {table}: {source:?}");
    }
    let schema = Schema::new();
    let url = schema.url();

    let output = lib.run(&["migrate", "--from", &from(&lib), "--to", &url]);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(
        out.starts_with(&format!(
            "Copying the library at {} into {url}\n",
            lib.home().join("library.db").display()
        )),
        "{out}"
    );
    let total: i64 = source.values().sum();
    for table in TABLES {
        assert_eq!(
            table_line(&out, table),
            (source[table], source[table]),
            "{table}"
        );
    }
    assert!(
        out.contains(&format!("\nCopied {} rows.\n", thousands(total))),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Verified {} tables: row counts and SHA-256 digests match the source.\n",
            TABLES.len()
        )),
        "{out}"
    );
    assert!(out.contains(&format!("pass --database '{url}'")), "{out}");
    assert_eq!(schema.counts(), source);

    // Run again (as after an interruption): nothing new to copy, and still verified.
    let output = lib.run(&["migrate", "--from", &from(&lib), "--to", &url]);
    assert!(output.status.success(), "{}", stderr(&output));
    let out = stdout(&output);
    for table in TABLES {
        assert_eq!(table_line(&out, table), (0, source[table]), "{table}");
    }
    assert!(
        out.contains(&format!(
            "Copied no new rows: all {} were there from an earlier run.\n",
            thousands(total)
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!("Verified {} tables", TABLES.len())),
        "{out}"
    );
    assert_eq!(schema.counts(), source);

    // The copy reads back as the SQLite library does.
    for args in [
        &["owner", "list"][..],
        &["agent", "list", "--owner", "ada"],
        // Scores at one clock: they age with it.
        &["skills", "--owner", "ada", "--json", "--as-of", FIXED_CLOCK],
        &["skills", "--owner", "eve", "--json", "--as-of", FIXED_CLOCK],
        &[
            "skill",
            "show",
            "buzz/chop",
            "--json",
            "--as-of",
            FIXED_CLOCK,
        ],
        &[
            "skill",
            "show",
            "pickles/mine-iron",
            "--json",
            "--as-of",
            FIXED_CLOCK,
        ],
    ] {
        let on_sqlite = lib.ok(args);
        let mut with_database = vec!["--database", url.as_str()];
        with_database.extend_from_slice(args);
        assert_eq!(lib.ok(&with_database), on_sqlite, "mindrune {args:?}");
    }

    // New rows get ids past the copied ones: the sequences were moved.
    lib.ok(&["--database", &url, "owner", "add", "zed"]);
    let mut client = schema.client();
    let zed: i64 = client
        .query_one(
            &format!(
                "SELECT owner_id FROM {}.owners WHERE name = 'zed'",
                schema.name
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(zed, source["owners"] + 1);
}

#[test]
fn a_destination_that_differs_is_named_and_left_as_it_was() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    assert!(lib.record(&runs("buzz", "chop", true, 4)).status.success());
    let schema = Schema::new();
    let url = schema.url();
    lib.ok(&["migrate", "--from", &from(&lib), "--to", &url]);

    // A use changed behind the copy's back, and a row the source never had.
    schema.sql(
        "UPDATE uses SET duration_ms = 1 WHERE use_id = 2;
         INSERT INTO operator_tokens (token_id, token_hash, created_at) VALUES (9, 'elsewhere', 0);",
    );
    let output = lib.run(&["migrate", "--from", &from(&lib), "--to", &url]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let err = stderr(&output);
    assert!(
        err.starts_with(&format!(
            "error: copying into {url}: the copy does not match its source in 2 tables (uses, operator_tokens)\n"
        )),
        "{err}"
    );
    assert!(
        err.contains("  uses: the source has 4 rows (sha256:")
            && err.contains("), the destination 4 (sha256:"),
        "{err}"
    );
    assert!(
        err.contains("rows with the same key differ (the destination's were kept, not overwritten): (owner_id=1, use_id=2) (in duration_ms)"),
        "{err}"
    );
    assert!(
        err.contains("the destination holds rows the source does not: token_id=9"),
        "{err}"
    );
    let kept: i64 = schema
        .client()
        .query_one(
            &format!(
                "SELECT duration_ms FROM {}.uses WHERE use_id = 2",
                schema.name
            ),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(kept, 1, "the destination's row is not overwritten");

    // Another library in the destination (its own `ada`, key and agent) is refused before
    // anything is written.
    let another = TestLibrary::new();
    another.agent("fizz", "ada");
    let elsewhere = Schema::new();
    another.ok(&[
        "migrate",
        "--from",
        &from(&another),
        "--to",
        &elsewhere.url(),
    ]);
    let before = elsewhere.counts();
    let output = lib.run(&["migrate", "--from", &from(&lib), "--to", &elsewhere.url()]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.starts_with(&format!(
            "error: copying into {}: the destination holds another library: nothing was copied\n",
            elsewhere.url()
        )),
        "{err}"
    );
    assert!(
        err.contains("  owners:\n    rows with the same key differ (the destination's were kept, not overwritten): owner_id=1 (in key_digest")
            && err.contains("  agents:\n    rows with the same key differ (the destination's were kept, not overwritten): agent_id=1 (in name, workspace"),
        "{err}"
    );
    assert!(
        !err.contains("mr_"),
        "no values (an owner's key is a secret): {err}"
    );
    assert_eq!(elsewhere.counts(), before);
}

#[test]
fn only_sqlite_into_postgres_is_supported_and_the_source_must_exist() {
    let lib = TestLibrary::new();
    let output = lib.run(&[
        "migrate",
        "--from",
        "sqlite:nowhere/library.db",
        "--to",
        DEFAULT_DATABASE_URL,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).starts_with("error: no MindRune library at nowhere/library.db; nothing was copied\n\nhint: --from names the library's database file"),
        "{}",
        stderr(&output)
    );
    let output = lib.run(&[
        "migrate",
        "--from",
        &format!("sqlite:{}", lib.home().display()),
        "--to",
        DEFAULT_DATABASE_URL,
    ]);
    assert!(
        stderr(&output).contains(&format!(
            "hint: --from names the database file, not its folder: --from sqlite:{}",
            lib.home().join("library.db").display()
        )),
        "{}",
        stderr(&output)
    );
    // A file that is not a library is refused as it is, not given MindRune's tables.
    let stranger = lib.dir.path().join("notes.db");
    std::fs::write(&stranger, b"").unwrap();
    let output = lib.run(&[
        "migrate",
        "--from",
        &format!("sqlite:{}", stranger.display()),
        "--to",
        DEFAULT_DATABASE_URL,
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("is not a MindRune library (it has no owners table)"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::metadata(&stranger).unwrap().len(), 0);
    let output = lib.run(&["migrate", "--from", &from(&lib), "--to", "sqlite:copy.db"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output)
            .contains("copies a SQLite library into PostgreSQL, and --to copy.db is a SQLite file"),
        "{}",
        stderr(&output)
    );
    let output = lib.run(&[
        "migrate",
        "--from",
        "postgres://ada:hunter2@db/lib",
        "--to",
        DEFAULT_DATABASE_URL,
    ]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert!(
        err.contains("copying out of PostgreSQL (postgres://ada:***@db/lib) is not supported"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    assert!(!lib.dir.path().join("copy.db").exists());
}

/// `1204` → `1,204`.
fn thousands(n: i64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}
