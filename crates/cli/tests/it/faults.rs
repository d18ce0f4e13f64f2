//! Fault injection: `mindrune record` and `mindrune turn-end` are SIGKILLed at random moments,
//! hundreds of times, and the library and every file MindRune writes come through: the store
//! passes SQLite's integrity check after every kill, no acknowledged use is lost or counted
//! twice, and every mirror file is its old or its new content. A full disk (a small tmpfs, or
//! the file-size limit) and a read-only folder give a clear error and lose nothing.
//!
//! The kill delays come from a small seeded generator; the seed is printed, and
//! `MINDRUNE_FAULT_SEED` replays a run.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::BufRead as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{Rng, TestLibrary, script, visible_files};

/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;

/// SQLite's integrity check of a library database, read-only.
fn integrity(db: &Path) -> String {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

fn count(db: &Path, sql: &str) -> i64 {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

/// Spawns `cmd` with its stdout read on a thread, line by line: only complete lines count.
type Lines = (Vec<String>, Option<Instant>);

fn spawn_reading(mut cmd: Command) -> (Child, std::thread::JoinHandle<Lines>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut first = None;
        loop {
            let mut line = Vec::new();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                // A line cut off by the kill was never acknowledged.
                Ok(_) if line.last() != Some(&b'\n') => break,
                Ok(_) => {
                    first.get_or_insert_with(Instant::now);
                    lines.push(String::from_utf8(line).unwrap());
                }
            }
        }
        (lines, first)
    });
    (child, reader)
}

/// Kills `child` after `delay` (it may have ended already); true when it was killed.
fn kill_after(child: &mut Child, delay: Duration, what: &str) -> bool {
    std::thread::sleep(delay);
    let _ = child.kill();
    let status = child.wait().unwrap();
    assert!(
        status.success() || status.signal() == Some(SIGKILL),
        "{what} failed on its own: {status:?}"
    );
    !status.success()
}

// ---------------------------------------------------------------------------------------------
// 1. Recording under kill -9.

const RECORD_SCRIPTS: usize = 12;
const RECORD_EVENTS: usize = 4000;
const RECORD_KILLS: usize = 300;
/// The most events one `record` run is given.
const RECORD_SLICE: usize = 200;

/// One event as the host sends it, and what it should add.
struct HostEvent {
    line: String,
    id: Option<String>,
    /// Each run's target: a script's workspace-relative path, or `None` for inline code.
    targets: Vec<Option<String>>,
}

impl HostEvent {
    /// The event id each run is stored with.
    fn run_ids(&self) -> Vec<String> {
        let Some(id) = &self.id else {
            return Vec::new();
        };
        if self.targets.len() > 1 {
            self.targets
                .iter()
                .map(|target| format!("{id}#{}", target.as_deref().unwrap()))
                .collect()
        } else {
            vec![id.clone()]
        }
    }
}

fn script_path(n: u64) -> String {
    format!("bots/buzz/s{n:02}.ts")
}

fn host_events(rng: &mut Rng) -> Vec<HostEvent> {
    (0..RECORD_EVENTS)
        .map(|i| {
            let with_id = rng.below(10) < 7;
            let ok = rng.below(5) != 0;
            let duration = 1000 + rng.below(60_000);
            let a = rng.below(RECORD_SCRIPTS as u64);
            let (mut event, targets) = match rng.below(10) {
                0..=3 => (
                    json!({"kind": "shell", "command": format!("bun {}", script_path(a)), "cwd": "/work"}),
                    vec![Some(script_path(a))],
                ),
                4 | 5 => {
                    let b = (a + 1 + rng.below(RECORD_SCRIPTS as u64 - 1)) % RECORD_SCRIPTS as u64;
                    (
                        json!({"kind": "shell", "command": format!("bun {} && bun {}", script_path(a), script_path(b)), "cwd": "/work"}),
                        vec![Some(script_path(a)), Some(script_path(b))],
                    )
                }
                6 | 7 => (
                    json!({"kind": "execute_code", "script": script_path(a)}),
                    vec![Some(script_path(a))],
                ),
                _ => (
                    json!({"kind": "execute_code", "code": format!("await bot.walkTo(3200, {});", rng.below(30))}),
                    vec![None],
                ),
            };
            // A call that runs several scripts always carries an id here: without one, a
            // retry of a half-stored event cannot be told from a new call (the event contract).
            let id = (with_id || targets.len() > 1).then(|| format!("ev-{i}"));
            event["agent"] = json!("buzz");
            event["ok"] = json!(ok);
            event["duration_ms"] = json!(duration);
            if let Some(id) = &id {
                event["id"] = json!(id);
            }
            HostEvent {
                line: event.to_string(),
                id,
                targets,
            }
        })
        .collect()
}

/// Every stored use (script runs and inline code).
fn stored_uses(db: &Path) -> i64 {
    count(
        db,
        "SELECT (SELECT COUNT(*) FROM uses) + (SELECT COUNT(*) FROM snippet_uses)",
    )
}

/// Uses whose event id is one of `ids`.
fn stored_with_ids(db: &Path, ids: &[String]) -> usize {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    ids.iter()
        .filter(|id| {
            conn.query_row(
                "SELECT (SELECT COUNT(*) FROM uses WHERE event_id = ?1) + (SELECT COUNT(*) FROM snippet_uses WHERE event_id = ?1)",
                [id],
                |row| row.get::<_, i64>(0),
            )
            .unwrap()
                > 0
        })
        .count()
}

