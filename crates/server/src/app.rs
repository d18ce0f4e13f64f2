//! The server's shared state, its router, and `serve` with a graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use mindrune_store::Store;
use tokio::net::TcpListener;
use tower_http::set_header::SetResponseHeaderLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::config::ServerConfig;
use crate::error::ApiError;

use crate::state::AppState;

/// The Content-Security-Policy of every answer: only the server's own script and style, no
/// inline code, no frames, forms only to the server itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The HSTS header sent when cookies are `Secure`: a year, as browsers' preload lists ask.
pub(crate) const STRICT_TRANSPORT_SECURITY: &str = "max-age=31536000; includeSubDomains";

/// Every route of the server.
pub fn router(state: AppState) -> Router {
    let timeout = Duration::from_secs(state.config().request_timeout_secs);
    // HSTS exactly when cookies are Secure: the server is then reached through TLS, and a
    // browser that once saw it never again sends a session over plain HTTP.
    let hsts = state
        .config()
        .cookies_secure()
        .then(|| HeaderValue::from_static(STRICT_TRANSPORT_SECURITY));
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .merge(crate::api::routes())
        .merge(crate::dashboard::routes())
        .merge(crate::inbox::routes())
        .merge(crate::script_page::routes())
        .merge(crate::run_page::routes())
        .merge(crate::console::routes())
        .merge(crate::metrics::routes())
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
        .layer(SetResponseHeaderLayer::overriding(
            header::STRICT_TRANSPORT_SECURITY,
            move |_: &axum::response::Response| hsts.clone(),
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
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::fairness::fair_share,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            track_storage,
        ))
        .with_state(state)
}

/// Every answer is noted for `/ready`: a 507 means the disk is full, a write that succeeded
/// means it is not (any more).
async fn track_storage(
    State(state): State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let wrote = !request.method().is_safe();
    let area = area_of(request.uri().path());
    // The path a refusal names on the console, cut: a hostile path is not kept whole.
    let path = crate::wire::shown_path(request.uri().path());
    let response = next.run(request).await;
    let status = response.status();
    state.note_storage(status, wrote);
    // Refused: the client's request (4xx) or the server's load (503); an error: anything
    // else that failed on the server's side.
    if status.is_client_error() || status == StatusCode::SERVICE_UNAVAILABLE {
        state.health().note_refused(format!(
            "{} {} ({area}: {path})",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        ));
        state.metrics().note_request_refused(status.as_u16(), area);
    } else if status.is_server_error() {
        state.health().note_error(mindrune_engine::now_millis());
    }
    response
}

/// Which face a request was for, for the console's refusals.
fn area_of(path: &str) -> &'static str {
    if path.starts_with("/v1/") {
        "runner API"
    } else if path.starts_with("/dashboard") {
        "dashboard"
    } else if path.starts_with("/console") {
        "console"
    } else if path.starts_with("/mcp") {
        "MCP"
    } else if path == "/metrics" {
        "metrics"
    } else {
        "other"
    }
}

/// Liveness: the process answers.
async fn health() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

/// Readiness: the library answers too, and its disk has room for a write.
async fn ready(State(state): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let store = state.store();
    match state.blocking(move || store.vocabulary_digest()).await? {
        Ok(_) => {}
        Err(err) => {
            return Err(ApiError::unavailable(format!(
                "the library cannot be read: {err}"
            )));
        }
    }
    let checking = state.clone();
    match state.blocking(move || checking.storage_problem()).await? {
        None => Ok(axum::Json(serde_json::json!({ "status": "ready" }))),
        Some(problem) => Err(ApiError::unavailable(format!(
            "not ready: {problem}, then the server is ready again by itself"
        ))),
    }
}

