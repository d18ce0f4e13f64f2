//! `mindrune setup rs-sdk PATH --owner NAME`: an rs-sdk checkout wired in one command — its
//! bots registered, MindRune's hooks merged into `.claude/settings.json`, the vocabulary built
//! from its wiki — and nothing changed by a second run, a dry run or a check that fails.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{
    TestLibrary, mindrune_bin, path_without_mindrune, script, stderr, stdout, visible_files,
};

/// The command setup installs for the library of `lib`: named absolutely, since a hook runs in
/// Claude Code's current folder (the agent's `cd` moves it).
fn hook_command(lib: &TestLibrary) -> String {
    format!(
        "{} hook claude-code --home {}",
        mindrune_bin(),
        lib.home().display()
    )
}

/// The events MindRune's hooks are installed for, in order.
/// What MindRune's `PreToolUse` watches (the runs and the guarded file tools), and what the two
/// other tool events watch (the runs).
const GUARDED_MATCHER: &str =
    "Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Grep|Glob|mcp__.*__execute_code";
const RUN_MATCHER: &str = "Bash|mcp__.*__execute_code";

const EVENTS: [&str; 6] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "StopFailure",
    "SessionStart",
];

/// A user's own settings: keys MindRune does not know, and a hook of their own.
const USER_SETTINGS: &str = r#"{
  "permissions": {
    "allow": ["Bash(bun:*)", "mcp__rs-agent-bot__execute_code"]
  },
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [{"type": "command", "command": "./scripts/lint-staged.sh", "timeout": 30}]
      }
    ],
    "Notification": [
      {"hooks": [{"type": "command", "command": "notify-send claude"}]}
    ]
  },
  "model": "opus",
  "env": {"BUN_ENV": "dev"}
}
"#;

/// A library home with no library yet, in a temp dir (`TestLibrary::new` would make one).
fn no_library() -> TestLibrary {
    TestLibrary {
        dir: tempfile::tempdir().unwrap(),
    }
}

/// An rs-sdk checkout as upstream lays it out: bots `a` and `b`, rs-sdk's own `_template/`
/// and `create-bot.ts` beside them, a small wiki, and the user's `.claude/settings.json`.
fn checkout(lib: &TestLibrary) -> PathBuf {
    let root = lib.dir.path().join("rs-sdk");
    for bot in ["a", "b"] {
        let dir = root.join("bots").join(bot);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("bot.env"),
            format!("BOT_USERNAME={bot}\nPASSWORD=pw-{bot}-s3cret77\nSERVER=localhost\n"),
        )
        .unwrap();
        std::fs::write(dir.join("lab_log.md"), format!("# {bot} Lab Log\n")).unwrap();
    }
    std::fs::create_dir_all(root.join("bots/_template")).unwrap();
    std::fs::write(root.join("bots/_template/script.ts"), script(0)).unwrap();
    std::fs::write(root.join("bots/create-bot.ts"), "// makes a bot\n").unwrap();
    let wiki = root.join("wiki");
    for (folder, slug, title) in [
        ("quests", "cooks-assistant", "Cook's Assistant"),
        ("quests", "restless-ghost", "The Restless Ghost"),
        ("skills", "mining", "Mining"),
        ("items", "bronze-pickaxe", "Bronze pickaxe"),
        ("npcs", "goblin", "Goblin"),
        (
            "shops",
            "lumbridge-general-store",
            "Lumbridge General Store",
        ),
    ] {
        write_page(&wiki, folder, slug, title);
    }
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), USER_SETTINGS).unwrap();
    root
}

/// One page as rs-sdk's generators write it: a `# Title` heading, then a table.
fn write_page(wiki: &Path, folder: &str, slug: &str, title: &str) {
    let dir = wiki.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{slug}.md")),
        format!("# {title}\n\n| Detail | Value |\n|---|---|\n| Members | No |\n"),
    )
    .unwrap();
}

fn setup(lib: &TestLibrary, root: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["setup", "rs-sdk", root.to_str().unwrap(), "--owner", "ada"];
    args.extend_from_slice(extra);
    lib.run(&args)
}

