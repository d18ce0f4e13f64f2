//! Hostile and broken surroundings: clients that open connections and never finish their
//! headers, more connections than the server takes, a server reached beyond loopback, and a
//! library whose disk is full. Each runs the real accept loop (`mindrune_server::serve`) on a real socket,
//! or the router over a library on a real, small tmpfs.

use mindrune_store::Directory as _;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use http_body_util::BodyExt as _;
use mindrune_server::AppState;
use mindrune_server::ServerConfig;
use mindrune_server::secret_digest;
use mindrune_server::{router, serve};
use mindrune_store::SqliteStore;
use tower::ServiceExt as _;

/// A server on a free loopback port, stopped when dropped.
struct Running {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

fn start(config: ServerConfig) -> Running {
    let store = SqliteStore::open_in_memory().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let state = AppState::new(Box::new(store), config);
    runtime.spawn(serve(state, listener, async move {
        let _ = stopped.await;
    }));
    Running {
        addr,
        runtime: Some(runtime),
        stop: Some(stop),
    }
}

/// `GET /health` on a new connection: the status line, or the error.
fn health(addr: SocketAddr) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer.lines().next().unwrap_or("").to_string())
}

#[test]
fn a_client_that_never_finishes_its_headers_is_cut_off_and_others_are_still_served() {
    let server = start(ServerConfig {
        header_read_timeout_secs: 1,
        ..ServerConfig::default()
    });
    // One client that never sends a byte, one that stops in the middle of its headers.
    let mut silent = TcpStream::connect(server.addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut slow = TcpStream::connect(server.addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    // Half a request line, then nothing: a slowloris.
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    assert_eq!(health(server.addr).unwrap(), "HTTP/1.1 200 OK");
    let started = Instant::now();
    let mut rest = Vec::new();
    // The server closes it (hyper may first answer 408); the read ends either way.
    let _ = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "the slow client was held {waited:?}"
    );
    let text = String::from_utf8_lossy(&rest);
    assert!(
        rest.is_empty() || text.starts_with("HTTP/1.1 408"),
        "{text}"
    );
    let mut nothing = Vec::new();
    let _ = silent.read_to_end(&mut nothing);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the silent client was held {:?}",
        started.elapsed()
    );
}

#[test]
fn past_the_connection_cap_a_new_connection_hears_503_at_once_and_a_freed_slot_serves_again() {
    let server = start(ServerConfig {
        max_connections: 2,
        header_read_timeout_secs: 30,
        ..ServerConfig::default()
    });
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let stream = TcpStream::connect(server.addr).unwrap();
            (&stream).write_all(b"GET /health HTTP/1.1\r\n").unwrap();
            stream
        })
        .collect();
    // Both slots are taken once the server has accepted the two.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let mut busy = TcpStream::connect(server.addr).unwrap();
    busy.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut answer = String::new();
    busy.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(answer.contains("Retry-After: 1"), "{answer}");
    assert!(answer.contains("max_connections"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(2));
    drop(held);
    // The slots are given back as the held connections close.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match health(server.addr) {
            Ok(status) if status == "HTTP/1.1 200 OK" => break,
            other => assert!(Instant::now() < deadline, "still refused: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn past_its_peer_share_one_address_hears_503_naming_the_setting_and_another_is_served() {
    let server = start(ServerConfig {
        max_connections_per_peer: 2,
        header_read_timeout_secs: 30,
        ..ServerConfig::default()
    });
    let held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let stream = TcpStream::connect(server.addr).unwrap();
            (&stream).write_all(b"GET /health HTTP/1.1\r\n").unwrap();
            stream
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(server.addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut answer = String::new();
    third.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 503 Service Unavailable\r\n"),
        "{answer}"
    );
    assert!(answer.contains("max_connections_per_peer"), "{answer}");
    // The server listens on 127.0.0.1; a client bound to 127.0.0.2 is another peer.
    let other = std::net::SocketAddr::from(([127, 0, 0, 2], 0));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let status = runtime.block_on(async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(other).unwrap();
        let mut stream = socket.connect(server.addr).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        String::from_utf8_lossy(&answer)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    });
    assert_eq!(status, "HTTP/1.1 200 OK");
    drop(held);
}

#[test]
fn a_body_that_trickles_past_its_deadline_is_answered_408_naming_the_setting() {
    let server = start(ServerConfig {
        body_read_timeout_secs: 1,
        ..ServerConfig::default()
    });
    for (path, kind) in [
        ("/v1/events", "application/json"),
        ("/dashboard/login", "application/x-www-form-urlencoded"),
    ] {
        let mut slow = TcpStream::connect(server.addr).unwrap();
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            slow,
            "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer mr_runner_x\r\nContent-Type: {kind}\r\nContent-Length: 1000\r\n\r\nname="
        )
        .unwrap();
        let started = Instant::now();
        let mut answer = Vec::new();
        let _ = slow.read_to_end(&mut answer);
        let answer = String::from_utf8_lossy(&answer);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{path}: held {:?}",
            started.elapsed()
        );
        // The runner API checks the token before it reads the body: a wrong token is refused
        // at once; the login form reads its body and meets the deadline.
        if path == "/dashboard/login" {
            assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
            assert!(
                answer.contains("body_read_timeout_secs"),
                "{path}: {answer}"
            );
        } else {
            assert!(answer.starts_with("HTTP/1.1 4"), "{path}: {answer}");
        }
    }
}

