//! `mindrune bench serve`: runners on loopback sending events to a real `mindrune serve`
//! process, beside the same events recorded in-process (no HTTP) in the same run.

use mindrune_store::{Directory as _, SkillRecords as _};
use std::io::Write as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use mindrune_core::Event;
use mindrune_engine::Recorder;
use mindrune_engine::{AgentFiles, SnapshotFiles};
use mindrune_server::{new_secret, secret_digest};
use mindrune_store::{Recording as _, SqliteStore};
use serde_json::json;

use crate::measure::percentile;
use crate::report::{Print, Row};
use crate::runner_load::{self, RunnerLoad};

/// The targets of group commit (issue 25): events/s over HTTP against the same events recorded
/// in-process one at a time, in the same run…
const TARGET_RATIO: f64 = 3.0;
/// …and against the same events recorded in-process in write groups, one batch of each runner
/// a group (issue 43: the write path's own limit, so what HTTP, the queue and the lanes cost
/// shows apart from the write path's)…
const TARGET_GROUP_RATIO: f64 = 0.45;
/// …and the runners' request latency at the 99th percentile.
const TARGET_P99: Duration = Duration::from_millis(50);

/// Distinct scripts each runner's avatar runs.
const SCRIPTS_PER_RUNNER: usize = 10;

fn script(runner: usize, k: usize) -> String {
    format!(
        "/** @skill chop-{k}\n * Goal: chop trees at spot {k}\n */\nimport {{ runScript }} from '../../sdk/runner';\n\n\
await runScript(async ({{ bot, sdk }}) => {{\n  const spot = {k};\n  const me = {runner};\n\
  for (let i = 0; i < 28; i++) {{\n    const tree = sdk.findNearbyLoc(/^Tree$/);\n    if (!tree) break;\n    await bot.chopTree(tree);\n  }}\n}});\n"
    )
}

/// Runner `runner`'s load: its avatar's scripts and the batches it sends.
fn runner_load(runner: usize) -> RunnerLoad {
    RunnerLoad::new(
        &format!("runner{runner:02}"),
        (0..SCRIPTS_PER_RUNNER).map(|k| script(runner, k)).collect(),
    )
}

/// Runner `runner`'s `seq`-th event as it sends it: the wire object and the file it runs.
fn wire_event(load: &RunnerLoad, seq: u64) -> anyhow::Result<serde_json::Value> {
    let mut batch: serde_json::Value = serde_json::from_slice(&load.body(seq, 1))?;
    Ok(batch["events"][0].take())
}

