//! `mindrune hook claude-code`: Claude Code's hook calls in, uses recorded.

use serde_json::json;

use crate::util::{TestLibrary, script, stderr};

fn hook(lib: &TestLibrary, input: serde_json::Value) -> std::process::Output {
    lib.cmd()
        .args(["hook", "claude-code", "--agent", "buzz"])
        .write_stdin(input.to_string())
        .output()
        .unwrap()
}

#[test]
fn a_bash_call_seen_by_pre_and_post_hooks_is_one_timed_use() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let base = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": "/work", "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/buzz/chop.ts 2>&1 | tail -20"}, "tool_use_id": "toolu_01"});
    let mut pre = base.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    assert!(hook(&lib, pre).status.success());
    let mut post = base;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"stdout": "── Result ──\n{}\n── State ──\nPos (1, 2) lvl 0 | HP 10/10\nXP: Woodcutting +1,250\n", "stderr": "", "interrupted": false});
    let output = hook(&lib, post.clone());
    assert!(output.status.success(), "{}", stderr(&output));
    // The same hook call delivered twice records once.
    assert!(hook(&lib, post).status.success());
    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["versions"][0]["runs"], 1);
    assert_eq!(skill["versions"][0]["ok"], 1);
}

#[test]
fn a_run_is_filed_under_the_code_that_ran_even_when_the_file_was_edited_before_its_post_hook() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let workspace = lib.workspace("buzz");
    let hook_in = |input: serde_json::Value| {
        lib.cmd()
            .args(["hook", "claude-code", "--agent", "buzz"])
            .env("CLAUDE_PROJECT_DIR", &workspace)
            .write_stdin(input.to_string())
            .output()
            .unwrap()
    };
    // v1 is in the library already, from an earlier run.
    let turn = lib.run(&["turn-end", "buzz"]);
    assert!(turn.status.success(), "{}", stderr(&turn));
    let base = json!({"session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": workspace, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/buzz/chop.ts"}, "tool_use_id": "toolu_edit"});
    let mut pre = base.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    assert!(hook_in(pre).status.success());
    // Claude Code's Edit lands while the run goes on (0.2 s after it, in the live session).
    lib.write_script("buzz", "chop", &script(2));
    let mut post = base;
    post["hook_event_name"] = json!("PostToolUse");
    post["tool_response"] = json!({"stdout": "done\n", "stderr": "", "interrupted": false});
    let output = hook_in(post);
    assert!(output.status.success(), "{}", stderr(&output));
    let turn = lib.run(&["turn-end", "buzz"]);
    assert!(turn.status.success(), "{}", stderr(&turn));
    let skill = lib.skill_json("buzz/chop");
    let versions = skill["versions"].as_array().unwrap();
    let runs_of = |number: u64| {
        versions
            .iter()
            .find(|v| v["version"] == number)
            .map(|v| v["runs"].clone())
    };
    assert_eq!(
        runs_of(1),
        Some(json!(1)),
        "the run of v1 is v1's: {skill:#}"
    );
    assert_eq!(
        runs_of(2),
        Some(json!(0)),
        "the edit is v2, not yet run: {skill:#}"
    );
}

#[test]
fn a_failed_call_is_recorded_as_a_failure() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    let output = hook(
        &lib,
        json!({"hook_event_name": "PostToolUseFailure", "session_id": "s", "cwd": "/work", "tool_name": "Bash",
               "tool_input": {"command": "bun bots/buzz/chop.ts"}, "tool_use_id": "toolu_02", "error": "Exit code 1"}),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["versions"][0]["runs"], 1);
    assert_eq!(skill["versions"][0]["ok"], 0);
}

