//! The human's side of the playbook skills: the inbox and its cards, the fixer's commands, and
//! `mindrune mcp`, the assistant's side.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use mindrune_core::Permissions;
use mindrune_engine::{
    Attendance, CONFIG_FILE, Card, CardKind, CardState, Created, DoneTask, PERMISSIONS_FILE,
    PlaybookError, Playbooks, Proposal, SkillRecord, Suggester, live_dir, preview_card,
    render_records, run_command_masked, write_playbook_atomic,
};

/// The assistant's workspace (its skills are WORKSPACE/skills/).
#[derive(Debug, Args)]
pub(crate) struct Workspace {
    /// The assistant's workspace: the folder that holds skills/ and MindRune's files.
    #[arg(
        long,
        env = "MINDRUNE_WORKSPACE",
        default_value = ".",
        value_name = "DIR"
    )]
    pub workspace: PathBuf,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CardCommand {
    /// A card in full: what it proposes, and for a revision or revert the diff against the live
    /// file.
    Show {
        /// The card's number, as `mindrune inbox` lists it.
        id: i64,
        /// Print a JSON object instead: the fields of `mindrune inbox --json` (`id`, `kind`,
        /// `skill`, `state`, `filed_by`, `filed_at`, `fingerprint`, `base_version`,
        /// `restore_version`, `report`, `why`, `answered_at`, `answered_by`, `reason`,
        /// `outcome`), with `proposal` (the SKILL.md proposed), `owes` (the fields it leaves
        /// out) and `diff` (against the live file; null when there is none).
        #[arg(long)]
        json: bool,
    },
    /// Approve a card: a draft goes live, a revision or revert is applied, a skill is retired.
    Approve {
        /// The card's number, as `mindrune inbox` lists it.
        id: i64,
    },
    /// Turn a card down, with the reason the door repeats if the same name is proposed again.
    Reject {
        /// The card's number, as `mindrune inbox` lists it.
        id: i64,
        /// Why: kept beside the skill, and repeated by the door if the same name is
        /// proposed again.
        #[arg(long)]
        reason: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum RefineCommand {
    /// The fixer files its corrected SKILL.md for a report, with the fingerprint of the exact
    /// file it read (`sha256:` and the hex of `sha256sum SKILL.md`).
    Revise {
        /// The report the revision answers (its number in the usage log).
        #[arg(long)]
        report: i64,
        /// The corrected SKILL.md.
        #[arg(long)]
        file: PathBuf,
        /// The fingerprint of the live SKILL.md the fixer read: `sha256:` and 64 hex digits.
        #[arg(long)]
        fingerprint: String,
        /// The token MindRune handed the fixer for this report.
        #[arg(long, env = "MINDRUNE_FIXER_TOKEN", hide_env_values = true)]
        token: String,
    },
    /// The fixer stops without a revision, and says why (the procedure was not followed, or
    /// the record does not show enough).
    Stop {
        /// The report the fixer stops on (its number in the usage log).
        #[arg(long)]
        report: i64,
        /// Why it stops: shown in the skill's record as the fixer's note.
        #[arg(long)]
        reason: String,
    },
    /// MindRune's own fixer for a report (`fixer = "claude"` starts it in the background): Claude
    /// Code reads the skill, the revision and step reported and the turn record with read-only
    /// tools, and answers stop or revise; its answer is filed like `stop` or `revise` above.
    Fix {
        /// The report to fix (its number in the usage log).
        #[arg(long)]
        report: i64,
        /// The token MindRune handed the fixer for this report (it stays in this process).
        #[arg(long, env = "MINDRUNE_FIXER_TOKEN", hide_env_values = true)]
        token: String,
        /// The agent: `claude` (Claude Code on PATH, the default), or a command that reads the
        /// act's JSON request on stdin and prints its JSON answer.
        #[arg(long, default_value = "claude", value_name = "AGENT")]
        agent: String,
    },
    /// (Started by MindRune for a report when `fixer` is a command.) Runs the command with
    /// its output appended to LOG, the report's token masked: a process of its own, so the
    /// fixer outlives the MCP server that started it.
    #[command(hide = true)]
    RunFixer {
        /// The file the fixer's output is appended to.
        #[arg(long)]
        log: PathBuf,
        /// The token MindRune handed the fixer for this report (masked in the log).
        #[arg(long, env = "MINDRUNE_FIXER_TOKEN", hide_env_values = true)]
        token: String,
        /// The fixer command line, as `playbooks.toml` gives it.
        #[arg(last = true)]
        command: String,
    },
    /// File a card that makes an earlier kept version live again.
    Revert {
        /// The skill's name (its folder under skills/).
        skill: String,
        /// The kept version to make live again (`playbook record` lists them).
        #[arg(long)]
        version: u32,
    },
    /// File a card asking whether a skill should stop being used (always held for you).
    Retire {
        /// The skill's name (its folder under skills/).
        skill: String,
        /// Why it should stop being used, for the card.
        #[arg(long)]
        why: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum PlaybookCommand {
    /// Write permissions.yaml (the shipped default, or the mode built for unattended work) and
    /// a playbooks.toml to edit, unless they exist.
    Init {
        /// Write the permissions built for unattended work: changes apply on their own,
        /// a retirement still waits for you.
        #[arg(long)]
        unattended: bool,
    },
    /// Propose a skill yourself, from a SKILL.md you wrote: it goes through the same door
    /// (skill_create's checks) and is filed as a card like any other.
    Propose {
        /// The skill's name: its folder under skills/.
        name: String,
        /// The SKILL.md to propose (its version and status are the runtime's and are ignored).
        #[arg(long)]
        file: PathBuf,
    },
    /// How each skill has done: reads, corrections, and whether the live revision did better
    /// than the one it replaced (Fisher's exact test). Writes nothing.
    Record {
        /// Only this skill (its folder name under skills/).
        skill: Option<String>,
        /// Print a JSON array instead: one object per skill with `name`, `status`,
        /// `live_version`, `reads`, `failed_reads`, `corrections`, `turns`, `revisions`
        /// (newest first: `version`, `reads`, `failed_reads`, `corrections`),
        /// `previous_version`, `comparison` (`verdict`, `p_value`, `test`, or null),
        /// `evidence`, `fixer_notes` (`report`, `note`), `owed` and `cost` (`reported`,
        /// `tokens`, `token_turns`, `tool_calls`, `tool_call_turns`).
        #[arg(long)]
        json: bool,
    },
    /// Find skills by words, best first, with a line on when to use each.
    Search {
        /// The words to look for.
        #[arg(required = true)]
        words: Vec<String>,
    },
    /// The carried skills with when to use each: the lines described on every turn.
    Carried,
    /// The observer leaves a suggestion for the assistant (it cannot write a skill itself).
    Suggest {
        /// The suggestion, as the assistant will read it.
        text: String,
    },
    /// A task its project's checks closed as done: with enough tool calls it suggests a skill.
    TaskDone {
        /// What the task was, in a line.
        #[arg(long)]
        task: String,
        /// How many tool calls the task took.
        #[arg(long)]
        tool_calls: u32,
        /// The project's own checks passed (tests, build).
        #[arg(long)]
        checks_passed: bool,
    },
}

fn open(workspace: &Path) -> anyhow::Result<Playbooks> {
    Playbooks::open_existing(workspace)
        .with_context(|| format!("cannot open the workspace {}", workspace.display()))
}

/// A rule's refusal is the message itself; anything else keeps its chain.
fn refusal(err: PlaybookError) -> anyhow::Error {
    anyhow::Error::new(err)
}

pub(crate) fn mcp(workspace: &Path) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(mindrune_server::serve_stdio(workspace))?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn inbox(workspace: &Path, all: bool, json: bool) -> anyhow::Result<ExitCode> {
    let playbooks = open(workspace)?;
    let cards = playbooks.ledger().cards(!all)?;
    let mut out = String::new();
    if json {
        let rows: Vec<serde_json::Value> = cards.iter().map(card_json).collect();
        out = serde_json::to_string_pretty(&rows)?;
        out.push('\n');
    } else if cards.is_empty() {
        out.push_str(if all {
            "No cards yet.\n"
        } else {
            "Nothing waits for you.\n"
        });
    } else {
        for card in &cards {
            let _ = writeln!(
                out,
                "#{:<4} {:<7} {:<24} {:<8} filed by {} {}",
                card.id,
                card.kind.as_str(),
                card.skill,
                card.state.as_str(),
                card.filed_by,
                card.filed_at
            );
        }
        if !all {
            out.push_str(
                "\nmindrune card show N · card approve N · card reject N --reason \"…\"\n",
            );
        }
    }
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

fn card_json(card: &Card) -> serde_json::Value {
    serde_json::json!({
        "id": card.id,
        "kind": card.kind.as_str(),
        "skill": card.skill,
        "state": card.state.as_str(),
        "filed_by": card.filed_by,
        "filed_at": card.filed_at,
        "fingerprint": card.fingerprint,
        "base_version": card.base_version,
        "restore_version": card.restore_version,
        "report": card.report_id,
        "why": card.why,
        "answered_at": card.answered_at,
        "answered_by": card.answered_by,
        "reason": card.reason,
        "outcome": card.outcome,
    })
}

pub(crate) fn card(workspace: &Path, command: CardCommand) -> anyhow::Result<ExitCode> {
    let playbooks = open(workspace)?;
    match command {
        CardCommand::Show { id, json } => {
            let Some(card) = playbooks.ledger().card(id)? else {
                anyhow::bail!("there is no card #{id}; `mindrune inbox --all` lists them");
            };
            if json {
                let mut value = card_json(&card);
                let proposal = card.proposal.as_deref().unwrap_or_default();
                let owes: Vec<&str> = match card.kind {
                    CardKind::Create => mindrune_core::parse_skill_file(proposal)
                        .map(|(skill, _)| mindrune_core::owed_fields(&skill))
                        .unwrap_or_default(),
                    _ => Vec::new(),
                };
                value["proposal"] = card.proposal.clone().into();
                value["owes"] = owes.into();
                value["diff"] = card_diff(&playbooks, &card).into();
                println!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                print!("{}", show_card(&playbooks, &card)?);
            }
            Ok(ExitCode::SUCCESS)
        }
        CardCommand::Approve { id } => {
            let answered = playbooks.approve(id).map_err(refusal)?;
            match answered.state {
                CardState::Applied => {
                    println!("card #{id} approved: {}", answered.outcome);
                    Ok(ExitCode::SUCCESS)
                }
                CardState::Waiting => {
                    eprintln!("card #{id} not approved: {}", answered.outcome);
                    Ok(ExitCode::FAILURE)
                }
                _ => {
                    eprintln!("card #{id} refused: {}", answered.outcome);
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        CardCommand::Reject { id, reason } => {
            let answered = playbooks.reject(id, &reason).map_err(refusal)?;
            println!("card #{id} turned down: {}", answered.outcome);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `playbook record --json`: one skill's record, with the field names its help line lists.
fn record_json(record: &SkillRecord) -> serde_json::Value {
    serde_json::json!({
        "name": record.name,
        "status": record.status.map(|status| status.as_str()),
        "live_version": record.live_version,
        "reads": record.reads,
        "failed_reads": record.failed_reads,
        "corrections": record.corrections,
        "turns": record.turns,
        "revisions": record.revisions.iter().map(|revision| serde_json::json!({
            "version": revision.version,
            "reads": revision.reads,
            "failed_reads": revision.failed_reads,
            "corrections": revision.corrections,
        })).collect::<Vec<_>>(),
        "previous_version": record.previous_version,
        "comparison": record.comparison.as_ref().map(|comparison| serde_json::json!({
            "verdict": comparison.verdict.as_str(),
            "p_value": comparison.p_value,
            "test": comparison.test,
        })),
        "evidence": record.evidence,
        "fixer_notes": record.fixer_notes.iter().map(|(report, note)| serde_json::json!({
            "report": report,
            "note": note,
        })).collect::<Vec<_>>(),
        "owed": record.owed,
        "cost": {
            "reported": record.cost.reported,
            "tokens": record.cost.tokens,
            "token_turns": record.cost.token_turns,
            "tool_calls": record.cost.tool_calls,
            "tool_call_turns": record.cost.tool_call_turns,
        },
    })
}

/// The unified diff `card show` prints for a revision or revert (against what would land for a
/// waiting card); `None` for a draft or a retirement, and for a waiting card that could no
/// longer be applied.
fn card_diff(playbooks: &Playbooks, card: &Card) -> Option<String> {
    if !matches!(card.kind, CardKind::Revise | CardKind::Revert) {
        return None;
    }
    let proposal = card.proposal.as_deref().unwrap_or_default();
    let live_path = live_dir(playbooks.workspace(), &card.skill).join("SKILL.md");
    let live = std::fs::read_to_string(&live_path).unwrap_or_default();
    let landing = if card.state == CardState::Waiting {
        preview_card(playbooks, card).ok()?
    } else {
        proposal.to_string()
    };
    let label = match card.restore_version {
        Some(version) => format!("v{version} (kept)"),
        None => "proposed".to_string(),
    };
    let diff = similar::TextDiff::from_lines(live.as_str(), landing.as_str());
    Some(
        diff.unified_diff()
            .context_radius(3)
            .header("live SKILL.md", &label)
            .to_string(),
    )
}

fn show_card(playbooks: &Playbooks, card: &Card) -> anyhow::Result<String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "card #{} · {} · {} · {}",
        card.id,
        card.kind.as_str(),
        card.skill,
        card.state.as_str()
    );
    let _ = write!(out, "filed by {} at {}", card.filed_by, card.filed_at);
    if let Some(version) = card.base_version {
        let _ = write!(out, ", against v{version}");
    }
    if let Some(fingerprint) = &card.fingerprint {
        let _ = write!(out, " ({fingerprint})");
    }
    out.push('\n');
    if let Some(report) = card.report_id {
        let line = playbooks
            .ledger()
            .usage(Some(&card.skill))?
            .into_iter()
            .find(|line| line.id == report);
        match line {
            Some(line) => {
                let _ = writeln!(
                    out,
                    "answers report #{report}: step {} of v{} went wrong",
                    line.step.unwrap_or(0),
                    line.revision.unwrap_or(0)
                );
            }
            None => {
                let _ = writeln!(out, "answers report #{report}");
            }
        }
    }
    if let Some(why) = &card.why {
        let _ = writeln!(out, "why: {why}");
    }
    if let Some(answered) = &card.answered_at {
        let _ = writeln!(
            out,
            "answered by {} at {answered}{}",
            card.answered_by.as_deref().unwrap_or("?"),
            card.reason
                .as_deref()
                .map(|reason| format!(": \"{reason}\""))
                .unwrap_or_default()
        );
    }
    if let Some(outcome) = &card.outcome {
        let _ = writeln!(out, "outcome: {outcome}");
    }
    let proposal = card.proposal.as_deref().unwrap_or_default();
    match card.kind {
        CardKind::Create => {
            // A field left out does not block a skill; the human sees what it still owes.
            if let Ok((skill, _)) = mindrune_core::parse_skill_file(proposal) {
                let owed = mindrune_core::owed_fields(&skill);
                if !owed.is_empty() {
                    let _ = writeln!(out, "owes: {}", owed.join(", "));
                }
            }
            out.push('\n');
            out.push_str(proposal);
        }
        CardKind::Revise | CardKind::Revert => {
            let live_path = live_dir(playbooks.workspace(), &card.skill).join("SKILL.md");
            let live = std::fs::read_to_string(&live_path).unwrap_or_default();
            // The diff is against what would land, rendered with its next version, so the
            // human approves exactly what goes live; a waiting card that could no longer be
            // applied says so instead.
            let landing = if card.state == CardState::Waiting {
                match preview_card(playbooks, card) {
                    Ok(text) => text,
                    Err(err) => {
                        let _ = writeln!(out, "approving it now would be refused: {err}");
                        proposal.to_string()
                    }
                }
            } else {
                proposal.to_string()
            };
            let label = match card.restore_version {
                Some(version) => format!("v{version} (kept)"),
                None => "proposed".to_string(),
            };
            out.push('\n');
            let diff = similar::TextDiff::from_lines(live.as_str(), landing.as_str());
            let _ = write!(
                out,
                "{}",
                diff.unified_diff()
                    .context_radius(3)
                    .header("live SKILL.md", &label)
            );
        }
        CardKind::Retire => {}
    }
    Ok(out)
}

pub(crate) fn refine(workspace: &Path, command: RefineCommand) -> anyhow::Result<ExitCode> {
    let playbooks = open(workspace)?;
    let filed = match command {
        RefineCommand::Revise {
            report,
            file,
            fingerprint,
            token,
        } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read the revision {}", file.display()))?;
            playbooks
                .revise_unasked(report, &text, fingerprint.trim(), token.trim())
                .map_err(refusal)?
        }
        RefineCommand::Stop { report, reason } => {
            playbooks.fixer_stopped(report, &reason).map_err(refusal)?;
            println!("report #{report}: noted that the fixer stopped without a revision");
            return Ok(ExitCode::SUCCESS);
        }
        RefineCommand::Fix {
            report,
            token,
            agent,
        } => return fix(&playbooks, report, token.trim(), &agent),
        RefineCommand::RunFixer {
            log,
            token,
            command,
        } => {
            let status = run_command_masked(&command, &log, token.trim())
                .with_context(|| format!("cannot run the fixer `{command}`"))?;
            return Ok(match status.code() {
                Some(0) => ExitCode::SUCCESS,
                Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                None => {
                    eprintln!("mindrune: the fixer `{command}` ended by a signal ({status})");
                    ExitCode::FAILURE
                }
            });
        }
        RefineCommand::Revert { skill, version } => playbooks
            .revert(&skill, version, "human")
            .map_err(refusal)?,
        RefineCommand::Retire { skill, why } => playbooks
            .retire(&skill, why.as_deref(), "human")
            .map_err(refusal)?,
    };
    match filed.answered {
        Some(answered) => println!(
            "card #{} filed and {} on its own: {}",
            filed.card,
            answered.state.as_str(),
            answered.outcome
        ),
        None => println!("card #{} filed; it waits in the inbox", filed.card),
    }
    Ok(ExitCode::SUCCESS)
}

/// The agent named on the command line: `claude` is Claude Code on PATH, anything else a
/// command line.
pub(crate) fn agent_backend(agent: &str) -> anyhow::Result<mindrune_engine::Backend> {
    use mindrune_engine::Backend;
    if agent.trim() == "claude" {
        return Backend::claude_on_path().context(
            "Claude Code (`claude`) is not on PATH; install it (npm install -g @anthropic-ai/claude-code) or name an agent command",
        );
    }
    Ok(Backend::Command {
        command: agent.to_string(),
    })
}

/// `refine fix`: MindRune's own fixer, whose log is the report's fixer log.
fn fix(playbooks: &Playbooks, report: i64, token: &str, agent: &str) -> anyhow::Result<ExitCode> {
    use mindrune_engine::{Fixed, FixerError};
    let backend = agent_backend(agent)?;
    println!("report #{report}: {} reads the record", backend.describe());
    match playbooks.fix_with_agent(report, token, &backend) {
        Ok(run) => {
            let cost = mindrune_engine::attempts_line(&run.attempts);
            match run.fixed {
                Fixed::Stopped { reason } => {
                    println!("report #{report}: the fixer stopped without a revision: {reason}");
                }
                Fixed::Revised { reason, filed } => {
                    println!("report #{report}: the fixer revised the skill: {reason}");
                    match filed.answered {
                        Some(answered) => println!(
                            "card #{} filed and {} on its own: {}",
                            filed.card,
                            answered.state.as_str(),
                            answered.outcome
                        ),
                        None => println!("card #{} filed; it waits in the inbox", filed.card),
                    }
                }
            }
            println!("agent: {cost}");
            Ok(ExitCode::SUCCESS)
        }
        Err(FixerError::Agent(failure)) => {
            let cost = mindrune_engine::attempts_line(failure.attempts());
            eprintln!(
                "report #{report}: the fixer's answer was not admitted: {failure}; nothing was filed"
            );
            eprintln!("agent: {cost}");
            Ok(ExitCode::FAILURE)
        }
        Err(FixerError::Playbook(err)) => Err(refusal(err)),
    }
}

pub(crate) fn playbook(workspace: &Path, command: PlaybookCommand) -> anyhow::Result<ExitCode> {
    if let PlaybookCommand::Init { unattended } = command {
        return init(workspace, unattended);
    }
    let playbooks = open(workspace)?;
    match command {
        PlaybookCommand::Init { .. } => unreachable!("handled above"),
        PlaybookCommand::Propose { name, file } => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let (skill, _) = mindrune_core::parse_skill_file(&text)
                .map_err(|err| anyhow::anyhow!("{}: {err}", file.display()))?;
            let proposal = Proposal {
                name,
                skill,
                suggested_by: Suggester::Human,
                accepted_as_done: false,
            };
            match playbooks
                .create(&proposal, Attendance::Attended)
                .map_err(refusal)?
            {
                Created::EvidenceAdded { skill } => {
                    println!("added as evidence to {skill}, which already has these steps")
                }
                Created::Filed {
                    card,
                    answered: None,
                } => {
                    println!(
                        "card #{card} filed: the draft waits in skills/pending/{}/",
                        proposal.name
                    )
                }
                Created::Filed {
                    card,
                    answered: Some(answered),
                } => println!(
                    "card #{card} filed and {}: {}",
                    answered.state.as_str(),
                    answered.outcome
                ),
            }
        }
        PlaybookCommand::Record { skill, json } => {
            let records = playbooks.record(skill.as_deref())?;
            if let Some(skill) = &skill
                && records.is_empty()
            {
                anyhow::bail!("there is no skill named {skill} in skills/");
            }
            if json {
                let rows: Vec<serde_json::Value> = records.iter().map(record_json).collect();
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                print!("{}", render_records(&records));
            }
        }
        PlaybookCommand::Search { words } => {
            let query = words.join(" ");
            let hits = playbooks.search(&query, 20)?;
            if hits.is_empty() {
                println!("No skill matches \"{query}\".");
            }
            for hit in hits {
                let carried = if hit.carried { " (carried)" } else { "" };
                println!(
                    "{} — {}{carried}",
                    hit.name,
                    hit.when.lines().next().unwrap_or_default()
                );
            }
        }
        PlaybookCommand::Carried => {
            for line in playbooks.carried_lines()? {
                println!("{line}");
            }
        }
        PlaybookCommand::Suggest { text } => {
            let id = playbooks.observer_suggests(&text).map_err(refusal)?;
            println!("suggestion #{id} left for the assistant");
        }
        PlaybookCommand::TaskDone {
            task,
            tool_calls,
            checks_passed,
        } => {
            let done = DoneTask {
                task,
                tool_calls,
                checks_passed,
            };
            match playbooks.task_done(&done)? {
                Some(id) => println!("suggestion #{id}: worth writing down as a skill"),
                None => println!(
                    "not suggested: it needs its checks to pass and at least {} tool calls",
                    playbooks.config().carry_over_tool_calls
                ),
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn init(workspace: &Path, unattended: bool) -> anyhow::Result<ExitCode> {
    let (workspace, wrote) = init_workspace(workspace, unattended)?;
    for file in [PERMISSIONS_FILE, CONFIG_FILE] {
        let path = workspace.join(file);
        if !wrote.contains(&path) {
            println!("{} exists; left as it is", path.display());
        }
    }
    for path in wrote {
        println!("wrote {}", path.display());
    }
    println!(
        "start the assistant's MCP server with: mindrune mcp --workspace {}",
        workspace.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Makes a playbook workspace: its folder, `permissions.yaml` (the shipped default, or the
/// unattended mode) and `playbooks.toml` where missing, then `skills/` and the ledger. Returns
/// the workspace (canonical) and the files it wrote; a file there already is left as it is.
pub(crate) fn init_workspace(
    workspace: &Path,
    unattended: bool,
) -> anyhow::Result<(PathBuf, Vec<PathBuf>)> {
    std::fs::create_dir_all(workspace)
        .with_context(|| format!("cannot make {}", workspace.display()))?;
    let workspace = &workspace
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", workspace.display()))?;
    let permissions = workspace.join(PERMISSIONS_FILE);
    let config = workspace.join(CONFIG_FILE);
    let mode = if unattended {
        Permissions::unattended()
    } else {
        Permissions::shipped_default()
    };
    let mut wrote = Vec::new();
    for (path, text) in [
        (&permissions, mode.render()),
        (&config, config_template(workspace)),
    ] {
        if path.exists() {
            continue;
        }
        write_playbook_atomic(path, text.as_bytes())?;
        wrote.push(path.clone());
    }
    // Opening makes skills/ and the ledger, and checks both files read back.
    open(workspace)?;
    Ok((workspace.clone(), wrote))
}

/// The settings file `playbook init` writes. The home tree is $HOME when the workspace is in it,
/// else the workspace's own folder, so the file works as written.
fn config_template(workspace: &Path) -> String {
    let workspace = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .and_then(|home| home.canonicalize().ok())
        .filter(|home| workspace.starts_with(home))
        .unwrap_or(workspace);
    CONFIG_TEMPLATE.replace(
        "# home = \"/home/you\"",
        &format!("home = {:?}", home.display().to_string()),
    )
}

const CONFIG_TEMPLATE: &str = r#"# MindRune playbook skills: settings for this workspace.

# The tools the assistant's runtime has besides MindRune's own (workspace_read, file_write,
# file_copy, file_move, skill_create, skill_refine, playbook_search, playbook_record). A skill
# step naming any other tool is refused.
tools = []

# The home tree: every path a skill names must be inside it, and so must the workspace.
# Default: $HOME.
# home = "/home/you"

# The skill fixer, started in the background once per report with pointers only. "claude" is
# MindRune's own (Claude Code, read-only tools, one checked answer; the default when `claude` is
# on PATH), "none" records the correction only, anything else is your own command (it gets
# MINDRUNE_SKILL_DIR, MINDRUNE_REVISION, MINDRUNE_STEP, MINDRUNE_TURN_RECORD, MINDRUNE_REPORT,
# MINDRUNE_WORKSPACE, MINDRUNE_BIN; see examples/fixer.sh). docs/agents.md says what each reads.
# fixer = "claude"
# What one run of MindRune's own fixer may cost (US dollars) and take (seconds).
# fixer_budget_usd = 1.0
# fixer_timeout_secs = 600

# When nobody attends a skill_create call, stop once this many drafts wait for you.
max_waiting_drafts = 5

# A task its checks closed as done that took at least this many tool calls suggests a skill.
carry_over_tool_calls = 8
"#;
