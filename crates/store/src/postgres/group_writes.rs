//! A PostgreSQL write group's uses and rescores, kept in memory and written together: one
//! statement, one round trip, for everything the group recorded since its last write.
//!
//! One at a time, a grouped use was four round trips (its savepoint, the insert, the rescore,
//! the savepoint's release), and every round trip holds the family's lock. The group holds its
//! families' locks for its whole length, so no other writer can record a use of their versions
//! or store one of their event ids meanwhile: what the group recorded can wait in memory, the
//! checks an insert made in SQL (is the event id stored? is the agent the family's?) are
//! answered from what the group looked up once (a batch's event ids in one query,
//! [`crate::Store::expect_uses`]) and from what it recorded itself, and a use that needs no
//! other statement (its version's row and window kept by the group) costs no round trip at all.
//!
//! Architecture invariant: a use or rescore waits here only while nothing else has used the
//! group's connection. Every statement run in the group writes what waits first: the group's
//! other work (`Group::in_savepoint`), every statement of a recording [`Tx`](super::conn::Tx)
//! but the two that wait and the look-ups that know what waits, and the group's commit. The
//! group's waiting writes are written outside any savepoint of a later piece of work, so that
//! piece's failure cannot take them back with it; a write that fails there leaves the
//! transaction unusable, and the group is then lost: it rolls back instead of committing.

use std::collections::{HashMap, HashSet};

use postgres::{Client, Statement};

use super::statements::prepared;
use crate::common::json_map;
use crate::version_writes::VersionWrites;
use crate::{NewUse, OwnerId};

/// Every waiting use inserted and every waiting rescore written, in one statement: the data-
/// modifying `WITH` runs whether or not the `UPDATE` reads it. The uses keep their order (their
/// identity values follow it, as one at a time).
const WRITE_WAITING: &str = "WITH inserted AS (
    INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                      deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured)
    SELECT owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
           deaths, stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured
    FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::boolean[], $6::bigint[],
                $7::text[], $8::text[], $9::double precision[], $10::bigint[], $11::boolean[],
                $12::bigint[], $13::text[], $14::text[], $15::text[], $16::text[], $17::bigint[],
                $18::text[], $30::text[]) WITH ORDINALITY
         AS u(owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress, deaths,
              stuck, items_lost, source, call, output, event_id, recorded_at, failure, unmeasured, n)
    ORDER BY n
    RETURNING 1
)
UPDATE versions v
SET uses = v.uses + w.uses, ok = v.ok + w.ok, score = w.score, breakdown = w.breakdown,
    measure_key = w.measure_key, rate_per_minute = w.rate_per_minute,
    last_used_at = GREATEST(COALESCE(v.last_used_at, w.at), w.at),
    peer_rate = w.peer_rate, peer_checked_uses = w.peer_checked_uses
FROM unnest($19::bigint[], $20::bigint[], $21::bigint[], $22::bigint[], $23::double precision[],
            $24::text[], $25::text[], $26::double precision[], $27::bigint[],
            $28::double precision[], $29::bigint[])
     AS w(owner_id, version_id, uses, ok, score, breakdown, measure_key, rate_per_minute, at,
          peer_rate, peer_checked_uses)
WHERE v.owner_id = w.owner_id AND v.version_id = w.version_id";

/// Uses and rescores recorded and not written yet.
#[derive(Default)]
pub(crate) struct Waiting {
    uses: Vec<(OwnerId, NewUse)>,
    versions: VersionWrites,
}

impl Waiting {
    pub(crate) fn is_empty(&self) -> bool {
        self.uses.is_empty() && self.versions.is_empty()
    }

    /// Whether a rescore waits.
    pub(crate) fn has_rescores(&self) -> bool {
        !self.versions.is_empty()
    }

    /// Whether a use or rescore of `version` waits.
    pub(crate) fn touches(&self, version: i64) -> bool {
        self.versions.has(version) || self.uses.iter().any(|(_, u)| u.version.0 == version)
    }

    pub(crate) fn keep_use(&mut self, owner: OwnerId, new_use: &NewUse) {
        self.uses.push((owner, new_use.clone()));
    }

