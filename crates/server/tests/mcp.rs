//! The playbook skills' MCP server, driven by a real rmcp client over an in-memory pipe: the
//! eight tools and their schemas, the door and the path rule as the assistant meets them, and
//! how the human is asked: elicitation before protocol 2026-07-28, an input-required result on
//! it, and nothing done under `ask` for a client that declares no way to ask.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mindrune_core::Permissions;
use mindrune_engine::{CardState, Playbooks};
use mindrune_server::PlaybookServer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig,
    ElicitRequestParams, ElicitResult, ElicitationAction, Implementation, ProtocolVersion,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, RequestContext, RoleClient, RunningService,
};
use rmcp::{ClientHandler, ErrorData, ServiceExt as _};
use serde_json::{Value, json};

/// The tools the test runtime has besides MindRune's own.
const TOOLS: &[&str] = &["shell", "browser", "email_send"];

struct Workspace {
    _dir: tempfile::TempDir,
    path: PathBuf,
    playbooks: Arc<Playbooks>,
}

/// A fixer that only hands its report's token back, beside the workspace, so a test can file a
/// revision as the fixer would.
const FIXER: &str = "fixer = 'printf %s \"$MINDRUNE_FIXER_TOKEN\" > \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" && mv \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT\"'";

impl Workspace {
    /// The token the fixer of a report was handed.
    fn token(&self, report: i64) -> String {
        let path = self
            .path
            .parent()
            .expect("home")
            .join(format!("token-{report}"));
        for _ in 0..200 {
            if let Ok(token) = std::fs::read_to_string(&path) {
                return token;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("the fixer of report #{report} never wrote its token");
    }

    /// A workspace inside a fresh home tree, with `playbooks.toml` naming the runtime's tools and
    /// the home, and `permissions` as `permissions.yaml` when given (else the shipped default).
    fn new(permissions: Option<&Permissions>) -> Workspace {
        let dir = tempfile::tempdir().expect("temp dir");
        let home = dir.path().canonicalize().expect("canonical home");
        let path = home.join("workspace");
        std::fs::create_dir_all(&path).expect("workspace dir");
        let tools: Vec<String> = TOOLS.iter().map(|tool| format!("{tool:?}")).collect();
        std::fs::write(
            path.join("playbooks.toml"),
            format!(
                "tools = [{}]\nhome = {:?}\n{FIXER}\n",
                tools.join(", "),
                home.display().to_string()
            ),
        )
        .expect("playbooks.toml");
        if let Some(permissions) = permissions {
            std::fs::write(path.join("permissions.yaml"), permissions.render())
                .expect("permissions.yaml");
        }
        let playbooks = Arc::new(Playbooks::open(&path).expect("open workspace"));
        Workspace {
            _dir: dir,
            path,
            playbooks,
        }
    }

    fn server(&self) -> PlaybookServer {
        PlaybookServer::new(Arc::clone(&self.playbooks)).expect("server")
    }

    fn exists(&self, relative: &str) -> bool {
        self.path.join(relative).exists()
    }

    fn pending(&self) -> Vec<String> {
        names_in(&self.path.join("skills/pending"))
    }
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// How the test's human answers an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Human {
    /// The client does not declare elicitation.
    CannotBeAsked,
    Approves,
    AnswersNo,
    Declines,
    Cancels,
}

/// The assistant's host: an MCP client that records what its human was asked.
#[derive(Clone)]
struct Host {
    human: Human,
    asked: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for Host {
    fn get_info(&self) -> ClientConfig {
        let capabilities = if self.human == Human::CannotBeAsked {
            ClientCapabilities::default()
        } else {
            ClientCapabilities::builder().enable_elicitation().build()
        };
        ClientConfig::new(capabilities, Implementation::new("test-host", "0.0.0"))
            .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            panic!("the server asks with a form");
        };
        let schema = serde_json::to_value(&requested_schema).expect("schema");
        assert_eq!(
            schema["properties"]["approve"]["type"], "boolean",
            "{schema}"
        );
        self.asked.lock().unwrap().push(message);
        Ok(match self.human {
            Human::CannotBeAsked => panic!("a client without the capability was asked"),
            Human::Approves => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true}))
            }
            Human::AnswersNo => {
                ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": false}))
            }
            Human::Declines => ElicitResult::new(ElicitationAction::Decline),
            Human::Cancels => ElicitResult::new(ElicitationAction::Cancel),
        })
    }
}

