//! The acceptance test of the shared PostgreSQL backend: 4 `mindrune serve` processes × 25
//! runners on one PostgreSQL database for 60 s (MINDRUNE_PG_CONCURRENCY_SECONDS overrides).
//! Every acknowledged use is stored exactly once, every version's counters and score equal a
//! recomputation from its uses, every shared version cleared the family's bar, and the four
//! processes agree on what the family sees.
//!
//! One family: 25 avatars whose runners send batches of events, each batch to the next server in
//! rotation, so one avatar's events go through all four processes while every process writes the
//! same family's rows. The scripts carry `@skill` headers and shared `Tags:` (sharing decisions,
//! the family's peer rates), one is edited now and then (new versions built on the old), and 24
//! avatars run an unchanged copy of `r00/chop-oaks` (their runs count for r00's version: 24
//! avatars through 4 processes on one version's row). About 1 batch in 10 is sent again to
//! another server right after it was acknowledged, as a runner whose answer got lost would: its
//! events must come back `duplicate`. About 1 in 20 goes to two servers at once, as a runner
//! that gave up waiting and sent it again would: each event must be recorded by one of them and
//! answered `duplicate` by the other. Some runners fetch the mirror or mark a turn end now and
//! then.
//!
//! Afterwards, with the servers stopped: the stored event ids are exactly the acknowledged ones;
//! the runs the answers reported for each version are 1, 2, …, n with n in its row (no lost
//! update); `Store::audit` finds nothing; every shared version is headed and has the bar's runs,
//! and every headed current version that clears the bar is shared. A one-line summary goes to
//! stderr (`--nocapture` shows it).
//!
//! PostgreSQL: MINDRUNE_TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
//! The test runs in a schema of its own, dropped at the end, passed or failed. When PostgreSQL
//! cannot be reached the test fails: CI must not pass without it.

use crate::util::{Rng, free_port};
use mindrune_store::{Directory as _, FamilySharing as _, SkillRecords as _};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mindrune_core::SharingBar;
use mindrune_store::Recording as _;
use mindrune_store::{HeaderState, PgStore, Store as _};
use serde_json::{Value, json};

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/test";
const SERVERS: usize = 4;
const RUNNERS: usize = 25;
const DEFAULT_SECONDS: u64 = 60;
/// The family's owner.
const OWNER: &str = "fam";
/// Scripts each avatar runs (see [`run`]).
const SCRIPTS: u64 = 6;
/// Runs of `mine-copper` between two edits of it.
const RUNS_PER_EDIT: u64 = 10;
/// One batch in this many is sent again, right after its answer, to another server.
const RETRY_ONE_IN: u64 = 10;
/// One batch in this many goes to two servers at once, as a runner that gave up waiting and
/// sent it again while the first request was still being answered would.
const RACE_ONE_IN: u64 = 20;

fn database_url() -> String {
    std::env::var("MINDRUNE_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into())
}

fn seconds() -> u64 {
    match std::env::var("MINDRUNE_PG_CONCURRENCY_SECONDS") {
        Ok(text) => text
            .parse()
            .expect("MINDRUNE_PG_CONCURRENCY_SECONDS is a whole number of seconds"),
        Err(_) => DEFAULT_SECONDS,
    }
}

/// A plain connection to the test database, giving up after 10 s.
fn connect(url: &str) -> Result<postgres::Client, postgres::Error> {
    let mut config: postgres::Config = url.parse()?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    config.connect(postgres::NoTls)
}

/// The test's own schema; dropping it drops the schema and everything in it, also when the test
/// failed. Declared before the servers, so they are stopped before it goes.
struct Schema {
    url: String,
    name: String,
}

impl Schema {
    /// Checks that PostgreSQL answers (failing the test with a plain message if not) and names a
    /// schema no other run uses.
    fn new(url: &str) -> Schema {
        if let Err(err) = connect(url) {
            let cause = std::error::Error::source(&err)
                .map(|cause| format!(" ({cause})"))
                .unwrap_or_default();
            panic!(
                "PostgreSQL at {} is not reachable: {err}{cause}\nThis test needs a PostgreSQL database \
                 it may create a schema in: start one, or point MINDRUNE_TEST_DATABASE_URL at one \
                 (default {DEFAULT_DATABASE_URL}).",
                mindrune_store::redact_url(url)
            );
        }
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Schema {
            url: url.to_string(),
            name: format!("mindrune_pgconc_{}_{nanos}", std::process::id()),
        }
    }

    /// The database URL that keeps the library in this schema.
    fn library_url(&self) -> String {
        let join = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{join}schema={}", self.url, self.name)
    }

    fn client(&self) -> postgres::Client {
        connect(&self.url).unwrap()
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        // No panic here: during a failed test's unwinding it would abort the run.
        let dropped = connect(&self.url).and_then(|mut c| {
            c.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name))
        });
        if let Err(err) = dropped {
            eprintln!("could not drop the test schema {}: {err}", self.name);
        }
    }
}

