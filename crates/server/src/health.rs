//! What this server process has seen since it started, for the operator's console: events
//! and errors per minute over the last hour, requests refused and why, and each runner's last
//! contact with its spool backlog.
//!
//! It lives in memory, a ring of per-minute buckets and a few maps behind one mutex, updated
//! by the handlers and the router's middleware; `serve` saves it to the library every few
//! seconds when it changed and on shutdown ([`Health::changes`]), and a starting server reads
//! it back ([`Health::restore`]), so a restart does not wipe what the operator was looking at.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use mindrune_engine::RunnerSeen;
use mindrune_store::{AgentId, Millis, OwnerId};
use serde::{Deserialize, Serialize};

/// How many minutes the ring keeps: the console shows the last hour.
pub(crate) const MINUTES: usize = 60;

const MILLIS_PER_MINUTE: Millis = 60_000;

/// The most refusal reasons counted apart. Reasons name the path, and a client can make up
/// paths without end: past this many, a new one is counted under its status with "(other
/// paths)", so the counters and their saved copy stay small.
const MOST_REASONS: usize = 200;

/// One minute's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Minute {
    /// Minutes since 1970-01-01 (UTC).
    pub minute: i64,
    /// Events recorded, found duplicate or ignored.
    pub events: u64,
    /// Events refused one by one, and answers that failed on the server's side (5xx).
    pub errors: u64,
}

/// A runner's latest request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerContact {
    pub owner: OwnerId,
    pub agent: String,
    pub at: Millis,
    /// Items its spool still held when it sent the request (`None`: a runner too old to say).
    pub backlog: Option<u64>,
    /// Failures its avatar's Claude Code hooks noted in the last day (`None`: not reported).
    pub hook_failures: Option<u64>,
}

/// The server's health as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthView {
    /// When this server process started.
    pub started_at: Millis,
    /// Since when the counters count: the first start of a server on this library whose
    /// counts were kept since (`started_at` when none were).
    pub counting_since: Millis,
    /// The last [`MINUTES`] minutes, oldest first, every minute present (zero when quiet).
    pub minutes: Vec<Minute>,
    /// Refused requests since the server started, by reason (`401 Unauthorized`), most first.
    pub refused: Vec<(String, u64)>,
    /// Runners by their latest contact, latest first.
    pub runners: Vec<(AgentId, RunnerContact)>,
}

impl HealthView {
    /// Events per second over the window.
    pub fn events_per_second(&self) -> f64 {
        let events: u64 = self.minutes.iter().map(|m| m.events).sum();
        events as f64 / (self.minutes.len().max(1) as f64 * 60.0)
    }

    pub fn errors(&self) -> u64 {
        self.minutes.iter().map(|m| m.errors).sum()
    }
}

#[derive(Default)]
struct Counts {
    counting_since: Millis,
    /// Newest last; never longer than [`MINUTES`].
    ring: VecDeque<Minute>,
    refused: BTreeMap<String, u64>,
    runners: BTreeMap<AgentId, RunnerContact>,
}

/// The counters as the library keeps them (JSON).
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    counting_since: Millis,
    minutes: Vec<Minute>,
    refused: BTreeMap<String, u64>,
    runners: Vec<SavedRunner>,
}

#[derive(Debug, Serialize, Deserialize)]
struct SavedRunner {
    agent_id: i64,
    owner_id: i64,
    agent: String,
    at: Millis,
    backlog: Option<u64>,
    hook_failures: Option<u64>,
}

impl Counts {
    fn minute(&mut self, now: Millis) -> &mut Minute {
        let minute = now.div_euclid(MILLIS_PER_MINUTE);
        // A clock that stepped back counts into the newest bucket rather than reorder them.
        if self.ring.back().is_none_or(|last| last.minute < minute) {
            self.ring.push_back(Minute {
                minute,
                ..Minute::default()
            });
            while self.ring.len() > MINUTES {
                self.ring.pop_front();
            }
        }
        self.ring.back_mut().expect("a bucket was just made")
    }
}

/// The counters, shared by every handler.
pub struct Health {
    started_at: Millis,
    counts: Mutex<Counts>,
    /// Something was counted since the last [`Health::changes`].
    changed: AtomicBool,
}

impl Health {
    pub fn new(started_at: Millis) -> Health {
        Health {
            started_at,
            counts: Mutex::new(Counts {
                counting_since: started_at,
                ..Counts::default()
            }),
            changed: AtomicBool::new(false),
        }
    }

