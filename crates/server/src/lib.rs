//! MindRune's server: the runner protocol over HTTP (`/v1/`), the runner that speaks it beside
//! each avatar's sandbox, the owner's dashboard and the operator's console, and the MCP server
//! of a personal assistant's playbook skills (`mcp`).

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod alerts;
mod api;
mod app;
mod auth;
mod chart_range;
mod charts;
mod config;
mod console;
mod dashboard;
mod error;
mod fairness;
mod group_commit;
mod health;
mod html;
mod icons;
mod inbox;
mod login_guard;
mod mcp;
mod metrics;
mod pages;
mod run_page;
pub mod runner;
mod runs;
mod script_page;
mod scripts;
mod secret;
mod state;
pub mod wire;

// What other crates use: the server (`run`, or `router` and `serve` for tests and benches), its
// configuration, the state it shares, the MCP server, the secrets the cli and benches mint, and
// the runner's and the wire protocol's namespaces (`runner`, `wire`).
pub use app::{CONTENT_SECURITY_POLICY, router, run, serve};
pub use config::{
    AlertRule, PlaybookWorkspace, ServerConfig, load as load_config, parse as parse_config,
};
pub use health::{Health, RunnerContact};
pub use mcp::{PlaybookServer, serve_stdio};
pub use secret::{new_secret, secret_digest};
pub use state::AppState;
