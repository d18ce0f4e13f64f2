//! The alerts' part of the store on PostgreSQL: the shared SQL of `crate::alerts`, run in the
//! family's write transaction (its advisory lock) or one read snapshot.

use postgres::Row;

use super::PgStore;
use super::rows::col;
use crate::alerts as shared;
use crate::{
    AlertDelivery, AlertEvent, AlertLedger, AlertSync, AlertTarget, DeliveryAttempt, Millis,
    OwnerId, RaisedAlert, Result,
};

impl AlertLedger for PgStore {
    fn sync_alerts(
        &self,
        owner: OwnerId,
        raised: &[RaisedAlert],
        targets: &[AlertTarget],
        now: Millis,
    ) -> Result<AlertSync> {
        self.write(owner, |tx| {
            let mut sync = AlertSync::default();
            for alert in raised {
                let new = tx.execute(
                    shared::INSERT_ALERT.postgres(),
                    &[
                        &owner.0,
                        &alert.id,
                        &alert.kind,
                        &alert.subject,
                        &alert.body,
                        &now,
                    ],
                )?;
                if new > 0 {
                    sync.opened.push(alert.id.clone());
                }
                for target in &alert.targets {
                    tx.execute(
                        shared::INSERT_OPEN.postgres(),
                        &[
                            &owner.0,
                            &alert.id,
                            &target.webhook,
                            &target.format,
                            &target.not_before,
                        ],
                    )?;
                }
            }
            let open: Vec<String> = tx
                .query(shared::OPEN_ALERTS.postgres(), &[&owner.0])?
                .iter()
                .map(|row| col(row, 0))
                .collect::<std::result::Result<_, _>>()?;
            for id in shared::gone(&open, raised) {
                tx.execute(shared::RESOLVE_ALERT.postgres(), &[&owner.0, id, &now])?;
                tx.execute(shared::INSERT_RESOLVES.postgres(), &[&owner.0, id, &now])?;
                for target in targets.iter().filter(|t| t.not_before > now) {
                    tx.execute(
                        shared::HOLD_RESOLVE.postgres(),
                        &[&owner.0, id, &target.webhook, &target.not_before],
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
        let limit = limit as i64;
        self.read_one(|tx| {
            tx.query(shared::DUE_DELIVERIES.postgres(), &[&owner.0, &now, &limit])?
                .iter()
                .map(delivery_from)
                .collect()
        })
    }

    fn note_alert_attempt(
        &self,
        owner: OwnerId,
        alert_id: &str,
        event: AlertEvent,
        webhook: &str,
        attempt: &DeliveryAttempt,
    ) -> Result<()> {
        self.write(owner, |tx| {
            tx.execute(
                shared::NOTE_ATTEMPT.postgres(),
                &[
                    &owner.0,
                    &alert_id,
                    &event.as_str(),
                    &webhook,
                    &attempt.delivered_at,
                    &attempt.status,
                    &attempt.error,
                    &attempt.next_attempt_at,
                ],
            )?;
            Ok(())
        })
    }

    fn alert_deliveries(&self, owner: OwnerId, undelivered: bool) -> Result<Vec<AlertDelivery>> {
        let only = i64::from(undelivered);
        self.read_one(|tx| {
            tx.query(shared::DELIVERIES.postgres(), &[&owner.0, &only])?
                .iter()
                .map(delivery_from)
                .collect()
        })
    }
}

fn delivery_from(row: &Row) -> super::PgResult<AlertDelivery> {
    debug_assert_eq!(row.len(), shared::DELIVERY_COLUMN_COUNT);
    Ok(AlertDelivery {
        alert_id: col(row, 0)?,
        event: AlertEvent::parse(col(row, 1)?),
        webhook: col(row, 2)?,
        format: col(row, 3)?,
        attempts: col(row, 4)?,
        next_attempt_at: col(row, 5)?,
        last_status: col(row, 6)?,
        last_error: col(row, 7)?,
        delivered_at: col(row, 8)?,
        kind: col(row, 9)?,
        subject: col(row, 10)?,
        body: col(row, 11)?,
        opened_at: col(row, 12)?,
        resolved_at: col(row, 13)?,
    })
}