struct Session {
    client: RunningService<RoleClient, Host>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Session {
    async fn call(&self, tool: &'static str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object");
        };
        self.client
            .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
            .await
            .unwrap_or_else(|err| panic!("{tool}: protocol error {err}"))
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

async fn connect(server: PlaybookServer, human: Human) -> Session {
    connect_with(server, human, ClientLifecycleMode::Initialize).await
}

async fn connect_with(
    server: PlaybookServer,
    human: Human,
    lifecycle: ClientLifecycleMode,
) -> Session {
    let (server_side, client_side) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_side).await {
            let _ = running.waiting().await;
        }
    });
    let asked = Arc::new(Mutex::new(Vec::new()));
    let client = Host {
        human,
        asked: Arc::clone(&asked),
    }
    .serve_with_lifecycle(client_side, lifecycle)
    .await
    .expect("client connects");
    Session { client, asked }
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

#[track_caller]
fn ok(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(false),
        "expected success: {}",
        text(result)
    );
    text(result)
}

#[track_caller]
fn refused(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "expected isError: {}",
        text(result)
    );
    text(result)
}

fn weekly_report() -> Value {
    json!({
        "name": "weekly-report",
        "trigger": "the human asks for the weekly report",
        "use_when": "a weekly status report is due on Friday",
        "not_when": "a one-off summary of a single project",
        "preconditions": ["the week's notes are in notes/"],
        "steps": [
            {"do": "Collect the week's notes", "tool": "shell"},
            {"do": "Write the report to reports/", "tool": "file_write"},
            {"do": "Send it to the team", "tool": "email_send"}
        ],
        "expected_result": "reports/<week>.md exists and the team has it",
        "failure_modes": ["notes/ is empty on a holiday week"],
        "evidence": ["the report of week 12, accepted by the human"],
        "procedure": "Gather, write, send. Keep it to one page."
    })
}

/// Creates weekly-report through the door and approves its card: a live, carried skill.
async fn live_weekly_report(workspace: &Workspace) {
    let session = connect(workspace.server(), Human::Approves).await;
    ok(&session.call("skill_create", weekly_report()).await);
    let cards = workspace.playbooks.ledger().cards(true).expect("cards");
    let card = cards
        .iter()
        .find(|card| card.skill == "weekly-report")
        .expect("its card");
    let answered = workspace.playbooks.approve(card.id).expect("approve");
    assert_eq!(answered.state, CardState::Applied, "{}", answered.outcome);
    assert!(workspace.exists("skills/weekly-report/SKILL.md"));
}

#[tokio::test]
async fn lists_the_eight_tools_each_with_its_argument_schema() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::CannotBeAsked).await;

    let info = session.client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|info| info.name.as_str()),
        Some("mindrune")
    );
    assert_eq!(
        info.server_info.as_ref().map(|info| info.version.as_str()),
        Some(env!("CARGO_PKG_VERSION"))
    );
    let instructions = info.instructions.clone().unwrap_or_default();
    assert!(instructions.contains("playbook_search"), "{instructions}");
    assert!(instructions.contains("Carried skills:"), "{instructions}");
    assert!(
        instructions.contains("Other skills (look up with playbook_search):"),
        "{instructions}"
    );

    let tools = session.client.list_all_tools().await.expect("tools/list");
    let mut names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    names.sort_unstable();
    let mut expected = mindrune_engine::MCP_TOOLS.to_vec();
    expected.sort_unstable();
    assert_eq!(names, expected);

    let fields: &[(&str, &[&str], &[&str])] = &[
        ("workspace_read", &["path", "turn"], &["path"]),
        ("file_write", &["path", "content"], &["path", "content"]),
        ("file_copy", &["from", "to"], &["from", "to"]),
        ("file_move", &["from", "to"], &["from", "to"]),
        (
            "skill_create",
            &[
                "name",
                "trigger",
                "use_when",
                "not_when",
                "preconditions",
                "steps",
                "forbidden_tools",
                "expected_result",
                "failure_modes",
                "evidence",
                "procedure",
                "suggested_by",
                "accepted_as_done",
            ],
            &["name", "procedure"],
        ),
        (
            "skill_refine",
            &[
                "action",
                "skill",
                "revision",
                "step",
                "turn",
                "report",
                "content",
                "fingerprint",
                "version",
                "why",
                "token",
            ],
            &["action"],
        ),
        ("playbook_search", &["query", "limit"], &["query"]),
        ("playbook_record", &["skill"], &[]),
    ];
    for (name, properties, required) in fields {
        let tool = tools
            .iter()
            .find(|tool| tool.name == *name)
            .expect("listed");
        assert!(
            tool.description
                .as_deref()
                .is_some_and(|text| !text.is_empty()),
            "{name}"
        );
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        let mut listed: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} has properties: {schema}"))
            .keys()
            .map(String::as_str)
            .collect();
        listed.sort_unstable();
        let mut properties = properties.to_vec();
        properties.sort_unstable();
        assert_eq!(listed, properties, "{name}");
        for property in &properties {
            let described = &schema["properties"][property]["description"];
            assert!(
                described.as_str().is_some_and(|text| !text.is_empty()),
                "{name}.{property}: {schema}"
            );
        }
        let mut listed_required: Vec<&str> = schema["required"]
            .as_array()
            .map(|items| items.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        listed_required.sort_unstable();
        let mut required = required.to_vec();
        required.sort_unstable();
        assert_eq!(listed_required, required, "{name}: {schema}");
        assert_eq!(
            schema["additionalProperties"], false,
            "{name} refuses unknown arguments"
        );
    }

    // A step is an open object, so that a misspelled key reaches the door instead of the client
    // dropping it; its `do` and `tool` are described.
    let create = tools
        .iter()
        .find(|tool| tool.name == "skill_create")
        .unwrap();
    let step = &create.input_schema["properties"]["steps"]["items"];
    assert_eq!(step["type"], "object", "{step}");
    assert!(
        step.get("additionalProperties")
            .is_none_or(|extra| extra != false),
        "{step}"
    );
    assert_eq!(step["properties"]["do"]["type"], "string");
    assert_eq!(step["properties"]["tool"]["type"], "string");
}

