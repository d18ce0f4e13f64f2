//! `mindrune serve` and the tokens it accepts.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_engine::now_millis;
use mindrune_server::{ServerConfig, load_config};
use mindrune_server::{new_secret, secret_digest};

use std::io::Write as _;

use mindrune_store::{OperatorRevoke, OperatorTokenKey};

use crate::library;
use crate::render::when_json;

pub(crate) fn serve(
    home: &Path,
    addr: Option<SocketAddr>,
    config: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let mut settings = match config {
        Some(path) => load_config(path)?,
        None => ServerConfig::default(),
    };
    if let Some(addr) = addr {
        settings.addr = addr;
    }
    let store = library::open(home)?;
    // Every `[[playbooks]]` entry names an owner of this library and a folder, before anyone
    // can log in and open an Inbox.
    settings.check_playbooks(store.as_ref())?;
    // Every `[[alerts]]` entry names an owner of this library.
    settings.check_alerts(store.as_ref())?;
    mindrune_server::run(store, settings, |addr| {
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

/// Issues an operator token (the console and /metrics, read-only) and prints it. Only the token
/// goes to stdout, so `$(mindrune token operator)` stays the token; its id goes to stderr.
pub(crate) fn token_operator(home: &Path) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let token = new_secret("mr_operator_");
    let id = store.issue_operator_token(&secret_digest(&token), now_millis())?;
    println!("{token}");
    eprintln!("operator token {id} (revoke it with `mindrune token revoke --operator {id}`)");
    Ok(ExitCode::SUCCESS)
}

const LIST_HINT: &str = "list them with `mindrune token list --operator`";

/// Revokes one operator token, given as the token itself or as its id.
pub(crate) fn token_revoke_operator(home: &Path, token_or_id: &str) -> anyhow::Result<ExitCode> {
    let token_or_id = token_or_id.trim();
    let digest;
    let key = if token_or_id.starts_with("mr_operator_") {
        digest = secret_digest(token_or_id);
        OperatorTokenKey::Digest(&digest)
    } else if let Ok(id) = token_or_id.parse::<i64>() {
        OperatorTokenKey::Id(id)
    } else {
        bail!(
            "no operator token `{token_or_id}`: give the token itself (`mr_operator_…`) or its id; {LIST_HINT}"
        );
    };
    let store = library::open(home)?;
    match store.revoke_operator_token(key, now_millis())? {
        OperatorRevoke::Revoked(token) => {
            println!("revoked operator token {}", token.id);
        }
        OperatorRevoke::AlreadyRevoked(token) => {
            println!(
                "operator token {} was revoked already, at {}",
                token.id,
                when(token.revoked_at)
            );
        }
        OperatorRevoke::Unknown => {
            let shown = match key {
                OperatorTokenKey::Id(id) => format!("with id {id}"),
                OperatorTokenKey::Digest(_) => "like the one given".to_string(),
            };
            bail!("no operator token {shown} in this library; {LIST_HINT}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Lists the operator tokens: id, issued, revoked.
pub(crate) fn token_list(home: &Path, operator: bool, json: bool) -> anyhow::Result<ExitCode> {
    if !operator {
        bail!(
            "`mindrune token list` lists operator tokens: add `--operator` (runner tokens are revoked per agent with `mindrune token revoke AGENT`)"
        );
    }
    let store = library::open(home)?;
    let tokens = store.operator_tokens()?;
    let mut out = std::io::stdout().lock();
    if json {
        let rows: Vec<serde_json::Value> = tokens
            .iter()
            .map(|token| {
                serde_json::json!({
                    "id": token.id,
                    "created_at": when_json(Some(token.created_at)),
                    "revoked_at": when_json(token.revoked_at),
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    if tokens.is_empty() {
        writeln!(
            out,
            "no operator tokens; issue one with `mindrune token operator`"
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    // The library does not keep when a token was last used, so there is no such column.
    writeln!(out, "id  created  revoked")?;
    for token in &tokens {
        writeln!(
            out,
            "{}  {}  {}",
            token.id,
            when(Some(token.created_at)),
            token
                .revoked_at
                .map_or("-".to_string(), |at| when(Some(at)))
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn when(millis: Option<i64>) -> String {
    match when_json(millis) {
        serde_json::Value::String(at) => at,
        _ => "?".to_string(),
    }
}
