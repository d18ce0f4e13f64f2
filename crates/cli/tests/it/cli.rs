//! What a person sees of the CLI itself: `--database sqlite:PATH` honoured by every command
//! that opens or makes a library, named in its messages.

use crate::util::{TestLibrary, stderr};

/// Runs `mindrune` in `lib`'s folder with `--database` (or nothing) and returns the output.
fn run_with(lib: &TestLibrary, database: Option<&str>, args: &[&str]) -> std::process::Output {
    let mut cmd = lib.cmd();
    if let Some(database) = database {
        cmd.arg("--database").arg(database);
    }
    cmd.args(args).output().unwrap()
}

#[test]
fn init_makes_the_library_that_database_sqlite_names_and_says_where() {
    let lib = TestLibrary::new();
    let path = lib.dir.path().join("elsewhere").join("lib.db");
    let spec = format!("sqlite:{}", path.display());
    let output = run_with(&lib, Some(&spec), &["init"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.starts_with(&format!(
            "Made an empty MindRune library at {}.",
            path.display()
        )),
        "{text}"
    );
    assert!(path.is_file(), "the library is where --database says");

    // Every other command finds it there, not in MINDRUNE_HOME (which has `ada` only).
    let output = run_with(&lib, Some(&spec), &["owner", "add", "grace"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let owners = run_with(&lib, Some(&spec), &["owner", "list"]);
    assert_eq!(
        String::from_utf8(owners.stdout).unwrap(),
        "grace  (0 agents)\n"
    );
    assert_eq!(lib.ok(&["owner", "list"]), "ada  (0 agents)\n");

    // Again: it is there already, and the message names the same file.
    let output = run_with(&lib, Some(&spec), &["init"]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert_eq!(
        text,
        format!(
            "The MindRune library at {} is ready (it existed already; nothing was changed).\n",
            path.display()
        )
    );
}

#[test]
fn mindrune_database_url_names_a_sqlite_library_as_database_does() {
    let lib = TestLibrary::new();
    let path = lib.dir.path().join("env.db");
    let spec = format!("sqlite:{}", path.display());
    let init = lib
        .cmd()
        .env("MINDRUNE_DATABASE_URL", &spec)
        .arg("init")
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", stderr(&init));
    assert!(path.is_file());
    let add = lib
        .cmd()
        .env("MINDRUNE_DATABASE_URL", &spec)
        .args(["owner", "add", "grace"])
        .output()
        .unwrap();
    assert!(add.status.success(), "{}", stderr(&add));
    assert_eq!(lib.ok(&["owner", "list"]), "ada  (0 agents)\n");
}

#[test]
fn a_missing_sqlite_library_is_named_by_its_file_and_nothing_is_made() {
    let lib = TestLibrary::new();
    let path = lib.dir.path().join("nowhere").join("lib.db");
    let spec = format!("sqlite:{}", path.display());
    for args in [
        &["owner", "list"][..],
        &["agent", "list"],
        &["skills"],
        &["token", "operator"],
    ] {
        let output = run_with(&lib, Some(&spec), args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let text = stderr(&output);
        assert!(
            text.starts_with(&format!("error: no MindRune library at {}", path.display())),
            "{args:?}: {text}"
        );
        assert!(
            text.contains(&format!("mindrune --database {spec} init")),
            "{args:?}: {text}"
        );
        assert!(!path.exists(), "{args:?} made nothing");
        assert!(!path.parent().unwrap().exists(), "{args:?} made nothing");
    }
    // Without --database the error names MINDRUNE_HOME's file.
    let home = lib.dir.path().join("empty-home");
    let output = lib
        .cmd()
        .env("MINDRUNE_HOME", &home)
        .args(["owner", "list"])
        .output()
        .unwrap();
    assert!(
        stderr(&output).starts_with(&format!(
            "error: no MindRune library at {}\n\nhint: run `mindrune init`",
            home.join("library.db").display()
        )),
        "{}",
        stderr(&output)
    );
}

#[test]
fn owner_list_and_agent_list_answer_in_json_and_count_agents_in_good_english() {
    let lib = TestLibrary::new();
    lib.ok(&["owner", "add", "grace"]);
    lib.agent("buzz", "ada");
    assert_eq!(
        lib.ok(&["owner", "list"]),
        "ada  (1 agent)\ngrace  (0 agents)\n"
    );
    lib.agent("pickles", "ada");
    let owners: serde_json::Value =
        serde_json::from_str(&lib.ok(&["owner", "list", "--json"])).unwrap();
    assert_eq!(owners[0]["name"], "ada");
    assert_eq!(owners[0]["agents"], 2);
    assert_eq!(owners[0]["eager_sharing"], false);
    assert!(owners[0]["created_at"].is_i64(), "{owners}");
    assert_eq!(owners[1]["name"], "grace");
    assert_eq!(owners[1]["agents"], 0);
    assert!(
        !owners.to_string().contains("mrk_"),
        "the owner's key is never listed: {owners}"
    );

    let agents: serde_json::Value =
        serde_json::from_str(&lib.ok(&["agent", "list", "--owner", "ada", "--json"])).unwrap();
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 2);
    assert_eq!(agents[0]["name"], "buzz");
    assert_eq!(agents[0]["owner"], "ada");
    let workspace = lib.workspace("buzz").canonicalize().unwrap();
    assert_eq!(agents[0]["workspace"], workspace.to_str().unwrap());
    assert_eq!(
        agents[0]["mirror"],
        workspace.join("family-skills").to_str().unwrap()
    );
    assert!(agents[0]["last_turn_at"].is_null());
    let empty: serde_json::Value =
        serde_json::from_str(&lib.ok(&["agent", "list", "--owner", "grace", "--json"])).unwrap();
    assert_eq!(empty, serde_json::json!([]));
}

/// `mindrune ARGS` with no MINDRUNE_* variables (help shows their values) and a fixed width.
fn help(args: &[&str]) -> String {
    let output = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .env_clear()
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_help_reads_well() {
    insta::assert_snapshot!("help_top", help(&["--help"]));
    insta::assert_snapshot!("help_init", help(&["init", "--help"]));
    insta::assert_snapshot!("help_owner_list", help(&["owner", "list", "--help"]));
    insta::assert_snapshot!("help_agent_list", help(&["agent", "list", "--help"]));
    insta::assert_snapshot!("help_runner", help(&["runner", "--help"]));
    insta::assert_snapshot!("help_card_show", help(&["card", "show", "--help"]));
    insta::assert_snapshot!(
        "help_playbook_record",
        help(&["playbook", "record", "--help"])
    );
}

fn event(script: &str, ok: bool) -> serde_json::Value {
    serde_json::json!({"agent": "buzz", "kind": "execute_code", "script": script, "ok": ok})
}

#[test]
fn record_says_how_many_lines_were_rejected_and_whether_any_was_recorded() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", "await bot.chop();\n");
    let bad = serde_json::json!({"agent": "nobody", "kind": "execute_code", "script": "bots/nobody/x.ts", "ok": true});

    let one_bad = lib.record(std::slice::from_ref(&bad));
    assert_eq!(one_bad.status.code(), Some(2));
    insta::assert_snapshot!("record_one_line_rejected", stdout_of(&one_bad));

    let all_bad = lib.record(&[bad.clone(), bad.clone(), bad.clone()]);
    assert_eq!(all_bad.status.code(), Some(2));
    insta::assert_snapshot!("record_all_lines_rejected", stdout_of(&all_bad));

    let some_bad = lib.record(&[
        event("bots/buzz/chop.ts", true),
        bad,
        event("bots/buzz/chop.ts", true),
    ]);
    assert_eq!(some_bad.status.code(), Some(2));
    insta::assert_snapshot!("record_some_lines_rejected", stdout_of(&some_bad));

    let none_bad = lib.record(&[event("bots/buzz/chop.ts", false)]);
    assert!(none_bad.status.success(), "{}", stderr(&none_bad));
    let text = stdout_of(&none_bad);
    assert!(!text.contains("rejected"), "nothing was rejected: {text}");
}

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn a_headed_script_is_not_shared_yet_and_runs_are_one_column_when_no_skill_has_older_versions() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script(
        "buzz",
        "chop",
        "/** @skill chop\n * Goal: chop oaks\n */\nawait bot.chop();\n",
    );
    lib.write_script("buzz", "fish", "await bot.fish();\n");
    let output = lib.record(&[
        event("bots/buzz/chop.ts", true),
        event("bots/buzz/chop.ts", true),
        event("bots/buzz/fish.ts", true),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    lib.ok(&["turn-end", "buzz"]);
    let table = lib.ok(&["skills"]);
    // Times differ from run to run: the last column is left out of the snapshot.
    let cut = table.lines().next().unwrap().find("LAST USED").unwrap();
    let stable: String = table
        .lines()
        .map(|line| {
            if line.len() > cut && (line.starts_with("SKILL") || line.starts_with("buzz/")) {
                format!("{}\n", line[..cut].trim_end())
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    insta::assert_snapshot!("skills_single_versions", stable);
    assert!(!table.contains("ALL RUNS"), "{table}");
    let show = lib.ok(&["skill", "show", "buzz/chop"]);
    assert!(
        show.contains("\nchop.ts: 2/5 runs, score "),
        "skill show says it as the wrap-up does: {show}"
    );
    assert!(show.contains("— not shared yet\n"), "{show}");
    // JSON keeps its value.
    let skills = lib.skills_json();
    let chop = skills
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "chop")
        .unwrap();
    assert_eq!(chop["sharing"], "headed");
}
