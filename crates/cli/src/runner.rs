//! `mindrune runner`: the thin CLI over `mindrune_server::runner`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use mindrune_server::runner::{self, RunnerConfig};

/// Run beside an avatar's sandbox: relay its tool calls and turn ends to the server, write its
/// family-skills/ from the server's answer, and keep everything spooled while the server is
/// away.
///
/// Point the agent's Claude Code hook at the same spool: `mindrune hook claude-code --agent
/// NAME --relay SPOOL` (or set MINDRUNE_RELAY=SPOOL for it).
#[derive(Debug, clap::Args)]
pub(crate) struct RunnerArgs {
    /// The server's URL, e.g. http://127.0.0.1:7878.
    #[arg(long, env = "MINDRUNE_SERVER")]
    server: String,
    /// The runner token (`mindrune token issue AGENT`).
    #[arg(long, env = "MINDRUNE_RUNNER_TOKEN", hide_env_values = true)]
    token: String,
    /// The folder that holds bots/AGENT/ (family-skills/ is written beside it, unless --mirror
    /// says elsewhere).
    #[arg(long)]
    workspace: PathBuf,
    /// Where the agent's family-skills/ is written [default: WORKSPACE/family-skills]; in a
    /// checkout several bots share, each has its own: WORKSPACE/bots/AGENT/family-skills.
    #[arg(long, value_name = "DIR")]
    mirror: Option<PathBuf>,
    /// The avatar (its bot's name).
    #[arg(long)]
    agent: String,
    /// The spool (inbox/, outbox/, rejected/) [default: MINDRUNE_HOME/runner/AGENT].
    #[arg(long)]
    spool: Option<PathBuf>,
    /// Deliver everything spooled, mark nothing new, exit once the outbox is empty. The token
    /// is checked first. Exit status: 0 when everything was delivered, 1 when it could not be
    /// (a refused token, a server away for 5 s, a stop with items still spooled), 2 when the server
    /// refused some items (they are in SPOOL/rejected/ with the reason beside them).
    #[arg(long)]
    once: bool,
    /// For hosts without hooks: mark a turn end when bots/AGENT/ changed and no turn ended
    /// for this many seconds.
    #[arg(long, value_name = "SECS")]
    turn_every: Option<u64>,
    /// A JSON file with rs-sdk's BotWorldState; sent to the dashboard whenever it changes.
    #[arg(long, value_name = "PATH")]
    state_file: Option<PathBuf>,
    /// The most events one request carries.
    #[arg(long, value_name = "N", default_value_t = mindrune_server::wire::MAX_BATCH_EVENTS)]
    max_batch: usize,
}

impl RunnerArgs {
    /// A runner without `--once` runs until stopped: it logs like a server (info, with times).
    pub(crate) fn long_running(&self) -> bool {
        !self.once
    }
}

pub(crate) fn run(home: &Path, args: RunnerArgs) -> anyhow::Result<ExitCode> {
    let spool = args
        .spool
        .unwrap_or_else(|| runner::default_spool(home, &args.agent));
    // Absolute paths: the workspace's path also tells which absolute paths in the agent's
    // shell lines are its own, and the spool's path is what the hook is told to use.
    let absolute = |path: PathBuf| {
        std::path::absolute(&path)
            .with_context(|| format!("cannot make {} an absolute path", path.display()))
    };
    let mut config = RunnerConfig::new(
        args.server,
        args.token,
        absolute(args.workspace)?,
        args.agent,
        absolute(spool)?,
    );
    config.once = args.once;
    config.turn_every = args.turn_every.map(Duration::from_secs);
    config.state_file = args.state_file;
    config.mirror = args.mirror.map(absolute).transpose()?;
    config.max_batch = args.max_batch;
    if !config.once {
        // The one line a person starting the runner needs; the rest goes to the log
        // (MINDRUNE_LOG=info shows every batch).
        eprintln!(
            "mindrune: runner for {} → {} (spool: {}; hook: mindrune hook claude-code --agent {} --relay {})",
            config.agent,
            config.server,
            config.spool.display(),
            config.agent,
            config.spool.display()
        );
    }
    let stop = runner::stop_on_signal();
    let summary = runner::run(&config, &stop)
        .with_context(|| format!("the runner for `{}` stopped", config.agent))?;
    if config.once && summary.rejected > 0 {
        eprintln!(
            "mindrune: the server refused {}; see {} for the reasons",
            crate::render::count(summary.rejected, "item", "items"),
            config.spool.join(runner::spool::REJECTED).display()
        );
    }
    if summary.pending > 0 {
        eprintln!(
            "mindrune: stopped with {} still spooled in {}; {} out when the runner runs again",
            crate::render::count(summary.pending, "item", "items"),
            config.spool.display(),
            if summary.pending == 1 {
                "it goes"
            } else {
                "they go"
            },
        );
    }
    // `--once` says in its status whether everything went out; a long-running runner stopped
    // by a signal keeps its spool for the next start, which is how it is meant to stop.
    Ok(if config.once && summary.pending > 0 {
        ExitCode::FAILURE
    } else if config.once && summary.rejected > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