#[expect(
    clippy::too_many_lines,
    reason = "a fault-injection story: kill points, restarts and the invariants checked after each"
)]
#[test]
fn recording_killed_at_any_moment_loses_no_acknowledged_use_and_counts_none_twice() {
    let started = Instant::now();
    let seed = crate::util::fault_seed("record kill test");
    let mut rng = Rng(seed);
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    for n in 0..RECORD_SCRIPTS {
        let code = script(n as u32);
        let text = if n % 2 == 0 {
            format!("/** @skill s{n:02}\n * Goal: walk route {n}\n */\n{code}")
        } else {
            code
        };
        lib.write_script("buzz", &format!("s{n:02}"), &text);
    }
    let db = lib.home().join("library.db");
    let events = host_events(&mut rng);
    let total_runs: usize = events.iter().map(|e| e.targets.len()).sum();

    // Calibration: how long start-up takes and how fast events go, from one run killed early.
    let mut pending: Vec<usize> = (0..events.len()).collect();
    let mut acked: Vec<bool> = vec![false; events.len()];
    // Runs stored twice because an id-less event was stored, killed before it was
    // acknowledged, and sent again (the host cannot know): per target.
    let mut surplus: BTreeMap<Option<String>, i64> = BTreeMap::new();
    // Runs (by event id) stored but not acknowledged when their process was killed.
    let mut unacked_stored: HashSet<String> = HashSet::new();
    let mut acked_runs: i64 = 0;
    let (mut kills, mut finished, mut window_ms, mut in_flight_stored) = (0, 0, 0f64, 0);
    let target_per_kill = (RECORD_EVENTS / RECORD_KILLS).max(1) as u64;
    let mut iteration = 0;
    while !pending.is_empty() && kills < RECORD_KILLS {
        iteration += 1;
        let file = lib.dir.path().join(format!("pending-{iteration}.jsonl"));
        // A run gets a slice of what is pending, so a run the kill misses (a busy machine, a
        // window still too wide) uses up one slice, not every event the test has.
        let slice = pending.len().min(RECORD_SLICE);
        let text: String = pending[..slice]
            .iter()
            .map(|&i| format!("{}\n", events[i].line))
            .collect();
        std::fs::write(&file, text).unwrap();
        let mut cmd = lib.std_cmd();
        cmd.args(["record", "--json", file.to_str().unwrap()]);
        let spawned = Instant::now();
        let (mut child, reader) = spawn_reading(cmd);
        let delay = if window_ms == 0.0 {
            Duration::from_millis(400)
        } else {
            Duration::from_millis(rng.below(window_ms as u64))
        };
        let killed = kill_after(&mut child, delay, "record");
        let (lines, first) = reader.join().unwrap();
        let elapsed = spawned.elapsed();
        if window_ms == 0.0 {
            // Start-up and a half, plus room for about twice the events each kill should leave
            // acknowledged, so the kills spread over start-up, stores and prints.
            let startup = first.map_or(elapsed, |first| first - spawned);
            let per_event = (elapsed - startup).as_micros() as u64 / (lines.len() as u64).max(1);
            window_ms = (startup.as_millis() as f64 * 1.5).max(5.0)
                + (per_event * 2 * target_per_kill) as f64 / 1000.0
                + 1.0;
            eprintln!(
                "record kill test: calibration acknowledged {} events in {elapsed:?} (start-up {startup:?}); kill window {window_ms} ms",
                lines.len()
            );
        }
        std::fs::remove_file(&file).unwrap();
        let mut acked_now = 0;
        for line in &lines {
            let value: Value = serde_json::from_str(line).unwrap();
            assert!(value.get("error").is_none(), "a rejected event: {value}");
            let n = value["line"].as_u64().unwrap() as usize;
            assert_eq!(n, acked_now + 1, "lines are acknowledged in order: {value}");
            acked_now += 1;
            let index = pending[n - 1];
            let event = &events[index];
            let recorded = &value["recorded"];
            let ids = event.run_ids();
            let mut added = Vec::new();
            if event.targets == [None] {
                added.push(recorded["snippet"]["added"].as_bool().unwrap());
            } else {
                let runs = recorded["runs"].as_array().unwrap();
                assert_eq!(runs.len(), event.targets.len(), "{value}");
                added.extend(runs.iter().map(|run| run["added"].as_bool().unwrap()));
            }
            for (k, added) in added.into_iter().enumerate() {
                // Only a run stored before a kill but never acknowledged comes back as a
                // duplicate; every other run is new.
                let was_stored = ids.get(k).is_some_and(|id| unacked_stored.contains(id));
                assert_eq!(
                    added, !was_stored,
                    "iteration {iteration} (seed {seed}): {} run {k}: {value}",
                    event.line
                );
            }
            for id in &ids {
                unacked_stored.remove(id);
            }
            acked[index] = true;
            acked_runs += event.targets.len() as i64;
        }
        pending.drain(..acked_now);
        if killed {
            kills += 1;
            // Steer the window so the events last for about the kills wanted: a wide window
            // on a fast machine would use them up in too few kills, a narrow one on a slow
            // machine would kill every run during start-up.
            let done = (RECORD_EVENTS - pending.len()) as f64;
            let wanted = (RECORD_EVENTS as f64 * 0.9) / RECORD_KILLS as f64;
            if done / kills as f64 > wanted {
                window_ms = (window_ms * 0.97).max(2.0);
            } else {
                window_ms *= 1.03;
            }
        } else {
            finished += 1;
            assert_eq!(
                acked_now, slice,
                "a finished run acknowledges every event it was given"
            );
            // The kill came too late: aim earlier.
            window_ms = (window_ms * 0.8).max(2.0);
        }

        // After every kill: the library is sound, and holds every acknowledged use, plus at
        // most the runs of the one event in flight.
        assert_eq!(
            integrity(&db),
            "ok",
            "iteration {iteration} (delay {delay:?}, seed {seed})"
        );
        let expected: i64 = acked_runs + surplus.values().sum::<i64>();
        let stored = stored_uses(&db);
        let in_flight = pending.first().map(|&i| &events[i]);
        let partial = stored - expected;
        let most = in_flight.map_or(0, |e| e.targets.len() as i64);
        assert!(
            (0..=most).contains(&partial),
            "iteration {iteration} (delay {delay:?}, seed {seed}): {stored} uses stored, {expected} acknowledged, \
             and the event in flight has {most} runs"
        );
        if partial > 0 {
            in_flight_stored += 1;
            let event = in_flight.unwrap();
            if event.id.is_some() {
                let ids = event.run_ids();
                // Runs are stored in order: the first `partial` of them.
                assert_eq!(stored_with_ids(&db, &ids), partial as usize);
                unacked_stored.extend(ids.into_iter().take(partial as usize));
            } else {
                *surplus.entry(event.targets[0].clone()).or_default() += partial;
            }
        }
    }
    eprintln!(
        "record kill test: {kills} kills, {finished} runs finished, {in_flight_stored} kills landed after a store and before its acknowledgement (final window {window_ms:.0} ms); {:?}",
        started.elapsed()
    );
    assert!(kills >= RECORD_KILLS / 2, "too few kills: {kills}");

    // The host sends the rest once more, to the end.
    if !pending.is_empty() {
        let text: String = pending
            .iter()
            .map(|&i| format!("{}\n", events[i].line))
            .collect();
        let file = lib.dir.path().join("rest.jsonl");
        std::fs::write(&file, text).unwrap();
        let out = lib.ok(&["record", "--json", file.to_str().unwrap()]);
        assert_eq!(out.lines().count(), pending.len());
        for line in out.lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            let index = pending[value["line"].as_u64().unwrap() as usize - 1];
            let event = &events[index];
            let ids = event.run_ids();
            let added: Vec<bool> = if event.targets == [None] {
                vec![value["recorded"]["snippet"]["added"].as_bool().unwrap()]
            } else {
                value["recorded"]["runs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|run| run["added"].as_bool().unwrap())
                    .collect()
            };
            for (k, added) in added.into_iter().enumerate() {
                let was_stored = ids.get(k).is_some_and(|id| unacked_stored.contains(id));
                assert_eq!(added, !was_stored, "{}", event.line);
            }
            acked[index] = true;
        }
    }
    assert!(acked.iter().all(|a| *a));

    // Every use exactly once (plus the id-less re-sends the host could not avoid).
    let surplus_total: i64 = surplus.values().sum();
    assert_eq!(stored_uses(&db), total_runs as i64 + surplus_total);
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let mut want: BTreeMap<Option<String>, i64> = BTreeMap::new();
    for event in &events {
        for target in &event.targets {
            *want.entry(target.clone()).or_default() += 1;
        }
    }
    for (target, extra) in &surplus {
        *want.entry(target.clone()).or_default() += extra;
    }
    let mut found: BTreeMap<Option<String>, i64> = BTreeMap::new();
    let mut stmt = conn
        .prepare(
            "SELECT s.path, COUNT(*) FROM uses u JOIN versions v ON v.version_id = u.version_id \
             JOIN skills s ON s.skill_id = v.skill_id GROUP BY s.path",
        )
        .unwrap();
    for row in stmt
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .unwrap()
    {
        let (path, n) = row.unwrap();
        found.insert(Some(path), n);
    }
    drop(stmt);
    let snippets: i64 = conn
        .query_row("SELECT COUNT(*) FROM snippet_uses", [], |row| row.get(0))
        .unwrap();
    found.insert(None, snippets);
    assert_eq!(found, want, "uses per script (seed {seed})");
    let mut want_ids: BTreeSet<String> = BTreeSet::new();
    for event in &events {
        want_ids.extend(event.run_ids());
    }
    let mut stmt = conn
        .prepare(
            "SELECT event_id FROM uses WHERE event_id IS NOT NULL \
             UNION ALL SELECT event_id FROM snippet_uses WHERE event_id IS NOT NULL",
        )
        .unwrap();
    let ids: Vec<String> = stmt
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let id_set: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(ids.len(), id_set.len(), "an event id stored twice");
    assert_eq!(id_set, want_ids, "every event id stored once (seed {seed})");
    // Each version's and snippet's counters agree with its stored uses: a use and its
    // rescore were one transaction every time.
    let drift: i64 = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM versions v WHERE v.uses != \
               (SELECT COUNT(*) FROM uses u WHERE u.version_id = v.version_id)) + \
             (SELECT COUNT(*) FROM snippets s WHERE s.uses != \
               (SELECT COUNT(*) FROM snippet_uses u WHERE u.snippet_id = s.snippet_id))",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(drift, 0, "counters that disagree with the stored uses");
    drop(stmt);
    drop(conn);

    // The host sends every event with an id once more: all duplicates, nothing added.
    let again: String = events
        .iter()
        .filter(|e| e.id.is_some())
        .map(|e| format!("{}\n", e.line))
        .collect();
    let file = lib.dir.path().join("again.jsonl");
    std::fs::write(&file, again).unwrap();
    let before = stored_uses(&db);
    let out = lib.ok(&["record", "--json", file.to_str().unwrap()]);
    for line in out.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        let recorded = &value["recorded"];
        if let Some(runs) = recorded["runs"].as_array().filter(|r| !r.is_empty()) {
            assert!(
                runs.iter().all(|run| run["added"] == json!(false)),
                "{value}"
            );
        } else {
            assert_eq!(recorded["snippet"]["added"], json!(false), "{value}");
        }
    }
    assert_eq!(stored_uses(&db), before);
    assert_eq!(integrity(&db), "ok");
    eprintln!("record kill test: {:?} in all", started.elapsed());
}

