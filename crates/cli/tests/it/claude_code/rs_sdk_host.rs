//! An rs-sdk-shaped checkout with two bots, wired by the real `mindrune setup rs-sdk`, driven by
//! the real Claude Code through every shape of the spec's "What counts as a run", once with the
//! library on this machine and once through `serve` and a runner (relay mode).

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::model_api::{ModelApi, Step, bash, tool};
use super::{ClaudeCode, HookCall, hook_calls, hook_recorder, skipped, tools};

const CHOP_OAKS: &str = r#"/** @skill chop-oaks
 * Goal: chop oaks west of Draynor and bank the logs
 * Preconditions: an axe, Woodcutting 15
 */
// Prints what rs-sdk's runner prints at a run's end (the later runner: `XP: Skill +N`).
const fail = process.env.CHOP_FAIL === '1';
const ms = Number(process.env.CHOP_MS ?? '0');
console.log('chopping oaks west of Draynor...');
if (ms > 0) await Bun.sleep(ms);
if (fail) {
  console.log('── Error ── StallError: no progress for 30s');
  console.log('    at chopLoop (bots/buzz/chop-oaks.ts:21:11)');
  console.log('── State ──');
  console.log('Pos (3100, 3240) lvl 3 | HP 10/10');
  console.log('XP: Woodcutting +90');
  console.log('Inv 3/28: Bronze axe, Oak logs x2');
  process.exit(1);
}
console.log('── Result ──');
console.log('{"logs":28,"banked":true}');
console.log('── State ──');
console.log('Pos (3092, 3245) lvl 3 | HP 10/10');
console.log('XP: Woodcutting +1,250, Firemaking +40');
console.log('Inv 1/28: Bronze axe');
console.log('> You deposit your oak logs.');
"#;

const CHOP_TREES: &str = r#"// woody's own script, no header.
console.log('── Result ──');
console.log('{"logs":5}');
console.log('── State ──');
console.log('Pos (3200, 3230) lvl 2 | HP 10/10');
console.log('XP: Woodcutting +125');
console.log('Inv 6/28: Bronze axe, Logs x5');
"#;

/// A stand-in for rs-sdk's MCP server (`execute_code`), as a bun script speaking MCP's stdio
/// JSON-RPC: a thrown error is an `isError` result, as rs-sdk answers it.
const MCP_RS_SDK: &str = r#"
const send = (message) => process.stdout.write(JSON.stringify(message) + '\n');
const ok = (script) => `── Execution (success, 1200ms) ──\n── Console ──\nchopping\n── Result ──\n{"chopped": 3}\n── Terminal World State ──\nPos (3222, 3218) lvl 3 | HP 10/10\nXP: Woodcutting ${script ? '+1,250' : '+75'}\nInv 4/28: Bronze axe, Oak logs x3\n`;
const failed = '── Execution (error, 40ms) ──\n── Error ──\nError: no axe\n── Terminal World State ──\nPos (3222, 3218) lvl 3 | HP 10/10\nXP: none gained';
for await (const line of console) {
  if (!line.trim()) continue;
  const message = JSON.parse(line);
  if (message.id === undefined) continue;
  const { method, params } = message;
  if (method === 'initialize') {
    send({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'rs-sdk', version: '0.0.1' } } });
  } else if (method === 'tools/list') {
    send({ jsonrpc: '2.0', id: message.id, result: { tools: [{ name: 'execute_code', description: 'Run code for a bot', inputSchema: { type: 'object', properties: { bot_name: { type: 'string' }, code: { type: 'string' }, script: { type: 'string' } }, required: ['bot_name'] } }] } });
  } else if (method === 'tools/call') {
    const args = params.arguments ?? {};
    const threw = (args.code ?? '').includes('throw');
    send({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: threw ? failed : ok(args.script) }], isError: threw } });
  } else if (method === 'ping') {
    send({ jsonrpc: '2.0', id: message.id, result: {} });
  } else {
    send({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'no such method' } });
  }
}
"#;

/// The folder of one story: the checkout, the fake home, the hook log.
struct Story {
    _dir: tempfile::TempDir,
    root: PathBuf,
    checkout: PathBuf,
    model: ModelApi,
    claude: ClaudeCode,
    mcp_config: PathBuf,
}

