//! Hostile load on the real `mindrune serve`, on loopback only: slow clients do not starve the
//! others. The other peer is `127.0.0.2` (all of `127.0.0.0/8` is loopback on Linux), so the
//! server sees two addresses without any traffic leaving the machine.

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

use crate::util::{Server, TestLibrary, free_port};

const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);
const OTHER_PEER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A connection to `server` from the loopback address `from`.
async fn connect_from(from: Ipv4Addr, server: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::V4(SocketAddrV4::new(from, 0)))?;
    socket.connect(server).await
}

/// One request on a new connection from `from`; the answer's status line.
async fn status_line(from: Ipv4Addr, server: SocketAddr, request: &str) -> std::io::Result<String> {
    let mut stream = connect_from(from, server).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await?;
    let text = String::from_utf8_lossy(&answer);
    Ok(text.lines().next().unwrap_or("").to_string())
}

#[test]
fn a_thousand_slow_connections_from_one_peer_leave_health_and_runners_of_another_answered_within_a_second()
 {
    let lib = TestLibrary::new();
    lib.agent("rnchk", "ada");
    let token = lib.ok(&["token", "issue", "rnchk"]).trim().to_string();
    let port = free_port();
    let _server = Server::start(&lib, port);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // The attack: 1,000 connections from one address, half stopping in the middle of
        // their headers, half sending a login form's headers and then a trickle of its body
        // (the login needs no credential to reach).
        let mut held = Vec::new();
        for i in 0..1000 {
            let Ok(mut stream) = connect_from(ATTACKER, addr).await else {
                continue;
            };
            let start: &[u8] = if i % 2 == 0 {
                b"GET /dashboard/login HTTP/1.1\r\nHost: x\r\nX-Slow: "
            } else {
                b"POST /dashboard/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\nname=a"
            };
            let _ = stream.write_all(start).await;
            held.push(stream);
        }
        // Another peer meanwhile: health probes and a runner's requests, each given a second.
        let health = format!("GET /health HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        let whoami = format!(
            "GET /v1/whoami HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
        );
        let (mut answered, mut asked) = (0, 0);
        let mut slowest = Duration::ZERO;
        for i in 0..120 {
            let request = if i % 2 == 0 { &health } else { &whoami };
            let started = Instant::now();
            let answer = tokio::time::timeout(
                Duration::from_secs(1),
                status_line(OTHER_PEER, addr, request),
            )
            .await;
            asked += 1;
            if let Ok(Ok(status)) = answer
                && status == "HTTP/1.1 200 OK"
            {
                answered += 1;
                slowest = slowest.max(started.elapsed());
            }
        }
        println!(
            "slowloris: {} of 1000 slow connections open from one peer; another peer's health probes and runner requests answered within 1 s: {answered}/{asked} (slowest {slowest:?})",
            held.len()
        );
        assert!(
            answered * 100 >= asked * 95,
            "only {answered} of {asked} answered within a second"
        );
        drop(held);
    });
}

/// The server's peak resident memory so far (`VmHWM`), in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kib / 1024
}

fn http() -> ureq::Agent {
    ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(300)))
            .build(),
    )
}

/// POSTs `body` with `token`: the status and the answer's first 2,000 bytes.
fn post(url: &str, token: &str, body: &[u8]) -> (u16, String) {
    let mut response = http()
        .post(url)
        .header("Authorization", &format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body)
        .unwrap_or_else(|err| panic!("POST {url}: {err}"));
    let status = response.status().as_u16();
    let text = response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .unwrap_or_default();
    (status, text.chars().take(2000).collect())
}

