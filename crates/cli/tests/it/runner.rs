//! `mindrune runner` end to end: the real server, the real hook in relay mode and the real
//! runner, on real files — runs recorded exactly once, a sibling's family-skills/ written, the
//! bot's password kept on the machine, and every event delivered exactly once through a
//! server killed (SIGKILL) in the middle of delivery: one runner's spooled backlog, and eight
//! runners of two owners fed without pause while the server is killed at random moments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::util::{Rng, Server, TestLibrary, contains, free_port, stderr, visible_files, wait_for};

/// One test's family: a library, its agents, one spool per agent, and the server's URL.
struct Setup {
    lib: TestLibrary,
    port: u16,
}

impl Setup {
    fn new(agents: &[&str]) -> Setup {
        let lib = TestLibrary::new();
        for agent in agents {
            lib.agent(agent, "ada");
        }
        Setup {
            lib,
            port: free_port(),
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn spool(&self, agent: &str) -> PathBuf {
        self.lib.dir.path().join("spool").join(agent)
    }

    fn token(&self, agent: &str) -> String {
        self.lib.ok(&["token", "issue", agent]).trim().to_string()
    }

    /// One Claude Code hook call through the hook in relay mode, with no library in reach.
    fn hook(&self, agent: &str, input: &serde_json::Value) -> Output {
        let mut cmd = self.lib.cmd();
        cmd.env("MINDRUNE_HOME", self.lib.dir.path().join("no-library-here"))
            .args(["hook", "claude-code", "--agent", agent, "--relay"])
            .arg(self.spool(agent))
            .write_stdin(input.to_string());
        let output = cmd.output().unwrap();
        assert!(output.status.success(), "hook failed: {}", stderr(&output));
        output
    }

    /// A shell call of `bun bots/<agent>/<name>.ts`, seen by `PreToolUse` and `PostToolUse`.
    fn run_script(&self, agent: &str, name: &str, id: &str, output: &str) {
        let mut call = json!({"session_id": "s1", "cwd": "/work", "tool_name": "Bash", "tool_use_id": id,
                              "tool_input": {"command": format!("bun bots/{agent}/{name}.ts 2>&1 | tail -20")}});
        call["hook_event_name"] = json!("PreToolUse");
        self.hook(agent, &call);
        self.post(agent, name, id, output);
    }

    /// A run as Claude Code reports it in the checkout: `PreToolUse` and `PostToolUse` with
    /// the project's folder in `CLAUDE_PROJECT_DIR`, so the hook keeps the code that ran.
    fn run_script_in_project(&self, agent: &str, name: &str, id: &str) {
        let project = self.lib.workspace(agent);
        let mut call = json!({"session_id": "s1", "cwd": project, "tool_name": "Bash", "tool_use_id": id,
                              "tool_input": {"command": format!("bun bots/{agent}/{name}.ts")},
                              "tool_response": {"stdout": "done\n", "stderr": "", "interrupted": false}});
        for event in ["PreToolUse", "PostToolUse"] {
            call["hook_event_name"] = json!(event);
            let output = self
                .lib
                .cmd()
                .env("MINDRUNE_HOME", self.lib.dir.path().join("no-library-here"))
                .env("CLAUDE_PROJECT_DIR", &project)
                .args(["hook", "claude-code", "--agent", agent, "--relay"])
                .arg(self.spool(agent))
                .write_stdin(call.to_string())
                .output()
                .unwrap();
            assert!(output.status.success(), "hook failed: {}", stderr(&output));
        }
    }

    /// Only the `PostToolUse` of a call.
    fn post(&self, agent: &str, name: &str, id: &str, output: &str) {
        let call = json!({"hook_event_name": "PostToolUse", "session_id": "s1", "cwd": "/work", "tool_name": "Bash",
                          "tool_use_id": id, "tool_input": {"command": format!("bun bots/{agent}/{name}.ts")},
                          "tool_response": {"stdout": output, "stderr": "", "interrupted": false}});
        self.hook(agent, &call);
    }

    fn stop(&self, agent: &str) {
        self.hook(
            agent,
            &json!({"hook_event_name": "Stop", "session_id": "s1"}),
        );
    }

    fn runner_args(&self, agent: &str, token: &str) -> Vec<String> {
        let workspace = self.lib.workspace(agent);
        [
            "runner",
            "--server",
            &self.url(),
            "--token",
            token,
            "--agent",
            agent,
            "--workspace",
            workspace.to_str().unwrap(),
            "--spool",
            self.spool(agent).to_str().unwrap(),
        ]
        .map(str::to_string)
        .to_vec()
    }

    fn runner_once(&self, agent: &str, token: &str, extra: &[&str]) -> Output {
        self.lib
            .cmd()
            .args(self.runner_args(agent, token))
            .arg("--once")
            .args(extra)
            .output()
            .unwrap()
    }

    /// A long-running runner, its log in `runner-<agent>.log`.
    fn runner(&self, agent: &str, token: &str, extra: &[&str]) -> Child {
        let log = std::fs::File::create(self.log_path(agent)).unwrap();
        self.lib
            .std_cmd()
            .env("MINDRUNE_LOG", "info")
            .env("NO_COLOR", "1")
            .args(self.runner_args(agent, token))
            .args(extra)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn log_path(&self, agent: &str) -> PathBuf {
        self.lib.dir.path().join(format!("runner-{agent}.log"))
    }

    fn log(&self, agent: &str) -> String {
        std::fs::read_to_string(self.log_path(agent)).unwrap_or_default()
    }

    fn count(&self, agent: &str, folder: &str) -> usize {
        items(&self.spool(agent).join(folder))
    }
}

/// The spool items in a folder (hidden temp files and `.error.txt` notes left out).
fn items(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    !name.starts_with('.') && name.ends_with(".json")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Asks a long-running runner to stop (SIGTERM) and expects a clean exit.
fn terminate(mut child: Child) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(
                status.success(),
                "the runner exits cleanly on SIGTERM: {status}"
            );
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the runner did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn runs(lib: &TestLibrary, skill: &str) -> i64 {
    lib.skill_json(skill)["versions"][0]["runs"]
        .as_i64()
        .unwrap()
}

fn headed(name: &str, body: &str) -> String {
    format!("/** @skill {name}\n * Goal: chop oaks and bank the logs\n */\n{body}")
}

const PICKLES_PASSWORD: &str = "pw-pickles-s3cret77";

#[test]
fn a_runner_delivers_each_run_once_and_writes_a_sibling_s_family_skills() {
    let s = Setup::new(&["pickles", "buzz"]);
    let lib = &s.lib;
    // The bot's password sits in the script, its output and its lab log: none of it may
    // reach the server.
    lib.write_script(
        "pickles",
        "chop",
        &headed(
            "chop",
            &format!(
                "import {{ runScript }} from '../../sdk/runner';\n// logs in as pickles / {PICKLES_PASSWORD}\nawait runScript(async ({{ bot }}) => {{\n  await bot.chop(7);\n}});\n"
            ),
        ),
    );
    std::fs::write(
        lib.workspace("pickles").join("bots/pickles/lab_log.md"),
        format!("# pickles\nShare: oaks regrow in a minute\npassword {PICKLES_PASSWORD}\n"),
    )
    .unwrap();
    let _server = Server::start(lib, s.port);
    let pickles = s.token("pickles");
    let buzz = s.token("buzz");

    for n in 1..=5 {
        s.run_script(
            "pickles",
            "chop",
            &format!("toolu_{n}"),
            &format!("logged in with {PICKLES_PASSWORD}\n── State ──\nXP: Woodcutting +250\n"),
        );
    }
    // Claude Code fired one PostToolUse twice: the same call, so the same event id.
    s.post("pickles", "chop", "toolu_3", "again");
    s.stop("pickles");
    assert_eq!(s.count("pickles", "inbox"), 7);
    assert!(
        !lib.dir.path().join("no-library-here").exists(),
        "the hook in relay mode needs no library"
    );

    let output = s.runner_once("pickles", &pickles, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(s.count("pickles", "inbox"), 0);
    assert_eq!(s.count("pickles", "outbox"), 0);
    assert_eq!(s.count("pickles", "rejected"), 0);
    assert_eq!(
        runs(lib, "pickles/chop"),
        5,
        "each call counted exactly once"
    );

    // Delivered already: a second pass sends nothing and counts nothing.
    let output = s.runner_once("pickles", &pickles, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(runs(lib, "pickles/chop"), 5);

    // The sibling's turn ends: its runner writes family-skills/ from the server's answer.
    s.stop("buzz");
    let output = s.runner_once("buzz", &buzz, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let mirror = visible_files(&lib.workspace("buzz").join("family-skills"));
    assert_eq!(
        mirror.keys().collect::<Vec<_>>(),
        ["INDEX.md", "LESSONS.md", "pickles/chop.ts"],
        "the proven, headed skill is buzz's family skill now"
    );
    let mirrored = String::from_utf8(mirror["pickles/chop.ts"].clone()).unwrap();
    assert!(mirrored.contains("await bot.chop(7);"), "{mirrored}");
    assert!(mirrored.contains(" * From: pickles/chop\n"), "{mirrored}");
    let lessons = String::from_utf8(mirror["LESSONS.md"].clone()).unwrap();
    assert!(lessons.contains("oaks regrow in a minute"), "{lessons}");

    // The password never left the machine: not in the library, not in anything mirrored.
    let stored = lib.stored_bytes();
    assert!(
        !contains(&stored, PICKLES_PASSWORD),
        "the bot's password reached the library"
    );
    assert!(
        !mirror
            .values()
            .any(|bytes| contains(bytes, PICKLES_PASSWORD))
    );
}

#[test]
fn every_event_is_stored_exactly_once_through_a_server_killed_mid_delivery() {
    const EVENTS: usize = 200;
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    lib.write_script("buzz", "fish", "await bot.fish();\n");
    // The token is issued while no server runs: the library is all it needs.
    let token = s.token("buzz");
    for n in 0..EVENTS {
        s.post(
            "buzz",
            "fish",
            &format!("toolu_f{n}"),
            "── State ──\nXP: Fishing +10\n",
        );
    }
    assert_eq!(s.count("buzz", "inbox"), EVENTS);

    // The runner starts while the server is down: everything moves to the outbox and waits.
    // Batches of 20, so a kill right after one batch's answer lands while the next one is
    // being stored: part of it stored, no answer, all of it sent again.
    let runner = s.runner("buzz", &token, &["--max-batch", "20"]);
    wait_for(
        Duration::from_secs(60),
        "the inbox to move to the outbox",
        || s.count("buzz", "inbox") == 0 && s.count("buzz", "outbox") == EVENTS,
    );

    // Up to three times: the server starts, delivers some, and is killed without warning.
    // The first kill comes while the runner deletes a delivered batch (between two requests);
    // the later ones a few milliseconds after, when the next batch is on the server, part of
    // it stored and no answer sent: the runner sends all of it again.
    let mut left_at_kills = Vec::new();
    for (round, delay_ms) in [(1, 0), (2, 3), (3, 6)] {
        let server = Server::start(lib, s.port);
        let target = EVENTS - 45 * round;
        wait_for(Duration::from_secs(60), "delivery to go on", || {
            s.count("buzz", "outbox") <= target
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        server.kill_hard();
        // A batch answered just before the kill may still be being deleted from the outbox.
        std::thread::sleep(Duration::from_millis(100));
        let left_at_kill = s.count("buzz", "outbox");
        if left_at_kill == 0 {
            // The server was faster than the kill this time; the first kill still counts.
            break;
        }
        // Nothing goes while the server is down.
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            s.count("buzz", "outbox"),
            left_at_kill,
            "nothing leaves the outbox while the server is down"
        );
        left_at_kills.push(left_at_kill);
    }
    assert!(
        left_at_kills
            .first()
            .is_some_and(|&left| left > 0 && left < EVENTS),
        "the first kill came in the middle of delivery: {left_at_kills:?}"
    );

    let _server = Server::start(lib, s.port);
    wait_for(Duration::from_secs(120), "the outbox to empty", || {
        s.count("buzz", "outbox") == 0
    });
    terminate(runner);

    assert_eq!(s.count("buzz", "rejected"), 0, "{}", s.log("buzz"));
    assert_eq!(
        runs(lib, "buzz/fish"),
        EVENTS as i64,
        "every event stored exactly once — none lost, none twice"
    );
    let log = s.log("buzz");
    assert!(log.contains("the server is away"), "{log}");
    assert!(log.contains("the server answers again"), "{log}");
    // What the run went through, for `--nocapture`.
    let duplicates: usize = log
        .split("duplicate=")
        .skip(1)
        .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
        .sum();
    eprintln!(
        "fault test: {left_at_kills:?} of {EVENTS} events still spooled at each kill; {duplicates} sent again after a lost answer and recognised as stored"
    );
}

#[test]
fn a_new_session_starts_from_a_fresh_family_view_after_a_sibling_shared_mid_session() {
    let s = Setup::new(&["pickles", "buzz"]);
    let lib = &s.lib;
    let _server = Server::start(lib, s.port);
    let pickles = s.token("pickles");
    let buzz = s.token("buzz");
    let mirror = lib.workspace("buzz").join("family-skills");
    // buzz's runner runs all along; its view is written at its start: nothing shared yet.
    let runner = s.runner("buzz", &buzz, &[]);
    wait_for(Duration::from_secs(30), "buzz's first view", || {
        visible_files(&mirror).contains_key("INDEX.md")
    });
    assert!(!visible_files(&mirror).contains_key("pickles/chop.ts"));

    // Meanwhile pickles' headed script proves itself and becomes a family skill.
    lib.write_script("pickles", "chop", &headed("chop", "await bot.chop(7);\n"));
    for n in 1..=5 {
        s.run_script(
            "pickles",
            "chop",
            &format!("toolu_p{n}"),
            "── State ──\nXP: Woodcutting +250\n",
        );
    }
    s.stop("pickles");
    let output = s.runner_once("pickles", &pickles, &[]);
    assert!(output.status.success(), "{}", stderr(&output));

    // buzz's new session: its SessionStart hook has the runner bring the view up to date
    // before the agent's first call, and hands over the instructions.
    let started = s.hook(
        "buzz",
        &json!({"hook_event_name": "SessionStart", "session_id": "s2", "source": "startup"}),
    );
    terminate(runner);
    let answer: serde_json::Value = serde_json::from_slice(&started.stdout).unwrap();
    assert!(answer.get("systemMessage").is_none(), "{answer}");
    assert!(
        answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("@skill"),
        "{answer}"
    );
    assert!(
        visible_files(&mirror).contains_key("pickles/chop.ts"),
        "the sibling's new family skill is in the view the session starts from"
    );
}

#[test]
fn a_hook_failure_on_the_avatar_s_machine_reaches_the_operator_through_its_runner() {
    let s = Setup::new(&["buzz"]);
    let _server = Server::start(&s.lib, s.port);
    let token = s.token("buzz");
    // A payload the hook cannot read, in relay mode: noted in the relay folder.
    let output = s
        .lib
        .cmd()
        .env("MINDRUNE_HOME", s.lib.dir.path().join("no-library-here"))
        .args(["hook", "claude-code", "--agent", "buzz", "--relay"])
        .arg(s.spool("buzz"))
        .write_stdin("{not json")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "never blocking: {}",
        stderr(&output)
    );
    assert!(s.spool("buzz").join("hook-failures.jsonl").exists());
    let output = s.runner_once("buzz", &token, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let operator = s.lib.ok(&["token", "operator"]).trim().to_string();
    let metrics = ureq::get(format!("{}/metrics", s.url()))
        .header("Authorization", &format!("Bearer {operator}"))
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    assert!(
        metrics.contains("mindrune_hook_failures{agent=\"buzz\"} 1"),
        "{metrics}"
    );
}

#[test]
fn a_relayed_session_start_with_no_runner_says_the_view_may_be_stale() {
    let s = Setup::new(&["buzz"]);
    let started = s.hook(
        "buzz",
        &json!({"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"}),
    );
    let answer: serde_json::Value = serde_json::from_slice(&started.stdout).unwrap();
    let message = answer["systemMessage"].as_str().unwrap();
    assert!(
        message.contains("did not bring family-skills/ up to date within 10 s"),
        "{message}"
    );
    assert!(
        answer["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("has not started yet"),
        "{answer}"
    );
}

#[test]
fn a_runner_started_while_the_server_is_down_empties_family_skills_then_fills_it() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    let mirror = lib.workspace("buzz").join("family-skills");
    std::fs::create_dir_all(mirror.join("pickles")).unwrap();
    std::fs::write(mirror.join("INDEX.md"), "stale index\n").unwrap();
    std::fs::write(mirror.join("pickles/old.ts"), "// no longer shared\n").unwrap();
    let token = s.token("buzz");

    let runner = s.runner("buzz", &token, &[]);
    wait_for(
        Duration::from_secs(30),
        "family-skills/ to be emptied",
        || visible_files(&mirror).is_empty(),
    );
    assert!(mirror.is_dir(), "emptied, not removed");

    // The server comes: the start goes through and family-skills/ is written.
    let _server = Server::start(lib, s.port);
    wait_for(
        Duration::from_secs(30),
        "family-skills/ to be written",
        || visible_files(&mirror).contains_key("INDEX.md"),
    );
    terminate(runner);
    let files = visible_files(&mirror);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["INDEX.md", "LESSONS.md"]);
    assert!(!contains(&files["INDEX.md"], "stale"));
    let log = s.log("buzz");
    assert!(log.contains("better empty than stale"), "{log}");
    assert!(log.contains("marked the agent's start"), "{log}");
}

#[test]
fn refused_items_go_to_rejected_with_the_reason_and_are_not_retried() {
    let s = Setup::new(&["buzz", "pickles"]);
    let lib = &s.lib;
    lib.write_script("buzz", "fish", "await bot.fish();\n");
    let _server = Server::start(lib, s.port);
    let token = s.token("buzz");
    // execute_code with another bot's script: the server refuses that one event.
    s.hook(
        "buzz",
        &json!({"hook_event_name": "PostToolUse", "cwd": "/work", "tool_name": "mcp__rs-agent-bot__execute_code",
                "tool_use_id": "toolu_x", "tool_input": {"bot_name": "buzz", "script": "bots/pickles/steal.ts"},
                "tool_response": [{"type": "text", "text": "done"}]}),
    );
    s.post("buzz", "fish", "toolu_ok", "fine");
    // Something that is no hook's item lands in the inbox.
    std::fs::write(
        s.spool("buzz")
            .join("inbox")
            .join("9999999999999-0000000001-000000-event.json"),
        "{not json",
    )
    .unwrap();

    let output = s.runner_once("buzz", &token, &[]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "--once says in its status that it could not deliver everything: {}",
        stderr(&output)
    );
    assert_eq!(s.count("buzz", "outbox"), 0);
    assert_eq!(s.count("buzz", "rejected"), 2);
    assert_eq!(
        runs(lib, "buzz/fish"),
        1,
        "the good event went through beside the bad ones"
    );
    let notes: String = std::fs::read_dir(s.spool("buzz").join("rejected"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".error.txt"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(notes.contains("pickles"), "{notes}");
    assert!(
        notes.contains("not an event of the event contract"),
        "{notes}"
    );
    assert!(stderr(&output).contains("refused"), "{}", stderr(&output));

    assert!(
        stderr(&output).contains("the server refused 2 items;"),
        "{}",
        stderr(&output)
    );

    // Run again: nothing is retried, and with nothing refused this time the status is 0.
    let output = s.runner_once("buzz", &token, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(s.count("buzz", "rejected"), 2);
}

#[test]
fn a_refused_token_stops_the_runner_and_keeps_the_spool() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    lib.write_script("buzz", "fish", "await bot.fish();\n");
    let _server = Server::start(lib, s.port);
    s.post("buzz", "fish", "toolu_1", "fine");
    let output = s.runner_once("buzz", "mr_runner_bogus", &[]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(text.contains("refused the runner token"), "{text}");
    assert!(text.contains("mindrune token issue buzz"), "{text}");
    assert_eq!(
        s.count("buzz", "inbox") + s.count("buzz", "outbox"),
        1,
        "what was spooled stays spooled"
    );
    // Another avatar's token is refused before anything is sent.
    lib.agent("pickles", "ada");
    let pickles = s.token("pickles");
    let output = s.runner_once("buzz", &pickles, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("token is for agent `pickles`"),
        "{}",
        stderr(&output)
    );
    assert_eq!(s.count("buzz", "inbox") + s.count("buzz", "outbox"), 1);
}

#[test]
fn a_relayed_run_is_filed_under_the_code_that_ran_though_the_file_changed_before_delivery() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    lib.write_script("buzz", "fish", "await bot.fish(1);\n");
    let _server = Server::start(lib, s.port);
    let token = s.token("buzz");
    // The first run of v1, delivered: v1 is in the library.
    s.run_script_in_project("buzz", "fish", "toolu_v1a");
    assert!(s.runner_once("buzz", &token, &[]).status.success());
    // The second run of v1; the file is edited before the runner delivers it.
    s.run_script_in_project("buzz", "fish", "toolu_v1b");
    lib.write_script("buzz", "fish", "await bot.fish(2);\n");
    let output = s.runner_once("buzz", &token, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    let skill: serde_json::Value =
        serde_json::from_str(&lib.ok(&["skill", "show", "buzz/fish", "--json"])).unwrap();
    let versions = skill["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "no run of the edit yet: {skill:#}");
    assert_eq!(versions[0]["runs"], 2, "{skill:#}");
}

#[test]
fn runner_once_against_a_server_that_is_away_exits_1_instead_of_waiting() {
    let s = Setup::new(&["buzz"]);
    // No server on the port: the spooled call stays, and the runner says so and stops.
    s.post("buzz", "fish", "toolu_away", "fine");
    let output = s
        .lib
        .cmd()
        .args(s.runner_args("buzz", "mr_runner_any"))
        .arg("--once")
        // Generous: the runner gives up after its connect timeout (5 s); a hang fails here.
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains(&s.url()), "names the server: {text}");
    assert!(text.contains("1 item stays"), "{text}");
    assert_eq!(s.count("buzz", "inbox") + s.count("buzz", "outbox"), 1);
}

#[test]
fn runner_once_checks_its_token_first_even_with_nothing_spooled() {
    let s = Setup::new(&["buzz"]);
    let _server = Server::start(&s.lib, s.port);
    let output = s.runner_once("buzz", "mr_runner_bogus", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("refused the runner token"), "{text}");
    assert!(text.contains("mindrune token issue buzz"), "{text}");
    // The good token, with nothing spooled: nothing to deliver, status 0.
    let token = s.token("buzz");
    let output = s.runner_once("buzz", &token, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
}

#[test]
fn runner_once_with_a_bad_token_leaves_the_inbox_as_it_was() {
    let s = Setup::new(&["buzz"]);
    s.lib.write_script("buzz", "fish", "await bot.fish();\n");
    let _server = Server::start(&s.lib, s.port);
    s.post("buzz", "fish", "toolu_1", "fine");
    let inbox = s.count("buzz", "inbox") + s.count("buzz", "outbox");
    assert!(inbox > 0);
    let output = s.runner_once("buzz", "mr_runner_bogus", &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        (s.count("buzz", "inbox"), s.count("buzz", "outbox")),
        (inbox, 0),
        "a refused token is found before the inbox is taken"
    );
}

#[test]
fn the_avatar_s_game_state_reaches_the_dashboard_s_library() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    let _server = Server::start(lib, s.port);
    let token = s.token("buzz");
    let state = lib.dir.path().join("state.json");
    std::fs::write(
        &state,
        json!({"tick": 5, "skills": [{"name": "Woodcutting", "level": 17, "baseLevel": 15, "experience": 2500}],
               "inventory": [{"slot": 0, "name": "Coins", "count": 321}], "equipment": [{"slot": 3, "name": "Bronze sword", "count": 1}],
               "bank": {"isOpen": false, "items": []}})
        .to_string(),
    )
    .unwrap();
    let output = s.runner_once("buzz", &token, &["--state-file", state.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stored = lib.stored_bytes();
    assert!(contains(&stored, "\"Woodcutting\":15"));
    assert!(contains(&stored, "\"xp\":{\"Woodcutting\":2500}"));
    assert!(contains(&stored, "Bronze sword"));
    assert!(contains(&stored, "\"wealth\":321"));
}

#[test]
fn without_hooks_a_changed_bot_folder_marks_a_turn_end_by_itself() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    let _server = Server::start(lib, s.port);
    let token = s.token("buzz");
    let runner = s.runner("buzz", &token, &["--turn-every", "1"]);
    wait_for(Duration::from_secs(30), "the start", || {
        s.log("buzz").contains("marked the agent's start")
    });
    // Nothing changed: no turn is marked.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !s.log("buzz").contains("marking a turn end"),
        "{}",
        s.log("buzz")
    );
    // The agent writes its lab log: a turn end follows within about a second.
    std::fs::write(
        lib.workspace("buzz").join("bots/buzz/lab_log.md"),
        "Share: the Lumbridge bank is upstairs\n",
    )
    .unwrap();
    wait_for(Duration::from_secs(30), "a turn end", || {
        s.log("buzz").contains("delivered a turn end")
    });
    terminate(runner);
    assert!(s.log("buzz").contains("marking a turn end"));
    // The lesson reached the library: a sibling added now sees it in its family-skills/.
    lib.agent("pickles", "ada");
    lib.ok(&["mirror", "pickles"]);
    let lessons =
        std::fs::read_to_string(lib.workspace("pickles").join("family-skills/LESSONS.md")).unwrap();
    assert!(
        lessons.contains("the Lumbridge bank is upstairs"),
        "{lessons}"
    );
}

/// Long-running runners, killed when dropped (a failing test leaves no process behind).
struct Runners(Vec<Child>);

impl Drop for Runners {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Raises a flag when dropped: the feeders stop even when the test fails between.
struct RaiseOnDrop<'a>(&'a AtomicBool);

impl Drop for RaiseOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Eight real runners for the avatars of two owners, each fed tool calls without pause
/// through the real hook in relay mode (now and then a turn end, now and then a call whose
/// hook fired twice), while the real server is SIGKILLed at random moments and restarted on
/// the same port and library two or three times. Once the spools drain, every call written to
/// a spool is stored exactly once, under its own avatar, and nothing is left behind. The two
/// owners' avatars use the same tool-call ids: an id is a retry only within its own family.
#[expect(
    clippy::too_many_lines,
    reason = "one load story: runners, server kills and the exactly-once audit, in order"
)]
#[test]
fn eight_runners_under_load_deliver_every_event_exactly_once_through_server_kills() {
    const RUNNERS: usize = 8;
    let seed = crate::util::fault_seed("runners through server kills");
    let mut rng = Rng(seed);
    let s = Setup::new(&[]);
    let lib = &s.lib;
    lib.ok(&["owner", "add", "bob"]);
    // (avatar, owner, its number within the family: the prefix of its tool-call ids).
    let agents: Vec<(String, &str, usize)> = (0..RUNNERS)
        .map(|i| {
            let owner = if i % 2 == 0 { "ada" } else { "bob" };
            (format!("{owner}{}", i / 2), owner, i / 2)
        })
        .collect();
    for (agent, owner, _) in &agents {
        lib.agent(agent, owner);
        lib.write_script(agent, "fish", "await bot.fish();\n");
    }
    let tokens: Vec<String> = agents.iter().map(|(agent, ..)| s.token(agent)).collect();
    let spooled = |folder: &str| -> usize {
        agents
            .iter()
            .map(|(agent, ..)| s.count(agent, folder))
            .sum()
    };

    let mut server = Some(Server::start(lib, s.port));
    // Small batches: more requests, so more kills land while a batch is half stored.
    let mut runners = Runners(
        agents
            .iter()
            .zip(&tokens)
            .map(|((agent, ..), token)| s.runner(agent, token, &["--max-batch", "5"]))
            .collect(),
    );

    let started = Instant::now();
    let stop = AtomicBool::new(false);
    let (kills, written) = std::thread::scope(|scope| {
        let _stop_feeding = RaiseOnDrop(&stop);
        let feeders: Vec<_> = agents
            .iter()
            .enumerate()
            .map(|(i, (agent, _, number))| {
                let mut rng =
                    Rng((seed ^ 0x9e37_79b9_7f4a_7c15_u64.wrapping_mul(i as u64 + 1)) | 1);
                let (s, stop) = (&s, &stop);
                scope.spawn(move || {
                    let (mut ids, mut twice): (Vec<String>, usize) = (Vec::new(), 0);
                    while !stop.load(Ordering::Relaxed) {
                        let id = format!("toolu_{number}_{}", ids.len());
                        s.post(agent, "fish", &id, "── State ──\nXP: Fishing +10\n");
                        ids.push(id);
                        match rng.below(16) {
                            0 => s.stop(agent),
                            1 => {
                                let again = &ids[rng.below(ids.len() as u64) as usize];
                                s.post(agent, "fish", again, "the hook fired twice");
                                twice += 1;
                            }
                            _ => {}
                        }
                        std::thread::sleep(Duration::from_millis(rng.below(20)));
                    }
                    (ids, twice)
                })
            })
            .collect();

        // Two or three kills, each after the server served a random while, each followed by
        // a random while without a server. Items pending at each kill are noted.
        let mut kills = Vec::new();
        for _ in 0..2 + rng.below(2) {
            std::thread::sleep(Duration::from_millis(400 + rng.below(1200)));
            let pending = spooled("inbox") + spooled("outbox");
            server.take().unwrap().kill_hard();
            kills.push(pending);
            std::thread::sleep(Duration::from_millis(50 + rng.below(450)));
            server = Some(Server::start(lib, s.port));
        }
        // The load goes on a little while after the last restart, then stops.
        std::thread::sleep(Duration::from_millis(300 + rng.below(700)));
        stop.store(true, Ordering::Relaxed);
        let written: Vec<(Vec<String>, usize)> =
            feeders.into_iter().map(|f| f.join().unwrap()).collect();
        (kills, written)
    });
    let fed = started.elapsed();

    wait_for(Duration::from_secs(60), "every spool to drain", || {
        spooled("inbox") == 0 && spooled("outbox") == 0
    });
    let drained = started.elapsed();
    for child in std::mem::take(&mut runners.0) {
        terminate(child);
    }
    drop(server);
    for (agent, ..) in &agents {
        assert_eq!(s.count(agent, "rejected"), 0, "{agent}: {}", s.log(agent));
        assert_eq!(s.count(agent, "inbox") + s.count(agent, "outbox"), 0);
    }

    // What the library holds: each (owner, event id) with the avatars it was stored for.
    let db = lib.home().join("library.db");
    let conn = rusqlite::Connection::open_with_flags(
        &db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    let mut stored: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut statement = conn
        .prepare(
            "SELECT o.name, u.event_id, a.name FROM uses u
             JOIN owners o ON o.owner_id = u.owner_id
             LEFT JOIN agents a ON a.agent_id = u.agent_id",
        )
        .unwrap();
    let rows = statement
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, Option<String>>(1)?,
                row.get::<_, Option<String>>(2)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (owner, event, agent) = row.unwrap();
        stored
            .entry((owner, event.unwrap_or_default()))
            .or_default()
            .push(agent.unwrap_or_default());
    }
    let mut expected: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for ((agent, owner, _), (ids, _)) in agents.iter().zip(&written) {
        for id in ids {
            let previous = expected.insert(
                (owner.to_string(), format!("claude-code:{id}")),
                vec![agent.clone()],
            );
            assert!(previous.is_none(), "the test gave {id} twice");
        }
    }
    let events = expected.len();
    let lost: Vec<_> = expected
        .keys()
        .filter(|k| !stored.contains_key(k))
        .collect();
    let twice: Vec<_> = stored
        .iter()
        .filter(|(_, agents)| agents.len() > 1)
        .collect();
    let stray: Vec<_> = stored
        .keys()
        .filter(|k| !expected.contains_key(k))
        .collect();
    assert!(
        lost.is_empty() && twice.is_empty() && stray.is_empty(),
        "seed {seed}: {} of {events} events lost {lost:?}; stored twice {twice:?}; stored but never spooled {stray:?}",
        lost.len()
    );
    assert_eq!(
        stored, expected,
        "seed {seed}: each event under its own avatar"
    );

    // The kills came mid-load: the feeders were writing throughout, and the runners met a
    // server that was away.
    assert!(kills.len() >= 2);
    let away = agents
        .iter()
        .filter(|(agent, ..)| s.log(agent).contains("the server is away"))
        .count();
    assert!(away > 0, "no runner noticed a kill: {kills:?}");
    // Every call a hook sent twice is answered `duplicate` once; the rest of the duplicates
    // are batches sent again after the kill took their answer.
    let twice: usize = written.iter().map(|(_, twice)| twice).sum();
    let duplicates: usize = agents
        .iter()
        .map(|(agent, ..)| {
            s.log(agent)
                .split("duplicate=")
                .skip(1)
                .filter_map(|rest| rest.split(' ').next()?.parse::<usize>().ok())
                .sum::<usize>()
        })
        .sum();
    eprintln!(
        "runner faults: {events} events by {RUNNERS} runners in {:.1} s, {} kills with {kills:?} items spooled at each; \
         {away} runners found the server away; {} events sent again after a lost answer and recognised as stored \
         (beside {twice} calls whose hook fired twice); drained after {:.1} s",
        fed.as_secs_f64(),
        kills.len(),
        duplicates.saturating_sub(twice),
        drained.as_secs_f64()
    );
}

#[test]
fn a_bot_env_that_cannot_be_read_holds_the_runner_s_inbox_until_it_can() {
    let s = Setup::new(&["buzz"]);
    let lib = &s.lib;
    lib.write_script("buzz", "chop", &headed("chop", "await bot.chop(1);\n"));
    let _server = Server::start(lib, s.port);
    let token = s.token("buzz");
    s.run_script(
        "buzz",
        "chop",
        "toolu_1",
        "logged in with pw-buzz-s3cret77\n",
    );
    assert_eq!(s.count("buzz", "inbox"), 1);

    // bot.env turns into something that cannot be read: the waiting call is not sent.
    let env = lib.workspace("buzz").join("bots/buzz/bot.env");
    let kept = std::fs::read(&env).unwrap();
    std::fs::remove_file(&env).unwrap();
    std::fs::create_dir(&env).unwrap();
    let output = s.runner_once("buzz", &token, &[]);
    let said = stderr(&output);
    assert!(
        said.contains("cannot read bots/buzz/bot.env") && said.contains("stay in"),
        "{said}"
    );
    assert_eq!(s.count("buzz", "inbox"), 1, "the call waits in the inbox");
    assert_eq!(s.count("buzz", "outbox"), 0);
    assert_eq!(s.count("buzz", "rejected"), 0);
    assert!(!contains(&lib.stored_bytes(), "pw-buzz-s3cret77"));

    // Readable again: the call goes on, scrubbed.
    std::fs::remove_dir(&env).unwrap();
    std::fs::write(&env, kept).unwrap();
    let output = s.runner_once("buzz", &token, &[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(s.count("buzz", "inbox"), 0);
    assert_eq!(runs(lib, "buzz/chop"), 1);
    assert!(!contains(&lib.stored_bytes(), "pw-buzz-s3cret77"));
}