// ---------------------------------------------------------------------------------------------
// 2. The turn boundary under kill -9.

const SIBLING_SKILLS: usize = 20;
const OWN_SCRIPTS: usize = 100;
const TURN_KILLS: usize = 100;

fn sibling_source(skill: usize, variant: usize) -> String {
    sized_source("trail", skill, variant, 40)
}

/// A headed script `<name>-NN` of `lines` lines of code.
fn sized_source(name: &str, skill: usize, variant: usize, lines: usize) -> String {
    let mut body = String::new();
    for step in 0..lines {
        body.push_str(&format!(
            "  await bot.walkTo({}, {}); // step {step}, variant {variant}\n",
            3200 + step,
            variant * 100 + skill
        ));
    }
    format!(
        "/** @skill {name}-{skill:02}\n * Goal: walk {name} {skill}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n{body}}});\n"
    )
}

fn own_source(n: usize, headed: bool) -> String {
    let code = format!(
        "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n  await bot.chopTree({n});\n}});\n"
    );
    if !headed {
        return code;
    }
    // Most become skills; every seventh stays private.
    let tag = if n % 7 == 3 { "@private" } else { "@skill" };
    format!("/** {tag} chop-{n:03}\n * Goal: chop tree {n}\n */\n{code}")
}

fn clean_runs(lib: &TestLibrary, agent: &str, paths: &[String], runs: usize) {
    let events: Vec<Value> = (0..runs)
        .flat_map(|_| paths.iter())
        .map(|path| {
            json!({"agent": agent, "kind": "shell", "command": format!("bun {path}"), "cwd": "/work",
                   "ok": true, "duration_ms": 60000})
        })
        .collect();
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", crate::util::stderr(&output));
}