#[tokio::test]
async fn a_client_that_declares_no_way_to_ask_gets_nothing_done_under_ask_for_every_act() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let mut monthly = weekly_report();
    monthly["name"] = json!("monthly-report");
    monthly["steps"] = json!([{"do": "Collect the month's notes", "tool": "shell"}]);
    let calls = [
        ("skill_create", monthly, "create", "drafted"),
        (
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2}),
            "report",
            "filed",
        ),
        (
            "skill_refine",
            json!({"action": "retire", "skill": "weekly-report", "why": "the team stopped"}),
            "retire",
            "filed",
        ),
    ];
    for (tool, arguments, act, done) in calls {
        let said = refused(&session.call(tool, arguments).await);
        assert!(
            said.contains(&format!(
                "declared no way to ask your human (no elicitation), and under `{act}: ask` nothing is {done} without their yes, so nothing was {done}"
            )),
            "{act}: {said}"
        );
        assert!(said.contains("`Elicitation` hook"), "{act}: {said}");
        assert!(said.contains(&format!("`{act}: ")), "{act}: {said}");
    }
    assert!(workspace.pending().is_empty());
    let cards = workspace.playbooks.ledger().cards(false).expect("cards");
    assert!(
        cards.iter().all(|card| card.state != CardState::Waiting),
        "{cards:?}"
    );
    let usage = workspace
        .playbooks
        .ledger()
        .usage(Some("weekly-report"))
        .expect("usage");
    assert!(
        usage.iter().all(|line| line.kind != "correction"),
        "{usage:?}"
    );

    // The same client under `card` lines: filed without asking, and the card waits.
    let permissions = Permissions::parse("create: card\n").expect("permissions");
    let workspace = Workspace::new(Some(&permissions));
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let said = ok(&session.call("skill_create", weekly_report()).await);
    assert!(
        said.contains("Drafted weekly-report and filed card #"),
        "{said}"
    );
    assert_eq!(workspace.pending(), ["weekly-report"]);
}

#[tokio::test]
async fn skill_create_in_unattended_mode_goes_live_at_once() {
    let workspace = Workspace::new(Some(&Permissions::unattended()));
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let said = ok(&session.call("skill_create", weekly_report()).await);
    assert!(said.contains("applied on its own"), "{said}");
    assert!(workspace.exists("skills/weekly-report/SKILL.md"));
    assert!(workspace.pending().is_empty());
}

#[tokio::test]
async fn a_misspelled_tools_key_is_refused_by_the_blocking_check_and_leaves_nothing() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let mut proposal = weekly_report();
    proposal["steps"][1] = json!({"do": "Write the report to reports/", "tools": "file_write"});
    let said = refused(&session.call("skill_create", proposal).await);
    assert!(said.contains("cannot be followed safely"), "{said}");
    assert!(
        said.contains("`tools`"),
        "the refusal names the key: {said}"
    );
    assert!(workspace.pending().is_empty(), "nothing on disk");
    assert!(
        workspace
            .playbooks
            .ledger()
            .cards(false)
            .expect("cards")
            .is_empty()
    );
}

