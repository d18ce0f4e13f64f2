//! The runner: runs beside one avatar's sandbox and speaks the runner protocol for it.
//!
//! `mindrune runner --server URL --token T --workspace DIR --agent NAME`
//!
//! * It relays the agent's tool calls and turn ends: the Claude Code hook in relay mode writes
//!   each into the spool's `inbox/` (see [`spool`]); the runner adds the scripts each call ran
//!   and, at a turn end, the snapshot of `bots/<agent>/`, scrubs them of the bot's secrets
//!   (see [`files`]), keeps them in `outbox/` and sends them in order: consecutive calls as one
//!   `POST /v1/events` batch, a turn end as `POST /v1/turns`.
//! * It marks the agent's start (`POST /v1/turns`, boundary `start`) and writes
//!   `family-skills/` from the answer; whenever a turn answer carries the mirror (the server
//!   sends it at most once a minute), it writes it again. If the server cannot answer at the
//!   start, `family-skills/` is emptied rather than left stale, and the start is tried again.
//! * It keeps working through server restarts: nothing leaves the outbox before the server
//!   answered 2xx, and what is sent again is recognised by the server by its event ids, so
//!   every call is stored exactly once. A server that is away is tried again after 200 ms,
//!   doubling up to 5 s. A request the server refuses (4xx) is moved to `rejected/` with the
//!   reason, never retried forever.
//! * With `--turn-every SECS` (for hosts without hooks) it marks a turn end by itself when
//!   `bots/<agent>/` changed and no turn ended for that long; with `--state-file` it sends the
//!   avatar's game state for the dashboard when it changes (see [`state`]).
//!
//! Everything is blocking and one request at a time: a runner serves one avatar, and its
//! order of delivery is the order of the agent's calls.

mod client;
mod files;
pub mod spool;
mod state;

mod deliver;
mod mirror;

pub use files::AgentFolder;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mindrune_engine::MIRROR_DIR;

use self::client::{Client, Failure};
use self::files::Fingerprint;
use self::spool::{Spool, SpoolError};
use self::state::StateWatch;
use crate::wire::{self, WhoAmI};

/// How often the inbox is looked at.
pub(crate) const DEFAULT_POLL: Duration = Duration::from_millis(200);
/// How often a running runner asks for the family's view when nothing else brought one: a
/// sibling's share or un-share reaches a bot mid-session within this (the spec: at most once a
/// minute).
pub(crate) const MIRROR_EVERY: Duration = Duration::from_secs(60);
/// The first wait after the server was found away; it doubles up to [`MAX_BACKOFF`].
pub(crate) const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// The longest wait between two tries while the server is away.
pub(crate) const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The most bytes of events one batch carries: half the server's body limit, so the batch's
/// own JSON around them never pushes it over.
pub(crate) const MAX_BATCH_BYTES: u64 = 4 * 1024 * 1024;
/// How long `--once` waits for a server that is away before it gives up: as long as one
/// connection may take. A person or a script running `--once` wants an answer, not a wait for
/// a server that may never come (the spool keeps everything for the next try).
pub(crate) const ONCE_PATIENCE: Duration = client::CONNECT_TIMEOUT;
/// How often `--turn-every` and `--state-file` look at the files.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// What a runner is started with.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// The server's base URL (`http://127.0.0.1:7878`).
    pub server: String,
    /// The runner token (`mindrune token issue AGENT`).
    pub token: String,
    /// The folder that holds `bots/<agent>/` and gets `family-skills/`.
    pub workspace: PathBuf,
    pub agent: String,
    /// The spool (`inbox/`, `outbox/`, `rejected/`).
    pub spool: PathBuf,
    /// Deliver what is spooled, mark nothing new, and stop once the outbox is empty.
    pub once: bool,
    /// Mark a turn end when `bots/<agent>/` changed and no turn ended for this long.
    pub turn_every: Option<Duration>,
    /// rs-sdk's `BotWorldState` as JSON, sent for the dashboard when it changes.
    pub state_file: Option<PathBuf>,
    /// Where `family-skills/` is written (`None`: `<workspace>/family-skills`). Several bots of
    /// one checkout each have their own (`bots/<bot>/family-skills`).
    pub mirror: Option<PathBuf>,
    /// The most events one batch carries.
    pub max_batch: usize,
    /// How often the inbox is looked at.
    pub poll: Duration,
}

