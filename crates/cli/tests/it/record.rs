//! `mindrune record`, `skills` and `skill show` on real workspaces.

use serde_json::json;

use crate::util::{TestLibrary, contains, on_a_terminal, script, shell, stderr, stdout};

#[test]
fn runs_are_recorded_per_script_and_an_edit_is_the_next_version() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let runs: Vec<_> = (0..5)
        .map(|_| {
            shell(
                "buzz",
                "cd /work && bun bots/buzz/chop.ts 2>&1 | tail -5",
                true,
            )
        })
        .collect();
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("Recorded 5 uses: 5 runs of 1 script"),
        "{}",
        stdout(&output)
    );

    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["version"], 1);
    assert_eq!(skill["versions"][0]["runs"], 5);
    // The spec's worked number is the score the runs left (`score` is as of now, and these
    // runs are dated in the past).
    let score = skill["score_at_last_use"].as_f64().unwrap();
    assert!(
        (score - 623.0).abs() < 5.0,
        "five clean runs score about 620, got {score}"
    );

    // Editing the code is a new version, built on v1 at 90 %.
    lib.write_script("buzz", "chop", &script(2));
    lib.record(&[shell("buzz", "bun bots/buzz/chop.ts", true)]);
    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["version"], 2);
    assert_eq!(skill["versions"].as_array().unwrap().len(), 2);
    assert_eq!(skill["versions"][0]["built_on"]["lineage"], "edit");
    assert_eq!(skill["versions"][1]["runs"], 5, "v1 keeps its runs");
}

#[test]
fn writing_the_header_is_not_a_new_version() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    lib.record(&[shell("buzz", "bun bots/buzz/chop.ts", true)]);
    lib.write_script(
        "buzz",
        "chop",
        &format!("/** @skill chop\n * Goal: chop trees\n */\n{}", script(1)),
    );
    lib.record(&[shell("buzz", "bun bots/buzz/chop.ts", true)]);
    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["versions"].as_array().unwrap().len(), 1);
    assert_eq!(skill["versions"][0]["runs"], 2);
}

#[test]
fn a_line_running_two_scripts_is_one_run_of_each_and_a_loop_is_one_run() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "x", &script(1));
    lib.write_script("buzz", "y", &script(2));
    lib.record(&[
        shell("buzz", "bun bots/buzz/x.ts; bun bots/buzz/y.ts", true),
        shell(
            "buzz",
            "for i in 1 2 3 4; do bun bots/buzz/x.ts; done",
            true,
        ),
    ]);
    assert_eq!(lib.skill_json("buzz/x")["versions"][0]["runs"], 2);
    assert_eq!(lib.skill_json("buzz/y")["versions"][0]["runs"], 1);
}

#[test]
fn background_runs_builds_and_greps_are_not_runs() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "x", &script(1));
    let output = lib.record(&[
        shell("buzz", "bun bots/buzz/x.ts &", true),
        shell("buzz", "nohup bun bots/buzz/x.ts > log 2>&1 &", true),
        shell("buzz", "bun build bots/buzz/x.ts", true),
        shell("buzz", "grep -n walkTo bots/buzz/x.ts", true),
        json!({"agent": "buzz", "kind": "execute_code", "script": "bots/buzz/x.ts", "ok": true, "background": true}),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(lib.skills_json().as_array().unwrap().is_empty());
    assert!(
        stderr(&output).contains("background"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn execute_code_with_a_script_counts_like_the_shell_run_and_inline_code_is_a_snippet() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "x", &script(1));
    let output = lib.record(&[
        shell("buzz", "bun bots/buzz/x.ts", true),
        json!({"agent": "buzz", "kind": "execute_code", "script": "bots/buzz/x.ts", "ok": true}),
        json!({"agent": "buzz", "kind": "execute_code", "code": "await bot.chopTree()", "ok": true}),
    ]);
    assert!(
        stdout(&output).contains("2 runs of 1 script, 1 inline snippet run"),
        "{}",
        stdout(&output)
    );
    assert_eq!(lib.skill_json("buzz/x")["versions"][0]["runs"], 2);
}

#[test]
fn malformed_lines_are_rejected_with_their_line_number_and_the_rest_is_recorded() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "x", &script(1));
    let dir = lib.dir.path();
    let mut text = String::new();
    text.push_str(&format!("{}\n", shell("buzz", "bun bots/buzz/x.ts", true)));
    text.push_str("{not json\n");
    text.push_str(&format!(
        "{}\n",
        json!({"agent": "buzz", "command": "bun bots/buzz/x.ts", "ok": true, "okk": 1})
    ));
    text.push_str(&format!(
        "{}\n",
        shell("nobody", "bun bots/nobody/x.ts", true)
    ));
    text.push_str(&format!("{}\n", json!({"agent": "buzz", "kind": "execute_code", "script": "../../etc/passwd.ts", "ok": true})));
    text.push_str(&format!(
        "{}\n",
        json!({"agent": "buzz", "kind": "execute_code", "code": "x".repeat(262_145), "ok": true})
    ));
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(b"{\"agent\": \"buzz\", \"command\": \"\xff\"}\n");
    bytes.extend_from_slice(format!("{}\n", shell("buzz", "bun bots/buzz/x.ts", false)).as_bytes());
    let path = dir.join("bad.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let output = lib.run(&["record", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    for expected in [
        "bad.jsonl:2: error:",
        "bad.jsonl:3: error: field `okk`",
        "bad.jsonl:4: error: field `agent`: no agent named `nobody`",
        "bad.jsonl:5: error: field `script`",
        "bad.jsonl:6: error: field `code`",
        "bad.jsonl:7: error: the line is not UTF-8 text",
    ] {
        assert!(err.contains(expected), "missing `{expected}` in:\n{err}");
    }
    assert_eq!(
        lib.skill_json("buzz/x")["versions"][0]["runs"],
        2,
        "lines 1 and 8 are recorded"
    );
}