#[tokio::test]
async fn malformed_steps_and_arguments_are_tool_errors_that_say_where() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::CannotBeAsked).await;

    let mut proposal = weekly_report();
    proposal["steps"][1] = json!("write the report");
    let said = refused(&session.call("skill_create", proposal).await);
    assert!(said.contains("step 2"), "{said}");

    let mut proposal = weekly_report();
    proposal["steps"] = json!([]);
    let said = refused(&session.call("skill_create", proposal).await);
    assert!(
        said.contains("cannot be followed safely"),
        "an empty list of steps blocks: {said}"
    );

    let mut proposal = weekly_report();
    proposal["version"] = json!(7);
    let said = refused(&session.call("skill_create", proposal).await);
    assert!(
        said.contains("version and status are set by the runtime"),
        "{said}"
    );

    let said = refused(&session.call("skill_create", json!({"name": "x"})).await);
    assert!(said.contains("procedure"), "{said}");

    let said = refused(
        &session
            .call(
                "skill_refine",
                json!({"action": "report", "skill": "weekly-report"}),
            )
            .await,
    );
    assert!(said.contains("needs revision and step"), "{said}");
    let said = refused(
        &session
            .call("skill_refine", json!({"action": "revise", "report": 1}))
            .await,
    );
    assert!(said.contains("needs content and fingerprint"), "{said}");
    let said = refused(
        &session
            .call(
                "skill_refine",
                json!({"action": "retire", "skill": "a", "version": 2}),
            )
            .await,
    );
    assert!(said.contains("does not take version"), "{said}");
    let said = refused(
        &session
            .call("skill_refine", json!({"action": "rewrite", "skill": "a"}))
            .await,
    );
    assert!(said.contains("action"), "{said}");

    assert!(workspace.pending().is_empty());
}

#[tokio::test]
async fn the_file_tools_refuse_skills_in_every_spelling() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    for path in [
        "skills/x/SKILL.md",
        "notes/../skills/x",
        "Skills/x",
        "./skills/pending/x/SKILL.md",
    ] {
        let said = refused(
            &session
                .call(
                    "file_write",
                    json!({"path": path, "content": "---\nname: x\n---\n"}),
                )
                .await,
        );
        assert!(said.contains("skill_create"), "{path}: {said}");
    }
    assert!(
        names_in(&workspace.path.join("skills"))
            .iter()
            .all(|name| name == "pending" || name == "rejected")
    );

    ok(&session
        .call(
            "file_write",
            json!({"path": "notes/a.md", "content": "hello"}),
        )
        .await);
    let said = refused(
        &session
            .call(
                "file_copy",
                json!({"from": "notes/a.md", "to": "skills/a/SKILL.md"}),
            )
            .await,
    );
    assert!(said.contains("skills/"), "{said}");
    let said = refused(
        &session
            .call(
                "file_move",
                json!({"from": "notes/a.md", "to": "SKILLS/a.md"}),
            )
            .await,
    );
    assert!(said.contains("skills/"), "{said}");
    ok(&session
        .call(
            "file_copy",
            json!({"from": "notes/a.md", "to": "notes/b.md"}),
        )
        .await);
    ok(&session
        .call(
            "file_move",
            json!({"from": "notes/b.md", "to": "notes/c.md"}),
        )
        .await);
    assert_eq!(
        ok(&session
            .call("workspace_read", json!({"path": "notes/c.md"}))
            .await),
        "hello"
    );
    assert!(!workspace.exists("skills/a"));
}

#[tokio::test]
async fn reading_a_live_skill_writes_a_usage_line() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let said = ok(&session
        .call(
            "workspace_read",
            json!({"path": "skills/weekly-report/SKILL.md", "turn": "turns/2026-11-30/7.jsonl"}),
        )
        .await);
    assert!(said.contains("Gather, write, send."), "{said}");
    let usage = workspace
        .playbooks
        .ledger()
        .usage(Some("weekly-report"))
        .expect("usage");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0].kind, "read");
    assert!(usage[0].ok);
    assert_eq!(usage[0].revision, Some(1));
    assert_eq!(usage[0].turn.as_deref(), Some("turns/2026-11-30/7.jsonl"));

    // A read of something that is not there is logged as a read that did not go through.
    refused(
        &session
            .call("workspace_read", json!({"path": "skills/nope"}))
            .await,
    );
    ok(&session
        .call("workspace_read", json!({"path": "skills/weekly-report"}))
        .await);
    let usage = workspace
        .playbooks
        .ledger()
        .usage(Some("weekly-report"))
        .expect("usage");
    assert_eq!(usage.len(), 2);
}

