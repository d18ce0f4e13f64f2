//! Ingest: one tool call in, the uses it makes recorded.
//!
//! The steps, in order: find the agent (and from it the owner), drop detached runs, decide
//! which scripts the call ran (the shell-line classifier, or the `script` field), read each
//! file inside the workspace, match it to a skill and version, measure the run, scrub, record
//! and rescore. Inline code goes to the snippet history instead and never becomes a skill.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use mindrune_core::avatars::event::{Call, Event};
use mindrune_core::avatars::rs_output::{self, RunOutput};
use mindrune_core::digest;
use mindrune_core::header;
use mindrune_core::secrets::{self, Scrubber};
use mindrune_core::shell_line::{self, ShellContext, ShellRuns};
use mindrune_store::{
    Agent, HeaderState, Lineage, Millis, NewSnippetUse, NewUse, Outcome, ScriptSnapshot,
    SharingChange, SkillHeader, Store, StoreError, UnrecordedCall, UnrecordedReason, VersionId,
};

use crate::avatars::tags;
use crate::workspace::{
    self, AgentFiles, FileStamp, LocalFiles, MAX_SCRIPT_BYTES, ReadError, SANDBOX_ROOT,
};

/// How much of a run's output is kept with its use: the end, where rs-sdk prints its summary.
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

/// Why an event was rejected. Nothing of it was recorded.
mod printed;
mod together;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("{}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
    Invalid {
        field: Option<String>,
        message: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl IngestError {
    fn field(field: &str, message: impl Into<String>) -> IngestError {
        IngestError::Invalid {
            field: Some(field.to_string()),
            message: message.into(),
        }
    }
}

/// The largest `bot.env` read for its secrets; one larger is refused, not read in part.
pub const MAX_BOT_ENV_BYTES: u64 = MAX_SCRIPT_BYTES;

/// A bot's `bot.env` that exists but cannot be read: nothing of the bot's may be stored or
/// sent until it can, since its password could not be scrubbed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error(
    "cannot read {relative} ({reason}): MindRune will not record {bot}'s runs until it can read it to scrub the bot's password; {fix}"
)]
pub struct UnreadableBotEnv {
    pub relative: String,
    pub bot: String,
    pub reason: ReadError,
    pub fix: &'static str,
}

/// The secrets in `bots/<bot>/bot.env` (see [`secrets::secrets_in_bot_env_bytes`]): read as
/// bytes, so no encoding turns the scrub off. A missing file has none; one that exists but
/// cannot be read (a folder, a symlink, no permission, too large) is an error.
pub fn bot_env_secrets(files: &dyn AgentFiles, bot: &str) -> Result<Vec<String>, UnreadableBotEnv> {
    let relative = format!("bots/{bot}/bot.env");
    match files.read_bytes(&relative, MAX_BOT_ENV_BYTES) {
        Ok(Some(bytes)) => Ok(secrets::secrets_in_bot_env_bytes(&bytes)),
        Ok(None) => Ok(Vec::new()),
        Err(reason) => {
            let fix = match reason {
                ReadError::TooLarge { .. } => {
                    "keep it under 1 MiB (it holds a few variables) or remove it"
                }
                ReadError::Symlink(_) | ReadError::NotAFile(_) => {
                    "make it a plain file in the bot's folder or remove it"
                }
                _ => "fix its permissions or remove it",
            };
            Err(UnreadableBotEnv {
                relative,
                bot: bot.to_string(),
                reason,
                fix,
            })
        }
    }
}

/// What one event added.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Recorded {
    pub runs: Vec<RunRecorded>,
    pub snippet: Option<SnippetRecorded>,
    /// Things the user should know that did not stop the event: a detached run, a vanished
    /// file, a script of another bot.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRecorded {
    /// `<agent>/<name>` of the skill the run counted for.
    pub skill: String,
    pub version: i64,
    pub new_skill: bool,
    pub new_version: bool,
    /// `false` when the event id was already recorded (a retry).
    pub added: bool,
    pub ok: bool,
    /// Why the run failed, when its output said (scrubbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub score: f64,
    pub uses: i64,
    /// The run (or the file's new header) changed what the family sees of the skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingChange>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SnippetRecorded {
    pub digest: String,
    pub uses: i64,
    pub ok: i64,
    pub added: bool,
}

/// A script file as last matched, so an unchanged file costs no write transaction.
#[derive(Clone)]
pub(crate) struct KnownFile {
    pub(crate) file_digest: String,
    /// The file's stamp when it was last read; `None` when it was not read.
    pub(crate) stamp: Option<FileStamp>,
    pub(crate) version: VersionId,
    pub(crate) skill_label: String,
    pub(crate) new_skill: bool,
    pub(crate) new_version: bool,
    /// An unchanged copy of a sibling's skill: its runs count for the sibling's.
    pub(crate) sibling_copy: bool,
    pub(crate) sharing: Option<SharingChange>,
}

#[derive(Default)]
struct Caches {
    agents: HashMap<String, Arc<Agent>>,
    scrubbers: HashMap<i64, (Option<FileStamp>, Arc<Scrubber>)>,
    files: HashMap<(i64, String), KnownFile>,
    /// Agents re-run the very same command lines all day; parsing one once is enough.
    shell_lines: HashMap<(i64, String, Option<String>), Arc<ShellRuns>>,
    /// For each thread inside a write group, each avatar's newest stored output as far as the
    /// group knows it (see [`Recorder::previous_state`]).
    group_outputs: HashMap<std::thread::ThreadId, HashMap<i64, NewestOutput>>,
}

/// See [`Recorder::group_outputs`].
pub(crate) struct GroupOutputs<'r, 's> {
    recorder: &'r Recorder<'s>,
}

impl Drop for GroupOutputs<'_, '_> {
    fn drop(&mut self) {
        self.recorder
            .caches()
            .group_outputs
            .remove(&std::thread::current().id());
    }
}