impl Story {
    fn new() -> Story {
        let tools = tools();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let checkout = root.join("rs-sdk");
        for (bot, script, source) in [
            ("buzz", "chop-oaks", CHOP_OAKS),
            ("woody", "chop-trees", CHOP_TREES),
        ] {
            let folder = checkout.join("bots").join(bot);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(
                folder.join("bot.env"),
                format!("BOT_USERNAME={bot}\nPASSWORD=pw-{bot}-Tr0ub4dor\nSERVER=localhost\n"),
            )
            .unwrap();
            std::fs::write(folder.join("lab_log.md"), "# Lab log\n").unwrap();
            std::fs::write(folder.join(format!("{script}.ts")), source).unwrap();
        }
        std::fs::write(checkout.join("claude.md"), "# rs-sdk\n").unwrap();
        std::fs::write(checkout.join("bots/create-bot.ts"), "// makes a bot\n").unwrap();
        let mcp_script = root.join("mcp-rs-sdk.ts");
        std::fs::write(&mcp_script, MCP_RS_SDK).unwrap();
        let mcp_config = root.join("mcp.json");
        std::fs::write(
            &mcp_config,
            json!({"mcpServers": {"rs-sdk": {"command": tools.join("bun"), "args": [mcp_script]}}})
                .to_string(),
        )
        .unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        hook_recorder(&root.join("hook-bin"), &root.join("hook-log"));
        let model = ModelApi::start();
        let claude = ClaudeCode {
            tools,
            hook_recorder: Some(root.join("hook-bin")),
            home,
            model_url: model.url.clone(),
            env: Vec::new(),
        };
        Story {
            _dir: dir,
            root,
            checkout,
            model,
            claude,
            mcp_config,
        }
    }

    /// `mindrune …` run in the checkout, with the library where setup put it: by default
    /// outside the checkout, in `$XDG_DATA_HOME/mindrune` (a folder of the test's own).
    fn mindrune(&self, args: &[&str]) -> std::process::Output {
        let data = self.root.join("data");
        let mut command = Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
        if args.first() != Some(&"setup") && !args.contains(&"--home") {
            command.env("MINDRUNE_HOME", data.join("mindrune"));
        } else {
            command.env_remove("MINDRUNE_HOME");
        }
        command
            .args(args)
            .current_dir(&self.checkout)
            .env("XDG_DATA_HOME", &data)
            .env_remove("MINDRUNE_DATABASE_URL")
            .env_remove("MINDRUNE_AGENT")
            .env_remove("MINDRUNE_RELAY")
            .output()
            .unwrap()
    }

