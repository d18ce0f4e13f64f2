//! The `mindrune` command: a thin layer over the engine and the store. This is the only crate
//! that formats for a terminal.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mindrune_engine::Boundary;

mod commands;
mod doctor;
mod faces;
mod lab;
mod library;
mod migrate;
mod playbooks;
mod progress;
mod render;
mod runner;
mod serve;
mod setup;

/// MindRune: records, scores and versions the skills of AI agents.
#[derive(Debug, Parser)]
#[command(name = "mindrune", version, about, long_about = None)]
struct Cli {
    /// The library's folder: its SQLite file is HOME/library.db (unless --database names
    /// another), and runners keep their spools in HOME/runner/ [default: .mindrune; `setup
    /// rs-sdk` makes a new library outside the checkout: $XDG_DATA_HOME/mindrune, else
    /// ~/.local/share/mindrune]
    #[arg(long, global = true, env = "MINDRUNE_HOME")]
    home: Option<PathBuf>,
    /// Keep the library in this database instead of MINDRUNE_HOME's SQLite file:
    /// postgres://USER@HOST:PORT/DATABASE (a `schema=NAME` parameter picks a schema), or
    /// sqlite:PATH for a SQLite file elsewhere.
    #[arg(long, global = true, env = "MINDRUNE_DATABASE_URL", value_name = "URL")]
    database: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make a new, empty library in MINDRUNE_HOME, or where --database says.
    Init,
    /// Check every link a project's face depends on, end to end, and name the fix for each
    /// one that fails: the hooks in .claude/settings*.json resolve to this binary, the library
    /// opens, the installed guard denies a write into a kept place, a bot's run is understood,
    /// each bot.env is read and scrubbed, spools deliver, family-skills/ is fresh, the
    /// vocabulary is built, `claude` is on PATH. Exit status 0 only when every check passes.
    Doctor {
        /// The folder Claude Code starts in (its project) [default: the current folder].
        #[arg(default_value = ".")]
        project: PathBuf,
        /// Check only this agent of the project.
        #[arg(long)]
        agent: Option<String>,
        /// The assistant's playbook workspace, when it is not the project's folder.
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// The server the project's runners deliver to: its /ready is asked.
        #[arg(long, value_name = "URL", env = "MINDRUNE_SERVER")]
        server: Option<String>,
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
    },
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
        /// Print the skills as a JSON array instead of a table.
        #[arg(long)]
        json: bool,
        /// Scores as of this time (RFC 3339, `2026-12-01T12:00:00Z`) instead of now: a score
        /// drifts back to the middle while a script is not run.
        #[arg(long, value_name = "TIME")]
        as_of: Option<String>,
    },
    /// What needs attention in a family, most harmful first: scripts failing now (with the
    /// version that likely broke them) and avatars quiet for longer than usual.
    Attention {
        /// Only what concerns this agent.
        #[arg(long)]
        agent: Option<String>,
        /// The owner whose family to look at (needed when the library has several).
        #[arg(long)]
        owner: Option<String>,
        /// Print the items as a JSON array instead of lines.
        #[arg(long)]
        json: bool,
        /// What needs attention as of this time (RFC 3339, `2026-12-01T12:00:00Z`) instead of now.
        #[arg(long, value_name = "TIME")]
        as_of: Option<String>,
    },
    /// One skill and its versions.
    Skill {
        #[command(subcommand)]
        command: SkillCommand,
    },
    /// Mark the end of an agent's turn: scan its bots/<bot>/, share what proved itself,
    /// un-share what lost its header or file, read its Share: lessons, refresh family-skills/.
    TurnEnd {
        /// The agent (its bot's name, as `mindrune agent list` shows it).
        agent: String,
        /// Write the mirror here instead of WORKSPACE/family-skills.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the turn report as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Before an agent starts: re-check every header (changing nothing already shared as it
    /// is) and write family-skills/; if the library cannot answer, empty it.
    Start {
        /// The agent (its bot's name, as `mindrune agent list` shows it).
        agent: String,
        /// Write the mirror here instead of WORKSPACE/family-skills (also what is emptied
        /// when the library cannot answer).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the start's report as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// The wrap-up at a goal or step end: the lesson prompt, headed scripts not shared yet,
    /// what became a family skill, proven scripts without a header, repeated inline code.
    Wrapup {
        /// The agent (its bot's name, as `mindrune agent list` shows it).
        agent: String,
        /// Print the wrap-up as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// The short text an agent is told about sharing (with the family's bar), for its start.
    Instructions {
        /// The agent (its bot's name, as `mindrune agent list` shows it).
        agent: String,
    },
    /// Write an agent's family-skills/ now from the library's answer.
    Mirror {
        /// The agent (its bot's name, as `mindrune agent list` shows it).
        agent: String,
        /// Write it here instead of WORKSPACE/family-skills.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print what was written as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Measure MindRune against its baselines. Without a subcommand, runs every benchmark
    /// (about 3–4 minutes on 2 cores) and prints one table: figure, baseline, ratio, target,
    /// pass/FAIL. A missed budget is a FAIL row, not an error: the exit status is 0.
    Bench {
        #[command(subcommand)]
        which: Option<BenchCommand>,
        /// Print every row as JSON (with no subcommand).
        #[arg(long)]
        json: bool,
        /// How long `serve`'s 50 runners send (with no subcommand).
        #[arg(long, default_value_t = 20)]
        serve_seconds: u64,
        /// Leave out the server-memory benchmark (1,000,000 uses; with no subcommand).
        #[arg(long)]
        skip_memory: bool,
    },
    /// Topic tags: build the vocabulary from rs-sdk's wiki, or see which tags a text carries.
    Tags {
        #[command(subcommand)]
        command: TagsCommand,
    },
    /// Run the server: the runner protocol, the owners' dashboard and the operator's console.
    Serve {
        /// Listen here (default 127.0.0.1:7878, or the configuration's `addr`).
        #[arg(long)]
        addr: Option<std::net::SocketAddr>,
        /// A TOML configuration file.
        #[arg(long, env = "MINDRUNE_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Tokens for runners (one avatar each) and for the operator's console.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Run beside an avatar's sandbox: relay its tool calls and turn ends to the server, write
    /// its family-skills/ from the answer, spool everything while the server is away.
    Runner(runner::RunnerArgs),
    /// Copy a whole library from SQLite into PostgreSQL, then verify every table: its row
    /// count and a SHA-256 digest of its rows.
    ///
    /// Ids are kept, so every reference stays right. The destination must be empty or a
    /// partial copy of the same library: run it again after an interruption and it goes on
    /// where it stopped. Rows already in the destination are never overwritten; a difference
    /// is an error naming the table and the rows.
    Migrate {
        /// The library to copy: sqlite:PATH, e.g. sqlite:.mindrune/library.db.
        #[arg(long, value_name = "sqlite:PATH")]
        from: String,
        /// Where to copy it: postgres://USER@HOST:PORT/DATABASE (a `schema=NAME` parameter
        /// picks a schema, created if needed).
        #[arg(long, value_name = "URL")]
        to: String,
    },
    /// The assistant's MCP server on standard input and output (playbook skills: workspace_read,
    /// file_write, file_copy, file_move, skill_create, skill_refine, playbook_search,
    /// playbook_record).
    Mcp {
        #[command(flatten)]
        workspace: playbooks::Workspace,
    },
    /// The cards waiting for you: every change to a playbook skill is one.
    Inbox {
        #[command(flatten)]
        workspace: playbooks::Workspace,
        /// Every card, answered ones too.
        #[arg(long)]
        all: bool,
        /// Print the cards as a JSON array instead (the fields of `card show --json`, without `proposal`, `owes` and `diff`).
        #[arg(long)]
        json: bool,
    },
    /// Answer a card: show it, approve it, or turn it down with a reason.
    Card {
        #[command(flatten)]
        workspace: playbooks::Workspace,
        #[command(subcommand)]
        command: playbooks::CardCommand,
    },
    /// Change a playbook skill (the fixer's revise and stop; revert and retire): each files a
    /// card.
    Refine {
        #[command(flatten)]
        workspace: playbooks::Workspace,
        #[command(subcommand)]
        command: playbooks::RefineCommand,
    },
    /// Playbook skills: set up a workspace, the record, search, the carried list, suggestions.
    Playbook {
        #[command(flatten)]
        workspace: playbooks::Workspace,
        #[command(subcommand)]
        command: playbooks::PlaybookCommand,
    },
    /// The Skill Lab: design, build, improve and extend the harness of Runx skill packages,
    /// every write bound to the digest it was planned against.
    Lab {
        #[command(subcommand)]
        command: lab::LabCommand,
    },
    /// Wire a real setup in one command.
    Setup {
        #[command(subcommand)]
        target: SetupTarget,
    },
}

#[derive(Debug, Subcommand)]
enum TokenCommand {
    /// Issue a runner token for an agent and print it (the library keeps only its digest).
    Issue {
        /// The agent the runner relays for; the token is good for that agent only.
        agent: String,
    },
    /// Revoke every runner token of an agent, or one operator token.
    Revoke {
        /// The agent whose runner tokens stop working.
        #[arg(required_unless_present = "operator", conflicts_with = "operator")]
        agent: Option<String>,
        /// The operator token to revoke: the token itself, or its id (`mindrune token list
        /// --operator`). The console and /metrics refuse it from then on.
        #[arg(long, value_name = "TOKEN_OR_ID")]
        operator: Option<String>,
    },
    /// List operator tokens: id, when issued, when revoked (never the tokens, which are not
    /// kept).
    List {
        /// The operator tokens (the only tokens listed so far).
        #[arg(long)]
        operator: bool,
        /// Print them as a JSON array instead.
        #[arg(long)]
        json: bool,
    },
    /// Issue an operator token for the console and /metrics (read-only, every family) and
    /// print it; its id goes to stderr.
    Operator,
}

#[derive(Debug, Subcommand)]
enum SetupTarget {
    /// Register every bot of an rs-sdk checkout's bots/ as an agent of OWNER (the checkout is
    /// each one's workspace), add MindRune's Claude Code hooks to its .claude/settings.json
    /// (merged with the hooks there), build the topic-tag vocabulary from its wiki/, and print
    /// the commands that start the server and a runner per bot.
    ///
    /// Everything is checked before anything is written; running it again changes nothing.
    RsSdk {
        /// The rs-sdk checkout.
        path: PathBuf,
        /// The owner whose family the bots join (added when missing).
        #[arg(long)]
        owner: String,
        /// Show what would change (the settings file as a diff) and change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Wire an assistant's playbook workspace into Claude Code: register `mindrune mcp` in
    /// the project's .mcp.json and merge MindRune's hooks into its .claude/settings.json (the
    /// guard that keeps the host's own file tools and shell out of skills/ and MindRune's
    /// files, the host's reads of skills logged, the carried skills on every turn). The
    /// workspace is made when it has no playbooks.toml yet.
    ///
    /// Everything is checked before anything is written; running it again changes nothing.
    ClaudeCode {
        /// The folder Claude Code starts in (its project).
        #[arg(default_value = ".")]
        project: PathBuf,
        /// The assistant's playbook workspace (default: the project folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Show what would change (both files as diffs) and change nothing.
        #[arg(long)]
        dry_run: bool,
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
        /// Print the vocabulary's counts and changes as JSON instead.
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
    Add {
        /// The owner's name: letters, digits, `-`, `_` and `.`, at most 64.
        name: String,
    },
    /// Issue a new key for an owner whose key is lost (printed once; the old key stops
    /// working). Only a key's digest is kept, so a key cannot be shown again.
    Key {
        /// The owner whose key is replaced.
        name: String,
    },
    /// List owner accounts, each with how many agents it has.
    List {
        /// Print a JSON array instead: one object per owner with `name`, `agents` (how many),
        /// `eager_sharing` and `created_at` (milliseconds since 1970). The key is never shown.
        #[arg(long)]
        json: bool,
    },
    /// Switch eager family sharing (3 runs, score 500) on or off for an owner's family.
    Eager {
        /// The owner whose family it is.
        owner: String,
        /// `on` shares a headed script after 3 runs at score 500; `off` keeps the family's
        /// usual bar.
        #[arg(value_parser = ["on", "off"])]
        setting: String,
    },
}

#[derive(Debug, Subcommand)]
enum AgentCommand {
    /// Add an agent to an owner's family; its scripts are WORKSPACE/bots/NAME/*.ts.
    Add {
        /// The agent's name, as its bot is named: letters, digits, `-`, `_` and `.`, at
        /// most 64.
        name: String,
        /// The owner whose family the agent joins.
        #[arg(long)]
        owner: String,
        /// The folder that holds bots/NAME/ (it must exist).
        #[arg(long)]
        workspace: PathBuf,
    },
    /// List an owner's agents, each with its workspace.
    List {
        /// The owner whose agents to list (needed when the library has several).
        #[arg(long)]
        owner: Option<String>,
        /// Print a JSON array instead: one object per agent with `name`, `owner`,
        /// `workspace`, `mirror` (its family-skills/ folder), `created_at` and `last_turn_at`
        /// (milliseconds since 1970, or null).
        #[arg(long)]
        json: bool,
    },
    /// Delete an agent: its private scripts go; its shared skills stay with the family.
    Remove {
        /// The agent to delete.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum HookHost {
    /// Read one Claude Code hook call (JSON) on standard input.
    ClaudeCode {
        /// The agent whose tool calls these are: the bot's name (one settings file serves
        /// every bot of a checkout, so whoever starts its Claude Code sets MINDRUNE_AGENT).
        #[arg(long, env = "MINDRUNE_AGENT")]
        agent: Option<String>,
        /// Write each call and turn end into DIR/inbox/ for `mindrune runner` instead of
        /// recording it into the library (no library is needed then).
        #[arg(long, value_name = "DIR", env = "MINDRUNE_RELAY")]
        relay: Option<PathBuf>,
        /// An assistant's playbook workspace (as `mindrune setup claude-code` writes it): guard
        /// its skills/ and MindRune's files from the host's own tools, log the host's reads of
        /// skills, and carry the carried skills into every turn. Relative to the project folder.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["agent", "relay"])]
        workspace: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum SkillCommand {
    /// A skill's versions, newest first.
    Show {
        /// AGENT/NAME, e.g. buzz/chop-oaks.
        skill: String,
        /// Print the skill and its versions as JSON instead.
        #[arg(long)]
        json: bool,
        /// Scores as of this time (RFC 3339, `2026-12-01T12:00:00Z`) instead of now: a score
        /// drifts back to the middle while a script is not run.
        #[arg(long, value_name = "TIME")]
        as_of: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Recording uses into SQLite, beside bare SQLite inserts of the same rows; with
    /// --database postgres://…, also into a scratch schema there (dropped after), beside bare
    /// PostgreSQL inserts of the same rows, in the same run.
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
    /// Runners on loopback sending events to a real `mindrune serve` for a while: throughput,
    /// p50/p99 latency, and whether every acknowledged event was stored exactly once, beside
    /// the same events recorded in-process.
    Serve {
        /// How long the runners send, in seconds.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// How many runners send at once.
        #[arg(long, default_value_t = 50)]
        runners: usize,
        /// Events per batch.
        #[arg(long, default_value_t = 10)]
        batch: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Many families on many servers sharing one PostgreSQL database (--database
    /// postgres://…, in a scratch schema dropped after): each family's runners send to one of
    /// the servers, beside one family of 25 runners per server on the same servers.
    Scale {
        /// `mindrune serve` processes sharing the database.
        #[arg(long, default_value_t = 4)]
        servers: usize,
        /// Families, spread over the servers.
        #[arg(long, default_value_t = 200)]
        families: usize,
        /// Runners (avatars) per family, each sending as fast as its server answers.
        #[arg(long, default_value_t = 5)]
        runners: usize,
        /// How long the families' runners send, in seconds.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Events per batch.
        #[arg(long, default_value_t = 10)]
        batch: usize,
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
    /// The secret scrubber over generated scripts and run output (and a tenth of it, to show
    /// the rate is flat), beside a plain Aho-Corasick scan for the same trigger literals.
    Secrets {
        /// Megabytes of text to scrub.
        #[arg(long, default_value_t = 50)]
        megabytes: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The wrap-up's near-repeat lookup for an agent's inline snippets of the last 7 days,
    /// beside tokenizing the same snippets only.
    NearRepeat {
        /// How many distinct snippets the agent ran.
        #[arg(long, default_value_t = 2_000)]
        snippets: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The Skill Lab's package snapshot digest and `lab inspect` on a generated Runx package
    /// near the size limit, beside reading the same files in the walk's order.
    Lab {
        /// How many files the package has (Runx allows at most 500).
        #[arg(long, default_value_t = 480)]
        files: usize,
        /// How many MiB the package's files add up to (Runx allows at most 20).
        #[arg(long, default_value_t = 16)]
        mebibytes: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Playbook search over a workspace of generated skills (made through the door and
    /// approved): median and p99 over a dozen queries, beside a naive scan of every SKILL.md.
    Search {
        /// How many live skills the workspace holds.
        #[arg(long, default_value_t = 1_000)]
        skills: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The host guard before each of Claude Code's tool calls: the whole hook process
    /// (median, p99) beside the binary's bare start, and the judgement alone beside parsing
    /// its payload. The budget is < 20 ms a call.
    Guard {
        /// How many calls are judged in process (the hook process runs up to 200 of them).
        #[arg(long, default_value_t = 2_000)]
        calls: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The server's peak RSS with this many uses stored (after a mirror fetch, turns and
    /// event batches), beside the same work on the same family with no uses.
    Memory {
        /// How many uses the library holds.
        #[arg(long, default_value_t = 1_000_000)]
        uses: usize,
        /// Print the figures as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// One benchmark with its own detail; exit 0 when it ran (a missed budget is printed).
/// `postgres` is the PostgreSQL database chosen with --database, if any.
fn bench_command(which: BenchCommand, postgres: Option<&str>) -> anyhow::Result<ExitCode> {
    use mindrune_bench as bench;
    use mindrune_bench::Print;
    let ran = |rows: anyhow::Result<Vec<bench::Row>>| rows.map(|_| ExitCode::SUCCESS);
    match which {
        BenchCommand::Record { uses, json } => {
            ran(bench::record(uses, postgres, Print::detail(json)))
        }
        BenchCommand::Mirror { json } => ran(bench::mirror(Print::detail(json))),
        BenchCommand::Tags {
            pages,
            megabytes,
            json,
        } => ran(bench::tags(
            pages.as_deref(),
            megabytes,
            Print::detail(json),
        )),
        BenchCommand::Serve {
            seconds,
            runners,
            batch,
            json,
        } => bench::serve(seconds, runners, batch, Print::detail(json)).map(|(_, exactly_once)| {
            if exactly_once {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }),
        BenchCommand::Scale {
            servers,
            families,
            runners,
            seconds,
            batch,
            json,
        } => {
            let Some(url) = postgres else {
                anyhow::bail!(
                    "bench scale runs on PostgreSQL: name the database with --database postgres://USER@HOST:PORT/DATABASE"
                );
            };
            let shape = bench::ScaleShape {
                servers,
                families,
                runners,
                seconds,
                batch,
            };
            bench::scale(url, shape, Print::detail(json)).map(|(_, sound)| {
                if sound {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            })
        }
        BenchCommand::Secrets { megabytes, json } => {
            ran(bench::secrets(megabytes, Print::detail(json)))
        }
        BenchCommand::NearRepeat { snippets, json } => {
            ran(bench::near_repeat(snippets, Print::detail(json)))
        }
        BenchCommand::Lab {
            files,
            mebibytes,
            json,
        } => ran(bench::lab(files, mebibytes, Print::detail(json))),
        BenchCommand::Search { skills, json } => ran(bench::search(skills, Print::detail(json))),
        BenchCommand::Memory { uses, json } => ran(bench::memory(uses, Print::detail(json))),
        BenchCommand::Guard { calls, json } => ran(bench::guard(calls, Print::detail(json))),
    }
}

fn main() -> ExitCode {
    let matches = faces::grouped_help(<Cli as clap::CommandFactory>::command()).get_matches();
    let cli =
        <Cli as clap::FromArgMatches>::from_arg_matches(&matches).unwrap_or_else(|err| err.exit());
    // A server's log is its record (requests, batches, shutdown), with times; a command's log
    // holds only warnings. MINDRUNE_LOG sets the filter, MINDRUNE_LOG_FORMAT=json gives one
    // JSON object per line for a log collector.
    let long_running = matches!(cli.command, Command::Serve { .. })
        || matches!(&cli.command, Command::Runner(args) if args.long_running());
    let filter = tracing_subscriber::EnvFilter::try_from_env("MINDRUNE_LOG")
        .unwrap_or_else(|_| if long_running { "info" } else { "warn" }.into());
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // MCP hosts and service managers capture stderr to a file: colour only on a terminal.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter);
    // rmcp's own log lines quote whole requests and results (a tool's arguments, secrets
    // among them) at debug and trace: every level keeps only argument names and sizes, which
    // `mindrune mcp` logs itself for each call.
    let no_values = tracing_subscriber::filter::filter_fn(no_values_logged);
    {
        use tracing_subscriber::layer::SubscriberExt as _;
        use tracing_subscriber::util::SubscriberInitExt as _;
        match (
            std::env::var("MINDRUNE_LOG_FORMAT").as_deref(),
            long_running,
        ) {
            (Ok("json"), _) => subscriber.json().finish().with(no_values).init(),
            (_, true) => subscriber.finish().with(no_values).init(),
            (_, false) => subscriber.without_time().finish().with(no_values).init(),
        }
    }
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
            let mut said = err.to_string();
            let _ = write!(stderr, "error: {said}");
            // A cause the message already quotes (`cannot read X: {source}`, a transparent
            // wrapper) is said once.
            for cause in err.chain().skip(1) {
                let cause = cause.to_string();
                if !said.contains(&cause) {
                    let _ = write!(stderr, ": {cause}");
                    said.push_str(&cause);
                }
            }
            let _ = writeln!(stderr);
            ExitCode::FAILURE
        }
    }
}

/// Whether a log line or span may be written: one of rmcp's only when it carries no value but
/// its message and the request's id (its others quote requests, results, notifications and
/// errors whole, a tool's arguments within).
fn no_values_logged(metadata: &tracing::Metadata<'_>) -> bool {
    !metadata.target().starts_with("rmcp")
        || metadata
            .fields()
            .iter()
            .all(|field| matches!(field.name(), "message" | "id" | "request_id"))
}

/// `mindrune setup …`: an rs-sdk checkout, or an assistant's Claude Code workspace.
fn setup_command(
    home: &std::path::Path,
    home_given: bool,
    target: SetupTarget,
) -> anyhow::Result<ExitCode> {
    match target {
        SetupTarget::RsSdk {
            path,
            owner,
            dry_run,
        } => setup::rs_sdk(home, home_given, &path, &owner, dry_run),
        SetupTarget::ClaudeCode {
            project,
            workspace,
            dry_run,
        } => setup::claude_code(&project, workspace.as_deref(), dry_run),
    }
}

/// `mindrune token …`: runner and operator tokens.
fn token_command(home: &std::path::Path, command: TokenCommand) -> anyhow::Result<ExitCode> {
    match command {
        TokenCommand::Issue { agent } => serve::token_issue(home, &agent),
        TokenCommand::Revoke { agent, operator } => match (agent, operator) {
            (_, Some(operator)) => serve::token_revoke_operator(home, &operator),
            (Some(agent), None) => serve::token_revoke(home, &agent),
            (None, None) => unreachable!("clap requires the agent unless --operator is given"),
        },
        TokenCommand::List { operator, json } => serve::token_list(home, operator, json),
        TokenCommand::Operator => serve::token_operator(home),
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // Whether the library's place was chosen: `setup rs-sdk` keeps a library it chose itself
    // out of the checkout, where the agents' own tools could read it.
    let home_given = cli.home.is_some();
    let home = cli.home.unwrap_or_else(|| PathBuf::from(".mindrune"));
    if let Some(database) = cli.database.as_deref().filter(|url| !url.is_empty()) {
        library::choose_database(database)?;
    }
    match cli.command {
        Command::Init => commands::init(&home),
        Command::Doctor {
            project,
            agent,
            workspace,
            server,
            json,
        } => doctor::doctor(&doctor::DoctorArgs {
            home: &home,
            home_given: home_given || cli.database.is_some(),
            project: &project,
            agent: agent.as_deref(),
            workspace: workspace.as_deref(),
            server: server.as_deref(),
            json,
        }),
        Command::Migrate { from, to } => migrate::migrate(&from, &to),
        Command::Runner(args) => runner::run(&home, args),
        Command::Serve { addr, config } => serve::serve(&home, addr, config.as_deref()),
        Command::Token { command } => token_command(&home, command),
        Command::Owner {
            command: OwnerCommand::Add { name },
        } => commands::owner_add(&home, &name),
        Command::Owner {
            command: OwnerCommand::Key { name },
        } => commands::owner_key(&home, &name),
        Command::Owner {
            command: OwnerCommand::List { json },
        } => commands::owner_list(&home, json),
        Command::Agent {
            command:
                AgentCommand::Add {
                    name,
                    owner,
                    workspace,
                },
        } => commands::agent_add(&home, &name, &owner, &workspace),
        Command::Agent {
            command: AgentCommand::List { owner, json },
        } => commands::agent_list(&home, owner.as_deref(), json),
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
            host:
                HookHost::ClaudeCode {
                    workspace: Some(workspace),
                    ..
                },
        } => commands::hook_claude_code_workspace(&workspace),
        Command::Hook {
            host:
                HookHost::ClaudeCode {
                    agent,
                    relay,
                    workspace: None,
                },
        } => commands::hook_claude_code(&home, agent.as_deref(), relay.as_deref()),
        Command::Skills {
            agent,
            owner,
            json,
            as_of,
        } => commands::skills(
            &home,
            agent.as_deref(),
            owner.as_deref(),
            json,
            commands::clock(as_of.as_deref())?,
        ),
        Command::Skill {
            command: SkillCommand::Show { skill, json, as_of },
        } => commands::skill_show(&home, &skill, json, commands::clock(as_of.as_deref())?),
        Command::Attention {
            agent,
            owner,
            json,
            as_of,
        } => commands::attention(
            &home,
            agent.as_deref(),
            owner.as_deref(),
            json,
            commands::clock(as_of.as_deref())?,
        ),
        Command::Bench {
            which: None,
            json,
            serve_seconds,
            skip_memory,
        } => mindrune_bench::all(
            serve_seconds,
            skip_memory,
            library::chosen_postgres(&home).as_deref(),
            json,
        ),
        Command::Bench {
            which: Some(which), ..
        } => bench_command(which, library::chosen_postgres(&home).as_deref()),
        Command::Tags {
            command: TagsCommand::Build { wiki, json },
        } => commands::tags_build(&home, &wiki, json),
        Command::Tags {
            command: TagsCommand::Map { text },
        } => commands::tags_map(&home, &text),
        Command::Lab { command } => lab::lab(command),
        Command::Mcp { workspace } => playbooks::mcp(&workspace.workspace),
        Command::Inbox {
            workspace,
            all,
            json,
        } => playbooks::inbox(&workspace.workspace, all, json),
        Command::Card { workspace, command } => playbooks::card(&workspace.workspace, command),
        Command::Refine { workspace, command } => playbooks::refine(&workspace.workspace, command),
        Command::Playbook { workspace, command } => {
            playbooks::playbook(&workspace.workspace, command)
        }
        Command::Setup { target } => setup_command(&home, home_given, target),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory as _;

    /// Every subcommand, argument and flag of `command` and below it that has no help line,
    /// named by its path (`mindrune card show <id>`).
    fn without_help(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            // clap's own --help and --version carry their help.
            if id == "help" || id == "version" {
                continue;
            }
            let has_help = arg
                .get_help()
                .or(arg.get_long_help())
                .is_some_and(|help| !help.to_string().trim().is_empty());
            if !has_help {
                let name = match arg.get_long() {
                    Some(long) => format!("--{long}"),
                    None => format!("<{id}>"),
                };
                missing.push(format!("{path} {name}"));
            }
        }
        for sub in command.get_subcommands() {
            let sub_path = format!("{path} {}", sub.get_name());
            if sub.get_name() == "help" {
                continue;
            }
            let has_about = sub
                .get_about()
                .or(sub.get_long_about())
                .is_some_and(|about| !about.to_string().trim().is_empty());
            if !has_about {
                missing.push(sub_path.clone());
            }
            without_help(sub, &sub_path, missing);
        }
    }

    #[test]
    fn every_subcommand_argument_and_flag_has_a_help_line() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        let mut missing = Vec::new();
        without_help(&cli, "mindrune", &mut missing);
        assert!(
            missing.is_empty(),
            "these have no help line (write one as a `///` comment):\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn the_walk_finds_an_argument_without_help() {
        // The walk itself can fail: a command with a bare argument is named.
        let command = clap::Command::new("demo")
            .about("a demo")
            .arg(clap::Arg::new("bare").long("bare"))
            .subcommand(clap::Command::new("quiet"));
        let mut missing = Vec::new();
        without_help(&command, "demo", &mut missing);
        assert_eq!(missing, ["demo --bare", "demo quiet"]);
    }
}
