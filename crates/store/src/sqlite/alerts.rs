//! The alerts' part of the store on SQLite: the shared SQL of `crate::alerts`, run in this
//! backend's transactions.

use rusqlite::{Row, params};

use super::{SqliteStore, db_err};
use crate::alerts::{self as shared};
use crate::sqlite_and_postgres_sql::SharedSql;
use crate::{
    AlertDelivery, AlertEvent, AlertLedger, AlertSync, AlertTarget, DeliveryAttempt, Millis,
    OwnerId, RaisedAlert, Result,
};

impl AlertLedger for SqliteStore {
    fn sync_alerts(
        &self,
        owner: OwnerId,
        raised: &[RaisedAlert],
        targets: &[AlertTarget],
        now: Millis,
    ) -> Result<AlertSync> {
        self.write(|tx, _| {
            let conn = tx.conn()?;
            let mut sync = AlertSync::default();
            for alert in raised {
                let new = conn
                    .prepare_cached(shared::INSERT_ALERT.sqlite())
                    .and_then(|mut s| {
                        s.execute(params![
                            owner.0,
                            alert.id,
                            alert.kind,
                            alert.subject,
                            alert.body,
                            now
                        ])
                    })
                    .map_err(db_err)?;
                if new > 0 {
                    sync.opened.push(alert.id.clone());
                }
                for target in &alert.targets {
                    conn.prepare_cached(shared::INSERT_OPEN.sqlite())
                        .and_then(|mut s| {
                            s.execute(params![
                                owner.0,
                                alert.id,
                                target.webhook,
                                target.format,
                                target.not_before
                            ])
                        })
                        .map_err(db_err)?;
                }
            }
            let open: Vec<String> = conn
                .prepare_cached(shared::OPEN_ALERTS.sqlite())
                .and_then(|mut s| {
                    s.query_map(params![owner.0], |r| r.get(0))?
                        .collect::<rusqlite::Result<_>>()
                })
                .map_err(db_err)?;
            for id in shared::gone(&open, raised) {
                let run = |sql: &SharedSql, values: &[&dyn rusqlite::ToSql]| {
                    conn.prepare_cached(sql.sqlite())
                        .and_then(|mut s| s.execute(values))
                        .map_err(db_err)
                };
                run(&shared::RESOLVE_ALERT, params![owner.0, id, now])?;
                run(&shared::INSERT_RESOLVES, params![owner.0, id, now])?;
                for target in targets.iter().filter(|t| t.not_before > now) {
                    run(
                        &shared::HOLD_RESOLVE,
                        params![owner.0, id, target.webhook, target.not_before],
                    )?;
                }
                sync.resolved.push(id.clone());
            }
            Ok(sync)
        })
    }

    fn due_alert_deliveries(
        &self,
        owner: OwnerId,
        now: Millis,
        limit: usize,
    ) -> Result<Vec<AlertDelivery>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(shared::DUE_DELIVERIES.sqlite())
            .map_err(db_err)?;
        statement
            .query_map(params![owner.0, now, limit as i64], delivery_from)
            .and_then(|rows| rows.collect())
            .map_err(db_err)
    }

    fn note_alert_attempt(
        &self,
        owner: OwnerId,
        alert_id: &str,
        event: AlertEvent,
        webhook: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()> {
        self.write(|tx, _| {
            tx.conn()?
                .prepare_cached(shared::NOTE_ATTEMPT.sqlite())
                .and_then(|mut s| {
                    s.execute(params![
                        owner.0,
                        alert_id,
                        event.as_str(),
                        webhook,
                        attempt.delivered_at,
                        attempt.status,
                        attempt.error,
                        attempt.next_attempt_at
                    ])
                })
                .map_err(db_err)?;
            Ok(())
        })
    }

    fn alert_deliveries(&self, owner: OwnerId, undelivered: bool) -> Result<Vec<AlertDelivery>> {
        let inner = self.lock();
        let mut statement = inner
            .conn
            .prepare_cached(shared::DELIVERIES.sqlite())
            .map_err(db_err)?;
        statement
            .query_map(params![owner.0, i64::from(undelivered)], delivery_from)
            .and_then(|rows| rows.collect())
            .map_err(db_err)
    }
}

fn delivery_from(r: &Row<'_>) -> rusqlite::Result<AlertDelivery> {
    debug_assert_eq!(r.as_ref().column_count(), shared::DELIVERY_COLUMN_COUNT);
    Ok(AlertDelivery {
        alert_id: r.get(0)?,
        event: AlertEvent::parse(&r.get::<_, String>(1)?),
        webhook: r.get(2)?,
        format: r.get(3)?,
        attempts: r.get(4)?,
        next_attempt_at: r.get(5)?,
        last_status: r.get(6)?,
        last_error: r.get(7)?,
        delivered_at: r.get(8)?,
        kind: r.get(9)?,
        subject: r.get(10)?,
        body: r.get(11)?,
        opened_at: r.get(12)?,
        resolved_at: r.get(13)?,
    })
}
