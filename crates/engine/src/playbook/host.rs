//! The assistant's host, as its hooks tell MindRune (`mindrune hook claude-code --workspace W`, which `mindrune setup claude-code` installs):
//!
//! - **Where the record of the turn is.** Every Claude Code hook is handed `transcript_path`;
//!   MindRune keeps the newest, and each recent session's, in `.mindrune/host-turn.json`, and a
//!   `skill_refine report` or a `workspace_read` that names no `turn` gets its session's (Claude
//!   Code names the session in its MCP servers' environment) or the newest, so the fixer finds
//!   the turn's record without the assistant being told where it is.
//! - **The observer**, at `Stop`: the transcript read into turns ([`mindrune_core::playbook::transcript`]),
//!   the same multi-step work redone across them found ([`mindrune_core::playbook::observer`]), and one
//!   suggestion left for it (never a skill); the same steps are suggested once.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use mindrune_core::{describe_repeat, parse_transcript, redone_in_last_turn};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{PlaybookError, Playbooks, Rule, io_error, layout};

/// Where the newest turn record is kept, under `.mindrune/`.
pub(crate) const HOST_TURN_FILE: &str = "host-turn.json";

/// The most of a transcript the observer reads (its end: the newest turns).
pub(crate) const MAX_TRANSCRIPT_BYTES: u64 = 32 * 1024 * 1024;

/// What the host said last about its turn record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HostTurn {
    pub(crate) transcript_path: String,
    pub(crate) session_id: Option<String>,
}

/// The session Claude Code runs an MCP server for names itself in the server's environment.
pub(crate) const SESSION_VARIABLE: &str = "CLAUDE_CODE_SESSION_ID";

/// The most sessions whose turn record is kept.
const MAX_SESSIONS: usize = 64;

/// `.mindrune/host-turn.json`: the newest turn record, and each recent session's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct HostTurns {
    latest: Option<HostTurn>,
    #[serde(default)]
    sessions: Vec<HostTurn>,
}

/// What a hook call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostHook {
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
    pub(crate) fn host_hook(&self, value: &Value) -> Result<HostHook, PlaybookError> {
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
        let mut turns = self.host_turns();
        if turns.latest.as_ref() != Some(&noted) {
            turns.latest = Some(noted.clone());
            if noted.session_id.is_some() {
                turns
                    .sessions
                    .retain(|kept| kept.session_id != noted.session_id);
                turns.sessions.push(noted);
                let over = turns.sessions.len().saturating_sub(MAX_SESSIONS);
                turns.sessions.drain(..over);
            }
            let bytes = serde_json::to_vec(&turns).unwrap_or_default();
            layout::write_atomic(&host_turn_path(&self.workspace), &bytes)?;
        }
        if event != "Stop" {
            return Ok(HostHook::Noted);
        }
        let last_message = value.get("last_assistant_message").and_then(Value::as_str);
        self.observe_turn(Path::new(path), last_message)
    }

    /// The turn record of this process's host session ([`SESSION_VARIABLE`], which Claude
    /// Code gives the MCP servers it starts) when its hooks named one, else the newest.
    pub(crate) fn host_turn(&self) -> Option<HostTurn> {
        let turns = self.host_turns();
        let session = std::env::var(SESSION_VARIABLE).ok();
        session
            .and_then(|session| {
                turns
                    .sessions
                    .iter()
                    .rev()
                    .find(|kept| kept.session_id.as_deref() == Some(session.as_str()))
                    .cloned()
            })
            .or(turns.latest)
    }

    fn host_turns(&self) -> HostTurns {
        std::fs::read(host_turn_path(&self.workspace))
            .ok()
            .and_then(|text| serde_json::from_slice(&text).ok())
            .unwrap_or_default()
    }

    /// The observer on one transcript: one suggestion when the last turn redid the same steps
    /// as an earlier one and those steps were not suggested before.
    ///
    /// At a `Stop` whose payload names the turn's last message (`last_message`), the real
    /// Claude Code calls `Stop` before its transcript holds the turn's last entries (its
    /// writes lag the hook by 40–100 ms on a busy 2-core machine, and the observer then read
    /// the turn without its last steps and suggested nothing), so the transcript is read
    /// again, for at most [`TRANSCRIPT_SETTLE`], until that message follows its last user
    /// entry.
    fn observe_turn(
        &self,
        transcript_path: &Path,
        last_message: Option<&str>,
    ) -> Result<HostHook, PlaybookError> {
        let began = std::time::Instant::now();
        let mut text = read_tail(transcript_path)?;
        if let Some(message) = last_message.filter(|message| !message.is_empty()) {
            // The message's start as it stands inside the transcript's JSON (its start only:
            // whether the hook's copy of a long message is cut is not known).
            let start: String = message.chars().take(SETTLE_MESSAGE_CHARS).collect();
            let quoted = serde_json::to_string(&start).unwrap_or_default();
            let escaped = &quoted[1..quoted.len() - 1];
            let settled = |text: &str| {
                let after_user = text.rfind("\"type\":\"user\"").unwrap_or(0);
                text[after_user..].contains(escaped)
            };
            while !settled(&text) && began.elapsed() < TRANSCRIPT_SETTLE {
                std::thread::sleep(std::time::Duration::from_millis(20));
                text = read_tail(transcript_path)?;
            }
        }
        let read = parse_transcript(&text);
        let Some(repeat) = redone_in_last_turn(&read.turns) else {
            return Ok(HostHook::Observed {
                suggestion: None,
                diagnostics: read.diagnostics.len(),
            });
        };
        let pattern = format!("%[{}]%", repeat.key);
        let suggested = self
            .ledger
            .read(|connection| super::ledger::observer_suggestions_like(connection, &pattern))?;
        let suggestion = if suggested == 0 {
            Some(self.observer_suggests(&describe_repeat(&repeat, &read.turns))?)
        } else {
            None
        };
        Ok(HostHook::Observed {
            suggestion,
            diagnostics: read.diagnostics.len(),
        })
    }
}