    pub(crate) fn keep_rescore(
        &mut self,
        owner: OwnerId,
        version: i64,
        rescore: crate::rules::Rescore,
    ) {
        self.versions.keep(owner, version, rescore);
    }

    fn append(&mut self, later: Waiting) {
        self.uses.extend(later.uses);
        self.versions.append(later.versions);
    }

    /// Writes everything waiting in one statement, and forgets it once written.
    pub(crate) fn write(
        &mut self,
        client: &mut Client,
        statements: &mut HashMap<String, Statement>,
    ) -> Result<(), postgres::Error> {
        if self.is_empty() {
            return Ok(());
        }
        let statement = prepared(client, statements, WRITE_WAITING)?;
        let uses = &self.uses;
        let column =
            |f: &dyn Fn(&(OwnerId, NewUse)) -> i64| uses.iter().map(f).collect::<Vec<i64>>();
        let owners = column(&|(owner, _)| owner.0);
        let versions = column(&|(_, u)| u.version.0);
        let agents = column(&|(_, u)| u.agent.0);
        let ats = column(&|(_, u)| u.outcome.at);
        let durations = column(&|(_, u)| u.outcome.duration_ms.min(i64::MAX as u64) as i64);
        let deaths = column(&|(_, u)| i64::from(u.outcome.deaths));
        let items_lost = column(&|(_, u)| i64::from(u.outcome.items_lost));
        let recorded_at = column(&|(_, u)| u.recorded_at);
        let oks: Vec<bool> = uses.iter().map(|(_, u)| u.outcome.ok).collect();
        let stucks: Vec<bool> = uses.iter().map(|(_, u)| u.outcome.stuck).collect();
        let progress: Vec<f64> = uses.iter().map(|(_, u)| u.outcome.goal_progress).collect();
        let xps: Vec<Option<String>> = uses.iter().map(|(_, u)| json_map(&u.outcome.xp)).collect();
        let items: Vec<Option<String>> = uses
            .iter()
            .map(|(_, u)| json_map(&u.outcome.items))
            .collect();
        let sources: Vec<&str> = uses.iter().map(|(_, u)| u.source.as_str()).collect();
        let calls: Vec<Option<&str>> = uses.iter().map(|(_, u)| u.call.as_deref()).collect();
        let outputs: Vec<Option<&str>> = uses.iter().map(|(_, u)| u.output.as_deref()).collect();
        let event_ids: Vec<Option<&str>> =
            uses.iter().map(|(_, u)| u.event_id.as_deref()).collect();
        let failures: Vec<Option<&str>> = uses
            .iter()
            .map(|(_, u)| u.outcome.failure.as_deref())
            .collect();
        let unmeasured: Vec<Option<&str>> = uses
            .iter()
            .map(|(_, u)| u.outcome.unmeasured.as_deref())
            .collect();

        let rescores: Vec<(i64, &crate::version_writes::Waiting)> = self.versions.iter().collect();
        let v_owners: Vec<i64> = rescores.iter().map(|(_, w)| w.owner.0).collect();
        let v_ids: Vec<i64> = rescores.iter().map(|(version, _)| *version).collect();
        let v_uses: Vec<i64> = rescores.iter().map(|(_, w)| w.uses).collect();
        let v_oks: Vec<i64> = rescores.iter().map(|(_, w)| w.ok).collect();
        let v_scores: Vec<f64> = rescores
            .iter()
            .map(|(_, w)| w.last.breakdown.total)
            .collect();
        let v_breakdowns: Vec<Option<String>> = rescores
            .iter()
            .map(|(_, w)| w.last.breakdown_json())
            .collect();
        let v_measures: Vec<&str> = rescores
            .iter()
            .map(|(_, w)| w.last.measure_key.as_str())
            .collect();
        let v_rates: Vec<f64> = rescores
            .iter()
            .map(|(_, w)| w.last.breakdown.rate_per_minute)
            .collect();
        let v_ats: Vec<i64> = rescores.iter().map(|(_, w)| w.last_used_at).collect();
        let v_peer_rates: Vec<Option<f64>> =
            rescores.iter().map(|(_, w)| w.last.peer_rate).collect();
        let v_peer_checked: Vec<Option<i64>> = rescores
            .iter()
            .map(|(_, w)| w.last.peer_checked_uses)
            .collect();

        client.execute(
            &statement,
            &[
                &owners,
                &versions,
                &agents,
                &ats,
                &oks,
                &durations,
                &xps,
                &items,
                &progress,
                &deaths,
                &stucks,
                &items_lost,
                &sources,
                &calls,
                &outputs,
                &event_ids,
                &recorded_at,
                &failures,
                &v_owners,
                &v_ids,
                &v_uses,
                &v_oks,
                &v_scores,
                &v_breakdowns,
                &v_measures,
                &v_rates,
                &v_ats,
                &v_peer_rates,
                &v_peer_checked,
                &unmeasured,
            ],
        )?;
        *self = Waiting::default();
        Ok(())
    }
}