/// A turn body of `files` entries, each named by `name(i)` and holding `content`.
fn turn_body(files: usize, name: impl Fn(usize) -> String, content: &str) -> Vec<u8> {
    let mut body = String::from(r#"{"boundary":"turn_end","files":{"#);
    for i in 0..files {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&serde_json::to_string(&name(i)).unwrap());
        body.push_str(r#":{"text":"#);
        body.push_str(&serde_json::to_string(content).unwrap());
        body.push('}');
    }
    body.push_str("}}");
    body.into_bytes()
}

#[test]
fn one_token_s_costliest_requests_at_once_keep_the_server_under_300_mb_and_answering() {
    let lib = TestLibrary::new();
    lib.agent("rnchk", "ada");
    let token = lib.ok(&["token", "issue", "rnchk"]).trim().to_string();
    let port = free_port();
    let server = Server::start(&lib, port);
    let pid = server.child.id();
    let base = format!("http://127.0.0.1:{port}");
    let before = peak_rss_mib(pid);
    // A turn listing 1.2 million short names (about 25 MB), four at once: refused at the
    // first name past the bound, naming it.
    let names = turn_body(1_200_000, |i| format!("{i:x}"), "");
    // A turn of 28 scripts of nearly 1 MB each (30 MB as JSON, under the 32 MiB limit), four at once.
    let script = "// chop\n".repeat(120_000);
    let scripts = turn_body(28, |i| format!("bots/rnchk/s{i}.ts"), &script);
    // An event batch of 500 calls with 16 KB commands (8 MB), twice at once.
    let command = format!("echo {}", "x".repeat(16_000));
    let events: Vec<serde_json::Value> = (0..500)
        .map(|i| {
            serde_json::json!({"event": {"id": format!("e{i}"), "kind": "shell", "command": command,
                                         "cwd": "/work", "ok": true}})
        })
        .collect();
    let batch = serde_json::to_vec(&serde_json::json!({ "events": events })).unwrap();
    let started = Instant::now();
    let answers: Vec<(u16, String)> = std::thread::scope(|scope| {
        let sends: Vec<_> = (0..10)
            .map(|i| {
                let (path, body) = match i % 5 {
                    0 | 2 => ("turns", &names),
                    1 | 3 => ("turns", &scripts),
                    _ => ("events", &batch),
                };
                let (url, token) = (format!("{base}/v1/{path}"), &token);
                scope.spawn(move || post(&url, token, body))
            })
            .collect();
        // Meanwhile a cheap request is answered promptly.
        std::thread::sleep(Duration::from_millis(500));
        let asked = Instant::now();
        let mut whoami = http()
            .get(&format!("{base}/v1/whoami"))
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .unwrap();
        assert_eq!(whoami.status().as_u16(), 200);
        let _ = whoami.body_mut().read_to_string();
        println!("whoami answered in {:?} under the load", asked.elapsed());
        sends.into_iter().map(|send| send.join().unwrap()).collect()
    });
    let peak = peak_rss_mib(pid);
    println!(
        "one token's costliest requests, 10 at once: peak server RSS {peak} MiB (idle {before} MiB), {:?}",
        started.elapsed()
    );
    for (i, (status, answer)) in answers.iter().enumerate() {
        if matches!(i % 5, 0 | 2) {
            assert_eq!(*status, 400, "{answer}");
            assert!(answer.contains("more than 1000 files"), "{answer}");
        } else {
            assert_eq!(*status, 200, "{answer}");
        }
    }
    assert!(peak < 300, "peak server RSS {peak} MiB");
}

#[test]
fn each_runner_bound_is_refused_by_the_real_server_naming_the_field_and_never_echoing_a_hostile_path()
 {
    let lib = TestLibrary::new();
    lib.agent("rnchk", "ada");
    let token = lib.ok(&["token", "issue", "rnchk"]).trim().to_string();
    let port = free_port();
    let _server = Server::start(&lib, port);
    let base = format!("http://127.0.0.1:{port}");
    let refused = |path: &str, body: serde_json::Value| {
        let (status, answer) = post(
            &format!("{base}/v1/{path}"),
            &token,
            body.to_string().as_bytes(),
        );
        assert_eq!(status, 400, "{path}: {answer}");
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        (
            answer["error"]["field"].as_str().unwrap_or("").to_string(),
            answer["error"]["message"].as_str().unwrap().to_string(),
        )
    };
    // A mirror request of 10,001 keys.
    let have: serde_json::Map<String, serde_json::Value> = (0..=10_000)
        .map(|i| (format!("k{i}"), serde_json::json!("v")))
        .collect();
    let (field, message) = refused("mirror", serde_json::json!({ "have": have }));
    assert_eq!(field, "have");
    assert!(
        message.starts_with("more than 10000 mirror keys"),
        "{message}"
    );
    // An event naming 65 files.
    let files: serde_json::Map<String, serde_json::Value> = (0..65)
        .map(|i| {
            (
                format!("bots/rnchk/s{i}.ts"),
                serde_json::json!({"text": ""}),
            )
        })
        .collect();
    let event = serde_json::json!({"id": "e1", "kind": "shell", "command": "bun bots/rnchk/s0.ts",
                                   "cwd": "/work", "ok": true});
    let (field, message) = refused(
        "events",
        serde_json::json!({"events": [{"event": event, "files": files}]}),
    );
    assert_eq!(field, "events[0].files");
    assert!(
        message.contains("more than 64 files of one event"),
        "{message}"
    );
    // A 10 MB path: refused, and the answer does not carry it back.
    let long = format!("bots/rnchk/{}.ts", "a".repeat(10 * 1024 * 1024));
    let (status, answer) = post(
        &format!("{base}/v1/wrapup"),
        &token,
        serde_json::json!({"files": {long: {"text": ""}}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer.contains("over the 4096-byte limit of a path"),
        "{answer}"
    );
    assert!(answer.len() < 1_000, "the answer is {} bytes", answer.len());
    // A path over the folder's rules but under the bounds: named, cut to 200 characters.
    let odd = format!("elsewhere/{}.ts", "b".repeat(3_000));
    let (field, _) = refused("wrapup", serde_json::json!({"files": {odd: {"text": ""}}}));
    assert!(field.ends_with("… (3013 bytes)"), "{field}");
    assert!(field.chars().count() < 300, "{field}");
}