    fn mindrune_ok(&self, args: &[&str]) -> String {
        let output = self.mindrune(args);
        assert!(
            output.status.success(),
            "mindrune {args:?} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// One `claude -p` session of `bot` following the script `name`.
    fn session(
        &mut self,
        bot: &str,
        name: &str,
        extra_env: &[(&str, String)],
    ) -> std::process::Output {
        self.claude.env = vec![("MINDRUNE_AGENT".into(), bot.into())];
        for (key, value) in extra_env {
            self.claude.env.push(((*key).into(), value.clone()));
        }
        self.claude.run(
            &self.checkout,
            &format!("[[{name}]] Work on your goal."),
            Some(&self.mcp_config),
        )
    }

    fn hooks(&self) -> Vec<HookCall> {
        hook_calls(&self.root.join("hook-log"))
    }

    fn library_db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open(self.root.join("data/mindrune/library.db")).unwrap()
    }
}

/// Every shape of "What counts as a run", as the model sends it, for buzz's first turn.
fn buzz_turn(checkout: &Path) -> Vec<Step> {
    let root = checkout.display();
    vec![
        bash("bun bots/buzz/chop-oaks.ts"),
        bash("cd bots/buzz && bun chop-oaks.ts"),
        bash(&format!("cd {root} && bun bots/buzz/chop-oaks.ts")),
        bash("bun run bots/buzz/chop-oaks.ts"),
        bash("CHOP_LOGS=5 bun bots/buzz/chop-oaks.ts"),
        bash("timeout 60 bun bots/buzz/chop-oaks.ts --logs 3"),
        bash("CHOP_FAIL=1 bun bots/buzz/chop-oaks.ts 2>&1 | tail -30"),
        bash("CHOP_FAIL=1 bun bots/buzz/chop-oaks.ts"),
        bash(&format!("bun {root}/bots/buzz/chop-oaks.ts")),
        bash("for i in 1 2; do bun bots/buzz/chop-oaks.ts; done"),
        bash("bun bots/buzz/chop-oaks.ts > /dev/null 2>&1 &"),
        tool(
            "Bash",
            json!({"command": "bun bots/buzz/chop-oaks.ts", "run_in_background": true, "description": "in the background"}),
        ),
        tool(
            "Bash",
            json!({"command": "CHOP_MS=5000 bun bots/buzz/chop-oaks.ts", "timeout": 1500, "description": "past its timeout"}),
        ),
        bash(&format!(
            "bun build bots/buzz/chop-oaks.ts --outdir {root}/../build-out"
        )),
        bash("bun test bots/buzz/no-such.test.ts || true"),
        bash("grep -c chop bots/buzz/chop-oaks.ts; echo 'bun bots/buzz/chop-oaks.ts'"),
        bash(
            "cat >> bots/buzz/lab_log.md <<'EOF'\nTried: bun bots/buzz/chop-oaks.ts\nShare: oaks west of Draynor respawn within a minute\nEOF",
        ),
        tool(
            "Agent",
            json!({"description": "run chop once", "prompt": "[[buzz-sub]] Run the chop script once.", "subagent_type": "general-purpose"}),
        ),
        tool(
            "mcp__rs-sdk__execute_code",
            json!({"bot_name": "buzz", "script": "bots/buzz/chop-oaks.ts"}),
        ),
        tool(
            "mcp__rs-sdk__execute_code",
            json!({"bot_name": "buzz", "code": "await bot.chopTree();"}),
        ),
        tool(
            "mcp__rs-sdk__execute_code",
            json!({"bot_name": "buzz", "code": "throw new Error('no axe');"}),
        ),
        bash("bun bots/buzz/chop-oak.ts"),
        Step::Text("Done: chopped oaks.".into()),
    ]
}

/// The runs of buzz/chop-oaks that turn holds: the foreground shapes, the subagent's run and
/// the `execute_code {script}`; `ok` leaves out the two failing ones.
const BUZZ_RUNS: i64 = 12;
const BUZZ_OK: i64 = 10;

/// Each hook exited 0 and printed nothing, but a `SessionStart`'s context.
fn assert_hooks_were_quiet(hooks: &[HookCall]) {
    assert!(!hooks.is_empty(), "no hook ran");
    for call in hooks {
        assert_eq!(
            call.exit,
            0,
            "a {} hook exited {}: {}",
            call.event(),
            call.exit,
            call.stderr
        );
        if call.event() == "SessionStart" {
            let context: Value = serde_json::from_str(&call.stdout).unwrap_or_else(|err| {
                panic!("SessionStart printed no JSON ({err}): {}", call.stdout)
            });
            assert_eq!(
                context["hookSpecificOutput"]["hookEventName"],
                "SessionStart"
            );
        } else {
            assert_eq!(call.stdout, "", "a {} hook wrote to stdout", call.event());
        }
    }
}

/// Claude Code's own duration of each recorded call, by event id.
fn payload_durations(hooks: &[HookCall]) -> std::collections::HashMap<String, u64> {
    hooks
        .iter()
        .filter(|c| matches!(c.event(), "PostToolUse" | "PostToolUseFailure"))
        .filter_map(|c| {
            Some((
                format!("claude-code:{}", c.input["tool_use_id"].as_str()?),
                c.input["duration_ms"].as_u64()?,
            ))
        })
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end story with the real Claude Code, told in order"
)]
#[test]
fn the_real_claude_code_records_every_run_shape_through_the_hooks_setup_installs() {
    if skipped("the_real_claude_code_records_every_run_shape") {
        return;
    }
    let mut story = Story::new();
    let checkout = story.checkout.display().to_string();
    // The library is the default one, which setup keeps outside the checkout (where the agents'
    // own tools could read it): the hooks name it absolutely, so they find it after a `cd`.
    story.mindrune_ok(&["setup", "rs-sdk", &checkout, "--owner", "ada"]);
    assert!(!story.checkout.join(".mindrune").exists());
    assert!(story.root.join("data/mindrune/library.db").exists());
    story.model.script("buzz-1", buzz_turn(&story.checkout));
    story.model.script(
        "buzz-sub",
        vec![
            bash("bun bots/buzz/chop-oaks.ts"),
            Step::Text("Chopped once.".into()),
        ],
    );
    story.model.script(
        "buzz-2",
        vec![Step::Error {
            status: 400,
            message: "scripted: the API refused the request".into(),
        }],
    );
    story.model.script(
        "woody-1",
        vec![
            bash("bun bots/woody/chop-trees.ts"),
            Step::Text("Done.".into()),
        ],
    );

    story.session("buzz", "buzz-1", &[]);
    // An API error ends the next turn: StopFailure, a turn boundary too.
    let _ = story.session_unchecked("buzz", "buzz-2");
    story.session("woody", "woody-1", &[]);

    let hooks = story.hooks();
    assert_hooks_were_quiet(&hooks);
    for event in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "StopFailure",
    ] {
        assert!(
            hooks.iter().any(|c| c.event() == event),
            "no {event} hook ran"
        );
    }

    // The runs, ok and failed.
    let skill: Value =
        serde_json::from_str(&story.mindrune_ok(&["skill", "show", "buzz/chop-oaks", "--json"]))
            .unwrap();
    let version = &skill["versions"][0];
    assert_eq!(version["runs"], BUZZ_RUNS, "{skill:#}");
    assert_eq!(version["ok"], BUZZ_OK, "{skill:#}");

    // Durations are Claude Code's own, within 10 %.
    let durations = payload_durations(&hooks);
    let db = story.library_db();
    let mut rows = db
        .prepare("SELECT event_id, duration_ms, xp FROM uses WHERE event_id IS NOT NULL")
        .unwrap();
    let uses: Vec<(String, i64, Option<String>)> = rows
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(uses.len() as i64 >= BUZZ_RUNS, "{uses:?}");
    for (event, stored, _) in &uses {
        let reported = durations
            .get(event.split('#').next().unwrap())
            .unwrap_or_else(|| panic!("no PostToolUse duration for {event}"));
        let reported = *reported as i64;
        assert!(
            (stored - reported).abs() <= (reported / 10).max(1),
            "{event}: stored {stored} ms, Claude Code measured {reported} ms"
        );
    }
    // XP from the runner's `XP:` line.
    assert!(
        uses.iter()
            .any(|(_, _, xp)| xp.as_deref().is_some_and(|xp| xp.contains("1250"))),
        "{uses:?}"
    );

    // Background runs and the mistyped one are kept as unrecorded, and the wrap-up says so.
    let unrecorded: Vec<(String, String)> = db
        .prepare("SELECT reason, detail FROM unrecorded_calls ORDER BY at")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let background = unrecorded.iter().filter(|(r, _)| r == "background").count();
    assert_eq!(background, 3, "{unrecorded:?}");
    assert!(
        unrecorded
            .iter()
            .any(|(r, d)| r == "no-script" && d.contains("chop-oak.ts")),
        "{unrecorded:?}"
    );
    let wrapup = story.mindrune_ok(&["wrapup", "buzz"]);
    assert!(
        wrapup.contains("3 of your runs since the last wrap-up went unrecorded"),
        "{wrapup}"
    );
    // The mistyped run was named in the turn report of its Stop.
    let stop = hooks
        .iter()
        .find(|c| c.event() == "Stop" && c.stderr.contains("buzz: turn ended"))
        .expect("buzz's Stop reported its turn");
    assert!(stop.stderr.contains("chop-oak.ts"), "{}", stop.stderr);

    // Both turn ends were boundaries (the StopFailure one too), and the lesson was read.
    let boundaries: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM agents WHERE last_turn_at IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(boundaries, 2);
    let failure = hooks.iter().find(|c| c.event() == "StopFailure").unwrap();
    assert!(
        failure.stderr.contains("the turn ended on an API error"),
        "{}",
        failure.stderr
    );

    // The instructions reached the model at the session's start.
    let told = story.model.requests().iter().any(|request| {
        request
            .to_string()
            .contains("Share a skill with your family")
    });
    assert!(told, "the SessionStart context never reached the model");

    // family-skills/ is written for each bot, and woody sees buzz's lesson.
    let lessons =
        std::fs::read_to_string(mirror_of(&story.checkout, "woody").join("LESSONS.md")).unwrap();
    assert!(
        lessons.contains("oaks west of Draynor respawn within a minute"),
        "{lessons}"
    );
    assert!(mirror_of(&story.checkout, "buzz").join("INDEX.md").exists());

    // With no `mindrune` on PATH, every link of the wiring holds: `doctor` passes (once the
    // topic-tag vocabulary, which this checkout's missing wiki left unbuilt, is there).
    let wiki = story.root.join("wiki/skills");
    std::fs::create_dir_all(&wiki).unwrap();
    std::fs::write(
        wiki.join("woodcutting.md"),
        "# Woodcutting\n\n| Detail | Value |\n|---|---|\n| Members | No |\n",
    )
    .unwrap();
    story.mindrune_ok(&[
        "tags",
        "build",
        "--wiki",
        story.root.join("wiki").to_str().unwrap(),
    ]);
    let doctor = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["doctor", &checkout])
        .current_dir(&story.checkout)
        .env(
            "PATH",
            format!(
                "{}:{}",
                story.claude.tools.display(),
                crate::util::path_without_mindrune()
            ),
        )
        .env_remove("MINDRUNE_HOME")
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_AGENT")
        .env_remove("MINDRUNE_RELAY")
        .env_remove("MINDRUNE_SERVER")
        .output()
        .unwrap();
    assert!(
        doctor.status.success(),
        "{}{}",
        String::from_utf8_lossy(&doctor.stdout),
        String::from_utf8_lossy(&doctor.stderr)
    );
}

