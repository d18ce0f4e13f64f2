//! `mindrune bench`: figures, each beside a baseline measured in the same run.
//!
//! Speed targets live here, never in timed unit tests: a benchmark prints what it measured and
//! says whether the target held, and a person (or CI log reader) judges.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_engine::Recorder;
use mindrune_store::{SqliteStore, Store};
use serde::Serialize;
use serde_json::json;

/// How a benchmark shows what it measured: its own detail as text or JSON (the subcommands),
/// or nothing (`mindrune bench`, which prints one table of every benchmark's rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Quiet,
    Text,
    Json,
}

impl Print {
    pub fn detail(json: bool) -> Print {
        if json { Print::Json } else { Print::Text }
    }
}

/// Whether a row's figure met its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// Measured for the record; no budget applies.
    Info,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
        }
    }
}

/// One line of the table: a figure beside its baseline measured in the same run.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The benchmark group (`record`, `mirror`, `tags`, `secrets`, …).
    pub group: String,
    /// What the figure is.
    pub name: String,
    /// The size of the generated data it was measured on.
    pub size: String,
    pub figure: Option<f64>,
    pub unit: String,
    /// What the baseline does.
    pub baseline_name: String,
    pub baseline: Option<f64>,
    pub baseline_unit: String,
    /// figure / baseline.
    pub ratio: Option<f64>,
    pub target: String,
    pub result: Verdict,
    /// This process's peak resident memory (VmHWM) after the group ran, in MiB.
    pub peak_rss_mib: Option<f64>,
}

impl Row {
    pub fn new(group: &str, name: &str, size: impl Into<String>) -> Row {
        Row {
            group: group.into(),
            name: name.into(),
            size: size.into(),
            figure: None,
            unit: String::new(),
            baseline_name: String::new(),
            baseline: None,
            baseline_unit: String::new(),
            ratio: None,
            target: "—".into(),
            result: Verdict::Info,
            peak_rss_mib: None,
        }
    }

    pub fn figure(mut self, value: f64, unit: &str) -> Row {
        self.figure = Some(value);
        self.unit = unit.into();
        self
    }

    /// The baseline; the ratio is figure / baseline.
    pub fn baseline(mut self, name: &str, value: f64, unit: &str) -> Row {
        self.baseline_name = name.into();
        self.baseline = Some(value);
        self.baseline_unit = unit.into();
        self.ratio = self.figure.filter(|_| value > 0.0).map(|f| f / value);
        self
    }

    pub fn target(mut self, target: impl Into<String>, pass: bool) -> Row {
        self.target = target.into();
        self.result = if pass { Verdict::Pass } else { Verdict::Fail };
        self
    }
}

/// This process's peak resident memory (VmHWM), in MiB.
pub fn own_peak_rss_mib() -> Option<f64> {
    peak_rss_of("self")
}

/// A process's peak resident memory (VmHWM) from `/proc/<pid>/status`, in MiB.
pub fn peak_rss_of(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Stamps every row with this process's peak RSS now (after its group ran).
pub fn stamp_rss(mut rows: Vec<Row>) -> Vec<Row> {
    let rss = own_peak_rss_mib();
    for row in &mut rows {
        row.peak_rss_mib = row.peak_rss_mib.or(rss);
    }
    rows
}

/// A number in a table cell, with as many digits as it deserves.
pub(crate) fn number(value: f64) -> String {
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.digits$}");
    // Thousands separators in the integer part.
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0
            && (int.len() - i).is_multiple_of(3)
            && c.is_ascii_digit()
            && int.as_bytes()[i - 1].is_ascii_digit()
        {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(frac) => format!("{grouped}.{frac}"),
        None => grouped,
    }
}

