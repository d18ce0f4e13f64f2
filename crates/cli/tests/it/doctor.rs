//! `mindrune doctor`: every link a face depends on, checked end to end through what setup
//! installed, with the fix named for each one that fails; and the failures a hook used to keep
//! to itself, said where a person looks.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{TestLibrary, mindrune_bin, path_without_mindrune, stderr, stdout};

/// An rs-sdk checkout wired by `setup rs-sdk` (run by `binary`), with a bot that has a script,
/// a bot.env and a wiki, and a stand-in `claude` on the PATH the doctor gets.
struct Wired {
    lib: TestLibrary,
    checkout: PathBuf,
    tools: PathBuf,
}

impl Wired {
    fn new(binary: &Path) -> Wired {
        let lib = TestLibrary {
            dir: tempfile::tempdir().unwrap(),
        };
        let root = lib.dir.path().canonicalize().unwrap();
        let checkout = root.join("rs-sdk");
        let bot = checkout.join("bots/woody");
        std::fs::create_dir_all(&bot).unwrap();
        std::fs::create_dir_all(checkout.join("wiki/skills")).unwrap();
        std::fs::write(
            checkout.join("wiki/skills/woodcutting.md"),
            "# Woodcutting\n\n| Detail | Value |\n|---|---|\n| Members | No |\n",
        )
        .unwrap();
        std::fs::write(checkout.join("claude.md"), "# rs-sdk\n").unwrap();
        std::fs::write(bot.join("chop.ts"), "await bot.chopTree();\n").unwrap();
        std::fs::write(
            bot.join("bot.env"),
            "BOT_USERNAME=woody\nPASSWORD=Tr0ub4dor-woody-77\n",
        )
        .unwrap();
        let tools = root.join("tools");
        std::fs::create_dir_all(&tools).unwrap();
        let claude = tools.join("claude");
        std::fs::write(&claude, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
        let wired = Wired {
            lib,
            checkout,
            tools,
        };
        let output = wired
            .command(binary)
            .args([
                "setup",
                "rs-sdk",
                wired.checkout.to_str().unwrap(),
                "--owner",
                "ada",
            ])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", stderr(&output));
        wired
    }

    /// `binary` with this library, PATH without the binary's folder but with the tools.
    fn command(&self, binary: &Path) -> std::process::Command {
        let mut command = std::process::Command::new(binary);
        command
            .env("MINDRUNE_HOME", self.lib.home())
            .env(
                "PATH",
                format!("{}:{}", self.tools.display(), path_without_mindrune()),
            )
            .env_remove("MINDRUNE_DATABASE_URL")
            .env_remove("MINDRUNE_SERVER")
            .env_remove("MINDRUNE_AGENT")
            .env_remove("MINDRUNE_RELAY")
            .env_remove("MINDRUNE_LOG");
        command
    }

    fn doctor(&self, extra: &[&str]) -> std::process::Output {
        self.command(Path::new(&mindrune_bin()))
            .arg("doctor")
            .arg(&self.checkout)
            .args(extra)
            .output()
            .unwrap()
    }

    /// The doctor's text with the places that change from run to run replaced.
    fn stable(&self, text: &str) -> String {
        let root = self.lib.dir.path().canonicalize().unwrap();
        let mut text = text
            .replace(&mindrune_bin(), "[MINDRUNE]")
            .replace(root.to_str().unwrap(), "[TMP]")
            .replace(env!("CARGO_PKG_VERSION"), "[VERSION]");
        // "written 3 s ago", "the last 0 s ago": ages differ from run to run.
        for unit in [" s ago", " min ago"] {
            while let Some(at) = text.find(unit) {
                let start = text[..at]
                    .rfind(|c: char| !c.is_ascii_digit())
                    .map_or(0, |i| i + 1);
                text.replace_range(start..at + unit.len(), "[AGE] ago");
            }
        }
        text
    }
}

#[test]
fn doctor_passes_on_a_checkout_setup_wired_with_the_binary_not_on_path() {
    let wired = Wired::new(Path::new(&mindrune_bin()));
    // The bot's view exists once it was written (its first session start writes it too).
    let mirror = wired
        .command(Path::new(&mindrune_bin()))
        .args(["mirror", "woody"])
        .output()
        .unwrap();
    assert!(mirror.status.success(), "{}", stderr(&mirror));
    let output = wired.doctor(&[]);
    let text = stdout(&output);
    assert!(output.status.success(), "{text}{}", stderr(&output));
    insta::assert_snapshot!("doctor_passes", wired.stable(&text));
    // Nothing was recorded by the checks: the synthetic run and write are never stored.
    let skills = wired
        .command(Path::new(&mindrune_bin()))
        .args(["skills", "--json"])
        .output()
        .unwrap();
    let skills: serde_json::Value = serde_json::from_slice(&skills.stdout).unwrap();
    assert_eq!(skills, json!([]), "the doctor recorded something");
    let index =
        std::fs::read_to_string(wired.checkout.join("bots/woody/family-skills/INDEX.md")).unwrap();
    assert!(!index.contains("doctor's probe"), "{index}");
}

#[test]
fn after_the_binary_moved_doctor_fails_naming_the_hook_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().canonicalize().unwrap().join("mindrune");
    std::fs::copy(assert_cmd::cargo::cargo_bin("mindrune"), &old).unwrap();
    let wired = Wired::new(&old);
    std::fs::remove_file(&old).unwrap();
    let output = wired.doctor(&["--json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["ok"], false);
    let hooks = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hooks")
        .unwrap();
    assert_eq!(hooks["status"], "fail");
    let detail = hooks["detail"].as_str().unwrap();
    assert!(
        detail.contains(".claude/settings.json PreToolUse runs")
            && detail.contains(old.to_str().unwrap())
            && detail.contains("exits 127"),
        "{detail}"
    );
    let fix = hooks["fix"].as_str().unwrap();
    assert!(
        fix.contains(&format!("{} setup rs-sdk", mindrune_bin())),
        "{fix}"
    );
    // The installed guard cannot run either, and the doctor says so.
    let guard = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "guard")
        .unwrap();
    assert_eq!(guard["status"], "fail");
    assert!(
        guard["detail"].as_str().unwrap().contains("exit 127"),
        "{guard}"
    );
    // Setup again with this binary mends it all.
    let again = wired
        .command(Path::new(&mindrune_bin()))
        .args([
            "setup",
            "rs-sdk",
            wired.checkout.to_str().unwrap(),
            "--owner",
            "ada",
        ])
        .output()
        .unwrap();
    assert!(again.status.success(), "{}", stderr(&again));
    let output = wired.doctor(&["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let failed: Vec<&serde_json::Value> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .collect();
    // Only the view, which no session has written yet.
    assert!(
        failed.iter().all(|c| c["name"] == "family-skills"),
        "{failed:#?}"
    );
}

#[test]
fn a_hook_that_cannot_open_its_library_tells_the_user_once_a_session_and_the_doctor_counts_it() {
    let wired = Wired::new(Path::new(&mindrune_bin()));
    let settings: serde_json::Value = serde_json::from_slice(
        &std::fs::read(wired.checkout.join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    let command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    // The library is gone (a disk unmounted, a home moved).
    std::fs::remove_file(wired.lib.home().join("library.db")).unwrap();
    let call = |id: &str| {
        let input = json!({"session_id": "5f1c", "transcript_path": "", "cwd": wired.checkout,
            "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": id,
            "tool_input": {"command": "bun bots/woody/chop.ts"},
            "tool_response": {"stdout": "done\n", "stderr": "", "interrupted": false}});
        assert_cmd::Command::new("sh")
            .args(["-c", &command])
            .current_dir(&wired.checkout)
            .env("PATH", path_without_mindrune())
            .env("CLAUDE_PROJECT_DIR", &wired.checkout)
            .env("MINDRUNE_AGENT", "woody")
            .env_remove("MINDRUNE_HOME")
            .env_remove("MINDRUNE_LOG")
            .write_stdin(input.to_string())
            .output()
            .unwrap()
    };
    let first = call("toolu_1");
    // Status 0, so Claude Code reads the answer and shows its systemMessage to the user.
    assert!(first.status.success(), "{}", stderr(&first));
    let answer: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    let message = answer["systemMessage"].as_str().unwrap();
    assert!(
        message.contains("no MindRune library at") && message.contains("mindrune doctor"),
        "{message}"
    );
    // The second failure of the session is not shown again (stderr, status 1, never blocking).
    let second = call("toolu_2");
    assert_eq!(second.status.code(), Some(1));
    assert!(second.stdout.is_empty());
    assert!(stderr(&second).contains("no MindRune library at"));
    // The doctor counts both (the library check fails too).
    let output = wired.doctor(&["--json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let failures = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "hook failures")
        .unwrap()
        .clone();
    assert_eq!(failures["status"], "fail", "{failures}");
    assert!(
        failures["detail"]
            .as_str()
            .unwrap()
            .starts_with("2 in the last 24 hours"),
        "{failures}"
    );
    // Reading the library's state made no library.
    assert!(!wired.lib.home().join("library.db").exists());
}

#[test]
fn a_bot_file_name_that_is_not_utf8_is_reported_by_the_turn_and_by_the_doctor() {
    use std::os::unix::ffi::OsStrExt as _;
    let wired = Wired::new(Path::new(&mindrune_bin()));
    let odd = std::ffi::OsStr::from_bytes(b"caf\xe9.ts");
    std::fs::write(
        wired.checkout.join("bots/woody").join(odd),
        "await bot.x();\n",
    )
    .unwrap();
    let turn = wired
        .command(Path::new(&mindrune_bin()))
        .args(["turn-end", "woody"])
        .output()
        .unwrap();
    assert!(turn.status.success(), "{}", stderr(&turn));
    assert!(
        stdout(&turn).contains("bots/woody/caf\u{FFFD}.ts: its name is not UTF-8"),
        "{}",
        stdout(&turn)
    );
    let output = wired.doctor(&[]);
    assert!(
        stdout(&output).contains("file names: woody: a name is in bots/woody/ not UTF-8"),
        "{}",
        stdout(&output)
    );
}
