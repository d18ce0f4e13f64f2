//! `mindrune bench serve`: runners on loopback sending events to a real `mindrune serve`
//! process, beside the same events recorded in-process (no HTTP) in the same run.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use mindrune_engine::Recorder;
use mindrune_engine::workspace::SnapshotFiles;
use mindrune_server::auth::{new_secret, secret_digest};
use mindrune_store::{SqliteStore, Store as _};
use serde_json::json;

use crate::library;

/// Distinct scripts each runner's avatar runs.
const SCRIPTS_PER_RUNNER: usize = 10;

fn script(runner: usize, k: usize) -> String {
    format!(
        "/** @skill chop-{k}\n * Goal: chop trees at spot {k}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\n\
await runScript(async ({{ bot, sdk }}) => {{\n  const spot = {k};\n  const me = {runner};\n\
  for (let i = 0; i < 28; i++) {{\n    const tree = sdk.findNearbyLoc(/^Tree$/);\n    if (!tree) break;\n    await bot.chopTree(tree);\n  }}\n}});\n"
    )
}

/// One event of runner `runner`, its `seq`-th: the wire object and the file it runs.
fn wire_event(runner: usize, seq: u64) -> serde_json::Value {
    let k = (seq as usize) % SCRIPTS_PER_RUNNER;
    let agent = format!("runner{runner:02}");
    let path = format!("bots/{agent}/chop-{k}.ts");
    let ok = !seq.is_multiple_of(11);
    json!({
        "event": {
            "id": format!("{agent}-{seq}"),
            "kind": "shell",
            "command": format!("bun {path}"),
            "cwd": "/work",
            "ok": ok,
            "duration_ms": 30_000,
            "measures": { "xp": { "Woodcutting": if ok { 250 } else { 0 } } },
        },
        "files": { path: { "text": script(runner, k) } },
    })
}

