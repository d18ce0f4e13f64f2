//! MindRune's server: the runner protocol over HTTP (`/v1/`), the runner that speaks it beside
//! each avatar's sandbox, the owner's dashboard and the operator's console, and the MCP server
//! of a personal assistant's playbook skills (`mcp`).

// Only the cli prints: a library returns values and errors, and the cli words them (its own
// unit tests may say what they measured).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod alerts;
pub mod api;
pub mod app;
pub mod auth;
mod chart_range;
pub mod charts;
pub mod config;
pub mod console;
pub mod dashboard;
pub mod error;
pub mod fairness;
pub mod group_commit;
pub mod health;
pub mod html;
mod icons;
pub mod inbox;
pub mod login_guard;
pub mod mcp;
pub mod metrics;
mod pages;
mod run_page;
pub mod runner;
mod runs;
mod script_page;
mod scripts;
pub mod secret;
pub mod state;
pub mod wire;