/// The two ways a client that can be asked is connected: an initialize handshake on
/// 2025-11-25 (asked by elicitation) and discovery of 2026-07-28 (asked by an input-required
/// result).
fn both_protocols() -> [(&'static str, ClientLifecycleMode); 2] {
    [
        ("2025-11-25", ClientLifecycleMode::Initialize),
        (
            "2026-07-28",
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    ]
}

#[tokio::test]
async fn a_no_on_either_protocol_gets_nothing_drafted() {
    for (protocol, lifecycle) in both_protocols() {
        for human in [Human::Declines, Human::AnswersNo] {
            let workspace = Workspace::new(None);
            let session = connect_with(workspace.server(), human, lifecycle.clone()).await;
            let said = refused(&session.call("skill_create", weekly_report()).await);
            assert_eq!(
                said, "your human said no; nothing was drafted",
                "{protocol} {human:?}"
            );
            let asked = session.asked();
            assert_eq!(asked.len(), 1, "{protocol} {human:?}");
            assert!(asked[0].contains("weekly-report"), "{}", asked[0]);
            assert!(workspace.pending().is_empty(), "{protocol} {human:?}");
            assert!(
                workspace
                    .playbooks
                    .ledger()
                    .cards(false)
                    .expect("cards")
                    .is_empty()
            );
        }
    }
}

#[tokio::test]
async fn a_cancel_is_nobody_answering_not_a_no_and_names_the_ways_forward() {
    for (protocol, lifecycle) in both_protocols() {
        let workspace = Workspace::new(None);
        let session = connect_with(workspace.server(), Human::Cancels, lifecycle).await;
        let said = refused(&session.call("skill_create", weekly_report()).await);
        assert!(said.starts_with("Nobody answered"), "{protocol}: {said}");
        assert!(!said.contains("said no"), "{protocol}: {said}");
        assert!(said.contains("nothing was drafted"), "{protocol}: {said}");
        for way in [
            "`Elicitation` hook",
            "`create: card`",
            "mindrune playbook init --unattended",
        ] {
            assert!(said.contains(way), "{protocol}: {way} in {said}");
        }
        assert!(workspace.pending().is_empty(), "{protocol}");
    }
}

#[tokio::test]
async fn a_yes_on_either_protocol_gets_the_draft() {
    for (protocol, lifecycle) in both_protocols() {
        let workspace = Workspace::new(None);
        let session = connect_with(workspace.server(), Human::Approves, lifecycle).await;
        let said = ok(&session.call("skill_create", weekly_report()).await);
        assert!(said.contains("Drafted weekly-report"), "{protocol}: {said}");
        assert_eq!(session.asked().len(), 1, "{protocol}");
        assert_eq!(workspace.pending(), ["weekly-report"], "{protocol}");
    }
}

#[tokio::test]
async fn on_protocol_2026_07_28_the_question_is_an_input_required_result_bound_to_the_call() {
    let workspace = Workspace::new(None);
    let session = connect_with(
        workspace.server(),
        Human::Approves,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await;
    let Value::Object(arguments) = weekly_report() else {
        unreachable!()
    };
    let first = session
        .client
        .call_tool_once(
            CallToolRequestParams::new("skill_create").with_arguments(arguments.clone()),
        )
        .await
        .expect("first round");
    let CallToolResponse::InputRequired(question) = first else {
        panic!("the first round is a question: {first:?}");
    };
    let wire = serde_json::to_value(&question).expect("wire");
    assert_eq!(wire["resultType"], "input_required", "{wire}");
    let request = &wire["inputRequests"]["approve"];
    assert_eq!(request["method"], "elicitation/create", "{wire}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["approve"]["type"], "boolean",
        "{wire}"
    );
    assert!(
        request["params"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("weekly-report")),
        "{wire}"
    );
    let state = question.request_state.clone().expect("a request state");
    assert!(workspace.pending().is_empty(), "nothing before the answer");
    let yes: rmcp::model::InputResponses = [(
        "approve".to_string(),
        json!({"action": "accept", "content": {"approve": true}}),
    )]
    .into_iter()
    .collect();

    // The yes does not carry over to a call with other arguments.
    let mut other = arguments.clone();
    other.insert("name".to_string(), json!("friday-report"));
    let replay = session
        .client
        .call_tool_once(
            CallToolRequestParams::new("skill_create")
                .with_arguments(other)
                .with_input_responses(yes.clone())
                .with_request_state(state.clone()),
        )
        .await
        .expect("replayed round");
    let CallToolResponse::Complete(replay) = replay else {
        panic!("a replay is answered: {replay:?}");
    };
    assert!(
        refused(&replay).contains("does not belong to this call"),
        "{}",
        text(&replay)
    );
    assert!(workspace.pending().is_empty());

    let second = session
        .client
        .call_tool_once(
            CallToolRequestParams::new("skill_create")
                .with_arguments(arguments)
                .with_input_responses(yes)
                .with_request_state(state),
        )
        .await
        .expect("second round");
    let CallToolResponse::Complete(done) = second else {
        panic!("the second round is the answer: {second:?}");
    };
    assert!(
        ok(&done).contains("Drafted weekly-report"),
        "{}",
        text(&done)
    );
    assert_eq!(workspace.pending(), ["weekly-report"]);
}

#[tokio::test]
async fn a_report_revert_and_retire_are_asked_on_protocol_2026_07_28_too() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect_with(
        workspace.server(),
        Human::Approves,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await;
    let said = ok(&session
        .call(
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2}),
        )
        .await);
    assert!(
        said.contains("Reported step 2 of weekly-report v1"),
        "{said}"
    );
    let said = ok(&session
        .call(
            "skill_refine",
            json!({"action": "retire", "skill": "weekly-report"}),
        )
        .await);
    assert!(
        said.contains("Filed retiring weekly-report as card #"),
        "{said}"
    );
    let asked = session.asked();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].contains("report that step 2"), "{asked:?}");
    assert!(asked[1].contains("should be retired"), "{asked:?}");
}

