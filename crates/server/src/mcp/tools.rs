//! The eight tools as the assistant calls them, and the handler that routes to them.

use std::fmt::Write as _;

use mindrune_engine::render_records;
use rmcp::handler::server::tool::{InputResponses as ToolInputResponses, RequestState};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, Implementation, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

use super::args::{
    Args, CopyArgs, CreateArgs, ECHO_CHARS, MAX_ARG_NAME_BYTES, ReadArgs, RecordArgs, RefineArgs,
    SearchArgs, WriteArgs, check_bounds, cut, sizes,
};
use super::asking::{Answer, Reply, Round};
use super::{DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, PlaybookServer};

#[tool_router(vis = "pub(super)")]
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
                .engine({
                    let path = path.clone();
                    move |playbooks| playbooks.workspace_read_noting(&path, turn.as_deref())
                })
                .await
                .map_or_else(
                    |answer| answer.cut_echoes(&[&path]),
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
                .engine({
                    let path = path.clone();
                    move |playbooks| playbooks.file_write(&path, &content)
                })
                .await
                .map_or_else(|answer| answer.cut_echoes(&[&path]), Answer::ok),
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
                .engine({
                    let (from, to) = (from.clone(), to.clone());
                    move |playbooks| playbooks.file_copy(&from, &to)
                })
                .await
                .map_or_else(|answer| answer.cut_echoes(&[&from, &to]), Answer::ok),
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
                .engine({
                    let (from, to) = (from.clone(), to.clone());
                    move |playbooks| playbooks.file_move(&from, &to)
                })
                .await
                .map_or_else(|answer| answer.cut_echoes(&[&from, &to]), Answer::ok),
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
                            Answer::ok(format!(
                                "No skill matches \"{}\".",
                                cut(query.trim(), ECHO_CHARS)
                            ))
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
                    Ok(records) => Answer::ok(render_records(&records).trim_end()),
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
    /// Every call: logged with its tool and its arguments' names and sizes (never a value, at
    /// any level), its arguments checked against their bounds before any work, then routed.
    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let tool = cut(&request.name, MAX_ARG_NAME_BYTES).into_owned();
        tracing::debug!(
            tool = %tool,
            arguments = %sizes(request.arguments.as_ref()),
            "tool call"
        );
        if request.name.len() > MAX_ARG_NAME_BYTES {
            return Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                ContentBlock::text(format!(
                    "there is no tool named {tool} (a tool's name is at most {MAX_ARG_NAME_BYTES} bytes)"
                )),
            ])));
        }
        if let Err(message) = check_bounds(&request.name, request.arguments.as_ref()) {
            tracing::debug!(tool = %tool, "tool call refused: an argument is over its bound");
            return Ok(CallToolResponse::Complete(
                self.finish(Answer::error(message)).await,
            ));
        }
        let tcc = rmcp::handler::server::tool::ToolCallContext::new(self, request, context);
        self.tool_router.call(tcc).await
    }

    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("mindrune", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("MindRune playbook skills".to_string());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(self.instructions.clone())
    }
}
