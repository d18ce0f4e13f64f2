//! The live session's real outputs (`../shared/data/rs-sdk/runs/live/`, see its README) recorded
//! in the README's order for each bot, with turn ends where the README puts them, through
//! `mindrune record` and again as the live session lived them: Claude Code's hook calls in relay
//! mode, a runner, `mindrune serve`. What the library keeps of each call must be the README's
//! truth, and where the output cannot tell the truth, "not measured" or "unknown", never a wrong
//! number; both paths keep the same.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::util::{TestLibrary, free_port, stderr};

fn live_dir() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED")
        .map_or_else(
            || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
            PathBuf::from,
        )
        .join("data/rs-sdk/runs/live")
}

fn read(name: &str) -> String {
    let path = live_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    })
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

/// The World State a runner printed, from its `# World State` line on, without the runner's
/// own closing lines: what `bun sdk/cli.ts NAME` prints of the same state.
fn world_state(text: &str) -> String {
    let start = text.find("# World State").expect("a World State");
    text[start..]
        .lines()
        .filter(|line| !line.starts_with("[Runner]") && !line.starts_with("[LOGOUT"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One call of the session: a sample of the folder, or a stand-in the README names.
struct Call {
    id: &'static str,
    /// `shell` or `execute_code`.
    kind: &'static str,
    /// The command line (shell) or the code (execute_code).
    command: String,
    output: String,
    ok: bool,
}

impl Call {
    /// A sample of the folder: its output, command line and exit status.
    fn sample(name: &'static str, workspace: &str) -> Call {
        let fill = |text: String| text.replace("$CHECKOUT", workspace);
        let cmd = fill(read(&format!("{name}.cmd")));
        let exit = read(&format!("{name}.exit"));
        let (kind, command) = match cmd.trim_end().strip_prefix("execute_code: ") {
            Some(code) => ("execute_code", code.to_string()),
            None => ("shell", cmd.trim_end().to_string()),
        };
        Call {
            id: name,
            kind,
            command,
            output: fill(read(&format!("{name}.txt"))),
            ok: matches!(exit.trim(), "exit=0" | "isError=false"),
        }
    }

    fn shell(id: &'static str, command: &str, output: String) -> Call {
        Call {
            id,
            kind: "shell",
            command: command.to_string(),
            output,
            ok: true,
        }
    }
}

/// How the calls reach the library.
enum Path {
    /// `mindrune record`, each event dated.
    Record,
    /// As the live session: each call through Claude Code's hooks in relay mode into the bot's
    /// spool, delivered by `mindrune runner --once` to `mindrune serve`.
    Relay(Relay),
}

struct Relay {
    server: Child,
    url: String,
    tokens: BTreeMap<&'static str, String>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

impl Path {
    fn relay(lib: &TestLibrary) -> Path {
        let port = free_port();
        let server = lib
            .std_cmd()
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the server never listened");
            std::thread::sleep(Duration::from_millis(50));
        }
        let tokens = ["woody", "ash"]
            .into_iter()
            .map(|agent| (agent, lib.ok(&["token", "issue", agent]).trim().to_string()))
            .collect();
        Path::Relay(Relay {
            server,
            url: format!("http://127.0.0.1:{port}"),
            tokens,
        })
    }

    fn turn(&self, lib: &TestLibrary, agent: &str, calls: &[Call]) {
        match self {
            Path::Record => record_turn(lib, agent, calls),
            Path::Relay(relay) => {
                for call in calls {
                    relay_call(lib, agent, call);
                }
                relay.deliver(lib, agent);
            }
        }
    }

    /// The turn boundary: `mindrune turn-end`, or the `Stop` hook delivered by the runner.
    fn turn_end(&self, lib: &TestLibrary, agent: &str) -> String {
        match self {
            Path::Record => lib.ok(&["turn-end", agent]),
            Path::Relay(relay) => {
                hook(
                    lib,
                    agent,
                    &json!({"hook_event_name": "Stop", "session_id": "live"}),
                );
                relay.deliver(lib, agent);
                String::new()
            }
        }
    }
}

impl Relay {
    fn deliver(&self, lib: &TestLibrary, agent: &str) {
        let workspace = lib.workspace(agent);
        let output = lib
            .cmd()
            .args(["runner", "--once", "--server", &self.url, "--agent", agent])
            .args(["--token", &self.tokens[agent]])
            .arg("--workspace")
            .arg(&workspace)
            .arg("--spool")
            .arg(spool(lib, agent))
            .output()
            .unwrap();
        assert!(output.status.success(), "runner: {}", stderr(&output));
    }
}

fn spool(lib: &TestLibrary, agent: &str) -> PathBuf {
    lib.dir.path().join(format!("spool-{agent}"))
}

/// One hook call of `agent`'s Claude Code in relay mode, in its checkout.
fn hook(lib: &TestLibrary, agent: &str, input: &Value) {
    let output = lib
        .cmd()
        .env("CLAUDE_PROJECT_DIR", lib.workspace(agent))
        .args(["hook", "claude-code", "--agent", agent, "--relay"])
        .arg(spool(lib, agent))
        .write_stdin(input.to_string())
        .output()
        .unwrap();
    assert!(output.status.success(), "hook: {}", stderr(&output));
}

/// A call as Claude Code reports it: `PreToolUse`, then `PostToolUse` (or
/// `PostToolUseFailure` for a shell call that exited non-zero; an MCP error is `isError`).
fn relay_call(lib: &TestLibrary, agent: &str, call: &Call) {
    let workspace = lib.workspace(agent);
    let (tool, input) = if call.kind == "shell" {
        ("Bash", json!({"command": call.command}))
    } else {
        (
            "mcp__rs-agent-bot__execute_code",
            json!({"bot_name": agent, "code": call.command}),
        )
    };
    let base = json!({"session_id": "live", "transcript_path": "", "cwd": workspace,
                      "tool_name": tool, "tool_input": input, "tool_use_id": call.id});
    let mut pre = base.clone();
    pre["hook_event_name"] = json!("PreToolUse");
    hook(lib, agent, &pre);
    let mut post = base;
    match (call.kind, call.ok) {
        ("shell", true) => {
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] =
                json!({"stdout": call.output, "stderr": "", "interrupted": false});
        }
        ("shell", false) => {
            post["hook_event_name"] = json!("PostToolUseFailure");
            post["error"] = json!(call.output);
        }
        (_, ok) => {
            post["hook_event_name"] = json!("PostToolUse");
            post["tool_response"] =
                json!({"content": [{"type": "text", "text": call.output}], "isError": !ok});
        }
    }
    hook(lib, agent, &post);
}

/// Records one turn's calls dated 100 ms apart, after the last turn end and before the next:
/// a turn end is stamped with the wall clock, so the calls are dated around it.
fn record_turn(lib: &TestLibrary, agent: &str, calls: &[Call]) {
    let start = now_ms() + 10;
    let events: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            let mut event = json!({
                "id": call.id,
                "agent": agent,
                "kind": call.kind,
                "ok": call.ok,
                "duration_ms": 30000,
                "at": rfc3339(start + 100 * i as i64),
                "output": call.output,
            });
            if call.kind == "shell" {
                event["command"] = json!(call.command);
                event["cwd"] = json!(lib.workspace(agent).to_str().unwrap());
            } else {
                event["code"] = json!(call.command);
            }
            event
        })
        .collect();
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", stderr(&output));
    // The next turn end comes after every call of this turn.
    let last = start + 100 * calls.len() as i64;
    while now_ms() <= last {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the library kept of one call.
#[derive(Debug, Default, Clone, PartialEq)]
struct Kept {
    /// `use`, `snippet`, or the unrecorded reason (`outcome-unknown`, `look`, `no-script`).
    as_: String,
    ok: Option<bool>,
    xp: BTreeMap<String, f64>,
    items: BTreeMap<String, f64>,
    deaths: i64,
    stuck: bool,
    items_lost: i64,
    failure: Option<String>,
    unmeasured: Option<String>,
}

fn kept(lib: &TestLibrary) -> BTreeMap<String, Kept> {
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let map = |text: Option<String>| -> BTreeMap<String, f64> {
        text.map(|t| serde_json::from_str(&t).unwrap())
            .unwrap_or_default()
    };
    let mut all = BTreeMap::new();
    for (table, as_) in [("uses", "use"), ("snippet_uses", "snippet")] {
        let mut statement = conn
            .prepare(&format!(
                "SELECT event_id, ok, xp, items, deaths, stuck, items_lost, failure, unmeasured FROM {table}"
            ))
            .unwrap();
        let rows = statement
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    Kept {
                        as_: as_.to_string(),
                        ok: Some(r.get(1)?),
                        xp: map(r.get(2)?),
                        items: map(r.get(3)?),
                        deaths: r.get(4)?,
                        stuck: r.get(5)?,
                        items_lost: r.get(6)?,
                        failure: r.get(7)?,
                        unmeasured: r.get(8)?,
                    },
                ))
            })
            .unwrap();
        for row in rows {
            let (id, kept) = row.unwrap();
            let id = id.trim_start_matches("claude-code:").to_string();
            assert!(all.insert(id, kept).is_none());
        }
    }
    let mut statement = conn
        .prepare("SELECT event_id, reason FROM unrecorded_calls")
        .unwrap();
    let rows = statement
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap();
    for row in rows {
        let (id, reason) = row.unwrap();
        // `<event id>#<file>` for a call that names a file.
        let id = id
            .split('#')
            .next()
            .unwrap()
            .trim_start_matches("claude-code:")
            .to_string();
        assert!(
            all.insert(
                id,
                Kept {
                    as_: reason,
                    ..Kept::default()
                }
            )
            .is_none()
        );
    }
    all
}