#[tokio::test]
async fn a_proposal_the_door_refuses_never_bothers_the_human() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect(workspace.server(), Human::Approves).await;
    let said = refused(&session.call("skill_create", weekly_report()).await);
    assert!(said.contains("already exists"), "{said}");
    let mut same_steps = weekly_report();
    same_steps["name"] = json!("friday-report");
    let said = refused(&session.call("skill_create", same_steps).await);
    assert!(
        said.contains("weekly-report"),
        "the refusal names the skill that exists: {said}"
    );
    assert!(session.asked().is_empty(), "{:?}", session.asked());

    // `suggested_by: human` is the assistant's word: the human is still asked.
    let mut asked_for = weekly_report();
    asked_for["name"] = json!("monthly-report");
    asked_for["suggested_by"] = json!("human");
    asked_for["steps"] = json!([{"do": "Collect the month's notes", "tool": "shell"}]);
    ok(&session.call("skill_create", asked_for).await);
    assert_eq!(session.asked().len(), 1, "{:?}", session.asked());
    assert!(session.asked()[0].contains("monthly-report"));
    assert_eq!(workspace.pending(), ["monthly-report"]);
}

#[tokio::test]
async fn a_report_is_asked_about_and_a_no_files_nothing() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let report = json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 2, "turn": "../turns/9.jsonl"});

    let session = connect(workspace.server(), Human::Declines).await;
    let said = refused(&session.call("skill_refine", report.clone()).await);
    assert_eq!(said, "your human said no; nothing was filed");
    assert_eq!(
        session.asked(),
        ["The assistant wants to report that step 2 of weekly-report v1 went wrong. Allow it?"]
    );
    let usage = workspace
        .playbooks
        .ledger()
        .usage(Some("weekly-report"))
        .expect("usage");
    assert!(
        usage.iter().all(|line| line.kind != "correction"),
        "{usage:?}"
    );

    let session = connect(workspace.server(), Human::Approves).await;
    let said = ok(&session.call("skill_refine", report).await);
    assert!(
        said.contains("Reported step 2 of weekly-report v1 (report #"),
        "{said}"
    );
    assert!(
        said.contains("The skill fixer started in the background"),
        "{said}"
    );
    let usage = workspace
        .playbooks
        .ledger()
        .usage(Some("weekly-report"))
        .expect("usage");
    let corrections: Vec<_> = usage
        .iter()
        .filter(|line| line.kind == "correction")
        .collect();
    assert_eq!(corrections.len(), 1);
    assert_eq!(corrections[0].step, Some(2));
    assert_eq!(corrections[0].turn.as_deref(), Some("../turns/9.jsonl"));

    // A refusal from the engine is a tool error with its message.
    let said = refused(
        &session
            .call(
                "skill_refine",
                json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 9}),
            )
            .await,
    );
    assert!(said.contains("has 3 steps"), "{said}");
}