/// Where a bot of a shared checkout finds its family's skills.
fn mirror_of(checkout: &Path, bot: &str) -> PathBuf {
    checkout.join("bots").join(bot).join("family-skills")
}

impl Story {
    /// A session that may end on an API error (`claude -p` then exits non-zero).
    fn session_unchecked(&mut self, bot: &str, name: &str) -> std::process::Output {
        self.claude.env = vec![("MINDRUNE_AGENT".into(), bot.into())];
        self.claude.run_unchecked(
            &self.checkout,
            &format!("[[{name}]] Work on your goal."),
            Some(&self.mcp_config),
        )
    }
}

/// `mindrune serve` on a free port, stopped when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `setup rs-sdk` with a library of the server's, `mindrune serve`, and a long-running runner
/// for `bot` relaying its hooks' spool: the live session's wiring. Stopped when dropped.
struct Relayed {
    library_arg: String,
    spool: PathBuf,
    _server: Server,
    _runner: Server,
}

impl Story {
    /// `skill show SKILL --json` of the library at `library_arg`, once the skill is there.
    fn skill_in(&self, library_arg: &str, skill: &str) -> Option<Value> {
        let output = self.mindrune(&["--home", library_arg, "skill", "show", skill, "--json"]);
        output
            .status
            .success()
            .then(|| serde_json::from_slice(&output.stdout).unwrap())
    }

