//! Alerts that reach the owner: the alerts a family has raised and the outbox of their
//! deliveries to webhooks. The SQL is written once here (PostgreSQL's `$N` placeholders; the
//! SQLite backend reads them as its `?N`); each backend runs it in one of its transactions.
//!
//! An alert's id is stable (the engine derives it from what began it), so raising the same
//! alert again changes nothing, and a delivery row is unique per (alert, event, webhook): a
//! restart re-derives the same rows and sends none twice.

use crate::sqlite_and_postgres_sql::SharedSql;
use crate::{Millis, OwnerId, Result};

/// What an alert's delivery announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertEvent {
    Open,
    Resolve,
}

impl AlertEvent {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertEvent::Open => "open",
            AlertEvent::Resolve => "resolve",
        }
    }

    pub fn parse(text: &str) -> AlertEvent {
        if text == "resolve" {
            AlertEvent::Resolve
        } else {
            AlertEvent::Open
        }
    }
}

/// A webhook an owner's alerts go to, and when it may first be tried (later than now in its
/// quiet hours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertTarget {
    pub webhook: String,
    /// `json`, `slack` or `discord`: how the body is written when it is sent.
    pub format: String,
    pub not_before: Millis,
}

/// An alert the family's state raises now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedAlert {
    /// Stable: the same streak (or quiet spell) always has the same id.
    pub id: String,
    pub kind: String,
    pub subject: String,
    /// What the alert says (JSON), kept as it was when it opened.
    pub body: String,
    /// The webhooks that are told of it.
    pub targets: Vec<AlertTarget>,
}

/// What a sync changed: the alerts it opened and those it resolved (ids).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlertSync {
    pub opened: Vec<String>,
    pub resolved: Vec<String>,
}

/// One delivery of the outbox, with its alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertDelivery {
    pub alert_id: String,
    pub event: AlertEvent,
    pub webhook: String,
    pub format: String,
    pub attempts: i64,
    pub next_attempt_at: Millis,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    pub delivered_at: Option<Millis>,
    pub kind: String,
    pub subject: String,
    pub body: String,
    pub opened_at: Millis,
    pub resolved_at: Option<Millis>,
}

/// The outcome of one attempt to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// Set when the webhook answered 2xx.
    pub delivered_at: Option<Millis>,
    /// The HTTP status, when there was an answer.
    pub status: Option<i64>,
    /// Why it failed (cut short), when it did.
    pub error: Option<String>,
    /// When to try again when it failed.
    pub next_attempt_at: Millis,
}

/// The alerts' part of the store.
pub trait AlertLedger {
    /// In one of the family's write transactions: opens each raised alert not opened before
    /// (and queues its delivery to each of its targets), and resolves every open alert that is
    /// not raised now, queuing its resolve to each webhook its opening was queued for (not
    /// before that webhook's `not_before` in `targets`, else now).
    fn sync_alerts(
        &self,
        owner: OwnerId,
        raised: &[RaisedAlert],
        targets: &[AlertTarget],
        now: Millis,
    ) -> Result<AlertSync>;

