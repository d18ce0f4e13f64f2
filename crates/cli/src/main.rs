//! The `mindrune` command: a thin layer over the engine and the store. This is the only crate
//! that formats for a terminal.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mindrune_engine::turn::Boundary;

mod bench;
mod commands;
mod library;
mod render;

/// MindRune: records, scores and versions the skills of AI agents.
#[derive(Debug, Parser)]
#[command(name = "mindrune", version, about, long_about = None)]
struct Cli {
    /// Where the library lives.
    #[arg(
        long,
        global = true,
        env = "MINDRUNE_HOME",
        default_value = ".mindrune"
    )]
    home: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make a new, empty library in MINDRUNE_HOME.
    Init,
    /// Owner accounts: a family is all agents of one owner.
    Owner {
        #[command(subcommand)]
        command: OwnerCommand,
    },
    /// Agents (avatars) of an owner's family.
    Agent {
        #[command(subcommand)]
        command: AgentCommand,
    },
    /// Record tool-call events (JSON lines) from a file or standard input.
    Record {
        /// The events file; `-` or nothing reads standard input.
        file: Option<PathBuf>,
        /// Print what each line recorded as JSON lines instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Feed tool calls in from an agent host's hooks.
    Hook {
        #[command(subcommand)]
        host: HookHost,
    },
    /// One entry per skill: its current version, score and runs.
    Skills {
        /// Only this agent's skills.
        #[arg(long)]
        agent: Option<String>,
        /// The owner whose family to show (needed when the library has several).
        #[arg(long)]
        owner: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// One skill and its versions.
    Skill {
        #[command(subcommand)]
        command: SkillCommand,
    },
    /// Mark the end of an agent's turn: scan its bots/<bot>/, share what proved itself,
    /// un-share what lost its header or file, read its Share: lessons, refresh family-skills/.
    TurnEnd {
        agent: String,
        /// Write the mirror here instead of WORKSPACE/family-skills.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Before an agent starts: re-check every header (changing nothing already shared as it
    /// is) and write family-skills/; if the library cannot answer, empty it.
    Start {
        agent: String,
        /// Write the mirror here instead of WORKSPACE/family-skills (also what is emptied
        /// when the library cannot answer).
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The wrap-up at a goal or step end: the lesson prompt, headed scripts not shared yet,
    /// what became a family skill, proven scripts without a header, repeated inline code.
    Wrapup {
        agent: String,
        #[arg(long)]
        json: bool,
    },
    /// The short text an agent is told about sharing (with the family's bar), for its start.
    Instructions { agent: String },
    /// Write an agent's family-skills/ now from the library's answer.
    Mirror {
        agent: String,
        /// Write it here instead of WORKSPACE/family-skills.
        #[arg(long)]
        out: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Measure MindRune against its baselines.
    Bench {
        #[command(subcommand)]
        which: BenchCommand,
    },
    /// Topic tags: build the vocabulary from rs-sdk's wiki, or see which tags a text carries.
    Tags {
        #[command(subcommand)]
        command: TagsCommand,
    },
}

#[derive(Debug, Subcommand)]
enum TagsCommand {
    /// Write the topic-tag vocabulary into the library from an rs-sdk wiki folder.
    ///
    /// One tag per page of its quests/, skills/, items/, npcs/ and shops/, plus the built-in
    /// places and LostHQ pages. Run it again after an rs-sdk update: new pages become new
    /// tags. Exits with 2 when files were skipped (each is named).
    Build {
        /// The wiki folder, or an rs-sdk checkout that has one.
        #[arg(long)]
        wiki: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Print the topic tags a text carries, one a line.
    ///
    /// Tags written exactly, and names the vocabulary knows ("lumby" is place:lumbridge).
    Map {
        /// The text; `-` or nothing reads standard input.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        text: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
enum OwnerCommand {
    /// Add an owner account.
    Add { name: String },
    /// List owner accounts.
    List,
    /// Switch eager family sharing (3 runs, score 500) on or off for an owner's family.
    Eager {
        owner: String,
        #[arg(value_parser = ["on", "off"])]
        setting: String,
    },
}

#[derive(Debug, Subcommand)]
enum AgentCommand {
    /// Add an agent to an owner's family; its scripts are WORKSPACE/bots/NAME/*.ts.
    Add {
        name: String,
        #[arg(long)]
        owner: String,
        #[arg(long)]
        workspace: PathBuf,
    },
    /// List an owner's agents.
    List {
        #[arg(long)]
        owner: Option<String>,
    },
    /// Delete an agent: its private scripts go; its shared skills stay with the family.
    Remove { name: String },
}

#[derive(Debug, Subcommand)]
enum HookHost {
    /// Read one Claude Code hook call (JSON) on standard input.
    ClaudeCode {
        /// The agent whose tool calls these are.
        #[arg(long)]
        agent: String,
    },
}

#[derive(Debug, Subcommand)]
enum SkillCommand {
    /// A skill's versions, newest first.
    Show {
        /// AGENT/NAME, e.g. buzz/chop-oaks.
        skill: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Recording uses into SQLite, beside bare SQLite inserts of the same rows.
    Record {
        /// How many uses to record.
        #[arg(long, default_value_t = 20_000)]
        uses: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// A turn boundary for an agent with 200 scripts, and a family-skills/ refresh for a
    /// family of 20 agents × 100 shared skills × 10,000 uses.
    Mirror {
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Building the topic-tag vocabulary from a wiki of the real 1,350 pages, and mapping
    /// 50 MB of free text to tags, beside a plain Aho-Corasick scan of the same text.
    Tags {
        /// The `kind:slug` listing the wiki is generated from (default: the shared rs-sdk
        /// listing beside the source tree).
        #[arg(long)]
        pages: Option<PathBuf>,
        /// Megabytes of free text to map.
        #[arg(long, default_value_t = 50)]
        megabytes: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MINDRUNE_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .without_time()
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`mindrune skills | head`) is not an error worth a message.
            if err.chain().any(|cause| {
                cause
                    .downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "error: {err}");
            for cause in err.chain().skip(1) {
                let _ = write!(stderr, ": {cause}");
            }
            let _ = writeln!(stderr);
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let home = cli.home;
    match cli.command {
        Command::Init => commands::init(&home),
        Command::Owner {
            command: OwnerCommand::Add { name },
        } => commands::owner_add(&home, &name),
        Command::Owner {
            command: OwnerCommand::List,
        } => commands::owner_list(&home),
        Command::Agent {
            command:
                AgentCommand::Add {
                    name,
                    owner,
                    workspace,
                },
        } => commands::agent_add(&home, &name, &owner, &workspace),
        Command::Agent {
            command: AgentCommand::List { owner },
        } => commands::agent_list(&home, owner.as_deref()),
        Command::Agent {
            command: AgentCommand::Remove { name },
        } => commands::agent_remove(&home, &name),
        Command::Owner {
            command: OwnerCommand::Eager { owner, setting },
        } => commands::owner_eager(&home, &owner, setting == "on"),
        Command::TurnEnd { agent, out, json } => {
            commands::turn_boundary(&home, &agent, Boundary::TurnEnd, out.as_deref(), json)
        }
        Command::Start { agent, out, json } => {
            commands::turn_boundary(&home, &agent, Boundary::Start, out.as_deref(), json)
        }
        Command::Wrapup { agent, json } => commands::wrapup(&home, &agent, json),
        Command::Instructions { agent } => commands::instructions(&home, &agent),
        Command::Mirror { agent, out, json } => {
            commands::mirror(&home, &agent, out.as_deref(), json)
        }
        Command::Record { file, json } => commands::record(&home, file.as_deref(), json),
        Command::Hook {
            host: HookHost::ClaudeCode { agent },
        } => commands::hook_claude_code(&home, &agent),
        Command::Skills { agent, owner, json } => {
            commands::skills(&home, agent.as_deref(), owner.as_deref(), json)
        }
        Command::Skill {
            command: SkillCommand::Show { skill, json },
        } => commands::skill_show(&home, &skill, json),
        Command::Bench {
            which: BenchCommand::Record { uses, json },
        } => bench::record(uses, json),
        Command::Bench {
            which: BenchCommand::Mirror { json },
        } => bench::mirror(json),
        Command::Bench {
            which:
                BenchCommand::Tags {
                    pages,
                    megabytes,
                    json,
                },
        } => bench::tags(pages.as_deref(), megabytes, json),
        Command::Tags {
            command: TagsCommand::Build { wiki, json },
        } => commands::tags_build(&home, &wiki, json),
        Command::Tags {
            command: TagsCommand::Map { text },
        } => commands::tags_map(&home, &text),
    }
}
