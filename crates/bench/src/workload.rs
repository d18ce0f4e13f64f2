//! What `bench record` records (a workspace of scripts and the event lines that run them) and
//! how its two measurements alternate; the PostgreSQL and scan benchmarks reuse the library
//! and scripts.

use mindrune_core::secret_digest;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_store::{SqliteStore, Store};
use serde_json::json;

use crate::measure::{Figures, figures, micros};

/// How many distinct scripts the benchmark agent runs.
pub(crate) const SCRIPTS: usize = 20;
/// Uses per write group (and rows per bare transaction) in the batched figures, for SQLite
/// (`bench record`) and PostgreSQL (`crate::pg`) alike.
pub(crate) const BATCH: usize = 100;
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
    let owner = store.create_owner(
        owner,
        &secret_digest("mrk_benchkey_0123456789abcdef0123456789abcdef"),
        0,
    )?;
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
    pub(crate) events: Vec<mindrune_core::Event>,
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
        .map(|line| mindrune_core::parse_line(line).map_err(anyhow::Error::new))
        .collect::<anyhow::Result<_>>()?;
    Ok(Workload { dir, lines, events })
}

/// The `call` column of a bare baseline's row.
pub(crate) fn bare_call(event: &mindrune_core::Event) -> &str {
    match &event.call {
        mindrune_core::Call::Shell { command, .. } => command.as_str(),
        _ => "",
    }
}

/// The `xp` column of a bare baseline's row.
pub(crate) const BARE_XP: &str = "{\"Woodcutting\":250.0}";

/// Records the workload's lines `batch` per write group (`Recorder::record_lines_together`)
/// beside `bare(first, events)` inserting the same rows `batch` a transaction, a group of each
/// in turn, so whatever else the machine does slows both alike (run one after the other, the
/// two rates moved a fifth apart between runs on an idle machine). Returns uses per second and
/// rows per second.
pub(crate) fn alternate_groups(
    work: &Workload,
    recorder: &mindrune_engine::Recorder<'_>,
    batch: usize,
    mut bare: impl FnMut(usize, &[mindrune_core::Event]) -> anyhow::Result<()>,
) -> anyhow::Result<(f64, f64)> {
    let lines: Vec<&str> = work.lines.iter().map(String::as_str).collect();
    let (mut mindrune, mut bare_time) = (Duration::ZERO, Duration::ZERO);
    for (index, (chunk, events)) in lines
        .chunks(batch)
        .zip(work.events.chunks(batch))
        .enumerate()
    {
        let began = Instant::now();
        for result in recorder.record_lines_together(chunk) {
            result?;
        }
        mindrune += began.elapsed();
        let began = Instant::now();
        bare(index * batch, events)?;
        bare_time += began.elapsed();
    }
    let per_second = |spent: Duration| lines.len() as f64 / spent.as_secs_f64();
    Ok((per_second(mindrune), per_second(bare_time)))
}

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