    fn relayed(&mut self, bot: &str) -> Relayed {
        let checkout = self.checkout.display().to_string();
        let library_arg = self.root.join("server-library").display().to_string();
        let output = self.mindrune(&[
            "--home",
            &library_arg,
            "setup",
            "rs-sdk",
            &checkout,
            "--owner",
            "ada",
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let port = crate::util::free_port();
        let server = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
            .args([
                "--home",
                &library_arg,
                "serve",
                "--addr",
                &format!("127.0.0.1:{port}"),
            ])
            .env_remove("MINDRUNE_DATABASE_URL")
            .spawn()
            .unwrap();
        let server = Server(server);
        let token = self
            .mindrune_ok(&["--home", &library_arg, "token", "issue", bot])
            .trim()
            .to_string();
        let spool = self.root.join(format!("spool-{bot}"));
        let runner = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
            .args(["runner", "--server", &format!("http://127.0.0.1:{port}")])
            .args(["--agent", bot, "--workspace", &checkout, "--token", &token])
            .arg("--spool")
            .arg(&spool)
            .arg("--mirror")
            .arg(mirror_of(&self.checkout, bot))
            .env_remove("MINDRUNE_DATABASE_URL")
            .spawn()
            .unwrap();
        let runner = Server(runner);
        // The runner keeps the instructions for the hook's SessionStart once it has started.
        wait_for(
            || spool.join("instructions.md").exists(),
            "the runner's start",
        );
        Relayed {
            library_arg,
            spool,
            _server: server,
            _runner: runner,
        }
    }
}

#[test]
fn the_real_claude_code_relays_runs_through_the_runner_to_serve() {
    if skipped("the_real_claude_code_relays_runs_through_the_runner_to_serve") {
        return;
    }
    let mut story = Story::new();
    let checkout = story.checkout.display().to_string();
    let Relayed {
        library_arg,
        spool,
        _server,
        _runner,
    } = story.relayed("buzz");
    story.model.script(
        "relay-1",
        vec![
            bash("bun bots/buzz/chop-oaks.ts"),
            bash("cd bots/buzz && bun chop-oaks.ts"),
            // The shell stays in bots/buzz after a `cd`: back to the checkout.
            bash(&format!(
                "cd {checkout} && CHOP_FAIL=1 bun bots/buzz/chop-oaks.ts"
            )),
            bash("bun bots/buzz/chop-oaks.ts > /dev/null 2>&1 &"),
            tool(
                "mcp__rs-sdk__execute_code",
                json!({"bot_name": "buzz", "script": "bots/buzz/chop-oaks.ts"}),
            ),
            Step::Text("Done.".into()),
        ],
    );
    story.session(
        "buzz",
        "relay-1",
        &[("MINDRUNE_RELAY", spool.display().to_string())],
    );
    assert_hooks_were_quiet(&story.hooks());

    // Everything the hooks spooled reaches the server: four runs, one failed.
    let skill = || story.skill_in(&library_arg, "buzz/chop-oaks");
    wait_for(
        || skill().is_some_and(|s| s["versions"][0]["runs"] == 4),
        "four runs at the server",
    );
    let skill = skill().unwrap();
    assert_eq!(skill["versions"][0]["ok"], 3, "{skill:#}");
    let told = story
        .model
        .requests()
        .iter()
        .any(|r| r.to_string().contains("Share a skill with your family"));
    assert!(told, "the runner's instructions never reached the model");
}

fn wait_for(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_live_loop_files_a_run_under_the_code_that_ran_and_a_new_session_starts_from_a_fresh_view() {
    if skipped("the_live_loop_files_a_run_under_the_code_that_ran") {
        return;
    }
    let mut story = Story::new();
    let checkout = story.checkout.display().to_string();
    let Relayed {
        library_arg,
        spool,
        _server,
        _runner,
    } = story.relayed("buzz");
    let relay = [("MINDRUNE_RELAY", spool.display().to_string())];

    // Session 1: a run, and an edit of the same file right after it (as a live Claude Code did,
    // 0.2 s after the run): the run is v1's, the edit is v2.
    let file = format!("{checkout}/bots/buzz/chop-oaks.ts");
    story.model.script(
        "edit-after-run",
        vec![
            bash("bun bots/buzz/chop-oaks.ts"),
            tool("Read", json!({"file_path": file})),
            tool(
                "Edit",
                json!({"file_path": file, "old_string": "chopping oaks west of Draynor...",
                       "new_string": "chopping oaks west of Draynor, faster..."}),
            ),
            Step::Text("Edited.".into()),
        ],
    );
    story.session("buzz", "edit-after-run", &relay);
    assert_hooks_were_quiet(&story.hooks());
    let skill = || story.skill_in(&library_arg, "buzz/chop-oaks");
    // The turn end brings the edit as v2; the run stays v1's.
    wait_for(
        || skill().is_some_and(|s| s["versions"].as_array().is_some_and(|v| v.len() == 2)),
        "the edit as a second version",
    );
    let skill = skill().unwrap();
    let runs_of = |number: u64| {
        skill["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["version"] == number)
            .map(|v| v["runs"].clone())
    };
    assert_eq!(runs_of(1), Some(json!(1)), "{skill:#}");
    assert_eq!(runs_of(2), Some(json!(0)), "{skill:#}");

    // Meanwhile woody's headed script proves itself and becomes a family skill.
    std::fs::write(
        story.checkout.join("bots/woody/chop-trees.ts"),
        format!("/** @skill chop-trees\n * Goal: chop trees near Lumbridge\n */\n{CHOP_TREES}"),
    )
    .unwrap();
    let events: String = (0..5)
        .map(|n| {
            json!({"agent": "woody", "id": format!("woody-{n}"), "command": "bun bots/woody/chop-trees.ts",
                   "cwd": checkout, "ok": true, "duration_ms": 60000,
                   "output": "── Result ──\n{\"logs\":5}\n── State ──\nPos (3200, 3230) lvl 2 | HP 10/10\nXP: Woodcutting +125\n"})
            .to_string() + "\n"
        })
        .collect();
    let events_file = story.root.join("woody.jsonl");
    std::fs::write(&events_file, events).unwrap();
    story.mindrune_ok(&[
        "--home",
        &library_arg,
        "record",
        events_file.to_str().unwrap(),
    ]);
    story.mindrune_ok(&["--home", &library_arg, "turn-end", "woody"]);
    assert!(
        !mirror_of(&story.checkout, "buzz")
            .join("woody/chop-trees.ts")
            .exists()
    );

    // Session 2 of buzz: its view is brought up to date before its first call.
    story
        .model
        .script("fresh", vec![Step::Text("Looking first.".into())]);
    story.session("buzz", "fresh", &relay);
    assert_hooks_were_quiet(&story.hooks());
    assert!(
        mirror_of(&story.checkout, "buzz")
            .join("woody/chop-trees.ts")
            .exists(),
        "the sibling's new family skill is in the view the new session starts from"
    );
}
