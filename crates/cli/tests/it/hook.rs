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
    post["tool_response"] = json!({"stdout": "── State ──\nPos (1, 2) lvl 0 | HP 10/10\nXP: Woodcutting +1,250\n", "stderr": "", "interrupted": false});
    let output = hook(&lib, post.clone());
    assert!(output.status.success(), "{}", stderr(&output));
    // The same hook call delivered twice records once.
    assert!(hook(&lib, post).status.success());
    let skill = lib.skill_json("buzz/chop");
    assert_eq!(skill["versions"][0]["runs"], 1);
    assert_eq!(skill["versions"][0]["ok"], 1);
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
    // Exit status 2 would block the tool call in Claude Code; a hook problem is status 1.
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("not JSON"), "{}", stderr(&output));
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