/// Prints rows as one table (or as JSON).
pub fn print_rows(rows: &[Row], json_out: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json_out {
        serde_json::to_writer_pretty(&mut out, &json!({ "rows": rows }))?;
        writeln!(out)?;
        return Ok(());
    }
    let header = [
        "benchmark",
        "size",
        "figure",
        "baseline",
        "ratio",
        "target",
        "result",
        "peak RSS",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|row| {
            let value = |v: Option<f64>, unit: &str| {
                v.map_or_else(|| "—".to_string(), |v| format!("{} {unit}", number(v)))
            };
            let baseline = match row.baseline {
                Some(_) => format!(
                    "{} ({})",
                    value(row.baseline, &row.baseline_unit),
                    row.baseline_name
                ),
                None if row.baseline_name.is_empty() => "—".into(),
                None => row.baseline_name.clone(),
            };
            [
                format!("{}: {}", row.group, row.name),
                row.size.clone(),
                value(row.figure, &row.unit),
                baseline,
                row.ratio.map_or_else(|| "—".into(), |r| format!("{r:.2}×")),
                row.target.clone(),
                row.result.label().into(),
                row.peak_rss_mib
                    .map_or_else(|| "—".into(), |m| format!("{m:.0} MiB")),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                let pad = w - cell.chars().count();
                // Numbers right-aligned, words left-aligned.
                if (2..=4).contains(&i) {
                    format!("{}{cell}", " ".repeat(pad))
                } else {
                    format!("{cell}{}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(out, "{}", line(&header.map(String::from)))?;
    writeln!(
        out,
        "{}",
        widths
            .iter()
            .map(|w| "─".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
    )?;
    for row in &cells {
        writeln!(out, "{}", line(row))?;
    }
    let failed = rows.iter().filter(|r| r.result == Verdict::Fail).count();
    writeln!(
        out,
        "\n{} rows: {} pass, {failed} FAIL, {} info",
        rows.len(),
        rows.iter().filter(|r| r.result == Verdict::Pass).count(),
        rows.iter().filter(|r| r.result == Verdict::Info).count(),
    )?;
    Ok(())
}

/// How many distinct scripts the benchmark agent runs.
pub(crate) const SCRIPTS: usize = 20;
/// How many alternating blocks the two measurements are split into.
const BLOCKS: usize = 20;
/// Targets from the design brief.
pub(crate) const TARGET_USES_PER_SECOND: f64 = 5_000.0;
pub(crate) const TARGET_P99: Duration = Duration::from_millis(2);
pub(crate) const TARGET_RATIO: f64 = 3.0;

/// A realistic rs-sdk script of about 1.5 KB; `k` makes each one different code.
pub(crate) fn script_source(k: usize) -> String {
    format!(
        "/** @skill chop-{k}\n * Goal: chop trees at spot {k} and bank the logs\n * Tags: skill:woodcutting\n */\n\
import {{ runScript }} from '../../sdk/runner';\n\n\
await runScript(async ({{ bot, sdk }}) => {{\n\
  const target = {k};\n\
  for (let i = 0; i < 28; i++) {{\n\
    const tree = sdk.findNearbyLoc(/^(Tree|Oak)$/);\n\
    if (!tree) {{ await bot.walkTo(3200 + target, 3240 - target); continue; }}\n\
    const result = await bot.chopTree(tree);\n\
    if (!result.success) {{ console.log('chop failed', result.message); break; }}\n\
    if (sdk.getInventory().length >= 28) break;\n\
  }}\n\
  await bot.walkTo(3208, 3220);\n\
  await bot.openBank();\n\
  await bot.depositItem(/Logs/, -1);\n\
  console.log('banked', sdk.getSkill('Woodcutting'));\n\
}}, {{ timeout: 120_000 }});\n"
    )
}

pub(crate) fn event_line(i: usize, start: i64) -> String {
    let k = i % SCRIPTS;
    let ok = !i.is_multiple_of(13);
    let xp = if ok { 200 + (i % 7) * 25 } else { 0 };
    let output = format!(
        "chopping...\nbanked 42\n── Result ──\nnull\n── State ──\nPos (3208, 3220) lvl 0 | HP 10/10\nXP: {}\nInv 3/28: Bronze axe, Logs x2\n",
        if ok {
            format!("Woodcutting +{xp}")
        } else {
            "none gained".into()
        }
    );
    let at = time::OffsetDateTime::from_unix_timestamp(start + i as i64 * 30)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    json!({
        "agent": "bench",
        "at": at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default(),
        "kind": "shell",
        "command": format!("cd /work && timeout 120 bun bots/bench/chop-{k}.ts 2>&1 | tail -20"),
        "cwd": "/work",
        "ok": ok,
        "duration_ms": 45_000 + (i % 11) * 1000,
        "output": output,
    })
    .to_string()
}

pub(crate) struct Figures {
    pub(crate) per_second: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) mean: Duration,
}

pub(crate) fn figures(mut latencies: Vec<Duration>, total: Duration) -> Figures {
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    Figures {
        per_second: latencies.len() as f64 / total.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        mean: total / latencies.len() as u32,
    }
}

pub(crate) fn micros(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    }
}

/// A [`Figures`] as `bench record --json` prints it.
pub(crate) fn figures_json(f: &Figures) -> serde_json::Value {
    json!({"uses_per_second": f.per_second, "p50_us": f.p50.as_secs_f64() * 1e6, "p99_us": f.p99.as_secs_f64() * 1e6, "mean_us": f.mean.as_secs_f64() * 1e6})
}

/// `bench record`'s text table of MindRune and its baseline, and the ratio of their means.
pub(crate) fn write_figures(
    out: &mut impl Write,
    measured: [(&str, &Figures); 2],
    ratio: f64,
) -> std::io::Result<()> {
    writeln!(out, "{:<34}{:>10}{:>10}{:>10}", "", "uses/s", "p50", "p99")?;
    for (name, f) in measured {
        writeln!(
            out,
            "{name}\n{:<34}{:>10.0}{:>10}{:>10}",
            "",
            f.per_second,
            micros(f.p50),
            micros(f.p99)
        )?;
    }
    writeln!(
        out,
        "\nratio of mean latency (MindRune / bare): {ratio:.2}×\n"
    )
}

pub(crate) fn setup_library(dir: &Path, name: &str) -> anyhow::Result<SqliteStore> {
    let store = SqliteStore::open(&dir.join(name))?;
    add_bench_agent(&store, dir, "bench-owner", "bench")?;
    Ok(store)
}

/// Adds the benchmark's owner and its agent, whose workspace is `dir/workspace`.
pub(crate) fn add_bench_agent(
    store: &dyn Store,
    dir: &Path,
    owner: &str,
    agent: &str,
) -> anyhow::Result<mindrune_store::Agent> {
    let owner = store.create_owner(owner, "mrk_benchkey_0123456789abcdef0123456789abcdef", 0)?;
    Ok(store.create_agent(
        owner.id,
        agent,
        dir.join("workspace")
            .to_str()
            .context("temp path is not UTF-8")?,
        0,
    )?)
}

/// What `bench record` records: a workspace of [`SCRIPTS`] scripts in a temporary folder, and
/// `uses` event lines that run them (with the same lines parsed, for the bare baselines).
pub(crate) struct Workload {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) lines: Vec<String>,
    pub(crate) events: Vec<mindrune_core::avatars::event::Event>,
}

pub(crate) fn workload(uses: usize) -> anyhow::Result<Workload> {
    anyhow::ensure!(
        uses >= 100,
        "--uses must be at least 100 for meaningful percentiles"
    );
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let bots = dir.path().join("workspace/bots/bench");
    std::fs::create_dir_all(&bots)?;
    std::fs::write(
        bots.join("bot.env"),
        "BOT_USERNAME=bench\nPASSWORD=benchpass123\nSERVER=localhost\n",
    )?;
    for k in 0..SCRIPTS {
        std::fs::write(bots.join(format!("chop-{k}.ts")), script_source(k))?;
    }
    let start = 1_790_000_000;
    let lines: Vec<String> = (0..uses).map(|i| event_line(i, start)).collect();
    let events = lines
        .iter()
        .map(|line| mindrune_core::avatars::event::parse_line(line).map_err(anyhow::Error::new))
        .collect::<anyhow::Result<_>>()?;
    Ok(Workload { dir, lines, events })
}

/// The `call` column of a bare baseline's row.
pub(crate) fn bare_call(event: &mindrune_core::avatars::event::Event) -> &str {
    match &event.call {
        mindrune_core::avatars::event::Call::Shell { command, .. } => command.as_str(),
        _ => "",
    }
}

/// The `xp` column of a bare baseline's row.
pub(crate) const BARE_XP: &str = "{\"Woodcutting\":250.0}";

/// Times `mindrune(i)` and `bare(i)` for every use `i`, in alternating blocks, so whatever else
/// the machine does slows both alike. Returns their figures, MindRune's first.
pub(crate) fn alternate(
    uses: usize,
    mut mindrune: impl FnMut(usize) -> anyhow::Result<()>,
    mut bare: impl FnMut(usize) -> anyhow::Result<()>,
) -> anyhow::Result<(Figures, Figures)> {
    let mut mindrune_latencies = Vec::with_capacity(uses);
    let mut bare_latencies = Vec::with_capacity(uses);
    let (mut mindrune_total, mut bare_total) = (Duration::ZERO, Duration::ZERO);
    for block in (0..uses).collect::<Vec<_>>().chunks(uses.div_ceil(BLOCKS)) {
        let began = Instant::now();
        for &i in block {
            let t = Instant::now();
            mindrune(i)?;
            mindrune_latencies.push(t.elapsed());
        }
        mindrune_total += began.elapsed();
        let began = Instant::now();
        for &i in block {
            let t = Instant::now();
            bare(i)?;
            bare_latencies.push(t.elapsed());
        }
        bare_total += began.elapsed();
    }
    Ok((
        figures(mindrune_latencies, mindrune_total),
        figures(bare_latencies, bare_total),
    ))
}

/// The row that stands for a benchmark group that failed to run.
fn did_not_run(group: &str, name: &str, err: &anyhow::Error) -> Row {
    let mut row = Row::new(group, name, "—");
    row.baseline_name = format!("error: {err:#}");
    row.result = Verdict::Fail;
    row
}

/// `mindrune bench record`: recording uses into SQLite beside bare SQLite inserts of the same
/// rows; with `postgres` (the `--database` URL), also into a scratch schema of that PostgreSQL
/// database beside bare PostgreSQL inserts, in the same run (see [`crate::bench_pg`]).
pub fn record(uses: usize, postgres: Option<&str>, print: Print) -> anyhow::Result<Vec<Row>> {
    let work = workload(uses)?;
    let dir = &work.dir;
    let lines = &work.lines;

    // MindRune: parse, classify, match the version, scrub, insert and rescore, one at a time.
    let store = setup_library(dir.path(), "mindrune.db")?;
    let recorder = Recorder::new(&store);
    let owner = store
        .owner_by_name("bench-owner")?
        .context("bench owner vanished")?;

    // Baseline: the same rows into the same table (same indexes, same pragmas, same planner
    // setting), bare, one transaction each.
    let baseline_store = setup_library(dir.path(), "baseline.db")?;
    let baseline_owner = baseline_store
        .owner_by_name("bench-owner")?
        .context("bench owner vanished")?;
    drop(baseline_store);
    let conn = rusqlite::Connection::open(dir.path().join("baseline.db"))?;
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    conn.execute_batch(&format!(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF;",
        SqliteStore::synchronous()
    ))?;
    // The baseline's rows need versions to point at, one per script.
    conn.execute(
        "INSERT INTO skills (skill_id, owner_id, agent_id, agent_name, name, path, created_at) VALUES (1, ?1, 1, 'bench', 'x', 'bots/bench/x.ts', 0)",
        [baseline_owner.id.0],
    )?;
    for i in 0..SCRIPTS {
        conn.execute(
            "INSERT INTO versions (version_id, owner_id, skill_id, number, digest, code, created_at) VALUES (?1, ?2, 1, ?1, ?3, '', 0)",
            rusqlite::params![i as i64 + 1, baseline_owner.id.0, format!("d{i}")],
        )?;
    }
    conn.execute_batch("PRAGMA foreign_keys = ON;")?;
    let rows = &work.events;
    let bare_insert = |i: usize,
                       event: &mindrune_core::avatars::event::Event|
     -> anyhow::Result<()> {
        let tx = conn.unchecked_transaction()?;
        tx.prepare_cached(
            "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                               deaths, stuck, items_lost, source, call, output, event_id, recorded_at)
             VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, NULL, 0, 0, 0, 0, 'shell', ?7, ?8, NULL, ?3)",
        )?
        .execute(rusqlite::params![
            baseline_owner.id.0,
            (i % SCRIPTS) as i64 + 1,
            event.at.map_or(0, |at| at.unix_timestamp() * 1000),
            event.ok.unwrap_or(true),
            event.duration_ms.unwrap_or(0) as i64,
            BARE_XP,
            bare_call(event),
            event.output.as_deref(),
        ])?;
        tx.commit()?;
        Ok(())
    };

    // The two run in alternating blocks, so whatever else the machine does slows both alike.
    let (mindrune, bare) = alternate(
        uses,
        |i| {
            let recorded = recorder.record_line(&lines[i])?;
            anyhow::ensure!(
                recorded.runs.len() == 1,
                "the benchmark event did not record one run: {recorded:?}"
            );
            Ok(())
        },
        |i| bare_insert(i, &rows[i]),
    )?;
    anyhow::ensure!(
        store.use_count(owner.id)? == uses as i64,
        "not every use was stored"
    );
    let ratio = mindrune.mean.as_secs_f64() / bare.mean.as_secs_f64();

    // The same uses on PostgreSQL, when a database was chosen.
    let pg = postgres
        .map(|url| crate::bench_pg::measure(url, &work))
        .transpose()?;

    let checks = [
        (
            "uses/s",
            mindrune.per_second >= TARGET_USES_PER_SECOND,
            format!("≥ {TARGET_USES_PER_SECOND:.0}"),
        ),
        (
            "p99",
            mindrune.p99 < TARGET_P99,
            format!("< {}", micros(TARGET_P99)),
        ),
        ("ratio", ratio <= TARGET_RATIO, format!("≤ {TARGET_RATIO}×")),
    ];
    let mut out = std::io::stdout().lock();
    if print == Print::Json {
        let mut report = json!({
            "benchmark": "record",
            "uses": uses,
            "scripts": SCRIPTS,
            "mindrune": figures_json(&mindrune),
            "baseline_bare_sqlite": figures_json(&bare),
            "ratio": ratio,
            "targets": checks.iter().map(|(name, pass, target)| json!({"figure": name, "target": target, "pass": pass})).collect::<Vec<_>>(),
        });
        if let Some(pg) = &pg {
            report["postgresql"] = pg.json();
        }
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else if print == Print::Text {
        writeln!(
            out,
            "mindrune bench record: {uses} uses of {SCRIPTS} scripts, SQLite WAL (synchronous={})\n",
            SqliteStore::synchronous()
        )?;
        write_figures(
            &mut out,
            [
                (
                    "MindRune (parse, classify, match, insert, rescore)",
                    &mindrune,
                ),
                ("bare SQLite insert, one tx each", &bare),
            ],
            ratio,
        )?;
        for (name, pass, target) in &checks {
            writeln!(
                out,
                "  {name:<7} target {target:<10} {}",
                if *pass { "pass" } else { "FAIL" }
            )?;
        }
        if let Some(pg) = &pg {
            pg.write_text(&mut out, uses, [&mindrune, &bare], ratio)?;
        }
    }
    let size = format!("{uses} uses, {SCRIPTS} scripts");
    let bare_name = "bare SQLite insert, one tx each";
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let mut rows = vec![
        Row::new("record", "uses recorded per second", &size)
            .figure(mindrune.per_second, "uses/s")
            .baseline(bare_name, bare.per_second, "uses/s")
            .target(format!("≥ {TARGET_USES_PER_SECOND:.0} uses/s"), checks[0].1),
        Row::new("record", "p99 latency of one use", &size)
            .figure(us(mindrune.p99), "µs")
            .baseline(bare_name, us(bare.p99), "µs")
            .target(format!("< {:.0} µs", us(TARGET_P99)), checks[1].1),
        Row::new("record", "mean latency of one use", &size)
            .figure(us(mindrune.mean), "µs")
            .baseline(bare_name, us(bare.mean), "µs")
            .target(format!("ratio ≤ {TARGET_RATIO}×"), checks[2].1),
    ];
    if let Some(pg) = &pg {
        rows.extend(pg.rows(&size));
    }
    Ok(rows)
}

/// Targets from the design brief for a turn boundary and a mirror refresh.
const TARGET_TURN: Duration = Duration::from_millis(50);
const TARGET_REFRESH: Duration = Duration::from_millis(50);
const TURN_SCRIPTS: usize = 200;
const FAMILY_AGENTS: usize = 20;
const SKILLS_PER_AGENT: usize = 100;
const USES_PER_SKILL: usize = 5;
const LESSONS_PER_AGENT: usize = 10;
/// Timed repetitions of each steady-state measurement; the median is reported.
const REPEATS: usize = 15;

pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Reads every regular file under a directory: the baseline "reading the same bytes".
fn read_tree(dir: &Path) -> std::io::Result<usize> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += read_tree(&entry.path())?;
        } else if kind.is_file() {
            total += std::fs::read(entry.path())?.len();
        }
    }
    Ok(total)
}

