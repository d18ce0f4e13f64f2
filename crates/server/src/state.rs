//! The server's shared state: the library, its recorder, the configuration, and what the
//! server has seen of its disk. Every handler gets it; it knows nothing of routes.

use crate::group_commit::GroupCommit;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use mindrune_engine::Recorder;
use mindrune_store::Store;

use crate::config::ServerConfig;
use crate::error::ApiError;
use crate::fairness::{BODY_BUDGET_BYTES, BodyBudget, ClassLimits};
use crate::health::Health;
use crate::login_guard::PreSessions;
use crate::metrics::Metrics;

/// What every handler shares: the library and the recorder that writes runs into it.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

struct Shared {
    store: &'static dyn Store,
    recorder: &'static Recorder<'static>,
    /// The lanes recording runners' batches in groups (`group_commit`).
    group_commit: GroupCommit,
    config: ServerConfig,
    /// When a request last failed on a full disk; cleared by the next write that succeeds.
    disk_full_since: std::sync::Mutex<Option<std::time::Instant>>,
    /// What this process has seen since it started, for the console.
    health: Health,
    /// The process's counters for `/metrics`.
    metrics: Metrics,
    /// The requests in flight each route class may have (`fairness`).
    class_limits: ClassLimits,
    /// The bytes of request bodies held at once (`fairness`).
    body_budget: BodyBudget,
    /// The sign-in forms' pre-sessions (`login_guard`).
    pre_sessions: PreSessions,
}

/// Below this much free space on the library's disk the server answers not ready: SQLite needs
/// room for its write-ahead log before a write can even start.
pub(crate) const MIN_FREE_BYTES: u64 = 8 * 1024 * 1024;

/// How long a full disk reported by a write keeps `/ready` at "not ready" when the server
/// cannot see that disk itself (PostgreSQL's): then traffic is let through again to find out.
pub(crate) const DISK_FULL_HOLD: Duration = Duration::from_secs(30);

impl AppState {
    /// The state of a server over `store`. The store and its recorder live as long as the
    /// process: a server opens its library once and serves it until it exits, and handlers run
    /// on blocking threads that need `'static` access to both.
    pub fn new(store: Box<dyn Store>, config: ServerConfig) -> AppState {
        let store: &'static dyn Store = Box::leak(store);
        let recorder: &'static Recorder<'static> = Box::leak(Box::new(Recorder::new(store)));
        let metrics = Metrics::default();
        let config_max_connections = config.max_connections;
        let health = Health::new(mindrune_engine::now_millis());
        AppState {
            shared: Arc::new(Shared {
                store,
                recorder,
                group_commit: GroupCommit::start(
                    recorder,
                    store.write_lanes(),
                    metrics.group().clone(),
                ),
                config,
                disk_full_since: std::sync::Mutex::new(None),
                health,
                metrics,
                class_limits: ClassLimits::new(config_max_connections),
                body_budget: BodyBudget::new(BODY_BUDGET_BYTES),
                pre_sessions: PreSessions::default(),
            }),
        }
    }

    /// The sign-in forms' pre-sessions.
    pub fn pre_sessions(&self) -> &PreSessions {
        &self.shared.pre_sessions
    }

    /// The bytes of request bodies the server holds at once.
    pub fn body_budget(&self) -> &BodyBudget {
        &self.shared.body_budget
    }

    /// The requests in flight each route class may have.
    pub fn class_limits(&self) -> &ClassLimits {
        &self.shared.class_limits
    }

    pub fn store(&self) -> &'static dyn Store {
        self.shared.store
    }

    pub fn recorder(&self) -> &'static Recorder<'static> {
        self.shared.recorder
    }

    /// Where runners' event batches are recorded, in groups sharing one commit.
    pub fn group_commit(&self) -> &GroupCommit {
        &self.shared.group_commit
    }

    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// The counters of this process: events, errors, refusals, runners' contacts.
    pub fn health(&self) -> &Health {
        &self.shared.health
    }

    /// The counters `/metrics` exports besides what it reads at scrape time.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Why the library cannot take writes now, if it cannot: its disk has less than
    /// [`MIN_FREE_BYTES`] free, or a write failed on a full disk and none has succeeded since.
    pub fn storage_problem(&self) -> Option<String> {
        let space = self.store().disk_space();
        if let Some(space) = &space
            && space.available < MIN_FREE_BYTES
        {
            return Some(format!(
                "the disk holding the library ({}) has {} bytes free, under the {MIN_FREE_BYTES} a write needs; free space on it",
                space.folder, space.available
            ));
        }
        let mut since = self
            .shared
            .disk_full_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match *since {
            // The disk is visible and has room again: what failed then would succeed now.
            Some(_) if space.is_some() => {
                *since = None;
                None
            }
            Some(at) if at.elapsed() < DISK_FULL_HOLD => Some(
                "a write failed because the database's disk is full; free space on it".to_string(),
            ),
            Some(_) => {
                *since = None;
                None
            }
            None => None,
        }
    }

    /// Notes what a request's answer says about the library's disk.
    pub(crate) fn note_storage(&self, status: StatusCode, wrote: bool) {
        let mut since = self
            .shared
            .disk_full_since
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if status == StatusCode::INSUFFICIENT_STORAGE {
            *since = Some(std::time::Instant::now());
        } else if wrote && status.is_success() {
            *since = None;
        }
    }

    /// Runs store work on a blocking thread: the store is synchronous (SQLite), and the
    /// runtime's threads must stay free to accept requests.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        tokio::task::spawn_blocking(work)
            .await
            .map_err(|err| ApiError::internal("a request's work stopped unexpectedly", err))
    }
}
