//! Alerts reach the owner: a script failing 3 runs in a row after a version change is posted
//! once to each webhook (a webhook that answers 500 at first gets it on a retry), the run that
//! ends the streak is posted once as a resolve, and a restart of the server on the same library
//! sends nothing again. The webhooks are receivers on 127.0.0.1 in this test.

use mindrune_store::Directory as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mindrune_engine::now_millis;
use mindrune_server::AppState;
use mindrune_server::secret_digest;
use mindrune_server::serve;
use mindrune_server::{AlertRule, ServerConfig};
use mindrune_store::Recording as _;
use mindrune_store::{
    AgentId, AlertLedger as _, HeaderState, NewUse, Outcome, OwnerId, ScriptSnapshot, SkillHeader,
    SqliteStore, VersionId,
};

/// A webhook on loopback: answers 500 to its first `failures` posts, then 200, and keeps every
/// body it took.
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<serde_json::Value>>>,
    posts: Arc<AtomicUsize>,
}

fn receiver(failures: usize) -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let posts = Arc::new(AtomicUsize::new(0));
    let (kept, count) = (bodies.clone(), posts.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let seen = count.fetch_add(1, Ordering::SeqCst);
            let status = if seen < failures {
                "500 Internal Server Error"
            } else {
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                "200 OK"
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    Receiver { url, bodies, posts }
}

impl Receiver {
    fn events(&self) -> Vec<(String, String)> {
        self.bodies
            .lock()
            .unwrap()
            .iter()
            .map(|b| {
                (
                    b["event"].as_str().unwrap().to_string(),
                    b["id"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }
}

fn run(version: VersionId, agent: AgentId, ok: bool, at: i64) -> NewUse {
    NewUse {
        version,
        agent,
        outcome: Outcome {
            at,
            ok,
            failure: (!ok).then(|| "Error: no axe in the inventory".to_string()),
            duration_ms: 30_000,
            ..Outcome::default()
        },
        source: "shell".into(),
        call: None,
        output: None,
        event_id: None,
        recorded_at: at,
    }
}

fn snapshot(agent: AgentId, code: &str) -> ScriptSnapshot {
    ScriptSnapshot {
        agent,
        path: "bots/buzz/chop.ts".into(),
        name: "chop".into(),
        digest: mindrune_core::sha256(code.as_bytes()),
        code: code.into(),
        tags: vec![],
        header: SkillHeader {
            state: HeaderState::Skill,
            goal: Some("chop oaks".into()),
            ..SkillHeader::default()
        },
        file_digest: None,
        origin: None,
    }
}

/// A library where buzz/chop.ts ran well on v1 and failed its last 3 runs on v2.
fn library(path: &Path) -> (OwnerId, AgentId, VersionId) {
    let store = SqliteStore::open(path).unwrap();
    let now = now_millis();
    let ada = store
        .create_owner("ada", &secret_digest("mrk_ada_key"), now)
        .unwrap();
    let buzz = store.create_agent(ada.id, "buzz", "/ws/ada", now).unwrap();
    let mut at = now - 20 * 60_000;
    let v1 = store
        .match_script(ada.id, &snapshot(buzz.id, "await chop(1);\n"), now)
        .unwrap();
    for _ in 0..3 {
        at += 60_000;
        store
            .record_use(ada.id, &run(v1.version.id, buzz.id, true, at))
            .unwrap();
    }
    let v2 = store
        .match_script(ada.id, &snapshot(buzz.id, "await chop(2);\n"), now)
        .unwrap();
    assert_ne!(v1.version.id, v2.version.id);
    for _ in 0..3 {
        at += 60_000;
        store
            .record_use(ada.id, &run(v2.version.id, buzz.id, false, at))
            .unwrap();
    }
    (ada.id, buzz.id, v2.version.id)
}

/// A server on the library at `path` until the returned sender is dropped or sent to.
fn start(
    runtime: &tokio::runtime::Runtime,
    path: &Path,
    config: ServerConfig,
) -> (
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let store = SqliteStore::open(path).unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let state = AppState::new(Box::new(store), config);
    let server = runtime.spawn(serve(state, listener, async move {
        let _ = stop_rx.await;
    }));
    (stop_tx, server)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(15);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_alert_per_streak_and_one_resolve_also_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("library.db");
    let (ada, buzz, v2) = library(&path);
    let steady = receiver(0);
    let flaky = receiver(2);
    let config = ServerConfig {
        alerts: vec![
            AlertRule::new("ada", steady.url.clone()),
            AlertRule::new("ada", flaky.url.clone()),
        ],
        alerts_interval_secs: 1,
        alerts_retry_base_secs: 1,
        shutdown_grace_secs: 5,
        ..ServerConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (stop, server) = start(&runtime, &path, config.clone());

    wait_for("the open alert at both webhooks", || {
        !steady.events().is_empty() && !flaky.events().is_empty()
    });
    let opened = steady.bodies.lock().unwrap()[0].clone();
    assert_eq!(opened["event"], "open");
    assert_eq!(opened["owner"], "ada");
    assert_eq!(opened["kind"], "failing");
    assert_eq!(opened["title"], "buzz/chop.ts failed its last 3 runs");
    let detail = opened["detail"].as_str().unwrap();
    assert!(
        detail.contains("Error: no axe in the inventory"),
        "{detail}"
    );
    assert!(detail.contains("suspect: v2"), "{detail}");
    assert!(
        opened["next_step"]
            .as_str()
            .unwrap()
            .contains("v2 likely broke it")
    );
    let id = opened["id"].as_str().unwrap().to_string();
    // The flaky webhook answered 500 twice, then took it on a retry.
    assert_eq!(flaky.posts.load(Ordering::SeqCst), 3);
    assert_eq!(flaky.events(), vec![("open".to_string(), id.clone())]);

    // A run that goes well ends the streak: one resolve each.
    let writer = SqliteStore::open(&path).unwrap();
    writer
        .record_use(ada, &run(v2, buzz, true, now_millis()))
        .unwrap();
    wait_for("the resolve at both webhooks", || {
        steady.events().len() == 2 && flaky.events().len() == 2
    });
    // Two more passes: nothing more is sent.
    std::thread::sleep(Duration::from_millis(2_500));
    let expected = vec![
        ("open".to_string(), id.clone()),
        ("resolve".to_string(), id.clone()),
    ];
    assert_eq!(steady.events(), expected);
    assert_eq!(flaky.events(), expected);
    let resolved = steady.bodies.lock().unwrap()[1].clone();
    assert!(resolved["resolved_at"].as_i64().is_some());
    let delivered = writer.alert_deliveries(ada, false).unwrap();
    assert_eq!(delivered.len(), 4);
    assert!(delivered.iter().all(|d| d.delivered_at.is_some()));

    stop.send(()).unwrap();
    runtime.block_on(server).unwrap().unwrap();

    // The same library again: the alert is known, and so are its deliveries.
    let (stop, server) = start(&runtime, &path, config);
    std::thread::sleep(Duration::from_millis(3_000));
    stop.send(()).unwrap();
    runtime.block_on(server).unwrap().unwrap();
    assert_eq!(steady.events(), expected);
    assert_eq!(flaky.events(), expected);
    assert_eq!(steady.posts.load(Ordering::SeqCst), 2);
    assert_eq!(flaky.posts.load(Ordering::SeqCst), 4);
}
