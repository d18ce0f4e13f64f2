//! `mindrune mcp`: the playbook skills' MCP face, a stdio server with the assistant's eight tools
//! (`workspace_read`, `file_write`, `file_copy`, `file_move`, `skill_create`, `skill_refine`,
//! `playbook_search`, `playbook_record`). Each is a thin layer on
//! [`mindrune_engine::playbook::Playbooks`]: the engine is synchronous (SQLite inside), so every
//! call runs on Tokio's blocking pool.
//!
//! Results are text. A rule saying no ([`PlaybookError::Refused`]) and a machine failure alike
//! come back as a tool result with `isError` and the engine's message, never as a protocol
//! error, so the assistant reads why and can act on it; so do malformed arguments (MCP
//! 2025-11-25: input validation errors are tool execution errors). After every result, the
//! suggestions the assistant has not seen yet (the observer's, "what carries over") follow as
//! `Suggestion: …` lines.
//!
//! # Asking the human
//!
//! Where `permissions.yaml` says `ask` for an act (create, report, revise, revert, retire), the
//! human is asked before it happens, with one yes/no form ([`Approval`]) and a sentence saying
//! what is about to happen, the way the session's protocol allows:
//!
//! - Before 2026-07-28, when the client declared form elicitation: an `elicitation/create`
//!   request from the server.
//! - On 2026-07-28 and later, which forbids server-to-client requests, when the client declared
//!   form elicitation in the request: the tool call answers with an input-required result
//!   (SEP-2322) carrying the same form, and a request state bound to the call's arguments; the
//!   client asks its human and calls again with the answer and the state.
//!
//! Only `approve: true` lets the act go ahead (a skill_create is then attended). A no, a
//! decline or an answer that cannot be read refuses it. A `cancel` is nobody answering (what a
//! host with no person at it does, `claude -p` among them): not a no, but no yes either, so it
//! too refuses, and says how to go on. Every door check runs before asking, so a proposal the
//! engine would refuse never bothers the human.
//!
//! One rule for a client that declared no way to ask: under `ask` nothing happens without the
//! human's yes, so create, report, revise, revert and retire alike are refused, nothing drafted
//! or filed, with the ways forward (a client that can ask, an `Elicitation` hook of the host, or
//! a `card` or `auto` line in `permissions.yaml`). The host's own permission prompt is not taken
//! for the ask: the server cannot tell whether a person saw it, or whether there was one.
//!
//! `card` and `auto` ask nothing; the engine files the card, or applies it on its own.
//! `suggested_by: human` is the assistant's word and is recorded as such, but it does not make a
//! call attended: only the human's own yes, asked here, does.
//!
//! `skill_refine revise` takes the token MindRune handed the fixer started for the report: the
//! assistant that reported never sees it, so it cannot rewrite the skill itself.
//!
//! Logs go to stderr through `tracing`, never to stdout, which is the protocol.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use mindrune_core::playbook::permissions::{Act, Policy};
use mindrune_core::playbook::skill_file::{SkillFile, Step};
use mindrune_engine::playbook::cards::Answered;
use mindrune_engine::playbook::door::{Attendance, Created, Proposal, Suggester};
use mindrune_engine::playbook::fixer::FixerStart;
use mindrune_engine::playbook::refine::Filed;
use mindrune_engine::playbook::report::Report;
use mindrune_engine::playbook::{CardState, PlaybookError, Playbooks, record};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{InputResponses as ToolInputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationSchema, Implementation, InputRequest,
    InputRequiredResult, ProtocolVersion, ServerCapabilities, ServerConfig,
};
use rmcp::service::{ElicitationError, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The most hits `playbook_search` returns, and how many when the caller does not say.
pub const MAX_SEARCH_LIMIT: u32 = 50;
pub const DEFAULT_SEARCH_LIMIT: u32 = 10;

/// Why the MCP server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The workspace could not be opened (the engine's message: a bad `playbooks.toml` line, an
    /// unreadable ledger).
    #[error(transparent)]
    Workspace(#[from] PlaybookError),
    #[error("the MCP session did not start: {0}")]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    #[error("the MCP server stopped abnormally: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

impl From<rmcp::service::ServerInitializeError> for McpError {
    fn from(err: rmcp::service::ServerInitializeError) -> Self {
        McpError::Initialize(Box::new(err))
    }
}

/// Serves the playbook tools of the workspace at `workspace` over stdin/stdout until the client
/// closes the connection.
pub async fn serve_stdio(workspace: &Path) -> Result<(), McpError> {
    let workspace = workspace.to_path_buf();
    let server = tokio::task::spawn_blocking(move || {
        let playbooks = Playbooks::open(&workspace)?;
        PlaybookServer::new(Arc::new(playbooks))
    })
    .await??;
    tracing::info!(workspace = %server.playbooks.workspace().display(), "MCP server on stdio");
    let running = server.serve(rmcp::transport::stdio_pipes()).await?;
    let reason = running.waiting().await?;
    tracing::info!(?reason, "MCP session ended");
    Ok(())
}

/// The MCP server of one workspace's playbook skills.
#[derive(Clone)]
pub struct PlaybookServer {
    playbooks: Arc<Playbooks>,
    /// What `initialize` answers as instructions: how to use skills, and the skills as of start.
    instructions: String,
    /// The carried lines the assistant has last been given (the instructions, then any tool
    /// result that brought a change): a skill made live or retired mid-session reaches it with
    /// the next result, since "carried" means "on every turn".
    shown_carried: Arc<std::sync::Mutex<Vec<String>>>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for PlaybookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaybookServer")
            .field("workspace", &self.playbooks.workspace())
            .finish_non_exhaustive()
    }
}

// ----------------------------------------------------------------------------------------------
// Wire types: the tools' arguments. Their doc comments are the schema descriptions the assistant
// reads.
// ----------------------------------------------------------------------------------------------

/// Arguments of `workspace_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// The file to read, relative to the workspace (an absolute path inside it works too). A
    /// skill is `skills/<name>/SKILL.md`, or just `skills/<name>`.
    pub path: String,
    /// Where the record of the current turn is on disk, when your host tells you; it goes into
    /// the usage log beside a skill read, for the skill fixer to find.
    #[serde(default)]
    pub turn: Option<String>,
}

