//! The alert loop: every `alerts_interval_secs`, for each owner with `[[alerts]]`, what needs
//! attention is read, alerts open and resolve in the store (one transaction), and the outbox's
//! due deliveries are posted to their webhooks. It runs beside the server on a blocking thread,
//! never on the recording path; what it has not delivered stays in the store and is tried
//! again after a restart. A shutdown stops it between passes.

use std::collections::BTreeMap;
use std::time::Duration;

use mindrune_engine::needs_attention;
use mindrune_engine::now_millis;
use mindrune_engine::{AlertFormat, alert_body, alert_for, first_attempt_at, retry_at};
use mindrune_store::{
    AlertDelivery, AlertTarget, DeliveryAttempt, Millis, OwnerId, RaisedAlert, Store, StoreError,
};
use tokio::sync::watch;

use crate::config::AlertRule;
use crate::state::AppState;

/// A webhook that has not answered in this long has failed.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many deliveries per owner per pass (the rest wait for the next).
const DELIVERIES_PER_PASS: usize = 50;
/// A failure's text is kept this short.
const ERROR_CHARS: usize = 300;

/// Starts the loop when any `[[alerts]]` is configured; it ends when `stopping` turns true.
pub(crate) fn spawn(
    state: AppState,
    mut stopping: watch::Receiver<bool>,
) -> Option<tokio::task::JoinHandle<()>> {
    if state.config().alerts.is_empty() {
        return None;
    }
    let interval = Duration::from_secs(state.config().alerts_interval_secs);
    Some(tokio::spawn(async move {
        loop {
            let pass_state = state.clone();
            let pass = tokio::task::spawn_blocking(move || pass(&pass_state, now_millis()));
            if let Err(err) = pass.await {
                tracing::error!("the alert loop's pass stopped unexpectedly: {err}");
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                _ = stopping.changed() => break,
            }
            if *stopping.borrow() {
                break;
            }
        }
    }))
}

/// One pass: for each owner with alerts, open and resolve, then deliver what is due.
pub(crate) fn pass(state: &AppState, now: Millis) {
    let store = state.store();
    let mut by_owner: BTreeMap<&str, Vec<&AlertRule>> = BTreeMap::new();
    for rule in &state.config().alerts {
        by_owner.entry(rule.owner.as_str()).or_default().push(rule);
    }
    let base = state.config().alerts_retry_base_secs as Millis * 1000;
    for (name, rules) in by_owner {
        let outcome = store.owner_by_name(name).and_then(|owner| {
            let Some(owner) = owner else {
                return Err(StoreError::NotFound(format!("owner {name:?}")));
            };
            let runners = state.health().runners_seen(owner.id);
            sync(store, owner.id, name, &rules, now, &runners)?;
            deliver(state, owner.id, name, &rules, base)
        });
        if let Err(err) = outcome {
            tracing::warn!("alerts for {name}: {err}");
        }
    }
}

/// Opens the alerts the family's attention items raise now and resolves those gone.
fn sync(
    store: &dyn Store,
    owner: OwnerId,
    name: &str,
    rules: &[&AlertRule],
    now: Millis,
    runners: &[mindrune_engine::RunnerSeen],
) -> Result<(), StoreError> {
    let items = needs_attention(store, owner, None, now, runners)?;
    let targets: Vec<AlertTarget> = rules
        .iter()
        .map(|rule| AlertTarget {
            webhook: rule.webhook.clone(),
            format: rule.format.as_str().to_string(),
            not_before: first_attempt_at(now, rule.quiet_hours),
        })
        .collect();
    let mut raised: Vec<RaisedAlert> = Vec::new();
    for item in &items {
        for (rule, target) in rules.iter().zip(&targets) {
            let Some(alert) = alert_for(
                name,
                item,
                &rule.thresholds(),
                rule.dashboard_url.as_deref(),
            ) else {
                continue;
            };
            match raised.iter_mut().find(|r| r.id == alert.id) {
                Some(known) => known.targets.push(target.clone()),
                None => raised.push(RaisedAlert {
                    id: alert.id.clone(),
                    kind: alert.kind.to_string(),
                    subject: alert.subject.clone(),
                    body: alert.stored(),
                    targets: vec![target.clone()],
                }),
            }
        }
    }
    let changes = store.sync_alerts(owner, &raised, &targets, now)?;
    for id in &changes.opened {
        tracing::info!("alert opened: {id}");
    }
    for id in &changes.resolved {
        tracing::info!("alert resolved: {id}");
    }
    Ok(())
}

/// Posts the owner's due deliveries to webhooks still configured for it, and notes each.
fn deliver(
    state: &AppState,
    owner: OwnerId,
    name: &str,
    rules: &[&AlertRule],
    base: Millis,
) -> Result<(), StoreError> {
    let store = state.store();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(DELIVERY_TIMEOUT))
        .user_agent(concat!("mindrune-alerts/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    for delivery in store.due_alert_deliveries(owner, now_millis(), DELIVERIES_PER_PASS)? {
        // A webhook taken out of the configuration hears no more.
        let Some(rule) = rules.iter().find(|r| r.webhook == delivery.webhook) else {
            continue;
        };
        let now = now_millis();
        if rule.quiet_hours.is_some_and(|q| q.contains(now)) {
            continue;
        }
        let attempt = post(&agent, name, &delivery, rule, base);
        if attempt.delivered_at.is_none() {
            state.metrics().note_alert_delivery_failed();
            tracing::warn!(
                "alert {} ({}) to {}: {}",
                delivery.alert_id,
                delivery.event.as_str(),
                crate::html::shown_webhook(&delivery.webhook),
                attempt.error.as_deref().unwrap_or("failed")
            );
        }
        store.note_alert_attempt(
            owner,
            &delivery.alert_id,
            delivery.event,
            &delivery.webhook,
            &attempt,
        )?;
    }
    Ok(())
}

/// One post of one delivery: 2xx delivers it; anything else is kept with its next try.
fn post(
    agent: &ureq::Agent,
    owner: &str,
    delivery: &AlertDelivery,
    rule: &AlertRule,
    base: Millis,
) -> DeliveryAttempt {
    let body = alert_body(owner, delivery, AlertFormat::parse(&delivery.format));
    let answer = agent
        .post(&delivery.webhook)
        .header("Content-Type", "application/json")
        .send(body.as_bytes());
    let now = now_millis();
    let retry = retry_at(now, delivery.attempts + 1, base, rule.quiet_hours);
    let cut = |text: String| text.chars().take(ERROR_CHARS).collect::<String>();
    match answer {
        Ok(answer) if answer.status().is_success() => DeliveryAttempt {
            delivered_at: Some(now),
            status: Some(i64::from(answer.status().as_u16())),
            error: None,
            next_attempt_at: now,
        },
        Ok(answer) => DeliveryAttempt {
            delivered_at: None,
            status: Some(i64::from(answer.status().as_u16())),
            error: Some(cut(format!("the webhook answered {}", answer.status()))),
            next_attempt_at: retry,
        },
        Err(err) => DeliveryAttempt {
            delivered_at: None,
            status: None,
            // The error may quote the address: only its shown form is kept.
            error: Some(cut(err.to_string().replace(
                &delivery.webhook,
                &crate::html::shown_webhook(&delivery.webhook),
            ))),
            next_attempt_at: retry,
        },
    }
}
