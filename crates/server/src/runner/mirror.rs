//! The start boundary, `family-skills/` written from the server's answer, and the game state
//! sent when it changes.

use std::collections::HashMap;
use std::time::Instant;

use mindrune_engine::{MirrorError, Wanted, held_keys, write_empty_mirror, write_mirror};

use super::client::Failure;
use super::spool;
use super::{Halt, Runner};
use crate::wire::{MirrorAnswer, MirrorRequest, TurnAnswer, TurnRequest, WireBoundary};

impl Runner<'_> {
    /// The start boundary: every header re-checked, and `family-skills/` written from the
    /// answer.
    pub(super) fn start(&mut self) -> Result<(), Halt> {
        let folder = self.folder();
        // The start sends the bot's scripts: not until its password can be scrubbed from them.
        // It is tried again next round (the runner is not started until then).
        let scrubber = match folder.scrubber() {
            Ok(scrubber) => scrubber,
            Err(err) => {
                tracing::error!("{err}; the agent's start is not sent until then");
                return Ok(());
            }
        };
        let fingerprint = folder.fingerprint();
        let request = TurnRequest {
            boundary: WireBoundary::Start,
            files: folder.snapshot(&scrubber),
            mirror: Some(MirrorRequest {
                have: held_keys(&self.mirror_dir),
            }),
        };
        let body = serde_json::to_vec(&request)
            .map_err(|err| Halt::Away(format!("cannot encode the start: {err}")))?;
        match self.client.post::<TurnAnswer>("/v1/turns", &body) {
            Ok(answer) => {
                self.started = true;
                self.summary.turns_sent += 1;
                self.boundary = (Instant::now(), fingerprint);
                tracing::info!(report = %answer.report, "marked the agent's start");
                self.keep_instructions();
                match answer.mirror {
                    Some(mirror) => self.write_mirror(mirror, false),
                    None => {
                        self.mirror_wanted = true;
                        Ok(())
                    }
                }
            }
            Err(refused @ Failure::Refused { .. }) => {
                // The same start would be refused again: it is not retried, and the agent
                // starts with an empty family-skills/ rather than a stale one.
                tracing::error!(
                    "the server refused the agent's start ({refused}); family-skills/ stays empty until a turn end brings it"
                );
                self.started = true;
                if !self.mirror_emptied {
                    self.empty_mirror();
                }
                Ok(())
            }
            Err(failure) => Err(self.halt(failure)),
        }
    }

    /// Keeps the agent's instructions in the spool, where the hook's `SessionStart` reads them
    /// (its output becomes the agent's context). A failure only costs that context.
    pub(super) fn keep_instructions(&self) {
        let written = self
            .client
            .get::<crate::wire::InstructionsAnswer>("/v1/instructions")
            .map_err(|failure| failure.to_string())
            .and_then(|answer| {
                spool::write_atomic(
                    self.spool.root(),
                    spool::INSTRUCTIONS,
                    answer.text.as_bytes(),
                )
                .map_err(|err| err.to_string())
            });
        if let Err(err) = written {
            tracing::warn!("cannot keep the agent's instructions for its hooks: {err}");
        }
    }

    /// Empties `family-skills/`: the server cannot answer at the start, and a stale mirror
    /// would show siblings' skills that may no longer be shared.
    pub(super) fn empty_mirror(&mut self) {
        self.mirror_emptied = true;
        match write_empty_mirror(&self.mirror_dir) {
            Ok(report) => tracing::warn!(
                removed = report.removed.len(),
                "emptied {} until the server answers (better empty than stale)",
                self.mirror_dir.display()
            ),
            Err(err) => tracing::warn!(
                "cannot empty {} while the server is away: {err}",
                self.mirror_dir.display()
            ),
        }
    }

    /// Asks for the mirror again (the last answer could not be written in full).
    pub(super) fn fetch_mirror(&mut self) -> Result<(), Halt> {
        // Tried now, whatever the answer: a refusal is not asked again at every poll.
        self.last_mirror = Instant::now();
        let body = serde_json::to_vec(&MirrorRequest {
            have: held_keys(&self.mirror_dir),
        })
        .map_err(|err| Halt::Away(format!("cannot encode a mirror request: {err}")))?;
        match self.client.post::<MirrorAnswer>("/v1/mirror", &body) {
            Ok(answer) => self.write_mirror(answer, false),
            Err(refused @ Failure::Refused { .. }) => {
                tracing::warn!(
                    "the server refused the mirror ({refused}); family-skills/ is written at the next turn end that brings it"
                );
                self.mirror_wanted = false;
                Ok(())
            }
            Err(failure) => Err(self.halt(failure)),
        }
    }

    /// Writes `family-skills/` from a mirror answer. Content the server left out (it thought
    /// this runner had the file at that key) is kept from disk; should a file the server left
    /// out be missing here after all, the whole mirror is asked for again (`have` empty).
    pub(super) fn write_mirror(
        &mut self,
        answer: MirrorAnswer,
        complete: bool,
    ) -> Result<(), Halt> {
        const LEFT_OUT: &str = "the server left its content out";
        let wanted: Vec<Wanted> = answer
            .files
            .iter()
            .map(|file| Wanted::new(file.path.clone(), file.key.clone()))
            .collect();
        let contents: HashMap<&str, &str> = answer
            .files
            .iter()
            .filter_map(|file| Some((file.path.as_str(), file.content.as_deref()?)))
            .collect();
        let written = write_mirror(&self.mirror_dir, &wanted, &mut |item| {
            contents
                .get(item.path.as_str())
                .map(|content| (*content).to_string())
                .ok_or_else(|| MirrorError::Content {
                    path: item.path.clone(),
                    message: LEFT_OUT.into(),
                })
        });
        match written {
            Ok(report) => {
                self.mirror_wanted = false;
                self.mirror_emptied = false;
                self.last_mirror = Instant::now();
                self.summary.mirrors_written += 1;
                tracing::info!(
                    written = report.written.len(),
                    removed = report.removed.len(),
                    unchanged = report.unchanged,
                    "wrote {}",
                    self.mirror_dir.display()
                );
                Ok(())
            }
            Err(MirrorError::Content { path, message }) if !complete && message == LEFT_OUT => {
                tracing::info!(
                    "{path} is missing from {} though the server thought it there; asking for the whole mirror",
                    self.mirror_dir.display()
                );
                // Until the whole mirror is written, it is owed.
                self.mirror_wanted = true;
                match self
                    .client
                    .post::<MirrorAnswer>("/v1/mirror", br#"{"have":{}}"#)
                {
                    Ok(full) => self.write_mirror(full, true),
                    Err(refused @ Failure::Refused { .. }) => {
                        tracing::warn!("the server refused the mirror ({refused})");
                        self.mirror_wanted = false;
                        Ok(())
                    }
                    Err(failure) => Err(self.halt(failure)),
                }
            }
            Err(err) => {
                // Not the server's doing (permissions, a symlink in the way): asking again
                // would not help, the next answer tries again.
                tracing::warn!("cannot write {}: {err}", self.mirror_dir.display());
                self.mirror_wanted = false;
                Ok(())
            }
        }
    }

    /// Sends the avatar's game state when it changed.
    pub(super) fn send_state(&mut self) -> Result<(), Halt> {
        let Some(watch) = &mut self.state else {
            return Ok(());
        };
        let Some(stats) = watch.pending() else {
            return Ok(());
        };
        let body = serde_json::to_vec(stats)
            .map_err(|err| Halt::Away(format!("cannot encode the state: {err}")))?;
        match self.client.post_empty("/v1/state", &body) {
            Ok(()) => {
                watch.done();
                tracing::info!("sent the avatar's state");
                Ok(())
            }
            Err(refused @ Failure::Refused { .. }) => {
                tracing::warn!(
                    "the server refused the avatar's state ({refused}); it is sent again when it changes"
                );
                watch.done();
                Ok(())
            }
            Err(failure) => Err(self.halt(failure)),
        }
    }
}
