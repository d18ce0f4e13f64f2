//! A bot's `bot.env` fails closed: whatever its bytes, its password is scrubbed from everything
//! stored or relayed; one that is there but cannot be read stops recording and relaying.

use serde_json::json;

use crate::util::{TestLibrary, contains, stderr};

/// A `bot.env` hand-edited in Latin-1: a comment and the password each hold a byte that is not
/// UTF-8, and the password carries a trailing comment.
const LATIN1_ENV: &[u8] =
    b"# mot de passe: \xe9t\xe9\nBOT_USERNAME=woody\nPASSWORD=h\xe9llo-Secr3t-xyz # set by ops\n";

/// What every reading of the password has in common, so one look finds any of them.
const PASSWORD_TAIL: &str = "llo-Secr3t-xyz";

/// The password as a run prints it: in its Latin-1 reading written in UTF-8 (`héllo…`), and in
/// its lossy UTF-8 reading (the raw byte shown as U+FFFD).
fn printed_password() -> String {
    "logged in with h\u{e9}llo-Secr3t-xyz\nretry as h\u{fffd}llo-Secr3t-xyz\nXP: Woodcutting +25\n"
        .to_string()
}

fn header_script() -> String {
    "/** @skill chop\n * Goal: chop oaks\n */\nimport { runScript } from '../../sdk/runner';\n\nawait runScript(async ({ bot }) => {\n  await bot.chop(1);\n});\n".to_string()
}

#[test]
fn a_latin1_bot_env_password_is_scrubbed_in_every_reading_from_the_library_and_its_answers() {
    let lib = TestLibrary::new();
    let bots = lib.agent("woody", "ada");
    std::fs::write(bots.join("bot.env"), LATIN1_ENV).unwrap();
    lib.write_script("woody", "chop", &header_script());
    let runs: Vec<_> = [true, false]
        .iter()
        .enumerate()
        .map(|(i, ok)| {
            json!({"agent": "woody", "kind": "shell", "id": format!("run-{i}"),
                   "command": "bun bots/woody/chop.ts --pass h\u{e9}llo-Secr3t-xyz",
                   "cwd": "/work", "ok": ok, "duration_ms": 60000,
                   "output": format!("{}Error: wrong password h\u{fffd}llo-Secr3t-xyz\n", printed_password())})
        })
        .collect();
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));

    let stored = lib.stored_bytes();
    assert!(contains(&stored, "logged in with"), "the output was stored");
    assert!(
        !contains(&stored, PASSWORD_TAIL),
        "the library holds the password"
    );
    let skills = lib.ok(&["skills", "--json"]);
    assert!(skills.contains("woody/chop"), "{skills}");
    assert!(!skills.contains(PASSWORD_TAIL), "{skills}");
    let shown = lib.ok(&["skill", "show", "woody/chop", "--json"]);
    assert!(!shown.contains(PASSWORD_TAIL), "{shown}");
}