fn setup_ok(lib: &TestLibrary, root: &Path, extra: &[&str]) -> String {
    let output = setup(lib, root, extra);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// Output with the binary's path, the temp dir and the owner's key replaced, for snapshots.
fn stable(lib: &TestLibrary, text: &str) -> String {
    let canonical = lib.dir.path().canonicalize().unwrap();
    let mut text = text
        .replace(&mindrune_bin(), "[MINDRUNE]")
        .replace(canonical.to_str().unwrap(), "[TMP]")
        .replace(lib.dir.path().to_str().unwrap(), "[TMP]");
    while let Some(at) = text.find("mrk_") {
        let end = text[at + 4..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .map_or(text.len(), |n| at + 4 + n);
        text.replace_range(at..end, "[KEY]");
    }
    text
}

fn settings(root: &Path) -> Vec<u8> {
    std::fs::read(root.join(".claude/settings.json")).unwrap()
}

/// The library's agents and vocabulary, read from its database: (agents, vocabulary rows,
/// vocabulary state).
fn library_rows(lib: &TestLibrary) -> (Vec<String>, Vec<String>, Vec<String>) {
    let db = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut statement = db.prepare(sql).unwrap();
        statement
            .query_map([], |row| row.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    (
        rows(
            "SELECT a.name || ' ' || o.name || ' ' || a.workspace || ' ' || a.created_at
             FROM agents a JOIN owners o USING (owner_id) ORDER BY a.name",
        ),
        rows("SELECT kind || ':' || slug || ' ' || added_at FROM vocabulary ORDER BY kind, slug"),
        rows("SELECT digest || ' ' || entries || ' ' || built_at FROM vocabulary_state"),
    )
}

#[test]
fn setup_registers_every_bot_merges_the_hooks_into_the_users_settings_and_builds_the_vocabulary() {
    let lib = no_library();
    let root = checkout(&lib);
    let out = setup_ok(&lib, &root, &[]);
    insta::assert_snapshot!("first_run", stable(&lib, &out));

    // Both bots are agents of `ada`, with the checkout as their workspace.
    let workspace = root.canonicalize().unwrap();
    let agents = lib.ok(&["agent", "list", "--owner", "ada"]);
    assert_eq!(
        agents,
        format!("a  {}\nb  {}\n", workspace.display(), workspace.display())
    );

    // The user's settings are all still there, in their place, byte for byte up to where
    // MindRune's entries go in; ours are added once per event.
    let text = String::from_utf8(settings(&root)).unwrap();
    let kept = USER_SETTINGS
        .find("      }\n    ],\n    \"Notification\"")
        .unwrap();
    assert!(text.starts_with(&USER_SETTINGS[..kept]), "{text}");
    assert!(
        text.ends_with("  },\n  \"model\": \"opus\",\n  \"env\": {\"BUN_ENV\": \"dev\"}\n}\n"),
        "{text}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hooks = &value["hooks"];
    assert_eq!(
        hooks["PreToolUse"][0],
        json!({"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "./scripts/lint-staged.sh", "timeout": 30}]})
    );
    assert_eq!(
        hooks["Notification"],
        json!([{"hooks": [{"type": "command", "command": "notify-send claude"}]}])
    );
    let command = hook_command(&lib);
    for (event, matcher) in [
        ("PreToolUse", GUARDED_MATCHER),
        ("PostToolUse", RUN_MATCHER),
        ("PostToolUseFailure", RUN_MATCHER),
    ] {
        let groups = hooks[event].as_array().unwrap();
        assert_eq!(
            groups.last().unwrap(),
            &json!({"matcher": matcher, "hooks": [{"type": "command", "command": command}]}),
            "{event}"
        );
    }
    for event in ["Stop", "StopFailure", "SessionStart"] {
        assert_eq!(
            hooks[event],
            json!([{"hooks": [{"type": "command", "command": command}]}]),
            "{event}"
        );
    }
    // Each bot's family view is its own.
    let db = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let mirrors: Vec<(String, String)> = db
        .prepare("SELECT name, mirror FROM agents ORDER BY name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        mirrors,
        [
            ("a".to_string(), "bots/a/family-skills".to_string()),
            ("b".to_string(), "bots/b/family-skills".to_string())
        ]
    );
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4);
    assert!(text.find("\"permissions\"") < text.find("\"hooks\""));
    assert!(text.find("\"hooks\"") < text.find("\"model\""));
    assert!(text.find("\"model\"") < text.find("\"env\""));

    // The vocabulary came from the wiki.
    assert_eq!(
        lib.ok(&["tags", "map", "do The Restless Ghost with a bronze pickaxe"]),
        "quest:restless-ghost\nitem:bronze-pickaxe\n"
    );
}

#[test]
fn a_second_run_says_everything_is_there_already_and_changes_nothing() {
    let lib = no_library();
    let root = checkout(&lib);
    setup_ok(&lib, &root, &[]);
    let settings_before = settings(&root);
    let rows_before = library_rows(&lib);
    assert_eq!(rows_before.0.len(), 2);

    let again = setup_ok(&lib, &root, &[]);
    insta::assert_snapshot!("second_run", stable(&lib, &again));
    assert_eq!(settings(&root), settings_before);
    assert_eq!(library_rows(&lib), rows_before);
    // A dry run now has nothing to show either.
    let dry = setup_ok(&lib, &root, &["--dry-run"]);
    assert!(dry.contains("Nothing would change.\n"), "{dry}");
    assert!(!dry.contains("\n+"), "{dry}");
    assert_eq!(settings(&root), settings_before);
    assert_eq!(library_rows(&lib), rows_before);
}

#[test]
fn a_dry_run_shows_the_settings_diff_and_the_agents_and_changes_nothing() {
    let lib = no_library();
    let root = checkout(&lib);
    let out = setup_ok(&lib, &root, &["--dry-run"]);
    insta::assert_snapshot!("dry_run", stable(&lib, &out));
    assert_eq!(settings(&root), USER_SETTINGS.as_bytes());
    assert!(!lib.home().exists(), "a dry run makes no library");
    let leftovers: Vec<_> = std::fs::read_dir(root.join(".claude"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["settings.json"]);
}

#[test]
fn a_settings_file_that_is_not_json_is_an_error_naming_its_line_and_column_and_nothing_is_written()
{
    let lib = no_library();
    let root = checkout(&lib);
    let path = root.join(".claude/settings.json");
    let broken = USER_SETTINGS.replace("\"model\": \"opus\",", "\"model\": \"opus\",,");
    std::fs::write(&path, &broken).unwrap();
    let output = setup(&lib, &root, &[]);
    assert!(!output.status.success());
    let err = stderr(&output);
    let shown = path.canonicalize().unwrap();
    assert!(
        err.starts_with(&format!(
            "error: {}: line 16, column 19: key must be a string; MindRune's hooks cannot be added, and nothing was changed\n\nhint: fix the JSON there",
            shown.display()
        )),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), broken.as_bytes());
    assert!(
        !lib.home().exists(),
        "nothing is written, not even a library"
    );

    // `hooks` must be an object of events, and each of MindRune's events an array.
    for (text, at) in [
        (
            "{\n  \"hooks\": [\"PreToolUse\"]\n}\n",
            "line 2, column 11: invalid type: an array, expected \"hooks\" to be an object of hook events",
        ),
        (
            "{\"hooks\": {\"Stop\": \"say done\"}}",
            "line 1, column 29: invalid type: string \"say done\", expected a hook event to be an array of matcher groups",
        ),
        (
            "[1, 2]",
            "line 1, column 1: invalid type: an array, expected an object (Claude Code's settings)",
        ),
    ] {
        std::fs::write(&path, text).unwrap();
        let output = setup(&lib, &root, &[]);
        assert!(!output.status.success());
        let err = stderr(&output);
        assert!(
            err.starts_with(&format!("error: {}: {at}; ", shown.display())),
            "{err}"
        );
        assert!(err.contains("\n\nhint: "), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), text.as_bytes());
    }
    assert!(!lib.home().exists());
}

#[test]
fn a_bot_name_taken_by_another_owner_or_workspace_is_an_error_and_nothing_changes() {
    let lib = TestLibrary::new();
    let root = checkout(&lib);
    // `b` is bob's already; `a` is ada's but lives in another workspace.
    lib.ok(&["owner", "add", "bob"]);
    lib.agent("b", "bob");
    lib.agent("a", "ada");
    let rows_before = library_rows(&lib);
    let output = setup(&lib, &root, &[]);
    assert!(!output.status.success());
    let err = stable(&lib, &stderr(&output));
    assert_eq!(
        err,
        "error: bots of [TMP]/rs-sdk/bots/ are registered elsewhere, so nothing was changed:\n  `a` is an agent of `ada` already, with another workspace: [TMP]/ws/a\n  `b` is an agent of `bob` already (workspace [TMP]/ws/b)\n\nhint: agent names are unique in the library; rename the bot's folder, or, if it is the same bot moved here, `mindrune agent remove NAME` first (its private scripts' history goes with it)\n"
    );
    assert_eq!(library_rows(&lib), rows_before);
    assert_eq!(settings(&root), USER_SETTINGS.as_bytes());
}

#[test]
fn an_existing_owner_is_reused_and_a_checkout_without_settings_or_wiki_gets_new_settings() {
    let lib = TestLibrary::new();
    let root = checkout(&lib);
    std::fs::remove_dir_all(root.join(".claude")).unwrap();
    std::fs::remove_dir_all(root.join("wiki")).unwrap();
    let out = stable(&lib, &setup_ok(&lib, &root, &[]));
    assert!(out.contains("Owner `ada` exists already.\n"), "{out}");
    assert!(
        out.contains("[TMP]/rs-sdk has no wiki/ folder, so no topic-tag vocabulary was built"),
        "{out}"
    );
    assert!(!out.contains("[KEY]"), "{out}");
    let text = String::from_utf8(settings(&root)).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let command = hook_command(&lib);
    let tool_group =
        json!([{"matcher": RUN_MATCHER, "hooks": [{"type": "command", "command": command}]}]);
    let guard_group =
        json!([{"matcher": GUARDED_MATCHER, "hooks": [{"type": "command", "command": command}]}]);
    let group = json!([{"hooks": [{"type": "command", "command": command}]}]);
    assert_eq!(
        value,
        json!({"hooks": {
            "PreToolUse": guard_group,
            "PostToolUse": tool_group,
            "PostToolUseFailure": tool_group,
            "Stop": group,
            "StopFailure": group,
            "SessionStart": group,
        }})
    );
    assert_eq!(value["hooks"].as_object().unwrap().len(), EVENTS.len());
    assert!(
        text.starts_with("{\n  \"hooks\": {\n    \"PreToolUse\": [\n"),
        "{text}"
    );
    let again = setup_ok(&lib, &root, &[]);
    assert!(again.contains("Nothing was changed.\n"), "{again}");
    assert_eq!(settings(&root), text.as_bytes());
}

#[test]
fn the_installed_hook_command_records_a_bots_run_through_the_shell() {
    let lib = no_library();
    let root = checkout(&lib);
    setup_ok(&lib, &root, &[]);
    std::fs::write(root.join("bots/a/chop.ts"), script(1)).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&settings(&root)).unwrap();
    let command = value["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    // As Claude Code runs a command hook: through the shell, in the project, the call on
    // standard input; no `mindrune` on PATH.
    // Not on PATH: the command names the binary itself.
    let path = path_without_mindrune();
    let base = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": root, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/a/chop.ts 2>&1 | tail -20"}, "tool_use_id": "toolu_01"});
    for event in ["PreToolUse", "PostToolUse"] {
        let mut input = base.clone();
        input["hook_event_name"] = json!(event);
        input["tool_response"] = json!({"stdout": "── Result ──\n{}\n── State ──\nXP: Woodcutting +1,250\n", "stderr": "", "interrupted": false});
        let output = assert_cmd::Command::new("sh")
            .args(["-c", &command])
            .current_dir(&root)
            .env("PATH", &path)
            .env("MINDRUNE_HOME", lib.home())
            .env("MINDRUNE_AGENT", "a")
            .env_remove("MINDRUNE_LOG")
            .write_stdin(input.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "{event}: {}", stderr(&output));
    }
    let skill = lib.skill_json("a/chop");
    assert_eq!(skill["versions"][0]["runs"], 1);
}

#[test]
fn an_older_mindrune_hook_command_is_rewritten_in_place_and_never_added_twice() {
    let lib = no_library();
    let root = checkout(&lib);
    let old = r#"mindrune hook claude-code --agent \"$MINDRUNE_AGENT\""#;
    let tool_group = format!(
        r#"[{{"matcher": "Bash|mcp__.*__execute_code", "hooks": [{{"type": "command", "command": "{old}"}}]}}]"#
    );
    std::fs::write(
        root.join(".claude/settings.json"),
        format!(
            "{{\n  \"hooks\": {{\n    \"PreToolUse\": {tool_group},\n    \"PostToolUse\": {tool_group},\n    \"PostToolUseFailure\": {tool_group},\n    \"Stop\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"{old}\"}}]}}]\n  }}\n}}\n"
        ),
    )
    .unwrap();
    let out = setup_ok(&lib, &root, &[]);
    assert!(
        out.contains("Updated MindRune's hook command for PreToolUse, PostToolUse, PostToolUseFailure, Stop in"),
        "{out}"
    );
    let value: serde_json::Value = serde_json::from_slice(&settings(&root)).unwrap();
    for event in EVENTS {
        let commands: Vec<&str> = value["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|group| group["hooks"].as_array().unwrap())
            .map(|hook| hook["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands, [hook_command(&lib)], "{event}");
    }
    // The older PreToolUse watched only the runs; the guard needs the file tools too.
    assert_eq!(value["hooks"]["PreToolUse"][0]["matcher"], GUARDED_MATCHER);
    assert_eq!(value["hooks"]["PostToolUse"][0]["matcher"], RUN_MATCHER);
    let again = setup_ok(&lib, &root, &[]);
    assert!(
        again.contains("MindRune's hooks are installed already"),
        "{again}"
    );
}

#[test]
fn setup_names_the_binary_absolutely_and_after_it_moved_rewrites_every_hook_in_place() {
    let lib = no_library();
    let root = checkout(&lib);
    // A copy of the binary elsewhere, under a path with a space, sets the hooks up first.
    let old_place = lib.dir.path().join("old place");
    std::fs::create_dir_all(&old_place).unwrap();
    let old_binary = old_place.join("mindrune");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mindrune"), &old_binary).unwrap();
    let old_binary = old_binary.canonicalize().unwrap();
    let output = std::process::Command::new(&old_binary)
        .args(["setup", "rs-sdk", root.to_str().unwrap(), "--owner", "ada"])
        .env("MINDRUNE_HOME", lib.home())
        .env("PATH", path_without_mindrune())
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_LOG")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let first = stdout(&output);
    let quoted = format!("'{}'", old_binary.display());
    assert!(
        first.contains(&format!("  {quoted} --home")),
        "the next steps name the binary that ran setup, quoted: {first}"
    );
    let text = String::from_utf8(settings(&root)).unwrap();
    assert_eq!(
        text.matches(&format!("{quoted} hook claude-code --home"))
            .count(),
        EVENTS.len(),
        "{text}"
    );
    // Then the binary moves: the real one sets up again.
    let out = setup_ok(&lib, &root, &[]);
    assert!(
        out.contains(&format!(
            "  They ran `{}`; they now run this binary, `{}`.",
            old_binary.display(),
            mindrune_bin()
        )),
        "{out}"
    );
    let value: serde_json::Value = serde_json::from_slice(&settings(&root)).unwrap();
    for event in EVENTS {
        let commands: Vec<&str> = value["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|group| group["hooks"].as_array().unwrap())
            .map(|hook| hook["command"].as_str().unwrap())
            .filter(|command| command.contains("hook claude-code"))
            .collect();
        assert_eq!(commands, [hook_command(&lib)], "{event}");
    }
}

#[test]
fn a_library_inside_the_checkout_is_named_from_the_project_folder_so_hooks_find_it_after_a_cd() {
    let lib = no_library();
    let root = checkout(&lib);
    let home = root.join(".mindrune");
    let output = lib
        .cmd()
        .env("MINDRUNE_HOME", &home)
        .args(["setup", "rs-sdk", root.to_str().unwrap(), "--owner", "ada"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let value: serde_json::Value = serde_json::from_slice(&settings(&root)).unwrap();
    let command = value["hooks"]["PostToolUse"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        command,
        format!(
            r#"{} hook claude-code --home "$CLAUDE_PROJECT_DIR"/.mindrune"#,
            mindrune_bin()
        )
    );
    std::fs::write(root.join("bots/a/chop.ts"), script(1)).unwrap();
    // As Claude Code runs it after the agent's `cd bots/a`: in that folder, with the project
    // folder in CLAUDE_PROJECT_DIR and no MINDRUNE_HOME at all.
    // Not on PATH: the command names the binary itself.
    let path = path_without_mindrune();
    let base = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "tool_name": "Bash",
                      "tool_input": {"command": "cd bots/a && bun chop.ts"}, "tool_use_id": "toolu_cd"});
    for (event, cwd) in [
        ("PreToolUse", root.clone()),
        ("PostToolUse", root.join("bots/a")),
    ] {
        let mut input = base.clone();
        input["hook_event_name"] = json!(event);
        input["cwd"] = json!(cwd);
        input["tool_response"] = json!({"stdout": "── Result ──\n{}\n── State ──\nXP: Woodcutting +1,250\n", "stderr": "", "interrupted": false});
        input["duration_ms"] = json!(1234);
        let output = assert_cmd::Command::new("sh")
            .args(["-c", &command])
            .current_dir(root.join("bots/a"))
            .env("PATH", &path)
            .env_remove("MINDRUNE_HOME")
            .env("CLAUDE_PROJECT_DIR", &root)
            .env("MINDRUNE_AGENT", "a")
            .env_remove("MINDRUNE_LOG")
            .write_stdin(input.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "{event}: {}", stderr(&output));
        assert!(output.stdout.is_empty());
    }
    let skill = lib
        .cmd()
        .env("MINDRUNE_HOME", &home)
        .args(["skill", "show", "a/chop", "--json"])
        .output()
        .unwrap();
    let skill: serde_json::Value = serde_json::from_slice(&skill.stdout).unwrap();
    assert_eq!(skill["versions"][0]["runs"], 1, "{skill}");
}

#[test]
fn setup_keeps_the_mirrors_and_an_inner_library_out_of_git_status() {
    let lib = no_library();
    let root = checkout(&lib);
    std::fs::create_dir_all(root.join(".git/info")).unwrap();
    std::fs::write(
        root.join(".git/info/exclude"),
        "# git ls-files --others --exclude-from=.git/info/exclude\n*.log",
    )
    .unwrap();
    let output = lib
        .cmd()
        .env("MINDRUNE_HOME", root.join(".mindrune"))
        .args(["setup", "rs-sdk", root.to_str().unwrap(), "--owner", "ada"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let exclude = std::fs::read_to_string(root.join(".git/info/exclude")).unwrap();
    assert_eq!(
        exclude,
        "# git ls-files --others --exclude-from=.git/info/exclude\n*.log\n# MindRune: each bot's family-skills/ and the library\n/bots/*/family-skills/\n/.mindrune/\n"
    );
    let again = lib
        .cmd()
        .env("MINDRUNE_HOME", root.join(".mindrune"))
        .args(["setup", "rs-sdk", root.to_str().unwrap(), "--owner", "ada"])
        .output()
        .unwrap();
    assert!(
        stdout(&again).contains("Nothing was changed."),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".git/info/exclude")).unwrap(),
        exclude
    );
}

#[test]
fn a_bot_without_bot_env_is_named_with_the_checkout_s_own_way_to_make_a_bot() {
    let lib = no_library();
    let root = checkout(&lib);
    std::fs::remove_file(root.join("bots/b/bot.env")).unwrap();
    std::fs::create_dir_all(root.join("scripts")).unwrap();
    std::fs::rename(
        root.join("bots/create-bot.ts"),
        root.join("scripts/create-bot.ts"),
    )
    .unwrap();
    let out = setup_ok(&lib, &root, &[]);
    assert!(
        out.contains("Bot `b` has no bots/b/bot.env, so MindRune cannot scrub its password from what it saves until it has one (`bun scripts/create-bot.ts b` makes a bot with it)."),
        "{out}"
    );
    assert!(!out.contains("Bot `a` has no"), "{out}");
}

#[test]
fn in_one_checkout_each_bot_s_turn_end_leaves_the_other_bot_s_view_intact() {
    let lib = no_library();
    let root = checkout(&lib);
    setup_ok(&lib, &root, &[]);
    // a shares a proven skill and a lesson; b has feedback-worthy work of its own.
    let headed = format!("/** @skill chop\n * Goal: chop trees\n */\n{}", script(1));
    std::fs::write(root.join("bots/a/chop.ts"), &headed).unwrap();
    std::fs::write(
        root.join("bots/a/lab_log.md"),
        "Share: oaks respawn within a minute\n",
    )
    .unwrap();
    std::fs::write(
        root.join("bots/b/lab_log.md"),
        "Share: the bank is north of the castle\n",
    )
    .unwrap();
    let events: Vec<serde_json::Value> = (0..6)
        .map(|i| {
            json!({"agent": "a", "kind": "shell", "command": "bun bots/a/chop.ts", "cwd": root, "ok": true,
                   "duration_ms": 60000, "at": format!("2026-11-28T10:0{i}:00Z"),
                   "output": "── State ──\nXP: Woodcutting +1,250\n"})
        })
        .collect();
    let recorded = lib.record(&events);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    lib.ok(&["turn-end", "a"]);
    lib.ok(&["turn-end", "b"]);
    // a's view again, now that b's lesson is in the library.
    lib.ok(&["mirror", "a"]);
    let view = |bot: &str| visible_files(&root.join("bots").join(bot).join("family-skills"));
    let a_before = view("a");
    let b_view = view("b");
    // Each bot's view is its own: b sees a's skill and lesson; a sees b's lesson and not its
    // own skill as a sibling's.
    assert!(b_view.contains_key("a/chop.ts"), "{:?}", b_view.keys());
    assert!(
        String::from_utf8_lossy(&b_view["LESSONS.md"]).contains("oaks respawn within a minute")
    );
    assert!(!a_before.contains_key("a/chop.ts"), "{:?}", a_before.keys());
    assert!(
        String::from_utf8_lossy(&a_before["LESSONS.md"])
            .contains("the bank is north of the castle")
    );
    assert!(!String::from_utf8_lossy(&a_before["LESSONS.md"]).contains("oaks respawn"));
    // b's next turn end rewrites b's view only.
    std::fs::write(
        root.join("bots/b/lab_log.md"),
        "Share: the bank is north of the castle\nShare: goblins drop bones\n",
    )
    .unwrap();
    lib.ok(&["mirror", "b"]);
    assert_eq!(view("a"), a_before, "a's view changed when b's turn ended");
    assert!(
        !root.join("family-skills").exists(),
        "no shared view at the checkout's root"
    );
    // Neither view is a bot's script: the scan reads only files directly in bots/<bot>/.
    let skills = lib.skills_json();
    assert_eq!(skills.as_array().unwrap().len(), 1, "{skills:#}");
}

/// An assistant's project with the user's own Claude Code settings and MCP config.
fn assistant_project(lib: &TestLibrary) -> PathBuf {
    let root = lib.dir.path().join("assistant");
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), USER_SETTINGS).unwrap();
    std::fs::write(
        root.join(".mcp.json"),
        "{\n  \"mcpServers\": {\n    \"github\": {\"command\": \"gh-mcp\"}\n  }\n}\n",
    )
    .unwrap();
    root
}

#[test]
fn setup_claude_code_dry_run_shows_both_diffs_and_changes_nothing() {
    let lib = no_library();
    let root = assistant_project(&lib);
    let before = visible_files(&root);
    let output = lib.run(&["setup", "claude-code", root.to_str().unwrap(), "--dry-run"]);
    assert!(output.status.success(), "{}", stderr(&output));
    insta::assert_snapshot!("claude_code_dry_run", stable(&lib, &stdout(&output)));
    assert_eq!(
        visible_files(&root),
        before,
        "a dry run changed the project"
    );
    assert!(!root.join("playbooks.toml").exists());
}

#[test]
fn setup_claude_code_makes_the_workspace_merges_the_user_s_files_and_a_second_run_changes_nothing()
{
    let lib = no_library();
    let root = assistant_project(&lib);
    let output = lib.run(&["setup", "claude-code", root.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(root.join("playbooks.toml").is_file() && root.join("skills").is_dir());
    let settings: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".claude/settings.json")).unwrap())
            .unwrap();
    // The user's own hooks and settings are still there.
    assert_eq!(settings["model"], "opus");
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["matcher"], "Write|Edit",
        "the user's own PreToolUse hook"
    );
    let ours = settings["hooks"]["PreToolUse"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        ours,
        json!({"matcher": "Bash|Write|Edit|MultiEdit|NotebookEdit", "hooks": [{"type": "command",
               "command": format!("{} hook claude-code --workspace \"$CLAUDE_PROJECT_DIR\"", mindrune_bin())}]})
    );
    for event in ["PostToolUse", "PostToolUseFailure", "UserPromptSubmit"] {
        assert!(settings["hooks"][event].is_array(), "{event}");
    }
    let mcp: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp["mcpServers"]["github"]["command"], "gh-mcp");
    let workspace = root.canonicalize().unwrap();
    assert_eq!(
        mcp["mcpServers"]["mindrune"],
        json!({"command": mindrune_bin(), "args": ["mcp", "--workspace", workspace]})
    );
    let local: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(".claude/settings.local.json")).unwrap())
            .unwrap();
    assert_eq!(local["enabledMcpjsonServers"], json!(["mindrune"]));

    let files = |root: &Path| {
        [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".mcp.json",
        ]
        .map(|f| std::fs::read(root.join(f)).unwrap())
    };
    let first = files(&root);
    let again = lib.run(&["setup", "claude-code", root.to_str().unwrap()]);
    assert!(again.status.success());
    let text = stdout(&again);
    assert!(
        text.contains("MindRune's hooks are installed already"),
        "{text}"
    );
    assert!(
        text.contains("is registered already in .mcp.json"),
        "{text}"
    );
    assert_eq!(files(&root), first, "a second run changed a file");
}