impl RunnerConfig {
    /// A configuration with the defaults: long-running, batches as large as the protocol
    /// allows, no periodic turns, no state file.
    pub fn new(
        server: impl Into<String>,
        token: impl Into<String>,
        workspace: impl Into<PathBuf>,
        agent: impl Into<String>,
        spool: impl Into<PathBuf>,
    ) -> RunnerConfig {
        RunnerConfig {
            server: server.into(),
            token: token.into(),
            workspace: workspace.into(),
            agent: agent.into(),
            spool: spool.into(),
            once: false,
            turn_every: None,
            state_file: None,
            mirror: None,
            max_batch: wire::MAX_BATCH_EVENTS,
            poll: DEFAULT_POLL,
        }
    }

    /// Checks what can be checked before anything starts.
    fn check(&self) -> Result<(), RunnerError> {
        let config = |message: String| Err(RunnerError::Config(message));
        if !(self.server.starts_with("http://") || self.server.starts_with("https://")) {
            return config(format!(
                "--server must be an http:// or https:// URL, like http://127.0.0.1:7878 (got `{}`)",
                self.server
            ));
        }
        if self.token.trim().is_empty() {
            return config(
                "the runner token is empty; issue one with `mindrune token issue AGENT` and pass it with --token"
                    .into(),
            );
        }
        let plain = !self.agent.is_empty()
            && !self.agent.starts_with('.')
            && self
                .agent
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !plain {
            return config(format!(
                "--agent `{}` is not a bot's name (letters, digits, `_`, `-` and `.`; its scripts are bots/<name>/*.ts)",
                self.agent
            ));
        }
        if !self.workspace.is_dir() {
            return config(format!(
                "the workspace {} is not a directory; give the folder that holds bots/{}/ with --workspace",
                self.workspace.display(),
                self.agent
            ));
        }
        if !(1..=wire::MAX_BATCH_EVENTS).contains(&self.max_batch) {
            return config(format!(
                "--max-batch must be between 1 and {} (the protocol's limit)",
                wire::MAX_BATCH_EVENTS
            ));
        }
        Ok(())
    }
}

/// What a runner did, for its last log line and for tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Events the server answered for (recorded, duplicate or ignored).
    pub events_sent: usize,
    /// Turn boundaries the server took (the start included).
    pub turns_sent: usize,
    /// Items moved to `rejected/`.
    pub rejected: usize,
    /// Times `family-skills/` was written from an answer.
    pub mirrors_written: usize,
    /// Items still spooled when the runner stopped.
    pub pending: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Spool(#[from] SpoolError),
    #[error("{0}")]
    Config(String),
    #[error(
        "the server at {server} refused the runner token: {message}\n\nhint: issue a new token with `mindrune token issue {agent}` and start the runner with it; everything spooled stays in {spool}"
    )]
    Unauthorized {
        server: String,
        message: String,
        agent: String,
        spool: String,
    },
    #[error(
        "the runner token is for agent `{token_agent}`, but this runner was started for `{agent}`; start it with `--agent {token_agent}`, or with a token of `{agent}` (`mindrune token issue {agent}`)"
    )]
    WrongAgent { token_agent: String, agent: String },
    #[error("{server} does not answer as a MindRune server ({message}); check --server")]
    NotMindRune { server: String, message: String },
    #[error(
        "the server at {server} did not answer for {secs} s ({message}); {} spooled in {spool} — run again later",
        spooled(.pending)
    )]
    GaveUp {
        server: String,
        secs: u64,
        message: String,
        pending: usize,
        spool: String,
    },
}

/// `1 item stays` / `3 items stay`, for [`RunnerError::GaveUp`].
fn spooled(pending: &usize) -> String {
    match *pending {
        1 => "1 item stays".to_string(),
        n => format!("{n} items stay"),
    }
}

/// Why a conversation with the server stopped early.
enum Halt {
    /// The server is away: try again after the backoff.
    Away(String),
    /// The runner cannot go on.
    Fatal(RunnerError),
}

impl From<SpoolError> for Halt {
    fn from(err: SpoolError) -> Halt {
        Halt::Fatal(err.into())
    }
}

