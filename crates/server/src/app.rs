//! The server's shared state, its router, and `serve` with a graceful shutdown.

use std::future::IntoFuture as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use mindrune_engine::ingest::Recorder;
use mindrune_store::Store;
use tokio::net::TcpListener;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::config::ServerConfig;
use crate::error::ApiError;

/// What every handler shares: the library and the recorder that writes runs into it.
#[derive(Clone)]
pub struct AppState {
    shared: Arc<Shared>,
}

struct Shared {
    store: &'static dyn Store,
    recorder: &'static Recorder<'static>,
    config: ServerConfig,
}

impl AppState {
    /// The state of a server over `store`. The store and its recorder live as long as the
    /// process: a server opens its library once and serves it until it exits, and handlers run
    /// on blocking threads that need `'static` access to both.
    pub fn new(store: Box<dyn Store>, config: ServerConfig) -> AppState {
        let store: &'static dyn Store = Box::leak(store);
        let recorder: &'static Recorder<'static> = Box::leak(Box::new(Recorder::new(store)));
        AppState {
            shared: Arc::new(Shared {
                store,
                recorder,
                config,
            }),
        }
    }

    pub fn store(&self) -> &'static dyn Store {
        self.shared.store
    }

    pub fn recorder(&self) -> &'static Recorder<'static> {
        self.shared.recorder
    }

    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
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

/// The Content-Security-Policy of every answer: only the server's own script and style, no
/// inline code, no frames, forms only to the server itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Every route of the server.
pub fn router(state: AppState) -> Router {
    let timeout = Duration::from_secs(state.config().request_timeout_secs);
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .merge(crate::api::routes())
        .merge(crate::dashboard::routes())
        .merge(crate::console::routes())
        .layer(SetResponseHeaderLayer::overriding(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("DENY"),
        ))
        .layer(SetResponseHeaderLayer::overriding(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ))
        // One log span per request (method, path, status, latency); never the body or the
        // headers, which carry tokens.
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &axum::http::Request<_>| {
                    tracing::info_span!(
                        "request",
                        method = %request.method(),
                        path = %request.uri().path(),
                    )
                })
                .on_response(
                    tower_http::trace::DefaultOnResponse::new().level(tracing::Level::INFO),
                ),
        )
        .with_state(state)
}

/// Liveness: the process answers.
async fn health() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

/// Readiness: the library answers too.
async fn ready(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let store = state.store();
    match state.blocking(move || store.vocabulary_digest()).await? {
        Ok(_) => Ok(axum::Json(serde_json::json!({ "status": "ready" }))),
        Err(err) => Err(ApiError::unavailable(format!(
            "the library cannot be read: {err}"
        ))),
    }
}

/// Serves until `shutdown` resolves, then stops accepting and lets requests in flight finish
/// (for at most the configured grace period).
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = Duration::from_secs(state.config().shutdown_grace_secs);
    let app = router(state);
    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let signal = async move {
        shutdown.await;
        tracing::info!("shutting down: finishing the requests in flight");
        let _ = stopping_tx.send(());
    };
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(signal)
        .into_future();
    tokio::pin!(server);
    tokio::select! {
        result = &mut server => result,
        () = async {
            let _ = stopping_rx.await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!("requests still running after {} s; stopping anyway", grace.as_secs());
            Ok(())
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

/// Runs the server on its own runtime until Ctrl-C or SIGTERM: what `mindrune serve` does.
/// `ready` is called with the bound address once the server accepts connections.
pub fn run(
    store: Box<dyn Store>,
    config: ServerConfig,
    ready: impl FnOnce(std::net::SocketAddr),
) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(config.addr).await.map_err(|err| {
            std::io::Error::new(
                err.kind(),
                format!(
                    "cannot listen on {}: {err} (is another server running there? choose another with --addr)",
                    config.addr
                ),
            )
        })?;
        ready(listener.local_addr()?);
        let state = AppState::new(store, config);
        serve(state, listener, shutdown_signal()).await
    })
}
