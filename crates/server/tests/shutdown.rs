//! A shutdown lets the requests in flight finish: a runner that is halfway through sending a
//! batch when the server is told to stop still gets its answer, and its events are stored.

use mindrune_store::{Directory as _, SkillRecords as _};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use mindrune_server::AppState;
use mindrune_server::ServerConfig;
use mindrune_server::secret_digest;
use mindrune_server::serve;
use mindrune_store::SqliteStore;

#[test]
fn a_batch_in_flight_at_shutdown_is_answered_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("library.db");
    let (owner, agent) = family(&path);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (addr, stop_tx, server) = start(&runtime, &path);

    let events: Vec<_> = (0..20)
        .map(|i| {
            serde_json::json!({
                "event": {"id": format!("e{i}"), "kind": "execute_code", "code": format!("await bot.chop({i});"), "ok": true}
            })
        })
        .collect();
    let body = serde_json::json!({ "events": events }).to_string();
    let (first, rest) = body.as_bytes().split_at(body.len() / 2);

    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer mr_runner_t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(first).unwrap();
    stream.flush().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    // The server is told to stop while the batch is half sent.
    stop_tx.send(()).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    stream.write_all(rest).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(answer.matches("\"recorded\"").count(), 20, "{answer}");

    runtime.block_on(server).unwrap().unwrap();
    // The server is gone…
    assert!(TcpStream::connect(addr).is_err());
    // …and what it acknowledged is in the library.
    let store = SqliteStore::open(&path).unwrap();
    let snippets = store.snippets(owner.id, agent.id).unwrap();
    assert_eq!(snippets.len(), 20);
}

/// A library at `path` with Ada, her avatar buzz, its runner token `mr_runner_t` and the
/// operator token `mr_operator_o`.
fn family(path: &std::path::Path) -> (mindrune_store::Owner, mindrune_store::Agent) {
    let store = SqliteStore::open(path).unwrap();
    let owner = store
        .create_owner("ada", &secret_digest("mrk_ada_key"), 0)
        .unwrap();
    let agent = store.create_agent(owner.id, "buzz", "/work", 0).unwrap();
    store
        .issue_runner_token(owner.id, agent.id, &secret_digest("mr_runner_t"), 0)
        .unwrap();
    store
        .issue_operator_token(&secret_digest("mr_operator_o"), 0)
        .unwrap();
    (owner, agent)
}

/// Sends one request to `addr` and reads the whole answer (the server closes it).
fn ask(addr: std::net::SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Serves `path`'s library until the returned sender is used; the server's address and its
/// task.
fn start(
    runtime: &tokio::runtime::Runtime,
    path: &std::path::Path,
) -> (
    std::net::SocketAddr,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let state = AppState::new(
        Box::new(SqliteStore::open(path).unwrap()),
        ServerConfig::default(),
    );
    let server = runtime.spawn(serve(state, listener, async move {
        let _ = stop_rx.await;
    }));
    (addr, stop_tx, server)
}

#[test]
fn the_console_s_health_counts_go_on_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("library.db");
    family(&path);
    let runtime = tokio::runtime::Runtime::new().unwrap();

    // The first server: a refused runner call, and a runner's batch of three events.
    let (addr, stop, server) = start(&runtime, &path);
    let refused = ask(
        addr,
        &format!(
            "GET /v1/whoami HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer mr_runner_nope\r\nConnection: close\r\n\r\n"
        ),
    );
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let body = serde_json::json!({"events": (0..3).map(|i| serde_json::json!({
        "event": {"id": format!("e{i}"), "kind": "execute_code", "code": "await bot.chop();", "ok": true}
    })).collect::<Vec<_>>()})
    .to_string();
    let recorded = ask(
        addr,
        &format!(
            "POST /v1/events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer mr_runner_t\r\nx-mindrune-spool: 4\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(recorded.starts_with("HTTP/1.1 200"), "{recorded}");
    stop.send(()).unwrap();
    runtime.block_on(server).unwrap().unwrap();

    // The second server on the same library shows what the first one counted.
    let (addr, stop, server) = start(&runtime, &path);
    let console = ask(
        addr,
        &format!(
            "GET /console HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer mr_operator_o\r\nConnection: close\r\n\r\n"
        ),
    );
    stop.send(()).unwrap();
    runtime.block_on(server).unwrap().unwrap();
    assert!(console.starts_with("HTTP/1.1 200"), "{console}");
    assert!(
        console.contains("401 Unauthorized (runner API: /v1/whoami)"),
        "{console}"
    );
    assert!(
        console.contains("data-ok=\"3\""),
        "the three events' minute: {console}"
    );
    assert!(
        console.contains(">buzz<"),
        "the runner's last contact: {console}"
    );
    assert!(
        console.contains("kept in the library, so a restart goes on from them"),
        "{console}"
    );
}