/// Makes every path under `path` writable again (a mirror is read-only) and removes it.
fn remove_tree(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            remove_tree(&entry.path());
        }
        std::fs::remove_dir(path).unwrap();
    } else {
        std::fs::remove_file(path).unwrap();
    }
}

/// Copies a tree with its files' and folders' modes.
fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let meta = std::fs::symlink_metadata(from).unwrap();
    if meta.is_dir() {
        std::fs::create_dir(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap().flatten() {
            copy_tree(&entry.path(), &to.join(entry.file_name()));
        }
        std::fs::set_permissions(to, meta.permissions()).unwrap();
    } else {
        std::fs::copy(from, to).unwrap();
        std::fs::set_permissions(
            to,
            std::fs::Permissions::from_mode(meta.permissions().mode()),
        )
        .unwrap();
    }
}

fn restore(snapshot: &Path, to: &Path) {
    remove_tree(to);
    copy_tree(snapshot, to);
}

/// The skills as `mindrune skills --json` lists them, with a mirror of `buzz` (which shows what
/// `pickles`'s turn shared and its lessons).
fn library_state(lib: &TestLibrary, out: &Path) -> (Value, BTreeMap<String, Vec<u8>>) {
    remove_tree(out);
    lib.ok(&["mirror", "buzz", "--out", out.to_str().unwrap()]);
    (lib.skills_json(), visible_files(out))
}

