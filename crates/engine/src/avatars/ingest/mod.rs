//! Ingest: one tool call in, the uses it makes recorded.
//!
//! The steps, in order: find the agent (and from it the owner), drop detached runs, decide
//! which scripts the call ran (the shell-line classifier, or the `script` field), read each
//! file inside the workspace, match it to a skill and version, measure the run, scrub, record
//! and rescore. Inline code goes to the snippet history instead and never becomes a skill.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mindrune_core::Scrubber;
use mindrune_core::{Call, Event};
use mindrune_core::{ShellContext, ShellRuns, classify_shell_line};
use mindrune_store::{
    Agent, Millis, Recording, SharingChange, Store, StoreError, UnrecordedCall, UnrecordedReason,
    VersionId,
};

use crate::workspace::{self, AgentFiles, FileStamp, LocalFiles, MAX_SCRIPT_BYTES, SANDBOX_ROOT};

/// How much of a run's output is kept with its use: the end, where rs-sdk prints its summary.
pub(crate) const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

mod bot_env;
mod calls;
mod matching;
mod output;
mod previous;
mod printed;
mod together;

pub use bot_env::{UnreadableBotEnv, bot_env_secrets};
use calls::CallInput;
pub use output::PreparedOutput;
use output::{outcome_unknown, prepare_output};
use previous::NewestOutput;

/// Why an event was rejected. Nothing of it was recorded.
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
    pub(crate) new_skill: bool,
    pub new_version: bool,
    /// `false` when the event id was already recorded (a retry).
    pub added: bool,
    pub ok: bool,
    /// Why the run failed, when its output said (scrubbed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) failure: Option<String>,
    pub score: f64,
    pub uses: i64,
    /// The run (or the file's new header) changed what the family sees of the skill.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sharing: Option<SharingChange>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SnippetRecorded {
    pub(crate) digest: String,
    pub(crate) uses: i64,
    pub(crate) ok: i64,
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
}

/// Distinct shell lines whose classification is kept; past this the cache starts over.
const SHELL_LINE_CACHE_LIMIT: usize = 4_096;

/// Records tool calls into a store. One recorder serves many threads at once (the server's
/// lanes); what it learns of agents, files and shell lines is kept between calls.
pub struct Recorder<'s> {
    store: &'s dyn Store,
    caches: Mutex<Caches>,
}

/// One piece of recording: where its reads and writes go (the store itself, each on its own, or
/// a write group's handle, [`Store::write_group`]), the recorder's caches, and, in a group, what
/// the group knows of the avatars' newest outputs (see [`Ingest::previous_state`]). Made for
/// one call or one group and dropped with it, so nothing a group learnt outlives it.
pub(crate) struct Ingest<'r> {
    store: &'r dyn Recording,
    caches: &'r Mutex<Caches>,
    group: Option<RefCell<HashMap<i64, NewestOutput>>>,
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

    /// Recording on its own: each read and write its own transaction of the store.
    pub(crate) fn alone(&self) -> Ingest<'_> {
        Ingest {
            store: self.store,
            caches: &self.caches,
            group: None,
        }
    }

    /// Recording as pieces of the write group whose handle is `group`.
    pub(crate) fn in_group<'g>(&'g self, group: &'g dyn Recording) -> Ingest<'g> {
        Ingest {
            store: group,
            caches: &self.caches,
            group: Some(RefCell::default()),
        }
    }

    /// Parses and records one event line.
    pub fn record_line(&self, line: &str) -> Result<Recorded, IngestError> {
        let event = mindrune_core::parse_line(line).map_err(|err| IngestError::Invalid {
            field: err.field,
            message: err.message,
        })?;
        self.record(&event)
    }

    /// Records one event, reading the agent's files on this machine.
    pub fn record(&self, event: &Event) -> Result<Recorded, IngestError> {
        self.alone().record(event)
    }

    /// Records one event, reading the agent's files from `files` (a runner's snapshot on the
    /// server, the workspace itself on the agent's machine).
    pub fn record_with(
        &self,
        event: &Event,
        files: &dyn AgentFiles,
    ) -> Result<Recorded, IngestError> {
        self.alone().record_prepared(event, files, None)
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

    /// Makes the recorder use this record of an agent from now on (a long-lived recorder is
    /// told the agent a request's token names, so an agent re-created under the same name is
    /// never recorded under its old id).
    pub fn know_agent(&self, agent: &Agent) {
        self.caches()
            .agents
            .insert(agent.name.clone(), Arc::new(agent.clone()));
    }

    /// The agent named `name`, from the cache when known.
    pub(crate) fn agent(&self, name: &str) -> Result<Arc<Agent>, IngestError> {
        self.alone().agent(name)
    }

    /// The scrubber for an agent (see [`Ingest::scrubber`]).
    pub(crate) fn scrubber(
        &self,
        agent: &Agent,
        files: &dyn AgentFiles,
    ) -> Result<Arc<Scrubber>, IngestError> {
        self.alone().scrubber(agent, files)
    }

    /// Forgets what was cached about an agent's file (the turn boundary read it afresh).
    pub(crate) fn forget_file(&self, agent: &Agent, relative: &str) {
        self.alone().forget_file(agent, relative);
    }

    /// Matches a file's content to its skill and version (see [`Ingest::match_file`]).
    pub(crate) fn match_file(
        &self,
        agent: &Agent,
        scrubber: &Scrubber,
        relative: &str,
        source: &str,
        file_digest: String,
    ) -> Result<KnownFile, IngestError> {
        self.alone()
            .match_file(agent, scrubber, relative, source, file_digest)
    }
}