#[tokio::test]
async fn retire_and_revert_file_cards_and_the_fixer_files_as_fixer() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect(workspace.server(), Human::Approves).await;

    let said = ok(&session
        .call(
            "skill_refine",
            json!({"action": "retire", "skill": "weekly-report", "why": "the team stopped"}),
        )
        .await);
    assert!(
        said.contains("Filed retiring weekly-report as card #"),
        "{said}"
    );
    let said = refused(
        &session
            .call(
                "skill_refine",
                json!({"action": "revert", "skill": "weekly-report", "version": 1}),
            )
            .await,
    );
    assert!(said.contains("no kept version 1"), "{said}");

    let said = ok(&session
        .call(
            "skill_refine",
            json!({"action": "report", "skill": "weekly-report", "revision": 1, "step": 3}),
        )
        .await);
    let report: i64 = said
        .split("report #")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("a report number in {said}"));
    let live = std::fs::read_to_string(workspace.path.join("skills/weekly-report/SKILL.md"))
        .expect("live");
    let fingerprint = mindrune_core::sha256(live.as_bytes());
    let corrected = live.replace("Send it to the team", "Send it to the team's list");
    assert_ne!(corrected, live);
    let said = refused(
        &session
            .call(
                "skill_refine",
                json!({"action": "revise", "report": report, "content": corrected.clone(), "fingerprint": fingerprint.clone(), "token": "guessed"}),
            )
            .await,
    );
    assert!(
        said.contains("only the fixer started for report"),
        "the assistant cannot revise without the fixer's token: {said}"
    );
    let token = workspace.token(report);
    let said = ok(
        &session
            .call(
                "skill_refine",
                json!({"action": "revise", "report": report, "content": corrected, "fingerprint": fingerprint, "token": token}),
            )
            .await,
    );
    assert!(
        said.contains(&format!(
            "Filed the revision for report #{report} as card #"
        )),
        "{said}"
    );
    let cards = workspace.playbooks.ledger().cards(true).expect("cards");
    let revise = cards
        .iter()
        .find(|card| card.report_id == Some(report))
        .expect("the revise card");
    assert_eq!(revise.filed_by, "fixer");
    let retire = cards
        .iter()
        .find(|card| card.why.is_some())
        .expect("the retire card");
    assert_eq!(retire.filed_by, "assistant");
}

#[tokio::test]
async fn search_and_record_answer_in_lines() {
    let workspace = Workspace::new(None);
    live_weekly_report(&workspace).await;
    let session = connect(workspace.server(), Human::CannotBeAsked).await;

    let said = ok(&session
        .call("playbook_search", json!({"query": "weekly reports"}))
        .await);
    assert_eq!(
        said,
        "weekly-report — a weekly status report is due on Friday (carried) (owes forbidden-tools)"
    );
    let said = ok(&session
        .call("playbook_search", json!({"query": "zebra", "limit": 500}))
        .await);
    assert_eq!(said, "No skill matches \"zebra\".");

    let said = ok(&session.call("playbook_record", json!({})).await);
    assert!(said.starts_with("weekly-report (v1, active)"), "{said}");
    let said = ok(&session
        .call("playbook_record", json!({"skill": "weekly-report"}))
        .await);
    assert!(said.starts_with("weekly-report (v1, active)"), "{said}");
    let said = refused(
        &session
            .call("playbook_record", json!({"skill": "nope"}))
            .await,
    );
    assert!(said.contains("nope"), "{said}");

    // The instructions of a server started now describe the carried skill.
    let server = workspace.server();
    assert!(
        server
            .instructions()
            .contains("- weekly-report: a weekly status report is due on Friday"),
        "{}",
        server.instructions()
    );
}

#[tokio::test]
async fn suggestions_follow_the_next_result_once() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    workspace
        .playbooks
        .observer_suggests("the weekly report is rebuilt by hand every Friday")
        .expect("suggest");
    let said = refused(
        &session
            .call("workspace_read", json!({"path": "notes/none.md"}))
            .await,
    );
    assert!(
        said.contains(
            "\nSuggestion: The observer noticed: the weekly report is rebuilt by hand every Friday"
        ),
        "{said}"
    );
    let said = ok(&session
        .call("playbook_search", json!({"query": "weekly"}))
        .await);
    assert!(!said.contains("Suggestion:"), "{said}");
}