    /// Takes back the counters a server saved (`body`, from [`Health::changes`]): they count
    /// on from there. A body that cannot be read changes nothing and says why.
    pub fn restore(&self, body: &str) -> Result<(), serde_json::Error> {
        let saved: Saved = serde_json::from_str(body)?;
        let mut counts = self.counts();
        counts.counting_since = saved.counting_since.min(self.started_at);
        let mut minutes = saved.minutes;
        minutes.sort_by_key(|m| m.minute);
        minutes.dedup_by_key(|m| m.minute);
        let skip = minutes.len().saturating_sub(MINUTES);
        counts.ring = minutes.into_iter().skip(skip).collect();
        counts.refused = saved.refused.into_iter().take(MOST_REASONS).collect();
        counts.runners = saved
            .runners
            .into_iter()
            .map(|r| {
                (
                    AgentId(r.agent_id),
                    RunnerContact {
                        owner: OwnerId(r.owner_id),
                        agent: r.agent,
                        at: r.at,
                        backlog: r.backlog,
                        hook_failures: r.hook_failures,
                    },
                )
            })
            .collect();
        Ok(())
    }

    /// The counters to save, when something was counted since the last call (JSON for
    /// [`Health::restore`]); `None` when nothing changed.
    pub fn changes(&self) -> Option<String> {
        if !self.changed.swap(false, Ordering::AcqRel) {
            return None;
        }
        let counts = self.counts();
        let saved = Saved {
            counting_since: counts.counting_since,
            minutes: counts.ring.iter().copied().collect(),
            refused: counts.refused.clone(),
            runners: counts
                .runners
                .iter()
                .map(|(id, c)| SavedRunner {
                    agent_id: id.0,
                    owner_id: c.owner.0,
                    agent: c.agent.clone(),
                    at: c.at,
                    backlog: c.backlog,
                    hook_failures: c.hook_failures,
                })
                .collect(),
        };
        drop(counts);
        // Plain numbers, strings and maps with string keys: this cannot fail.
        serde_json::to_string(&saved).ok()
    }