const NOTHING_BEFORE: &str = "no state printed before it";

/// The woody and ash scripts as they were when each call ran.
fn scripts(lib: &TestLibrary) {
    for (bot, name) in [
        ("woody", "chop-trees"),
        ("woody", "mine-copper"),
        ("woody", "bank-logs"),
        ("woody", "fight-man"),
        ("ash", "chop-trees"),
        ("ash", "walk-far"),
    ] {
        lib.write_script(
            bot,
            name,
            &format!(
                "// {bot}'s {name}\nawait bot.{}();\n",
                name.replace('-', "_")
            ),
        );
    }
}

fn replay(relayed: bool) -> (TestLibrary, BTreeMap<String, Kept>) {
    let lib = TestLibrary::new();
    lib.agent("woody", "ada");
    lib.agent("ash", "ada");
    scripts(&lib);
    let path = if relayed {
        Path::relay(&lib)
    } else {
        Path::Record
    };
    let woody_ws = lib.workspace("woody").to_str().unwrap().to_string();
    let ash_ws = lib.workspace("ash").to_str().unwrap().to_string();
    let woody = |name| Call::sample(name, &woody_ws);
    let ash = |name| Call::sample(name, &ash_ws);

    // woody's first turn. Stand-in: the look rs-sdk's workflow asks for first. live-chop-timed-out
    // changed nothing (WC stayed 0, no logs), so the look printed the state that run printed.
    let first_look = world_state(&read("live-chop-timed-out.txt"));
    path.turn(
        &lib,
        "woody",
        &[
            Call::shell("look-woody-1", "bun sdk/cli.ts woody", first_look),
            woody("live-chop-timed-out"),
            woody("live-chop-tail20"),
            woody("mcp-look"),
            woody("mcp-inline-chop"),
        ],
    );
    let turn = path.turn_end(&lib, "woody");
    if !relayed {
        // A look went uncounted as nothing: the turn report names the cut run alone.
        assert!(!turn.contains("sdk/cli.ts"), "{turn}");
        assert!(turn.contains("bots/woody/chop-trees.ts: cd "), "{turn}");
    }
    // woody's next turn. Stand-ins: run 6 went through `| tail -25`; run 8's output is not in the
    // folder, so it stands in as one cut the same way (it printed no state MindRune could use):
    // the only stand-in that invents no numbers. Without it, mine-dialog would be measured
    // against late-xp's state and get run 8's +3,750 Woodcutting.
    let cut = read("live-chop-tail20.txt");
    let tail25 = "bun bots/woody/chop-trees.ts 2>&1 | tail -25";
    path.turn(
        &lib,
        "woody",
        &[
            Call::shell("woody-run-6", tail25, cut.clone()),
            woody("live-chop-late-xp"),
            Call::shell("woody-run-8", tail25, cut.clone()),
            woody("live-mine-dialog"),
            woody("live-bank-stuck"),
            woody("mcp-error"),
        ],
    );
    path.turn_end(&lib, "woody");
    // Between turns the operator set woody's Hitpoints to 1. Stand-in: the look the README's
    // truth was read from (26 backpack slots in use, Attack 0 XP, Woodcutting 21,875).
    let before_death = world_state(&read("live-bank-stuck.txt"))
        .replace("Hitpoints: 10 (980 xp)", "Hitpoints: 1 (0 xp)")
        .replace("Woodcutting: 40 (16,875 xp)", "Woodcutting: 44 (21,875 xp)")
        .replace(
            "## Inventory (5 empty slots)",
            "## Inventory (2 empty slots)",
        )
        .replace("- Logs x5", "- Logs x8");
    path.turn(
        &lib,
        "woody",
        &[
            Call::shell("look-woody-3", "bun sdk/cli.ts woody", before_death),
            woody("live-fight-death"),
        ],
    );

    // ash: its first run ever, then (after runs not in the folder) a new session.
    path.turn(&lib, "ash", &[ash("live-copy-first-run")]);
    path.turn_end(&lib, "ash");
    path.turn(
        &lib,
        "ash",
        &[
            ash("live-chop-full-error"),
            ash("live-walk-timeout"),
            ash("live-chop-tail12-echo"),
        ],
    );
    // The `cp` from a stale family-skills/ failed: the file is not there when bun looks.
    std::fs::remove_file(lib.workspace("ash").join("bots/ash/chop-trees.ts")).unwrap();
    path.turn(&lib, "ash", &[ash("live-missing-file")]);
    let kept = kept(&lib);
    (lib, kept)
}

