//! `mindrune serve` and the tokens it accepts.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_engine::avatars::ingest::now_millis;
use mindrune_server::config::{self, ServerConfig};
use mindrune_server::secret::{new_secret, secret_digest};

use crate::library;

pub(crate) fn serve(
    home: &Path,
    addr: Option<SocketAddr>,
    config: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let mut settings = match config {
        Some(path) => config::load(path)?,
        None => ServerConfig::default(),
    };
    if let Some(addr) = addr {
        settings.addr = addr;
    }
    let store = library::open(home)?;
    // Every `[[playbooks]]` entry names an owner of this library and a folder, before anyone
    // can log in and open an Inbox.
    settings.check_playbooks(store.as_ref())?;
    mindrune_server::app::run(store, settings, |addr| {
        // The one line a person starting the server needs; the rest goes to the log.
        eprintln!("mindrune: serving on http://{addr} (dashboard: http://{addr}/dashboard)");
        tracing::info!(%addr, "listening");
    })
    .context("the server stopped")?;
    Ok(ExitCode::SUCCESS)
}

/// Issues a runner token for an agent and prints it (only its digest is kept).
pub(crate) fn token_issue(home: &Path, agent: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let Some(agent) = store.agent_by_name(agent)? else {
        bail!("no agent named `{agent}`\n\nhint: `mindrune agent list` shows the agents");
    };
    let token = new_secret("mr_runner_");
    store.issue_runner_token(agent.owner, agent.id, &secret_digest(&token), now_millis())?;
    println!("{token}");
    Ok(ExitCode::SUCCESS)
}

/// Revokes every runner token of an agent.
pub(crate) fn token_revoke(home: &Path, agent: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let Some(agent) = store.agent_by_name(agent)? else {
        bail!("no agent named `{agent}`\n\nhint: `mindrune agent list` shows the agents");
    };
    let revoked = store.revoke_runner_tokens(agent.owner, agent.id, now_millis())?;
    println!(
        "revoked {revoked} runner token{} of {}",
        if revoked == 1 { "" } else { "s" },
        agent.name
    );
    Ok(ExitCode::SUCCESS)
}

/// Issues an operator token (the console, read-only) and prints it.
pub(crate) fn token_operator(home: &Path) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let token = new_secret("mr_operator_");
    store.issue_operator_token(&secret_digest(&token), now_millis())?;
    println!("{token}");
    Ok(ExitCode::SUCCESS)
}
