//! `GET /metrics`: the server in Prometheus' text exposition format (version 0.0.4), behind an
//! operator token sent as `Authorization: Bearer` (Prometheus' `authorization: {credentials}`).
//!
//! Two kinds of series. What happens in this process (events taken and refused, requests
//! refused, write groups, mirror refreshes) is counted in memory by the handlers and the lanes,
//! and starts over at a restart, as Prometheus expects of a counter. What belongs to the library
//! (each family's runs, its size) or is already kept by [`crate::health`] (each runner's last
//! contact and backlog) is read when Prometheus scrapes: one read per family, and the store's
//! size.
//!
//! Hook failures (a Claude Code hook that could not hand its call on) are not exported: the hook
//! runs beside the avatar, not in the server, and nothing counts its failures.

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prometheus_client::encoding::prometheus_text;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

use crate::auth::Operator;
use crate::error::ApiError;
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

type Labels = Vec<(String, String)>;

/// The process's own counters. Each is an `Arc` inside, so a scrape registers clones of them.
#[derive(Clone, Default)]
pub struct Metrics {
    events_recorded: Counter,
    events_duplicate: Counter,
    events_ignored: Counter,
    events_refused: Family<Labels, Counter>,
    requests_refused: Family<Labels, Counter>,
    mirror_refreshes: Counter,
    alert_deliveries_failed: Counter,
    group: GroupMetrics,
}

/// What the write-group lanes measure (`group_commit`): each group's size and how long it took
/// to record and commit.
#[derive(Clone)]
pub struct GroupMetrics {
    events: Histogram,
    requests: Histogram,
    seconds: Histogram,
}

impl GroupMetrics {
    /// A group of `requests` requests holding `events` events, recorded and committed (or not) in
    /// `seconds`.
    pub fn observe(&self, requests: usize, events: usize, seconds: f64) {
        self.requests.observe(requests as f64);
        self.events.observe(events as f64);
        self.seconds.observe(seconds);
    }
}

impl Default for GroupMetrics {
    fn default() -> Self {
        GroupMetrics {
            // 1 … 2,048 events: a lone event up to the lane's cap (2,000).
            events: Histogram::new(exponential_buckets(1.0, 2.0, 12)),
            // 1 … 8 requests: the lane's cap.
            requests: Histogram::new([1.0, 2.0, 3.0, 4.0, 6.0, 8.0]),
            // 100 µs … ~3.3 s: a lone commit on a fast disk up to a large group on a slow one.
            seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
        }
    }
}

/// What a runner's batch came to, event by event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EventCounts {
    pub recorded: u64,
    pub duplicate: u64,
    pub ignored: u64,
}

impl Metrics {
    pub fn note_events(&self, counts: EventCounts) {
        self.events_recorded.inc_by(counts.recorded);
        self.events_duplicate.inc_by(counts.duplicate);
        self.events_ignored.inc_by(counts.ignored);
    }

    /// An event refused on its own while its batch was recorded; `reason` is a short, fixed
    /// word (`invalid`, `store`), never the message, so the series stay few.
    pub fn note_event_refused(&self, reason: &str) {
        self.events_refused
            .get_or_create(&vec![("reason".to_string(), reason.to_string())])
            .inc();
    }

    /// A request refused (4xx, or 503 under load), by its status and the face it was for.
    pub fn note_request_refused(&self, status: u16, area: &str) {
        self.requests_refused
            .get_or_create(&vec![
                ("status".to_string(), status.to_string()),
                ("area".to_string(), area.to_string()),
            ])
            .inc();
    }

    pub fn note_mirror_refresh(&self) {
        self.mirror_refreshes.inc();
    }

    /// A webhook did not take an alert (an error or an answer other than 2xx).
    pub fn note_alert_delivery_failed(&self) {
        self.alert_deliveries_failed.inc();
    }

    pub fn group(&self) -> &GroupMetrics {
        &self.group
    }
}

/// The library's share of a scrape, read on a blocking thread.
struct LibraryView {
    /// Per owner name: ok and failed runs.
    runs: Vec<(String, i64, i64)>,
    database_bytes: Option<u64>,
}

