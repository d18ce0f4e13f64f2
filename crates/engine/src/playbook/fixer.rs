//! Starting the skill fixer: the human's own program (an LLM CLI, a script), run in the
//! background once per report.
//!
//! It gets pointers only, in its environment, and reads the record itself: the assistant that
//! hit the trouble does not get to tell it what went wrong.
//!
//! | variable                 | what it points at                                         |
//! |--------------------------|-----------------------------------------------------------|
//! | `MINDRUNE_SKILL_DIR`     | the skill's folder (`SKILL.md`, `history/`)                |
//! | `MINDRUNE_SKILL`         | the skill's name                                           |
//! | `MINDRUNE_REVISION`      | the revision reported                                      |
//! | `MINDRUNE_STEP`          | the step reported                                          |
//! | `MINDRUNE_TURN_RECORD`   | where the record of that turn is on disk (may be empty)    |
//! | `MINDRUNE_REPORT`        | the report's id, which a revision names                    |
//! | `MINDRUNE_WORKSPACE`     | the workspace                                              |
//! | `MINDRUNE_BIN`           | the `mindrune` program, to file `mindrune refine revise`   |
//! | `MINDRUNE_FIXER_TOKEN`   | the report's token: a revision without it is refused       |
//!
//! Its output goes to `.mindrune/fixer/report-<id>.log`.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::Playbooks;
use super::layout::OnDisk;
use super::refine::Report;

/// Whether the fixer started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FixerStart {
    Started {
        log: PathBuf,
    },
    /// No fixer is configured (`fixer =` in playbooks.toml): the correction is recorded only.
    NotConfigured,
    Failed {
        message: String,
    },
}

/// The program a fixer runs to file its revision: `MINDRUNE_BIN` when set (tests, wrappers),
/// else this very executable when it is `mindrune`.
fn mindrune_bin() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("MINDRUNE_BIN") {
        return Some(PathBuf::from(path));
    }
    let exe = std::env::current_exe().ok()?;
    (exe.file_stem()?.to_str()? == "mindrune").then_some(exe)
}

/// A fresh token for one report's fixer: 32 random bytes as hex. Only its digest is kept.
pub(crate) fn new_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

pub(crate) fn start(
    playbooks: &Playbooks,
    report_id: i64,
    live: &OnDisk,
    report: &Report,
    token: &str,
) -> FixerStart {
    let Some(command) = playbooks.config.fixer.as_deref() else {
        return FixerStart::NotConfigured;
    };
    let logs = playbooks.workspace.join(".mindrune").join("fixer");
    if let Err(err) = std::fs::create_dir_all(&logs) {
        return FixerStart::Failed {
            message: format!("cannot make {}: {err}", logs.display()),
        };
    }
    let log_path = logs.join(format!("report-{report_id}.log"));
    let log = match std::fs::File::create(&log_path) {
        Ok(log) => log,
        Err(err) => {
            return FixerStart::Failed {
                message: format!("cannot write {}: {err}", log_path.display()),
            };
        }
    };
    let err_log = match log.try_clone() {
        Ok(log) => log,
        Err(err) => {
            return FixerStart::Failed {
                message: err.to_string(),
            };
        }
    };
    let mut child = Command::new("/bin/sh");
    child
        .arg("-c")
        .arg(command)
        .current_dir(&playbooks.workspace)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err_log)
        .env("MINDRUNE_SKILL_DIR", &live.dir)
        .env("MINDRUNE_SKILL", &report.skill)
        .env("MINDRUNE_REVISION", report.revision.to_string())
        .env("MINDRUNE_STEP", report.step.to_string())
        .env("MINDRUNE_TURN_RECORD", report.turn.as_deref().unwrap_or(""))
        .env("MINDRUNE_REPORT", report_id.to_string())
        .env("MINDRUNE_WORKSPACE", &playbooks.workspace)
        .env("MINDRUNE_FIXER_TOKEN", token);
    // Its own process group: a Ctrl-C or a host stopping the MCP server's group must not kill a
    // fixer halfway, leaving its report with neither a revision nor a note.
    std::os::unix::process::CommandExt::process_group(&mut child, 0);
    if let Some(bin) = mindrune_bin() {
        child.env("MINDRUNE_BIN", bin);
    }
    match child.spawn() {
        Ok(mut process) => {
            // Reaped on a thread so it never lingers as a zombie while the server runs.
            std::thread::spawn(move || {
                let _ = process.wait();
            });
            FixerStart::Started { log: log_path }
        }
        Err(err) => FixerStart::Failed {
            message: format!("cannot start the fixer `{command}`: {err}"),
        },
    }
}