    /// Deliveries due at `now`, oldest due first, at most `limit`; a resolve only once its
    /// opening reached that webhook.
    fn due_alert_deliveries(
        &self,
        owner: OwnerId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<AlertDelivery>>;

    /// Notes one attempt: delivered, or counted with its error and its next try.
    fn note_alert_attempt(
        &self,
        owner: OwnerId,
        alert_id: &str,
        event: AlertEvent,
        webhook: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()>;

    /// Every delivery of the family, oldest alert first (`undelivered`: only those not
    /// delivered yet).
    fn alert_deliveries(&self, owner: OwnerId, undelivered: bool) -> Result<Vec<AlertDelivery>>;
}

pub(crate) static INSERT_ALERT: SharedSql = SharedSql::new(
    "INSERT INTO alerts (owner_id, alert_id, kind, subject, body, opened_at)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
);

pub(crate) static INSERT_OPEN: SharedSql = SharedSql::new(
    "INSERT INTO alert_deliveries
     (owner_id, alert_id, event, webhook, format, next_attempt_at)
     VALUES ($1, $2, 'open', $3, $4, $5) ON CONFLICT DO NOTHING",
);

pub(crate) static OPEN_ALERTS: SharedSql = SharedSql::new(
    "SELECT alert_id FROM alerts WHERE owner_id = $1 AND resolved_at IS NULL ORDER BY alert_id",
);

pub(crate) static RESOLVE_ALERT: SharedSql = SharedSql::new(
    "UPDATE alerts SET resolved_at = $3 WHERE owner_id = $1 AND alert_id = $2 AND resolved_at IS NULL",
);

/// A resolve for each webhook the opening was queued for, due at once ($3) …
pub(crate) static INSERT_RESOLVES: SharedSql = SharedSql::new(
    "INSERT INTO alert_deliveries
     (owner_id, alert_id, event, webhook, format, next_attempt_at)
     SELECT owner_id, alert_id, 'resolve', webhook, format, $3 FROM alert_deliveries
     WHERE owner_id = $1 AND alert_id = $2 AND event = 'open'
     ON CONFLICT DO NOTHING",
);

/// … or held to the webhook's quiet hours' end.
pub(crate) static HOLD_RESOLVE: SharedSql = SharedSql::new(
    "UPDATE alert_deliveries SET next_attempt_at = $4
     WHERE owner_id = $1 AND alert_id = $2 AND webhook = $3 AND event = 'resolve' AND attempts = 0",
);

/// Deliveries due: not delivered, their time come, a resolve only after its opening reached
/// that webhook. Its 14 columns are read alike by both backends' row readers.
pub(crate) static DUE_DELIVERIES: SharedSql = SharedSql::new(
    "SELECT d.alert_id, d.event, d.webhook, d.format,
     d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, a.kind,
     a.subject, a.body, a.opened_at, a.resolved_at
     FROM alert_deliveries d JOIN alerts a ON a.owner_id = d.owner_id AND a.alert_id = d.alert_id
     WHERE d.owner_id = $1 AND d.delivered_at IS NULL AND d.next_attempt_at <= $2
       AND (d.event = 'open' OR EXISTS (SELECT 1 FROM alert_deliveries o
            WHERE o.owner_id = $1 AND o.alert_id = d.alert_id AND o.webhook = d.webhook
              AND o.event = 'open' AND o.delivered_at IS NOT NULL))
     ORDER BY d.next_attempt_at, d.alert_id, d.event, d.webhook
     LIMIT $3",
);

/// Every delivery of the family (`$2` = 1: only those not delivered yet), the same columns.
pub(crate) static DELIVERIES: SharedSql = SharedSql::new(
    "SELECT d.alert_id, d.event, d.webhook, d.format,
     d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, a.kind,
     a.subject, a.body, a.opened_at, a.resolved_at
     FROM alert_deliveries d JOIN alerts a ON a.owner_id = d.owner_id AND a.alert_id = d.alert_id
     WHERE d.owner_id = $1 AND (CAST($2 AS BIGINT) = 0 OR d.delivered_at IS NULL)
     ORDER BY a.opened_at, d.alert_id, d.event, d.webhook",
);

/// The columns the two statements above read.
pub(crate) const DELIVERY_COLUMN_COUNT: usize = 14;

pub(crate) static NOTE_ATTEMPT: SharedSql = SharedSql::new(
    "UPDATE alert_deliveries
     SET attempts = attempts + 1, delivered_at = $5, last_status = $6, last_error = $7,
         next_attempt_at = $8
     WHERE owner_id = $1 AND alert_id = $2 AND event = $3 AND webhook = $4",
);

/// The open alerts of `open` that `raised` no longer holds.
pub(crate) fn gone<'a>(open: &'a [String], raised: &[RaisedAlert]) -> Vec<&'a String> {
    open.iter()
        .filter(|id| !raised.iter().any(|r| &r.id == *id))
        .collect()
}