#[test]
fn a_script_through_a_symlink_is_rejected() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    let outside = lib.dir.path().join("outside.ts");
    std::fs::write(&outside, script(9)).unwrap();
    std::os::unix::fs::symlink(&outside, bots.join("evil.ts")).unwrap();
    let output = lib.record(&[
        json!({"agent": "buzz", "kind": "execute_code", "script": "bots/buzz/evil.ts", "ok": true}),
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("symlink"), "{}", stderr(&output));
    assert!(lib.skills_json().as_array().unwrap().is_empty());
}

#[test]
fn a_vanished_file_counts_for_its_last_known_version_with_a_warning() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    lib.write_script("buzz", "x", &script(1));
    lib.record(&[shell("buzz", "bun bots/buzz/x.ts", true)]);
    std::fs::remove_file(bots.join("x.ts")).unwrap();
    let output = lib.record(&[
        shell("buzz", "bun bots/buzz/x.ts", false),
        shell("buzz", "bun bots/buzz/never.ts", true),
    ]);
    assert!(output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains("the file is gone; the run is recorded for its last known version"),
        "{err}"
    );
    assert!(
        err.contains("never.ts: the file does not exist and was never seen"),
        "{err}"
    );
    assert_eq!(lib.skill_json("buzz/x")["versions"][0]["runs"], 2);
}

#[test]
fn a_copy_starts_its_own_history_and_a_sibling_copy_counts_for_the_sibling() {
    let lib = TestLibrary::new();
    lib.agent("pickles", "ada");
    lib.agent("rnchk", "ada");
    lib.write_script("pickles", "mine", &script(7));
    lib.record(
        &(0..5)
            .map(|_| shell("pickles", "bun bots/pickles/mine.ts", true))
            .collect::<Vec<_>>(),
    );
    // pickles copies its own script: a new skill built on the original.
    lib.write_script("pickles", "mine-fast", &script(7));
    lib.record(&[shell("pickles", "bun bots/pickles/mine-fast.ts", true)]);
    let copy = lib.skill_json("pickles/mine-fast");
    assert_eq!(copy["versions"][0]["built_on"]["lineage"], "copy");
    assert_eq!(copy["versions"][0]["runs"], 1);
    assert_eq!(
        lib.skill_json("pickles/mine")["versions"][0]["runs"],
        5,
        "a copy never adds runs to the original"
    );
    // rnchk copies pickles' skill unchanged, with its From: line: the run counts for pickles/mine.
    lib.write_script(
        "rnchk",
        "mine",
        &format!("/** @skill mine\n * From: pickles/mine\n */\n{}", script(7)),
    );
    lib.record(&[shell("rnchk", "bun bots/rnchk/mine.ts", true)]);
    assert_eq!(lib.skill_json("pickles/mine")["versions"][0]["runs"], 6);
    // Once changed, the copy is rnchk's own, built on the sibling's skill.
    lib.write_script(
        "rnchk",
        "mine",
        &format!("/** @skill mine\n * From: pickles/mine\n */\n{}", script(8)),
    );
    lib.record(&[shell("rnchk", "bun bots/rnchk/mine.ts", true)]);
    let own = lib.skill_json("rnchk/mine");
    assert_eq!(own["versions"][0]["built_on"]["lineage"], "sibling");
    assert_eq!(own["versions"][0]["built_on"]["version"], "pickles/mine v1");
}

