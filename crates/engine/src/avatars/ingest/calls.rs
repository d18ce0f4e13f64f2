//! One call recorded by its kind: a detached run (noted, never counted), a look (the avatar's
//! state, no use of a skill), inline code (the snippet history), a script run by
//! `execute_script`, or the scripts a shell line ran.

use mindrune_core::Scrubber;
use mindrune_core::look_target;
use mindrune_core::snippet_digest;
use mindrune_core::{Call, Event};
use mindrune_store::{Agent, Millis, NewSnippetUse, Outcome, UnrecordedReason};

use super::matching::RunInput;
use super::output::{PreparedOutput, bun_found_no_file};
use super::{Ingest, IngestError, Recorded, SnippetRecorded};
use crate::workspace::{self, AgentFiles, MAX_SCRIPT_BYTES};

/// One call being recorded, past the checks: what each step of it reads.
pub(super) struct CallInput<'a> {
    pub(super) agent: &'a Agent,
    pub(super) event: &'a Event,
    pub(super) files: &'a dyn AgentFiles,
    pub(super) scrubber: &'a Scrubber,
    pub(super) at: Millis,
    pub(super) output: &'a PreparedOutput,
}

impl Ingest<'_> {
    /// A detached run (`background: true`): MindRune cannot see how it ends, so nothing is
    /// recorded. Only a run of a script file is kept as an unrecorded run: the wrap-up tells the
    /// agent how many of its runs went uncounted this way. Other background work (a server, a
    /// build) was never a run.
    pub(super) fn record_detached(
        &self,
        agent: &Agent,
        event: &Event,
        files: &dyn AgentFiles,
        at: Millis,
    ) -> Result<Recorded, IngestError> {
        let mut recorded = Recorded::default();
        recorded.warnings.push(
            "a detached run (background: true): MindRune cannot see how it ends, so nothing is recorded".into(),
        );
        let scripts = match &event.call {
            Call::Shell { command, cwd } => {
                self.classify(agent, command, cwd.as_deref()).runs.clone()
            }
            Call::ExecuteScript { script } => vec![script.clone()],
            Call::ExecuteCode { .. } => Vec::new(),
        };
        if !scripts.is_empty() {
            let scrubber = self.scrubber(agent, files)?;
            let detail = match &event.call {
                Call::Shell { command, .. } => scrubber.scrub(command).text.into_owned(),
                _ => scripts.join(", "),
            };
            self.note_unrecorded(
                agent,
                event.id.as_deref(),
                "",
                at,
                UnrecordedReason::Background,
                detail,
            )?;
        }
        Ok(recorded)
    }

    /// Whether the call was a look (`bun sdk/cli.ts NAME`), which ran no script: it is a use of
    /// no skill. What it printed of this avatar is kept as the state the avatar's next run is
    /// measured against (a bot's first run, looked at before, is measured too).
    pub(super) fn record_look(&self, call: &CallInput<'_>) -> Result<bool, IngestError> {
        let Call::Shell { command, cwd } = &call.event.call else {
            return Ok(false);
        };
        let agent = call.agent;
        let runs = self.classify(agent, command, cwd.as_deref());
        let Some(bot) = look_target(command, &runs) else {
            return Ok(false);
        };
        let parsed_output = &call.output.parsed;
        if bot.eq_ignore_ascii_case(&agent.name)
            && parsed_output
                .as_ref()
                .is_some_and(|out| out.state_readable())
            && let Some(text) = &call.output.stored
        {
            let added = self.note_look(
                agent,
                call.event.id.as_deref(),
                call.at,
                call.scrubber.scrub(command).text.into_owned(),
                text.clone(),
            )?;
            if added {
                self.note_output(agent, call.at, text, call.output.stored_parse.clone());
            }
            // A look prints the whole state: the truest reading of the avatar there is.
            if let Some(out) = parsed_output {
                self.save_printed_state(agent, call.at, out, call.scrubber, false)?;
            }
        }
        Ok(true)
    }

    /// The call's measured outcome, read against the avatar's previous state when the host did
    /// not measure it itself. The cause quotes the game and the script's error: scrubbed like
    /// the output it is from.
    pub(super) fn measure_call(&self, call: &CallInput<'_>) -> Result<Outcome, IngestError> {
        let parsed = call.output.parsed.as_deref();
        let previous = match parsed {
            Some(out) if out.state_readable() && super::output::needs_previous(call.event) => {
                self.previous_state(call.agent, call.at)?
            }
            _ => None,
        };
        let mut outcome = super::output::measure(call.event, parsed, previous.as_deref(), call.at)?;
        outcome.failure = outcome
            .failure
            .map(|text| call.scrubber.scrub(&text).text.into_owned());
        Ok(outcome)
    }

    /// Inline code: a use of its snippet, never of a skill. Its printed state is the avatar's.
    pub(super) fn record_snippet(
        &self,
        call: &CallInput<'_>,
        code: &str,
        outcome: Outcome,
        recorded: &mut Recorded,
    ) -> Result<bool, IngestError> {
        let agent = call.agent;
        let code = call.scrubber.scrub(code).text.into_owned();
        let new_use = NewSnippetUse {
            agent: agent.id,
            digest: snippet_digest(&code),
            code,
            outcome,
            output: call.output.stored.clone(),
            event_id: call.event.id.clone(),
        };
        let result = self.store.record_snippet_use(agent.owner, &new_use)?;
        if result.added
            && let Some(text) = &new_use.output
        {
            self.note_output(
                agent,
                new_use.outcome.at,
                text,
                call.output.stored_parse.clone(),
            );
        }
        recorded.snippet = Some(SnippetRecorded {
            digest: result.snippet.digest,
            uses: result.snippet.uses,
            ok: result.snippet.ok,
            added: result.added,
        });
        Ok(true)
    }

    /// A script run by `execute_script`: one of this bot's, inside its workspace, or the event
    /// is refused. Returns whether its printed state is the avatar's (not when the outcome is
    /// unknown: the output was cut).
    pub(super) fn record_script(
        &self,
        call: &CallInput<'_>,
        script: &str,
        outcome: Outcome,
        outcome_unknown: bool,
        recorded: &mut Recorded,
    ) -> Result<bool, IngestError> {
        let agent = call.agent;
        let workspace = std::path::Path::new(&agent.workspace);
        let relative = workspace::workspace_relative(script, workspace).ok_or_else(|| {
            IngestError::field(
                "script",
                format!("`{script}` is outside the workspace of `{}`", agent.name),
            )
        })?;
        let Some((bot, _)) = workspace::script_of_bot(&relative) else {
            return Err(IngestError::field(
                "script",
                format!(
                    "`{script}` is not a script of a bot (expected bots/{}/<name>.ts)",
                    agent.name
                ),
            ));
        };
        if bot != agent.name {
            return Err(IngestError::field(
                "script",
                format!("`{script}` belongs to bot `{bot}`, not to `{}`", agent.name),
            ));
        }
        let file = match call.files.stat(&relative, MAX_SCRIPT_BYTES) {
            Ok(file) => file,
            Err(err) => return Err(IngestError::field("script", err.to_string())),
        };
        let text = call.scrubber.scrub(script).text.into_owned();
        if outcome_unknown {
            self.note_outcome_unknown(
                agent,
                call.event.id.as_deref(),
                &relative,
                call.at,
                &text,
                recorded,
            )?;
            return Ok(false);
        }
        let run = RunInput {
            relative,
            file,
            outcome,
            output: call.output.stored.clone(),
            stored_parse: call.output.stored_parse.clone(),
            call: text,
            source_kind: "execute_code",
            event_id: call.event.id.clone(),
        };
        self.record_run(agent, call.files, call.scrubber, run, recorded)?;
        Ok(true)
    }

    /// The scripts a shell line ran: each of this bot's is a run of its own; the rest are
    /// noted. Returns whether the printed state is the avatar's: only once one of this bot's
    /// scripts ran (else it may be another bot's) and nothing cut it.
    pub(super) fn record_shell(
        &self,
        call: &CallInput<'_>,
        command: &str,
        cwd: Option<&str>,
        outcome: &Outcome,
        outcome_unknown: bool,
        recorded: &mut Recorded,
    ) -> Result<bool, IngestError> {
        let agent = call.agent;
        let event = call.event;
        let runs = self.classify(agent, command, cwd);
        for note in &runs.diagnostics {
            recorded
                .warnings
                .push(call.scrubber.scrub(note).text.into_owned());
        }
        let text = call.scrubber.scrub(command).text.into_owned();
        for detached in &runs.detached {
            recorded.warnings.push(format!(
                "{detached}: sent to the background, so not recorded (MindRune cannot see how a detached run ends)"
            ));
            self.note_unrecorded(
                agent,
                event.id.as_deref(),
                detached,
                call.at,
                UnrecordedReason::Background,
                text.clone(),
            )?;
        }
        let scripts = self.scripts_of_avatar(call, &runs.runs, recorded)?;
        let several = scripts.len() > 1;
        for relative in scripts {
            if outcome_unknown {
                self.note_outcome_unknown(
                    agent,
                    event.id.as_deref(),
                    relative,
                    call.at,
                    &text,
                    recorded,
                )?;
                continue;
            }
            let not_run = match call.files.stat(relative, MAX_SCRIPT_BYTES) {
                // bun found no such file (a `cp` that failed before it): nothing ran,
                // so it is no run of the version the library saw at that path last.
                Ok(None) if bun_found_no_file(event, relative) => Err(format!(
                    "{relative}: bun could not find the file (Module not found), so nothing ran; the run is not recorded"
                )),
                Ok(file) => Ok(file),
                Err(err) => Err(format!("{err}; the run is not recorded")),
            };
            let file = match not_run {
                Ok(file) => file,
                Err(warning) => {
                    self.note_unrecorded(
                        agent,
                        event.id.as_deref(),
                        relative,
                        call.at,
                        UnrecordedReason::NoScript,
                        warning.clone(),
                    )?;
                    recorded.warnings.push(warning);
                    continue;
                }
            };
            // One call that runs several scripts is one run of each; each gets its own
            // id so a retried event is still recognised.
            let event_id = event.id.as_ref().map(|id| {
                if several {
                    format!("{id}#{relative}")
                } else {
                    id.clone()
                }
            });
            let run = RunInput {
                relative: relative.clone(),
                file,
                outcome: outcome.clone(),
                output: call.output.stored.clone(),
                stored_parse: call.output.stored_parse.clone(),
                call: text.clone(),
                source_kind: "shell",
                event_id,
            };
            self.record_run(agent, call.files, call.scrubber, run, recorded)?;
        }
        Ok(!recorded.runs.is_empty() && !mindrune_core::command_cuts_output(command))
    }

    /// Of the files a shell line ran, the scripts of this avatar's bot. A script of another bot,
    /// or a file under bots/ that is no bot's script, is noted as not recorded, with a warning.
    fn scripts_of_avatar<'r>(
        &self,
        call: &CallInput<'_>,
        ran: &'r [String],
        recorded: &mut Recorded,
    ) -> Result<Vec<&'r String>, IngestError> {
        let agent = call.agent;
        let mut unresolved = Vec::new();
        let scripts: Vec<&String> = ran
            .iter()
            .filter(|path| match workspace::script_of_bot(path) {
                Some((bot, _)) if bot == agent.name => true,
                Some((bot, _)) => {
                    unresolved.push((
                        path.as_str(),
                        format!(
                            "{path}: a script of bot `{bot}`, not of `{}`; not recorded",
                            agent.name
                        ),
                    ));
                    false
                }
                // A file under bots/ that is no bot's script (a doubled folder after a
                // `cd`, a typo): the agent meant a run, so it hears that none counted.
                // Other files (rs-sdk's own scripts/, sdk/) were never runs.
                None if path.starts_with("bots/") => {
                    unresolved.push((
                        path.as_str(),
                        format!(
                            "{path}: no script of a bot (scripts are bots/{}/<name>.ts); the run is not recorded",
                            agent.name
                        ),
                    ));
                    false
                }
                None => false,
            })
            .collect();
        for (path, warning) in unresolved {
            self.note_unrecorded(
                agent,
                call.event.id.as_deref(),
                path,
                call.at,
                UnrecordedReason::NoScript,
                warning.clone(),
            )?;
            recorded.warnings.push(warning);
        }
        Ok(scripts)
    }

    /// Keeps a run whose outcome the output cannot tell as a call of unknown outcome.
    pub(super) fn note_outcome_unknown(
        &self,
        agent: &Agent,
        event_id: Option<&str>,
        relative: &str,
        at: Millis,
        call: &str,
        recorded: &mut Recorded,
    ) -> Result<(), IngestError> {
        let warning = format!(
            "{relative}: outcome unknown, the output was cut before the run's Result or Error and this runner exits 0 even on a throw; not counted in the score (run the file without `| tail` to see how it ends)"
        );
        self.note_unrecorded(
            agent,
            event_id,
            relative,
            at,
            UnrecordedReason::OutcomeUnknown,
            format!("{relative}: {call}"),
        )?;
        recorded.warnings.push(warning);
        Ok(())
    }
}