/// An avatar's newest stored output, inside a write group: when it happened, and the output
/// when this group stored it and no other stored output has the same time. No other writer can
/// add an output while the group holds the family, so this stays true for the group's length.
#[derive(Debug, Clone)]
struct NewestOutput {
    at: Option<Millis>,
    output: Option<Arc<GroupOutput>>,
}

/// An output a write group stored: its text, and its parse, made at most once (the run that
/// printed it was measured with it; the avatar's next run is measured against it).
#[derive(Debug)]
struct GroupOutput {
    text: String,
    parsed: OnceLock<Arc<RunOutput>>,
}

impl GroupOutput {
    fn parsed(&self) -> Arc<RunOutput> {
        self.parsed
            .get_or_init(|| Arc::new(rs_output::parse_run_output(&self.text)))
            .clone()
    }
}

/// Distinct shell lines whose classification is kept; past this the cache starts over.
const SHELL_LINE_CACHE_LIMIT: usize = 4_096;

/// Records tool calls into a store.
pub struct Recorder<'s> {
    store: &'s dyn Store,
    caches: Mutex<Caches>,
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> Millis {
    let now = time::OffsetDateTime::now_utc();
    (now.unix_timestamp_nanos() / 1_000_000) as Millis
}

impl<'s> Recorder<'s> {
    pub fn new(store: &'s dyn Store) -> Recorder<'s> {
        Recorder {
            store,
            caches: Mutex::new(Caches::default()),
        }
    }

    /// The store this recorder writes to.
    pub fn store(&self) -> &'s dyn Store {
        self.store
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Parses and records one event line.
    pub fn record_line(&self, line: &str) -> Result<Recorded, IngestError> {
        let event = mindrune_core::avatars::event::parse_line(line).map_err(|err| {
            IngestError::Invalid {
                field: err.field,
                message: err.message,
            }
        })?;
        self.record(&event)
    }

    /// Records one event, reading the agent's files on this machine.
    pub fn record(&self, event: &Event) -> Result<Recorded, IngestError> {
        let agent = self.agent(&event.agent)?;
        let workspace = PathBuf::from(&agent.workspace);
        self.record_with(event, &LocalFiles(&workspace))
    }

    /// Records one event, reading the agent's files from `files` (a runner's snapshot on the
    /// server, the workspace itself on the agent's machine).
    pub fn record_with(
        &self,
        event: &Event,
        files: &dyn AgentFiles,
    ) -> Result<Recorded, IngestError> {
        self.record_prepared(event, files, None)
    }

    /// Does the part of recording an event that needs nothing of the library: its output
    /// parsed, scrubbed and cut to the tail that is kept. The server does this on the
    /// request's own thread, before the event joins a write group, so the writer's thread
    /// does only what needs the library (the output's parse and scrub were an eighth of it).
    pub fn prepare(
        &self,
        agent: &Agent,
        event: &Event,
        files: &dyn AgentFiles,
    ) -> Result<PreparedOutput, IngestError> {
        if event.background || event.output.is_none() {
            return Ok(PreparedOutput::default());
        }
        let scrubber = self.scrubber(agent, files)?;
        Ok(prepare_output(event, &scrubber))
    }

    /// Records one event as [`Recorder::record_with`] does, with its output prepared before
    /// (by [`Recorder::prepare`], with the same files) when `prepared` is given.
    pub(crate) fn record_prepared(
        &self,
        event: &Event,
        files: &dyn AgentFiles,
        prepared: Option<&PreparedOutput>,
    ) -> Result<Recorded, IngestError> {
        // Events built here rather than parsed (a hook's) meet the same rule as a parsed line.
        mindrune_core::avatars::event::check_control_characters(
            event.id.as_deref(),
            &event.agent,
            &event.call,
            &event.code_at_start,
        )
        .map_err(|err| IngestError::Invalid {
            field: err.field,
            message: err.message,
        })?;
        // The code each script had when the call started, where the host captured it, stands
        // in for the file: the run is filed under the version that ran.
        let at_start;
        let files: &dyn AgentFiles = if event.code_at_start.is_empty() {
            files
        } else {
            at_start = workspace::CodeAtStart::new(&event.code_at_start, files);
            &at_start
        };
        let agent = self.agent(&event.agent)?;
        let owner = agent.owner;
        let workspace = Path::new(&agent.workspace);
        let mut recorded = Recorded::default();
        let at = event.at.map_or_else(now_millis, |at| {
            (at.unix_timestamp_nanos() / 1_000_000) as Millis
        });
        if event.background {
            recorded.warnings.push(
                "a detached run (background: true): MindRune cannot see how it ends, so nothing is recorded".into(),
            );
            // Only a run of a script file is kept as an unrecorded run: the wrap-up tells the
            // agent how many of its runs went uncounted this way. Other background work (a
            // server, a build) was never a run.
            let scripts = match &event.call {
                Call::Shell { command, cwd } => {
                    self.classify(&agent, command, cwd.as_deref()).runs.clone()
                }
                Call::ExecuteScript { script } => vec![script.clone()],
                Call::ExecuteCode { .. } => Vec::new(),
            };
            if !scripts.is_empty() {
                let scrubber = self.scrubber(&agent, files)?;
                let detail = match &event.call {
                    Call::Shell { command, .. } => scrubber.scrub(command).text.into_owned(),
                    _ => scripts.join(", "),
                };
                self.note_unrecorded(
                    &agent,
                    event.id.as_deref(),
                    "",
                    at,
                    UnrecordedReason::Background,
                    detail,
                )?;
            }
            return Ok(recorded);
        }
        let scrubber = self.scrubber(&agent, files)?;
        if event.output.is_some() {
            self.know_newest_output(&agent)?;
        }
        let made;
        let PreparedOutput {
            parsed: parsed_output,
            stored: output,
            stored_parse,
        } = match prepared {
            Some(prepared) => prepared,
            None => {
                made = prepare_output(event, &scrubber);
                &made
            }
        };
        // A look (`bun sdk/cli.ts NAME`) ran no script: it is a use of no skill. What it
        // printed of this avatar is kept as the state the avatar's next run is measured
        // against (a bot's first run, looked at before, is measured too).
        if let Call::Shell { command, cwd } = &event.call {
            let runs = self.classify(&agent, command, cwd.as_deref());
            if let Some(bot) = shell_line::look_target(command, &runs) {
                if bot.eq_ignore_ascii_case(&agent.name)
                    && parsed_output
                        .as_ref()
                        .is_some_and(|out| out.state_readable())
                    && let Some(text) = output
                {
                    let added = self.note_look(
                        &agent,
                        event.id.as_deref(),
                        at,
                        scrubber.scrub(command).text.into_owned(),
                        text.clone(),
                    )?;
                    if added {
                        self.note_output(&agent, at, text, stored_parse.clone());
                    }
                    // A look prints the whole state: the truest reading of the avatar there is.
                    if let Some(out) = parsed_output {
                        self.save_printed_state(&agent, at, out, &scrubber, false)?;
                    }
                }
                return Ok(recorded);
            }
        }
        let previous = match parsed_output {
            Some(out) if out.state_readable() && needs_previous(event) => {
                self.previous_state(&agent, at)?
            }
            _ => None,
        };
        // No verdict, no "ok": a run cut before how it ended, by a runner that exits 0 on a
        // throw, is neither ok nor failed. It is kept as a call of unknown outcome (out of the
        // score, counted in the wrap-up), and it ends the chain of states the next run is
        // measured along.
        // Cut means: the command pipes through `tail`/`head`, or the output starts in the middle
        // of a state dump (its `## …` parts without the state's header). An output that simply
        // prints no rs-sdk sections (a script's own `console.log`) is not cut: its exit status
        // stands.
        let outcome_unknown = match (&event.call, parsed_output) {
            (Call::ExecuteCode { .. }, _) | (_, None) => false,
            (call, Some(out)) => {
                let piped = match call {
                    Call::Shell { command, .. } => rs_output::command_cuts_output(command),
                    _ => false,
                };
                let mid_state = !out.state_seen
                    && event
                        .output
                        .as_deref()
                        .is_some_and(|text| text.lines().any(|line| line.starts_with("## ")));
                event.ok != Some(false) && !out.verdict_seen && (piped || mid_state)
            }
        };
        let mut outcome = measure(event, parsed_output.as_deref(), previous.as_deref(), at)?;
        // The cause quotes the game and the script's error: scrubbed like the output it is from.
        outcome.failure = outcome
            .failure
            .map(|text| scrubber.scrub(&text).text.into_owned());

        match &event.call {
            Call::ExecuteCode { code } => {
                let code = scrubber.scrub(code).text.into_owned();
                let new_use = NewSnippetUse {
                    agent: agent.id,
                    digest: digest::snippet_digest(&code),
                    code,
                    outcome,
                    output: output.clone(),
                    event_id: event.id.clone(),
                };
                let result = self.store.record_snippet_use(owner, &new_use)?;
                if result.added
                    && let Some(text) = &new_use.output
                {
                    self.note_output(&agent, new_use.outcome.at, text, stored_parse.clone());
                }
                recorded.snippet = Some(SnippetRecorded {
                    digest: result.snippet.digest,
                    uses: result.snippet.uses,
                    ok: result.snippet.ok,
                    added: result.added,
                });
            }
            Call::ExecuteScript { script } => {
                let relative =
                    workspace::workspace_relative(script, workspace).ok_or_else(|| {
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
                let file = match files.stat(&relative, MAX_SCRIPT_BYTES) {
                    Ok(file) => file,
                    Err(err) => return Err(IngestError::field("script", err.to_string())),
                };
                let call = scrubber.scrub(script).text.into_owned();
                if outcome_unknown {
                    self.note_outcome_unknown(
                        &agent,
                        event.id.as_deref(),
                        &relative,
                        at,
                        &call,
                        &mut recorded,
                    )?;
                    return Ok(recorded);
                }
                let run = RunInput {
                    relative,
                    file,
                    outcome,
                    output: output.clone(),
                    stored_parse: stored_parse.clone(),
                    call,
                    source_kind: "execute_code",
                    event_id: event.id.clone(),
                };
                self.record_run(&agent, files, &scrubber, run, &mut recorded)?;
            }
            Call::Shell { command, cwd } => {
                let runs = self.classify(&agent, command, cwd.as_deref());
                for note in &runs.diagnostics {
                    recorded
                        .warnings
                        .push(scrubber.scrub(note).text.into_owned());
                }
                let call = scrubber.scrub(command).text.into_owned();
                for detached in &runs.detached {
                    recorded.warnings.push(format!(
                        "{detached}: sent to the background, so not recorded (MindRune cannot see how a detached run ends)"
                    ));
                    self.note_unrecorded(
                        &agent,
                        event.id.as_deref(),
                        detached,
                        at,
                        UnrecordedReason::Background,
                        call.clone(),
                    )?;
                }
                let mut unresolved = Vec::new();
                let scripts: Vec<&String> = runs
                    .runs
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
                        &agent,
                        event.id.as_deref(),
                        path,
                        at,
                        UnrecordedReason::NoScript,
                        warning.clone(),
                    )?;
                    recorded.warnings.push(warning);
                }
                let several = scripts.len() > 1;
                for relative in scripts {
                    if outcome_unknown {
                        self.note_outcome_unknown(
                            &agent,
                            event.id.as_deref(),
                            relative,
                            at,
                            &call,
                            &mut recorded,
                        )?;
                        continue;
                    }
                    let not_run = match files.stat(relative, MAX_SCRIPT_BYTES) {
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
                                &agent,
                                event.id.as_deref(),
                                relative,
                                at,
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
                        output: output.clone(),
                        stored_parse: stored_parse.clone(),
                        call: call.clone(),
                        source_kind: "shell",
                        event_id,
                    };
                    self.record_run(&agent, files, &scrubber, run, &mut recorded)?;
                }
            }
        }
        // The World State the call printed becomes the avatar's state on the dashboard, when it
        // is this avatar's whole state: a shell line's only once one of this bot's scripts ran
        // (else it may be another bot's) and nothing cut it.
        let avatar_s = match &event.call {
            Call::ExecuteCode { .. } | Call::ExecuteScript { .. } => true,
            Call::Shell { command, .. } => {
                !recorded.runs.is_empty() && !rs_output::command_cuts_output(command)
            }
        };
        if avatar_s && let Some(out) = parsed_output {
            let check_name = matches!(event.call, Call::ExecuteCode { .. });
            self.save_printed_state(&agent, at, out, &scrubber, check_name)?;
        }
        Ok(recorded)
    }

    /// The versions an event's scripts are at, as far as this recorder knows without reading
    /// anything: each script whose file has the stamp it had when its version was matched.
    /// A hint for the store ([`Store::expect_uses`]); recording decides again.
    pub(crate) fn known_versions(
        &self,
        agent: &Agent,
        event: &Event,
        files: &dyn AgentFiles,
        into: &mut Vec<VersionId>,
    ) {
        if event.background {
            return;
        }
        let scripts: Vec<String> = match &event.call {
            Call::Shell { command, cwd } => self
                .classify(agent, command, cwd.as_deref())
                .runs
                .iter()
                .filter(|path| {
                    workspace::script_of_bot(path).is_some_and(|(bot, _)| bot == agent.name)
                })
                .cloned()
                .collect(),
            Call::ExecuteScript { script } => {
                workspace::workspace_relative(script, Path::new(&agent.workspace))
                    .into_iter()
                    .collect()
            }
            Call::ExecuteCode { .. } => return,
        };
        for relative in scripts {
            let Ok(Some(stamp)) = files.stat(&relative, MAX_SCRIPT_BYTES) else {
                continue;
            };
            let caches = self.caches();
            if let Some(known) = caches
                .files
                .get(&(agent.id.0, relative))
                .filter(|known| known.stamp == Some(stamp))
            {
                into.push(known.version);
            }
        }
    }

    fn record_run(
        &self,
        agent: &Agent,
        files: &dyn AgentFiles,
        scrubber: &Scrubber,
        run: RunInput,
        recorded: &mut Recorded,
    ) -> Result<(), IngestError> {
        let owner = agent.owner;
        let cache_key = (agent.id.0, run.relative.clone());
        let cached = |stamp: &FileStamp| {
            self.caches()
                .files
                .get(&cache_key)
                .filter(|k| k.stamp == Some(*stamp))
                .cloned()
        };
        let source = match &run.file {
            // The file's stamp is the one its version was matched at: nothing to read.
            Some(stamp) if let Some(known) = cached(stamp) => Ok(known),
            Some(_) => match files.read(&run.relative, MAX_SCRIPT_BYTES) {
                Ok(Some(source)) => Err(Some(source)),
                Ok(None) => Err(None),
                Err(err) => {
                    recorded
                        .warnings
                        .push(format!("{err}; the run is not recorded"));
                    return Ok(());
                }
            },
            None => Err(None),
        };
        let target = match source {
            Ok(known) => KnownFile {
                new_skill: false,
                new_version: false,
                sharing: None,
                ..known
            },
            Err(None) => {
                // The file vanished between the call and the record: the run belongs to the
                // version the library last saw, never to a guess.
                let known = self.store.skill_at_path(owner, agent.id, &run.relative)?;
                match known.and_then(|skill| skill.current_version.map(|v| (skill, v))) {
                    Some((skill, version)) => {
                        recorded.warnings.push(format!(
                            "{}: the file is gone; the run is recorded for its last known version",
                            run.relative
                        ));
                        KnownFile {
                            file_digest: String::new(),
                            stamp: None,
                            version,
                            skill_label: format!("{}/{}", skill.agent_name, skill.name),
                            new_skill: false,
                            new_version: false,
                            sibling_copy: false,
                            sharing: None,
                        }
                    }
                    None => {
                        let warning = format!(
                            "{}: the file does not exist and was never seen; the run is not recorded",
                            run.relative
                        );
                        self.note_unrecorded(
                            agent,
                            run.event_id.as_deref(),
                            &run.relative,
                            now_millis(),
                            UnrecordedReason::NoScript,
                            warning.clone(),
                        )?;
                        recorded.warnings.push(warning);
                        return Ok(());
                    }
                }
            }
            Err(Some(source)) => {
                let file_digest = digest::sha256(source.as_bytes());
                let same_content = self
                    .caches()
                    .files
                    .get(&cache_key)
                    .filter(|k| k.file_digest == file_digest)
                    .cloned();
                let known = match same_content {
                    // Touched but unchanged: the same version, under its new stamp.
                    Some(known) => KnownFile {
                        new_skill: false,
                        new_version: false,
                        sharing: None,
                        ..known
                    },
                    None => {
                        self.match_file(agent, scrubber, &run.relative, &source, file_digest)?
                    }
                };
                let known = KnownFile {
                    stamp: run.file,
                    ..known
                };
                self.caches().files.insert(cache_key, known.clone());
                known
            }
        };
        let new_use = NewUse {
            version: target.version,
            agent: agent.id,
            outcome: run.outcome.clone(),
            source: run.source_kind.into(),
            call: Some(run.call),
            output: run.output,
            event_id: run.event_id,
            recorded_at: now_millis(),
        };
        let result = self.store.record_use(owner, &new_use)?;
        if result.added
            && let Some(text) = &new_use.output
        {
            self.note_output(agent, new_use.outcome.at, text, run.stored_parse);
        }
        recorded.runs.push(RunRecorded {
            skill: target.skill_label,
            version: result.version.number,
            new_skill: target.new_skill,
            new_version: target.new_version,
            added: result.added,
            ok: run.outcome.ok,
            failure: run.outcome.failure.clone(),
            score: result.version.score,
            uses: result.version.uses,
            sharing: result.shared.or(target.sharing),
        });
        Ok(())
    }

    /// Matches a file's content to a skill and version, creating them when new, and records
    /// the header it carries (which decides sharing).
    pub(crate) fn match_file(
        &self,
        agent: &Agent,
        scrubber: &Scrubber,
        relative: &str,
        source: &str,
        file_digest: String,
    ) -> Result<KnownFile, IngestError> {
        let owner = agent.owner;
        let (parsed, _diagnostics) = header::parse(source);
        let code = digest::code_without_header(source);
        let code_digest = digest::sha256(code.as_bytes());
        let name = workspace::script_of_bot(relative)
            .map_or("", |(_, name)| name)
            .to_string();
        // Tags are stored (and mirrored) as written, so they are scrubbed like every other word
        // of the header: a secret written as a tag never reaches the library.
        let tags: Vec<String> = parsed
            .as_ref()
            .map(|h| scrubbed_tags(&h.tags, scrubber))
            .unwrap_or_default();
        let from = parsed.as_ref().and_then(|h| h.from.clone());

        let existing = self.store.skill_at_path(owner, agent.id, relative)?;
        let mut origin = None;
        if existing.is_none() {
            let same_code = self.store.versions_with_digest(owner, &code_digest)?;
            // An unchanged copy of a sibling's skill (it keeps its From: line) counts for the
            // sibling's skill: it is the sibling's, already.
            if let Some(from) = &from
                && let Some((sibling, version)) = same_code.iter().find(|(skill, _)| {
                    skill.agent != Some(agent.id)
                        && format!("{}/{}", skill.agent_name, skill.name) == *from
                })
            {
                return Ok(KnownFile {
                    file_digest,
                    stamp: None,
                    version: version.id,
                    skill_label: format!("{}/{}", sibling.agent_name, sibling.name),
                    new_skill: false,
                    new_version: false,
                    sibling_copy: true,
                    sharing: None,
                });
            }
            // The mirror holds the sibling's code as stored, scrubbed: a skill whose code held
            // a secret reaches the family with it redacted, so its verbatim copy has other
            // bytes than the version's digest was taken of. It is still the sibling's skill.
            if let Some(from) = &from
                && let Some((sibling, version)) =
                    self.scrubbed_copy_of(agent, scrubber, from, &code)?
            {
                return Ok(KnownFile {
                    file_digest,
                    stamp: None,
                    version,
                    skill_label: format!("{}/{}", sibling.agent_name, sibling.name),
                    new_skill: false,
                    new_version: false,
                    sibling_copy: true,
                    sharing: None,
                });
            }
            // A copy or rename of one of the agent's own files starts its own history, built
            // on the original.
            if let Some((_, version)) = same_code
                .iter()
                .filter(|(skill, _)| skill.agent == Some(agent.id))
                .max_by(|a, b| a.1.score.total_cmp(&b.1.score))
            {
                origin = Some((version.id, Lineage::Copy));
            } else if let Some(from) = &from
                && let Some((sibling_agent, sibling_name)) = from.split_once('/')
                && sibling_agent != agent.name
                && let Some(sibling) =
                    self.store
                        .skill_by_name(owner, sibling_agent, sibling_name)?
                && let Some(version) = sibling.current_version
            {
                // A changed copy of a sibling's skill: the avatar's own version, built on it.
                origin = Some((version, Lineage::Sibling));
            }
        }
        let matched = self.store.match_script(
            owner,
            &ScriptSnapshot {
                agent: agent.id,
                path: relative.to_string(),
                name,
                digest: code_digest,
                code: scrubber.scrub(&code).text.into_owned(),
                tags,
                header: skill_header(parsed.as_ref(), scrubber, self.store)?,
                file_digest: Some(file_digest.clone()),
                origin,
            },
            now_millis(),
        )?;
        Ok(KnownFile {
            file_digest,
            stamp: None,
            version: matched.version.id,
            skill_label: format!("{}/{}", matched.skill.agent_name, matched.skill.name),
            new_skill: matched.new_skill,
            new_version: matched.new_version,
            sibling_copy: false,
            sharing: matched.sharing,
        })
    }

    /// What the avatar's state was before this call, to measure the call against: the output of
    /// the avatar's newest earlier call (run or inline code) in this turn, when it shows a
    /// readable state. Nothing spans a call without one (an output cut by `| tail`: its gains
    /// are not measured, and must not move to the next call), a run of unknown outcome, or the
    /// avatar's last turn end (the operator may have changed the avatar in between: `::give`,
    /// `::setstat`; late XP lands there too).
    fn previous_state(
        &self,
        agent: &Agent,
        at: Millis,
    ) -> Result<Option<Arc<RunOutput>>, IngestError> {
        let mut since = agent.last_turn_at.filter(|turn| *turn < at);
        // A run of unknown outcome stored no output; the time it was noted is a break.
        let turn_or_created = since.unwrap_or(agent.created_at);
        if let Some(newest_break) = self
            .store
            .unrecorded_since(agent.owner, agent.id, turn_or_created)?
            .iter()
            // A break at this very millisecond (calls stamped on arrival) may have come
            // before this call: unknown is safer than measuring across it.
            .filter(|call| call.reason == UnrecordedReason::OutcomeUnknown && call.at <= at)
            .map(|call| call.at)
            .max()
        {
            since = Some(since.map_or(newest_break, |s| s.max(newest_break)));
        }
        // Inside a write group the output this group stored last is often the one wanted: the
        // newest of all, and older than this run (and parsed once, often already).
        if let Some((stored_at, stored)) = self.group_output_before(agent, at) {
            if since.is_some_and(|since| stored_at <= since) {
                return Ok(None);
            }
            let newest = stored.parsed();
            return Ok(newest.state_readable().then_some(newest));
        }
        let newest = self
            .store
            .recent_outputs_since(agent.owner, agent.id, since, at, 1)?;
        let Some(first) = newest.first() else {
            return Ok(None);
        };
        let first = rs_output::parse_run_output(first);
        Ok(first.state_readable().then(|| Arc::new(first)))
    }

    /// Keeps a run whose outcome the output cannot tell as a call of unknown outcome.
    fn note_outcome_unknown(
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

    /// Starts (or, when the group's work runs again after a rollback, starts over) this
    /// thread's write group's knowledge of the avatars' newest outputs.
    pub(crate) fn begin_group(&self) {
        self.caches()
            .group_outputs
            .insert(std::thread::current().id(), HashMap::new());
    }

    /// Forgets this thread's group knowledge when dropped, however the group ends (a panic
    /// included): once other writers may write again it is no longer true.
    pub(crate) fn group_outputs(&self) -> GroupOutputs<'_, 's> {
        GroupOutputs { recorder: self }
    }

    /// Inside a write group, learns when the avatar's newest stored output happened, once per
    /// group, before the group stores one of its own.
    fn know_newest_output(&self, agent: &Agent) -> Result<(), IngestError> {
        let me = std::thread::current().id();
        let known = match self.caches().group_outputs.get(&me) {
            None => return Ok(()),
            Some(outputs) => outputs.contains_key(&agent.id.0),
        };
        if known {
            return Ok(());
        }
        // Asked without holding the caches: the store may wait for another thread's group.
        let at = self.store.newest_output_at(agent.owner, agent.id)?;
        if let Some(outputs) = self.caches().group_outputs.get_mut(&me) {
            outputs
                .entry(agent.id.0)
                .or_insert(NewestOutput { at, output: None });
        }
        Ok(())
    }

    /// Notes an output this thread's write group just stored for the avatar at `at`, with its
    /// parse when one was made.
    fn note_output(&self, agent: &Agent, at: Millis, text: &str, parsed: Option<Arc<RunOutput>>) {
        let mut caches = self.caches();
        let Some(newest) = caches
            .group_outputs
            .get_mut(&std::thread::current().id())
            .and_then(|outputs| outputs.get_mut(&agent.id.0))
        else {
            return;
        };
        match newest.at {
            Some(known) if at < known => {}
            // Two outputs of the same time: which one a reader gets is the store's order, so
            // the group stops answering for them (unless they are the same text, as the runs
            // of one call that ran several scripts are).
            Some(known) if at == known => {
                if newest.output.as_ref().map(|o| o.text.as_str()) != Some(text) {
                    newest.output = None;
                }
            }
            _ => {
                *newest = NewestOutput {
                    at: Some(at),
                    output: Some(Arc::new(GroupOutput {
                        text: text.to_string(),
                        parsed: parsed.map(OnceLock::from).unwrap_or_default(),
                    })),
                }
            }
        }
    }

    /// The avatar's newest stored output, when this thread's write group stored it and it
    /// happened before `at`.
    fn group_output_before(&self, agent: &Agent, at: Millis) -> Option<(Millis, Arc<GroupOutput>)> {
        let caches = self.caches();
        let newest = caches
            .group_outputs
            .get(&std::thread::current().id())?
            .get(&agent.id.0)?;
        match (newest.at, &newest.output) {
            (Some(known), Some(output)) if known < at => Some((known, output.clone())),
            _ => None,
        }
    }

    /// The sibling's skill (and version) that `code` is a verbatim copy of as the mirror showed
    /// it: the version's stored, scrubbed code, equal to the copy as it is or once scrubbed.
    fn scrubbed_copy_of(
        &self,
        agent: &Agent,
        scrubber: &Scrubber,
        from: &str,
        code: &str,
    ) -> Result<Option<(mindrune_store::Skill, VersionId)>, IngestError> {
        let Some((sibling_agent, sibling_name)) = from.split_once('/') else {
            return Ok(None);
        };
        if sibling_agent == agent.name {
            return Ok(None);
        }
        let Some(sibling) = self
            .store
            .skill_by_name(agent.owner, sibling_agent, sibling_name)?
        else {
            return Ok(None);
        };
        let scrubbed = scrubber.scrub(code).text;
        let versions = self.store.versions(agent.owner, sibling.id)?;
        let found = versions
            .iter()
            .find(|v| v.code == code || v.code == scrubbed)
            .map(|v| v.id);
        Ok(found.map(|version| (sibling, version)))
    }

    /// Forgets what was cached about an agent's file (the turn boundary read it afresh).
    pub(crate) fn forget_file(&self, agent: &Agent, relative: &str) {
        self.caches()
            .files
            .remove(&(agent.id.0, relative.to_string()));
    }

    /// Keeps a look with the state it printed. It is kept among the unrecorded calls (reason
    /// `look`), not in a table of its own: like them it is a call seen that is a use of no
    /// skill, known once by its event id, gone with its avatar and copied by `mindrune
    /// migrate`; the turn report and the wrap-up leave looks out of what went uncounted.
    fn note_look(
        &self,
        agent: &Agent,
        event_id: Option<&str>,
        at: Millis,
        command: String,
        output: String,
    ) -> Result<bool, IngestError> {
        let event_id = event_id.map_or_else(|| format!("at:{at}"), str::to_string);
        Ok(self.store.note_unrecorded(
            agent.owner,
            &UnrecordedCall {
                agent: agent.id,
                event_id,
                at,
                reason: UnrecordedReason::Look,
                detail: command,
                output: Some(output),
            },
        )?)
    }

    /// Keeps a call that was seen but not recorded as a run, so the turn report and the
    /// wrap-up can say so once. `part` tells apart the scripts of one call; an event without an
    /// id (a hand-written events file) is keyed by its time.
    fn note_unrecorded(
        &self,
        agent: &Agent,
        event_id: Option<&str>,
        part: &str,
        at: Millis,
        reason: UnrecordedReason,
        detail: String,
    ) -> Result<(), IngestError> {
        let base = event_id.map_or_else(|| format!("at:{at}"), str::to_string);
        let event_id = if part.is_empty() {
            base
        } else {
            format!("{base}#{part}")
        };
        self.store.note_unrecorded(
            agent.owner,
            &UnrecordedCall {
                agent: agent.id,
                event_id,
                at,
                reason,
                detail,
                output: None,
            },
        )?;
        Ok(())
    }

    /// Which scripts a shell line runs, from the cache when the agent ran it before.
    fn classify(&self, agent: &Agent, command: &str, cwd: Option<&str>) -> Arc<ShellRuns> {
        let key = (agent.id.0, command.to_string(), cwd.map(str::to_string));
        if let Some(runs) = self.caches().shell_lines.get(&key) {
            return runs.clone();
        }
        let roots = [SANDBOX_ROOT, agent.workspace.as_str()];
        let runs = Arc::new(shell_line::classify_shell_line(
            command,
            &ShellContext {
                cwd,
                workspace_roots: &roots,
            },
        ));
        let mut caches = self.caches();
        if caches.shell_lines.len() >= SHELL_LINE_CACHE_LIMIT {
            caches.shell_lines.clear();
        }
        caches.shell_lines.insert(key, runs.clone());
        runs
    }

    /// Makes the recorder use this record of an agent from now on (a long-lived recorder is
    /// told the agent a request's token names, so an agent re-created under the same name is
    /// never recorded under its old id).
    pub fn know_agent(&self, agent: &Agent) {
        self.caches()
            .agents
            .insert(agent.name.clone(), Arc::new(agent.clone()));
    }

    pub(crate) fn agent(&self, name: &str) -> Result<Arc<Agent>, IngestError> {
        if let Some(agent) = self.caches().agents.get(name) {
            return Ok(agent.clone());
        }
        let agent = Arc::new(self.store.agent_by_name(name)?.ok_or_else(|| {
            IngestError::field(
                "agent",
                format!("no agent named `{name}`; add it with `mindrune agent add {name} --owner OWNER --workspace DIR`"),
            )
        })?);
        self.caches().agents.insert(name.to_string(), agent.clone());
        Ok(agent)
    }

    /// The scrubber for an agent: its bot's password and keys from `bot.env`. The owner's key
    /// is not known here (the library keeps only its digest): it is scrubbed by its shape,
    /// `mrk_` and 48 hex digits, as every token is. Rebuilt when `bot.env` changes.
    pub(crate) fn scrubber(
        &self,
        agent: &Agent,
        files: &dyn AgentFiles,
    ) -> Result<Arc<Scrubber>, IngestError> {
        let relative = format!("bots/{}/bot.env", agent.name);
        let stamp = files.change_stamp(&relative);
        if let Some((seen, scrubber)) = self.caches().scrubbers.get(&agent.id.0)
            && *seen == stamp
        {
            return Ok(scrubber.clone());
        }
        // Fails closed: a bot.env that is there but cannot be read refuses the event, since
        // recording it would store the bot's password unscrubbed.
        let known = bot_env_secrets(files, &agent.name).map_err(|err| IngestError::Invalid {
            field: None,
            message: err.to_string(),
        })?;
        let refs: Vec<&str> = known.iter().map(String::as_str).collect();
        let scrubber = Arc::new(Scrubber::new(&refs));
        self.caches()
            .scrubbers
            .insert(agent.id.0, (stamp, scrubber.clone()));
        Ok(scrubber)
    }
}

/// What a header says, as the library keeps it: its state decides sharing; its words are
/// scrubbed like the code.
pub(crate) fn skill_header(
    parsed: Option<&header::Header>,
    scrubber: &Scrubber,
    store: &dyn Store,
) -> Result<SkillHeader, StoreError> {
    let Some(parsed) = parsed else {
        return Ok(SkillHeader::default());
    };
    let scrub = |text: &Option<String>| {
        text.as_deref()
            .map(|t| scrubber.scrub(t).text.into_owned())
            .filter(|t| !t.is_empty())
    };
    // Topics are read from the scrubbed words: a secret in a goal or a tag must not come back
    // as a lower-cased topic.
    let clean = header::Header {
        goal: scrub(&parsed.goal),
        preconditions: scrub(&parsed.preconditions),
        params: scrub(&parsed.params),
        result: scrub(&parsed.result),
        tags: scrubbed_tags(&parsed.tags, scrubber),
        ..parsed.clone()
    };
    Ok(SkillHeader {
        state: if parsed.private {
            HeaderState::Private
        } else {
            HeaderState::Skill
        },
        topics: header_topics(&clean, store)?,
        goal: clean.goal,
        preconditions: clean.preconditions,
        params: clean.params,
        result: clean.result,
        from: parsed.from.clone(),
    })
}

/// A header's tags with secrets scrubbed; a tag that was all secret is dropped.
fn scrubbed_tags(tags: &[String], scrubber: &Scrubber) -> Vec<String> {
    tags.iter()
        .map(|tag| scrubber.scrub(tag).text.into_owned())
        .filter(|tag| !tag.is_empty() && tag != mindrune_core::secrets::REDACTED)
        .collect()
}

/// Topic tags of a header, by the library's vocabulary: each `Tags:` entry as an exact tag or
/// a name (`lumby`, `cooks-assistant`, everyday names too: the author chose it as a tag), then
/// the tags of the goal's and preconditions' free text (exact tags and names).
fn header_topics(parsed: &header::Header, store: &dyn Store) -> Result<Vec<String>, StoreError> {
    let vocabulary = tags::vocabulary(store)?;
    let mut topics: Vec<String> = Vec::new();
    let words = [parsed.goal.as_deref(), parsed.preconditions.as_deref()];
    let found = parsed
        .tags
        .iter()
        .filter_map(|tag| vocabulary.tag_for_word(tag))
        .chain(
            words
                .into_iter()
                .flatten()
                .flat_map(|text| vocabulary.map(text).into_iter().map(Cow::into_owned)),
        );
    for topic in found {
        if !topics.contains(&topic) {
            topics.push(topic);
        }
    }
    Ok(topics)
}

struct RunInput {
    relative: String,
    /// The file's stamp when the run was recorded; `None` when it no longer exists.
    file: Option<FileStamp>,
    outcome: Outcome,
    output: Option<String>,
    /// The parse of `output` as stored, when it is the parse already made of the event's.
    stored_parse: Option<Arc<RunOutput>>,
    call: String,
    source_kind: &'static str,
    event_id: Option<String>,
}

/// Whether bun said it found no file at `relative` for this failed call (`error: Module not
/// found "bots/ash/chop-trees.ts"`): the script never started.
fn bun_found_no_file(event: &Event, relative: &str) -> bool {
    event.ok == Some(false)
        && event.output.as_deref().is_some_and(|output| {
            output.lines().any(|line| {
                line.trim_start().starts_with("error: Module not found")
                    && line.trim_end().trim_end_matches('"').ends_with(relative)
            })
        })
}

/// Whether measuring this call needs the avatar's previous state: only for what the host did
/// not measure itself.
fn needs_previous(event: &Event) -> bool {
    event.measures.is_none() || event.damage.is_none()
}

/// The measured outcome of a call: the host's `measures`/`damage` when given, else what
/// rs-sdk printed, read against the avatar's previous run (`previous`). A run whose output
/// ends in an rs-sdk error failed even when the host (the shell's exit status) said it was ok:
/// `… | tail -30` and the fork runner, which exits 0 on a throw or a timeout, are ordinary.
fn measure(
    event: &Event,
    output: Option<&RunOutput>,
    previous: Option<&RunOutput>,
    at: Millis,
) -> Result<Outcome, IngestError> {
    let output_failed = output.is_some_and(|out| out.failed);
    let ok = match (event.ok, output) {
        (Some(ok), _) => ok && !output_failed,
        (None, Some(out)) if out.execution_status.is_some() => {
            out.execution_status.as_deref() == Some("success")
        }
        (None, Some(out)) if out.failed => false,
        (None, Some(out)) if out.xp_line_seen || out.state_seen => true,
        _ => {
            return Err(IngestError::field(
                "ok",
                "is missing and the output does not say how the run ended; give `ok` (true or false)",
            ));
        }
    };
    let facts = output.map(|out| rs_output::measure_against(out, previous));
    let mut outcome = Outcome {
        at,
        ok,
        duration_ms: event
            .duration_ms
            .or(output.and_then(|o| o.elapsed_ms))
            .unwrap_or(0),
        failure: if ok {
            None
        } else {
            facts.as_ref().and_then(|f| f.failure.clone())
        },
        ..Outcome::default()
    };
    match &event.measures {
        Some(measures) => {
            outcome.xp = measures.xp.clone();
            outcome.items = measures.items.clone();
            outcome.goal_progress = measures.goal_progress.unwrap_or(0.0);
        }
        None => {
            if let Some(facts) = &facts {
                outcome.xp = facts.xp.clone();
                outcome.items = facts.items.clone();
                outcome.unmeasured = facts.unmeasured.map(str::to_owned);
            }
        }
    }
    match &event.damage {
        Some(damage) => {
            outcome.deaths = damage.deaths;
            outcome.stuck = damage.stuck;
            outcome.items_lost = damage.items_lost;
        }
        None => {
            if let Some(facts) = &facts {
                outcome.deaths = u32::from(facts.died);
                outcome.stuck = facts.stuck;
                outcome.items_lost = facts.items_lost;
            }
        }
    }
    Ok(outcome)
}

/// What recording an event needs of its output that the library does not give: made by
/// [`Recorder::prepare`] (or while recording, when it was not).
#[derive(Debug, Clone, Default)]
pub struct PreparedOutput {
    /// The output as rs-sdk printed it, parsed.
    parsed: Option<Arc<RunOutput>>,
    /// The scrubbed end of the output, as it is stored.
    stored: Option<String>,
    /// The parse of `stored`, when scrubbing and the cut left the output as it came (then it
    /// is `parsed`): the avatar's next run is measured against the stored output.
    stored_parse: Option<Arc<RunOutput>>,
}

/// One event of a batch recorded in a write group ([`Recorder::record_together`]): the event,
/// the avatar's files, and its output when it was prepared before.
pub type GroupedEvent<'a> = (&'a Event, &'a dyn AgentFiles, Option<&'a PreparedOutput>);

fn prepare_output(event: &Event, scrubber: &Scrubber) -> PreparedOutput {
    let Some(raw) = event.output.as_deref() else {
        return PreparedOutput::default();
    };
    let parsed = Arc::new(rs_output::parse_run_output(raw));
    let stored = scrub_tail(scrubber, raw);
    let stored_parse = (stored == raw).then(|| parsed.clone());
    PreparedOutput {
        parsed: Some(parsed),
        stored: Some(stored),
        stored_parse,
    }
}

/// The scrubbed end of a run's output, cut at a character boundary.
fn scrub_tail(scrubber: &Scrubber, text: &str) -> String {
    // Scrub before cutting, so a secret that straddles the cut is still found whole.
    let scrubbed = scrubber.scrub(text).text;
    if scrubbed.len() <= OUTPUT_TAIL_BYTES {
        return scrubbed.into_owned();
    }
    let mut start = scrubbed.len() - OUTPUT_TAIL_BYTES;
    while !scrubbed.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &scrubbed[start..])
}
