//! The assistant's host, as its hooks tell MindRune (`mindrune playbook hook claude-code`):
//!
//! - **Where the record of the turn is.** Every Claude Code hook is handed `transcript_path`;
//!   MindRune keeps the newest in `.mindrune/host-turn.json`, and a `skill_refine report` or a
//!   `workspace_read` that names no `turn` gets it from there, so the fixer finds the turn's
//!   record without the assistant being told where it is.
//! - **The observer**, at `Stop`: the transcript read into turns ([`mindrune_core::transcript`]),
//!   the same multi-step work redone across them found ([`mindrune_core::observer`]), and one
//!   suggestion left for it (never a skill); the same steps are suggested once.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use mindrune_core::{observer, transcript};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{PlaybookError, Playbooks, Rule, io_error, layout};

/// Where the newest turn record is kept, under `.mindrune/`.
pub const HOST_TURN_FILE: &str = "host-turn.json";

/// The most of a transcript the observer reads (its end: the newest turns).
pub const MAX_TRANSCRIPT_BYTES: u64 = 32 * 1024 * 1024;

/// What the host said last about its turn record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostTurn {
    pub transcript_path: String,
    pub session_id: Option<String>,
}

/// What a hook call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostHook {
    /// The turn record was noted.
    Noted,
    /// A turn ended: the observer read the transcript; `suggestion` is the one it left.
    Observed {
        suggestion: Option<i64>,
        diagnostics: usize,
    },
    /// Nothing to note (no `transcript_path`).
    Ignored(String),
}

fn host_turn_path(workspace: &Path) -> PathBuf {
    workspace.join(".mindrune").join(HOST_TURN_FILE)
}

impl Playbooks {
    /// Handles one Claude Code hook call of the assistant's session (its JSON on stdin).
    pub fn host_hook(&self, input: &str) -> Result<HostHook, PlaybookError> {
        let value: Value = serde_json::from_str(input).map_err(|err| {
            PlaybookError::refused(Rule::Invalid, format!("the hook input is not JSON: {err}"))
        })?;
        let event = value
            .get("hook_event_name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                PlaybookError::refused(
                    Rule::Invalid,
                    "hook field `hook_event_name` is missing; is this a Claude Code hook?",
                )
            })?;
        let Some(path) = value
            .get("transcript_path")
            .and_then(Value::as_str)
            .filter(|path| Path::new(path).is_absolute())
        else {
            return Ok(HostHook::Ignored(format!(
                "the {event} hook names no absolute transcript_path"
            )));
        };
        let noted = HostTurn {
            transcript_path: path.to_string(),
            session_id: value
                .get("session_id")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        if self.host_turn().as_ref() != Some(&noted) {
            let bytes = serde_json::to_vec(&noted).unwrap_or_default();
            layout::write_atomic(&host_turn_path(&self.workspace), &bytes)?;
        }
        if event != "Stop" {
            return Ok(HostHook::Noted);
        }
        self.observe(Path::new(path))
    }

    /// The turn record the host named last, if any.
    pub fn host_turn(&self) -> Option<HostTurn> {
        let text = std::fs::read(host_turn_path(&self.workspace)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// The observer on one transcript: one suggestion when the last turn redid the same steps
    /// as an earlier one and those steps were not suggested before.
    pub fn observe(&self, transcript_path: &Path) -> Result<HostHook, PlaybookError> {
        let text = read_tail(transcript_path)?;
        let read = transcript::parse(&text);
        let Some(repeat) = observer::redone_in_last_turn(&read.turns) else {
            return Ok(HostHook::Observed {
                suggestion: None,
                diagnostics: read.diagnostics.len(),
            });
        };
        let pattern = format!("%[{}]%", repeat.key);
        let suggested: i64 = self.ledger.read(|connection| {
            connection.query_row(
                "SELECT count(*) FROM suggestions WHERE source = 'observer' AND text LIKE ?1",
                [&pattern],
                |row| row.get(0),
            )
        })?;
        let suggestion = if suggested == 0 {
            Some(self.observer_suggests(&observer::describe(&repeat, &read.turns))?)
        } else {
            None
        };
        Ok(HostHook::Observed {
            suggestion,
            diagnostics: read.diagnostics.len(),
        })
    }
}

/// The end of a transcript, at most [`MAX_TRANSCRIPT_BYTES`], from a line's start.
fn read_tail(path: &Path) -> Result<String, PlaybookError> {
    use std::io::{Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path).map_err(io_error("read", path))?;
    let length = file.metadata().map_err(io_error("read", path))?.len();
    let skip = length.saturating_sub(MAX_TRANSCRIPT_BYTES);
    file.seek(SeekFrom::Start(skip))
        .map_err(io_error("read", path))?;
    let mut bytes = Vec::new();
    file.take(MAX_TRANSCRIPT_BYTES)
        .read_to_end(&mut bytes)
        .map_err(io_error("read", path))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if skip > 0
        && let Some(newline) = text.find('\n')
    {
        text.drain(..=newline);
    }
    Ok(text)
}