/// The login page's answer under `config`: its `Set-Cookie` and HSTS headers.
fn login_headers(config: ServerConfig) -> (Vec<String>, Option<String>) {
    let state = AppState::new(Box::new(SqliteStore::open_in_memory().unwrap()), config);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let response = runtime
        .block_on(
            router(state).oneshot(
                Request::get("/dashboard/login")
                    .body(Body::empty())
                    .unwrap(),
            ),
        )
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookies = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let hsts = response
        .headers()
        .get(header::STRICT_TRANSPORT_SECURITY)
        .map(|v| v.to_str().unwrap().to_string());
    (cookies, hsts)
}

#[test]
fn beyond_loopback_cookies_are_secure_and_hsts_is_sent_by_default() {
    let (cookies, hsts) = login_headers(ServerConfig {
        addr: "0.0.0.0:7878".parse().unwrap(),
        ..ServerConfig::default()
    });
    assert!(!cookies.is_empty());
    assert!(
        cookies
            .iter()
            .all(|c| c.contains("; Secure") && c.starts_with("__Host-") && c.contains("; Path=/;")),
        "a Secure cookie is __Host- prefixed, which no sibling subdomain can plant: {cookies:?}"
    );
    assert_eq!(hsts.as_deref(), Some("max-age=31536000; includeSubDomains"));

    let (cookies, hsts) = login_headers(ServerConfig::default());
    assert!(
        cookies.iter().all(|c| !c.contains("Secure")),
        "on loopback a browser reaches the server over plain HTTP: {cookies:?}"
    );
    assert_eq!(hsts, None);

    let (cookies, hsts) = login_headers(ServerConfig {
        addr: "10.0.0.5:7878".parse().unwrap(),
        secure_cookies: Some(false),
        ..ServerConfig::default()
    });
    assert!(cookies.iter().all(|c| !c.contains("Secure")), "{cookies:?}");
    assert_eq!(hsts, None, "turned off on purpose, for a private network");
}

/// A tmpfs this test mounted; unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).unwrap();
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            .then(|| Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // The server's state (and so the library's file) lives as long as the process, so
        // a plain unmount may find it busy; the lazy one then detaches it.
        let unmounted = Command::new("umount")
            .arg(&self.0)
            .stderr(Stdio::null())
            .status();
        if !unmounted.is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Writes `path` until the disk it is on is full.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    let block = vec![7u8; 64 * 1024];
    loop {
        match file.write_all(&block) {
            Ok(()) => {}
            Err(err) if err.raw_os_error() == Some(28) => break,
            Err(err) => panic!("filling {}: {err}", path.display()),
        }
    }
    // The last partial block, byte by byte, so not even a page is left.
    while file.write_all(&[7]).is_ok() {}
}

async fn send(app: &axum::Router, request: Request<Body>) -> (StatusCode, serde_json::Value) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    (status, body)
}

fn events(from: usize, n: usize) -> Body {
    let events: Vec<_> = (from..from + n)
        .map(|i| {
            serde_json::json!({"event": {"id": format!("e{i}"), "kind": "execute_code",
                "code": format!("await bot.chop({i}); // {}", "x".repeat(20_000)), "ok": true,
                "output": "y".repeat(20_000)}})
        })
        .collect();
    Body::from(serde_json::json!({ "events": events }).to_string())
}

fn post_events(body: Body) -> Request<Body> {
    Request::post("/v1/events")
        .header(header::AUTHORIZATION, "Bearer mr_runner_t")
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap()
}

#[test]
fn on_a_full_disk_writes_answer_507_with_the_reason_and_ready_says_not_ready_until_there_is_room() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("disk");
    let Some(_disk) = Tmpfs::mount(&mnt, "24m") else {
        eprintln!("cannot mount a tmpfs here (not root?); the full disk was not tested");
        return;
    };
    let store = SqliteStore::open(&mnt.join("library.db")).unwrap();
    let owner = store
        .create_owner("ada", &secret_digest("mrk_ada_key"), 0)
        .unwrap();
    let agent = store.create_agent(owner.id, "buzz", "/work", 0).unwrap();
    store
        .issue_runner_token(owner.id, agent.id, &secret_digest("mr_runner_t"), 0)
        .unwrap();
    let app = router(AppState::new(Box::new(store), ServerConfig::default()));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (status, _) = send(&app, Request::get("/ready").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = send(&app, post_events(events(0, 5))).await;
        assert_eq!(status, StatusCode::OK);

        let filler = mnt.join("filler");
        fill(&filler);
        let (status, body) = send(&app, post_events(events(100, 60))).await;
        assert_eq!(status, StatusCode::INSUFFICIENT_STORAGE, "{body}");
        assert_eq!(body["error"]["code"], "insufficient_storage");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("disk is full") && message.contains("nothing was stored"),
            "{message}"
        );
        let (status, body) = send(&app, Request::get("/ready").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(mnt.to_str().unwrap()) && message.contains("bytes free"),
            "the answer names the disk: {message}"
        );

        // With room again the server is ready by itself, and the batch sent again is stored.
        std::fs::remove_file(&filler).unwrap();
        let (status, _) = send(&app, Request::get("/ready").body(Body::empty()).unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = send(&app, post_events(events(100, 60))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    });
}