#[test]
fn in_relay_mode_a_latin1_bot_env_password_reaches_no_spool_file() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    std::fs::write(
        bots.join("bot.env"),
        b"# mot de passe: \xe9t\xe9\nPASSWORD=h\xe9llo-Secr3t-xyz # set by ops\n",
    )
    .unwrap();
    let workspace = lib.workspace("buzz");
    let relay = lib.dir.path().join("relay");
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": workspace, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/buzz/chop.ts --pass h\u{e9}llo-Secr3t-xyz"},
                      "tool_use_id": "toolu_latin1", "duration_ms": 1200,
                      "tool_response": {"stdout": printed_password(), "stderr": "h\u{fffd}llo-Secr3t-xyz\n", "interrupted": false}});
    let output = lib
        .cmd()
        .args(["hook", "claude-code", "--agent", "buzz", "--relay"])
        .arg(&relay)
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
    assert!(spooled.contains("bun bots/buzz/chop.ts"), "{spooled}");
    assert!(spooled.contains("logged in with"), "{spooled}");
    for (name, bytes) in crate::util::visible_files(&relay) {
        assert!(
            !contains(&bytes, PASSWORD_TAIL),
            "{name} holds the password"
        );
    }

    // Delivered by the runner to the server: neither the server's library nor its answers nor
    // its log hold it (the dashboard's pages are read from that library).
    lib.write_script("buzz", "chop", &header_script());
    let port = crate::util::free_port();
    let log = lib.dir.path().join("serve.log");
    let mut server = lib
        .std_cmd()
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env("MINDRUNE_LOG", "debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let token = lib.ok(&["token", "issue", "buzz"]).trim().to_string();
    let delivered = lib
        .cmd()
        .args([
            "runner",
            "--once",
            "--server",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args(["--agent", "buzz", "--token", &token])
        .arg("--workspace")
        .arg(&workspace)
        .arg("--spool")
        .arg(&relay)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(delivered.status.success(), "{}", stderr(&delivered));
    let shown = lib.ok(&["skill", "show", "buzz/chop", "--json"]);
    assert!(
        shown.contains("\"runs\": 1"),
        "the run reached the server: {shown}"
    );
    assert!(!shown.contains(PASSWORD_TAIL), "{shown}");
    assert!(
        !contains(&lib.stored_bytes(), PASSWORD_TAIL),
        "the server's library"
    );
    assert!(
        !contains(&std::fs::read(&log).unwrap(), PASSWORD_TAIL),
        "the server's log"
    );
}

/// Replaces the agent's `bot.env` with a folder of that name: there, but not readable as a file
/// (for root too, whom a `chmod 000` would not stop).
fn unreadable_bot_env(bots: &std::path::Path) {
    std::fs::remove_file(bots.join("bot.env")).unwrap();
    std::fs::create_dir(bots.join("bot.env")).unwrap();
}

fn assert_names_the_unreadable_bot_env(err: &str, bot: &str) {
    assert!(
        err.contains(&format!("cannot read bots/{bot}/bot.env"))
            && err.contains(&format!(
                "MindRune will not record {bot}'s runs until it can read it to scrub the bot's password"
            ))
            && err.contains("or remove it"),
        "{err}"
    );
}

#[test]
fn a_bot_env_that_cannot_be_read_refuses_the_run_and_stores_nothing_of_it() {
    let lib = TestLibrary::new();
    let bots = lib.agent("woody", "ada");
    unreadable_bot_env(&bots);
    lib.write_script("woody", "chop", &header_script());
    let output = lib.record(&[json!({"agent": "woody", "kind": "shell",
        "command": "bun bots/woody/chop.ts --pass pw-woody-s3cret77",
        "cwd": "/work", "ok": true, "duration_ms": 60000,
        "output": "logged in with pw-woody-s3cret77\n"})]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let answer = format!("{}{}", crate::util::stdout(&output), stderr(&output));
    assert_names_the_unreadable_bot_env(&answer, "woody");
    let stored = lib.stored_bytes();
    assert!(!contains(&stored, "pw-woody-s3cret77"));
    assert!(!contains(&stored, "chop oaks"), "the script was stored");
    assert_eq!(lib.skills_json().as_array().map(Vec::len), Some(0));

    // The Claude Code hook refuses it the same way, never blocking: the session's first
    // failure is shown to the user as the answer's systemMessage (status 0, so it is read).
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": lib.workspace("woody"), "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/woody/chop.ts"}, "tool_use_id": "toolu_x", "duration_ms": 1200,
                      "tool_response": {"stdout": "logged in with pw-woody-s3cret77\n", "stderr": "", "interrupted": false}});
    let output = lib
        .cmd()
        .args(["hook", "claude-code", "--agent", "woody"])
        .write_stdin(post.to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_names_the_unreadable_bot_env(&stderr(&output), "woody");
    assert_names_the_unreadable_bot_env(&crate::util::stdout(&output), "woody");
    assert!(!contains(&lib.stored_bytes(), "pw-woody-s3cret77"));
    assert_eq!(lib.skills_json().as_array().map(Vec::len), Some(0));
}

#[test]
fn in_relay_mode_a_bot_env_that_cannot_be_read_keeps_the_call_out_of_the_spool() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    unreadable_bot_env(&bots);
    let workspace = lib.workspace("buzz");
    let relay = lib.dir.path().join("relay");
    let post = json!({"hook_event_name": "PostToolUse", "session_id": "s", "cwd": workspace, "tool_name": "Bash",
                      "tool_input": {"command": "bun bots/buzz/chop.ts"}, "tool_use_id": "toolu_y", "duration_ms": 1200,
                      "tool_response": {"stdout": "logged in with pw-buzz-s3cret77\n", "stderr": "", "interrupted": false}});
    let output = lib
        .cmd()
        .args(["hook", "claude-code", "--agent", "buzz", "--relay"])
        .arg(&relay)
        .env("CLAUDE_PROJECT_DIR", &workspace)
        .write_stdin(post.to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_names_the_unreadable_bot_env(&stderr(&output), "buzz");
    assert_names_the_unreadable_bot_env(&crate::util::stdout(&output), "buzz");
    let inbox = crate::util::visible_files(&relay.join("inbox"));
    assert!(inbox.is_empty(), "{:?}", inbox.keys());
    for (name, bytes) in crate::util::visible_files(&relay) {
        assert!(
            !contains(&bytes, "pw-buzz-s3cret77"),
            "{name} holds the call"
        );
    }
}
