//! `mindrune bench scale`: many families on many servers sharing one PostgreSQL database.
//!
//! Several real `mindrune serve` processes share a scratch schema; each family's runners send to
//! one server (family `f` to server `f % servers`), as a deployment spreads families. The
//! figures: events per second in aggregate and per family, the request latency's p99, whether
//! every acknowledged event was stored exactly once (per family), and `Store::audit` of every
//! family. The baseline, measured in the same run on the same servers: one family with all
//! the runners of the old concurrency test (25 per server), every write waiting for its one
//! family lock.

use mindrune_store::{Directory as _, SkillRecords as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_server::{new_secret, secret_digest};
use mindrune_store::{OwnerId, PgStore, Store as _};
use serde_json::json;

use crate::measure::percentile;
use crate::pg::{in_schema, scratch_name};
use crate::report::{Print, Row};
use crate::runner_load::{self, RunnerLoad};
use crate::serve::{Served, free_port, spawn_serve};

/// The figure the PostgreSQL concurrency test measured before group commit: 10,000–15,000
/// events a minute from 4 servers × 25 runners (docs/performance.md); its middle, per second.
pub const FOUR_SERVERS_BEFORE: f64 = 12_500.0 / 60.0;

/// What to run: `servers` × `families` × `runners` per family for `seconds`.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub servers: usize,
    pub families: usize,
    pub runners: usize,
    pub seconds: u64,
    pub batch: usize,
}

/// One `mindrune serve` on the shared database, with the home folder it was given (kept for as
/// long as it runs), and where its runners post.
struct Server {
    _served: Served,
    _home: tempfile::TempDir,
    url: String,
}

fn start_server(library: &str) -> anyhow::Result<Server> {
    let port = free_port()?;
    let home = tempfile::tempdir()?;
    let served = spawn_serve(
        port,
        &[
            ("MINDRUNE_DATABASE_URL", std::ffi::OsStr::new(library)),
            ("MINDRUNE_HOME", home.path().as_os_str()),
        ],
        &[],
    )?;
    Ok(Server {
        _served: served,
        _home: home,
        url: format!("http://127.0.0.1:{port}/v1/events"),
    })
}

fn script(agent: &str, k: usize) -> String {
    format!(
        "/** @skill chop-{k}\n * Goal: chop trees at spot {k}\n */\n// {agent}\n\
await runScript(async ({{ bot, sdk }}) => {{\n  for (let i = 0; i < {k} + 3; i++) await bot.chopTree(sdk.findNearbyLoc(/^Tree$/));\n}});\n"
    )
}

/// A family of the benchmark: its owner, and its runners' agent names and tokens.
type Family = (OwnerId, Vec<(String, String)>);

/// One load: its families' runners sending for `seconds` to their servers.
struct Load {
    events_per_second: f64,
    per_family: Vec<f64>,
    p99: Duration,
    failed_requests: u64,
    exactly_once: bool,
    audit_problems: usize,
}

/// Families `first..first + families` of `runners` runners each, made in the store; returns
/// each family's owner and its runners' (agent name, token).
fn make_families(
    store: &PgStore,
    prefix: &str,
    families: usize,
    runners: usize,
) -> anyhow::Result<Vec<Family>> {
    (0..families)
        .map(|family| {
            let owner = store.create_owner(
                &format!("{prefix}{family:03}"),
                &secret_digest(&format!(
                    "mrk_{prefix}{family:03}_0123456789abcdef0123456789abcdef"
                )),
                0,
            )?;
            let agents = (0..runners)
                .map(|runner| {
                    let name = format!("{prefix}{family:03}r{runner}");
                    let agent = store.create_agent(owner.id, &name, "/work", 0)?;
                    let token = new_secret("mr_runner_");
                    store.issue_runner_token(owner.id, agent.id, &secret_digest(&token), 0)?;
                    Ok((name, token))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            Ok((owner.id, agents))
        })
        .collect()
}

fn run_load(
    store: &PgStore,
    urls: &[String],
    families: &[Family],
    seconds: u64,
    batch: usize,
) -> anyhow::Result<Load> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(AtomicU64::new(0));
    let acknowledged: Vec<Arc<AtomicU64>> = families
        .iter()
        .map(|_| Arc::new(AtomicU64::new(0)))
        .collect();
    let began = Instant::now();
    let mut threads = Vec::new();
    for (index, (_, runners)) in families.iter().enumerate() {
        let url = urls[index % urls.len()].clone();
        for (name, token) in runners {
            let (url, name, token) = (url.clone(), name.clone(), token.clone());
            let (acked, latencies, failures) = (
                acknowledged[index].clone(),
                latencies.clone(),
                failures.clone(),
            );
            threads.push(
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        let agent = ureq::Agent::new_with_defaults();
                        let load =
                            RunnerLoad::new(&name, (0..5).map(|k| script(&name, k)).collect());
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
                                    acked.fetch_add(recorded as u64, Ordering::Relaxed);
                                    seq += batch as u64;
                                }
                                // Not acknowledged: the same batch goes again, as a runner would.
                                Err(_) => {
                                    failures.fetch_add(1, Ordering::Relaxed);
                                    std::thread::sleep(Duration::from_millis(20));
                                }
                            }
                        }
                        latencies
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend(mine);
                    })
                    .context("cannot start a runner thread")?,
            );
        }
    }
    for thread in threads {
        let _ = thread.join();
    }
    let elapsed = began.elapsed().as_secs_f64();
    let mut exactly_once = true;
    let mut audit_problems = 0;
    let mut per_family = Vec::with_capacity(families.len());
    let mut total = 0u64;
    for ((owner, _), acked) in families.iter().zip(&acknowledged) {
        let acked = acked.load(Ordering::Relaxed);
        let stored = store.use_count(*owner)? as u64;
        exactly_once &= acked == stored;
        audit_problems += store.audit(*owner)?.len();
        per_family.push(acked as f64 / elapsed);
        total += acked;
    }
    let mut latencies = Arc::try_unwrap(latencies)
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .unwrap_or_default();
    latencies.sort();
    Ok(Load {
        events_per_second: total as f64 / elapsed,
        per_family,
        p99: percentile(&latencies, 0.99),
        failed_requests: failures.load(Ordering::Relaxed),
        exactly_once,
        audit_problems,
    })
}