/// One piece of a group's work that records a use: what it recorded, which joins the group's
/// once the piece is kept.
#[derive(Default)]
pub(crate) struct OwnWrites {
    pub waiting: Waiting,
    /// The event ids it recorded (written or not), by family.
    events: Vec<(i64, String)>,
}

impl OwnWrites {
    pub(crate) fn note_event(&mut self, owner: OwnerId, event_id: &str) {
        self.events.push((owner.0, event_id.to_string()));
    }

    fn recorded(&self, owner: OwnerId, event_id: &str) -> bool {
        self.events
            .iter()
            .any(|(family, id)| *family == owner.0 && id == event_id)
    }
}

/// What a write group recorded and has not written, and what it knows of its families.
#[derive(Default)]
pub(crate) struct GroupWrites {
    pub waiting: Waiting,
    /// Event ids of the uses the group recorded (written or waiting), by family.
    recorded_events: HashSet<(i64, String)>,
    /// Event ids looked up in the table during the group: whether a use stored before the group
    /// has it. Only the group can store one meanwhile, and it remembers those above.
    stored_events: HashMap<(i64, String), bool>,
    /// Agents found to be their family's during the group: only a family's write (which waits
    /// for the group's lock) removes one.
    agents: HashSet<(i64, i64)>,
    /// A write of the group failed outside any savepoint: its transaction cannot commit.
    pub lost: bool,
}

impl GroupWrites {
    /// Whether a use with `event_id` was recorded for `owner` by this group (`own`, the piece
    /// running now, included), or stored before it (`None`: not looked up yet).
    pub(crate) fn event_recorded(
        &self,
        own: Option<&OwnWrites>,
        owner: OwnerId,
        event_id: &str,
    ) -> Option<bool> {
        let key = (owner.0, event_id.to_string());
        if own.is_some_and(|own| own.recorded(owner, event_id))
            || self.recorded_events.contains(&key)
        {
            return Some(true);
        }
        self.stored_events.get(&key).copied()
    }

    /// What the table said of an event id, for the rest of the group.
    pub(crate) fn note_stored(&mut self, owner: OwnerId, event_id: &str, stored: bool) {
        self.stored_events
            .insert((owner.0, event_id.to_string()), stored);
    }

    pub(crate) fn knows_agent(&self, owner: OwnerId, agent: i64) -> bool {
        self.agents.contains(&(owner.0, agent))
    }

    pub(crate) fn note_agent(&mut self, owner: OwnerId, agent: i64) {
        self.agents.insert((owner.0, agent));
    }

    /// Other work is about to run in the group (everything waiting is written by now): it may
    /// remove an agent or uses, so what the group looked up, and the event ids it recorded,
    /// stand for the table no more; they are looked up again.
    pub(crate) fn forget_look_ups(&mut self) {
        self.recorded_events.clear();
        self.stored_events.clear();
        self.agents.clear();
    }

    /// A piece of work that recorded uses was kept: what it recorded is the group's.
    pub(crate) fn keep(&mut self, own: OwnWrites) {
        self.waiting.append(own.waiting);
        self.recorded_events.extend(own.events);
    }

    /// Writes what waits (outside any savepoint); a failure loses the group.
    pub(crate) fn write(
        &mut self,
        client: &mut Client,
        statements: &mut HashMap<String, Statement>,
    ) -> Result<(), postgres::Error> {
        let written = self.waiting.write(client, statements);
        if written.is_err() {
            self.lost = true;
        }
        written
    }
}