#[test]
fn setup_claude_code_refuses_an_mcp_json_it_cannot_read_and_changes_nothing() {
    let lib = no_library();
    let root = assistant_project(&lib);
    std::fs::write(root.join(".mcp.json"), "{\n  \"mcpServers\": [1]\n}\n").unwrap();
    let before = visible_files(&root);
    let output = lib.run(&["setup", "claude-code", root.to_str().unwrap()]);
    assert!(!output.status.success());
    let err = stable(&lib, &stderr(&output));
    assert!(
        err.contains("[TMP]/assistant/.mcp.json: line") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(visible_files(&root), before);
}

#[test]
fn a_library_chosen_with_database_sqlite_is_named_in_the_hooks_and_every_printed_command() {
    let lib = no_library();
    let root = checkout(&lib);
    let elsewhere = lib.dir.path().join("elsewhere/library.db");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    let database = format!("sqlite:{}", elsewhere.display());
    let output = setup_ok(&lib, &root, &["--database", &database]);
    assert!(
        elsewhere.exists(),
        "the library is made where --database says"
    );
    assert!(!lib.home().join("library.db").exists());
    for line in output
        .lines()
        .filter(|l| l.contains("mindrune --home") && !l.contains("MINDRUNE_RELAY"))
    {
        assert!(line.contains(&format!("--database {database}")), "{line}");
    }
    // The installed hook records into that file, from the project's folder.
    let value: serde_json::Value = serde_json::from_slice(&settings(&root)).unwrap();
    let command = value["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        command.ends_with(&format!("--database {database}")),
        "{command}"
    );
    std::fs::write(root.join("bots/a/chop.ts"), script(1)).unwrap();
    // Not on PATH: the command names the binary itself.
    let path = path_without_mindrune();
    let base = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": root, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/a/chop.ts"}, "tool_use_id": "toolu_01"});
    for event in ["PreToolUse", "PostToolUse"] {
        let mut input = base.clone();
        input["hook_event_name"] = json!(event);
        input["tool_response"] = json!({"stdout": "done\n", "stderr": "", "interrupted": false});
        let output = assert_cmd::Command::new("sh")
            .args(["-c", &command])
            .current_dir(&root)
            .env("PATH", &path)
            .env("MINDRUNE_AGENT", "a")
            .env_remove("MINDRUNE_HOME")
            .env_remove("MINDRUNE_DATABASE_URL")
            .env_remove("MINDRUNE_LOG")
            .write_stdin(input.to_string())
            .output()
            .unwrap();
        assert!(output.status.success(), "{event}: {}", stderr(&output));
    }
    let skills = lib.run(&["--database", &database, "skills", "--json"]);
    assert!(stdout(&skills).contains("chop"), "{}", stdout(&skills));
}