#[expect(
    clippy::too_many_lines,
    reason = "a fault-injection story: kill points, restarts and the invariants checked after each"
)]
#[test]
fn a_turn_boundary_killed_at_any_moment_leaves_every_file_old_or_new_and_converges() {
    let started = Instant::now();
    let seed = crate::util::fault_seed("turn kill test");
    let mut rng = Rng(seed);
    let lib = TestLibrary::new();
    let buzz = lib.agent("buzz", "ada");
    let pickles = lib.agent("pickles", "ada");
    let trail_paths: Vec<String> = (0..SIBLING_SKILLS)
        .map(|n| format!("bots/buzz/trail-{n:02}.ts"))
        .collect();
    // buzz: shared skills (v1) and lessons.
    for n in 0..SIBLING_SKILLS {
        lib.write_script("buzz", &format!("trail-{n:02}"), &sibling_source(n, 1));
    }
    clean_runs(&lib, "buzz", &trail_paths, 5);
    std::fs::write(
        buzz.join("lab_log.md"),
        "# lab\nShare: the bank in Lumbridge is on the top floor\nShare: [skill:buzz/trail-01] slow near the river\n",
    )
    .unwrap();
    lib.ok(&["turn-end", "buzz"]);
    // pickles: 100 scripts without headers; every third has runs enough to be shared.
    let own_paths: Vec<String> = (0..OWN_SCRIPTS)
        .map(|n| format!("bots/pickles/chop-{n:03}.ts"))
        .collect();
    for n in 0..OWN_SCRIPTS {
        lib.write_script("pickles", &format!("chop-{n:03}"), &own_source(n, false));
    }
    let qualified: Vec<String> = own_paths.iter().step_by(3).cloned().collect();
    clean_runs(&lib, "pickles", &qualified, 5);
    clean_runs(&lib, "pickles", &own_paths, 1);

    // The old mirror: pickles's family-skills/ written now, from a copy of the library, so the
    // library itself still has pickles's mirror due at its turn.
    let mirror = lib.workspace("pickles").join("family-skills");
    let home_copy = lib.dir.path().join("home-copy");
    copy_tree(&lib.home(), &home_copy);
    let status = lib
        .std_cmd()
        .env("MINDRUNE_HOME", &home_copy)
        .args(["mirror", "pickles"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let before = visible_files(&mirror);

    // Then buzz moves on (v2 of every trail, a new lesson), and pickles heads its scripts and
    // writes lessons: pickles's turn shares, un-shares nothing, and rewrites its mirror.
    for n in 0..SIBLING_SKILLS {
        lib.write_script("buzz", &format!("trail-{n:02}"), &sibling_source(n, 2));
    }
    clean_runs(&lib, "buzz", &trail_paths, 10);
    std::fs::write(
        buzz.join("lab_log.md"),
        "# lab\nShare: the bank in Lumbridge is on the top floor\nShare: [skill:buzz/trail-01] slow near the river\nShare: fish at Draynor at dawn\n",
    )
    .unwrap();
    lib.ok(&["turn-end", "buzz"]);
    for n in 0..OWN_SCRIPTS {
        lib.write_script("pickles", &format!("chop-{n:03}"), &own_source(n, true));
    }
    let mut log = String::from("# pickles's lab\n");
    for n in 0..12 {
        log.push_str(&format!(
            "Share: [skill:pickles/chop-{:03}] tree {n} regrows in a minute\n",
            n * 3
        ));
    }
    std::fs::write(pickles.join("lab_log.md"), log).unwrap();

    let snap_home = lib.dir.path().join("snap-home");
    let snap_mirror = lib.dir.path().join("snap-mirror");
    copy_tree(&lib.home(), &snap_home);
    copy_tree(&mirror, &snap_mirror);
    let state_dir = lib.dir.path().join("buzz-mirror");
    let skills_before = lib.skills_json();

    // A clean turn: the new state, and how long a turn takes.
    let turn_started = Instant::now();
    lib.ok(&["turn-end", "pickles"]);
    let full = turn_started.elapsed();
    let after = visible_files(&mirror);
    let want_state = library_state(&lib, &state_dir);
    assert_ne!(want_state.0, skills_before, "the turn changes the library");
    let changed: Vec<&String> = after
        .iter()
        .filter(|(path, bytes)| before.get(*path).is_some_and(|old| old != *bytes))
        .map(|(path, _)| path)
        .collect();
    assert!(
        changed.len() > SIBLING_SKILLS,
        "the turn rewrites the mirror: {changed:?}"
    );
    let shared = want_state
        .0
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["agent"] == "pickles" && s["sharing"] == "family")
        .count();
    assert!(shared > 10, "pickles shares at its turn: {shared} skills");
    let setup = started.elapsed();
    let full_ms = full.as_millis() as u64 + 1;
    eprintln!(
        "turn kill test: a clean turn-end takes {full:?} ({} mirror files change); setup took {setup:?}",
        changed.len()
    );

    let (mut killed, mut finished, mut mixed) = (0, 0, 0);
    for iteration in 0..TURN_KILLS {
        restore(&snap_home, &lib.home());
        restore(&snap_mirror, &mirror);
        // Spread over start-up and the whole turn.
        let delay = Duration::from_millis(rng.below(full_ms));
        let mut child = lib
            .std_cmd()
            .args(["turn-end", "pickles"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let was_killed = kill_after(&mut child, delay, "turn-end");
        let what = format!("iteration {iteration} (delay {delay:?}, seed {seed})");
        assert_eq!(integrity(&lib.home().join("library.db")), "ok", "{what}");
        let found = visible_files(&mirror);
        let (mut old, mut new) = (0, 0);
        for (path, bytes) in &found {
            let is_old = before.get(path) == Some(bytes);
            let is_new = after.get(path) == Some(bytes);
            assert!(
                is_old || is_new,
                "{what}: {path} is neither old nor new ({} bytes)",
                bytes.len()
            );
            if is_old && !is_new {
                old += 1;
            }
            if is_new && !is_old {
                new += 1;
            }
        }
        for path in before.keys().filter(|p| after.contains_key(*p)) {
            assert!(found.contains_key(path), "{what}: {path} went missing");
        }
        if old > 0 && new > 0 {
            mixed += 1;
        }
        if was_killed {
            killed += 1;
        } else {
            finished += 1;
            assert_eq!(found, after, "{what}: a finished turn");
        }
        // Now and then (and at the end): one clean turn converges to the never-killed state.
        if iteration % 20 == 19 || iteration == TURN_KILLS - 1 {
            lib.ok(&["turn-end", "pickles"]);
            assert_eq!(
                visible_files(&mirror),
                after,
                "{what}: the mirror converges"
            );
            let state = library_state(&lib, &state_dir);
            assert_eq!(state.0, want_state.0, "{what}: the skills converge");
            assert_eq!(state.1, want_state.1, "{what}: buzz's view converges");
        }
    }
    eprintln!(
        "turn kill test: {TURN_KILLS} turns: {killed} killed ({mixed} with old and new mirror files side by side), {finished} finished; {:?} in all",
        started.elapsed()
    );
    assert!(killed >= TURN_KILLS / 4, "too few kills landed: {killed}");
}

// ---------------------------------------------------------------------------------------------
// 3. Disk full and read-only folders.

/// A mount this test made; unmounted when dropped, whatever happens.
struct Mount(PathBuf);

impl Mount {
    fn run(args: &[&str]) -> bool {
        Command::new(args[0])
            .args(&args[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// A tmpfs of `size` at `at`, when this process may mount one.
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        std::fs::create_dir_all(at).unwrap();
        let options = format!("size={size}");
        Mount::run(&[
            "mount",
            "-t",
            "tmpfs",
            "-o",
            &options,
            "tmpfs",
            at.to_str()?,
        ])
        .then(|| Mount(at.to_path_buf()))
    }

    /// `at` bound onto itself, read-only.
    fn read_only(at: &Path) -> Option<Mount> {
        let path = at.to_str()?;
        if !Mount::run(&["mount", "--bind", path, path]) {
            return None;
        }
        let mount = Mount(at.to_path_buf());
        Mount::run(&["mount", "-o", "remount,ro,bind", path]).then_some(mount)
    }

    fn resize(&self, size: &str) {
        let options = format!("remount,size={size}");
        assert!(Mount::run(&[
            "mount",
            "-o",
            &options,
            self.0.to_str().unwrap()
        ]));
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let path = self.0.to_str().unwrap().to_string();
        if !Mount::run(&["umount", &path]) {
            Mount::run(&["umount", "-l", &path]);
        }
    }
}

/// `mindrune ARGS` under a file-size limit of `blocks` (the shell's unit), with SIGXFSZ
/// ignored so a write past it fails with EFBIG instead of killing the process.
fn limited(lib: &TestLibrary, blocks: u64, args: &[&str]) -> std::process::Output {
    let bin = assert_cmd::cargo::cargo_bin("mindrune");
    let cmd = lib.std_cmd();
    let script = format!("trap '' XFSZ; ulimit -f {blocks} && exec \"$0\" \"$@\"");
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(script).arg(bin).args(args);
    // The same environment and directory as the library's own command.
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => sh.env(key, value),
            None => sh.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        sh.current_dir(dir);
    }
    sh.stdin(Stdio::null()).output().unwrap()
}

/// Events that make the database grow: each keeps a 16 KB output tail.
fn big_events(from: usize, n: usize) -> Vec<Value> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ from as u64);
    (from..from + n)
        .map(|i| {
            let output: String = (0..16_000)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            json!({"id": format!("big-{i}"), "agent": "buzz", "kind": "shell", "command": "bun bots/buzz/big.ts",
                   "cwd": "/work", "ok": true, "duration_ms": 1000, "output": output})
        })
        .collect()
}

/// Records `events` through `run`, expects it to stop on a full disk with a clear message, and
/// checks that what it acknowledged is stored and the library is sound. Returns the stored
/// event ids.
fn record_until_full(
    lib: &TestLibrary,
    db: &Path,
    events: &[Value],
    run: impl FnOnce(&Path) -> std::process::Output,
    case: &str,
) -> usize {
    let file = lib.events_file(events);
    let output = run(&file);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{case}: the disk never filled up");
    eprintln!("{case}: mindrune said: {}", stderr.trim());
    assert!(
        stderr.contains("disk") && (stderr.contains("free space") || stderr.contains("full")),
        "{case}: the error says the disk is full and what to do: {stderr}"
    );
    assert!(stderr.contains("run the command again"), "{case}: {stderr}");
    let acked: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                value["recorded"]["runs"][0]["added"],
                json!(true),
                "{value}"
            );
            events[value["line"].as_u64().unwrap() as usize - 1]["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        !acked.is_empty(),
        "{case}: some events fit before the disk filled"
    );
    assert!(acked.len() < events.len());
    assert_eq!(integrity(db), "ok", "{case}");
    assert_eq!(
        stored_with_ids(db, &acked),
        acked.len(),
        "{case}: an acknowledged use is lost"
    );
    acked.len()
}

#[test]
fn a_full_disk_stops_recording_and_the_mirror_with_a_clear_error_and_loses_nothing() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    std::fs::write(bots.join("big.ts"), script(7)).unwrap();
    let db = lib.home().join("library.db");

    // (1) The file-size limit: SQLite's writes past it fail with EFBIG.
    let size = std::fs::metadata(&db).unwrap().len();
    // In 512-byte blocks (dash) or 1 KiB ones (bash): either way about 400 KB of room.
    let blocks = (size + 400 * 1024) / 512;
    let events = big_events(0, 200);
    let acked = record_until_full(
        &lib,
        &db,
        &events,
        |file| limited(&lib, blocks, &["record", "--json", file.to_str().unwrap()]),
        "file-size limit, recording",
    );
    // With room again, the host's retry stores the rest, each once.
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", crate::util::stderr(&output));
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uses WHERE event_id LIKE 'big-%'"),
        200
    );
    eprintln!("file-size limit: {acked} events acknowledged before the limit, the rest after");

    // (2) The mirror past the file-size limit: a clear error, every file old or new.
    // Skill files of about 120 KB, past a limit of 96 blocks (48 or 96 KB) that leaves room for
    // the library's own small writes (its 32 KB shared-memory file).
    let paths: Vec<String> = (0..3)
        .map(|n| format!("bots/buzz/hike-{n:02}.ts"))
        .collect();
    for n in 0..3 {
        lib.write_script(
            "buzz",
            &format!("hike-{n:02}"),
            &sized_source("hike", n, 1, 2000),
        );
    }
    clean_runs(&lib, "buzz", &paths, 5);
    let out = lib.dir.path().join("limited-mirror");
    let output = limited(
        &lib,
        96,
        &["mirror", "pickles", "--out", out.to_str().unwrap()],
    );
    let stderr = crate::util::stderr(&output);
    eprintln!("file-size limit, mirror: mindrune said: {}", stderr.trim());
    assert!(!output.status.success());
    assert!(
        stderr.contains(out.to_str().unwrap()) && stderr.contains("free space"),
        "the error names the folder and what to check: {stderr}"
    );
    let full_dir = lib.dir.path().join("full-mirror");
    lib.ok(&["mirror", "pickles", "--out", full_dir.to_str().unwrap()]);
    let want = visible_files(&full_dir);
    for (path, bytes) in visible_files(&out) {
        assert_eq!(Some(&bytes), want.get(&path), "{path} is partial");
    }
    lib.ok(&["mirror", "pickles", "--out", out.to_str().unwrap()]);
    assert_eq!(visible_files(&out), want);

    // (3) A real full disk: a small tmpfs, when this process may mount one.
    let mnt = lib.dir.path().join("tmpfs");
    let size = std::fs::metadata(&db).unwrap().len();
    let Some(mount) = Mount::tmpfs(&mnt, &format!("{}k", size / 1024 + 600)) else {
        eprintln!(
            "full disk: cannot mount a tmpfs here (not root?); only the file-size limit was tested"
        );
        return;
    };
    let home = mnt.join("home");
    copy_tree(&lib.home(), &home);
    let db = home.join("library.db");
    let events = big_events(1000, 300);
    let acked = record_until_full(
        &lib,
        &db,
        &events,
        |file| {
            lib.std_cmd()
                .env("MINDRUNE_HOME", &home)
                .args(["record", "--json", file.to_str().unwrap()])
                .output()
                .unwrap()
        },
        "tmpfs full, recording",
    );
    mount.resize("64m");
    let file = lib.events_file(&events);
    let status = lib
        .std_cmd()
        .env("MINDRUNE_HOME", &home)
        .args(["record", file.to_str().unwrap()])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM uses WHERE event_id LIKE 'big-%'"),
        500
    );
    eprintln!("tmpfs full: {acked} events acknowledged before the disk filled, the rest after");

    // The mirror on a full tmpfs.
    let tiny = lib.dir.path().join("tiny");
    let tiny_mount = Mount::tmpfs(&tiny, "16k").unwrap();
    let out = tiny.join("family-skills");
    let output = lib.run(&["mirror", "pickles", "--out", out.to_str().unwrap()]);
    let stderr = crate::util::stderr(&output);
    eprintln!("tmpfs full, mirror: mindrune said: {}", stderr.trim());
    assert!(!output.status.success());
    assert!(
        stderr.contains(out.to_str().unwrap()) && stderr.contains("free space"),
        "{stderr}"
    );
    for (path, bytes) in visible_files(&out) {
        assert_eq!(Some(&bytes), want.get(&path), "{path} is partial");
    }
    tiny_mount.resize("4m");
    lib.ok(&["mirror", "pickles", "--out", out.to_str().unwrap()]);
    assert_eq!(visible_files(&out), want);
    drop(tiny_mount);
    drop(mount);
}

