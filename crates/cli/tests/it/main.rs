//! The one integration-test binary: runs the real `mindrune` on real files in temp dirs.

mod bench;
mod bot_env;
mod claude_code;
mod cli;
mod family;
mod family_input;
mod faults;
mod hook;
mod hostile;
mod lab;
mod lab_faults;
mod mcp;
mod migrate;
mod mirror_crash;
mod playbook_faults;
mod playbooks;
mod postgres_concurrency;
mod record;
mod rs_runs;
mod runner;
mod secrets;
mod setup;
mod tags;
mod util;
mod wrapup;