/// Arguments of `file_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// The file to write, relative to the workspace; its folders are made. Anything under
    /// `skills/` is refused.
    pub path: String,
    /// The whole new text of the file.
    pub content: String,
}

/// Arguments of `file_copy` and `file_move`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CopyArgs {
    /// The file to take, relative to the workspace.
    pub from: String,
    /// Where it goes, relative to the workspace; never under `skills/`.
    pub to: String,
}

/// Who suggested a skill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SuggestedBy {
    /// You, on your own judgement.
    #[default]
    Assistant,
    /// Your human asked for it.
    Human,
    /// You are acting on the observer's suggestion.
    Observer,
    /// You are acting on a "what carries over" suggestion (a task closed as done).
    CarryOver,
}

impl SuggestedBy {
    fn suggester(self) -> Suggester {
        match self {
            SuggestedBy::Assistant => Suggester::Assistant,
            SuggestedBy::Human => Suggester::Human,
            SuggestedBy::Observer => Suggester::Observer,
            SuggestedBy::CarryOver => Suggester::CarryOver,
        }
    }
}

/// Arguments of `skill_create`. Version and status are set by the runtime, never here.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateArgs {
    /// The skill's name, also its folder: lowercase letters, digits and `-` (e.g.
    /// `weekly-report`).
    pub name: String,
    /// The situation that should make you reach for this skill.
    #[serde(default)]
    pub trigger: Option<String>,
    /// When it applies.
    #[serde(default)]
    pub use_when: Option<String>,
    /// The near misses where it does not apply.
    #[serde(default)]
    pub not_when: Option<String>,
    /// What must already be true before step one.
    #[serde(default)]
    pub preconditions: Option<Vec<String>>,
    /// The numbered steps, in order, each an object with `do` (what the step does) and `tool`
    /// (the one tool it uses; leave it out when it uses none). No other key is allowed: a
    /// misspelled one is refused, never ignored.
    #[serde(default)]
    #[schemars(schema_with = "steps_schema")]
    pub steps: Option<Vec<Value>>,
    /// Tools the procedure must never call.
    #[serde(default)]
    pub forbidden_tools: Option<Vec<String>>,
    /// What done looks like, so whoever follows it can check.
    #[serde(default)]
    pub expected_result: Option<String>,
    /// The ways it is known to go wrong.
    #[serde(default)]
    pub failure_modes: Option<Vec<String>>,
    /// The work it was written from.
    #[serde(default)]
    pub evidence: Option<Vec<String>>,
    /// The procedure in prose: the body of SKILL.md below its fields.
    pub procedure: String,
    /// Who suggested the skill (default `assistant`).
    #[serde(default)]
    pub suggested_by: SuggestedBy,
    /// Whether the task this was written from was accepted as done (by your human or the
    /// project's own checks). A second success on the same steps as an existing skill then adds
    /// evidence to it instead of being refused as a duplicate.
    #[serde(default)]
    pub accepted_as_done: bool,
    /// Not an argument: the runtime sets a skill's version. Read only to refuse it by name.
    #[serde(default)]
    #[schemars(skip)]
    pub version: Option<Value>,
    /// Not an argument: the runtime sets a skill's status. Read only to refuse it by name.
    #[serde(default)]
    #[schemars(skip)]
    pub status: Option<Value>,
}

fn steps_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "do": {
                    "type": "string",
                    "description": "What the step does, in a sentence."
                },
                "tool": {
                    "type": "string",
                    "description": "The one tool the step uses; leave it out when it uses none."
                }
            },
            "required": ["do"]
        }
    })
}

/// What `skill_refine` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RefineAction {
    /// A step of a skill you followed failed, turned out wrong, or is missing. Needs `skill`,
    /// `revision` and `step` (and `turn` when you know it). Never for a use that went well.
    Report,
    /// The skill fixer files a corrected SKILL.md for a report. Needs `report`, `content` and
    /// `fingerprint`.
    Revise,
    /// Restore an earlier kept version. Needs `skill` and `version`.
    Revert,
    /// Ask whether a skill should stop being used; always your human's call. Needs `skill`
    /// (`why` is welcome).
    Retire,
}

impl RefineAction {
    fn as_str(self) -> &'static str {
        match self {
            RefineAction::Report => "report",
            RefineAction::Revise => "revise",
            RefineAction::Revert => "revert",
            RefineAction::Retire => "retire",
        }
    }

    fn act(self) -> Act {
        match self {
            RefineAction::Report => Act::Report,
            RefineAction::Revise => Act::Revise,
            RefineAction::Revert => Act::Revert,
            RefineAction::Retire => Act::Retire,
        }
    }
}

/// Arguments of `skill_refine`. Which ones are needed depends on `action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RefineArgs {
    /// `report`, `revise`, `revert` or `retire`.
    pub action: RefineAction,
    /// The skill's name (report, revert, retire).
    #[serde(default)]
    pub skill: Option<String>,
    /// The revision you followed: the `version` in the SKILL.md you read (report).
    #[serde(default)]
    pub revision: Option<u32>,
    /// The step that failed, was wrong, or is missing (one past the last for a missing final
    /// step) (report).
    #[serde(default)]
    pub step: Option<u32>,
    /// Where the record of the turn is on disk, when your host tells you (report).
    #[serde(default)]
    pub turn: Option<String>,
    /// The report's number, as the fixer was given it (revise).
    #[serde(default)]
    pub report: Option<i64>,
    /// The whole corrected SKILL.md (revise).
    #[serde(default)]
    pub content: Option<String>,
    /// `sha256:<64 hex>` of the exact SKILL.md the correction was written against (revise).
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The token MindRune handed the skill fixer for this report (`MINDRUNE_FIXER_TOKEN`):
    /// only that fixer may file the report's revision (revise).
    #[serde(default)]
    pub token: Option<String>,
    /// The kept version to restore, from the skill's `history/` (revert).
    #[serde(default)]
    pub version: Option<u32>,
    /// Why the skill should stop being used (retire).
    #[serde(default)]
    pub why: Option<String>,
}