impl From<RunnerError> for Halt {
    fn from(err: RunnerError) -> Halt {
        Halt::Fatal(err)
    }
}

/// Sets a flag on Ctrl-C or SIGTERM, so the runner finishes the request in flight and stops
/// (what is spooled stays spooled). A second signal ends the process at once.
pub fn stop_on_signal() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let spawned = std::thread::Builder::new()
        .name("mindrune-signals".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(crate::app::shutdown_signal());
            flag.store(true, Ordering::SeqCst);
            runtime.block_on(crate::app::shutdown_signal());
            std::process::exit(130);
        });
    if let Err(err) = spawned {
        tracing::warn!("cannot watch for Ctrl-C ({err}); stop the runner with SIGKILL");
    }
    stop
}

/// Runs a runner until `stop` is set (or, with `--once`, until everything spooled is
/// delivered).
pub fn run(config: &RunnerConfig, stop: &AtomicBool) -> Result<Summary, RunnerError> {
    config.check()?;
    let spool = Spool::open(&config.spool)?;
    Runner::new(config, spool, stop).run()
}

/// The wait between tries while the server is away.
#[derive(Debug, Default)]
struct Backoff {
    delay: Option<Duration>,
    until: Option<Instant>,
}

impl Backoff {
    fn failed(&mut self) {
        let delay = self
            .delay
            .map_or(FIRST_BACKOFF, |d| (d * 2).min(MAX_BACKOFF));
        self.delay = Some(delay);
        self.until = Some(Instant::now() + delay);
    }

    fn reset(&mut self) {
        *self = Backoff::default();
    }

    fn waiting(&self) -> bool {
        self.until.is_some_and(|until| Instant::now() < until)
    }
}

struct Runner<'a> {
    config: &'a RunnerConfig,
    spool: Spool,
    client: Client,
    stop: &'a AtomicBool,
    mirror_dir: PathBuf,
    /// The server answered `whoami` for this runner's agent.
    verified: bool,
    /// The start boundary went through (always true with `--once`, which marks none).
    started: bool,
    /// `family-skills/` was emptied because the server could not answer at the start.
    mirror_emptied: bool,
    /// A mirror answer could not be written in full: ask `/v1/mirror` again.
    mirror_wanted: bool,
    /// When `family-skills/` was last written from an answer (or the runner started).
    last_mirror: Instant,
    backoff: Backoff,
    /// Since when the server is away, and why.
    away: Option<(Instant, String)>,
    /// When the last turn boundary was marked, and what `bots/<agent>/` looked like then.
    boundary: (Instant, Fingerprint),
    last_look: Instant,
    state: Option<StateWatch>,
    summary: Summary,
}