    /// Marks the counters changed, so the next [`Health::changes`] saves them (also after a
    /// save that failed).
    pub fn touch(&self) {
        self.changed.store(true, Ordering::Release);
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Counters only: one left half-updated by a panic is still worth showing.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A batch's events: those taken (recorded, duplicate, ignored) and those refused.
    pub fn note_events(&self, now: Millis, taken: u64, refused: u64) {
        self.touch();
        let mut counts = self.counts();
        let minute = counts.minute(now);
        minute.events += taken;
        minute.errors += refused;
    }

    /// An answer that failed on the server's side.
    pub fn note_error(&self, now: Millis) {
        self.touch();
        self.counts().minute(now).errors += 1;
    }

    /// A request refused, with why (`413 Payload Too Large`).
    pub fn note_refused(&self, reason: String) {
        self.touch();
        let mut counts = self.counts();
        let reason =
            if counts.refused.len() >= MOST_REASONS && !counts.refused.contains_key(&reason) {
                // `401 Unauthorized (dashboard: /x)` → `401 Unauthorized (other paths)`.
                let status = reason.split(" (").next().unwrap_or(&reason);
                format!("{status} (other paths)")
            } else {
                reason
            };
        *counts.refused.entry(reason).or_default() += 1;
    }

    /// A runner's request.
    pub fn note_runner(&self, agent: AgentId, contact: RunnerContact) {
        self.touch();
        self.counts().runners.insert(agent, contact);
    }

    /// The last request of each of `owner`'s runners, as the attention list reads them.
    pub fn runners_seen(&self, owner: OwnerId) -> Vec<RunnerSeen> {
        self.counts()
            .runners
            .iter()
            .filter(|(_, contact)| contact.owner == owner)
            .map(|(agent, contact)| RunnerSeen {
                agent: *agent,
                at: contact.at,
                backlog: contact.backlog,
            })
            .collect()
    }

    /// The counts as of `now`.
    pub fn view(&self, now: Millis) -> HealthView {
        let counts = self.counts();
        let newest = now.div_euclid(MILLIS_PER_MINUTE);
        let minutes = (newest - MINUTES as i64 + 1..=newest)
            .map(|minute| {
                counts
                    .ring
                    .iter()
                    .find(|m| m.minute == minute)
                    .copied()
                    .unwrap_or(Minute {
                        minute,
                        ..Minute::default()
                    })
            })
            .collect();
        let mut refused: Vec<(String, u64)> = counts
            .refused
            .iter()
            .map(|(reason, n)| (reason.clone(), *n))
            .collect();
        refused.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut runners: Vec<(AgentId, RunnerContact)> = counts
            .runners
            .iter()
            .map(|(id, contact)| (*id, contact.clone()))
            .collect();
        runners.sort_by(|a, b| b.1.at.cmp(&a.1.at).then_with(|| a.0.0.cmp(&b.0.0)));
        HealthView {
            started_at: self.started_at,
            counting_since: counts.counting_since,
            minutes,
            refused,
            runners,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Millis = MILLIS_PER_MINUTE;

    #[test]
    fn the_ring_keeps_the_last_hour_minute_by_minute() {
        let health = Health::new(0);
        health.note_events(10 * MIN, 5, 1);
        health.note_events(10 * MIN + 30_000, 2, 0);
        health.note_error(11 * MIN);
        let view = health.view(11 * MIN + 1);
        assert_eq!(view.minutes.len(), MINUTES);
        let last = view.minutes[MINUTES - 1];
        assert_eq!((last.minute, last.events, last.errors), (11, 0, 1));
        let before = view.minutes[MINUTES - 2];
        assert_eq!((before.minute, before.events, before.errors), (10, 7, 1));
        assert_eq!(view.errors(), 2);
        assert!((view.events_per_second() - 7.0 / 3600.0).abs() < 1e-12);
        // An hour later the old minutes have left the window.
        let later = health.view(75 * MIN);
        assert_eq!(later.errors(), 0);
        assert_eq!(later.events_per_second(), 0.0);
    }

    #[test]
    fn the_ring_never_grows_past_an_hour() {
        let health = Health::new(0);
        for minute in 0..500 {
            health.note_events(minute * MIN, 1, 0);
        }
        assert_eq!(health.counts().ring.len(), MINUTES);
        assert_eq!(
            health
                .view(499 * MIN)
                .minutes
                .iter()
                .map(|m| m.events)
                .sum::<u64>(),
            60
        );
    }

    #[test]
    fn saved_counters_come_back_in_a_restarted_server_and_count_on() {
        let before = Health::new(0);
        assert_eq!(before.changes(), None, "nothing counted, nothing to save");
        before.note_events(10 * MIN, 5, 1);
        before.note_refused("401 Unauthorized (runner API: /v1/whoami)".into());
        before.note_runner(
            AgentId(4),
            RunnerContact {
                owner: OwnerId(1),
                agent: "buzz".into(),
                at: 10 * MIN,
                backlog: Some(2),
                hook_failures: Some(1),
            },
        );
        let saved = before.changes().expect("counted: something to save");
        assert_eq!(before.changes(), None, "saved once until more is counted");

        let after = Health::new(20 * MIN);
        after.restore(&saved).unwrap();
        after.note_events(20 * MIN, 1, 0);
        let view = after.view(20 * MIN);
        assert_eq!(view.started_at, 20 * MIN);
        assert_eq!(view.counting_since, 0);
        assert_eq!(view.minutes.iter().map(|m| m.events).sum::<u64>(), 6);
        assert_eq!(view.errors(), 1);
        assert_eq!(
            view.refused,
            [("401 Unauthorized (runner API: /v1/whoami)".to_string(), 1)]
        );
        assert_eq!(view.runners[0].1.backlog, Some(2));
        assert!(after.restore("{not json").is_err());
    }

    #[test]
    fn made_up_paths_cannot_grow_the_refusals_past_their_bound() {
        let health = Health::new(0);
        for n in 0..10_000 {
            health.note_refused(format!("404 Not Found (dashboard: /x{n})"));
        }
        let view = health.view(0);
        assert_eq!(view.refused.len(), MOST_REASONS + 1);
        assert_eq!(
            view.refused[0],
            (
                "404 Not Found (other paths)".to_string(),
                10_000 - MOST_REASONS as u64
            )
        );
    }

    #[test]
    fn refusals_count_by_reason_and_runners_by_their_latest_contact() {
        let health = Health::new(0);
        health.note_refused("401 Unauthorized".into());
        health.note_refused("413 Payload Too Large".into());
        health.note_refused("401 Unauthorized".into());
        let contact = |agent: &str, at, backlog| RunnerContact {
            owner: OwnerId(1),
            agent: agent.into(),
            at,
            backlog,
            hook_failures: None,
        };
        health.note_runner(AgentId(1), contact("buzz", 5, Some(3)));
        health.note_runner(AgentId(2), contact("pickles", 9, None));
        health.note_runner(AgentId(1), contact("buzz", 7, Some(0)));
        let view = health.view(10);
        assert_eq!(
            view.refused,
            [
                ("401 Unauthorized".to_string(), 2),
                ("413 Payload Too Large".to_string(), 1)
            ]
        );
        let runners: Vec<(&str, Millis, Option<u64>)> = view
            .runners
            .iter()
            .map(|(_, c)| (c.agent.as_str(), c.at, c.backlog))
            .collect();
        assert_eq!(runners, [("pickles", 9, None), ("buzz", 7, Some(0))]);
    }
}
