//! `mindrune mcp` end to end: the real binary started as a subprocess and driven over stdio by
//! rmcp's own client, with the human's side done through the real `mindrune inbox` and `mindrune
//! card`, and `examples/fixer.sh` as the skill fixer. The acceptance test: create → use →
//! report → the fixer revises → approve → the record shows the comparison. (`.ci/run` drives the
//! same flow with the official Python `mcp` package: `tests/python/mcp_e2e.py`.)
//!
//! The client declares no elicitation, and under the shipped default `ask` such a client gets
//! nothing done (crates/server/tests/mcp.rs pins that), so this workspace's permissions.yaml
//! says `create: card` and `report: auto`: the draft and the fixer's revision still wait on
//! cards for the human.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use rmcp::ServiceExt as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    ProtocolVersion,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

use crate::util::{stderr, visible_files};

/// How long the fixer, running in the background, gets to file its revision or stop.
const FIXER_TIMEOUT: Duration = Duration::from_secs(20);

/// A home tree H with the assistant's workspace H/ws: the shipped default permissions, no tools
/// besides MindRune's own, and `examples/fixer.sh` as the fixer.
struct Workspace {
    _dir: tempfile::TempDir,
    home: PathBuf,
    path: PathBuf,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let path = home.join("ws");
        let ws = Workspace {
            _dir: dir,
            home,
            path,
        };
        let init = ws.ok(&["playbook", "init"]);
        assert!(init.contains("mindrune mcp --workspace"), "{init}");
        let fixer = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/fixer.sh")
            .canonicalize()
            .unwrap();
        // The fixer is a shell command line: quote the path.
        let fixer = format!("'{}'", fixer.display());
        std::fs::write(
            ws.path.join("playbooks.toml"),
            format!(
                "tools = []\nhome = {:?}\nfixer = {:?}\n",
                ws.home.display().to_string(),
                fixer
            ),
        )
        .unwrap();
        std::fs::write(
            ws.path.join("permissions.yaml"),
            "create: card\nreport: auto\n",
        )
        .unwrap();
        ws
    }

    /// The binary for the human's side, on this workspace.
    fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        clean_env(cmd.env("HOME", &self.home).current_dir(&self.home));
        cmd.arg(args[0])
            .arg("--workspace")
            .arg(&self.path)
            .args(&args[1..])
            .timeout(Duration::from_secs(60));
        cmd
    }

    /// Runs `mindrune <args[0]> --workspace W <args[1..]>`, expects success, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.cmd(args).output().unwrap();
        assert!(
            output.status.success(),
            "mindrune {args:?} failed:\n{}",
            stderr(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// The cards waiting for the human, as `mindrune inbox --json` lists them.
    fn waiting_cards(&self) -> Vec<Value> {
        let cards: Value = serde_json::from_str(&self.ok(&["inbox", "--json"])).unwrap();
        cards.as_array().unwrap().clone()
    }

    /// Every card, answered ones too (`mindrune inbox --all --json`).
    fn all_cards(&self) -> Vec<Value> {
        let cards: Value = serde_json::from_str(&self.ok(&["inbox", "--all", "--json"])).unwrap();
        cards.as_array().unwrap().clone()
    }

    /// A turn record the fixer reads (examples/fixer.sh's convention).
    fn turn(&self, name: &str, text: &str) -> PathBuf {
        let path = self.home.join("turns").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn live(&self, relative: &str) -> PathBuf {
        self.path.join("skills/weekly-report").join(relative)
    }

    /// What the fixer printed for a report, for a failure message.
    fn fixer_log(&self, report: i64) -> String {
        let path = self
            .path
            .join(format!(".mindrune/fixer/report-{report}.log"));
        std::fs::read_to_string(&path)
            .unwrap_or_else(|err| format!("(no fixer log at {}: {err})", path.display()))
    }

    /// `mindrune mcp --workspace W` as a subprocess, connected to rmcp's client.
    async fn connect(&self) -> Session {
        self.connect_logging(None).await
    }

    /// [`Workspace::connect`], with `MINDRUNE_LOG` set to `log` when given.
    async fn connect_logging(&self, log: Option<&str>) -> Session {
        let server_log = self.home.join("mcp-stderr.log");
        let mut command = tokio::process::Command::new(bin());
        command
            .arg("mcp")
            .arg("--workspace")
            .arg(&self.path)
            .current_dir(&self.home)
            .env("HOME", &self.home)
            // The fixer files its revision with this program.
            .env("MINDRUNE_BIN", bin());
        for name in SCRUBBED_ENV {
            command.env_remove(name);
        }
        if let Some(log) = log {
            command.env("MINDRUNE_LOG", log);
        }
        let (transport, _) = TokioChildProcess::builder(command)
            .stderr(std::fs::File::create(&server_log).unwrap())
            .spawn()
            .unwrap();
        // No elicitation declared, on the last protocol with an initialize handshake.
        let host = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("mindrune-e2e-host", "0.0.0"),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25);
        let client = host.serve(transport).await.unwrap_or_else(|err| {
            panic!(
                "the MCP session did not start: {err}\nserver stderr:\n{}",
                std::fs::read_to_string(&server_log).unwrap_or_default()
            )
        });
        Session { client, server_log }
    }
}

/// The assistant's MCP session with `mindrune mcp`.
struct Session {
    client: RunningService<RoleClient, ClientConfig>,
    server_log: PathBuf,
}

impl Session {
    async fn call(&self, tool: &str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        self.client
            .call_tool(CallToolRequestParams::new(tool.to_string()).with_arguments(arguments))
            .await
            .unwrap_or_else(|err| {
                panic!(
                    "{tool}: protocol error {err}\nserver stderr:\n{}",
                    std::fs::read_to_string(&self.server_log).unwrap_or_default()
                )
            })
    }

    /// Calls a tool that must go through; returns its text.
    async fn ok(&self, tool: &str, arguments: Value) -> String {
        let result = self.call(tool, arguments).await;
        let text = text(&result);
        assert_eq!(result.is_error, Some(false), "{tool} failed: {text}");
        text
    }

    /// Reads the skill `times` times, as the assistant following it does.
    async fn follow(&self, times: usize, first_turn: usize, home: &Path) {
        for turn in first_turn..first_turn + times {
            let turn = home.join("turns").join(format!("{turn}.txt"));
            let text = self
                .ok(
                    "workspace_read",
                    json!({"path": "skills/weekly-report/SKILL.md", "turn": turn}),
                )
                .await;
            assert!(text.contains("name: weekly-report"), "{text}");
        }
    }

    /// Closes stdin and waits for the server to exit.
    async fn close(self) {
        self.client.cancel().await.unwrap();
    }
}

/// Environment the caller's shell may have set that would change what the binary does.
const SCRUBBED_ENV: [&str; 5] = [
    "MINDRUNE_WORKSPACE",
    "MINDRUNE_LOG",
    "MINDRUNE_LOG_FORMAT",
    "MINDRUNE_HOME",
    "MINDRUNE_DATABASE_URL",
];

fn clean_env(cmd: &mut Command) -> &mut Command {
    for name in SCRUBBED_ENV {
        cmd.env_remove(name);
    }
    cmd
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mindrune")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text())
        .map(|text| text.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The skill the assistant writes down: two steps, a procedure.
pub(crate) fn weekly_report() -> Value {
    json!({
        "name": "weekly-report",
        "trigger": "the human asks for the weekly report",
        "use_when": "a week of notes exists under notes/",
        "not_when": "the human wants a single day's summary",
        "preconditions": ["notes/ holds this week's files"],
        "steps": [
            {"do": "Read this week's notes", "tool": "workspace_read"},
            {"do": "Write the report to reports/weekly.md", "tool": "file_write"}
        ],
        "expected_result": "reports/weekly.md exists with one section per project",
        "failure_modes": ["notes from last week get included"],
        "evidence": ["the weekly report the human accepted"],
        "procedure": "Read the notes, then write the report, one section per project."
    })
}

/// skill_create files a card without asking (`create: card`), then the human approves it.
async fn create_and_approve(ws: &Workspace, session: &Session) {
    let created = session.ok("skill_create", weekly_report()).await;
    assert!(
        created.contains("Drafted weekly-report and filed card #1"),
        "{created}"
    );
    assert!(
        ws.path
            .join("skills/pending/weekly-report/SKILL.md")
            .is_file()
    );
    let approved = ws.ok(&["card", "approve", "1"]);
    assert!(approved.contains("card #1 approved"), "{approved}");
    let live = std::fs::read_to_string(ws.live("SKILL.md")).unwrap();
    assert!(live.contains("version: 1"), "{live}");
    assert!(live.contains("status: active"), "{live}");
}

/// Waits until `done` says the fixer is through, printing its log when it never is.
async fn wait_for_fixer<T>(ws: &Workspace, report: i64, mut done: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = done() {
            return found;
        }
        assert!(
            start.elapsed() < FIXER_TIMEOUT,
            "the fixer did not finish within {FIXER_TIMEOUT:?}; its log:\n{}",
            ws.fixer_log(report)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The report number in skill_refine report's answer ("… (report #N); …").
fn report_number(text: &str) -> i64 {
    let start = text.find("(report #").expect(text) + "(report #".len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect(text)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_skill_made_over_mcp_is_reported_revised_by_the_fixer_approved_and_compared() {
    let ws = Workspace::new();
    let session = ws.connect().await;
    let instructions = session
        .client
        .peer_info()
        .and_then(|info| info.instructions.clone())
        .unwrap_or_default();
    assert!(instructions.contains("Carried skills:"), "{instructions}");

    // Create: the door drafts it and files a card; the human approves it.
    create_and_approve(&ws, &session).await;
    let carried = ws.ok(&["playbook", "carried"]);
    assert!(carried.contains("weekly-report"), "{carried}");

    // Use: six reads of v1, each a usage line.
    session.follow(6, 1, &ws.home).await;

    // Report: step 2 was followed and was wrong; the turn's record says what it should say.
    let turn = ws.turn(
        "1.txt",
        "followed: 1 2\ncorrect step 2: Write the report to reports/weekly.md, newest week first\n",
    );
    let reported = session
        .ok(
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2, "turn": turn}),
        )
        .await;
    assert!(
        reported.contains("Reported step 2 of weekly-report v1"),
        "{reported}"
    );
    assert!(
        reported.contains("The skill fixer started in the background"),
        "{reported}"
    );
    let report = report_number(&reported);

    // The fixer revises: a waiting revise card appears in the inbox.
    let card = wait_for_fixer(&ws, report, || {
        ws.waiting_cards().into_iter().find(|card| {
            card["kind"] == "revise" && card["state"] == "waiting" && card["report"] == report
        })
    })
    .await;
    assert_eq!(card["skill"], "weekly-report");
    assert_eq!(card["filed_by"], "fixer");
    assert_eq!(card["base_version"], 1);
    let id = card["id"].as_i64().unwrap();
    let shown = ws.ok(&["card", "show", &id.to_string()]);
    assert!(
        shown.contains("why: The skill fixer filed this with `mindrune refine revise`, which asks nobody before filing (revise: ask): this card is the question, and it waits for your answer."),
        "the card says nobody was asked before it was filed: {shown}"
    );
    assert!(
        shown.contains("+  - do: Write the report to reports/weekly.md, newest week first"),
        "the diff shows the corrected step: {shown}"
    );
    assert!(
        shown.contains("-  - do: Write the report to reports/weekly.md"),
        "the diff shows the step it replaces: {shown}"
    );
    assert!(
        shown.contains(&format!(
            "answers report #{report}: step 2 of v1 went wrong"
        )),
        "{shown}"
    );
    // Nothing changed before the human answers.
    assert!(
        std::fs::read_to_string(ws.live("SKILL.md"))
            .unwrap()
            .contains("version: 1")
    );

    // Approve: v1 is kept in history/, the corrected text is live as v2.
    let approved = ws.ok(&["card", "approve", &id.to_string()]);
    assert!(
        approved.contains(&format!("card #{id} approved")),
        "{approved}"
    );
    let live = std::fs::read_to_string(ws.live("SKILL.md")).unwrap();
    assert!(live.contains("version: 2"), "{live}");
    assert!(live.contains("newest week first"), "{live}");
    let kept = std::fs::read_to_string(ws.live("history/1/SKILL.md")).unwrap();
    assert!(kept.contains("version: 1"), "{kept}");
    assert!(!kept.contains("newest week first"), "{kept}");

    // Use v2 six times; the record compares it with v1.
    session.follow(6, 7, &ws.home).await;
    let record = session
        .ok("playbook_record", json!({"skill": "weekly-report"}))
        .await;
    assert!(record.contains("weekly-report (v2, active)"), "{record}");
    assert!(
        record.contains("reads: 12, corrections: 1, turns: 12"),
        "{record}"
    );
    assert!(record.contains("v2: 6 reads, 0 corrections"), "{record}");
    assert!(record.contains("v1: 6 reads, 1 corrections"), "{record}");
    assert!(record.contains("Fisher's exact test"), "{record}");
    let verdict = record
        .lines()
        .find(|line| line.contains("Fisher's exact test"))
        .unwrap();
    assert!(
        verdict.contains("v2") && verdict.contains("v1"),
        "the verdict compares v2 with v1: {verdict}"
    );
    // One correction in six reads against none in six is no evidence either way.
    assert!(
        verdict.contains("no clear difference between v2 and v1 yet"),
        "{verdict}"
    );
    assert!(verdict.contains("p = 0.500"), "{verdict}");
    // The human's command prints the same record.
    assert_eq!(
        ws.ok(&["playbook", "record", "weekly-report"]).trim_end(),
        record
    );
    session.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_fixer_stops_when_the_record_shows_the_reported_step_was_not_followed() {
    let ws = Workspace::new();
    let session = ws.connect().await;
    create_and_approve(&ws, &session).await;
    session.follow(1, 1, &ws.home).await;
    let before = std::fs::read_to_string(ws.live("SKILL.md")).unwrap();

    let turn = ws.turn(
        "1.txt",
        "followed: 1\ncorrect step 2: Write the report to reports/weekly.md, newest week first\n",
    );
    let reported = session
        .ok(
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2, "turn": turn}),
        )
        .await;
    let report = report_number(&reported);

    let note = wait_for_fixer(&ws, report, || {
        let record = ws.ok(&["playbook", "record", "weekly-report"]);
        record
            .lines()
            .find(|line| line.contains("the fixer stopped"))
            .map(str::to_string)
    })
    .await;
    assert!(
        note.contains(&format!("report #{report}: the fixer stopped"))
            && note.contains("step 2 was not followed (followed: 1)"),
        "{note}"
    );
    let record = session
        .ok("playbook_record", json!({"skill": "weekly-report"}))
        .await;
    assert!(record.contains("the fixer stopped"), "{record}");
    assert!(record.contains("weekly-report (v1, active)"), "{record}");
    assert!(record.contains("corrections: 1"), "{record}");
    // No revision was filed, and the skill is as it was.
    assert!(
        !ws.all_cards().iter().any(|card| card["kind"] == "revise"),
        "{:?}",
        ws.all_cards()
    );
    assert_eq!(
        std::fs::read_to_string(ws.live("SKILL.md")).unwrap(),
        before
    );
    assert!(!ws.live("history").exists());
    session.close().await;
}

#[test]
fn mcp_on_a_workspace_that_does_not_exist_fails_with_a_clear_message_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent");
    let mut cmd = Command::new(bin());
    clean_env(&mut cmd);
    let output = cmd
        .arg("mcp")
        .arg("--workspace")
        .arg(&missing)
        .current_dir(dir.path())
        .write_stdin("")
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(&missing.display().to_string()) && message.contains("is not a folder"),
        "{message}"
    );
    assert!(
        message.contains("mindrune playbook --workspace DIR init"),
        "the message says how to make one: {message}"
    );
    assert!(
        output.stdout.is_empty(),
        "nothing on the protocol's stdout: {:?}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!missing.exists());
    assert!(visible_files(dir.path()).is_empty());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // The literal path of the issue, too.
    let mut cmd = Command::new(bin());
    clean_env(&mut cmd);
    let output = cmd
        .args(["mcp", "--workspace", "/nonexistent"])
        .current_dir(dir.path())
        .write_stdin("")
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("/nonexistent: is not a folder"),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new("/nonexistent").exists());
}

/// A fixer command of the human's outlives the MCP server that started it: the host session
/// ends right after the report (as `claude -p` does), and the fixer, still printing, finishes
/// and files its answer, its output in its log with the token masked.
#[tokio::test(flavor = "multi_thread")]
async fn a_command_fixer_finishes_after_the_session_that_reported_ended() {
    let ws = Workspace::new();
    let fixer = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/fixer.sh")
        .canonicalize()
        .unwrap();
    // It prints after the server is gone (its token too, which the log must mask).
    let command = format!(
        "sleep 2; for i in 1 2 3; do echo \"working $i $MINDRUNE_FIXER_TOKEN\"; done; '{}'",
        fixer.display()
    );
    std::fs::write(
        ws.path.join("playbooks.toml"),
        format!(
            "tools = []\nhome = {:?}\nfixer = {:?}\n",
            ws.home.display().to_string(),
            command
        ),
    )
    .unwrap();
    let session = ws.connect().await;
    create_and_approve(&ws, &session).await;
    session.follow(1, 1, &ws.home).await;
    let turn = ws.turn(
        "1.txt",
        "followed: 1\ncorrect step 2: Write the report to reports/weekly.md, newest week first\n",
    );
    let reported = session
        .ok(
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2, "turn": turn}),
        )
        .await;
    let report = report_number(&reported);
    session.close().await;

    let note = wait_for_fixer(&ws, report, || {
        ws.ok(&["playbook", "record", "weekly-report"])
            .lines()
            .find(|line| line.contains("the fixer stopped"))
            .map(str::to_string)
    })
    .await;
    assert!(note.contains("step 2 was not followed"), "{note}");
    let log = ws.fixer_log(report);
    assert!(log.contains("working 3 [MINDRUNE_FIXER_TOKEN]"), "{log}");
}

