//! Starting the skill fixer in the background once per report: MindRune's own on Claude Code
//! (`fixer = "claude"`, [`super::fixer_agent`]) or the human's own program (a script, another
//! agent CLI).
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
//! Its output goes to `.mindrune/fixer/report-<id>.log`, with the token masked: a fixer that
//! echoes its environment (`set -x`, `env`) must not leave the one secret of its report in a
//! file, and the log is MindRune's own, which `workspace_read` does not read.

use std::io::{Read, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use super::Playbooks;
use super::config::Fixer;
use super::layout::OnDisk;
use super::report::Report;

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
    let Some(fixer) = playbooks.config.fixer.as_ref() else {
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
        Ok(log) => Arc::new(Mutex::new(log)),
        Err(err) => {
            return FixerStart::Failed {
                message: format!("cannot write {}: {err}", log_path.display()),
            };
        }
    };
    // The fixer must outlive the process that started it (an MCP server whose host session
    // closed right after the report, as `claude -p` does): its output goes straight to the
    // file, never through a pipe this process reads, or the fixer would die of SIGPIPE the
    // moment this process ends. MindRune's own fixer never prints its token; a command of the
    // human's runs under `mindrune refine run-fixer`, a process of its own that masks it.
    let bin = mindrune_bin();
    let direct = matches!(fixer, Fixer::Claude) || bin.is_some();
    let (mut child, described) = match fixer {
        Fixer::Command(command) => match &bin {
            Some(bin) => {
                let mut child = Command::new(bin);
                child
                    .arg("refine")
                    .arg("--workspace")
                    .arg(&playbooks.workspace)
                    .arg("run-fixer")
                    .arg("--log")
                    .arg(&log_path)
                    .arg("--")
                    .arg(command);
                (child, format!("`{command}`"))
            }
            // Without the mindrune program (a library embedding the engine), through this
            // process, which must then outlive the fixer.
            None => {
                let mut child = Command::new("/bin/sh");
                child.arg("-c").arg(command);
                (child, format!("`{command}`"))
            }
        },
        // MindRune's own: this program's `refine fix`, which starts Claude Code read-only and
        // files what it answers. The token stays in that process; Claude Code never gets it.
        Fixer::Claude => {
            let Some(bin) = bin.clone() else {
                return FixerStart::Failed {
                    message: "MindRune's own fixer runs `mindrune refine fix`, but this program is not `mindrune`; set MINDRUNE_BIN to the mindrune program".to_string(),
                };
            };
            let mut child = Command::new(&bin);
            child
                .arg("refine")
                .arg("--workspace")
                .arg(&playbooks.workspace)
                .arg("fix")
                .arg("--report")
                .arg(report_id.to_string());
            (child, format!("{} refine fix", bin.display()))
        }
    };
    child
        .current_dir(&playbooks.workspace)
        .stdin(Stdio::null())
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
    let file_for = |log: &Arc<Mutex<std::fs::File>>| {
        log.lock()
            .ok()
            .and_then(|file| file.try_clone().ok())
            .map_or_else(Stdio::null, Stdio::from)
    };
    if direct {
        // `run-fixer` appends the command's masked output to the same file itself; its own
        // stdout and stderr carry only what it has to say about running it.
        child.stdout(file_for(&log)).stderr(file_for(&log));
    } else {
        // A command of the human's: through MindRune, not straight to the file, so the token
        // is masked on the way.
        child.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    if let Some(bin) = &bin {
        child.env("MINDRUNE_BIN", bin);
    }
    match child.spawn() {
        Ok(mut process) => {
            let outputs: [Option<Box<dyn Read + Send>>; 2] = [
                process
                    .stdout
                    .take()
                    .map(|out| Box::new(out) as Box<dyn Read + Send>),
                process
                    .stderr
                    .take()
                    .map(|err| Box::new(err) as Box<dyn Read + Send>),
            ];
            for output in outputs.into_iter().flatten() {
                let (log, token) = (Arc::clone(&log), token.to_string());
                std::thread::spawn(move || copy_masked(output, &log, &token));
            }
            // Reaped on a thread so it never lingers as a zombie while the server runs.
            std::thread::spawn(move || {
                let _ = process.wait();
            });
            FixerStart::Started { log: log_path }
        }
        Err(err) => FixerStart::Failed {
            message: format!("cannot start the fixer {described}: {err}"),
        },
    }
}

/// `mindrune refine run-fixer`: runs a fixer command of the human's (`/bin/sh -c`, in this
/// process's folder and environment, which hold the report's pointers and token) and appends
/// its output to `log` with every occurrence of `token` masked; returns its exit status once it
/// and both copies are done. A process of its own, started in the fixer's process group, so it
/// lives as long as the fixer does.
pub fn run_command_masked(
    command: &str,
    log: &std::path::Path,
    token: &str,
) -> std::io::Result<std::process::ExitStatus> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    let log = Arc::new(Mutex::new(file));
    let mut child = Command::new("/bin/sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let outputs: [Option<Box<dyn Read + Send>>; 2] = [
        child
            .stdout
            .take()
            .map(|out| Box::new(out) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|err| Box::new(err) as Box<dyn Read + Send>),
    ];
    let copies: Vec<_> = outputs
        .into_iter()
        .flatten()
        .map(|output| {
            let (log, token) = (Arc::clone(&log), token.to_string());
            std::thread::spawn(move || copy_masked(output, &log, &token))
        })
        .collect();
    let status = child.wait()?;
    for copy in copies {
        let _ = copy.join();
    }
    Ok(status)
}