pub(crate) struct Served {
    child: Child,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The library `mindrune serve` opens in its MINDRUNE_HOME (the cli's `library::database_path`),
/// which the benchmark fills and reads directly around the server it spawns.
fn served_library(home: &Path) -> std::path::PathBuf {
    home.join("library.db")
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn start_server(home: &Path, port: u16) -> anyhow::Result<Served> {
    // The benchmark's own library in `home`, never a database --database chose.
    spawn_serve(
        port,
        &[("MINDRUNE_HOME", home.as_os_str())],
        &["MINDRUNE_DATABASE_URL"],
    )
}

/// Starts `mindrune serve` (the running binary) on `port` with `env` set and `unset` removed,
/// and waits until it answers `/ready`.
pub(crate) fn spawn_serve(
    port: u16,
    env: &[(&str, &std::ffi::OsStr)],
    unset: &[&str],
) -> anyhow::Result<Served> {
    let exe = std::env::current_exe().context("cannot find the mindrune binary")?;
    let mut command = Command::new(exe);
    command
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (key, value) in env {
        command.env(key, value);
    }
    for key in unset {
        command.env_remove(key);
    }
    let child = command.spawn().context("cannot start `mindrune serve`")?;
    let served = Served { child };
    let began = Instant::now();
    while began.elapsed() < Duration::from_secs(30) {
        if ureq::get(&format!("http://127.0.0.1:{port}/ready"))
            .call()
            .is_ok()
        {
            return Ok(served);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("`mindrune serve` did not answer /ready within 30 s")
}

/// The server's peak resident memory (VmHWM), in MiB.
fn peak_rss_mib(pid: u32) -> Option<f64> {
    crate::report::peak_rss_of(&pid.to_string())
}

/// Returns the rows, and whether every acknowledged event was stored exactly once.
#[expect(
    clippy::too_many_lines,
    reason = "a benchmark script: server, runners, load, the exactly-once check and the report, in order"
)]
pub fn serve(
    seconds: u64,
    runners: usize,
    batch: usize,
    print: Print,
) -> anyhow::Result<(Vec<Row>, bool)> {
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
        let store = SqliteStore::open(&served_library(&home))?;
        let owner = store.create_owner(
            "bench",
            &secret_digest("mrk_benchkey_0123456789abcdef0123456789abcdef"),
            0,
        )?;
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
                let load = runner_load(runner);
                let authorization = format!("Bearer {token}");
                let mut seq = 0u64;
                let mut mine = Vec::new();
                while Instant::now() < deadline {
                    let body = load.body(seq, batch);
                    let sent = Instant::now();
                    let answer = agent
                        .post(&url)
                        .header("Authorization", &authorization)
                        .header("Content-Type", "application/json")
                        .send(&body[..])
                        .map_err(anyhow::Error::from)
                        .and_then(|mut r| Ok(r.body_mut().read_to_vec()?))
                        .and_then(|answer| Ok(runner_load::recorded(&answer)?));
                    mine.push(sent.elapsed());
                    match answer {
                        Ok(recorded) => {
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
        let store = SqliteStore::open(&served_library(&home))?;
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

    // The baselines: the same kind of events recorded in-process, without HTTP, in this run:
    // one at a time, and in write groups as the server's lane records them.
    let baseline_events = (acknowledged as usize).clamp(1_000, 20_000);
    let events = baseline_events_of(runners, baseline_events)?;
    let baseline_per_second = one_at_a_time(dir.path(), &workspace, runners, &events)?;
    let grouped_per_second = in_write_groups(dir.path(), &workspace, runners, batch, &events)?;
    let ratio = events_per_second / baseline_per_second;
    let group_ratio = events_per_second / grouped_per_second;
    let exactly_once = acknowledged == stored;
    let p50 = percentile(&latencies, 0.50);
    let p99 = percentile(&latencies, 0.99);
    let p999 = percentile(&latencies, 0.999);
    let slowest = latencies.last().copied().unwrap_or_default();
    let ratio_pass = ratio >= TARGET_RATIO;
    let group_ratio_pass = group_ratio >= TARGET_GROUP_RATIO;
    let p99_pass = p99 < TARGET_P99;

    let mut out = std::io::stdout().lock();
    if print == Print::Json {
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
                "p999_ms": p999.as_secs_f64() * 1e3,
                "max_ms": slowest.as_secs_f64() * 1e3,
                "baseline_in_process_events_per_second": baseline_per_second,
                "ratio": ratio,
                "baseline_in_process_write_groups_events_per_second": grouped_per_second,
                "ratio_to_write_groups": group_ratio,
                "server_peak_rss_mib": rss,
            }),
        )?;
        writeln!(out)?;
    } else if print == Print::Text {
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
            "  request latency     p50 {:.1} ms, p99 {:.1} ms, p99.9 {:.1} ms, slowest {:.1} ms",
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3,
            p999.as_secs_f64() * 1e3,
            slowest.as_secs_f64() * 1e3
        )?;
        writeln!(
            out,
            "  baseline            {baseline_per_second:.0} events/s recorded in-process (no HTTP), ratio {ratio:.2}×"
        )?;
        writeln!(
            out,
            "  write-group baseline {grouped_per_second:.0} events/s recorded in-process in write groups of {runners} batches, ratio {group_ratio:.2}×"
        )?;
        if let Some(rss) = rss {
            writeln!(out, "  server peak RSS     {rss:.1} MiB")?;
        }
        writeln!(
            out,
            "  exactly once        {} ({acknowledged} acknowledged, {stored} stored)",
            if exactly_once { "yes" } else { "NO" }
        )?;
        let verdict = |pass: bool| if pass { "pass" } else { "FAIL" };
        writeln!(out)?;
        writeln!(
            out,
            "  ratio   target ≥ {TARGET_RATIO}×      {}",
            verdict(ratio_pass)
        )?;
        writeln!(
            out,
            "  ratio to write groups   target ≥ {TARGET_GROUP_RATIO}×   {}",
            verdict(group_ratio_pass)
        )?;
        writeln!(
            out,
            "  p99     target < {} ms   {}",
            TARGET_P99.as_millis(),
            verdict(p99_pass)
        )?;
    }
    let size = format!(
        "{runners} runners × {:.0} s, batches of {batch}",
        elapsed.as_secs_f64()
    );
    let mut rows = vec![
        Row::new("serve", "events recorded over HTTP", &size)
            .figure(events_per_second, "events/s")
            .baseline(
                "same events recorded in-process",
                baseline_per_second,
                "events/s",
            )
            .target(format!("ratio ≥ {TARGET_RATIO}×"), ratio_pass),
        Row::new(
            "serve",
            "events recorded over HTTP, against write groups",
            &size,
        )
        .figure(events_per_second, "events/s")
        .baseline(
            "same events recorded in-process in write groups",
            grouped_per_second,
            "events/s",
        )
        .target(format!("ratio ≥ {TARGET_GROUP_RATIO}×"), group_ratio_pass),
        Row::new("serve", "request latency p99", &size)
            .figure(p99.as_secs_f64() * 1e3, "ms")
            .target(format!("< {} ms", TARGET_P99.as_millis()), p99_pass),
        Row::new(
            "serve",
            "acknowledged events stored exactly once",
            format!("{acknowledged} acknowledged, {stored} stored"),
        )
        .target("all, once", exactly_once),
    ];
    if let Some(rss) = rss {
        let mut row = Row::new("serve", "server peak RSS under load", &size).figure(rss, "MiB");
        row.peak_rss_mib = Some(rss);
        rows.push(row);
    }
    Ok((rows, exactly_once))
}

/// A baseline's event as a runner sends it: its line, and its files as (path, text).
type BenchEvent = (String, Vec<(String, String)>);

/// The baselines' events, made before any clock starts (what is timed is what the server does
/// with a request's event, not what a runner does to send it): each event's line and files.
fn baseline_events_of(runners: usize, count: usize) -> anyhow::Result<Vec<BenchEvent>> {
    let loads: Vec<RunnerLoad> = (0..runners).map(runner_load).collect();
    let mut events = Vec::with_capacity(count);
    for i in 0..count {
        let runner = i % runners;
        let wire = wire_event(&loads[runner], (i / runners) as u64)?;
        let mut event = wire["event"].clone();
        event["agent"] = json!(format!("runner{runner:02}"));
        let files: Vec<(String, String)> = wire["files"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(path, file)| {
                let text = file["text"].as_str().unwrap_or_default().to_string();
                (path.clone(), text)
            })
            .collect();
        events.push((event.to_string(), files));
    }
    Ok(events)
}

/// A library of its own for a baseline, with the bench owner and the runners' agents.
fn baseline_library(
    dir: &Path,
    name: &str,
    workspace: &Path,
    runners: usize,
) -> anyhow::Result<(SqliteStore, mindrune_store::OwnerId)> {
    let store = SqliteStore::open(&dir.join(name))?;
    let owner = store.create_owner(
        "bench",
        &secret_digest("mrk_benchkey_0123456789abcdef0123456789abcdef"),
        0,
    )?;
    for runner in 0..runners {
        store.create_agent(
            owner.id,
            &format!("runner{runner:02}"),
            workspace.to_str().context("temp path is not UTF-8")?,
            0,
        )?;
    }
    Ok((store, owner.id))
}

/// An event line parsed, with its files as a runner sends them.
fn parsed(line: &str, texts: &[(String, String)]) -> anyhow::Result<(Event, SnapshotFiles)> {
    let event = mindrune_core::parse_line(line)
        .map_err(|err| anyhow::anyhow!("bench event: {}", err.message))?;
    let mut files = SnapshotFiles::new();
    for (path, text) in texts {
        let _ = files.insert(path, Ok(text.clone()));
    }
    Ok((event, files))
}

/// Events/s of the events recorded in-process one at a time, each parsed in the clock.
fn one_at_a_time(
    dir: &Path,
    workspace: &Path,
    runners: usize,
    events: &[BenchEvent],
) -> anyhow::Result<f64> {
    let (store, _) = baseline_library(dir, "baseline.db", workspace, runners)?;
    let recorder = Recorder::new(&store);
    let began = Instant::now();
    for (line, texts) in events {
        let (event, files) = parsed(line, texts)?;
        recorder.record_with(&event, &files)?;
    }
    Ok(events.len() as f64 / began.elapsed().as_secs_f64())
}

/// Events/s of the events recorded in-process in write groups of one batch of `batch` events
/// per runner, as a lane records what the runners sent at once: parsed, their outputs prepared
/// (the server does both on the requests' threads) and their agents known before the clock, so
/// what is timed is the write path alone.
fn in_write_groups(
    dir: &Path,
    workspace: &Path,
    runners: usize,
    batch: usize,
    events: &[BenchEvent],
) -> anyhow::Result<f64> {
    let (store, owner) = baseline_library(dir, "grouped.db", workspace, runners)?;
    let recorder = Recorder::new(&store);
    for agent in store.agents(owner)? {
        recorder.know_agent(&agent);
    }
    let agents: Vec<_> = store.agents(owner)?;
    let mut ready = Vec::with_capacity(events.len());
    for (line, texts) in events {
        let (event, files) = parsed(line, texts)?;
        let agent = agents
            .iter()
            .find(|agent| agent.name == event.agent)
            .context("a bench event names no runner")?;
        let prepared = recorder.prepare(agent, &event, &files)?;
        ready.push((event, files, prepared));
    }
    let group_size = runners * batch;
    let began = Instant::now();
    for group in ready.chunks(group_size) {
        let batches: Vec<Vec<_>> = group
            .chunks(batch)
            .map(|events| {
                events
                    .iter()
                    .map(|(event, files, prepared)| {
                        (event, files as &dyn AgentFiles, Some(prepared))
                    })
                    .collect()
            })
            .collect();
        for answer in recorder.record_together(&[owner], &batches) {
            for recorded in answer? {
                recorded?;
            }
        }
    }
    Ok(events.len() as f64 / began.elapsed().as_secs_f64())
}

/// Agents of the family in the memory benchmark's library.
const MEMORY_AGENTS: usize = 20;
/// Headed skills each of them has (the first [`SCRIPTS_PER_RUNNER`] are the runner events' files).
const MEMORY_SKILLS_PER_AGENT: usize = 50;
/// The budget: the server's RSS with 1,000,000 uses stored.
const TARGET_SERVER_RSS_MIB: f64 = 100.0;

/// A library of a family of [`MEMORY_AGENTS`] agents with their skills (made through the Store
/// API) and `uses` uses written in bulk straight into its `uses` table (one transaction; the
/// versions' counters set to match, nothing rescored). Returns agent0's runner token.
fn memory_library(home: &Path, workspace: &Path, uses: usize) -> anyhow::Result<String> {
    use mindrune_store::{HeaderState, ScriptSnapshot, SkillHeader};

    let path = served_library(home);
    let token = new_secret("mr_runner_");
    let mut versions = Vec::new();
    {
        let store = SqliteStore::open(&path)?;
        let owner = store.create_owner(
            "bench",
            &secret_digest("mrk_benchkey_0123456789abcdef0123456789abcdef"),
            0,
        )?;
        for a in 0..MEMORY_AGENTS {
            let name = format!("runner{a:02}");
            let agent = store.create_agent(
                owner.id,
                &name,
                workspace.to_str().context("temp path is not UTF-8")?,
                0,
            )?;
            if a == 0 {
                store.issue_runner_token(owner.id, agent.id, &secret_digest(&token), 0)?;
            }
            for k in 0..MEMORY_SKILLS_PER_AGENT {
                let text = script(a, k);
                let code = mindrune_core::code_without_header(&text);
                let matched = store.match_script(
                    owner.id,
                    &ScriptSnapshot {
                        agent: agent.id,
                        path: format!("bots/{name}/chop-{k}.ts"),
                        name: format!("chop-{k}"),
                        digest: mindrune_core::sha256(code.as_bytes()),
                        code,
                        tags: vec!["skill:woodcutting".into()],
                        header: SkillHeader {
                            state: HeaderState::Skill,
                            goal: Some(format!("chop trees at spot {k}")),
                            topics: vec!["skill:woodcutting".into()],
                            ..SkillHeader::default()
                        },
                        file_digest: None,
                        origin: None,
                    },
                    0,
                )?;
                versions.push((matched.version.id.0, agent.id.0));
            }
        }
    }
    let mut conn = rusqlite::Connection::open(&path)?;
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;")?;
    let start: i64 = 1_790_000_000_000;
    let tx = conn.transaction()?;
    let mut counts = vec![(0i64, 0i64); versions.len()];
    {
        let mut insert = tx.prepare(
            "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                               deaths, stuck, items_lost, source, call, output, event_id, recorded_at)
             VALUES (1, ?1, ?2, ?3, ?4, 30000, ?5, NULL, 0, 0, 0, 0, 'shell', ?6, ?7, NULL, ?3)",
        )?;
        for i in 0..uses {
            let v = i % versions.len();
            let (version, agent) = versions[v];
            let ok = !i.is_multiple_of(11);
            counts[v].0 += 1;
            counts[v].1 += i64::from(ok);
            insert.execute(rusqlite::params![
                version,
                agent,
                start + i as i64 * 1000,
                ok,
                if ok { "{\"Woodcutting\":250.0}" } else { "{}" },
                format!("bun bots/runner{:02}/chop-{}.ts", v / MEMORY_SKILLS_PER_AGENT, v % MEMORY_SKILLS_PER_AGENT),
                "chopping...\n── State ──\nPos (3208, 3220) | HP 10/10\nXP: Woodcutting +250\nInv 3/28: Bronze axe, Logs x2",
            ])?;
        }
        let mut update = tx.prepare(
            "UPDATE versions SET uses = ?2, ok = ?3, score = 600, last_used_at = ?4, shared_at = ?4 WHERE version_id = ?1",
        )?;
        for ((version, _), (n, ok)) in versions.iter().zip(&counts) {
            update.execute(rusqlite::params![
                version,
                n,
                ok,
                start + uses as i64 * 1000
            ])?;
        }
    }
    tx.commit()?;
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
    Ok(token)
}

/// Starts `mindrune serve` on the library in `home`, makes it do an avatar's work (a mirror
/// fetch, a start and a turn end with its files, event batches, the mirror again) and answers
/// the server's peak RSS (VmHWM) in MiB.
fn serve_and_work(home: &Path, token: &str) -> anyhow::Result<f64> {
    let port = free_port()?;
    let server = start_server(home, port)?;
    let base = format!("http://127.0.0.1:{port}");
    let agent = ureq::Agent::new_with_defaults();
    let auth = format!("Bearer {token}");
    let files: serde_json::Map<String, serde_json::Value> = (0..MEMORY_SKILLS_PER_AGENT)
        .map(|k| {
            (
                format!("bots/runner00/chop-{k}.ts"),
                json!({ "text": script(0, k) }),
            )
        })
        .collect();
    let check = |what: &str, answer: Result<ureq::http::Response<ureq::Body>, ureq::Error>| {
        answer
            .map_err(|err| anyhow::anyhow!("the server refused {what}: {err}"))
            .and_then(|mut r| Ok(r.body_mut().read_to_string()?.len()))
    };
    check(
        "the mirror",
        agent
            .get(&format!("{base}/v1/mirror"))
            .header("Authorization", &auth)
            .call(),
    )?;
    for boundary in ["start", "turn_end"] {
        check(
            "a turn",
            agent
                .post(&format!("{base}/v1/turns"))
                .header("Authorization", &auth)
                .send_json(
                    json!({ "boundary": boundary, "files": files, "mirror": { "have": {} } }),
                ),
        )?;
    }
    let load = runner_load(0);
    for b in 0..10u64 {
        check(
            "an event batch",
            agent
                .post(&format!("{base}/v1/events"))
                .header("Authorization", &auth)
                .header("Content-Type", "application/json")
                .send(&load.body(b * 50, 50)[..]),
        )?;
    }
    check(
        "the mirror",
        agent
            .get(&format!("{base}/v1/mirror"))
            .header("Authorization", &auth)
            .call(),
    )?;
    peak_rss_mib(server.child.id()).context("cannot read the server's VmHWM")
}

/// `mindrune bench memory`: the server's peak RSS with `uses` uses stored, beside the same
/// server doing the same work on the same family with no uses.
pub fn memory(uses: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    let dir = tempfile::tempdir()?;
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let (empty_home, full_home) = (dir.path().join("empty"), dir.path().join("full"));
    std::fs::create_dir_all(&empty_home)?;
    std::fs::create_dir_all(&full_home)?;
    let token = memory_library(&empty_home, &workspace, 0)?;
    let empty_rss = serve_and_work(&empty_home, &token)?;
    let began = Instant::now();
    let token = memory_library(&full_home, &workspace, uses)?;
    let built = began.elapsed();
    let full_rss = serve_and_work(&full_home, &token)?;
    let stored = {
        let store = SqliteStore::open(&served_library(&full_home))?;
        let owner = store
            .owner_by_name("bench")?
            .context("the bench owner is gone")?;
        store.use_count(owner.id)?
    };
    let size = format!("{stored} uses, {MEMORY_AGENTS} agents × {MEMORY_SKILLS_PER_AGENT} skills");
    let mut row = Row::new("memory", "server peak RSS with the uses stored", size)
        .figure(full_rss, "MiB")
        .baseline("same work, no uses stored", empty_rss, "MiB")
        .target(
            format!("≤ {TARGET_SERVER_RSS_MIB:.0} MiB"),
            full_rss <= TARGET_SERVER_RSS_MIB,
        );
    row.peak_rss_mib = Some(full_rss);
    let mut out = std::io::stdout().lock();
    if print == Print::Json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({
                "benchmark": "memory",
                "uses": stored,
                "library_built_s": built.as_secs_f64(),
                "server_peak_rss_mib": full_rss,
                "baseline_no_uses_peak_rss_mib": empty_rss,
                "target_mib": TARGET_SERVER_RSS_MIB,
                "pass": full_rss <= TARGET_SERVER_RSS_MIB,
            }),
        )?;
        writeln!(out)?;
    } else if print == Print::Text {
        writeln!(
            out,
            "mindrune bench memory: {stored} uses stored (written in {:.1} s)",
            built.as_secs_f64()
        )?;
        writeln!(out, "  server peak RSS     {full_rss:.1} MiB")?;
        writeln!(out, "  baseline, no uses   {empty_rss:.1} MiB")?;
        writeln!(
            out,
            "  target ≤ {TARGET_SERVER_RSS_MIB:.0} MiB      {}",
            if full_rss <= TARGET_SERVER_RSS_MIB {
                "pass"
            } else {
                "FAIL"
            }
        )?;
    }
    Ok(vec![row])
}