/// The `q` quantile of sorted samples (nearest rank); zero for no samples.
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

pub(crate) fn time_it<T>(
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(Duration, T)> {
    let began = Instant::now();
    let value = work()?;
    Ok((began.elapsed(), value))
}

/// `mindrune bench mirror`: a turn boundary for an agent with 200 scripts, and a refresh of
/// `family-skills/` for a family of 20 agents × 100 shared skills × 10,000 uses.
pub fn mirror(print: Print) -> anyhow::Result<Vec<Row>> {
    use mindrune_engine::avatars::family;
    use mindrune_engine::avatars::turn::{self, Boundary, MirrorPolicy};
    use mindrune_store::{HeaderState, NewLesson, NewUse, Outcome, ScriptSnapshot, SkillHeader};

    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;

    // Part 1: one agent with 200 headed scripts, each run enough to be shared.
    let store = setup_library(dir.path(), "turn.db")?;
    let bots = dir.path().join("workspace/bots/bench");
    std::fs::create_dir_all(&bots)?;
    for k in 0..TURN_SCRIPTS {
        std::fs::write(bots.join(format!("chop-{k}.ts")), script_source(k))?;
    }
    std::fs::write(
        bots.join("lab_log.md"),
        (0..50)
            .map(|i| format!("- Share: [skill:woodcutting] lesson number {i} about trees\n"))
            .collect::<String>(),
    )?;
    let recorder = Recorder::new(&store);
    let start = 1_790_000_000;
    for i in 0..TURN_SCRIPTS * USES_PER_SKILL {
        let line = event_line(i, start).replace(
            &format!("chop-{}.ts", i % SCRIPTS),
            &format!("chop-{}.ts", i % TURN_SCRIPTS),
        );
        recorder.record_line(&line)?;
    }
    // One turn boundary as the benchmark times it: the scan alone (the mirror is part 2).
    let turn_end =
        || turn::turn_boundary(&store, "bench", Boundary::TurnEnd, MirrorPolicy::Skip, None);
    let (first_turn, first) = time_it(|| Ok(turn_end()?))?;
    anyhow::ensure!(
        first.checked == TURN_SCRIPTS,
        "the turn saw {} scripts",
        first.checked
    );
    let mut steady = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..REPEATS {
        steady.push(time_it(|| Ok(turn_end()?))?.0);
        baseline.push(time_it(|| Ok(read_tree(&bots)?))?.0);
    }
    let turn_steady = median(steady);
    let turn_baseline = median(baseline);
    // Ten edited scripts: ten new versions in one turn.
    for k in 0..10 {
        std::fs::write(
            bots.join(format!("chop-{k}.ts")),
            script_source(k).replace("break;", "break; // edited"),
        )?;
    }
    let (turn_edits, _) = time_it(|| Ok(turn_end()?))?;
    drop(recorder);
    drop(store);

    // Part 2: a family of 20 agents × 100 shared skills, 10,000 uses, 200 lessons.
    let store = SqliteStore::open(&dir.path().join("family.db"))?;
    let owner = store.create_owner("bench-family", "mrk_family_0123456789abcdef0123456789", 0)?;
    let mut agents = Vec::new();
    for a in 0..FAMILY_AGENTS {
        let workspace = dir.path().join(format!("family/agent{a}"));
        std::fs::create_dir_all(&workspace)?;
        agents.push(store.create_agent(
            owner.id,
            &format!("agent{a}"),
            workspace.to_str().context("temp path is not UTF-8")?,
            0,
        )?);
    }
    let topics = [
        "skill:woodcutting",
        "skill:mining",
        "item:iron-ore",
        "place:lumbridge",
    ];
    for (a, agent) in agents.iter().enumerate() {
        for k in 0..SKILLS_PER_AGENT {
            let code = script_source(a * SKILLS_PER_AGENT + k);
            let code = mindrune_core::digest::code_without_header(&code);
            let matched = store.match_script(
                owner.id,
                &ScriptSnapshot {
                    agent: agent.id,
                    path: format!("bots/{}/skill-{k}.ts", agent.name),
                    name: format!("skill-{k}"),
                    digest: mindrune_core::digest::sha256(code.as_bytes()),
                    code,
                    tags: vec![topics[k % topics.len()].to_string()],
                    header: SkillHeader {
                        state: HeaderState::Skill,
                        goal: Some(format!("gather resource {k} near spot {a}")),
                        preconditions: Some("a tool and an empty backpack".into()),
                        topics: vec![topics[k % topics.len()].to_string()],
                        ..SkillHeader::default()
                    },
                    file_digest: None,
                    origin: None,
                },
                0,
            )?;
            for u in 0..USES_PER_SKILL {
                // Every third use is a sibling's, so "used by" has something to count.
                let runner = if u % 3 == 2 {
                    agents[(a + 1) % FAMILY_AGENTS].id
                } else {
                    agent.id
                };
                store.record_use(
                    owner.id,
                    &NewUse {
                        version: matched.version.id,
                        agent: runner,
                        outcome: Outcome {
                            at: (start + (k * USES_PER_SKILL + u) as i64) * 1000,
                            ok: true,
                            duration_ms: 60_000,
                            ..Outcome::default()
                        },
                        source: "shell".into(),
                        call: None,
                        output: None,
                        event_id: None,
                        recorded_at: start * 1000,
                    },
                )?;
            }
        }
        let lessons: Vec<NewLesson> = (0..LESSONS_PER_AGENT)
            .map(|i| NewLesson {
                line: i + 1,
                text: format!(
                    "[{}] lesson {i} of agent {a}: bank before the trip",
                    topics[i % topics.len()]
                ),
            })
            .collect();
        store.replace_lessons(owner.id, agent.id, &lessons, start * 1000)?;
    }
    let uses = store.use_count(owner.id)?;
    let reader = &agents[0];
    let out_dir = dir.path().join("family/agent0/family-skills");
    let (refresh_first, first) =
        time_it(|| Ok(family::refresh_mirror(&store, reader, Some(&out_dir))?))?;
    let written = match &first {
        family::MirrorOutcome::Refreshed { written, .. } => written.len(),
        family::MirrorOutcome::Skipped { .. } => 0,
    };
    let mut steady = Vec::new();
    let mut baseline = Vec::new();
    let mut bytes = 0;
    for _ in 0..REPEATS {
        steady.push(time_it(|| Ok(family::refresh_mirror(&store, reader, Some(&out_dir))?))?.0);
        let (took, read) = time_it(|| Ok(read_tree(&out_dir)?))?;
        bytes = read;
        baseline.push(took);
    }
    let refresh_steady = median(steady);
    let refresh_baseline = median(baseline);

    let checks = [
        (
            "turn boundary, 200 scripts",
            turn_steady < TARGET_TURN,
            turn_steady,
        ),
        (
            "mirror refresh, 20 × 100",
            refresh_steady < TARGET_REFRESH,
            refresh_steady,
        ),
    ];
    let mut out = std::io::stdout().lock();
    if print == Print::Json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({
                "benchmark": "mirror",
                "turn": {
                    "scripts": TURN_SCRIPTS,
                    "first_ms": first_turn.as_secs_f64() * 1e3,
                    "steady_ms": turn_steady.as_secs_f64() * 1e3,
                    "ten_edits_ms": turn_edits.as_secs_f64() * 1e3,
                    "baseline_read_files_ms": turn_baseline.as_secs_f64() * 1e3,
                    "ratio": turn_steady.as_secs_f64() / turn_baseline.as_secs_f64(),
                    "target_ms": TARGET_TURN.as_secs_f64() * 1e3,
                    "pass": turn_steady < TARGET_TURN,
                },
                "refresh": {
                    "agents": FAMILY_AGENTS,
                    "shared_skills": FAMILY_AGENTS * SKILLS_PER_AGENT,
                    "uses": uses,
                    "files_first_written": written,
                    "mirror_bytes": bytes,
                    "first_ms": refresh_first.as_secs_f64() * 1e3,
                    "steady_ms": refresh_steady.as_secs_f64() * 1e3,
                    "baseline_read_mirror_ms": refresh_baseline.as_secs_f64() * 1e3,
                    "ratio": refresh_steady.as_secs_f64() / refresh_baseline.as_secs_f64(),
                    "target_ms": TARGET_REFRESH.as_secs_f64() * 1e3,
                    "pass": refresh_steady < TARGET_REFRESH,
                },
            }),
        )?;
        writeln!(out)?;
    } else if print == Print::Text {
        writeln!(
            out,
            "mindrune bench mirror: medians of {REPEATS} runs, SQLite WAL\n"
        )?;
        writeln!(
            out,
            "turn boundary, one agent with {TURN_SCRIPTS} headed scripts (all shared):"
        )?;
        writeln!(
            out,
            "  first turn end after 1,000 runs    {:>10}",
            micros(first_turn)
        )?;
        writeln!(
            out,
            "  unchanged files                    {:>10}",
            micros(turn_steady)
        )?;
        writeln!(
            out,
            "  ten files edited                   {:>10}",
            micros(turn_edits)
        )?;
        writeln!(
            out,
            "  baseline: read the 200 files       {:>10}",
            micros(turn_baseline)
        )?;
        writeln!(
            out,
            "  ratio (unchanged / baseline)       {:>9.1}×\n",
            turn_steady.as_secs_f64() / turn_baseline.as_secs_f64()
        )?;
        writeln!(
            out,
            "family-skills/ refresh for agent0, family of {FAMILY_AGENTS} agents × {SKILLS_PER_AGENT} shared skills, {uses} uses, {} lessons:",
            FAMILY_AGENTS * LESSONS_PER_AGENT
        )?;
        writeln!(
            out,
            "  first refresh ({written} files written)  {:>10}",
            micros(refresh_first)
        )?;
        writeln!(
            out,
            "  refresh, nothing changed           {:>10}",
            micros(refresh_steady)
        )?;
        writeln!(
            out,
            "  baseline: read the mirror ({} KB)  {:>10}",
            bytes / 1024,
            micros(refresh_baseline)
        )?;
        writeln!(
            out,
            "  ratio (refresh / baseline)         {:>9.1}×\n",
            refresh_steady.as_secs_f64() / refresh_baseline.as_secs_f64()
        )?;
        for (name, pass, took) in &checks {
            writeln!(
                out,
                "  {name:<28} {:>9}  target < 50 ms  {}",
                micros(*took),
                if *pass { "pass" } else { "FAIL" }
            )?;
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let turn_size = format!("1 agent, {TURN_SCRIPTS} scripts");
    let family_size = format!("{FAMILY_AGENTS} agents × {SKILLS_PER_AGENT} skills, {uses} uses");
    Ok(vec![
        Row::new("mirror", "turn boundary, files unchanged", &turn_size)
            .figure(ms(turn_steady), "ms")
            .baseline("read the same files", ms(turn_baseline), "ms")
            .target("< 50 ms", checks[0].1),
        Row::new("mirror", "turn boundary, ten files edited", &turn_size)
            .figure(ms(turn_edits), "ms")
            .baseline("read the same files", ms(turn_baseline), "ms"),
        Row::new("mirror", "family-skills/ refresh, unchanged", &family_size)
            .figure(ms(refresh_steady), "ms")
            .baseline("read the mirror's bytes", ms(refresh_baseline), "ms")
            .target("< 50 ms", checks[1].1),
        Row::new("mirror", "family-skills/ first refresh", &family_size)
            .figure(ms(refresh_first), "ms")
            .baseline("read the mirror's bytes", ms(refresh_baseline), "ms"),
    ])
}

/// The target for mapping free text to tags.
const TARGET_TAGS_MB_PER_SECOND: f64 = 200.0;
/// Timed builds of the vocabulary; the median is reported.
const TAG_BUILDS: usize = 5;
/// Alternating blocks of the two mapping measurements, so a slow patch of the machine falls
/// on both alike.
const TAG_BLOCKS: usize = 10;

/// A small deterministic random source (xorshift64*), so every run maps the same text.
pub(crate) struct Dice(pub(crate) u64);

impl Dice {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Free text as agents write it: goals, preconditions, lab-log runs and prose, `Share:`
/// lessons and a little code, naming the vocabulary's pages by title (in any case), by
/// nickname and by exact tag, among everyday words. One line each, at least `bytes` in all.
fn free_text_lines(
    vocabulary: &mindrune_core::avatars::vocabulary::Vocabulary,
    bytes: usize,
) -> Vec<String> {
    let entries = vocabulary.entries();
    let title = |dice: &mut Dice| {
        let entry = dice.pick(entries);
        match dice.below(4) {
            0 => entry.title.to_lowercase(),
            1 => entry.title.to_uppercase(),
            _ => entry.title.clone(),
        }
    };
    let tag = |dice: &mut Dice| dice.pick(entries).tag();
    const EVERYDAY: &[&str] = &[
        "cows",
        "the goblin",
        "logs",
        "the bank",
        "a tree",
        "fish",
        "chickens",
        "the man",
        "rocks",
        "the door",
        "ore",
        "bones",
        "the range",
        "coins",
        "the guard",
    ];
    const VERBS: &[&str] = &[
        "kill",
        "chop",
        "mine",
        "fish",
        "cook",
        "buy",
        "sell",
        "walk to",
        "talk to",
        "bank",
        "smith",
        "pick up",
        "attack",
        "steal from",
    ];
    const NICKNAMES: &[&str] = &[
        "lumby",
        "fally",
        "ardy",
        "wildy",
        "barb village",
        "rune pick",
    ];
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut lines = Vec::new();
    let mut total = 0;
    while total < bytes {
        let n = dice.below(3_400);
        let line = match dice.below(8) {
            0 => format!(
                " * Goal: {} {} near {} and bank the {}",
                dice.pick(VERBS),
                title(&mut dice),
                title(&mut dice),
                dice.pick(EVERYDAY)
            ),
            1 => format!(
                " * Preconditions: level {} {}, a {}, {} done; start in {}",
                n % 99,
                title(&mut dice),
                title(&mut dice),
                tag(&mut dice),
                dice.pick(NICKNAMES)
            ),
            2 => format!(
                "Share: [{}] {} is {} {} of {}; bring {} and watch out for {}",
                tag(&mut dice),
                title(&mut dice),
                n % 40,
                ["steps north", "tiles west", "squares east"][n % 3],
                title(&mut dice),
                title(&mut dice),
                dice.pick(EVERYDAY)
            ),
            3 => format!(
                "## Run {n:03} - walked to {}, {} {} x{}, XP +{}; {} was slow, so I went back to {} and the {} again",
                title(&mut dice),
                dice.pick(VERBS),
                dice.pick(EVERYDAY),
                n % 28,
                n * 7,
                dice.pick(EVERYDAY),
                dice.pick(NICKNAMES),
                dice.pick(EVERYDAY)
            ),
            4 => format!(
                "  await bot.walkTo({}, {}); // {} — then {} the {} ({})",
                3_000 + n,
                3_200 + n % 300,
                title(&mut dice),
                dice.pick(VERBS),
                dice.pick(EVERYDAY),
                tag(&mut dice)
            ),
            // Lab-log prose: most of a log's bytes, with a name now and then.
            6 => format!(
                "The script stalled after {} ticks because the {} was closed; I opened it by hand, waited for the dialog to clear and ran it again. It kept going for {} minutes, then {} blocked the path near {}, so next time I will check the route first and bank earlier.",
                n % 90,
                dice.pick(EVERYDAY),
                n % 30,
                dice.pick(EVERYDAY),
                title(&mut dice)
            ),
            7 => format!(
                "Observations: the {} respawn every {} seconds, the inventory fills in about {} minutes, and walking back costs more than the trip is worth unless run energy is above {} percent. {} would be better if the bank were closer.",
                dice.pick(EVERYDAY),
                n % 60,
                n % 12,
                n % 100,
                dice.pick(NICKNAMES)
            ),
            _ => format!(
                "{} {} with {} in {}, then {} {}",
                dice.pick(VERBS),
                dice.pick(EVERYDAY),
                title(&mut dice),
                title(&mut dice),
                dice.pick(VERBS),
                dice.pick(EVERYDAY)
            ),
        };
        total += line.len();
        lines.push(line);
    }
    lines
}

/// Writes a wiki tree of one page per `kind:slug` line, as rs-sdk's generators write pages: a
/// `# Title` heading and a detail table. Returns how many pages were written.
fn write_wiki(listing: &str, dir: &Path) -> anyhow::Result<usize> {
    use mindrune_core::avatars::vocabulary::{Source, parse_listing};

    let (entries, _) = parse_listing(listing, Source::Wiki);
    let folder = |kind: &str| match kind {
        "quest" => "quests",
        "skill" => "skills",
        "item" => "items",
        "npc" => "npcs",
        _ => "shops",
    };
    for entry in &entries {
        let path = dir.join(folder(&entry.kind));
        std::fs::create_dir_all(&path)?;
        std::fs::write(
            path.join(format!("{}.md", entry.slug)),
            format!(
                "# {}\n\n| Detail | Value |\n|---|---|\n| Members | No |\n| Examine | A {} of the game. |\n\n## Notes\n\nGenerated for `mindrune bench tags`.\n",
                entry.title, entry.kind
            ),
        )?;
    }
    Ok(entries.len())
}

/// `mindrune bench tags`: building the vocabulary from a wiki of the real rs-sdk pages plus
/// the places and LostHQ pages, and mapping free text to tags beside a plain Aho-Corasick scan
/// of the same text for the same names (ASCII case ignored, leftmost-longest), in one run.
pub fn tags(pages: Option<&Path>, megabytes: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    use mindrune_core::avatars::vocabulary::Vocabulary;
    use mindrune_engine::avatars::tags as engine_tags;

    anyhow::ensure!(megabytes >= 1, "--megabytes must be at least 1");
    // The project's shared data: `$MINDRUNE_SHARED`, else `../shared` beside the checkout.
    let default = std::env::var_os("MINDRUNE_SHARED")
        .map_or_else(
            || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
            std::path::PathBuf::from,
        )
        .join("data/rs-sdk/wiki-pages.txt");
    let pages = pages.unwrap_or(&default);
    let listing = std::fs::read_to_string(pages).with_context(|| {
        format!(
            "cannot read the page listing {}\n\nhint: pass one with --pages FILE (`kind:slug` lines)",
            pages.display()
        )
    })?;
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let written = write_wiki(&listing, dir.path())?;

    // Building: reading the pages, then compiling the alias table and its automaton.
    let mut reads = Vec::with_capacity(TAG_BUILDS);
    let mut compiles = Vec::with_capacity(TAG_BUILDS);
    let mut plain_builds = Vec::with_capacity(TAG_BUILDS);
    let mut vocabulary = None;
    for _ in 0..TAG_BUILDS {
        let (read_took, read) = time_it(|| Ok(engine_tags::build_from_wiki(dir.path())?))?;
        anyhow::ensure!(
            read.skipped.is_empty() && read.entries.len() == written,
            "the generated wiki did not read back whole: {:?}",
            read.skipped
        );
        let (compile_took, built) =
            time_it(|| Ok(Vocabulary::from_entries(read.entries.iter().cloned()).0))?;
        let names: Vec<String> = built.names().map(str::to_string).collect();
        let (plain_took, _) = time_it(|| {
            Ok(aho_corasick::AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(aho_corasick::MatchKind::LeftmostLongest)
                .build(&names)?)
        })?;
        reads.push(read_took);
        compiles.push(compile_took);
        plain_builds.push(plain_took);
        vocabulary = Some(built);
    }
    let vocabulary = vocabulary.context("no build was measured")?;
    let (read_took, compile_took, plain_build) =
        (median(reads), median(compiles), median(plain_builds));

    // Mapping: the same lines through MindRune and through a plain scan, alternating blocks.
    let lines = free_text_lines(&vocabulary, megabytes * 1_000_000);
    let bytes: usize = lines.iter().map(String::len).sum();
    let plain = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(vocabulary.names())?;
    let (mut mindrune_took, mut plain_took) = (Duration::ZERO, Duration::ZERO);
    let (mut tags_found, mut plain_found) = (0usize, 0usize);
    for block in lines.chunks(lines.len().div_ceil(TAG_BLOCKS)) {
        let began = Instant::now();
        for line in block {
            tags_found += vocabulary.map(line).len();
        }
        mindrune_took += began.elapsed();
        let began = Instant::now();
        for line in block {
            plain_found += plain.find_iter(line).count();
        }
        plain_took += began.elapsed();
    }
    let mb_per_second = |took: Duration| bytes as f64 / 1e6 / took.as_secs_f64();
    let (mindrune_rate, plain_rate) = (mb_per_second(mindrune_took), mb_per_second(plain_took));
    let ratio = mindrune_rate / plain_rate;
    let pass = mindrune_rate >= TARGET_TAGS_MB_PER_SECOND;

    // Linear in the size of one text: the lines as one document, each tenth of them and all
    // of them, each mapped in one call (medians: of the ten tenths, so the small rate covers
    // the same text as the large one, and of three passes over the whole).
    let one_text = |lines: &[String]| lines.join("\n");
    let tenths: Vec<String> = lines
        .chunks(lines.len().div_ceil(10))
        .map(one_text)
        .collect();
    let small_text_bytes = tenths.iter().map(String::len).sum::<usize>() / tenths.len();
    let large_text = one_text(&lines);
    let rate_of = |text: &str| -> f64 {
        let began = Instant::now();
        std::hint::black_box(vocabulary.map(text));
        text.len() as f64 / 1e6 / began.elapsed().as_secs_f64()
    };
    let median_of = |mut rates: Vec<f64>| -> f64 {
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    };
    let small_rate = median_of(tenths.iter().map(|text| rate_of(text)).collect());
    let large_rate = median_of((0..3).map(|_| rate_of(&large_text)).collect());
    let small_over_large = small_rate / large_rate;
    let linear = (small_over_large - 1.0).abs() <= TAGS_LINEAR_WITHIN;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;

    let mut out = std::io::stdout().lock();
    if print == Print::Json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({
                "benchmark": "tags",
                "build": {
                    "pages": written,
                    "tags": vocabulary.len(),
                    "names": vocabulary.name_count(),
                    "read_wiki_ms": ms(read_took),
                    "compile_ms": ms(compile_took),
                    "total_ms": ms(read_took + compile_took),
                    "baseline_plain_aho_corasick_build_ms": ms(plain_build),
                },
                "map": {
                    "bytes": bytes,
                    "lines": lines.len(),
                    "tags_found": tags_found,
                    "mb_per_second": mindrune_rate,
                    "baseline_plain_aho_corasick_mb_per_second": plain_rate,
                    "baseline_matches": plain_found,
                    "ratio": ratio,
                    "target_mb_per_second": TARGET_TAGS_MB_PER_SECOND,
                    "pass": pass,
                },
                "linear": {
                    "small_text_bytes": small_text_bytes,
                    "small_text_mb_per_second": small_rate,
                    "large_text_bytes": large_text.len(),
                    "large_text_mb_per_second": large_rate,
                    "small_over_large": small_over_large,
                    "within": TAGS_LINEAR_WITHIN,
                    "pass": linear,
                },
            }),
        )?;
        writeln!(out)?;
    } else if print == Print::Text {
        writeln!(
            out,
            "mindrune bench tags: {} wiki pages (generated from {}) plus places and LostHQ pages\n",
            written,
            pages.display()
        )?;
        writeln!(
            out,
            "build: {} tags, {} names; medians of {TAG_BUILDS} builds",
            vocabulary.len(),
            vocabulary.name_count()
        )?;
        writeln!(
            out,
            "  read the wiki ({written} pages)     {:>10}",
            micros(read_took)
        )?;
        writeln!(
            out,
            "  compile the vocabulary           {:>10}",
            micros(compile_took)
        )?;
        writeln!(
            out,
            "  total                            {:>10}",
            micros(read_took + compile_took)
        )?;
        writeln!(
            out,
            "  baseline: plain aho-corasick build {:>8}\n",
            micros(plain_build)
        )?;
        writeln!(
            out,
            "map: {:.1} MB of free text in {} lines",
            bytes as f64 / 1e6,
            lines.len()
        )?;
        writeln!(
            out,
            "  MindRune (spelling rules, whole words, aliases, exact tags) {mindrune_rate:>7.0} MB/s  ({tags_found} tags)"
        )?;
        writeln!(
            out,
            "  baseline: plain aho-corasick, same names                   {plain_rate:>7.0} MB/s  ({plain_found} matches)"
        )?;
        writeln!(
            out,
            "  ratio (MindRune / baseline)                                {ratio:>7.2}×\n"
        )?;
        writeln!(
            out,
            "  map     target ≥ {TARGET_TAGS_MB_PER_SECOND:.0} MB/s  {}\n",
            if pass { "pass" } else { "FAIL" }
        )?;
        writeln!(
            out,
            "linear: the same lines as one text, {:.1} MB at {small_rate:.0} MB/s (median of ten) and {:.1} MB at {large_rate:.0} MB/s: {small_over_large:.2}× (target 1 ± {:.0} %)  {}",
            small_text_bytes as f64 / 1e6,
            large_text.len() as f64 / 1e6,
            TAGS_LINEAR_WITHIN * 100.0,
            if linear { "pass" } else { "FAIL" }
        )?;
    }
    let map_size = format!("{:.0} MB of free text", bytes as f64 / 1e6);
    Ok(vec![
        Row::new(
            "tags",
            "build the vocabulary",
            format!("{written} wiki pages, {} names", vocabulary.name_count()),
        )
        .figure(ms(read_took + compile_took), "ms")
        .baseline(
            "plain aho-corasick build, same names",
            ms(plain_build),
            "ms",
        ),
        Row::new("tags", "map free text to tags", map_size)
            .figure(mindrune_rate, "MB/s")
            .baseline("plain aho-corasick scan, same names", plain_rate, "MB/s")
            .target(format!("≥ {TARGET_TAGS_MB_PER_SECOND:.0} MB/s"), pass),
        Row::new(
            "tags",
            "linear: small text rate / large text rate",
            format!(
                "{:.0} MB vs {:.0} MB, one text each",
                small_text_bytes as f64 / 1e6,
                large_text.len() as f64 / 1e6
            ),
        )
        .figure(small_over_large, "×")
        .target(format!("1 ± {:.0} %", TAGS_LINEAR_WITHIN * 100.0), linear),
    ])
}