#[test]
fn another_owners_identical_script_is_its_own_and_never_shows_up() {
    let lib = TestLibrary::new();
    lib.ok(&["owner", "add", "eve"]);
    lib.agent("buzz", "ada");
    lib.agent("mallory", "eve");
    lib.write_script("buzz", "x", &script(1));
    lib.write_script(
        "mallory",
        "x",
        &format!("/** @skill x\n * From: buzz/x\n */\n{}", script(1)),
    );
    lib.record(&[
        shell("buzz", "bun bots/buzz/x.ts", true),
        shell("mallory", "bun bots/mallory/x.ts", true),
    ]);
    let ada: serde_json::Value =
        serde_json::from_str(&lib.ok(&["skills", "--owner", "ada", "--json"])).unwrap();
    let eve: serde_json::Value =
        serde_json::from_str(&lib.ok(&["skills", "--owner", "eve", "--json"])).unwrap();
    assert_eq!(ada.as_array().unwrap().len(), 1);
    assert_eq!(ada[0]["runs"], 1, "mallory's run never counts for buzz");
    assert_eq!(eve[0]["skill"], "mallory/x");
    assert_eq!(eve[0]["runs"], 1);
}

#[test]
fn secrets_never_reach_the_library() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script(
        "buzz",
        "x",
        "const login = { user: 'buzz', password: 'pw-buzz-s3cret77' };\nawait run(login);\n",
    );
    let mut event = shell("buzz", "PASSWORD=pw-buzz-s3cret77 bun bots/buzz/x.ts", true);
    event["output"] = json!("logging in with pw-buzz-s3cret77\n── State ──\nXP: none gained\n");
    let output = lib.record(&[event]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = lib.stored_bytes();
    assert!(
        !contains(&stored, "pw-buzz-s3cret77"),
        "the bot's password leaked into the library"
    );
    assert!(contains(&stored, "[redacted]"));
}

