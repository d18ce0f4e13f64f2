//! MindRune's own agents on the real Claude Code: the skill fixer (`fixer = "claude"`), the
//! Skill Lab's two acts (`lab build --agent claude`) and the observer, against the scripted
//! stand-in for the model API on 127.0.0.1.
//!
//! The assistant is the real Claude Code too, driving `mindrune mcp` with MindRune's playbook
//! hooks (`mindrune hook claude-code --workspace` at `SessionStart` and `Stop`), so the report's
//! turn record is the transcript Claude Code wrote, which the fixer — another real Claude Code,
//! started by MindRune in the background — reads with its read-only tools.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::model_api::{ModelApi, Step, decide, tool};
use super::{ClaudeCode, skipped, tools};

/// How long a background fixer gets to finish.
const FIXER_WAIT: Duration = Duration::from_secs(150);

fn mindrune_bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("mindrune")
}

/// `mindrune ARGS…`, which must succeed; its stdout.
fn mindrune(args: &[&str]) -> String {
    let output = Command::new(mindrune_bin())
        .args(args)
        .env_remove("MINDRUNE_WORKSPACE")
        .env_remove("MINDRUNE_HOME")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mindrune {args:?}: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// A weekly-report skill; `last_tool` tells the skills of one workspace apart (the door
/// refuses two skills with the same sequence of tools).
fn skill_text(name: &str, last_tool: &str) -> String {
    format!(
        "---\n\
name: {name}\n\
trigger: the human asks for the weekly report\n\
use_when: a week of notes exists under notes/\n\
not_when: the human wants a single day's summary\n\
preconditions:\n  - notes/ holds this week's files\n\
steps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\n  - do: Tell the human it is written\n    tool: {last_tool}\n\
expected_result: reports/weekly.md exists with one section per project\n\
failure_modes:\n  - notes from last week get included\n\
evidence:\n  - the 2026-11-20 weekly report the human accepted\n\
---\n\
Read the notes, then write the report.\n"
    )
}

/// An assistant's workspace with live skills, MindRune's own fixer, reports recorded unasked,
/// and Claude Code's hooks feeding MindRune the turn record.
struct Assistant {
    root: PathBuf,
    workspace: PathBuf,
    mcp_config: PathBuf,
    claude: ClaudeCode,
    model: ModelApi,
}

impl Assistant {
    fn new(skills: &[&str]) -> (tempfile::TempDir, Assistant) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let workspace = root.join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let ws = workspace.to_str().unwrap().to_string();
        mindrune(&["playbook", "--workspace", &ws, "init"]);
        std::fs::write(
            workspace.join("playbooks.toml"),
            format!(
                "tools = []\nhome = {:?}\nfixer = \"claude\"\nfixer_budget_usd = 0.5\nfixer_timeout_secs = 120\n",
                root.display().to_string()
            ),
        )
        .unwrap();
        let permissions = std::fs::read_to_string(workspace.join("permissions.yaml")).unwrap();
        std::fs::write(
            workspace.join("permissions.yaml"),
            permissions.replace("report: ask", "report: auto"),
        )
        .unwrap();
        for (i, name) in skills.iter().enumerate() {
            let file = root.join(format!("{name}.md"));
            let last_tool = ["workspace_read", "playbook_search", "playbook_record"][i % 3];
            std::fs::write(&file, skill_text(name, last_tool)).unwrap();
            mindrune(&[
                "playbook",
                "--workspace",
                &ws,
                "propose",
                name,
                "--file",
                file.to_str().unwrap(),
            ]);
            mindrune(&["card", "--workspace", &ws, "approve", &(i + 1).to_string()]);
        }
        let hook = format!(
            "'{}' hook claude-code --workspace '{ws}'",
            mindrune_bin().display()
        );
        let hooks = json!([{"hooks": [{"type": "command", "command": hook}]}]);
        std::fs::create_dir_all(workspace.join(".claude")).unwrap();
        std::fs::write(
            workspace.join(".claude/settings.json"),
            json!({"hooks": {"SessionStart": hooks, "Stop": hooks}}).to_string(),
        )
        .unwrap();
        let mcp_config = root.join("mcp.json");
        std::fs::write(
            &mcp_config,
            json!({"mcpServers": {"mindrune": {"command": mindrune_bin(),
                   "args": ["mcp", "--workspace", workspace]}}})
            .to_string(),
        )
        .unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let model = ModelApi::start();
        let claude = ClaudeCode {
            tools: tools(),
            hook_recorder: None,
            home,
            model_url: model.url.clone(),
            env: Vec::new(),
        };
        (
            dir,
            Assistant {
                root,
                workspace,
                mcp_config,
                claude,
                model,
            },
        )
    }

    fn ws(&self) -> &str {
        self.workspace.to_str().unwrap()
    }

    /// The assistant reads `skill` and reports its step 2 as having gone wrong.
    fn use_and_report(&self, skill: &str) {
        let script = format!("assist-{skill}");
        self.model.script(
            &script,
            vec![
                tool(
                    "mcp__mindrune__workspace_read",
                    json!({"path": format!("skills/{skill}/SKILL.md")}),
                ),
                tool(
                    "mcp__mindrune__skill_refine",
                    json!({"action": "report", "skill": skill, "revision": 1, "step": 2}),
                ),
                Step::Text("Reported step 2.".into()),
            ],
        );
        self.claude.run(
            &self.workspace,
            &format!("[[{script}]] Write this week's report with the {skill} skill."),
            Some(&self.mcp_config),
        );
    }

    /// Waits for the fixer of the one report whose log is new, and returns that log.
    fn wait_for_fixer(&self, known: &mut Vec<PathBuf>) -> String {
        let logs = self.workspace.join(".mindrune/fixer");
        let began = Instant::now();
        loop {
            let new: Vec<PathBuf> = std::fs::read_dir(&logs)
                .map(|entries| {
                    entries
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| !known.contains(p))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(log) = new.first() {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                // `refine fix` ends every run with what the agent cost.
                if text.lines().any(|line| line.starts_with("agent: ")) {
                    eprintln!("{}:\n{text}", log.display());
                    known.push(log.clone());
                    return text;
                }
            }
            assert!(
                began.elapsed() < FIXER_WAIT,
                "the fixer did not finish within {FIXER_WAIT:?}; its log: {:?}",
                new.first()
                    .map(|log| std::fs::read_to_string(log).unwrap_or_default())
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn inbox(&self) -> Vec<Value> {
        let cards: Value =
            serde_json::from_str(&mindrune(&["inbox", "--workspace", self.ws(), "--json"]))
                .unwrap();
        cards.as_array().unwrap().clone()
    }

    /// Every request of the fixer's conversations about `skill`, one list per conversation.
    fn fixer_sessions(&self, skill: &str) -> Vec<Vec<Value>> {
        let needle = format!("\"skill\": \"{skill}\"");
        let mut sessions: Vec<Vec<Value>> = Vec::new();
        for request in self.model.requests() {
            if request.get("tools").is_none() {
                continue;
            }
            let first = first_prompt(&request);
            if !(first.contains("MindRune's skill fixer") && first.contains(&needle)) {
                continue;
            }
            let turns = assistant_turns(&request);
            if turns == 0 {
                sessions.push(Vec::new());
            }
            if let Some(session) = sessions.last_mut() {
                session.push(request);
            }
        }
        sessions
    }
}

fn first_prompt(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .unwrap_or_default()
}

fn assistant_turns(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// The JSON request MindRune put in an act's prompt.
fn act_request(request: &Value) -> Value {
    let prompt = first_prompt(request);
    let start = prompt
        .find("The request, as JSON:\n\n")
        .expect("the prompt holds the request")
        + "The request, as JSON:\n\n".len();
    let end = prompt[start..]
        .find("\n\nYou may only read.")
        .expect("the request ends")
        + start;
    serde_json::from_str(&prompt[start..end]).unwrap()
}

/// The text of every tool result the model was sent in `request`.
fn tool_results(request: &Value) -> Vec<(bool, String)> {
    let mut results = Vec::new();
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let text = match &block["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                results.push((block["is_error"] == json!(true), text));
            }
        }
    }
    results
}

fn answer(value: Value) -> Step {
    tool("StructuredOutput", value)
}

/// The fixer reads the revision it was handed and the turn record, as a model would.
fn read_pointers() -> Vec<Step> {
    vec![
        decide(|request| {
            let pointers = act_request(request);
            tool(
                "Read",
                json!({"file_path": pointers["revision_file"].as_str().unwrap()}),
            )
        }),
        decide(|request| {
            let pointers = act_request(request);
            tool(
                "Read",
                json!({"file_path": pointers["turn_record"].as_str().expect("the report has the host's turn record")}),
            )
        }),
    ]
}

/// Every 64-hex word of `text`.
fn hex_words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 64)
        .map(str::to_string)
        .collect()
}

fn fixer_token_digests(workspace: &Path) -> Vec<String> {
    let connection =
        rusqlite::Connection::open(workspace.join(".mindrune/playbooks.sqlite3")).unwrap();
    let mut statement = connection
        .prepare("SELECT fixer_token FROM usage WHERE fixer_token IS NOT NULL")
        .unwrap();
    statement
        .query_map([], |row| row.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end story with the real Claude Code, told in order"
)]
#[test]
fn the_claude_fixer_revises_a_wrong_procedure_stops_on_one_not_followed_and_files_nothing_for_a_malformed_answer()
 {
    if skipped("the_claude_fixer_revises") {
        return;
    }
    let (_dir, assistant) = Assistant::new(&["weekly-a", "weekly-b", "weekly-c"]);
    let mut known = Vec::new();

    // --- revise: the record shows the step followed as written, and wrong ------------------
    let mut steps = read_pointers();
    let live = assistant.workspace.join("skills/weekly-a/SKILL.md");
    let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = shown.clone();
    steps.push(decide(move |request| {
        let pointers = act_request(request);
        *kept.lock().unwrap() = tool_results(request);
        let text = std::fs::read_to_string(&live).unwrap().replace(
            "do: Write the report to reports/weekly.md",
            "do: Make reports/ if it is missing, then write the report to reports/weekly.md",
        );
        answer(json!({
            "decision": "revise",
            "reason": "step 2 was followed as written and file_write failed: reports/ did not exist",
            "skill_md": text,
            "fingerprint": pointers["fingerprint"],
        }))
    }));
    assistant
        .model
        .script_when("\"skill\": \"weekly-a\"", steps);
    assistant.use_and_report("weekly-a");
    let log = assistant.wait_for_fixer(&mut known);
    // What the model was shown: the skill's steps, and the transcript with the report.
    let results = shown.lock().unwrap().clone();
    assert!(
        results
            .iter()
            .any(|(error, text)| !error && text.contains("Write the report to reports/weekly.md")),
        "the fixer was not shown the skill: {results:?}\n{log}"
    );
    assert!(
        results
            .iter()
            .any(|(error, text)| !error && text.contains("mcp__mindrune__skill_refine")),
        "the fixer could not read the turn record: {results:?}\n{log}"
    );
    assert!(log.contains("the fixer revised the skill"), "{log}");
    let cards = assistant.inbox();
    let revise: Vec<&Value> = cards
        .iter()
        .filter(|c| c["kind"] == "revise" && c["skill"] == "weekly-a")
        .collect();
    assert_eq!(revise.len(), 1, "{cards:#?}\n{log}");
    assert_eq!(revise[0]["filed_by"], "fixer");
    let card = revise[0]["id"].to_string();
    let shown = mindrune(&["card", "--workspace", assistant.ws(), "show", &card]);
    assert!(
        shown.contains("+  - do: Make reports/ if it is missing"),
        "{shown}"
    );
    let sessions = assistant.fixer_sessions("weekly-a");
    assert_eq!(sessions.len(), 1, "one attempt, admitted");
    // Handed pointers only, with read-only tools and the answer tool.
    let first = &sessions[0][0];
    let pointers = act_request(first);
    let record = pointers["turn_record"].as_str().unwrap();
    assert!(
        record.starts_with(
            assistant
                .root
                .join("home/.claude/projects")
                .to_str()
                .unwrap()
        ) && record.ends_with(".jsonl"),
        "the turn record is Claude Code's transcript, from the hooks: {record}"
    );
    let mut offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    offered.sort_unstable();
    assert_eq!(offered, ["Glob", "Grep", "Read", "StructuredOutput"]);

    // --- stop: the record shows the procedure was not followed -----------------------------
    let mut steps = read_pointers();
    steps.push(answer(json!({
        "decision": "stop",
        "reason": "the record shows step 2 was not followed: file_write was never called",
    })));
    assistant
        .model
        .script_when("\"skill\": \"weekly-b\"", steps);
    assistant.use_and_report("weekly-b");
    let log = assistant.wait_for_fixer(&mut known);
    assert!(
        log.contains("the fixer stopped without a revision"),
        "{log}"
    );
    assert!(
        !assistant.inbox().iter().any(|c| c["skill"] == "weekly-b"),
        "a stop filed a card"
    );
    let record = mindrune(&[
        "playbook",
        "--workspace",
        assistant.ws(),
        "record",
        "weekly-b",
    ]);
    assert!(record.contains("file_write was never called"), "{record}");

    // --- malformed: refused, asked again, refused again, nothing filed ---------------------
    let steps = vec![decide(|request| {
        let pointers = act_request(request);
        let skill = std::fs::read_to_string(pointers["skill_file"].as_str().unwrap()).unwrap();
        if first_prompt(request).contains("your answer was refused") {
            // A step naming a tool the runtime does not have: the door's blocking checks.
            answer(json!({
                "decision": "revise",
                "reason": "step 2 should use the shell",
                "skill_md": skill.replace("tool: file_write", "tool: shell"),
                "fingerprint": pointers["fingerprint"],
            }))
        } else {
            answer(json!({
                "decision": "revise",
                "reason": "step 2 is wrong",
                "skill_md": skill,
                "fingerprint": format!("sha256:{}", "0".repeat(64)),
            }))
        }
    })];
    assistant
        .model
        .script_when("\"skill\": \"weekly-c\"", steps);
    assistant.use_and_report("weekly-c");
    let log = assistant.wait_for_fixer(&mut known);
    assert!(log.contains("was refused twice"), "{log}");
    assert!(log.contains("nothing was filed"), "{log}");
    assert!(
        log.contains("shell"),
        "the second refusal names its reason: {log}"
    );
    assert_eq!(assistant.fixer_sessions("weekly-c").len(), 2, "one retry");
    let retry = &assistant.fixer_sessions("weekly-c")[1][0];
    assert!(
        first_prompt(retry).contains("is not the request's fingerprint"),
        "the retry carries the first refusal"
    );
    assert!(
        !assistant.inbox().iter().any(|c| c["skill"] == "weekly-c"),
        "a refused answer filed a card"
    );
    let record = mindrune(&[
        "playbook",
        "--workspace",
        assistant.ws(),
        "record",
        "weekly-c",
    ]);
    assert!(!record.contains("step 2 is wrong"), "{record}");

    // The fixers' tokens never reached the model.
    let digests = fixer_token_digests(&assistant.workspace);
    assert_eq!(digests.len(), 3);
    let sent = serde_json::to_string(&assistant.model.requests()).unwrap();
    for word in hex_words(&sent) {
        assert!(
            !digests.contains(&mindrune_core::sha256(word.as_bytes())),
            "a fixer token reached the model"
        );
    }
}

#[test]
fn the_observer_suggests_the_steps_redone_across_turns_of_a_real_transcript() {
    if skipped("the_observer_suggests") {
        return;
    }
    let (_dir, assistant) = Assistant::new(&[]);
    let notes = assistant.workspace.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(notes.join("mon.md"), "TODO: ship\n").unwrap();
    std::fs::write(notes.join("tue.md"), "TODO: test\n").unwrap();
    let turn = |day: &str, pattern: &str| -> Vec<Step> {
        let path = notes.join(format!("{day}.md")).display().to_string();
        vec![
            super::model_api::bash(&format!("wc -l {path}")),
            tool("Read", json!({"file_path": path})),
            tool(
                "Grep",
                json!({"pattern": pattern, "path": notes.display().to_string()}),
            ),
            Step::Text(format!("{day} is counted.")),
        ]
    };
    // One session, two turns (the second resumes the first): the same three steps on other
    // files. The stand-in counts the session's assistant turns, so one script spans both.
    let mut steps = turn("mon", "TODO");
    steps.extend(turn("tue", "FIXME"));
    assistant.model.script("observe", steps);
    let session = "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b";
    let run = |prompt: &str, resume: bool| -> Output {
        let flag = if resume { "--resume" } else { "--session-id" };
        assistant
            .claude
            .run_args(&assistant.workspace, prompt, None, &[flag, session])
    };
    run("[[observe]] Count Monday's notes.", false);
    run("Now count Tuesday's notes.", true);

    let connection =
        rusqlite::Connection::open(assistant.workspace.join(".mindrune/playbooks.sqlite3"))
            .unwrap();
    let suggestions: Vec<(String, String)> = connection
        .prepare("SELECT source, text FROM suggestions ORDER BY id")
        .unwrap()
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(suggestions.len(), 1, "{suggestions:#?}");
    let (source, text) = &suggestions[0];
    assert_eq!(source, "observer");
    assert!(
        text.contains(
            "turns 1 (\"[[observe]] Count Monday's notes.\"), 2 (\"Now count Tuesday's notes.\")"
        ),
        "{text}"
    );
    assert!(
        text.contains("Bash(wc -l <path>) → Read(file_path) → Grep(path, pattern)"),
        "{text}"
    );
    // A suggestion, never a skill.
    assert!(assistant.inbox().is_empty());
    assert!(
        std::fs::read_dir(assistant.workspace.join("skills/pending"))
            .unwrap()
            .next()
            .is_none()
    );
}

/// The canned answers of the Lab's checklist-gate scenario (`tests/data/lab/checklist-gate/`).
fn lab_answer(act: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lab/checklist-gate")
        .join(format!("{act}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn lab_build_with_the_claude_agent_lands_both_acts_answers_through_plan_bind_and_apply() {
    if skipped("lab_build_with_the_claude_agent") {
        return;
    }
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("skills")).unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let model = ModelApi::start();
    // Each act reads the workspace, then answers with the package's contract.
    model.script_when(
        "# `skill-lab-architecture`",
        vec![
            tool("Glob", json!({"pattern": "skills/**/X.yaml"})),
            answer(lab_answer("skill-lab-architecture")),
        ],
    );
    model.script_when(
        "# `skill-lab-author`",
        vec![
            tool("Glob", json!({"pattern": "skills/**"})),
            answer(lab_answer("skill-lab-author")),
        ],
    );
    let mut path = vec![tools.clone()];
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let output = Command::new(mindrune_bin())
        .args(["lab", "build", "--target-dir", "skills/checklist-gate"])
        .args([
            "--objective",
            "Gate a release or hand-over on its checklist and the evidence recorded for each item.",
        ])
        .args(["--agent", "claude", "--agent-budget-usd", "0.5", "--json"])
        .current_dir(&root)
        .env_clear()
        .env("PATH", std::env::join_paths(path).unwrap())
        .env("HOME", &home)
        .env("MINDRUNE_HOME", root.join(".home"))
        .env("ANTHROPIC_BASE_URL", &model.url)
        .env("ANTHROPIC_API_KEY", "sk-ant-standin")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("TMPDIR", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        result["apply_result"]["verdict"], "validated_and_applied",
        "{result:#}"
    );
    let steps: Vec<&str> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["sealed"; 6]);
    for file in ["SKILL.md", "X.yaml"] {
        assert!(
            root.join("skills/checklist-gate").join(file).is_file(),
            "{file}"
        );
    }
    // What each act took is said on stderr.
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("{stderr}");
    for act in ["skill-lab-architecture", "skill-lab-author"] {
        assert!(
            stderr.contains(&format!("agent {act}: 1 attempt, ")),
            "{stderr}"
        );
    }

    // Each act was one Claude Code session: the package's own contract as its instructions,
    // the pipeline's request, read-only tools.
    let firsts: Vec<Value> = model
        .requests()
        .into_iter()
        .filter(|r| r.get("tools").is_some() && assistant_turns(r) == 0)
        .collect();
    assert_eq!(firsts.len(), 2, "two acts, each admitted at once");
    let architect = &firsts[0];
    let prompt = first_prompt(architect);
    assert!(
        prompt.contains("Return exactly one") || prompt.contains("`runx_final_result`"),
        "{prompt}"
    );
    let request = act_request(architect);
    assert_eq!(request["task"], "skill-lab-architecture");
    assert_eq!(request["runner"], "build");
    assert!(request["context"]["authoring_context"]["base_digest"].is_string());
    let author = act_request(&firsts[1]);
    assert_eq!(author["task"], "skill-lab-author");
    assert!(first_prompt(&firsts[1]).contains("Receive the exact native `architecture_plan`"));
    assert!(author["context"]["architecture_plan"]["plan_digest"].is_string());
    let mut offered: Vec<&str> = architect["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    offered.sort_unstable();
    assert_eq!(offered, ["Glob", "Grep", "Read", "StructuredOutput"]);
}