/// How far the rate of mapping one small text may be from that of one ten times larger.
const TAGS_LINEAR_WITHIN: f64 = 0.25;

/// Sizes `mindrune bench` runs every benchmark at: about three to four minutes on 2 cores.
/// The host guard calls judged in `mindrune bench` (all groups).
const ALL_GUARD_CALLS: usize = 2_000;
const ALL_RECORD_USES: usize = 20_000;
const ALL_TAGS_MEGABYTES: usize = 50;
const ALL_SECRETS_MEGABYTES: usize = 50;
const ALL_SNIPPETS: usize = 2_000;
const ALL_SERVE_RUNNERS: usize = 50;
const ALL_SERVE_BATCH: usize = 10;
const ALL_MEMORY_USES: usize = 1_000_000;
const ALL_LAB_FILES: usize = 480;
const ALL_LAB_MEBIBYTES: usize = 16;
const ALL_SEARCH_SKILLS: usize = 1_000;

/// `mindrune bench`: every benchmark at a stated size, one table (or JSON) of their rows.
/// A missed budget is a FAIL row, not an error: the exit status is 0 whenever the benchmarks
/// ran. With `postgres` (the `--database` URL), `record` runs on that PostgreSQL database too.
pub fn all(
    serve_seconds: u64,
    skip_memory: bool,
    postgres: Option<&str>,
    json_out: bool,
) -> anyhow::Result<ExitCode> {
    type Group<'a> = (&'a str, Box<dyn FnOnce() -> anyhow::Result<Vec<Row>> + 'a>);
    let mut groups: Vec<Group<'_>> = vec![
        (
            "record",
            Box::new(|| record(ALL_RECORD_USES, None, Print::Quiet)),
        ),
        ("mirror", Box::new(|| mirror(Print::Quiet))),
        (
            "tags",
            Box::new(|| tags(None, ALL_TAGS_MEGABYTES, Print::Quiet)),
        ),
        (
            "secrets",
            Box::new(|| crate::bench_scan::secrets(ALL_SECRETS_MEGABYTES, Print::Quiet)),
        ),
        (
            "near-repeat",
            Box::new(|| crate::bench_scan::near_repeat(ALL_SNIPPETS, Print::Quiet)),
        ),
        (
            "serve",
            Box::new(move || {
                crate::bench_serve::serve(
                    serve_seconds,
                    ALL_SERVE_RUNNERS,
                    ALL_SERVE_BATCH,
                    Print::Quiet,
                )
                .map(|(rows, _)| rows)
            }),
        ),
    ];
    if let Some(url) = postgres {
        // A group of its own, so SQLite's rows stand when PostgreSQL fails; its rows (a
        // failure's too) are `record`'s.
        groups.insert(
            1,
            (
                "record (PostgreSQL)",
                Box::new(move || {
                    Ok(
                        crate::bench_pg::record(url, ALL_RECORD_USES).unwrap_or_else(|err| {
                            vec![did_not_run("record", "did not run (PostgreSQL)", &err)]
                        }),
                    )
                }),
            ),
        );
    }
    if !skip_memory {
        groups.push((
            "memory",
            Box::new(|| crate::bench_serve::memory(ALL_MEMORY_USES, Print::Quiet)),
        ));
    }
    groups.push((
        "search",
        Box::new(|| crate::bench_faces::search(ALL_SEARCH_SKILLS, Print::Quiet)),
    ));
    groups.push((
        "lab",
        Box::new(|| crate::bench_faces::lab(ALL_LAB_FILES, ALL_LAB_MEBIBYTES, Print::Quiet)),
    ));
    groups.push((
        "guard",
        Box::new(|| crate::bench_guard::guard(ALL_GUARD_CALLS, Print::Quiet)),
    ));
    let mut rows = Vec::new();
    for (name, run) in groups {
        eprintln!("mindrune bench: {name} …");
        let began = Instant::now();
        match run() {
            Ok(group) => rows.extend(stamp_rss(group)),
            Err(err) => rows.push(did_not_run(name, "did not run", &err)),
        }
        eprintln!(
            "mindrune bench: {name} took {:.1} s",
            began.elapsed().as_secs_f64()
        );
    }
    print_rows(&rows, json_out)?;
    Ok(ExitCode::SUCCESS)
}