/// What the token is written as in the fixer's log.
pub(crate) const TOKEN_MASK: &str = "[MINDRUNE_FIXER_TOKEN]";

/// Copies one of the fixer's outputs into its log with every occurrence of `token` masked. The
/// last `token.len() - 1` bytes wait for the next read, so a token split across two reads is
/// masked too.
fn copy_masked(mut from: impl Read, log: &Mutex<std::fs::File>, token: &str) {
    let token = token.as_bytes();
    let keep = token.len().saturating_sub(1);
    let mut pending: Vec<u8> = Vec::new();
    let mut buffer = [0u8; 8192];
    let write = |bytes: &[u8]| {
        if let Ok(mut log) = log.lock() {
            let _ = log.write_all(bytes);
        }
    };
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) | Err(_) => 0,
            Ok(read) => read,
        };
        pending.extend_from_slice(&buffer[..read]);
        let mut out = Vec::with_capacity(pending.len());
        while let Some(at) = find(&pending, token) {
            out.extend_from_slice(&pending[..at]);
            out.extend_from_slice(TOKEN_MASK.as_bytes());
            pending.drain(..at + token.len());
        }
        let flush_to = if read == 0 {
            pending.len()
        } else {
            pending.len().saturating_sub(keep)
        };
        out.extend(pending.drain(..flush_to));
        write(&out);
        if read == 0 {
            return;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `chunks` one at a time, as a pipe hands them over.
    struct Chunks(Vec<Vec<u8>>);

    impl Read for Chunks {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let chunk = self.0.remove(0);
            buf[..chunk.len()].copy_from_slice(&chunk);
            Ok(chunk.len())
        }
    }

    #[test]
    fn the_token_is_masked_even_when_split_across_reads() {
        let token = "0123456789abcdef";
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let log = Mutex::new(std::fs::File::create(&path).unwrap());
        let chunks = Chunks(vec![
            b"+ MINDRUNE_FIXER_TOKEN=01234".to_vec(),
            b"56789abcdef\nfiled ".to_vec(),
            format!("{token}{token} done\n").into_bytes(),
        ]);
        copy_masked(chunks, &log, token);
        let written = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            written,
            format!("+ MINDRUNE_FIXER_TOKEN={TOKEN_MASK}\nfiled {TOKEN_MASK}{TOKEN_MASK} done\n")
        );
    }
}