/// How long a `Stop` waits for Claude Code to write the turn's last message to its transcript.
const TRANSCRIPT_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);
/// How much of the turn's last message a `Stop` looks for in the transcript.
const SETTLE_MESSAGE_CHARS: usize = 120;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Playbooks) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            ws.join("playbooks.toml"),
            format!(
                "home = {:?}\nfixer = \"none\"\n",
                root.display().to_string()
            ),
        )
        .unwrap();
        let playbooks = Playbooks::open(&ws).unwrap();
        (dir, playbooks)
    }

    fn hook(event: &str, session: &str, path: &Path) -> serde_json::Value {
        serde_json::json!({"hook_event_name": event, "session_id": session,
            "transcript_path": path, "cwd": "/"})
    }

    #[test]
    fn a_stop_reads_the_transcript_again_until_it_holds_the_turn_s_last_message() {
        let (dir, playbooks) = workspace();
        let record = dir.path().join("late.jsonl");
        let user = r#"{"type":"user","message":{"role":"user","content":"Count the notes."}}"#;
        std::fs::write(&record, format!("{user}\n")).unwrap();
        let mut stop: serde_json::Value = hook("Stop", "s1", &record);
        stop["last_assistant_message"] = "mon is \"counted\".".into();
        let began = std::time::Instant::now();
        let writer = std::thread::spawn({
            let record = record.clone();
            move || {
                // As the real CLI does: the turn's last entry lands after `Stop` was called.
                std::thread::sleep(std::time::Duration::from_millis(150));
                let last = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"mon is \"counted\"."}]}}"#;
                let mut file = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&record)
                    .unwrap();
                std::io::Write::write_all(&mut file, format!("{last}\n").as_bytes()).unwrap();
            }
        });
        let observed = playbooks.host_hook(&stop).unwrap();
        let waited = began.elapsed();
        writer.join().unwrap();
        assert!(
            matches!(observed, HostHook::Observed { .. }),
            "{observed:?}"
        );
        assert!(
            waited >= std::time::Duration::from_millis(150) && waited < TRANSCRIPT_SETTLE,
            "waited {waited:?}"
        );
        // A message that never comes costs the wait, and the turn is observed as it stands.
        stop["last_assistant_message"] = "never written".into();
        let began = std::time::Instant::now();
        assert!(matches!(
            playbooks.host_hook(&stop).unwrap(),
            HostHook::Observed { .. }
        ));
        assert!(began.elapsed() >= TRANSCRIPT_SETTLE);
    }

    #[test]
    fn a_hook_s_transcript_path_is_the_turn_record_a_report_without_one_gets() {
        let (dir, playbooks) = workspace();
        let record = dir.path().join("a.jsonl");
        assert_eq!(
            playbooks
                .host_hook(&hook("SessionStart", "s1", &record))
                .unwrap(),
            HostHook::Noted
        );
        let turn = playbooks.host_turn().unwrap();
        assert_eq!(turn.transcript_path, record.display().to_string());
        assert_eq!(turn.session_id.as_deref(), Some("s1"));
        let other = dir.path().join("b.jsonl");
        playbooks
            .host_hook(&hook("UserPromptSubmit", "s2", &other))
            .unwrap();
        assert_eq!(
            playbooks.host_turn().unwrap().transcript_path,
            other.display().to_string()
        );
        // A relative path is no host's record.
        let relative = serde_json::json!({"hook_event_name": "Stop", "transcript_path": "x.jsonl"});
        assert!(matches!(
            playbooks.host_hook(&relative).unwrap(),
            HostHook::Ignored(_)
        ));
    }

    #[test]
    fn the_observer_suggests_work_redone_in_a_real_transcript_once() {
        let (dir, playbooks) = workspace();
        let record = dir.path().join("two-turns.jsonl");
        std::fs::write(
            &record,
            include_str!("../../../core/tests/data/transcripts/two-turns.jsonl"),
        )
        .unwrap();
        let first = playbooks.host_hook(&hook("Stop", "s", &record)).unwrap();
        assert!(
            matches!(
                first,
                HostHook::Observed {
                    suggestion: Some(_),
                    diagnostics: 0
                }
            ),
            "{first:?}"
        );
        let again = playbooks.host_hook(&hook("Stop", "s", &record)).unwrap();
        assert_eq!(
            again,
            HostHook::Observed {
                suggestion: None,
                diagnostics: 0
            }
        );
        let shown = playbooks.take_suggestions().unwrap();
        assert_eq!(shown.len(), 1);
        assert!(
            shown[0].starts_with("The observer noticed: the same 3 steps"),
            "{shown:?}"
        );
        assert!(shown[0].contains("Bash(wc -l <path>) → Read(file_path) → Grep(path, pattern)"));
    }

    #[test]
    fn a_missing_transcript_at_stop_is_an_error_naming_it() {
        let (dir, playbooks) = workspace();
        let record = dir.path().join("gone.jsonl");
        let err = playbooks
            .host_hook(&hook("Stop", "s", &record))
            .unwrap_err();
        assert!(err.to_string().contains("gone.jsonl"), "{err}");
    }
}