#[test]
fn through_the_hooks_a_runner_and_serve_every_live_call_is_kept_as_through_record() {
    let (_, relayed) = replay(true);
    let (_, recorded) = replay(false);
    assert_eq!(
        relayed.keys().collect::<Vec<_>>(),
        recorded.keys().collect::<Vec<_>>()
    );
    for (id, kept) in &recorded {
        assert_eq!(&relayed[id], kept, "{id}");
    }
}

#[test]
fn every_live_call_is_kept_as_the_readme_s_truth_or_as_not_known() {
    let (lib, kept) = replay(false);
    let at = |id: &str| -> &Kept {
        kept.get(id)
            .unwrap_or_else(|| panic!("{id} was not kept: {kept:#?}"))
    };

    // Looks are uses of no skill.
    assert_eq!(at("look-woody-1").as_, "look");
    assert_eq!(at("look-woody-3").as_, "look");

    // woody's first run, measured against the look before it: nothing gained, truly.
    let first = at("live-chop-timed-out");
    assert_eq!((first.as_.as_str(), first.ok), ("use", Some(true)));
    assert_eq!(first.unmeasured, None);
    assert!(first.xp.is_empty() && first.items.is_empty(), "{first:?}");
    assert_eq!(
        first.failure, None,
        "the chop timed out, the run did not fail"
    );

    // Cut by `| tail` before its Result: neither ok nor failed, kept out of the score.
    assert_eq!(at("live-chop-tail20").as_, "outcome-unknown");
    // Its +2,500 is unknown; it must not move to the read-only look after it.
    let look = at("mcp-look");
    assert_eq!((look.as_.as_str(), look.ok), ("snippet", Some(true)));
    assert_eq!(look.unmeasured.as_deref(), Some(NOTHING_BEFORE));
    assert!(look.xp.is_empty() && look.items.is_empty(), "{look:?}");
    // The inline chop printed the XP it had; the +625 that came after the print is not known.
    let inline = at("mcp-inline-chop");
    assert_eq!((inline.as_.as_str(), inline.ok), ("snippet", Some(true)));
    assert_eq!(inline.unmeasured, None);
    assert!(inline.xp.is_empty(), "{inline:?}");

    // After the turn end, run 6 through `| tail -25`: unknown; late-xp has nothing before it.
    assert_eq!(at("woody-run-6").as_, "outcome-unknown");
    let late = at("live-chop-late-xp");
    assert_eq!((late.as_.as_str(), late.ok), ("use", Some(true)));
    assert_eq!(late.unmeasured.as_deref(), Some(NOTHING_BEFORE));
    assert!(late.xp.is_empty() && late.items.is_empty(), "{late:?}");
    assert_eq!(at("woody-run-8").as_, "outcome-unknown");
    let mine = at("live-mine-dialog");
    assert_eq!((mine.ok, mine.stuck), (Some(true), true));
    assert_eq!(mine.unmeasured.as_deref(), Some(NOTHING_BEFORE));
    assert!(mine.xp.is_empty(), "{mine:?}");
    // bank-logs failed at the walk, measured against the mine run: nothing gained.
    let bank = at("live-bank-stuck");
    assert_eq!((bank.ok, bank.stuck), (Some(false), true));
    assert_eq!(bank.unmeasured, None);
    assert!(bank.xp.is_empty() && bank.items.is_empty(), "{bank:?}");
    let cause = bank.failure.as_deref().unwrap();
    assert!(
        cause.starts_with(
            "Error: could not open the bank: Cannot reach bank: Stuck at (3093, 3243)"
        ) && cause.contains("game: I can't reach that!"),
        "{cause}"
    );
    let error = at("mcp-error");
    assert_eq!((error.as_.as_str(), error.ok), ("snippet", Some(false)));
    assert!(
        error
            .failure
            .as_deref()
            .unwrap()
            .starts_with("Error: bot.chopOak is not a function"),
        "{error:?}"
    );
    assert!(error.xp.is_empty(), "{error:?}");

    // The death, against the look after the operator's change: 23 slots lost, as the spec
    // counts them (not the 94 items of the stacks), and Attack +200.
    let death = at("live-fight-death");
    assert_eq!(
        (death.ok, death.deaths, death.items_lost),
        (Some(true), 1, 23)
    );
    assert_eq!(death.unmeasured, None);
    assert_eq!(death.xp.get("Attack"), Some(&200.0), "{death:?}");
    assert_eq!(death.xp.get("Woodcutting"), None, "{death:?}");

    // ash's first run ever: nothing printed its state before, so its gains are unknown.
    let copy = at("live-copy-first-run");
    assert_eq!(
        (copy.ok, copy.unmeasured.as_deref()),
        (Some(true), Some(NOTHING_BEFORE))
    );
    assert!(copy.xp.is_empty() && copy.items.is_empty(), "{copy:?}");
    // The new session starts after a turn end: its first run has nothing before it either.
    let full = at("live-chop-full-error");
    assert_eq!(full.ok, Some(false));
    assert_eq!(full.unmeasured.as_deref(), Some(NOTHING_BEFORE));
    assert_eq!(
        full.failure.as_deref(),
        Some(
            "Error: chopped nothing: Your inventory is too full to hold any more logs. — game: Your inventory is too full to hold any more logs."
        )
    );
    let walk = at("live-walk-timeout");
    assert_eq!((walk.ok, walk.unmeasured.as_deref()), (Some(false), None));
    assert!(
        walk.failure
            .as_deref()
            .unwrap()
            .starts_with("Error: Script timeout after 8000ms"),
        "{walk:?}"
    );
    assert!(walk.xp.is_empty() && walk.items.is_empty(), "{walk:?}");
    // `| tail -12; echo exit=…`: the Error section was cut away, so never "ok".
    assert_eq!(at("live-chop-tail12-echo").as_, "outcome-unknown");
    // bun found no file: nothing ran.
    assert_eq!(at("live-missing-file").as_, "no-script");

    // Every call is accounted for, once.
    assert_eq!(kept.len(), 18, "{kept:#?}");

    // What the agent is told at its wrap-up, and what `skill show` says.
    let wrap: Value = serde_json::from_str(&lib.ok(&["wrapup", "woody", "--json"])).unwrap();
    assert_eq!(wrap["outcome_unknown"], 3, "{wrap:#}");
    assert_eq!(
        wrap["unmeasured"],
        json!([{"reason": NOTHING_BEFORE, "runs": 2}]),
        "{wrap:#}"
    );
    let text = lib.ok(&["wrapup", "ash"]);
    assert!(
        text.contains("2 runs not measured: no state printed before it")
            && text.contains("1 run of unknown outcome")
            && text.contains("run the file without `| tail` to see how it ends"),
        "{text}"
    );
    let shown = lib.skill_json("woody/chop-trees");
    assert_eq!(
        shown["unmeasured"],
        json!([{"reason": NOTHING_BEFORE, "runs": 1}]),
        "{shown:#}"
    );
}