#[test]
fn skills_without_a_library_say_how_to_make_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = assert_cmd::Command::cargo_bin("mindrune")
        .unwrap()
        .env("MINDRUNE_HOME", dir.path().join("nowhere"))
        .arg("skills")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("hint: run `mindrune init`"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn two_processes_recording_ten_thousand_events_each_store_twenty_thousand_uses() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    lib.write_script("buzz", "x", &script(1));
    lib.write_script("pickles", "y", &script(2));
    let file = |agent: &str, name: &str| {
        let events: Vec<_> = (0..10_000)
            .map(|i| {
                let mut e = shell(agent, &format!("bun bots/{agent}/{name}.ts"), i % 5 != 0);
                e["id"] = json!(format!("{agent}-{i}"));
                e
            })
            .collect();
        lib.events_file(&events)
    };
    let (a, b) = (file("buzz", "x"), file("pickles", "y"));
    let spawn = |file: &std::path::Path| {
        lib.std_cmd()
            .args(["record", file.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (first, second) = (spawn(&a), spawn(&b));
    let (first, second) = (
        first.wait_with_output().unwrap(),
        second.wait_with_output().unwrap(),
    );
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(second.status.success(), "{}", stderr(&second));
    let skills = lib.skills_json();
    let total: i64 = skills
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["total_runs"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 20_000);
}

#[test]
fn the_skills_table_and_a_skills_versions_read_well() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    lib.write_script("buzz", "chop-oaks", &script(1));
    lib.write_script("pickles", "mine-iron", &script(5));
    let at = |minute: u32| format!("2026-11-28T10:{minute:02}:00Z");
    let run = |agent: &str, name: &str, ok: bool, minute: u32| {
        let mut event = shell(agent, &format!("bun bots/{agent}/{name}.ts"), ok);
        event["at"] = json!(at(minute));
        event
    };
    lib.record(
        &(0..6)
            .map(|m| run("buzz", "chop-oaks", true, m))
            .collect::<Vec<_>>(),
    );
    lib.record(
        &(0..3)
            .map(|m| run("pickles", "mine-iron", m != 1, 10 + m))
            .collect::<Vec<_>>(),
    );
    lib.write_script("buzz", "chop-oaks", &script(2));
    lib.record(&[
        run("buzz", "chop-oaks", false, 30),
        run("buzz", "chop-oaks", true, 31),
    ]);

    // At one clock (the last run's time), so the table reads the same on any day.
    const AS_OF: &str = "2026-11-28T10:31:00Z";
    insta::assert_snapshot!("skills_table", lib.ok(&["skills", "--as-of", AS_OF]));
    insta::assert_snapshot!(
        "skill_show",
        lib.ok(&["skill", "show", "buzz/chop-oaks", "--as-of", AS_OF])
    );
}

#[test]
fn a_line_longer_than_the_server_body_cap_is_refused_by_its_number_and_the_next_is_recorded() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let huge = json!({"agent": "buzz", "command": "x".repeat(9 * 1024 * 1024)});
    let path = lib.events_file(&[huge, shell("buzz", "bun bots/buzz/chop.ts", true)]);
    let output = lib.run(&["record", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(":1: error: the line is longer than 8388608 bytes"),
        "{err}"
    );
    assert_eq!(lib.skill_json("buzz/chop")["versions"][0]["runs"], 1);
}

#[test]
fn recording_a_line_that_never_ends_names_it_at_once_then_stops_reading_and_exits() {
    use std::io::{BufRead as _, BufReader};
    let lib = TestLibrary::new();
    let mut child = lib
        .std_cmd()
        .args(["record", "/dev/zero"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stderr_lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = stderr_lines.next().unwrap().unwrap();
    assert!(
        first.starts_with("/dev/zero:1: error: the line is longer than"),
        "{first}"
    );
    // It skips the endless line only so far, then stops and says why (a generous bound: the
    // skip is 128 MiB of /dev/zero).
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(120) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("record /dev/zero did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let rest: Vec<String> = stderr_lines.map(Result::unwrap).collect();
    assert_eq!(status.code(), Some(2), "{rest:?}");
    assert!(
        rest.iter().any(|line| line.starts_with(
            "/dev/zero:1: error: the line does not end within 128 MiB; the input is taken for endless"
        )),
        "{rest:?}"
    );
}

#[test]
fn a_100_mb_line_is_refused_skipped_without_buffering_and_the_lines_after_it_are_recorded() {
    use std::io::Write as _;
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let good = shell("buzz", "bun bots/buzz/chop.ts", true).to_string();
    let path = lib.events_file(&[]);
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        writeln!(file, "{good}").unwrap();
        let block = vec![b'x'; 1024 * 1024];
        for _ in 0..100 {
            file.write_all(&block).unwrap();
        }
        writeln!(file).unwrap();
        writeln!(file, "{good}").unwrap();
        writeln!(file, "{good}").unwrap();
    }
    let output = lib.run(&["record", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(":2: error: the line is longer than 8388608 bytes"),
        "{err}"
    );
    assert!(!err.contains("does not end"), "{err}");
    assert_eq!(lib.skill_json("buzz/chop")["versions"][0]["runs"], 3);
}

#[test]
fn a_big_file_shows_its_progress_on_a_terminal_and_nothing_extra_when_piped() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    std::fs::write(bots.join("chop.ts"), script(1)).unwrap();
    let ws = lib.workspace("buzz");
    let events: Vec<_> = (0..300)
        .map(|i| {
            json!({"id": format!("p{i}"), "agent": "buzz", "kind": "shell",
                   "command": "bun bots/buzz/chop.ts", "cwd": ws, "ok": true, "duration_ms": 1000})
        })
        .collect();
    let file = lib.events_file(&events);
    // Piped (as every other test runs it): stderr holds nothing but what the lines say.
    let piped = lib.run(&["record", file.to_str().unwrap()]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert_eq!(stderr(&piped), "");

    // On a terminal: the bar names the work.
    let again = lib.events_file(
        &events
            .iter()
            .map(|e| {
                let mut e = e.clone();
                e["id"] = json!(format!("t{}", e["id"].as_str().unwrap()));
                e
            })
            .collect::<Vec<_>>(),
    );
    let Some(seen) = on_a_terminal(
        &format!("record '{}'", again.display()),
        lib.dir.path(),
        &lib.home(),
    ) else {
        return;
    };
    assert!(seen.contains("recording"), "the bar is drawn: {seen}");
}

#[test]
fn control_characters_in_ids_commands_and_cwd_are_refused_naming_the_field() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let ws = lib.workspace("buzz");
    let path = lib.events_file(&[
        json!({"id": "a\u{0}b", "agent": "buzz", "command": "bun bots/buzz/chop.ts"}),
        json!({"agent": "buzz", "command": "bun bots/buzz/chop.ts\u{0}"}),
        json!({"agent": "buzz", "command": "bun bots/buzz/chop.ts", "cwd": format!("{}\u{1b}", ws.display())}),
        // Tabs and newlines are a command's own.
        json!({"agent": "buzz", "command": "bun bots/buzz/chop.ts\t\n", "ok": true}),
    ]);
    let output = lib.run(&["record", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    for expected in [
        ":1: error: field `id`: holds a NUL character (U+0000) at character 2",
        ":2: error: field `command`: holds a NUL character (U+0000)",
        ":3: error: field `cwd`: holds a control character (U+001B)",
    ] {
        assert!(err.contains(expected), "{expected}\n{err}");
    }
    assert!(!err.contains(":4:"), "{err}");
    assert_eq!(lib.skill_json("buzz/chop")["versions"][0]["runs"], 1);
}