#[test]
fn bad_hook_input_never_blocks_the_agent() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let output = lib
        .cmd()
        .args(["hook", "claude-code", "--agent", "buzz"])
        .write_stdin("{oops")
        .output()
        .unwrap();
    // Exit status 2 would block the tool call in Claude Code. The problem is said on stderr,
    // and shown to the user as the answer's systemMessage (read by Claude Code at status 0).
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("not JSON"), "{}", stderr(&output));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        answer["systemMessage"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{answer}"
    );
}

#[test]
fn claude_code_s_stop_is_the_turn_boundary() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    lib.write_script(
        "buzz",
        "chop",
        &format!("/** @skill chop\n * Goal: chop trees\n */\n{}", script(1)),
    );
    let bots = lib.workspace("buzz").join("bots/buzz");
    std::fs::write(bots.join("lab_log.md"), "Share: trees regrow in a minute\n").unwrap();
    let output = hook(
        &lib,
        json!({"hook_event_name": "Stop", "session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": "/work",
               "stop_hook_active": false}),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report = stderr(&output);
    assert!(report.contains("buzz: turn ended"), "{report}");
    assert!(report.contains("chop.ts: 0/5 runs"), "{report}");
    assert!(report.contains("lessons: 1 shared"), "{report}");
    // The sibling's mirror carries the lesson at its next refresh.
    lib.ok(&["mirror", "pickles"]);
    let lessons =
        std::fs::read_to_string(lib.workspace("pickles").join("family-skills/LESSONS.md")).unwrap();
    assert!(
        lessons.contains("trees regrow in a minute (buzz)"),
        "{lessons}"
    );
}

#[test]
fn in_relay_mode_the_bot_s_password_is_scrubbed_before_the_event_touches_the_spool() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let workspace = lib.workspace("buzz");
    let relay = lib.dir.path().join("relay");
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": workspace, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/buzz/chop.ts --login pw-buzz-s3cret77"},
                      "tool_use_id": "toolu_secret", "duration_ms": 1200,
                      "tool_response": {"stdout": "logged in with pw-buzz-s3cret77\n", "stderr": "", "interrupted": false}});
    let output = lib
        .cmd()
        .args(["hook", "claude-code"])
        .env("MINDRUNE_AGENT", "buzz")
        .env("MINDRUNE_RELAY", &relay)
        .env("CLAUDE_PROJECT_DIR", &workspace)
        .write_stdin(post.to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let inbox: Vec<_> = std::fs::read_dir(relay.join("inbox"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(inbox.len(), 1);
    let spooled = std::fs::read_to_string(inbox[0].path()).unwrap();
    assert!(!spooled.contains("pw-buzz-s3cret77"), "{spooled}");
    assert!(spooled.contains("bun bots/buzz/chop.ts"), "{spooled}");
}

#[test]
fn without_mindrune_agent_the_hook_names_the_variable_and_records_nothing() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let output = lib
        .cmd()
        .args(["hook", "claude-code"])
        .env_remove("MINDRUNE_AGENT")
        .write_stdin(json!({"hook_event_name": "Stop", "cwd": "/work"}).to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "never blocking");
    assert!(
        stderr(&output).contains("MINDRUNE_AGENT is not set"),
        "{}",
        stderr(&output)
    );
    // The user is told: nothing is recorded for this session until it is set.
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        answer["systemMessage"]
            .as_str()
            .unwrap()
            .contains("MINDRUNE_AGENT is not set"),
        "{answer}"
    );
    assert_eq!(lib.skills_json(), serde_json::json!([]));
}

#[test]
fn session_start_writes_the_mirror_and_hands_the_agent_its_instructions_as_context() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let output = lib
        .cmd()
        .args(["hook", "claude-code", "--agent", "buzz"])
        .write_stdin(json!({"hook_event_name": "SessionStart", "session_id": "s", "cwd": "/work", "source": "startup"}).to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let context: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        context["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    let text = context["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("at least 5 recorded runs and a score of at least 600"),
        "{text}"
    );
    assert!(
        lib.workspace("buzz")
            .join("family-skills/INDEX.md")
            .exists()
    );
}
