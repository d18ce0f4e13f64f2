//! Group commit: the runners' event batches that arrive together are recorded together, in one
//! write transaction of the library, and each request is answered after the commit that holds
//! its events.
//!
//! Recording one use is a few statements; committing it is most of its cost. So requests do
//! not each open a transaction: they queue their checked batch on a *lane*, a thread that takes
//! everything queued at once (what arrived while it committed the last group, or, when it was
//! idle, what arrives within [`GROUP_WAIT`]) and records it with
//! [`Recorder::record_together`]. Under load the groups grow by themselves; a lone request
//! waits at most [`GROUP_WAIT`] for company.
//!
//! Architecture invariant: an event is acknowledged only after the commit that stores it. A
//! lane answers a request only once `record_together` returned, which is after the group's
//! commit, and a group that did not commit answers every request in it with the error (the
//! runners send again; what was stored before is recognised by its event ids).
//!
//! A family's batches always go to the same lane, in the order they arrived, so its events are
//! recorded in order. SQLite has one writer, so one lane; PostgreSQL runs one lane per family
//! lock it can hold at once ([`Store::write_lanes`]).

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use mindrune_core::Event;
use mindrune_engine::{AgentFiles, SnapshotFiles};
use mindrune_engine::{GroupedEvent, IngestError, PreparedOutput, Recorded, Recorder};
use mindrune_store::{Agent, OwnerId, StoreError};
use tokio::sync::oneshot;

use crate::metrics::GroupMetrics;

/// How long an idle lane waits for a second batch before it records a lone one (PostgreSQL's
/// `commit_delay` is the same idea). Short against a request's own cost over HTTP.
pub(crate) const GROUP_WAIT: Duration = Duration::from_micros(500);
/// At most this many requests share one transaction…
const MAX_GROUP_REQUESTS: usize = 8;
/// …or this many events (a group holds the library's writer for its whole length).
const MAX_GROUP_EVENTS: usize = 2_000;

/// What recording a request's batch answered: each event's result, or the library's error for
/// the whole batch.
pub(crate) type BatchAnswer = Result<Vec<Result<Recorded, IngestError>>, StoreError>;

/// A checked event of a runner's batch: the event, the files it came with, and its output
/// prepared on the request's thread ([`Recorder::prepare`]; `None` when that failed, and the
/// lane prepares it while recording).
pub(crate) type CheckedEvent = (Event, SnapshotFiles, Option<PreparedOutput>);

/// One request's checked batch, waiting on its lane.
struct Job {
    agent: Agent,
    events: Vec<CheckedEvent>,
    answer: oneshot::Sender<Done>,
    /// The request's span, which the group's span follows from: a request's log line and the
    /// group that stored its events are found from each other.
    span: tracing::Span,
}

/// What a lane sends back to a request: the answer, and the request's own events. Freeing them
/// (their texts, files and outputs) is then the request's work, not the writer's: it was a
/// twentieth of the writer's thread under `bench serve`, and the writer is the one thread every
/// request waits for.
struct Done {
    answer: BatchAnswer,
    events: Vec<CheckedEvent>,
}

/// The lanes, started with the server.
pub struct GroupCommit {
    lanes: Vec<Sender<Job>>,
}

impl GroupCommit {
    /// Starts `lanes` lanes (at least one) recording through `recorder`; each group's size
    /// and time go to `metrics`.
    pub fn start(
        recorder: &'static Recorder<'static>,
        lanes: usize,
        metrics: GroupMetrics,
    ) -> GroupCommit {
        let lanes = (0..lanes.max(1))
            .map(|index| {
                let (queue, jobs) = mpsc::channel();
                let metrics = metrics.clone();
                std::thread::Builder::new()
                    .name(format!("mindrune-writer-{index}"))
                    .spawn(move || run_lane(recorder, &jobs, &metrics))
                    .expect("the operating system refused a thread for the library's writer");
                queue
            })
            .collect();
        GroupCommit { lanes }
    }

    /// Records an avatar's checked batch in the next group of its family's lane, and answers
    /// once that group committed.
    pub async fn record(
        &self,
        agent: Agent,
        events: Vec<CheckedEvent>,
    ) -> Result<BatchAnswer, LaneStopped> {
        let lane = &self.lanes[agent.owner.0.unsigned_abs() as usize % self.lanes.len()];
        let (answer, answered) = oneshot::channel();
        lane.send(Job {
            agent,
            events,
            answer,
            span: tracing::Span::current(),
        })
        .map_err(|_| LaneStopped)?;
        let Done { answer, events } = answered.await.map_err(|_| LaneStopped)?;
        drop(events);
        Ok(answer)
    }
}

/// A lane's thread ended (a panic while recording): the request was not answered.
#[derive(Debug)]
pub struct LaneStopped;

fn run_lane(recorder: &'static Recorder<'static>, jobs: &Receiver<Job>, metrics: &GroupMetrics) {
    while let Ok(first) = jobs.recv() {
        let group = gather(first, jobs);
        // From the group's first statement to its commit: what waiting for company cost is in
        // the requests' own time, not here.
        let started = Instant::now();
        let events: usize = group.iter().map(|job| job.events.len()).sum();
        let owners: Vec<OwnerId> = group.iter().map(|job| job.agent.owner).collect();
        // One span per group, following from each request's own.
        let span = tracing::debug_span!(
            "write_group",
            requests = group.len(),
            events,
            failed_requests = tracing::field::Empty,
        );
        for job in &group {
            span.follows_from(&job.span);
        }
        let entered = span.enter();
        let answers = {
            let batches: Vec<Vec<GroupedEvent<'_>>> = group
                .iter()
                .map(|job| {
                    job.events
                        .iter()
                        .map(|(event, files, prepared)| {
                            (event, files as &dyn AgentFiles, prepared.as_ref())
                        })
                        .collect()
                })
                .collect();
            for job in &group {
                recorder.know_agent(&job.agent);
            }
            // A panic while recording answers the group with an error and keeps the lane
            // (the group's transaction rolled back as its guard unwound).
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                recorder.record_together(&owners, &batches)
            }))
            .unwrap_or_else(|_| {
                let err = StoreError::Database(
                    "recording the batch stopped unexpectedly; nothing of it was stored, send it again"
                        .into(),
                );
                batches.iter().map(|_| Err(err.clone())).collect()
            })
        };
        let seconds = started.elapsed().as_secs_f64();
        span.record(
            "failed_requests",
            answers.iter().filter(|answer| answer.is_err()).count(),
        );
        tracing::debug!(seconds, "write group ended");
        drop(entered);
        metrics.observe(group.len(), events, seconds);
        for (job, answer) in group.into_iter().zip(answers) {
            let Job {
                events,
                answer: reply,
                ..
            } = job;
            // A request that gave up (its client went away) is no reason to stop; its events are
            // then freed here.
            let _ = reply.send(Done { answer, events });
        }
    }
}

/// The group that starts with `first`: everything queued behind it, and, when nothing was, what
/// arrives within [`GROUP_WAIT`].
fn gather(first: Job, jobs: &Receiver<Job>) -> Vec<Job> {
    let mut events = first.events.len();
    let mut group = vec![first];
    let deadline = Instant::now() + GROUP_WAIT;
    while group.len() < MAX_GROUP_REQUESTS && events < MAX_GROUP_EVENTS {
        let next = match jobs.try_recv() {
            Ok(job) => job,
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) if group.len() > 1 => break,
            Err(TryRecvError::Empty) => {
                match jobs.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                    Ok(job) => job,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
                }
            }
        };
        events += next.events.len();
        group.push(next);
    }
    group
}
