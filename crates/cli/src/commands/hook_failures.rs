//! A hook that cannot do its job says so where a person looks. Claude Code shows a hook's
//! stderr only in its verbose mode and takes a failing hook for a non-blocking error, so a
//! library that cannot be opened, an unknown agent or a `bot.env` that cannot be read would
//! otherwise leave every run unrecorded with nobody told. Instead:
//!
//! * the first failing call of a session, and every failing `SessionStart`, answer with a
//!   `systemMessage` (Claude Code shows it to its user) and status 0, so Claude Code reads it;
//! * every failure is kept as one JSON line in `hook-failures.jsonl` beside the hook's notes of
//!   started calls (in the library's home, or the relay folder), which `mindrune doctor` reads;
//! * later failures of the same session go to stderr with status 1, as before: the user has
//!   been told once, and the agent is never blocked.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The file of failures, in the folder of a hook's notes (in relay mode the runner's spool,
/// whose runner reports the count to the server).
pub(crate) const FAILURES_FILE: &str = mindrune_server::runner::spool::HOOK_FAILURES;
/// The folder of sessions told already, beside it.
const TOLD_DIR: &str = "hook-failures-told";
/// Past this size the failures file starts over (what `doctor` needs is the recent ones).
const MAX_FAILURES_BYTES: u64 = 1024 * 1024;

/// One failure as kept in [`FAILURES_FILE`].
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct HookFailure {
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    pub session: String,
    pub event: String,
    pub error: String,
}

/// Says a failed hook call where a person looks (see the module's note); what the process
/// should exit with.
pub(crate) fn hook_failed(input: &str, err: &anyhow::Error, notes: &Path) -> ExitCode {
    let payload: serde_json::Value = serde_json::from_str(input).unwrap_or_default();
    let text = |field: &str| {
        payload[field]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let session = text("session_id").unwrap_or_default();
    let event = text("hook_event_name").unwrap_or_default();
    let error = format!("{err:#}");
    let failure = HookFailure {
        at: mindrune_engine::now_millis(),
        session: session.clone(),
        event: event.clone(),
        error: error.clone(),
    };
    if let Err(note_err) = keep(notes, &failure) {
        eprintln!(
            "mindrune hook: cannot note this failure in {}: {note_err}",
            notes.join(FAILURES_FILE).display()
        );
    }
    eprintln!("mindrune hook: {error}");
    if event == "SessionStart" || first_in_session(notes, &session) {
        let message = format!(
            "MindRune's hook could not do its job ({event}): {error}. Until this is fixed MindRune records nothing for this session and its guard may not run; `mindrune doctor` checks every link and names the fix."
        );
        let answer = mindrune_engine::system_message(&message);
        let mut out = std::io::stdout().lock();
        if serde_json::to_writer(&mut out, &answer).is_ok() && writeln!(out).is_ok() {
            // Claude Code reads a hook's JSON only when it exits 0.
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::FAILURE
}

fn keep(notes: &Path, failure: &HookFailure) -> std::io::Result<()> {
    std::fs::create_dir_all(notes)?;
    let path = notes.join(FAILURES_FILE);
    if std::fs::metadata(&path).is_ok_and(|meta| meta.len() > MAX_FAILURES_BYTES) {
        std::fs::remove_file(&path)?;
    }
    let mut line = serde_json::to_vec(failure)?;
    line.push(b'\n');
    // One write of a whole line with O_APPEND: hooks running at once never mix their lines.
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?
        .write_all(&line)
}

/// Whether no failure of `session` was shown to the user yet (and marks it shown).
fn first_in_session(notes: &Path, session: &str) -> bool {
    // A session id is Claude Code's UUID; anything else is told each time rather than trusted
    // as a file name.
    if session.is_empty()
        || !session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        || session.len() > 128
    {
        return true;
    }
    let told = notes.join(TOLD_DIR);
    if std::fs::create_dir_all(&told).is_err() {
        return true;
    }
    // `create_new` is the test and the mark in one step, so two hooks failing at once tell once.
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(told.join(session))
        .is_ok()
}

/// The failures kept in `notes`, oldest first; lines that do not read are skipped.
pub(crate) fn read_failures(notes: &Path) -> Vec<HookFailure> {
    std::fs::read_to_string(notes.join(FAILURES_FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Where the hooks of the library at `home` keep their notes (and failures) when they record
/// directly; a relaying hook keeps them in its relay folder.
pub(crate) fn notes_dir(home: &Path) -> PathBuf {
    home.join("hooks").join("claude-code")
}