impl<'a> Runner<'a> {
    fn new(config: &'a RunnerConfig, spool: Spool, stop: &'a AtomicBool) -> Runner<'a> {
        let folder = AgentFolder {
            workspace: &config.workspace,
            agent: &config.agent,
        };
        Runner {
            config,
            client: Client::new(&config.server, &config.token),
            stop,
            mirror_dir: config
                .mirror
                .clone()
                .unwrap_or_else(|| config.workspace.join(MIRROR_DIR)),
            verified: false,
            started: config.once,
            mirror_emptied: false,
            mirror_wanted: false,
            last_mirror: Instant::now(),
            backoff: Backoff::default(),
            away: None,
            boundary: (Instant::now(), folder.fingerprint()),
            last_look: Instant::now(),
            state: config
                .state_file
                .as_deref()
                .map(|path| StateWatch::new(path, spool.root())),
            spool,
            summary: Summary::default(),
        }
    }

    fn folder(&self) -> AgentFolder<'a> {
        AgentFolder {
            workspace: &self.config.workspace,
            agent: &self.config.agent,
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    fn run(mut self) -> Result<Summary, RunnerError> {
        tracing::info!(
            agent = %self.config.agent,
            server = %self.client.base(),
            spool = %self.spool.root().display(),
            "runner started"
        );
        let bot_dir = self.config.workspace.join("bots").join(&self.config.agent);
        if !bot_dir.is_dir() {
            // Every turn boundary sends the folder's files; without the folder, each one tells
            // the server that all of the agent's scripts are gone.
            tracing::warn!(
                "{} does not exist: turn boundaries will report every script of `{}` gone until it does; is --workspace right?",
                bot_dir.display(),
                self.config.agent
            );
        }
        if let Some(watch) = &mut self.state {
            watch.poll();
        }
        self.note_hook_failures();
        while !self.stopping() {
            if self.config.once && !self.verified {
                // `--once` checks its token before anything else: a bad token is a clear
                // error at once, even with nothing spooled, and before the inbox is touched.
                if !self.backoff.waiting() {
                    match self.verify() {
                        Ok(()) => self.back(),
                        Err(Halt::Away(message)) => self.away(message),
                        Err(Halt::Fatal(err)) => return Err(err),
                    }
                }
                if !self.verified {
                    self.give_up_after_patience()?;
                    self.pause(self.config.poll);
                    continue;
                }
            }
            self.take_inbox()?;
            if self.last_look.elapsed() >= LOOK_EVERY {
                self.last_look = Instant::now();
                self.maybe_mark_turn()?;
                if let Some(watch) = &mut self.state {
                    watch.poll();
                }
                // New inbox items (a turn end just marked) go out in this round.
                self.take_inbox()?;
            }
            if self.config.once && self.all_done()? {
                break;
            }
            if !self.backoff.waiting() {
                self.client.note_backlog(self.pending()?);
                self.note_hook_failures();
                match self.talk() {
                    Ok(()) => self.back(),
                    Err(Halt::Away(message)) => self.away(message),
                    Err(Halt::Fatal(err)) => return Err(err),
                }
            }
            if self.config.once {
                if self.all_done()? {
                    break;
                }
                self.give_up_after_patience()?;
            }
            self.pause(self.config.poll);
        }
        self.summary.pending = self.pending()?;
        tracing::info!(
            events = self.summary.events_sent,
            turns = self.summary.turns_sent,
            rejected = self.summary.rejected,
            mirrors = self.summary.mirrors_written,
            pending = self.summary.pending,
            "runner stopped"
        );
        Ok(self.summary)
    }

    /// What the next requests report of the hook's failures in the last day.
    fn note_hook_failures(&self) {
        self.client.note_hook_failures(spool::hook_failures_since(
            self.spool.root(),
            mindrune_engine::now_millis() - 24 * 3_600_000,
        ));
    }

    /// `--once`: an error once the server has been away for [`ONCE_PATIENCE`].
    fn give_up_after_patience(&self) -> Result<(), RunnerError> {
        if let Some((since, message)) = &self.away
            && since.elapsed() >= ONCE_PATIENCE
        {
            return Err(RunnerError::GaveUp {
                server: self.client.base().to_string(),
                secs: since.elapsed().as_secs(),
                message: message.clone(),
                pending: self.pending()?,
                spool: self.spool.root().display().to_string(),
            });
        }
        Ok(())
    }

    /// Sleeps for `total`, waking early when asked to stop.
    fn pause(&self, total: Duration) {
        let end = Instant::now() + total;
        while !self.stopping() {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
    }

    fn pending(&self) -> Result<usize, RunnerError> {
        Ok(self.spool.inbox_items()?.len() + self.spool.outbox_items()?.len())
    }

    /// Nothing is left to deliver (`--once`).
    fn all_done(&self) -> Result<bool, RunnerError> {
        Ok(self.pending()? == 0
            && !self.mirror_wanted
            && self.state.as_ref().is_none_or(|w| w.pending().is_none()))
    }

    fn back(&mut self) {
        if let Some((since, _)) = self.away.take() {
            tracing::info!(
                "the server answers again after {} s; delivering what was spooled",
                since.elapsed().as_secs()
            );
        }
        self.backoff.reset();
    }

    fn away(&mut self, message: String) {
        if self.away.is_none() {
            tracing::warn!(
                "the server is away ({message}); everything stays spooled in {} and is sent when it answers again",
                self.spool.root().display()
            );
            self.away = Some((Instant::now(), message));
        } else {
            tracing::debug!("the server is still away: {message}");
        }
        if !self.started && !self.mirror_emptied {
            self.empty_mirror();
        }
        self.backoff.failed();
    }

    /// Everything the runner says to the server in one round, in order: who it is, what is
    /// spooled (oldest first), the start, a mirror still owed, the game state.
    fn talk(&mut self) -> Result<(), Halt> {
        if !self.verified {
            self.verify()?;
        }
        self.deliver_outbox()?;
        if !self.started && !self.stopping() {
            self.start()?;
        }
        // A starting session asked for a fresh view (its hook waits for it), or none came for a
        // minute (a sibling may have shared or un-shared meanwhile).
        let session = spool::fresh_mirror_asked(self.spool.root());
        let due = self.started && !self.config.once && self.last_mirror.elapsed() >= MIRROR_EVERY;
        if (self.mirror_wanted || session.is_some() || due) && !self.stopping() {
            self.fetch_mirror()?;
            if let Some(stamp) = session {
                self.keep_instructions();
                spool::answer_fresh_mirror(self.spool.root(), &stamp);
            }
        }
        if !self.stopping() {
            self.send_state()?;
        }
        Ok(())
    }

    /// A failure that is not a refusal of this one request.
    fn halt(&self, failure: Failure) -> Halt {
        match failure {
            Failure::Away(message) => Halt::Away(message),
            Failure::Unauthorized(message) => Halt::Fatal(RunnerError::Unauthorized {
                server: self.client.base().to_string(),
                message,
                agent: self.config.agent.clone(),
                spool: self.spool.root().display().to_string(),
            }),
            refused @ Failure::Refused { .. } => Halt::Fatal(RunnerError::NotMindRune {
                server: self.client.base().to_string(),
                message: refused.to_string(),
            }),
        }
    }

    /// Checks, once, that the token is this agent's: events sent with another avatar's token
    /// would all be refused.
    fn verify(&mut self) -> Result<(), Halt> {
        let who: WhoAmI = self
            .client
            .get("/v1/whoami")
            .map_err(|failure| self.halt(failure))?;
        if who.agent != self.config.agent {
            return Err(Halt::Fatal(RunnerError::WrongAgent {
                token_agent: who.agent,
                agent: self.config.agent.clone(),
            }));
        }
        self.verified = true;
        Ok(())
    }
}

/// The default spool of an agent's runner: `<home>/runner/<agent>/`.
pub fn default_spool(home: &Path, agent: &str) -> PathBuf {
    home.join("runner").join(agent)
}

#[cfg(test)]
mod tests {
    use super::files::OutboxTurn;
    use super::*;
    use crate::wire::WireEvent;
    use mindrune_engine::held_keys;

    #[test]
    fn the_backoff_doubles_from_200_ms_to_5_s() {
        let mut backoff = Backoff::default();
        let mut delays = Vec::new();
        for _ in 0..8 {
            backoff.failed();
            delays.push(backoff.delay.unwrap().as_millis());
        }
        assert_eq!(delays, vec![200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        assert!(backoff.waiting());
        backoff.reset();
        assert!(!backoff.waiting());
    }

    /// A runner over a workspace with `bots/buzz/`, its spool inside the temp dir, no server.
    fn offline(dir: &tempfile::TempDir) -> RunnerConfig {
        std::fs::create_dir_all(dir.path().join("ws/bots/buzz")).unwrap();
        std::fs::write(
            dir.path().join("ws/bots/buzz/chop.ts"),
            "await bot.chop();\n",
        )
        .unwrap();
        RunnerConfig::new(
            "http://127.0.0.1:1",
            "tok",
            dir.path().join("ws"),
            "buzz",
            dir.path().join("spool"),
        )
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn inbox_items_move_to_the_outbox_in_order_with_their_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let config = offline(&dir);
        let stop = AtomicBool::new(false);
        let mut made = Vec::new();
        for n in 0..3 {
            let event = mindrune_core::parse_line(
                &serde_json::json!({"id": format!("c{n}"), "agent": "buzz", "command": "bun bots/buzz/chop.ts", "ok": true}).to_string(),
            )
            .unwrap();
            made.push(spool::relay_event(&config.spool, &event).unwrap());
        }
        made.push(spool::relay_turn_end(&config.spool).unwrap());
        let mut runner = Runner::new(&config, Spool::open(&config.spool).unwrap(), &stop);
        runner.take_inbox().unwrap();
        assert!(names(&config.spool.join(spool::INBOX)).is_empty());
        let expected: Vec<String> = made
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names(&config.spool.join(spool::OUTBOX)), expected);
        let first: WireEvent = serde_json::from_slice(
            &std::fs::read(config.spool.join(spool::OUTBOX).join(&expected[0])).unwrap(),
        )
        .unwrap();
        assert!(first.files.contains_key("bots/buzz/chop.ts"));
        let turn: OutboxTurn = serde_json::from_slice(
            &std::fs::read(config.spool.join(spool::OUTBOX).join(&expected[3])).unwrap(),
        )
        .unwrap();
        assert!(turn.files.contains_key("bots/buzz/chop.ts"));
    }

    #[test]
    fn an_item_in_both_inbox_and_outbox_after_a_crash_is_kept_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = offline(&dir);
        let stop = AtomicBool::new(false);
        let path = spool::relay_turn_end(&config.spool).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // The runner wrote the outbox copy and died before deleting the inbox file.
        let outbox = config.spool.join(spool::OUTBOX);
        std::fs::create_dir_all(&outbox).unwrap();
        std::fs::write(outbox.join(&name), br#"{"files":{}}"#).unwrap();
        let mut runner = Runner::new(&config, Spool::open(&config.spool).unwrap(), &stop);
        runner.take_inbox().unwrap();
        assert!(!path.exists());
        assert_eq!(names(&outbox), vec![name.clone()]);
        assert_eq!(
            std::fs::read(outbox.join(&name)).unwrap(),
            br#"{"files":{}}"#,
            "the outbox copy made before the crash is the one sent"
        );
    }

    #[test]
    fn a_corrupt_inbox_item_moves_to_rejected_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let config = offline(&dir);
        let stop = AtomicBool::new(false);
        let inbox = config.spool.join(spool::INBOX);
        std::fs::create_dir_all(&inbox).unwrap();
        std::fs::write(
            inbox.join("0000000000001-0000000001-000000-event.json"),
            "{half an ev",
        )
        .unwrap();
        std::fs::write(inbox.join("notes.txt"), "hello").unwrap();
        let mut runner = Runner::new(&config, Spool::open(&config.spool).unwrap(), &stop);
        runner.take_inbox().unwrap();
        assert_eq!(runner.summary.rejected, 2);
        let rejected = config.spool.join(spool::REJECTED);
        assert_eq!(
            names(&rejected),
            vec![
                "0000000000001-0000000001-000000-event.json",
                "0000000000001-0000000001-000000-event.json.error.txt",
                "notes.txt",
                "notes.txt.error.txt"
            ]
        );
        let note = std::fs::read_to_string(
            rejected.join("0000000000001-0000000001-000000-event.json.error.txt"),
        )
        .unwrap();
        assert!(
            note.starts_with("inbox item 0000000000001-0000000001-000000-event.json: not an event of the event contract"),
            "{note}"
        );
        let note = std::fs::read_to_string(rejected.join("notes.txt.error.txt")).unwrap();
        assert!(note.contains("not a name the hook writes"), "{note}");
        assert!(names(&inbox).is_empty());
    }

    /// What a fake server was asked: path and body, in order.
    type Asked = Arc<std::sync::Mutex<Vec<(String, serde_json::Value)>>>;

    /// A tiny HTTP/1.1 server on loopback that answers each request with `answer(path, body)`,
    /// so the runner's handling of answers a real server rarely gives can be tested.
    fn fake_server(
        answer: impl Fn(&str, &serde_json::Value) -> (u16, serde_json::Value) + Send + Sync + 'static,
    ) -> (String, Asked) {
        use std::io::{BufRead as _, BufReader, Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let asked: Asked = Arc::default();
        let log = asked.clone();
        let answer = Arc::new(answer);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (log, answer) = (log.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut writer = stream;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let path = line.split(' ').nth(1).unwrap_or("").to_string();
                        let mut length = 0;
                        loop {
                            let mut header = String::new();
                            reader.read_line(&mut header).unwrap();
                            let header = header.trim_end();
                            if header.is_empty() {
                                break;
                            }
                            if let Some((name, value)) = header.split_once(':')
                                && name.eq_ignore_ascii_case("content-length")
                            {
                                length = value.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let body: serde_json::Value =
                            serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
                        let (status, reply) = answer(&path, &body);
                        log.lock().unwrap().push((path, body));
                        let reply = reply.to_string();
                        write!(
                            writer,
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{reply}",
                            reply.len()
                        )
                        .unwrap();
                    }
                });
            }
        });
        (url, asked)
    }

    fn whoami() -> (u16, serde_json::Value) {
        (
            200,
            serde_json::json!({"agent": "buzz", "api_version": "v1"}),
        )
    }

    /// Answers every event of a batch as recorded, unless one has the id `bad`: then the whole
    /// batch is refused, naming that event when `name_it`.
    fn events_refusing_bad(body: &serde_json::Value, name_it: bool) -> (u16, serde_json::Value) {
        let events = body["events"].as_array().unwrap();
        if let Some(index) = events.iter().position(|e| e["event"]["id"] == "bad") {
            let mut error =
                serde_json::json!({"code": "bad_request", "message": "`kind` is wrong"});
            if name_it {
                error["field"] = format!("events[{index}].event.kind").into();
            }
            return (400, serde_json::json!({ "error": error }));
        }
        let results: Vec<_> = events
            .iter()
            .map(|e| serde_json::json!({"id": e["event"]["id"], "status": "recorded"}))
            .collect();
        (200, serde_json::json!({ "results": results }))
    }

    /// Spools shell events with these ids and runs the runner once against `url`.
    fn deliver_once(dir: &tempfile::TempDir, url: &str, ids: &[&str]) -> Summary {
        let mut config = offline(dir);
        config.server = url.to_string();
        config.once = true;
        for id in ids {
            let event = mindrune_core::parse_line(
                &serde_json::json!({"id": id, "agent": "buzz", "command": "bun bots/buzz/chop.ts", "ok": true}).to_string(),
            )
            .unwrap();
            spool::relay_event(&config.spool, &event).unwrap();
        }
        run(&config, &AtomicBool::new(false)).unwrap()
    }

    /// The ids of the events the server took (answered 200), in order.
    fn taken(asked: &Asked) -> Vec<String> {
        let mut ids = Vec::new();
        for (path, body) in asked.lock().unwrap().iter() {
            if path != "/v1/events" {
                continue;
            }
            let events = body["events"].as_array().unwrap();
            if events.iter().any(|e| e["event"]["id"] == "bad") {
                continue;
            }
            ids.extend(
                events
                    .iter()
                    .map(|e| e["event"]["id"].as_str().unwrap().to_string()),
            );
        }
        ids
    }

    #[test]
    fn a_refused_batch_loses_only_the_event_the_server_named() {
        let (url, asked) = fake_server(|path, body| match path {
            "/v1/whoami" => whoami(),
            _ => events_refusing_bad(body, true),
        });
        let dir = tempfile::tempdir().unwrap();
        let summary = deliver_once(&dir, &url, &["a", "b", "bad", "c", "d"]);
        assert_eq!(taken(&asked), vec!["a", "b", "c", "d"]);
        assert_eq!(summary.rejected, 1);
        assert_eq!(summary.events_sent, 4);
        let rejected = names(&dir.path().join("spool").join(spool::REJECTED));
        assert_eq!(rejected.len(), 2, "the item and its reason: {rejected:?}");
        let note = std::fs::read_to_string(
            dir.path()
                .join("spool")
                .join(spool::REJECTED)
                .join(&rejected[1]),
        )
        .unwrap();
        assert!(
            note.contains("events[2].event.kind: `kind` is wrong"),
            "{note}"
        );
    }

    #[test]
    fn a_refused_batch_that_names_no_event_is_split_until_the_bad_one_is_alone() {
        let (url, asked) = fake_server(|path, body| match path {
            "/v1/whoami" => whoami(),
            _ => events_refusing_bad(body, false),
        });
        let dir = tempfile::tempdir().unwrap();
        let ids = ["a", "b", "c", "d", "e", "bad", "f", "g"];
        let summary = deliver_once(&dir, &url, &ids);
        let mut took = taken(&asked);
        took.sort();
        assert_eq!(
            took,
            vec!["a", "b", "c", "d", "e", "f", "g"],
            "each taken once"
        );
        assert_eq!(summary.rejected, 1);
    }

    #[test]
    fn a_server_away_for_a_while_gets_everything_when_it_is_back() {
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = calls.clone();
        let (url, asked) = fake_server(move |path, body| {
            // The first three requests find the server restarting.
            if seen.fetch_add(1, Ordering::SeqCst) < 3 {
                return (
                    503,
                    serde_json::json!({"error": {"code": "unavailable", "message": "starting"}}),
                );
            }
            match path {
                "/v1/whoami" => whoami(),
                _ => events_refusing_bad(body, true),
            }
        });
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let summary = deliver_once(&dir, &url, &["a", "b"]);
        assert_eq!(taken(&asked), vec!["a", "b"]);
        assert_eq!(summary.rejected, 0);
        // 200 + 400 + 800 ms of backoff.
        assert!(started.elapsed() >= Duration::from_millis(1400));
    }

    #[test]
    fn a_mirror_answer_missing_content_the_runner_lacks_is_asked_for_in_full() {
        let (url, asked) = fake_server(|path, body| match path {
            "/v1/whoami" => whoami(),
            // The server thinks the runner holds INDEX.md at key k1 and leaves it out.
            "/v1/turns" => (
                200,
                serde_json::json!({"report": {}, "mirror": {"files": [
                    {"path": "INDEX.md", "key": "k1"},
                    {"path": "pickles/chop.ts", "key": "k2", "content": "await bot.chop();\n"}
                ]}}),
            ),
            "/v1/mirror" => {
                assert_eq!(body, &serde_json::json!({"have": {}}), "the whole mirror");
                (
                    200,
                    serde_json::json!({"files": [
                        {"path": "INDEX.md", "key": "k1", "content": "# index\n"},
                        {"path": "pickles/chop.ts", "key": "k2", "content": "await bot.chop();\n"}
                    ]}),
                )
            }
            _ => (
                404,
                serde_json::json!({"error": {"code": "not_found", "message": "?"}}),
            ),
        });
        let dir = tempfile::tempdir().unwrap();
        let mut config = offline(&dir);
        config.server = url;
        config.once = true;
        spool::relay_turn_end(&config.spool).unwrap();
        let summary = run(&config, &AtomicBool::new(false)).unwrap();
        assert_eq!(summary.turns_sent, 1);
        assert_eq!(summary.mirrors_written, 1);
        let mirror = dir.path().join("ws").join(MIRROR_DIR);
        assert_eq!(
            std::fs::read_to_string(mirror.join("INDEX.md")).unwrap(),
            "# index\n"
        );
        assert_eq!(
            held_keys(&mirror),
            [
                ("INDEX.md".to_string(), "k1".to_string()),
                ("pickles/chop.ts".to_string(), "k2".to_string())
            ]
            .into_iter()
            .collect()
        );
        let paths: Vec<String> = asked
            .lock()
            .unwrap()
            .iter()
            .map(|(p, _)| p.clone())
            .collect();
        assert_eq!(paths, vec!["/v1/whoami", "/v1/turns", "/v1/mirror"]);
        // The turn carried the folder's snapshot and what the mirror held (nothing yet).
        let turns = asked.lock().unwrap()[1].1.clone();
        assert_eq!(turns["boundary"], "turn_end");
        assert!(
            turns["files"]["bots/buzz/chop.ts"]["text"].is_string(),
            "{turns}"
        );
        assert_eq!(turns["mirror"], serde_json::json!({"have": {}}));
    }

    #[test]
    fn a_bad_configuration_is_refused_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let stop = AtomicBool::new(false);
        let base = RunnerConfig::new(
            "http://127.0.0.1:1",
            "tok",
            dir.path(),
            "buzz",
            dir.path().join("spool"),
        );
        let mut config = base.clone();
        config.server = "127.0.0.1:7878".into();
        let err = run(&config, &stop).unwrap_err();
        assert!(err.to_string().contains("http://"), "{err}");
        let mut config = base.clone();
        config.agent = "../etc".into();
        assert!(
            run(&config, &stop)
                .unwrap_err()
                .to_string()
                .contains("not a bot's name")
        );
        let mut config = base.clone();
        config.workspace = dir.path().join("missing");
        assert!(
            run(&config, &stop)
                .unwrap_err()
                .to_string()
                .contains("--workspace")
        );
        assert!(!dir.path().join("spool").exists(), "nothing was created");
    }
}
