//! The mirror survives being killed: `mindrune mirror` is SIGKILLed at random moments of a
//! refresh, again and again, and every file of `family-skills/` is always either its old or its
//! new version, never a partial one or a third content, and no file once written goes missing.
//!
//! The family: `buzz` shares 200 headed skills of about 24 KB each. Every skill has two proven
//! versions: v1 with 5 clean runs (score 623, clears the standard bar) and v2 with 3 clean runs
//! (score 558, clears only the eager bar). So the owner's eager switch flips every mirrored skill
//! file of the sibling `pickles` between v1 (state A, eager off) and v2 (state B, eager on), and
//! its INDEX.md with them; LESSONS.md is the same in both.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Rng, TestLibrary, mode_of, stderr, visible_files};

const SKILLS: usize = 200;
const ITERATIONS: usize = 120;
/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;

/// A headed script of about 24 KB; `variant` changes every line of its code.
fn source(skill: usize, variant: usize) -> String {
    let mut body = String::new();
    for step in 0..400 {
        body.push_str(&format!(
            "  await bot.walkTo({}, {}); // step {step} of route {skill}, variant {variant}\n",
            3200 + step,
            variant * 1000 + skill
        ));
    }
    format!(
        "/** @skill route-{skill:03}\n * Goal: walk route {skill}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n{body}}});\n"
    )
}

/// Writes every script at `variant` and records `runs` clean runs of each, in one events file.
fn write_and_run(lib: &TestLibrary, variant: usize, runs: usize) {
    let bots = lib.workspace("buzz").join("bots").join("buzz");
    for skill in 0..SKILLS {
        std::fs::write(
            bots.join(format!("route-{skill:03}.ts")),
            source(skill, variant),
        )
        .unwrap();
    }
    let events: Vec<_> = (0..runs)
        .flat_map(|_| 0..SKILLS)
        .map(|skill| {
            json!({"agent": "buzz", "kind": "shell", "command": format!("bun bots/buzz/route-{skill:03}.ts"),
                   "cwd": "/work", "ok": true, "duration_ms": 60000})
        })
        .collect();
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", stderr(&output));
}

fn set_eager(lib: &TestLibrary, on: bool) {
    lib.ok(&["owner", "eager", "ada", if on { "on" } else { "off" }]);
}

/// A clean refresh of `pickles`'s mirror into a new directory: its files, and how long it took.
fn clean_refresh(lib: &TestLibrary, dir: &Path) -> (BTreeMap<String, Vec<u8>>, Duration) {
    let started = Instant::now();
    lib.ok(&["mirror", "pickles", "--out", dir.to_str().unwrap()]);
    (visible_files(dir), started.elapsed())
}