/// Arguments of `playbook_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Words describing the work (e.g. "weekly report to the team"); empty lists every live
    /// skill by name.
    pub query: String,
    /// How many skills to return at most (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of `playbook_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordArgs {
    /// One skill's name; leave it out for every live skill.
    #[serde(default)]
    pub skill: Option<String>,
}

/// The yes/no the human is asked through MCP elicitation.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Approval {
    /// Yes to let it happen, no to refuse it.
    pub approve: bool,
}

rmcp::elicit_safe!(Approval);

/// A tool's arguments, parsed by the tool rather than by the framework, so that a malformed call
/// is a tool error the assistant reads (naming the field) rather than a protocol error its host
/// may hide. The schema is `T`'s.
#[derive(Debug)]
struct Args<T>(Result<T, String>, CallPrint);

/// The fingerprint of a call's arguments, which the request state of an input-required round
/// carries: the retry must be the very call the human was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CallPrint(String);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Args<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let print = CallPrint(mindrune_core::digest::sha256(
            canonical_json(&value).as_bytes(),
        ));
        Ok(Args(
            serde_path_to_error::deserialize(value).map_err(|err| {
                let path = err.path().to_string();
                if path == "." {
                    format!("the arguments do not fit this tool: {}", err.inner())
                } else {
                    format!("argument {path}: {}", err.inner())
                }
            }),
            print,
        ))
    }
}

/// JSON with every object's keys sorted, so a client that re-serializes the same arguments in
/// another key order still makes the same call.
fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    format!(
                        "{}:{}",
                        Value::String(key.clone()),
                        canonical_json(&object[key])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(canonical_json)
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

impl<T: JsonSchema> JsonSchema for Args<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

// ----------------------------------------------------------------------------------------------
// Answers.
// ----------------------------------------------------------------------------------------------

/// What a tool says back: its text, and whether the call did what was asked.
struct Answer {
    text: String,
    is_error: bool,
}

impl Answer {
    fn ok(text: impl Into<String>) -> Self {
        Answer {
            text: text.into(),
            is_error: false,
        }
    }

    fn error(text: impl Into<String>) -> Self {
        Answer {
            text: text.into(),
            is_error: true,
        }
    }
}

impl From<PlaybookError> for Answer {
    fn from(err: PlaybookError) -> Self {
        if err.rule().is_none() {
            tracing::warn!(error = %err, "playbook call failed");
        }
        Answer::error(err.to_string())
    }
}

/// How the human can be asked for an act whose policy is `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AskBy {
    /// MCP elicitation: a request from the server to the client (protocols before 2026-07-28).
    Elicitation,
    /// An input-required result (SEP-2322, protocol 2026-07-28 and later): the tool call
    /// answers with the same form, and the client calls again with the answer.
    InputRequired,
    /// The client declared no way to ask (no form elicitation).
    Nobody,
}

/// What the human answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Asked {
    Yes,
    Not(NotYes),
}

/// Every answer that is not a yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotYes {
    /// Declined, or accepted with `approve: false`.
    No,
    /// Nobody answered: the client cancelled the question (a host running with no person at
    /// it, such as `claude -p`, cancels every one). Not a no, and not a yes.
    Cancelled,
    /// An answer that is not `{approve: true|false}`.
    Unreadable,
}

/// An act the human is asked about, for the sentences that say what did not happen.
#[derive(Debug, Clone, Copy)]
struct Asking {
    act: Act,
    /// "drafted" for a create, "filed" for the others.
    done: &'static str,
}

impl Asking {
    fn of(act: Act) -> Asking {
        Asking {
            act,
            done: if act == Act::Create {
                "drafted"
            } else {
                "filed"
            },
        }
    }

    /// The answer to a call the human did not say yes to.
    fn refusal(self, asked: NotYes) -> Answer {
        let done = self.done;
        let text = match asked {
            NotYes::No => format!("your human said no; nothing was {done}"),
            NotYes::Cancelled => format!(
                "Nobody answered: the client cancelled the question, which is what a host with no person at it does (`claude -p` cancels every one). That is not a no, but without a yes nothing was {done}. {}",
                self.ways_forward()
            ),
            NotYes::Unreadable => format!(
                "your human's answer could not be read as a yes or a no, so nothing was {done}"
            ),
        };
        Answer::error(text)
    }

    /// The answer when this client declared no way to ask.
    fn nobody_to_ask(self) -> Answer {
        let act = self.act.as_str();
        Answer::error(format!(
            "This client declared no way to ask your human (no elicitation), and under `{act}: ask` nothing is {done} without their yes, so nothing was {done}. {}",
            self.ways_forward(),
            done = self.done
        ))
    }

    /// What the human can do so that this act can happen.
    fn ways_forward(self) -> String {
        let act = self.act.as_str();
        let lines = match self.act {
            Act::Report => "`report: auto` (what `mindrune playbook init --unattended` writes) records a report and starts the fixer without asking; its revision still waits on a card while `revise` is `ask` or `card`".to_string(),
            Act::Retire => "`retire: card` files the question as a card that waits for them, unasked".to_string(),
            Act::Create | Act::Revise | Act::Revert => format!(
                "`{act}: card` files it as a card that waits for them, unasked; `{act}: auto` (what `mindrune playbook init --unattended` writes) does it on its own"
            ),
        };
        format!(
            "Ways forward, all your human's: answer in a client that shows the question; let an `Elicitation` hook of the host answer it; or change the line in permissions.yaml: {lines}."
        )
    }
}

/// The key of the one input request an input-required round carries.
const APPROVE_KEY: &str = "approve";
/// The request state of an input-required round: a version, the tool, and the fingerprint of
/// the call's arguments. It needs no seal: whoever could forge it could as well answer the
/// question itself, and binding it to the arguments keeps a yes from carrying over to another
/// call.
fn round_state(tool: &str, print: &CallPrint) -> String {
    format!("mindrune-ask/1 {tool} {}", print.0)
}

/// Where a call stands in the rounds of an input-required ask: what the client echoed back.
struct Round {
    tool: &'static str,
    print: CallPrint,
    state: Option<String>,
    responses: Option<rmcp::model::InputResponses>,
}

/// How asking ended for a call: an answer, or a question to send back first.
enum Outcome {
    Answered(Asked),
    Question(InputRequiredResult),
}

