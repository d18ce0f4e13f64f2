//! Real rs-sdk runs (`../shared/data/rs-sdk/runs/`, see its README) recorded through
//! `mindrune record` in the README's order, as one bot's life: what the library keeps of each
//! must be what truly happened in it, whatever the shell's exit status said.

use std::path::PathBuf;

use serde_json::json;

use crate::util::{TestLibrary, stderr, stdout};

fn runs_dir() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED")
        .map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
            PathBuf::from,
        )
        .join("data/rs-sdk/runs")
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    })
}

/// Each kept run, in the README's order, with the script that printed it.
const RUNS: &[(&str, &str)] = &[
    ("fork-chop-trees", "chop-trees"),
    ("fork-broken", "broken"),
    ("later-chop-trees", "later-chop-trees"),
    ("later-broken", "broken"),
    ("later-fight-man", "fight-man"),
    ("e2e-chop-1", "later-chop-trees"),
    ("e2e-chop-6", "later-chop-trees"),
    ("e2e-chop-7", "later-chop-trees"),
];

/// One recorded use, as the library keeps it.
#[derive(Debug)]
struct Kept {
    ok: bool,
    xp: Option<String>,
    items: Option<String>,
    deaths: i64,
    stuck: bool,
    items_lost: i64,
    failure: Option<String>,
}

fn replay() -> (TestLibrary, Vec<Kept>) {
    let lib = TestLibrary::new();
    lib.agent("woody", "ada");
    let dir = runs_dir();
    for script in ["chop-trees", "broken", "later-chop-trees", "fight-man"] {
        lib.write_script(
            "woody",
            script,
            &read(dir.join(format!("bots/{script}.ts"))),
        );
    }
    let events: Vec<_> = RUNS
        .iter()
        .enumerate()
        .map(|(i, (run, script))| {
            // The exit status where it was kept; the e2e runs went through `| tail`, which says 0.
            let exit = std::fs::read_to_string(dir.join(format!("{run}.exit")))
                .map(|text| text.trim() == "exit=0")
                .unwrap_or(true);
            json!({
                "id": format!("run-{i}"),
                "agent": "woody",
                "kind": "shell",
                "command": format!("cd /work && bun bots/woody/{script}.ts 2>&1 | tail -30"),
                "cwd": "/work",
                "ok": exit,
                "duration_ms": 60000,
                "at": format!("2026-11-28T10:{:02}:00Z", i),
                "output": read(dir.join(format!("{run}.txt"))),
            })
        })
        .collect();
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", stderr(&output));
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT ok, xp, items, deaths, stuck, items_lost, failure FROM uses ORDER BY at, use_id",
        )
        .unwrap();
    let kept = statement
        .query_map([], |r| {
            Ok(Kept {
                ok: r.get(0)?,
                xp: r.get(1)?,
                items: r.get(2)?,
                deaths: r.get(3)?,
                stuck: r.get(4)?,
                items_lost: r.get(5)?,
                failure: r.get(6)?,
            })
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    drop(statement);
    assert_eq!(kept.len(), RUNS.len(), "{}", stdout(&output));
    (lib, kept)
}

#[test]
fn real_runs_are_recorded_as_they_truly_went() {
    let (lib, kept) = replay();
    let by_run = |name: &str| &kept[RUNS.iter().position(|(run, _)| *run == name).unwrap()];

    // Success and failure from the output: fork-broken exited 0, e2e-chop-1 went through `| tail`.
    let failed: Vec<&str> = RUNS
        .iter()
        .zip(&kept)
        .filter(|(_, k)| !k.ok)
        .map(|((run, _), _)| *run)
        .collect();
    assert_eq!(failed, ["fork-broken", "later-broken", "e2e-chop-1"]);
    assert_eq!(
        by_run("e2e-chop-1").failure.as_deref(),
        Some(
            "Error: Script timeout after 60000ms — game: You do not have an axe which you have the level to use."
        )
    );
    assert!(
        by_run("fork-broken")
            .failure
            .as_deref()
            .is_some_and(|f| f.starts_with("TypeError: bot.chopOak is not a function"))
    );
    assert!(kept.iter().filter(|k| k.ok).all(|k| k.failure.is_none()));

    // XP: the later runner's line; the fork runner's totals against the run before.
    assert_eq!(
        by_run("fork-chop-trees").xp,
        None,
        "no earlier totals to compare"
    );
    assert_eq!(by_run("fork-broken").xp, None);
    assert_eq!(
        by_run("later-chop-trees").xp.as_deref(),
        Some(r#"{"Woodcutting":3125.0}"#)
    );
    assert_eq!(
        by_run("e2e-chop-6").xp.as_deref(),
        Some(r#"{"Woodcutting":1875.0}"#)
    );
    assert_eq!(
        by_run("e2e-chop-7").xp.as_deref(),
        Some(r#"{"Woodcutting":3750.0}"#)
    );
    assert_eq!(by_run("later-fight-man").xp, None);

    // Items against the previous run's inventory.
    assert_eq!(
        by_run("e2e-chop-6").items.as_deref(),
        Some(r#"{"Bronze axe":1.0,"Logs":3.0}"#)
    );
    assert_eq!(
        by_run("e2e-chop-7").items.as_deref(),
        Some(r#"{"Logs":3.0}"#)
    );
    assert_eq!(by_run("fork-broken").items, None);

    // The one death, with its 20 lost items; e2e-chop-1's death message is fight-man's.
    let deaths: Vec<(&str, i64)> = RUNS
        .iter()
        .zip(&kept)
        .filter(|(_, k)| k.deaths > 0)
        .map(|((run, _), k)| (*run, k.items_lost))
        .collect();
    assert_eq!(deaths, [("later-fight-man", 20)]);

    // The level-up dialog left open in fork-broken blocks the next script.
    assert!(by_run("fork-broken").stuck);
    assert!(!by_run("fork-chop-trees").stuck);

    // `skill show` names the causes.
    let shown = lib.ok(&["skill", "show", "woody/later-chop-trees"]);
    assert!(
        shown.contains("Error: Script timeout after 60000ms — game: You do not have an axe"),
        "{shown}"
    );
    let json = lib.skill_json("woody/broken");
    assert_eq!(json["failures"].as_array().unwrap().len(), 2);
    assert!(
        json["failures"][0]["cause"]
            .as_str()
            .unwrap()
            .starts_with("TypeError: bot.chopOak is not a function")
    );
}
