//! `mindrune mcp`: the playbook skills' MCP face, a stdio server with the assistant's eight tools
//! (`workspace_read`, `file_write`, `file_copy`, `file_move`, `skill_create`, `skill_refine`,
//! `playbook_search`, `playbook_record`). Each is a thin layer on
//! [`mindrune_engine::Playbooks`]: the engine is synchronous (SQLite inside), so every
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

use mindrune_core::{Act, Policy};
use mindrune_engine::FixerStart;
use mindrune_engine::{Attendance, Created};
use mindrune_engine::{PlaybookError, Playbooks};
use rmcp::ServiceExt as _;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, InputRequest, InputRequiredResult, ProtocolVersion,
};
use rmcp::service::{ElicitationError, RequestContext, RoleServer};

mod args;
mod asking;
mod proposal;
mod refine;
mod tools;

use asking::{
    APPROVE_KEY, Answer, AskBy, Asked, Asking, NotYes, Outcome, Reply, Round, input_answer,
    round_state,
};
use proposal::proposal;
use refine::{Refine, answered_answer, filed_answer};

pub(crate) use args::{Approval, CreateArgs, RefineArgs};

/// The most hits `playbook_search` returns, and how many when the caller does not say.
pub(crate) const MAX_SEARCH_LIMIT: u32 = 50;
pub(crate) const DEFAULT_SEARCH_LIMIT: u32 = 10;

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