/// What a tool call replies: its answer, or (on 2026-07-28) the question to ask first.
enum Reply {
    Answer(Answer),
    Question(InputRequiredResult),
}

/// The human's answer in an input-required retry: an `ElicitResult` under [`APPROVE_KEY`].
fn input_answer(response: Option<&Value>) -> Asked {
    let Some(response) = response else {
        return Asked::Not(NotYes::Unreadable);
    };
    let Ok(result) = serde_json::from_value::<ElicitResult>(response.clone()) else {
        tracing::warn!(%response, "an input response that is not an elicitation result");
        return Asked::Not(NotYes::Unreadable);
    };
    match result.action {
        ElicitationAction::Decline => Asked::Not(NotYes::No),
        ElicitationAction::Cancel => Asked::Not(NotYes::Cancelled),
        ElicitationAction::Accept => match result.content.map(serde_json::from_value::<Approval>) {
            Some(Ok(Approval { approve: true })) => Asked::Yes,
            Some(Ok(Approval { approve: false })) => Asked::Not(NotYes::No),
            _ => Asked::Not(NotYes::Unreadable),
        },
        // An action this version does not know is not a yes.
        _ => Asked::Not(NotYes::Unreadable),
    }
}

impl PlaybookServer {
    /// A server over an opened workspace. Reads the carried list and the other skills' names
    /// once, for the instructions every session starts with.
    pub fn new(playbooks: Arc<Playbooks>) -> Result<Self, PlaybookError> {
        let carried = playbooks.carried_lines()?;
        let instructions = instructions(&carried, &playbooks.other_skill_names()?);
        Ok(PlaybookServer {
            playbooks,
            instructions,
            shown_carried: Arc::new(std::sync::Mutex::new(carried)),
            tool_router: Self::tool_router(),
        })
    }

    /// The workspace's playbooks.
    pub fn playbooks(&self) -> &Arc<Playbooks> {
        &self.playbooks
    }

    /// What `initialize` answers as instructions.
    pub fn instructions(&self) -> &str {
        &self.instructions
    }