#[test]
fn start_on_a_full_disk_keeps_the_old_family_skills_and_names_the_disk() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let pickles = lib.agent("pickles", "ada");
    let paths: Vec<String> = (0..3)
        .map(|n| format!("bots/buzz/trail-{n:02}.ts"))
        .collect();
    for n in 0..3 {
        lib.write_script("buzz", &format!("trail-{n:02}"), &sibling_source(n, 1));
    }
    clean_runs(&lib, "buzz", &paths, 5);
    let mirror = lib.workspace("pickles").join("family-skills");
    lib.ok(&["start", "pickles"]);
    let before = visible_files(&mirror);
    assert!(
        before.keys().any(|path| path.starts_with("buzz/")),
        "{:?}",
        before.keys()
    );

    let mnt = lib.dir.path().join("full");
    let Some(_mount) = Mount::tmpfs(&mnt, "4m") else {
        eprintln!("start on a full disk: cannot mount a tmpfs here (not root?); not tested");
        return;
    };
    let home = mnt.join("home");
    copy_tree(&lib.home(), &home);
    // The library opens, then the disk fills: the start's scan of a new, large script needs
    // room the disk no longer has.
    lib.ok_in(&home, &["agent", "list"]);
    fill_disk(&mnt.join("filler"));
    std::fs::write(pickles.join("long.ts"), sized_source("long", 0, 1, 6000)).unwrap();
    let start = || {
        lib.std_cmd()
            .env("MINDRUNE_HOME", &home)
            .args(["start", "pickles"])
            .output()
            .unwrap()
    };
    // (1) Not a byte free: the library cannot even open (SQLite maps its -shm file at open).
    let output = start();
    let stderr = crate::util::stderr(&output);
    eprintln!("start on a full disk: mindrune said: {}", stderr.trim());
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "the disk holding the library at {} is full, so the agent's family-skills/ was kept as it was",
            home.join("library.db").display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("emptied"), "{stderr}");
    assert_eq!(
        visible_files(&mirror),
        before,
        "family-skills/ is as it was"
    );

    // (2) Room to open, not to store the new script: the boundary itself fails.
    let filler = std::fs::OpenOptions::new()
        .write(true)
        .open(mnt.join("filler"))
        .unwrap();
    let len = filler.metadata().unwrap().len();
    filler.set_len(len - 200 * 1024).unwrap();
    drop(filler);
    let output = start();
    let stderr = crate::util::stderr(&output);
    eprintln!("start with 200 KB free: mindrune said: {}", stderr.trim());
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "the disk holding the library at {} is full, so {} was kept as it was",
            home.join("library.db").display(),
            mirror.display()
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("emptied"), "{stderr}");
    assert_eq!(
        visible_files(&mirror),
        before,
        "family-skills/ is as it was"
    );

    // With room again, the start goes through.
    std::fs::remove_file(mnt.join("filler")).unwrap();
    let output = start();
    assert!(output.status.success(), "{}", crate::util::stderr(&output));
}