#[tokio::test]
async fn a_skill_made_live_or_retired_mid_session_reaches_the_assistant_with_the_next_result() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::Approves).await;
    ok(&session.call("skill_create", weekly_report()).await);
    let card = workspace.playbooks.ledger().cards(true).expect("cards")[0].id;
    workspace.playbooks.approve(card).expect("approve");

    let said = ok(&session
        .call("playbook_search", json!({"query": "weekly"}))
        .await);
    assert!(
        said.ends_with(
            "Carried skills changed during this session; now carried:\n- weekly-report: a weekly status report is due on Friday"
        ),
        "{said}"
    );
    // Given once: the next result does not repeat it.
    let said = ok(&session
        .call("playbook_search", json!({"query": "weekly"}))
        .await);
    assert!(!said.contains("Carried skills changed"), "{said}");

    let filed = workspace
        .playbooks
        .retire("weekly-report", None, "human")
        .expect("retire");
    workspace.playbooks.approve(filed.card).expect("approve");
    let said = refused(
        &session
            .call("workspace_read", json!({"path": "notes/none.md"}))
            .await,
    );
    assert!(
        said.ends_with("Carried skills changed during this session; now carried: (none)"),
        "{said}"
    );
}

#[tokio::test]
async fn a_hand_written_skills_owed_fields_come_with_its_read_search_and_record() {
    let workspace = Workspace::new(None);
    let dir = workspace.path.join("skills/hand-made");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: hand-made\ntrigger: the human asks for the hand-made report\nuse_when: a hand-made report is due\nnot_when: a weekly report\nsteps:\n  - do: Read the notes\n    tool: workspace_read\nversion: 1\nstatus: active\n---\nRead, then write.\n",
    )
    .expect("skill");
    let session = connect(workspace.server(), Human::CannotBeAsked).await;
    let owed = "preconditions, forbidden-tools, expected_result, failure_modes, evidence";
    let said = ok(&session
        .call("workspace_read", json!({"path": "skills/hand-made"}))
        .await);
    assert!(said.starts_with("---\nname: hand-made\n"), "{said}");
    assert!(
        said.contains(&format!(
            "(MindRune: this skill owes {owed}: left out or blank, so it still loads"
        )),
        "{said}"
    );
    let said = ok(&session
        .call("playbook_search", json!({"query": "hand-made"}))
        .await);
    assert_eq!(
        said,
        format!("hand-made — a hand-made report is due (owes {owed})")
    );
    let said = ok(&session
        .call("playbook_record", json!({"skill": "hand-made"}))
        .await);
    assert!(
        said.contains(&format!("  owes: {owed} (left out; the skill still loads)")),
        "{said}"
    );

    // MindRune's own folder is not the assistant's to read.
    let said = refused(
        &session
            .call(
                "workspace_read",
                json!({"path": ".mindrune/playbooks.sqlite3"}),
            )
            .await,
    );
    assert!(said.contains("MindRune's own"), "{said}");
}

#[tokio::test]
async fn the_door_refuses_credentials_and_paths_as_people_write_them() {
    let workspace = Workspace::new(None);
    let session = connect(workspace.server(), Human::Approves).await;
    let phrasings = [
        "log in as ada with the password Tr0ub4dor&3",
        "my password is hunter2",
        "curl -u ada:Tr0ub4dor&3 https://reports.example.com/upload",
        "use the API key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "pass api_key 0123456789abcdef0123456789abcdef to the uploader",
        "cat {/etc/passwd}",
        "cat {/etc/passwd,/etc/shadow}",
        "read path:/etc/passwd",
        "scp host:/etc/passwd .",
    ];
    for phrase in phrasings {
        let mut proposal = weekly_report();
        proposal["steps"][0]["do"] = json!(phrase);
        let said = refused(&session.call("skill_create", proposal).await);
        assert!(
            said.contains("cannot be followed safely"),
            "{phrase}: {said}"
        );
        assert!(
            !said.contains("hunter2") && !said.contains("Tr0ub4dor"),
            "the refusal echoes the secret: {said}"
        );
    }
    assert!(
        session.asked().is_empty(),
        "nobody asked about a refused proposal"
    );
    // A regex and an escape are not paths.
    let mut proposal = weekly_report();
    proposal["steps"][0]["do"] = json!("Match the dates: \\d{4}-\\d{2}-\\d{2}, and strip \\x07");
    let said = ok(&session.call("skill_create", proposal).await);
    assert!(said.contains("Drafted weekly-report"), "{said}");
}
