//! Running another program within bounds: a wall time, a cap on what it prints, and no process
//! left behind. Used for the Skill Lab's agent command and the harness's `cli-tool` runners,
//! both programs MindRune did not write.
//!
//! The child gets its own process group, and the whole group is killed when the child exits or
//! the time is up: a grandchild that kept the output pipe open would otherwise hold the caller
//! until it chose to exit, and one that outlived a timeout would keep running unseen.

use std::io::{self, Read, Write as _};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long output readers get after the group was killed to hand over what they read.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// The limits a child runs under.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Bytes of stdout (and of stderr, when captured) kept; more is an overflow.
    pub max_output: usize,
}

/// What became of the child.
#[derive(Debug)]
pub struct Finished {
    /// `None` when it was killed at the timeout.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub timed_out: bool,
    /// It printed more than [`Limits::max_output`] on stdout or stderr.
    pub(crate) overflowed: bool,
}

/// Runs `command` with `stdin` as its input (closed at once when `None`), capturing stdout and,
/// if asked, stderr (otherwise inherited), within `limits`.
pub fn run_bounded(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    capture_stderr: bool,
    limits: Limits,
) -> io::Result<Finished> {
    command
        .process_group(0)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(if capture_stderr {
            Stdio::piped()
        } else {
            Stdio::inherit()
        });
    let mut child = command.spawn()?;
    // Past this point every way out kills the group, so nothing the child started survives.
    let started = Instant::now();
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A thread, so a child that answers before reading its input (or never reads it)
        // cannot stall us on a full pipe; a broken pipe is the child's business.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
    }
    let (sender, receiver) = mpsc::channel();
    let mut readers = 0;
    if let Some(stdout) = child.stdout.take() {
        spawn_reader(stdout, false, limits.max_output, sender.clone());
        readers += 1;
    }
    if let Some(stderr) = child.stderr.take() {
        spawn_reader(stderr, true, limits.max_output, sender.clone());
        readers += 1;
    }
    drop(sender);

    let deadline = started.checked_add(limits.timeout);
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if deadline.is_some_and(|deadline| Instant::now() >= deadline) => {
                timed_out = true;
                kill_group(&mut child);
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(err) => {
                kill_group(&mut child);
                return Err(err);
            }
        }
    };
    // The child is done; anything it left running in its group goes with it.
    kill_group(&mut child);

    let mut finished = Finished {
        status,
        stdout: Vec::new(),
        stderr: Vec::new(),
        timed_out,
        overflowed: false,
    };
    let drain_until = Instant::now() + DRAIN_GRACE;
    for _ in 0..readers {
        let wait = drain_until.saturating_duration_since(Instant::now());
        let Ok((is_stderr, bytes, overflowed)) = receiver.recv_timeout(wait) else {
            break;
        };
        finished.overflowed |= overflowed;
        if is_stderr {
            finished.stderr = bytes;
        } else {
            finished.stdout = bytes;
        }
    }
    Ok(finished)
}

/// Reads up to `max + 1` bytes, then stops (closing the pipe, so a child still writing gets
/// SIGPIPE) and reports whether there was more.
fn spawn_reader(
    stream: impl Read + Send + 'static,
    is_stderr: bool,
    max: usize,
    sender: mpsc::Sender<(bool, Vec<u8>, bool)>,
) {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
        let _ = stream.take(limit).read_to_end(&mut bytes);
        let overflowed = bytes.len() > max;
        bytes.truncate(max);
        let _ = sender.send((is_stderr, bytes, overflowed));
    });
}

/// Kills the child's whole process group (it leads one: `process_group(0)`) and reaps it.
fn kill_group(child: &mut Child) {
    if let Some(pid) = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    const LIMITS: Limits = Limits {
        timeout: Duration::from_secs(5),
        max_output: 1024,
    };

    #[test]
    fn output_and_status_are_captured() {
        let done =
            run_bounded(sh("cat; echo err >&2"), Some(b"hi".to_vec()), true, LIMITS).unwrap();
        assert!(done.status.unwrap().success());
        assert_eq!(done.stdout, b"hi");
        assert_eq!(done.stderr, b"err\n");
        assert!(!done.timed_out && !done.overflowed);
    }

    #[test]
    fn a_grandchild_holding_stdout_open_does_not_hold_the_caller() {
        let began = Instant::now();
        let done =
            run_bounded(sh("(sleep 30; echo late) & echo now"), None, false, LIMITS).unwrap();
        assert_eq!(done.stdout, b"now\n");
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "{:?}",
            began.elapsed()
        );
    }

    #[test]
    fn the_timeout_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let script = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..LIMITS
        };
        let done = run_bounded(sh(&script), None, false, limits).unwrap();
        assert!(done.timed_out);
        std::thread::sleep(Duration::from_secs(3));
        assert!(!marker.exists(), "a grandchild outlived the timeout");
    }

    #[test]
    fn too_much_output_is_an_overflow_not_a_hang() {
        let done = run_bounded(sh("yes"), None, false, LIMITS).unwrap();
        assert!(done.overflowed);
        assert_eq!(done.stdout.len(), 1024);
    }

    #[test]
    fn a_huge_timeout_does_not_overflow_the_clock() {
        let limits = Limits {
            timeout: Duration::MAX,
            ..LIMITS
        };
        let done = run_bounded(sh("true"), None, false, limits).unwrap();
        assert!(done.status.unwrap().success());
    }
}