/// Writes `path` until its disk is full.
fn fill_disk(path: &Path) {
    use std::io::Write as _;
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![7u8; 64 * 1024];
    while file.write_all(&block).is_ok() {}
    while file.write_all(&[7]).is_ok() {}
}

#[test]
fn a_read_only_folder_gives_a_clear_error_and_changes_nothing() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    for n in 0..5 {
        lib.write_script("buzz", &format!("trail-{n:02}"), &sibling_source(n, 1));
    }
    let paths: Vec<String> = (0..5)
        .map(|n| format!("bots/buzz/trail-{n:02}.ts"))
        .collect();
    clean_runs(&lib, "buzz", &paths, 5);
    lib.ok(&["mirror", "pickles"]);
    let mirror = lib.workspace("pickles").join("family-skills");
    let before = visible_files(&mirror);
    assert!(!before.is_empty());
    // Something new to mirror.
    for n in 0..5 {
        lib.write_script("buzz", &format!("trail-{n:02}"), &sibling_source(n, 2));
    }
    clean_runs(&lib, "buzz", &paths, 10);

    let workspace = lib.workspace("pickles");
    let Some(mount) = Mount::read_only(&workspace) else {
        eprintln!(
            "read-only folder: cannot bind-mount here (not root, or no mount namespace rights); \
             the read-only case is skipped"
        );
        return;
    };
    let output = lib.run(&["mirror", "pickles"]);
    let stderr = crate::util::stderr(&output);
    eprintln!(
        "read-only workspace, mirror: mindrune said: {}",
        stderr.trim()
    );
    assert!(!output.status.success());
    assert!(
        stderr.contains(mirror.to_str().unwrap()) && stderr.contains("permissions"),
        "the error names the folder and what to check: {stderr}"
    );
    assert_eq!(visible_files(&mirror), before, "nothing changed");

    // A read-only library: recording fails and says so; nothing is stored.
    let uses = count(&lib.home().join("library.db"), "SELECT COUNT(*) FROM uses");
    let home_mount = Mount::read_only(&lib.home()).unwrap();
    let output = lib.record(&[crate::util::shell(
        "buzz",
        "bun bots/buzz/trail-00.ts",
        true,
    )]);
    let stderr = crate::util::stderr(&output);
    eprintln!(
        "read-only library, record: mindrune said: {}",
        stderr.trim()
    );
    assert!(!output.status.success());
    assert!(stderr.contains("read"), "{stderr}");
    drop(home_mount);
    assert_eq!(
        count(&lib.home().join("library.db"), "SELECT COUNT(*) FROM uses"),
        uses
    );
    assert_eq!(integrity(&lib.home().join("library.db")), "ok");

    drop(mount);
    lib.ok(&["mirror", "pickles"]);
    assert_ne!(
        visible_files(&mirror),
        before,
        "with the folder writable again, it refreshes"
    );
}