impl Ingest<'_> {
    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records one event, reading the agent's files on this machine.
    pub(crate) fn record(&self, event: &Event) -> Result<Recorded, IngestError> {
        let agent = self.agent(&event.agent)?;
        let workspace = PathBuf::from(&agent.workspace);
        self.record_prepared(event, &LocalFiles(&workspace), None)
    }

    /// Records one event as [`Recorder::record_with`] does, with its output prepared before
    /// (by [`Recorder::prepare`], with the same files) when `prepared` is given.
    ///
    /// A detached run is noted as unrecorded and a look kept as the avatar's state; any other
    /// call is measured, recorded by its kind (inline code, a script, a shell line), and the
    /// World State it printed saved when it is this avatar's whole state.
    pub(crate) fn record_prepared(
        &self,
        event: &Event,
        files: &dyn AgentFiles,
        prepared: Option<&PreparedOutput>,
    ) -> Result<Recorded, IngestError> {
        // Events built here rather than parsed (a hook's) meet the same rule as a parsed line.
        mindrune_core::check_control_characters(
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
        let at = event.at.map_or_else(now_millis, |at| {
            (at.unix_timestamp_nanos() / 1_000_000) as Millis
        });
        if event.background {
            return self.record_detached(&agent, event, files, at);
        }
        let scrubber = self.scrubber(&agent, files)?;
        if event.output.is_some() {
            self.know_newest_output(&agent)?;
        }
        let made;
        let output = match prepared {
            Some(prepared) => prepared,
            None => {
                made = prepare_output(event, &scrubber);
                &made
            }
        };
        let call = CallInput {
            agent: &agent,
            event,
            files,
            scrubber: &scrubber,
            at,
            output,
        };
        if self.record_look(&call)? {
            return Ok(Recorded::default());
        }
        let outcome = self.measure_call(&call)?;
        let unknown = outcome_unknown(event, output.parsed.as_deref());
        let mut recorded = Recorded::default();
        // Whether the World State the call printed is this avatar's whole state, which becomes
        // its state on the dashboard.
        let avatar_s = match &event.call {
            Call::ExecuteCode { code } => {
                self.record_snippet(&call, code, outcome, &mut recorded)?
            }
            Call::ExecuteScript { script } => {
                self.record_script(&call, script, outcome, unknown, &mut recorded)?
            }
            Call::Shell { command, cwd } => self.record_shell(
                &call,
                command,
                cwd.as_deref(),
                &outcome,
                unknown,
                &mut recorded,
            )?,
        };
        if avatar_s && let Some(out) = &output.parsed {
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

    /// Forgets what was cached about an agent's file.
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
        let runs = Arc::new(classify_shell_line(
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

/// One event of a batch recorded in a write group ([`Recorder::record_together`]): the event,
/// the avatar's files, and its output when it was prepared before.
pub type GroupedEvent<'a> = (&'a Event, &'a dyn AgentFiles, Option<&'a PreparedOutput>);
