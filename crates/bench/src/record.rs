//! `mindrune bench record`: recording a use beside bare inserts of the same rows.

use mindrune_store::{Directory as _, SkillRecords as _};
use std::io::Write;
use std::time::Duration;

use anyhow::Context as _;
use mindrune_engine::Recorder;
use mindrune_store::SqliteStore;
use serde_json::json;

use crate::measure::micros;
use crate::report::{Print, Row};
use crate::workload::{
    BARE_XP, BATCH, SCRIPTS, TARGET_P99, TARGET_RATIO, TARGET_USES_PER_SECOND, alternate,
    bare_call, figures_json, setup_library, workload, write_figures,
};

/// `mindrune bench record`: recording uses into SQLite beside bare SQLite inserts of the same
/// rows; with `postgres` (the `--database` URL), also into a scratch schema of that PostgreSQL
/// database beside bare PostgreSQL inserts, in the same run (see [`crate::pg`]).
#[expect(
    clippy::too_many_lines,
    reason = "a benchmark script: each backend and baseline set up, timed and reported in order"
)]
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

    // Baseline: the same rows into the same table (same indexes, same pragmas and page cache,
    // same planner setting), bare, one transaction each.
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
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = {}; PRAGMA foreign_keys = OFF; PRAGMA cache_size = -{};",
        SqliteStore::synchronous(),
        SqliteStore::cache_kib()
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
    let bare_insert = |i: usize, event: &mindrune_core::Event| -> anyhow::Result<()> {
        let tx = conn.unchecked_transaction()?;
        insert_bare(&tx, baseline_owner.id.0, i, event)?;
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
    let batched = batched(&work, &conn, baseline_owner.id.0)?;

    // The same uses on PostgreSQL, when a database was chosen.
    let pg = postgres
        .map(|url| crate::pg::measure(url, &work))
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
        writeln!(
            out,
            "\nin write groups of {BATCH} (one transaction each): MindRune {:.0} uses/s, bare SQLite {:.0} rows/s in transactions of {BATCH}, ratio {:.2} (target ≥ {TARGET_BATCHED_RATIO}) {}",
            batched.mindrune,
            batched.bare,
            batched.ratio(),
            if batched.ratio() >= TARGET_BATCHED_RATIO {
                "pass"
            } else {
                "FAIL"
            }
        )?;
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
    rows.push(
        Row::new(
            "record",
            "uses recorded per second, in write groups",
            format!("{uses} uses, groups of {BATCH}"),
        )
        .figure(batched.mindrune, "uses/s")
        .baseline(
            &format!("bare SQLite insert, transactions of {BATCH}"),
            batched.bare,
            "rows/s",
        )
        .target(
            format!("ratio ≥ {TARGET_BATCHED_RATIO}"),
            batched.ratio() >= TARGET_BATCHED_RATIO,
        ),
    );
    if let Some(pg) = &pg {
        rows.extend(pg.rows(&size));
    }
    Ok(rows)
}

/// The baseline's row for the workload's `i`th event, bare: the columns MindRune would store,
/// into the same table, with no parse, match or score.
fn insert_bare(
    conn: &rusqlite::Connection,
    owner: i64,
    i: usize,
    event: &mindrune_core::Event,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                           deaths, stuck, items_lost, source, call, output, event_id, recorded_at)
         VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, NULL, 0, 0, 0, 0, 'shell', ?7, ?8, NULL, ?3)",
    )?
    .execute(rusqlite::params![
        owner,
        (i % SCRIPTS) as i64 + 1,
        event.at.map_or(0, |at| at.unix_timestamp() * 1000),
        event.ok.unwrap_or(true),
        event.duration_ms.unwrap_or(0) as i64,
        BARE_XP,
        bare_call(event),
        event.output.as_deref(),
    ])?;
    Ok(())
}

/// Issue 25's budget: batched recording at least half as fast as bare batched inserts.
const TARGET_BATCHED_RATIO: f64 = 0.5;

struct Batched {
    /// Uses per second, MindRune in write groups.
    mindrune: f64,
    /// Rows per second, bare inserts in transactions of the same size.
    bare: f64,
}

impl Batched {
    fn ratio(&self) -> f64 {
        self.mindrune / self.bare
    }
}

/// The workload again, into a fresh library `BATCH` lines per write group, beside bare inserts
/// of the same rows `BATCH` per transaction into the baseline's table, a group of each in turn
/// (`workload::alternate_groups`).
fn batched(
    work: &crate::workload::Workload,
    conn: &rusqlite::Connection,
    baseline_owner: i64,
) -> anyhow::Result<Batched> {
    let store = setup_library(work.dir.path(), "batched.db")?;
    let recorder = Recorder::new(&store);
    let (mindrune, bare) =
        crate::workload::alternate_groups(work, &recorder, BATCH, |first, events| {
            let tx = conn.unchecked_transaction()?;
            for (offset, event) in events.iter().enumerate() {
                insert_bare(&tx, baseline_owner, first + offset, event)?;
            }
            tx.commit()?;
            Ok(())
        })?;
    anyhow::ensure!(
        store.use_count(
            store
                .owner_by_name("bench-owner")?
                .context("bench owner vanished")?
                .id
        )? == work.lines.len() as i64,
        "not every use was stored in write groups"
    );
    Ok(Batched { mindrune, bare })
}
