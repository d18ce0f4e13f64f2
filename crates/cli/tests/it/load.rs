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