struct Served {
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn start_server(home: &Path, port: u16) -> anyhow::Result<Served> {
    let exe = std::env::current_exe().context("cannot find the mindrune binary")?;
    let child = Command::new(exe)
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .env("MINDRUNE_HOME", home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start `mindrune serve`")?;
    let served = Served { child };
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(20) {
        if ureq::get(&format!("http://127.0.0.1:{port}/ready"))
            .call()
            .is_ok()
        {
            return Ok(served);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("`mindrune serve` did not answer /ready within 20 s")
}

/// The server's peak resident memory (VmHWM), in MiB.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

pub fn serve(
    seconds: u64,
    runners: usize,
    batch: usize,
    json_out: bool,
) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        runners >= 1 && batch >= 1,
        "--runners and --batch must be at least 1"
    );
    let dir = tempfile::tempdir()?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home)?;
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let mut tokens = Vec::with_capacity(runners);
    {
        let store = SqliteStore::open(&library::database_path(&home))?;
        let owner =
            store.create_owner("bench", "mrk_benchkey_0123456789abcdef0123456789abcdef", 0)?;
        for runner in 0..runners {
            let agent = store.create_agent(
                owner.id,
                &format!("runner{runner:02}"),
                workspace.to_str().context("temp path is not UTF-8")?,
                0,
            )?;
            let token = new_secret("mr_runner_");
            store.issue_runner_token(owner.id, agent.id, &secret_digest(&token), 0)?;
            tokens.push(token);
        }
    }

    // The runners: each sends batches as fast as the server answers, for `seconds`.
    let port = free_port()?;
    let server = start_server(&home, port)?;
    let url = format!("http://127.0.0.1:{port}/v1/events");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let acknowledged = Arc::new(AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(AtomicU64::new(0));
    let began = Instant::now();
    let threads: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(runner, token)| {
            let (url, token) = (url.clone(), token.clone());
            let (acknowledged, latencies, failures) =
                (acknowledged.clone(), latencies.clone(), failures.clone());
            std::thread::spawn(move || {
                let agent = ureq::Agent::new_with_defaults();
                let mut seq = 0u64;
                let mut mine = Vec::new();
                while Instant::now() < deadline {
                    let events: Vec<_> = (0..batch)
                        .map(|i| wire_event(runner, seq + i as u64))
                        .collect();
                    let body = json!({ "events": events });
                    let sent = Instant::now();
                    let answer = agent
                        .post(&url)
                        .header("Authorization", &format!("Bearer {token}"))
                        .send_json(&body)
                        .and_then(|mut r| r.body_mut().read_json::<serde_json::Value>());
                    mine.push(sent.elapsed());
                    match answer {
                        Ok(answer) => {
                            let recorded = answer["results"].as_array().map_or(0, |results| {
                                results.iter().filter(|r| r["status"] == "recorded").count()
                            });
                            acknowledged.fetch_add(recorded as u64, Ordering::Relaxed);
                            seq += batch as u64;
                        }
                        // Not acknowledged: the same batch goes again, as a runner would.
                        Err(_) => {
                            failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                latencies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(mine);
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
    let elapsed = began.elapsed();
    let rss = peak_rss_mib(server.child.id());
    drop(server);
    let acknowledged = acknowledged.load(Ordering::Relaxed);
    let stored = {
        let store = library::open(&home)?;
        let owner = store
            .owner_by_name("bench")?
            .context("the bench owner is gone")?;
        store.use_count(owner.id)? as u64
    };
    let mut latencies = Arc::try_unwrap(latencies)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_default();
    latencies.sort();
    let events_per_second = acknowledged as f64 / elapsed.as_secs_f64();

    // The baseline: the same kind of events recorded in-process, without HTTP, in this run.
    let baseline_events = (acknowledged as usize).clamp(1_000, 20_000);
    let baseline_store = SqliteStore::open(&dir.path().join("baseline.db"))?;
    let owner =
        baseline_store.create_owner("bench", "mrk_benchkey_0123456789abcdef0123456789abcdef", 0)?;
    for runner in 0..runners {
        baseline_store.create_agent(
            owner.id,
            &format!("runner{runner:02}"),
            workspace.to_str().context("temp path is not UTF-8")?,
            0,
        )?;
    }
    let recorder = Recorder::new(&baseline_store);
    let baseline_began = Instant::now();
    for i in 0..baseline_events {
        let runner = i % runners;
        let wire = wire_event(runner, (i / runners) as u64);
        let mut event = wire["event"].clone();
        event["agent"] = json!(format!("runner{runner:02}"));
        let event = mindrune_core::event::parse_line(&event.to_string())
            .map_err(|err| anyhow::anyhow!("bench event: {}", err.message))?;
        let mut files = SnapshotFiles::new();
        for (path, file) in wire["files"].as_object().into_iter().flatten() {
            let _ = files.insert(
                path,
                Ok(file["text"].as_str().unwrap_or_default().to_string()),
            );
        }
        recorder.record_with(&event, &files)?;
    }
    let baseline_per_second = baseline_events as f64 / baseline_began.elapsed().as_secs_f64();
    let ratio = events_per_second / baseline_per_second;
    let exactly_once = acknowledged == stored;
    let p50 = percentile(&latencies, 0.50);
    let p99 = percentile(&latencies, 0.99);

    let mut out = std::io::stdout().lock();
    if json_out {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({
                "runners": runners,
                "batch": batch,
                "seconds": elapsed.as_secs_f64(),
                "requests": latencies.len(),
                "failed_requests": failures.load(Ordering::Relaxed),
                "events_acknowledged": acknowledged,
                "events_stored": stored,
                "exactly_once": exactly_once,
                "events_per_second": events_per_second,
                "p50_ms": p50.as_secs_f64() * 1e3,
                "p99_ms": p99.as_secs_f64() * 1e3,
                "baseline_in_process_events_per_second": baseline_per_second,
                "ratio": ratio,
                "server_peak_rss_mib": rss,
            }),
        )?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "mindrune bench serve: {runners} runners on loopback, batches of {batch}, {:.0} s",
            elapsed.as_secs_f64()
        )?;
        writeln!(
            out,
            "  requests            {} ({} failed and sent again)",
            latencies.len(),
            failures.load(Ordering::Relaxed)
        )?;
        writeln!(out, "  events/s            {events_per_second:.0}")?;
        writeln!(
            out,
            "  request latency     p50 {:.1} ms, p99 {:.1} ms",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        )?;
        writeln!(
            out,
            "  baseline            {baseline_per_second:.0} events/s recorded in-process (no HTTP), ratio {ratio:.2}×"
        )?;
        if let Some(rss) = rss {
            writeln!(out, "  server peak RSS     {rss:.1} MiB")?;
        }
        writeln!(
            out,
            "  exactly once        {} ({acknowledged} acknowledged, {stored} stored)",
            if exactly_once { "yes" } else { "NO" }
        )?;
    }
    Ok(if exactly_once {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