/// The real binary with a home of its own (unused: the library is in PostgreSQL).
fn mindrune(home: &Path) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("mindrune"));
    cmd.env("MINDRUNE_HOME", home)
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL");
    cmd
}

/// `mindrune --database URL <args>`, expected to succeed; returns stdout.
fn cli(home: &Path, url: &str, args: &[&str]) -> String {
    let output = mindrune(home)
        .args(["--database", url])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "mindrune {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// One `mindrune serve` process on the library, its log in a file; killed when dropped.
struct Server {
    child: Option<Child>,
    base: String,
    log: PathBuf,
}

impl Server {
    fn start(home: &Path, library_url: &str, index: usize, dir: &Path) -> Server {
        let port = free_port();
        let log = dir.join(format!("serve-{index}.log"));
        let child = mindrune(home)
            .env("MINDRUNE_DATABASE_URL", library_url)
            .env("NO_COLOR", "1")
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Server {
            child: Some(child),
            base: format!("http://127.0.0.1:{port}"),
            log,
        }
    }

    fn wait_ready(&mut self) {
        let started = Instant::now();
        loop {
            if ureq::get(&format!("{}/ready", self.base)).call().is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "`mindrune serve` at {} exited ({status}) before it was ready:\n{}",
                    self.base,
                    self.log_text()
                );
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "`mindrune serve` at {} did not answer /ready within 60 s:\n{}",
                self.base,
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then waits for the graceful shutdown (killed after 60 s).
    fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // A failed run shows what the server warned about (its log is at INFO: one line a
        // request).
        if std::thread::panicking() {
            let text = self.log_text();
            let notable: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR") || l.contains("panicked"))
                .take(20)
                .collect();
            if !notable.is_empty() {
                eprintln!("--- {} warned ---", self.base);
                for line in notable {
                    eprintln!("{line}");
                }
            }
        }
    }
}

fn agent_name(runner: usize) -> String {
    format!("r{runner:02}")
}

/// The body every script shares; `me` and `edit` make the code differ.
fn code(verb: &str, me: usize, edit: u64) -> String {
    format!(
        "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot, sdk }}) => {{\n  const me = {me};\n  const edit = {edit};\n  for (let i = 0; i < 28; i++) {{\n    await bot.{verb}(me + edit + i);\n  }}\n}});\n"
    )
}

/// What one run of runner `runner`'s `seq`-th event runs: the file's name (its stem), its text,
/// whether it went well, and the XP it measured.
struct Run {
    name: String,
    text: String,
    ok: bool,
    xp: Option<(&'static str, u64)>,
}

/// The avatars' scripts, by `seq % SCRIPTS`:
/// 0. `chop-oaks`, headed, `skill:woodcutting` and `place:lumbridge`; mostly goes well.
/// 1. `mine-copper`, headed, `skill:mining`; edited every [`RUNS_PER_EDIT`] runs.
/// 2. `fish-shrimp`, headed, `skill:fishing` and `place:lumbridge`; fails one run in five.
/// 3. `pick-pockets`, headed, `skill:thieving`; fails two runs in three (rarely shared).
/// 4. `walk-bank`, no header: private.
/// 5. r00: `secret-route`, `@private`; the others: `oaks-from-r00`, an unchanged copy of
///    r00's `chop-oaks` (with its `From:` line), whose runs count for r00's version.
fn run(runner: usize, seq: u64) -> Run {
    let k = seq % SCRIPTS;
    let headed = |name: &str, goal: &str, tags: &str, body: String| {
        format!("/** @skill {name}\n * Goal: {goal}\n * Tags: {tags}\n */\n{body}")
    };
    let chop = |me| {
        headed(
            "chop-oaks",
            "chop oaks by Lumbridge castle",
            "skill:woodcutting, place:lumbridge",
            code("chopTree", me, 0),
        )
    };
    let (name, text, ok, xp) = match k {
        0 => (
            "chop-oaks".to_string(),
            chop(runner),
            seq % 20 != 7,
            Some(("Woodcutting", 240 + 3 * runner as u64)),
        ),
        1 => {
            let edit = seq / (SCRIPTS * RUNS_PER_EDIT);
            (
                "mine-copper".to_string(),
                headed(
                    "mine-copper",
                    "mine copper east of Lumbridge",
                    "skill:mining",
                    code("mine", runner, edit),
                ),
                seq % 10 != 3,
                Some(("Mining", 180 + 5 * edit)),
            )
        }
        2 => (
            "fish-shrimp".to_string(),
            headed(
                "fish-shrimp",
                "fish shrimp at Lumbridge swamp",
                "skill:fishing, place:lumbridge",
                code("fish", runner, 0),
            ),
            seq % 5 != 1,
            Some(("Fishing", 120)),
        ),
        3 => {
            let ok = seq.is_multiple_of(3);
            (
                "pick-pockets".to_string(),
                headed(
                    "pick-pockets",
                    "pickpocket men in Lumbridge",
                    "skill:thieving",
                    code("pickpocket", runner, 0),
                ),
                ok,
                ok.then_some(("Thieving", 60)),
            )
        }
        4 => (
            "walk-bank".to_string(),
            code("walkToBank", runner, 0),
            true,
            None,
        ),
        _ if runner == 0 => (
            "secret-route".to_string(),
            format!(
                "/** @skill secret-route\n * @private\n * Goal: a route I keep\n */\n{}",
                code("walkSecret", 0, 0)
            ),
            true,
            None,
        ),
        _ => (
            "oaks-from-r00".to_string(),
            format!(
                "/** @skill oaks-from-r00\n * Goal: chop oaks the way r00 does\n * From: r00/chop-oaks\n */\n{}",
                code("chopTree", 0, 0)
            ),
            seq % 10 != 9,
            Some(("Woodcutting", 240)),
        ),
    };
    Run { name, text, ok, xp }
}

/// The wire object of runner `runner`'s `seq`-th event, with the file it ran.
fn wire_event(runner: usize, seq: u64) -> Value {
    let agent = agent_name(runner);
    let run = run(runner, seq);
    let path = format!("bots/{agent}/{}.ts", run.name);
    let mut event = json!({
        "id": format!("{agent}-{seq}"),
        "kind": "shell",
        "command": format!("bun {path}"),
        "cwd": "/work",
        "ok": run.ok,
        "duration_ms": 20_000 + 700 * runner as u64 + 500 * (seq % 7),
    });
    if let Some((skill, xp)) = run.xp {
        event["measures"] = json!({ "xp": { skill: xp } });
    }
    json!({ "event": event, "files": { path: { "text": run.text } } })
}

/// Every file of the avatar's `bots/<agent>/` as it is after `seq` events (a turn's snapshot).
fn turn_files(runner: usize, seq: u64, turn: u64) -> Value {
    let agent = agent_name(runner);
    let mut files = serde_json::Map::new();
    for k in 0..SCRIPTS {
        // The newest event of each script up to `seq` (or its first, before it ran).
        let last = if seq > k {
            (seq - 1 - k) / SCRIPTS * SCRIPTS + k
        } else {
            k
        };
        let run = run(runner, last);
        files.insert(
            format!("bots/{agent}/{}.ts", run.name),
            json!({ "text": run.text }),
        );
    }
    files.insert(
        format!("bots/{agent}/lab_log.md"),
        json!({ "text": format!("# {agent}\nShare: oaks by the castle regrow fast ({agent})\nShare: turn {turn} of {agent} went fine\n") }),
    );
    Value::Object(files)
}

/// What one runner saw.
#[derive(Default)]
struct Report {
    /// Ids of every event of every batch it sent (each batch until it was acknowledged).
    sent: Vec<String>,
    /// Ids answered `recorded`, once per such answer.
    recorded: Vec<String>,
    /// `duplicate` answers to a first send (allowed only after a failed attempt).
    duplicate_first: usize,
    /// Events sent again after their batch was acknowledged, and how many came back duplicate.
    retried: usize,
    retried_duplicate: usize,
    /// Events sent to two servers at once, and how many came back recorded by one server and
    /// duplicate by the other.
    raced: usize,
    raced_once: usize,
    raced_batches: usize,
    batches: usize,
    retried_batches: usize,
    requests: usize,
    mirrors: usize,
    turns: usize,
    /// Batches that had a failed attempt (their events may have been stored without an answer).
    uncertain: BTreeSet<String>,
    /// Requests that failed: transport errors and answers other than 200.
    failures: Vec<String>,
    /// Answers that break the contract.
    problems: Vec<String>,
    /// `(skill, version, uses)` of every run answered `recorded`: the version's runs right
    /// after this one was stored.
    counted: Vec<(String, i64, i64)>,
    /// How long each event batch took to be answered.
    latencies: Vec<Duration>,
}

/// One HTTP exchange: the JSON answer of a 200, or what went wrong.
fn exchange(
    request: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
) -> Result<Value, String> {
    let mut response = request.map_err(|err| format!("transport: {err}"))?;
    let status = response.status();
    let text = response
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .map_err(|err| format!("reading the answer: {err}"))?;
    if status != 200 {
        return Err(format!("HTTP {status}: {text}"));
    }
    serde_json::from_str(&text).map_err(|err| format!("answer is not JSON ({err}): {text}"))
}

/// `POST /v1/events` with a batch; the time it took to answer.
fn post_batch(
    http: &ureq::Agent,
    base: &str,
    token: &str,
    body: &Value,
) -> (Result<Value, String>, Duration) {
    let sent = Instant::now();
    let answer = exchange(
        http.post(&format!("{base}/v1/events"))
            .header("Authorization", &format!("Bearer {token}"))
            .send_json(body),
    );
    (answer, sent.elapsed())
}

struct Runner {
    index: usize,
    token: String,
    servers: Vec<String>,
    http: ureq::Agent,
    report: Report,
    rng: Rng,
}

impl Runner {
    fn auth(&self) -> String {
        format!("Bearer {}", self.token)
    }

    fn post(&mut self, server: usize, path: &str, body: &Value) -> Result<Value, String> {
        self.report.requests += 1;
        let url = format!("{}{path}", self.servers[server]);
        let answer = exchange(
            self.http
                .post(&url)
                .header("Authorization", &self.auth())
                .send_json(body),
        );
        if let Err(err) = &answer {
            self.report
                .failures
                .push(format!("{} POST {url}: {err}", agent_name(self.index)));
        }
        answer
    }

    fn get(&mut self, server: usize, path: &str) -> Result<Value, String> {
        self.report.requests += 1;
        let url = format!("{}{path}", self.servers[server]);
        let answer = exchange(
            self.http
                .get(&url)
                .header("Authorization", &self.auth())
                .call(),
        );
        if let Err(err) = &answer {
            self.report
                .failures
                .push(format!("{} GET {url}: {err}", agent_name(self.index)));
        }
        answer
    }

    /// The results of an answer to a batch, checked to be one per event, in order.
    fn results<'a>(&mut self, answer: &'a Value, ids: &[String]) -> Option<&'a Vec<Value>> {
        let results = answer["results"].as_array();
        let answered: Option<Vec<&str>> =
            results.map(|r| r.iter().map(|r| r["id"].as_str().unwrap_or("")).collect());
        if answered.as_deref() != Some(&ids.iter().map(String::as_str).collect::<Vec<_>>()) {
            self.report.problems.push(format!(
                "the answer to the batch {}… does not hold one result per event in order: {answer}",
                ids[0]
            ));
            return None;
        }
        results
    }

    /// Sends one batch until a server acknowledges it, starting with `server`; returns the
    /// server that did. `failed` says an earlier attempt went unanswered (so some of its events
    /// may be stored already and come back `duplicate`).
    fn send(
        &mut self,
        server: usize,
        events: &[Value],
        ids: &[String],
        mut failed: bool,
    ) -> Option<usize> {
        let body = json!({ "events": events });
        for attempt in 0..10 {
            let target = (server + attempt) % SERVERS;
            let Ok(answer) = self.post_events(target, &body) else {
                failed = true;
                std::thread::sleep(Duration::from_millis(200));
                continue;
            };
            self.report.sent.extend(ids.iter().cloned());
            if failed {
                self.report.uncertain.extend(ids.iter().cloned());
            }
            let Some(results) = self.results(&answer, ids) else {
                return Some(target);
            };
            for result in results {
                let id = result["id"].as_str().unwrap_or_default().to_string();
                match result["status"].as_str() {
                    Some("recorded") => self.recorded(id, result),
                    Some("duplicate") => {
                        self.report.duplicate_first += 1;
                        if !failed {
                            self.report.problems.push(format!(
                                "event {id}, sent for the first time, came back duplicate: {result}"
                            ));
                        }
                    }
                    _ => self.report.problems.push(format!(
                        "event {id} came back neither recorded nor duplicate: {result}"
                    )),
                }
            }
            return Some(target);
        }
        self.report.problems.push(format!(
            "the batch {}… was never acknowledged in 10 attempts",
            ids[0]
        ));
        None
    }

    /// A runner's retry: the acknowledged batch again, to another server.
    fn resend(&mut self, server: usize, events: &[Value], ids: &[String]) {
        self.report.retried_batches += 1;
        self.report.retried += ids.len();
        let body = json!({ "events": events });
        let Ok(answer) = self.post_events(server, &body) else {
            return;
        };
        let Some(results) = self.results(&answer, ids) else {
            return;
        };
        for result in results {
            let id = result["id"].as_str().unwrap_or_default().to_string();
            match result["status"].as_str() {
                Some("duplicate") => self.report.retried_duplicate += 1,
                Some("recorded") => {
                    self.report.problems.push(format!(
                        "event {id}, acknowledged before, was recorded again when its batch was sent again to {}: {result}",
                        self.servers[server]
                    ));
                    self.report.recorded.push(id);
                }
                _ => self.report.problems.push(format!(
                    "event {id}, sent again, came back neither duplicate nor recorded: {result}"
                )),
            }
        }
    }

    /// `POST /v1/events`, counted and timed.
    fn post_events(&mut self, server: usize, body: &Value) -> Result<Value, String> {
        self.report.requests += 1;
        let (answer, took) = post_batch(&self.http, &self.servers[server], &self.token, body);
        self.report.latencies.push(took);
        if let Err(err) = &answer {
            self.report.failures.push(format!(
                "{} POST {}/v1/events: {err}",
                agent_name(self.index),
                self.servers[server]
            ));
        }
        answer
    }

    /// An event answered `recorded`, with the runs it counted.
    fn recorded(&mut self, id: String, result: &Value) {
        for run in result["runs"].as_array().into_iter().flatten() {
            self.report.counted.push((
                run["skill"].as_str().unwrap_or_default().to_string(),
                run["version"].as_i64().unwrap_or(-1),
                run["uses"].as_i64().unwrap_or(-1),
            ));
        }
        self.report.recorded.push(id);
    }

    /// The same batch to servers `a` and `b` at once: each event must be recorded by one of
    /// them and answered `duplicate` by the other. Returns the server that acknowledged it.
    fn race(&mut self, a: usize, b: usize, events: &[Value], ids: &[String]) -> Option<usize> {
        self.report.raced_batches += 1;
        self.report.raced += ids.len();
        let body = json!({ "events": events });
        let (http, token) = (&self.http, self.token.as_str());
        let (base_a, base_b) = (self.servers[a].as_str(), self.servers[b].as_str());
        let ((answer_a, took_a), (answer_b, took_b)) = std::thread::scope(|scope| {
            let other = scope.spawn(|| post_batch(http, base_b, token, &body));
            let mine = post_batch(http, base_a, token, &body);
            (mine, other.join().unwrap())
        });
        self.report.requests += 2;
        self.report.latencies.extend([took_a, took_b]);
        let (answer_a, answer_b) = match (answer_a, answer_b) {
            (Ok(answer_a), Ok(answer_b)) => (answer_a, answer_b),
            (answer_a, answer_b) => {
                for (server, answer) in [(a, answer_a), (b, answer_b)] {
                    if let Err(err) = answer {
                        self.report.failures.push(format!(
                            "{} POST {}/v1/events (raced): {err}",
                            agent_name(self.index),
                            self.servers[server]
                        ));
                    }
                }
                // What was stored is not known: the batch goes again until acknowledged.
                self.report.uncertain.extend(ids.iter().cloned());
                return self.send(a, events, ids, true);
            }
        };
        self.report.sent.extend(ids.iter().cloned());
        let (Some(results_a), Some(results_b)) =
            (self.results(&answer_a, ids), self.results(&answer_b, ids))
        else {
            return Some(a);
        };
        for (result_a, result_b) in results_a.iter().zip(results_b) {
            let id = result_a["id"].as_str().unwrap_or_default().to_string();
            match (result_a["status"].as_str(), result_b["status"].as_str()) {
                (Some("recorded"), Some("duplicate")) => {
                    self.report.raced_once += 1;
                    self.recorded(id, result_a);
                }
                (Some("duplicate"), Some("recorded")) => {
                    self.report.raced_once += 1;
                    self.recorded(id, result_b);
                }
                _ => {
                    self.report.problems.push(format!(
                        "event {id}, sent to {} and {} at once, came back {result_a} and {result_b}",
                        self.servers[a], self.servers[b]
                    ));
                    for result in [result_a, result_b] {
                        if result["status"] == "recorded" {
                            self.recorded(id.clone(), result);
                        }
                    }
                }
            }
        }
        Some(a)
    }

    fn mirror(&mut self, server: usize) {
        self.report.mirrors += 1;
        if let Ok(answer) = self.get(server, "/v1/mirror") {
            let has_index = answer["files"]
                .as_array()
                .is_some_and(|files| files.iter().any(|f| f["path"] == "INDEX.md"));
            if !has_index {
                self.report.problems.push(format!(
                    "the mirror of {} has no INDEX.md: {answer}",
                    agent_name(self.index)
                ));
            }
        }
    }

    fn turn_end(&mut self, server: usize, seq: u64) {
        self.report.turns += 1;
        let turn = self.report.turns as u64;
        let body = json!({
            "boundary": "turn_end",
            "files": turn_files(self.index, seq, turn),
            "mirror": { "have": {} },
        });
        if let Ok(answer) = self.post(server, "/v1/turns", &body)
            && !answer["report"].is_object()
        {
            self.report.problems.push(format!(
                "the turn end of {} has no report: {answer}",
                agent_name(self.index)
            ));
        }
    }

    /// Sends batches until `deadline` (the batch in flight is finished).
    fn work(mut self, deadline: Instant, seeded: &AtomicBool) -> Report {
        // r00's first batch goes first: its `chop-oaks` exists before anyone runs its copy.
        if self.index != 0 {
            let started = Instant::now();
            while !seeded.load(Ordering::Acquire) {
                if started.elapsed() > Duration::from_secs(60) {
                    self.report
                        .problems
                        .push("r00's first batch was never acknowledged".into());
                    return self.report;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        let mut seq = 0u64;
        let mut batch = 0usize;
        while batch == 0 || Instant::now() < deadline {
            // 1 to 12 events; r00's first batch runs all its scripts.
            let size = if batch == 0 && self.index == 0 {
                SCRIPTS
            } else {
                1 + self.rng.below(12)
            };
            let events: Vec<Value> = (seq..seq + size)
                .map(|s| wire_event(self.index, s))
                .collect();
            let ids: Vec<String> = (seq..seq + size)
                .map(|s| format!("{}-{s}", agent_name(self.index)))
                .collect();
            let server = (self.index + batch) % SERVERS;
            // One in RACE_ONE_IN, and at least one batch of a few runners.
            let race = self.rng.below(RACE_ONE_IN) == 0 || (self.index % 5 == 2 && batch == 2);
            let acknowledged = if batch > 0 && race {
                let other = (server + 1 + self.rng.below(SERVERS as u64 - 1) as usize) % SERVERS;
                self.race(server, other, &events, &ids)
            } else {
                self.send(server, &events, &ids, false)
            };
            if self.index == 0 && batch == 0 {
                seeded.store(true, Ordering::Release);
            }
            self.report.batches += 1;
            seq += size;
            batch += 1;
            let Some(acknowledged) = acknowledged else {
                continue;
            };
            if self.rng.below(RETRY_ONE_IN) == 0 {
                let other =
                    (acknowledged + 1 + self.rng.below(SERVERS as u64 - 1) as usize) % SERVERS;
                self.resend(other, &events, &ids);
            }
            if self.index.is_multiple_of(3) && batch % 10 == 2 {
                self.mirror((acknowledged + 1) % SERVERS);
            }
            if self.index % 5 == 1 && batch % 25 == 3 {
                self.turn_end((acknowledged + 2) % SERVERS, seq);
            }
        }
        self.report
    }
}

/// Every file of the mirror (`INDEX.md`, `LESSONS.md`, `<sibling>/<name>.ts`) with its key, as
/// one server answers for a token.
fn mirror_keys(base: &str, token: &str) -> Result<BTreeMap<String, String>, String> {
    let answer = exchange(
        ureq::get(&format!("{base}/v1/mirror"))
            .header("Authorization", &format!("Bearer {token}"))
            .call(),
    )?;
    Ok(answer["files"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or_default().to_string(),
                f["key"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect())
}

#[expect(
    clippy::too_many_lines,
    reason = "one load story: servers, runners, kills and the exactly-once audit, in order"
)]
#[test]
fn four_servers_and_25_runners_on_one_database_store_every_use_once() {
    let seconds = seconds();
    let schema = Schema::new(&database_url());
    let library_url = schema.library_url();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();

    // The family, through the real CLI: one owner, 25 avatars, a runner token each.
    let setup_began = Instant::now();
    // Only `init` makes a library; every other command opens an existing one.
    cli(&home, &library_url, &["init"]);
    cli(&home, &library_url, &["owner", "add", OWNER]);
    let mut tokens = Vec::with_capacity(RUNNERS);
    for runner in 0..RUNNERS {
        let agent = agent_name(runner);
        cli(
            &home,
            &library_url,
            &[
                "agent",
                "add",
                &agent,
                "--owner",
                OWNER,
                "--workspace",
                workspace.to_str().unwrap(),
            ],
        );
        tokens.push(
            cli(&home, &library_url, &["token", "issue", &agent])
                .trim()
                .to_string(),
        );
    }
    let setup = setup_began.elapsed();

    let mut servers: Vec<Server> = (0..SERVERS)
        .map(|i| Server::start(&home, &library_url, i, dir.path()))
        .collect();
    for server in &mut servers {
        server.wait_ready();
    }
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();

    // The runners.
    let seeded = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let deadline = began + Duration::from_secs(seconds);
    let threads: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(index, token)| {
            let runner = Runner {
                index,
                token: token.clone(),
                servers: bases.clone(),
                http: ureq::Agent::new_with_config(
                    ureq::Agent::config_builder()
                        .http_status_as_error(false)
                        .timeout_global(Some(Duration::from_secs(120)))
                        .build(),
                ),
                report: Report::default(),
                rng: Rng(
                    0x9e37_79b9_7f4a_7c15 ^ (index as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d)
                ),
            };
            let seeded = seeded.clone();
            std::thread::spawn(move || runner.work(deadline, &seeded))
        })
        .collect();
    let reports: Vec<Report> = threads
        .into_iter()
        .map(|t| t.join().expect("a runner thread panicked"))
        .collect();
    let elapsed = began.elapsed();

    // Quiet now: every process must answer the same mirror, and it must hold exactly the
    // siblings' shared skills.
    let mut problems: Vec<String> = Vec::new();
    let mirrors: Vec<_> = bases
        .iter()
        .map(|base| (base, mirror_keys(base, &tokens[1])))
        .collect();
    for (base, mirror) in &mirrors {
        match mirror {
            Err(err) => problems.push(format!("the final mirror of r01 from {base}: {err}")),
            Ok(keys) if Some(keys) != mirrors[0].1.as_ref().ok() => problems.push(format!(
                "{base} answers another mirror for r01 than {}: {keys:?} against {:?}",
                mirrors[0].0, mirrors[0].1
            )),
            Ok(_) => {}
        }
    }

    // Stop the servers: a graceful shutdown, then their logs.
    for server in &mut servers {
        match server.stop() {
            Some(status) if status.success() => {}
            other => problems.push(format!(
                "{} did not stop cleanly on SIGTERM: {other:?}",
                server.base
            )),
        }
        for line in server.log_text().lines() {
            if line.contains("panicked") || line.contains("ERROR") {
                problems.push(format!("{} logged: {line}", server.base));
            }
        }
    }

    // What the runners saw.
    let mut recorded: BTreeMap<&str, usize> = BTreeMap::new();
    let mut sent: BTreeSet<&str> = BTreeSet::new();
    let mut uncertain: BTreeSet<&str> = BTreeSet::new();
    let mut counted: BTreeMap<(String, i64), Vec<i64>> = BTreeMap::new();
    let (mut failures, mut retried, mut retried_duplicate) = (Vec::new(), 0, 0);
    let (mut batches, mut retried_batches, mut requests, mut mirrors_fetched, mut turns) =
        (0, 0, 0, 0, 0);
    let (mut raced, mut raced_once, mut raced_batches) = (0, 0, 0);
    let mut latencies: Vec<Duration> = Vec::new();
    let mut duplicate_first = 0;
    for report in &reports {
        for id in &report.recorded {
            *recorded.entry(id).or_default() += 1;
        }
        sent.extend(report.sent.iter().map(String::as_str));
        uncertain.extend(report.uncertain.iter().map(String::as_str));
        for (skill, version, uses) in &report.counted {
            counted
                .entry((skill.clone(), *version))
                .or_default()
                .push(*uses);
        }
        failures.extend(report.failures.iter().cloned());
        problems.extend(report.problems.iter().cloned());
        retried += report.retried;
        retried_duplicate += report.retried_duplicate;
        duplicate_first += report.duplicate_first;
        batches += report.batches;
        retried_batches += report.retried_batches;
        requests += report.requests;
        mirrors_fetched += report.mirrors;
        turns += report.turns;
        raced += report.raced;
        raced_once += report.raced_once;
        raced_batches += report.raced_batches;
        latencies.extend(report.latencies.iter().copied());
    }
    latencies.sort_unstable();
    let percentile = |q: f64| -> f64 {
        latencies
            .get(((latencies.len().max(1) - 1) as f64 * q).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    let acknowledged: usize = recorded.values().sum();
    for (id, times) in &recorded {
        if *times > 1 {
            problems.push(format!("event {id} was answered `recorded` {times} times"));
        }
    }
    for id in &sent {
        if !recorded.contains_key(*id) && !uncertain.contains(*id) {
            problems.push(format!(
                "event {id} was acknowledged but never answered `recorded`"
            ));
        }
    }
    if retried_duplicate != retried {
        problems.push(format!(
            "{retried} events were sent again after their batch was acknowledged, but only {retried_duplicate} came back duplicate"
        ));
    }
    if raced_once != raced {
        problems.push(format!(
            "{raced} events were sent to two servers at once, but only {raced_once} were recorded by one and answered duplicate by the other"
        ));
    }
    for failure in failures.iter().take(20) {
        problems.push(format!("a request failed: {failure}"));
    }
    if failures.len() > 20 {
        problems.push(format!("… {} failed requests in all", failures.len()));
    }

    // The library, afresh.
    let store = PgStore::open(&library_url).expect("the library opens after the run");
    let owner = store
        .owner_by_name(OWNER)
        .unwrap()
        .expect("the owner is there");
    let bar = SharingBar::for_family(owner.eager_sharing);
    let stored = store.use_count(owner.id).unwrap();
    if stored != acknowledged as i64 || stored != sent.len() as i64 {
        problems.push(format!(
            "{stored} uses are stored, {acknowledged} were answered `recorded` and {} distinct events were acknowledged",
            sent.len()
        ));
    }
    let mut client = schema.client();
    let stored_ids: BTreeSet<String> = client
        .query(
            &format!(
                "SELECT event_id FROM {}.uses WHERE owner_id = $1",
                schema.name
            ),
            &[&owner.id.0],
        )
        .unwrap()
        .iter()
        .map(|row| row.get::<_, Option<String>>(0).unwrap_or_default())
        .collect();
    let sent_ids: BTreeSet<String> = sent.iter().map(|id| id.to_string()).collect();
    if stored_ids != sent_ids {
        let lost: Vec<_> = sent_ids.difference(&stored_ids).take(10).collect();
        let extra: Vec<_> = stored_ids.difference(&sent_ids).take(10).collect();
        problems.push(format!(
            "the stored event ids are not the acknowledged ones: missing {lost:?}, not sent {extra:?}"
        ));
    }
    let audit = store.audit(owner.id).unwrap();
    for line in audit.iter().take(20) {
        problems.push(format!("audit: {line}"));
    }

    // Every version: its runs as the answers counted them, and sharing.
    let entries = store.skills(owner.id, None).unwrap();
    let (mut versions_seen, mut shared_versions) = (0, 0);
    let mut stored_uses: BTreeMap<(String, i64), i64> = BTreeMap::new();
    for entry in &entries {
        let label = format!("{}/{}", entry.skill.agent_name, entry.skill.name);
        for version in store.versions(owner.id, entry.skill.id).unwrap() {
            versions_seen += 1;
            stored_uses.insert((label.clone(), version.number), version.uses);
            if version.shared_at.is_some() {
                shared_versions += 1;
                if version.uses < bar.runs {
                    problems.push(format!(
                        "{label} v{} is shared with {} runs, under the bar's {}",
                        version.number, version.uses, bar.runs
                    ));
                }
                if entry.skill.header.state != HeaderState::Skill {
                    problems.push(format!(
                        "{label} v{} is shared but its header is {:?}",
                        version.number, entry.skill.header.state
                    ));
                }
            }
        }
        // The decision after the current version's last run: clearing the bar shares it.
        let current = &entry.version;
        if entry.skill.header.state == HeaderState::Skill
            && entry.skill.deleted_at.is_none()
            && bar.cleared_by(current.uses, current.score)
            && current.shared_at.is_none()
        {
            problems.push(format!(
                "{label} v{} clears the bar ({} runs, score {:.1}) but was never shared",
                current.number, current.uses, current.score
            ));
        }
    }
    if uncertain.is_empty() {
        // Each use was stored under the family's lock: the runs the answers reported for a
        // version are 1, 2, …, n, each once, and n is what the version's row holds.
        for (key, uses) in &stored_uses {
            let mut reported = counted.remove(key).unwrap_or_default();
            reported.sort_unstable();
            if reported != (1..=*uses).collect::<Vec<i64>>() {
                let shown: Vec<_> = reported.iter().take(30).collect();
                problems.push(format!(
                    "{} v{}: the row holds {uses} runs, but the answers counted {shown:?}",
                    key.0, key.1
                ));
            }
        }
        for key in counted.keys() {
            problems.push(format!(
                "answers counted runs of {} v{}, which is not stored",
                key.0, key.1
            ));
        }
    }

    // The run exercised what it is about.
    let count = |client: &mut postgres::Client, sql: &str| -> i64 {
        client
            .query_one(&sql.replace("{s}", &schema.name), &[&owner.id.0])
            .unwrap()
            .get(0)
    };
    let with_peers = count(
        &mut client,
        "SELECT COUNT(*) FROM {s}.versions WHERE owner_id = $1 AND peer_rate IS NOT NULL",
    );
    let sharing_events = count(
        &mut client,
        "SELECT COUNT(*) FROM {s}.sharing_events WHERE owner_id = $1",
    );
    let copy_runs = count(
        &mut client,
        "SELECT COUNT(*) FROM {s}.uses u JOIN {s}.versions v ON v.version_id = u.version_id
         JOIN {s}.skills s ON s.skill_id = v.skill_id
         WHERE u.owner_id = $1 AND s.agent_name = 'r00' AND s.name = 'chop-oaks'
           AND u.agent_id <> s.agent_id",
    );
    let expected_mirror: BTreeSet<String> = store
        .shared_skills(owner.id)
        .unwrap()
        .iter()
        .filter(|s| s.skill.agent_name != "r01")
        .map(|s| format!("{}/{}.ts", s.skill.agent_name, s.skill.name))
        .collect();
    if let (_, Ok(keys)) = &mirrors[0] {
        let mirrored: BTreeSet<String> = keys
            .keys()
            .filter(|path| path.ends_with(".ts"))
            .cloned()
            .collect();
        if mirrored != expected_mirror {
            problems.push(format!(
                "r01's mirror holds {mirrored:?}, but the siblings' shared skills are {expected_mirror:?}"
            ));
        }
    }
    for (what, n) in [
        ("shared versions", shared_versions as i64),
        ("versions with a peer rate", with_peers),
        ("sharing events", sharing_events),
        ("runs of r00/chop-oaks by its siblings' copies", copy_runs),
        ("retried batches", retried_batches as i64),
        ("batches sent to two servers at once", raced_batches as i64),
        ("mirror fetches", mirrors_fetched as i64),
        ("turn ends", turns as i64),
    ] {
        if n == 0 {
            problems.push(format!("the run had no {what}"));
        }
    }
    drop(store);

    eprintln!(
        "postgres concurrency: {SERVERS} servers × {RUNNERS} runners, {:.1} s: {:.0} events/s, \
         {acknowledged} acknowledged, {stored} stored; {retried_duplicate}/{retried} sent again \
         came back duplicate ({retried_batches} of {batches} batches), {raced_once}/{raced} sent \
         to two servers at once recorded once ({raced_batches} batches); {requests} requests \
         ({} failed), batch latency p50 {:.0} ms, p99 {:.0} ms; {mirrors_fetched} mirror \
         fetches, {turns} turn ends; {versions_seen} versions ({shared_versions} shared, \
         {with_peers} with a peer rate), {copy_runs} runs of r00/chop-oaks by copies; setup \
         {:.1} s",
        elapsed.as_secs_f64(),
        acknowledged as f64 / elapsed.as_secs_f64(),
        failures.len(),
        percentile(0.5),
        percentile(0.99),
        setup.as_secs_f64(),
    );
    if duplicate_first > 0 {
        eprintln!(
            "postgres concurrency: {duplicate_first} events of batches sent again after a failed attempt came back duplicate"
        );
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