    /// Runs an engine call on the blocking pool.
    async fn engine<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Playbooks) -> Result<T, PlaybookError> + Send + 'static,
    ) -> Result<T, Answer> {
        let playbooks = Arc::clone(&self.playbooks);
        match tokio::task::spawn_blocking(move || work(&playbooks)).await {
            Ok(result) => result.map_err(Answer::from),
            Err(err) => {
                tracing::error!(error = %err, "a playbook call panicked");
                Err(Answer::error(format!(
                    "the playbook call failed inside MindRune: {err}"
                )))
            }
        }
    }

    /// The tool result: the answer, then the carried list when it changed since the assistant
    /// was last given it, then the suggestions not shown yet.
    async fn finish(&self, answer: Answer) -> CallToolResult {
        let mut text = answer.text;
        match self.engine(|playbooks| playbooks.carried_lines()).await {
            Ok(carried) => {
                let mut shown = self
                    .shown_carried
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if *shown != carried {
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    text.push_str("Carried skills changed during this session; now carried:");
                    if carried.is_empty() {
                        text.push_str(" (none)");
                    }
                    for line in &carried {
                        let _ = write!(text, "\n- {line}");
                    }
                    *shown = carried;
                }
            }
            Err(err) => tracing::warn!(error = %err.text, "could not read the carried list"),
        }
        match self.engine(|playbooks| playbooks.take_suggestions()).await {
            Ok(suggestions) => {
                for suggestion in suggestions {
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                    let _ = write!(text, "Suggestion: {suggestion}");
                }
            }
            Err(err) => tracing::warn!(error = %err.text, "could not read the suggestions"),
        }
        let content = vec![ContentBlock::text(text)];
        if answer.is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        }
    }

    /// The tool's reply: a question goes back as it is (the suggestions wait for the answer),
    /// an answer is finished as every other tool's is.
    async fn reply(&self, reply: Reply) -> CallToolResponse {
        match reply {
            Reply::Question(question) => CallToolResponse::InputRequired(question),
            Reply::Answer(answer) => CallToolResponse::Complete(self.finish(answer).await),
        }
    }

    /// How the human can be asked in this session: the protocol says which way, the client's
    /// declared capabilities (per request on 2026-07-28) whether there is one.
    fn ask_by(context: &RequestContext<RoleServer>) -> AskBy {
        let form = context
            .client_capabilities()
            .and_then(|capabilities| capabilities.elicitation)
            // A capability naming neither mode is form mode (the 2025-06-18 shape).
            .is_some_and(|elicitation| elicitation.form.is_some() || elicitation.url.is_none());
        if !form {
            return AskBy::Nobody;
        }
        if context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
        {
            AskBy::InputRequired
        } else {
            AskBy::Elicitation
        }
    }

    /// Asks the human `message` about this call, the way the session allows. `Err` is the
    /// answer to give at once: nobody can be asked, or the asking itself failed.
    async fn ask(
        &self,
        context: &RequestContext<RoleServer>,
        round: &Round,
        asking: Asking,
        message: String,
    ) -> Result<Outcome, Answer> {
        match Self::ask_by(context) {
            AskBy::Nobody => Err(asking.nobody_to_ask()),
            AskBy::Elicitation => match context.peer.elicit::<Approval>(message).await {
                Ok(Some(approval)) => Ok(Outcome::Answered(if approval.approve {
                    Asked::Yes
                } else {
                    Asked::Not(NotYes::No)
                })),
                Err(ElicitationError::UserDeclined) => {
                    Ok(Outcome::Answered(Asked::Not(NotYes::No)))
                }
                Err(ElicitationError::UserCancelled) => {
                    Ok(Outcome::Answered(Asked::Not(NotYes::Cancelled)))
                }
                Ok(None) | Err(ElicitationError::NoContent) => {
                    Ok(Outcome::Answered(Asked::Not(NotYes::Unreadable)))
                }
                Err(ElicitationError::ParseError { data, .. }) => {
                    tracing::warn!(%data, "an elicitation answer that is not {{approve: bool}}");
                    Ok(Outcome::Answered(Asked::Not(NotYes::Unreadable)))
                }
                Err(err) => Err(Answer::error(format!(
                    "your human could not be asked ({err}), so nothing was {}",
                    asking.done
                ))),
            },
            AskBy::InputRequired => {
                let expected = round_state(round.tool, &round.print);
                match round.state.as_deref() {
                    None => {
                        let schema = ElicitationSchema::from_type::<Approval>().map_err(|err| {
                            Answer::error(format!("the approve form could not be built: {err}"))
                        })?;
                        let mut requests = rmcp::model::InputRequests::new();
                        requests.insert(
                            APPROVE_KEY.to_string(),
                            InputRequest::Elicitation(ElicitRequest::new(
                                ElicitRequestParams::FormElicitationParams {
                                    meta: None,
                                    message,
                                    requested_schema: schema,
                                },
                            )),
                        );
                        Ok(Outcome::Question(InputRequiredResult::new(
                            Some(requests),
                            Some(expected),
                        )))
                    }
                    Some(state) if state == expected => Ok(Outcome::Answered(input_answer(
                        round.responses.as_ref().and_then(|r| r.get(APPROVE_KEY)),
                    ))),
                    Some(_) => Err(Answer::error(format!(
                        "the answer came back with a request state that does not belong to this call (its arguments changed, or it is another call's), so nothing was {}; call again to be asked",
                        asking.done
                    ))),
                }
            }
        }
    }

    /// Asks about an act whose policy is `ask`: `Ok` when the human said yes, else the reply to
    /// give now (a refusal, or on 2026-07-28 the question itself).
    async fn ask_first(
        &self,
        context: &RequestContext<RoleServer>,
        round: &Round,
        asking: Asking,
        message: String,
    ) -> Result<(), Reply> {
        match self.ask(context, round, asking, message).await {
            Ok(Outcome::Answered(Asked::Yes)) => Ok(()),
            Ok(Outcome::Answered(Asked::Not(not))) => Err(Reply::Answer(asking.refusal(not))),
            Ok(Outcome::Question(question)) => Err(Reply::Question(question)),
            Err(answer) => Err(Reply::Answer(answer)),
        }
    }

    async fn create(
        &self,
        args: CreateArgs,
        context: RequestContext<RoleServer>,
        round: Round,
    ) -> Reply {
        let proposal = match proposal(args) {
            Ok(proposal) => proposal,
            Err(message) => return Reply::Answer(Answer::error(message)),
        };
        let policy = self.playbooks.permissions().policy(Act::Create);
        // `suggested_by: human` is the assistant's word; a person attends only when the human
        // was asked here and said yes.
        let attendance = if policy == Policy::Ask {
            // The door's checks first: a proposal it would refuse never bothers the human.
            let checked = proposal.clone();
            if let Err(answer) = self
                .engine(move |playbooks| playbooks.check_create(&checked, Attendance::Attended))
                .await
            {
                return Reply::Answer(answer);
            }
            let when = proposal
                .skill
                .use_when
                .as_deref()
                .or(proposal.skill.trigger.as_deref())
                .and_then(|when| when.lines().next())
                .map(|when| format!(" (use when: {when})"))
                .unwrap_or_default();
            let message = format!(
                "The assistant wants to draft a new skill, {}{when}, suggested by {}. Allow it? The draft then waits on a card for your approval.",
                proposal.name,
                proposal.suggested_by.as_str()
            );
            if let Err(reply) = self
                .ask_first(&context, &round, Asking::of(Act::Create), message)
                .await
            {
                return reply;
            }
            Attendance::Attended
        } else {
            Attendance::Unattended
        };
        let name = proposal.name.clone();
        let created = self
            .engine(move |playbooks| playbooks.create(&proposal, attendance))
            .await;
        Reply::Answer(match created {
            Ok(Created::EvidenceAdded { skill }) => Answer::ok(format!(
                "{skill} already uses exactly these steps, so this success was added to it as evidence; no new skill was drafted"
            )),
            Ok(Created::Filed { card, answered }) => {
                let drafted = format!("Drafted {name} and filed card #{card}");
                match answered {
                    None => Answer::ok(format!(
                        "{drafted}; it waits in skills/pending/{name}/ until your human approves it."
                    )),
                    Some(answered) => answered_answer(&drafted, &answered),
                }
            }
            Err(answer) => answer,
        })
    }

    async fn refine(
        &self,
        args: RefineArgs,
        context: RequestContext<RoleServer>,
        round: Round,
    ) -> Reply {
        let action = args.action;
        let request = match Refine::from_args(args) {
            Ok(request) => request,
            Err(message) => return Reply::Answer(Answer::error(message)),
        };
        if self.playbooks.permissions().policy(action.act()) == Policy::Ask {
            match self.ask_message(&request).await {
                Ok(Some(message)) => {
                    if let Err(reply) = self
                        .ask_first(&context, &round, Asking::of(action.act()), message)
                        .await
                    {
                        return reply;
                    }
                }
                // Nothing to ask about: the engine refuses it below.
                Ok(None) => {}
                Err(answer) => return Reply::Answer(answer),
            }
        }
        Reply::Answer(self.refine_asked(request).await)
    }

    /// A `skill_refine` whose act may go ahead.
    async fn refine_asked(&self, request: Refine) -> Answer {
        match request {
            Refine::Report(report) => {
                let what = format!(
                    "Reported step {} of {} v{}",
                    report.step, report.skill, report.revision
                );
                match self
                    .engine(move |playbooks| playbooks.report(&report))
                    .await
                {
                    Ok(reported) => {
                        let fixer = match reported.fixer {
                            FixerStart::Started { log } => format!(
                                "The skill fixer started in the background and reads the record itself (its log: {}).",
                                log.display()
                            ),
                            FixerStart::NotConfigured => {
                                "No skill fixer is configured (fixer = in playbooks.toml: \"claude\" for MindRune's own, which is the default when Claude Code is on PATH), so the correction is recorded only.".to_string()
                            }
                            FixerStart::Failed { message } => format!(
                                "The skill fixer did not start ({message}); the correction is recorded."
                            ),
                        };
                        Answer::ok(format!(
                            "{what} (report #{}); the correction is in the usage log. {fixer}",
                            reported.report
                        ))
                    }
                    Err(answer) => answer,
                }
            }
            Refine::Revise {
                report,
                content,
                fingerprint,
                token,
            } => {
                let filed = self
                    .engine(move |playbooks| {
                        playbooks.revise(report, &content, &fingerprint, &token, "fixer")
                    })
                    .await;
                filed_answer(filed, &format!("the revision for report #{report}"))
            }
            Refine::Revert { skill, version } => {
                let what = format!("the revert of {skill} to v{version}");
                let filed = self
                    .engine(move |playbooks| playbooks.revert(&skill, version, "assistant"))
                    .await;
                filed_answer(filed, &what)
            }
            Refine::Retire { skill, why } => {
                let what = format!("retiring {skill}");
                let filed = self
                    .engine(move |playbooks| playbooks.retire(&skill, why.as_deref(), "assistant"))
                    .await;
                filed_answer(filed, &what)
            }
        }
    }

    /// The sentence the human is asked, after the act's own checks: an act the engine would
    /// refuse (no such skill, revision, report or kept version; a step out of range; already
    /// retired) is refused at once and nobody is asked about it. `None` is never returned now
    /// but keeps the caller's shape.
    async fn ask_message(&self, request: &Refine) -> Result<Option<String>, Answer> {
        Ok(Some(match request {
            Refine::Report(report) => {
                let checked = report.clone();
                self.engine(move |playbooks| playbooks.check_report(&checked).map(|_| ()))
                    .await?;
                format!(
                    "The assistant wants to report that step {} of {} v{} went wrong. Allow it?",
                    report.step, report.skill, report.revision
                )
            }
            Refine::Revise {
                report,
                fingerprint,
                token,
                ..
            } => {
                let (report, fingerprint, token) = (*report, fingerprint.clone(), token.clone());
                let line = self
                    .engine(move |playbooks| {
                        playbooks.check_revise(report, &fingerprint, &token)?;
                        playbooks.ledger().report(report)
                    })
                    .await?;
                let Some(line) = line else {
                    return Ok(None);
                };
                let step = line
                    .step
                    .map(|step| format!("step {step} of "))
                    .unwrap_or_default();
                let revision = line.revision.map(|v| format!(" v{v}")).unwrap_or_default();
                format!(
                    "The skill fixer wants to file a corrected {} for report #{report} ({step}{}{revision} went wrong). Allow it? The revision then waits on a card for your approval.",
                    line.skill, line.skill
                )
            }
            Refine::Revert { skill, version } => {
                let (checked, version) = (skill.clone(), *version);
                self.engine(move |playbooks| playbooks.check_revert(&checked, version).map(|_| ()))
                    .await?;
                format!(
                    "The assistant wants to revert {skill} to its kept version v{version}. Allow it? The revert then waits on a card for your approval."
                )
            }
            Refine::Retire { skill, why } => {
                let checked = skill.clone();
                self.engine(move |playbooks| playbooks.check_retire(&checked).map(|_| ()))
                    .await?;
                let why = why
                    .as_deref()
                    .map(|why| format!(" because: {}", why.trim()))
                    .unwrap_or_default();
                format!(
                    "The assistant asks whether {skill} should be retired{why}. Allow it to file the question? Retiring then waits on a card for your answer."
                )
            }
        }))
    }
}