async fn metrics(State(state): State<AppState>, _operator: Operator) -> Result<Response, ApiError> {
    let store = state.store();
    let library = state
        .blocking(move || {
            let mut runs = Vec::new();
            for owner in store.owners()? {
                let totals = store.run_totals(owner.id)?;
                runs.push((owner.name, totals.ok, totals.failed));
            }
            Ok::<_, mindrune_store::StoreError>(LibraryView {
                runs,
                database_bytes: store.database_size()?,
            })
        })
        .await??;
    let body = encode(&state, &library)
        .map_err(|err| ApiError::internal("the metrics could not be written", err))?;
    Ok((
        [(header::CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
        body,
    )
        .into_response())
}

fn encode(state: &AppState, library: &LibraryView) -> Result<String, std::fmt::Error> {
    let m = state.metrics();
    let mut registry = Registry::with_prefix("mindrune");
    registry.register(
        "events_recorded",
        "Runners' events stored as new runs or snippet uses by this process",
        m.events_recorded.clone(),
    );
    registry.register(
        "events_duplicate",
        "Runners' events sent again and recognised by their id (stored once)",
        m.events_duplicate.clone(),
    );
    registry.register(
        "events_ignored",
        "Runners' events that ran no script and no snippet",
        m.events_ignored.clone(),
    );
    registry.register(
        "events_refused",
        "Runners' events refused one by one while their batch was recorded, by reason",
        m.events_refused.clone(),
    );
    registry.register(
        "requests_refused",
        "Requests refused (4xx, or 503 over max_connections), by status and area",
        m.requests_refused.clone(),
    );
    registry.register(
        "mirror_refreshes",
        "family-skills/ mirrors sent to runners",
        m.mirror_refreshes.clone(),
    );
    registry.register(
        "alert_deliveries_failed",
        "Alert deliveries a webhook did not take (an error, or an answer other than 2xx)",
        m.alert_deliveries_failed.clone(),
    );
    registry.register(
        "write_group_events",
        "Events recorded in one write group (one transaction)",
        m.group.events.clone(),
    );
    registry.register(
        "write_group_requests",
        "Runners' requests sharing one write group",
        m.group.requests.clone(),
    );
    registry.register(
        "write_group_commit_seconds",
        "How long a write group took to record its events and commit",
        m.group.seconds.clone(),
    );

    let runs: Family<Labels, Counter<u64>> = Family::default();
    for (owner, ok, failed) in &library.runs {
        for (outcome, n) in [("ok", ok), ("failed", failed)] {
            runs.get_or_create(&vec![
                ("owner".to_string(), owner.clone()),
                ("outcome".to_string(), outcome.to_string()),
            ])
            .inc_by(u64::try_from(*n).unwrap_or(0));
        }
    }
    registry.register(
        "runs",
        "Script runs recorded in the library, per family (owner) and outcome",
        runs,
    );
    if let Some(bytes) = library.database_bytes {
        let size: Gauge = Gauge::default();
        size.set(i64::try_from(bytes).unwrap_or(i64::MAX));
        registry.register(
            "database_size_bytes",
            "The library's size: SQLite's file and its log, or the PostgreSQL database",
            size,
        );
    }

    let now = mindrune_engine::now_millis();
    let health = state.health().view(now);
    let contact: Family<Labels, Gauge<f64, AtomicU64>> = Family::default();
    let backlog: Family<Labels, Gauge> = Family::default();
    let hook_failures: Family<Labels, Gauge> = Family::default();
    for (_, runner) in &health.runners {
        let labels = vec![("agent".to_string(), runner.agent.clone())];
        contact
            .get_or_create(&labels)
            .set(runner.at as f64 / 1000.0);
        if let Some(items) = runner.backlog {
            backlog
                .get_or_create(&labels)
                .set(i64::try_from(items).unwrap_or(i64::MAX));
        }
        if let Some(failures) = runner.hook_failures {
            hook_failures
                .get_or_create(&labels)
                .set(i64::try_from(failures).unwrap_or(i64::MAX));
        }
    }
    registry.register(
        "runner_last_contact_timestamp_seconds",
        "When each runner last reached this process (Unix time)",
        contact,
    );
    registry.register(
        "runner_spool_items",
        "Items each runner's spool still held at its last request",
        backlog,
    );
    registry.register(
        "hook_failures",
        "Failures each avatar's Claude Code hooks noted in the last 24 hours, as its runner last reported them",
        hook_failures,
    );
    let started: Gauge<f64, AtomicU64> = Gauge::default();
    started.set(health.started_at as f64 / 1000.0);
    registry.register(
        "process_start_time_seconds",
        "When this server process started (Unix time); its counters start over then",
        started,
    );

    let mut body = String::new();
    prometheus_text::encode(&mut body, &registry)?;
    Ok(body)
}