/// Every argument is bounded before work, the error naming the argument and its bound; a search
/// query is capped (a 1 MB one refused at once, one at the cap answered); a long path is echoed
/// cut.
#[tokio::test(flavor = "multi_thread")]
async fn arguments_over_their_bounds_are_refused_naming_the_bound_and_paths_echo_cut() {
    let ws = Workspace::new();
    let session = ws.connect().await;

    let huge = "secret ".repeat(150_000);
    let result = session
        .call("playbook_search", json!({"query": huge}))
        .await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true), "{answer}");
    assert!(
        answer.starts_with("argument query is 1050000 bytes; it may be at most 4096 bytes"),
        "{answer}"
    );

    // At the cap: 64 distinct words, repeated to 4096 bytes, are searched.
    let words: Vec<String> = (0..64).map(|i| format!("w{i:02}")).collect();
    let mut at_cap = words.join(" ");
    while at_cap.len() < 4096 {
        at_cap.push_str(" w00");
    }
    at_cap.truncate(4096);
    let result = session
        .call("playbook_search", json!({"query": at_cap}))
        .await;
    assert_eq!(result.is_error, Some(false), "{}", text(&result));
    // One distinct word more is refused, saying the bound.
    let over = format!("{} extra", words.join(" "));
    let result = session
        .call("playbook_search", json!({"query": over}))
        .await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true), "{answer}");
    assert!(answer.contains("more than 64 distinct words"), "{answer}");

    // A 10 MB path is refused by its bound, and not echoed.
    let path = "a".repeat(10 * 1024 * 1024);
    let result = session.call("workspace_read", json!({"path": path})).await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(
        answer.starts_with("argument path is 10485760 bytes; it may be at most 4096 bytes"),
        "{}",
        &answer[..answer.len().min(500)]
    );
    assert!(answer.len() < 2000, "{} bytes echoed", answer.len());
    // A path within the bound that is not there is echoed cut to its first 200 characters.
    let path = format!("notes/{}/x.md", "b".repeat(3000));
    let result = session.call("workspace_read", json!({"path": path})).await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(!answer.contains(&path), "{answer}");
    assert!(answer.len() < 1500, "{answer}");

    // A list over its bound.
    let result = session
        .call(
            "skill_create",
            json!({"name": "x", "procedure": "p", "evidence": vec!["e"; 65]}),
        )
        .await;
    let answer = text(&result);
    assert_eq!(result.is_error, Some(true));
    assert!(
        answer.starts_with("argument evidence holds 65 items; it may hold at most 64"),
        "{answer}"
    );
    session.close().await;
}

/// At `MINDRUNE_LOG=trace` the log names each call's tool and its arguments' names and sizes,
/// never a value.
#[tokio::test(flavor = "multi_thread")]
async fn the_log_at_trace_names_tools_and_argument_sizes_but_never_a_value() {
    const PLANTED: &str = "ghp_PlantedSecretValue0123456789abcdefABCD";
    let ws = Workspace::new();
    let session = ws.connect_logging(Some("trace")).await;
    session
        .ok(
            "file_write",
            json!({"path": "notes/token.txt", "content": PLANTED}),
        )
        .await;
    session
        .call("playbook_search", json!({"query": PLANTED}))
        .await;
    session
        .call("workspace_read", json!({"path": PLANTED}))
        .await;
    let log_path = session.server_log.clone();
    session.close().await;
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(!log.contains("PlantedSecretValue"), "{log}");
    assert!(log.contains("tool=file_write"), "{log}");
    assert!(log.contains("tool=playbook_search"), "{log}");
    assert!(
        log.contains(&format!("content: {} bytes", PLANTED.len())),
        "{log}"
    );
}
