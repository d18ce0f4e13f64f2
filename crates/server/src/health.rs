//! What this server process has seen since it started, for the operator's console: events
//! and errors per minute over the last hour, requests refused and why, and each runner's last
//! contact with its spool backlog.
//!
//! The store keeps none of this (it is about the process, not the families' libraries), so it
//! lives in memory: a ring of per-minute buckets and a few maps behind one mutex, updated by
//! the handlers and the router's middleware. A restart starts it over; the console says so.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

use mindrune_store::{AgentId, Millis, OwnerId};

/// How many minutes the ring keeps: the console shows the last hour.
pub const MINUTES: usize = 60;

const MILLIS_PER_MINUTE: Millis = 60_000;

/// One minute's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    pub started_at: Millis,
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
    /// Newest last; never longer than [`MINUTES`].
    ring: VecDeque<Minute>,
    refused: BTreeMap<String, u64>,
    runners: BTreeMap<AgentId, RunnerContact>,
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
}

impl Health {
    pub fn new(started_at: Millis) -> Health {
        Health {
            started_at,
            counts: Mutex::new(Counts::default()),
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // Counters only: one left half-updated by a panic is still worth showing.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A batch's events: those taken (recorded, duplicate, ignored) and those refused.
    pub fn note_events(&self, now: Millis, taken: u64, refused: u64) {
        let mut counts = self.counts();
        let minute = counts.minute(now);
        minute.events += taken;
        minute.errors += refused;
    }

    /// An answer that failed on the server's side.
    pub fn note_error(&self, now: Millis) {
        self.counts().minute(now).errors += 1;
    }

    /// A request refused, with why (`413 Payload Too Large`).
    pub fn note_refused(&self, reason: String) {
        *self.counts().refused.entry(reason).or_default() += 1;
    }

    /// A runner's request.
    pub fn note_runner(&self, agent: AgentId, contact: RunnerContact) {
        self.counts().runners.insert(agent, contact);
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