/// A `skill_refine` call with the arguments its action needs.
enum Refine {
    Report(Report),
    Revise {
        report: i64,
        content: String,
        fingerprint: String,
        token: String,
    },
    Revert {
        skill: String,
        version: u32,
    },
    Retire {
        skill: String,
        why: Option<String>,
    },
}

impl Refine {
    fn from_args(args: RefineArgs) -> Result<Refine, String> {
        let action = args.action;
        let name = action.as_str();
        let given: [(&str, bool); 10] = [
            ("skill", args.skill.is_some()),
            ("revision", args.revision.is_some()),
            ("step", args.step.is_some()),
            ("turn", args.turn.is_some()),
            ("report", args.report.is_some()),
            ("content", args.content.is_some()),
            ("fingerprint", args.fingerprint.is_some()),
            ("version", args.version.is_some()),
            ("why", args.why.is_some()),
            ("token", args.token.is_some()),
        ];
        let takes: &[&str] = match action {
            RefineAction::Report => &["skill", "revision", "step", "turn"],
            RefineAction::Revise => &["report", "content", "fingerprint", "token"],
            RefineAction::Revert => &["skill", "version"],
            RefineAction::Retire => &["skill", "why"],
        };
        let stray: Vec<&str> = given
            .iter()
            .filter(|(key, is_given)| *is_given && !takes.contains(key))
            .map(|(key, _)| *key)
            .collect();
        if !stray.is_empty() {
            return Err(format!(
                "skill_refine {name} takes {}; it does not take {}",
                takes.join(", "),
                stray.join(", ")
            ));
        }
        let missing = |what: &str| {
            format!(
                "skill_refine {name} needs {what}; it takes {}",
                takes.join(", ")
            )
        };
        Ok(match action {
            RefineAction::Report => {
                let (Some(skill), Some(revision), Some(step)) =
                    (args.skill, args.revision, args.step)
                else {
                    let absent: Vec<&str> = [
                        ("skill", given[0].1),
                        ("revision", given[1].1),
                        ("step", given[2].1),
                    ]
                    .iter()
                    .filter(|(_, is_given)| !is_given)
                    .map(|(key, _)| *key)
                    .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Report(Report {
                    skill,
                    revision,
                    step,
                    turn: args.turn.filter(|turn| !turn.trim().is_empty()),
                })
            }
            RefineAction::Revise => {
                let (Some(report), Some(content), Some(fingerprint), Some(token)) =
                    (args.report, args.content, args.fingerprint, args.token)
                else {
                    let absent: Vec<&str> = [
                        ("report", given[4].1),
                        ("content", given[5].1),
                        ("fingerprint", given[6].1),
                        ("token", given[9].1),
                    ]
                    .iter()
                    .filter(|(_, is_given)| !is_given)
                    .map(|(key, _)| *key)
                    .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Revise {
                    report,
                    content,
                    fingerprint,
                    token,
                }
            }
            RefineAction::Revert => {
                let (Some(skill), Some(version)) = (args.skill, args.version) else {
                    let absent: Vec<&str> = [("skill", given[0].1), ("version", given[7].1)]
                        .iter()
                        .filter(|(_, is_given)| !is_given)
                        .map(|(key, _)| *key)
                        .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Revert { skill, version }
            }
            RefineAction::Retire => {
                let Some(skill) = args.skill else {
                    return Err(missing("skill"));
                };
                Refine::Retire {
                    skill,
                    why: args.why.filter(|why| !why.trim().is_empty()),
                }
            }
        })
    }
}

/// The answer to a card filed by revise, revert or retire.
fn filed_answer(filed: Result<Filed, Answer>, what: &str) -> Answer {
    match filed {
        Ok(Filed {
            card,
            answered: None,
        }) => Answer::ok(format!(
            "Filed {what} as card #{card}; it waits for your human's answer."
        )),
        Ok(Filed {
            card,
            answered: Some(answered),
        }) => answered_answer(&format!("Filed {what} as card #{card}"), &answered),
        Err(answer) => answer,
    }
}

/// A card the runtime answered on its own at once: applied, or refused (nothing changed).
fn answered_answer(filed: &str, answered: &Answered) -> Answer {
    match answered.state {
        CardState::Applied => Answer::ok(format!(
            "{filed}, and it was applied on its own (the card is filed as answered): {}.",
            answered.outcome
        )),
        CardState::Refused => Answer::error(format!(
            "{filed}, but it could not be applied, so nothing changed: {}",
            answered.outcome
        )),
        CardState::Waiting => Answer::ok(format!("{filed}; it waits for your human's answer.")),
        CardState::Rejected => Answer::error(format!(
            "{filed}, and it was turned down: {}",
            answered.outcome
        )),
    }
}

/// The proposal a `skill_create` call makes. Steps are taken from free JSON objects so that a
/// key other than `do` and `tool` reaches the door's blocking check instead of being dropped.
fn proposal(args: CreateArgs) -> Result<Proposal, String> {
    if args.version.is_some() || args.status.is_some() {
        return Err(
            "version and status are set by the runtime, never by whoever writes the skill; leave them out"
                .to_string(),
        );
    }
    let steps = match args.steps {
        None => None,
        Some(steps) => Some(
            steps
                .into_iter()
                .enumerate()
                .map(|(index, value)| step(index + 1, value))
                .collect::<Result<Vec<Step>, String>>()?,
        ),
    };
    let skill = SkillFile {
        name: Some(args.name.clone()),
        trigger: args.trigger,
        use_when: args.use_when,
        not_when: args.not_when,
        preconditions: args.preconditions,
        steps,
        forbidden_tools: args.forbidden_tools,
        expected_result: args.expected_result,
        failure_modes: args.failure_modes,
        evidence: args.evidence,
        version: None,
        status: None,
        body: args.procedure,
    };
    Ok(Proposal {
        name: args.name,
        skill,
        suggested_by: args.suggested_by.suggester(),
        accepted_as_done: args.accepted_as_done,
    })
}

/// One step from its JSON object.
fn step(number: usize, value: Value) -> Result<Step, String> {
    let Value::Object(object) = value else {
        return Err(format!(
            "step {number} is {}, not an object; write each step as {{\"do\": \"…\", \"tool\": \"…\"}}",
            json_kind(&value)
        ));
    };
    let mut action = None;
    let mut tool = None;
    let mut other_keys = Vec::new();
    for (key, value) in object {
        match key.as_str() {
            "do" => match value {
                Value::String(text) => action = Some(text),
                other => {
                    return Err(format!(
                        "step {number}: do is {}, not text",
                        json_kind(&other)
                    ));
                }
            },
            "tool" => match value {
                Value::String(text) => tool = Some(text),
                Value::Null => {}
                other => {
                    return Err(format!(
                        "step {number}: tool is {}, not the name of one tool",
                        json_kind(&other)
                    ));
                }
            },
            _ => other_keys.push(key),
        }
    }
    if action.is_none() && other_keys.is_empty() {
        return Err(format!("step {number} has no do: say what the step does"));
    }
    Ok(Step {
        action: action.unwrap_or_default(),
        tool,
        other_keys,
        // Unknown until the door renders the file.
        line: 0,
    })
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The instructions every session starts with.
fn instructions(carried: &[String], others: &[String]) -> String {
    let mut text = String::from(
        "MindRune keeps your skills: procedures written down under workspace/skills/, each a SKILL.md with numbered steps and the one tool each step uses. \
Before work that looks like something you have solved before, check whether a skill matches: the carried skills below come with when to use them; look any other up with playbook_search. \
Follow a skill by reading it with workspace_read (skills/<name>/SKILL.md); the read is logged, so your human can see which skill you followed. \
If a step fails, turns out to be wrong, or is missing, say so with skill_refine (action report: the skill, the revision you read and the step). Never report a use that went well, and do not rewrite the skill yourself: the skill fixer does that from the record. \
After new or hard work worth keeping, write it down with skill_create; skills/ refuses file_write, file_copy and file_move. playbook_record shows how each skill has done.\n",
    );
    text.push_str("\nCarried skills:\n");
    if carried.is_empty() {
        text.push_str("(none yet)\n");
    }
    for line in carried {
        let _ = writeln!(text, "- {line}");
    }
    text.push_str("\nOther skills (look up with playbook_search):\n");
    if others.is_empty() {
        text.push_str("(none)\n");
    } else {
        let _ = writeln!(text, "{}", others.join(", "));
    }
    text
}

#[tool_router]
impl PlaybookServer {
    /// `workspace_read`.
    #[tool(
        description = "Read a text file in your workspace. Reading a skill (skills/<name>/SKILL.md, or skills/<name>) is how you follow it: the read is logged with the skill's revision.",
        annotations(
            title = "Read a workspace file",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn workspace_read(
        &self,
        Parameters(Args(args, _)): Parameters<Args<ReadArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(ReadArgs { path, turn }) => self
                .engine(move |playbooks| playbooks.workspace_read_noting(&path, turn.as_deref()))
                .await
                .map_or_else(
                    |answer| answer,
                    |read| {
                        let mut text = read.text;
                        if !read.owed.is_empty() {
                            if !text.ends_with('\n') {
                                text.push('\n');
                            }
                            let _ = write!(
                                text,
                                "(MindRune: this skill owes {}: left out or blank, so it still loads; follow it with care, and tell your human what it lacks)",
                                read.owed.join(", ")
                            );
                        }
                        Answer::ok(text)
                    },
                ),
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }

    /// `file_write`.
    #[tool(
        description = "Write a text file in your workspace, making its folders. workspace/skills/ refuses it in every mode: write a skill with skill_create, change one with skill_refine.",
        annotations(
            title = "Write a workspace file",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn file_write(
        &self,
        Parameters(Args(args, _)): Parameters<Args<WriteArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(WriteArgs { path, content }) => self
                .engine(move |playbooks| playbooks.file_write(&path, &content))
                .await
                .map_or_else(|answer| answer, Answer::ok),
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }

    /// `file_copy`.
    #[tool(
        description = "Copy a file within your workspace. The copy may not land in workspace/skills/, in any mode.",
        annotations(
            title = "Copy a workspace file",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn file_copy(
        &self,
        Parameters(Args(args, _)): Parameters<Args<CopyArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(CopyArgs { from, to }) => self
                .engine(move |playbooks| playbooks.file_copy(&from, &to))
                .await
                .map_or_else(|answer| answer, Answer::ok),
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }

    /// `file_move`.
    #[tool(
        description = "Move a file within your workspace. Neither end may be in workspace/skills/, in any mode.",
        annotations(
            title = "Move a workspace file",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn file_move(
        &self,
        Parameters(Args(args, _)): Parameters<Args<CopyArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(CopyArgs { from, to }) => self
                .engine(move |playbooks| playbooks.file_move(&from, &to))
                .await
                .map_or_else(|answer| answer, Answer::ok),
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }

    /// `skill_create`.
    #[tool(
        description = "Write a procedure down as a new skill: the only way a skill is made. The door refuses a taken name, the same sequence of tools as another skill, a step naming a tool this runtime lacks or the skill forbids, a step key other than do and tool, an empty list of steps, anything like a credential, and a path outside the home tree. A skill that passes is drafted in skills/pending/ and filed as a card for your human; under the shipped default your human is asked first.",
        annotations(
            title = "Create a skill",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn skill_create(
        &self,
        Parameters(Args(args, print)): Parameters<Args<CreateArgs>>,
        RequestState(state): RequestState,
        ToolInputResponses(responses): ToolInputResponses,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let round = Round {
            tool: "skill_create",
            print,
            state,
            responses,
        };
        let reply = match args {
            Ok(args) => self.create(args, context, round).await,
            Err(message) => Reply::Answer(Answer::error(message)),
        };
        self.reply(reply).await
    }

    /// `skill_refine`.
    #[tool(
        description = "Change an existing skill: the only way one changes. action report: a step of a skill you followed failed, was wrong or is missing (skill, revision, step, turn); never for a use that went well; the skill fixer takes it from there. action revise: the skill fixer's corrected SKILL.md (report, content, fingerprint, token); only the fixer has the token. action revert: restore a kept version (skill, version). action retire: ask whether a skill should stop being used (skill, why); always your human's call.",
        annotations(
            title = "Refine a skill",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn skill_refine(
        &self,
        Parameters(Args(args, print)): Parameters<Args<RefineArgs>>,
        RequestState(state): RequestState,
        ToolInputResponses(responses): ToolInputResponses,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let round = Round {
            tool: "skill_refine",
            print,
            state,
            responses,
        };
        let reply = match args {
            Ok(args) => self.refine(args, context, round).await,
            Err(message) => Reply::Answer(Answer::error(message)),
        };
        self.reply(reply).await
    }

    /// `playbook_search`.
    #[tool(
        description = "Find live skills by words, best match first: one line each with when to use it, marked (carried) when it is described on every turn. Search before work that looks like something solved before, then read the skill with workspace_read.",
        annotations(
            title = "Search skills",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn playbook_search(
        &self,
        Parameters(Args(args, _)): Parameters<Args<SearchArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(SearchArgs { query, limit }) => {
                let limit = limit
                    .unwrap_or(DEFAULT_SEARCH_LIMIT)
                    .clamp(1, MAX_SEARCH_LIMIT) as usize;
                let words = query.clone();
                match self
                    .engine(move |playbooks| playbooks.search(&words, limit))
                    .await
                {
                    Ok(hits) if hits.is_empty() => {
                        if query.trim().is_empty() {
                            Answer::ok("No live skills yet.")
                        } else {
                            Answer::ok(format!("No skill matches \"{}\".", query.trim()))
                        }
                    }
                    Ok(hits) => Answer::ok(
                        hits.iter()
                            .map(|hit| {
                                let when = hit.when.lines().next().unwrap_or_default().trim();
                                let when = if when.is_empty() {
                                    "(no use_when yet)"
                                } else {
                                    when
                                };
                                let carried = if hit.carried { " (carried)" } else { "" };
                                let owed = if hit.owed.is_empty() {
                                    String::new()
                                } else {
                                    format!(" (owes {})", hit.owed.join(", "))
                                };
                                format!("{} — {when}{carried}{owed}", hit.name)
                            })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ),
                    Err(answer) => answer,
                }
            }
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }

    /// `playbook_record`.
    #[tool(
        description = "How each live skill has done, from the usage log: reads, reported corrections, turns, and whether its live revision did better or worse than the one it replaced (or that it is too early to say). Writes nothing.",
        annotations(title = "Skill record", read_only_hint = true, open_world_hint = false)
    )]
    async fn playbook_record(
        &self,
        Parameters(Args(args, _)): Parameters<Args<RecordArgs>>,
    ) -> CallToolResult {
        let answer = match args {
            Ok(RecordArgs { skill }) => {
                let only = skill.clone();
                match self
                    .engine(move |playbooks| playbooks.record(only.as_deref()))
                    .await
                {
                    Ok(records) if records.is_empty() && skill.is_some() => Answer::error(format!(
                        "there is no live skill named {} in skills/",
                        skill.unwrap_or_default()
                    )),
                    Ok(records) => Answer::ok(record::render(&records).trim_end()),
                    Err(answer) => answer,
                }
            }
            Err(message) => Answer::error(message),
        };
        self.finish(answer).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for PlaybookServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("mindrune", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("MindRune playbook skills".to_string());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(self.instructions.clone())
    }
}