/// Serves until `shutdown` resolves, then stops accepting and lets requests in flight finish
/// (for at most the configured grace period).
///
/// The accept loop is written out rather than `axum::serve`, which gives hyper no timer and so
/// no header-read timeout, and takes every connection it is offered. Here a connection whose
/// headers have not all arrived within `header_read_timeout_secs` is closed by hyper, and past
/// `max_connections` — or past `max_connections_per_peer` from one address — a new connection
/// is answered 503 and closed at once: a client that opens connections and sends nothing holds
/// at most its peer's share, and only for the header timeout (`fairness`).
pub async fn serve(
    state: AppState,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let grace = Duration::from_secs(state.config().shutdown_grace_secs);
    let header_timeout = Duration::from_secs(state.config().header_read_timeout_secs);
    let permits = Arc::new(tokio::sync::Semaphore::new(state.config().max_connections));
    let peers = crate::fairness::PeerConnections::new(state.config().max_connections_per_peer);
    let app = router(state.clone());
    // `stopping` tells every connection to finish its request and close; `open` is held by
    // every connection, so its sender sees it closed once the last one is gone.
    let (stopping_tx, stopping_rx) = tokio::sync::watch::channel(false);
    let (open_tx, open_rx) = tokio::sync::watch::channel(());
    restore_health(&state).await;
    let health_saver = tokio::spawn(save_health_every(state.clone(), HEALTH_SAVE_INTERVAL));
    // The alert loop, beside the requests (never on their path); it stops with them.
    let alert_loop = crate::alerts::spawn(state.clone(), stopping_rx.clone());
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            state
                .health()
                .note_refused("503 Service Unavailable (over max_connections)".into());
            tokio::spawn(refuse_busy(stream, BUSY));
            continue;
        };
        let Some(peer_slot) = peers.open(peer.ip()) else {
            state
                .health()
                .note_refused("503 Service Unavailable (over max_connections_per_peer)".into());
            tokio::spawn(refuse_busy(stream, BUSY_PEER));
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut stopping = stopping_rx.clone();
        let open = open_rx.clone();
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout);
            let connection =
                builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            let mut told = false;
            loop {
                tokio::select! {
                    result = connection.as_mut() => {
                        if let Err(err) = result {
                            tracing::debug!("a connection ended with an error: {err}");
                        }
                        break;
                    }
                    changed = stopping.changed(), if !told => {
                        told = true;
                        if changed.is_ok() {
                            connection.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
            drop(permit);
            drop(peer_slot);
            drop(open);
        });
    }
    drop(listener);
    tracing::info!("shutting down: finishing the requests in flight");
    let _ = stopping_tx.send(true);
    drop(open_rx);
    tokio::select! {
        () = open_tx.closed() => {}
        () = tokio::time::sleep(grace) => {
            tracing::warn!("requests still running after {} s; stopping anyway", grace.as_secs());
        }
    }
    if let Some(alert_loop) = alert_loop {
        // A pass under way finishes (a delivery takes at most its timeout); no new one starts.
        let _ = tokio::time::timeout(grace, alert_loop).await;
    }
    health_saver.abort();
    save_health(&state).await;
    Ok(())
}

/// Takes back the counters a server on this library saved before (it restarted), so the
/// console goes on from them; unreadable ones are left and counting starts over. Read on a
/// blocking thread: a PostgreSQL library's client blocks.
async fn restore_health(state: &AppState) {
    let store = state.store();
    match tokio::task::spawn_blocking(move || store.server_health()).await {
        Ok(Ok(Some((_, body)))) => {
            if let Err(err) = state.health().restore(&body) {
                tracing::warn!(
                    "the saved health counters cannot be read ({err}); counting starts over"
                );
            }
        }
        Ok(Ok(None)) => {}
        Ok(Err(err)) => tracing::warn!("cannot read the saved health counters: {err}"),
        Err(err) => tracing::warn!("cannot read the saved health counters: {err}"),
    }
}

/// How often the health counters are saved to the library when they changed.
const HEALTH_SAVE_INTERVAL: Duration = Duration::from_secs(5);

async fn save_health_every(state: AppState, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        save_health(&state).await;
    }
}

/// Saves the console's health counters when they changed, off the async threads; a save that
/// fails is logged and tried again at the next one.
async fn save_health(state: &AppState) {
    let Some(body) = state.health().changes() else {
        return;
    };
    let store = state.store();
    let now = mindrune_engine::now_millis();
    let saved = tokio::task::spawn_blocking(move || store.save_server_health(now, &body)).await;
    if !matches!(saved, Ok(Ok(()))) {
        state.health().touch();
        match saved {
            Ok(Err(err)) => tracing::warn!("cannot save the health counters: {err}"),
            Err(err) => tracing::warn!("cannot save the health counters: {err}"),
            Ok(Ok(())) => {}
        }
    }
}

/// An accept that failed: a connection reset before it was accepted is nothing; anything else
/// (out of file descriptors) is logged and waited out briefly, so the loop does not spin.
async fn accept_failed(err: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!("cannot accept a connection: {err}");
    tokio::time::sleep(Duration::from_millis(200)).await;
}

const BUSY: &str = r#"{"error":{"code":"unavailable","message":"the server is serving as many connections as it takes (max_connections); try again in a second"}}"#;
const BUSY_PEER: &str = r#"{"error":{"code":"unavailable","message":"your address holds as many connections as one address may (max_connections_per_peer); close one or try again in a second"}}"#;

/// The answer to a connection over the cap, written without reading the request: the client
/// hears why and when to come back instead of waiting in a queue.
async fn refuse_busy(mut stream: tokio::net::TcpStream, body: &'static str) {
    use tokio::io::AsyncWriteExt as _;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let write = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(5), write).await;
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
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