/// Runs the benchmark on the PostgreSQL database at `url` (in a scratch schema, dropped after).
/// Returns the rows and whether every family's events were stored exactly once with an empty
/// audit.
pub fn scale(url: &str, shape: Shape, print: Print) -> anyhow::Result<(Vec<Row>, bool)> {
    anyhow::ensure!(
        shape.servers >= 1 && shape.families >= 1 && shape.runners >= 1 && shape.batch >= 1,
        "--servers, --families, --runners and --batch must be at least 1"
    );
    let schema = scratch_name("scale");
    let library = in_schema(url, &schema);
    let store = PgStore::open(&library).with_context(|| {
        format!(
            "cannot open PostgreSQL at {}",
            mindrune_store::redact_url(url)
        )
    })?;
    let scratch = crate::pg::Scratch::new(store, schema);
    let store = scratch.store();
    let families = make_families(store, "f", shape.families, shape.runners)?;
    let baseline_family = make_families(store, "one", 1, 25 * shape.servers)?;
    let servers = (0..shape.servers)
        .map(|_| start_server(&library))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let urls: Vec<String> = servers.iter().map(|server| server.url.clone()).collect();

    // The baseline first, a third as long: one family, every write behind its one lock.
    let one = run_load(
        store,
        &urls,
        &baseline_family,
        (shape.seconds / 3).max(5),
        shape.batch,
    )?;
    let many = run_load(store, &urls, &families, shape.seconds, shape.batch)?;
    drop(servers);

    let mut per_family = many.per_family.clone();
    per_family.sort_by(f64::total_cmp);
    let slowest = per_family.first().copied().unwrap_or(0.0);
    let median = per_family[per_family.len() / 2];
    let sound = many.exactly_once
        && many.audit_problems == 0
        && one.exactly_once
        && one.audit_problems == 0;
    let ratio_before = many.events_per_second / FOUR_SERVERS_BEFORE;
    let size = format!(
        "{} servers × {} families × {} runners, {} s, batches of {}",
        shape.servers, shape.families, shape.runners, shape.seconds, shape.batch
    );
    let rows = vec![
        Row::new("scale", "events recorded, all families", size)
            .figure(many.events_per_second, "events/s")
            .baseline(
                "one family, same servers",
                one.events_per_second,
                "events/s",
            )
            .target(
                format!("≥ 10× {FOUR_SERVERS_BEFORE:.0} events/s (before group commit)"),
                ratio_before >= 10.0,
            ),
        Row::new("scale", "events per family, median / slowest", "")
            .figure(median, "events/s")
            .baseline("slowest family", slowest, "events/s"),
        Row::new("scale", "request latency p99", "")
            .figure(many.p99.as_secs_f64() * 1e3, "ms")
            .target("< 50 ms", many.p99 < Duration::from_millis(50)),
        Row::new(
            "scale",
            "stored exactly once, audit empty",
            format!("{} families", shape.families + 1),
        )
        .target("every family", sound),
    ];
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    match print {
        Print::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json!({
                    "servers": shape.servers,
                    "families": shape.families,
                    "runners_per_family": shape.runners,
                    "seconds": shape.seconds,
                    "batch": shape.batch,
                    "events_per_second": many.events_per_second,
                    "median_family_events_per_second": median,
                    "slowest_family_events_per_second": slowest,
                    "p99_ms": many.p99.as_secs_f64() * 1e3,
                    "failed_requests": many.failed_requests,
                    "exactly_once": many.exactly_once,
                    "audit_problems": many.audit_problems,
                    "one_family_events_per_second": one.events_per_second,
                    "one_family_p99_ms": one.p99.as_secs_f64() * 1e3,
                    "ratio_to_four_servers_before": ratio_before,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(out, "mindrune bench scale on PostgreSQL: {}", rows[0].size)?;
            writeln!(
                out,
                "  events/s            {:.0} in all ({:.1}× the {FOUR_SERVERS_BEFORE:.0} events/s four servers stored before group commit)",
                many.events_per_second, ratio_before
            )?;
            writeln!(
                out,
                "  per family          median {median:.1} events/s, slowest {slowest:.1}"
            )?;
            writeln!(
                out,
                "  request latency     p99 {:.1} ms ({} requests failed and were sent again)",
                many.p99.as_secs_f64() * 1e3,
                many.failed_requests
            )?;
            writeln!(
                out,
                "  one family          {:.0} events/s from {} runners, p99 {:.1} ms",
                one.events_per_second,
                25 * shape.servers,
                one.p99.as_secs_f64() * 1e3
            )?;
            writeln!(
                out,
                "  exactly once        {}; audit {}",
                if many.exactly_once && one.exactly_once {
                    "yes"
                } else {
                    "NO"
                },
                if many.audit_problems + one.audit_problems == 0 {
                    "empty".to_string()
                } else {
                    format!("{} problems", many.audit_problems + one.audit_problems)
                }
            )?;
        }
        Print::Quiet => {}
    }
    Ok((rows, sound))
}