fn seed() -> u64 {
    if let Ok(seed) = std::env::var("MINDRUNE_CRASH_SEED") {
        return seed.parse().expect("MINDRUNE_CRASH_SEED is a number");
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    (nanos ^ u64::from(std::process::id())) | 1
}

/// Every entry of the mirror (hidden ones too), relative path → is a directory.
fn entries(dir: &Path, prefix: &str, found: &mut BTreeMap<String, bool>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = format!("{prefix}{}", entry.file_name().to_str().unwrap());
        let is_dir = entry.file_type().unwrap().is_dir();
        found.insert(name.clone(), is_dir);
        if is_dir {
            entries(&entry.path(), &format!("{name}/"), found);
        }
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "a fault-injection story: kill points, restarts and the invariants checked after each"
)]
#[test]
fn a_mirror_refresh_killed_at_any_moment_leaves_every_file_old_or_new() {
    let test_started = Instant::now();
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    // v1: 5 clean runs each, shared under the standard bar.
    write_and_run(&lib, 1, 5);
    // v2: 3 clean runs each, shared under the eager bar (and still shared once it is off).
    set_eager(&lib, true);
    write_and_run(&lib, 2, 3);

    let (want_b, full_b) = clean_refresh(&lib, &lib.dir.path().join("state-b"));
    set_eager(&lib, false);
    let (want_a, full_a) = clean_refresh(&lib, &lib.dir.path().join("state-a"));
    let setup = test_started.elapsed();

    // The two states want the same files, and every skill file (and INDEX.md) differs.
    assert_eq!(want_a.len(), SKILLS + 2);
    assert_eq!(
        want_a.keys().collect::<Vec<_>>(),
        want_b.keys().collect::<Vec<_>>()
    );
    for (path, a) in &want_a {
        let b = &want_b[path];
        if path == "LESSONS.md" {
            assert_eq!(a, b);
            continue;
        }
        assert_ne!(a, b, "{path} is the same in both states");
        if let Some(name) = path.strip_prefix("buzz/route-") {
            let skill: usize = name.trim_end_matches(".ts").parse().unwrap();
            let code = |variant| {
                let text = source(skill, variant);
                text[text.find("import").unwrap()..].to_string()
            };
            assert!(a.ends_with(code(1).as_bytes()), "{path} in A is v1");
            assert!(b.ends_with(code(2).as_bytes()), "{path} in B is v2");
            assert!(a.len() > 20_000, "{path} is {} bytes", a.len());
        }
    }
    let wanted: BTreeSet<String> = want_a.keys().cloned().collect();

    // Half the kills land in the first 30 ms (start-up, the library's answer, the interim
    // manifest), half anywhere in a full refresh (mostly among the writes).
    let full = full_a.max(full_b);
    let full_ms = full.as_millis() as u64 + 1;
    let seed = seed();
    eprintln!(
        "mirror crash test: seed {seed} (set MINDRUNE_CRASH_SEED to repeat), a full refresh takes {full:?}, setup took {setup:?}"
    );
    let mut rng = Rng(seed);

    let dir = lib.dir.path().join("family-skills");
    let mut eager = false;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let (mut killed, mut finished, mut mixed) = (0, 0, 0);
    for iteration in 0..ITERATIONS {
        eager = !eager;
        set_eager(&lib, eager);
        let delay = if rng.below(2) == 0 {
            rng.below(31)
        } else {
            rng.below(full_ms)
        };
        let mut child = lib
            .std_cmd()
            .args(["mirror", "pickles", "--out", dir.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Every tenth refresh runs to its end, so on a slow, busy machine (where a refresh
        // outlasts every random delay) each wanted file is still written at some point and the
        // next kills land between old and new content.
        if iteration % 10 != 9 {
            std::thread::sleep(Duration::from_millis(delay));
            // An error here only means it has exited already.
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        {
            use std::os::unix::process::ExitStatusExt as _;
            assert!(
                status.success() || status.signal() == Some(SIGKILL),
                "iteration {iteration}: the refresh failed on its own: {status:?}"
            );
        }
        if status.success() {
            finished += 1;
        } else {
            killed += 1;
        }

        let found = visible_files(&dir);
        let (mut old_or_a, mut b_count) = (0, 0);
        for (path, bytes) in &found {
            let (Some(a), Some(b)) = (want_a.get(path), want_b.get(path)) else {
                panic!("iteration {iteration} (delay {delay} ms): a file no state wants: {path}");
            };
            if bytes == a {
                old_or_a += 1;
            } else if bytes == b {
                b_count += 1;
            } else {
                panic!(
                    "iteration {iteration} (delay {delay} ms, seed {seed}): {path} is neither state's \
                     ({} bytes; A has {}, B has {})",
                    bytes.len(),
                    a.len(),
                    b.len()
                );
            }
        }
        let present: BTreeSet<String> = found.keys().cloned().collect();
        let lost: Vec<&String> = seen.difference(&present).collect();
        assert!(
            lost.is_empty(),
            "iteration {iteration} (delay {delay} ms, seed {seed}): files written before are gone: {lost:?}"
        );
        seen.extend(present);
        if status.success() {
            let want = if eager { &want_b } else { &want_a };
            assert_eq!(&found, want, "iteration {iteration}: a finished refresh");
        }
        // Both states agree on LESSONS.md, so it counts for neither side of a mix.
        let a_skills = old_or_a - usize::from(found.contains_key("LESSONS.md"));
        if a_skills > 0 && b_count > 0 {
            mixed += 1;
        }
    }
    eprintln!(
        "mirror crash test: {ITERATIONS} refreshes: {killed} killed (after {mixed} of them old and new files stood side by side), {finished} finished"
    );
    assert!(
        mixed > 0,
        "no kill landed among the writes; the test did not test what it should (seed {seed})"
    );
    assert_eq!(seen, wanted, "every wanted file was written at some point");

    // One refresh to the end: exactly the final state, no temp files left, sealed.
    let final_state = if eager { &want_b } else { &want_a };
    lib.ok(&["mirror", "pickles", "--out", dir.to_str().unwrap()]);
    assert_eq!(&visible_files(&dir), final_state);
    let mut all = BTreeMap::new();
    entries(&dir, "", &mut all);
    let hidden: Vec<&String> = all
        .keys()
        .filter(|path| path.split('/').any(|part| part.starts_with('.')))
        .collect();
    assert_eq!(hidden, [".manifest"], "temp files are cleaned up");
    assert_eq!(mode_of(&dir), 0o555);
    for (path, is_dir) in &all {
        let want = if *is_dir { 0o555 } else { 0o644 };
        assert_eq!(mode_of(&dir.join(path)), want, "{path}");
    }
    // The manifest vouches for every file: a further refresh writes nothing.
    let again: serde_json::Value = serde_json::from_str(&lib.ok(&[
        "mirror",
        "pickles",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    assert_eq!(again["written"], json!([]), "{again}");
    assert_eq!(again["unchanged"], SKILLS + 2, "{again}");

    // The library came through every kill intact.
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let skills = lib.skills_json();
    assert_eq!(skills.as_array().map(Vec::len), Some(SKILLS));
    eprintln!("mirror crash test: {:?} in all", test_started.elapsed());
}
