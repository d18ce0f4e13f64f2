//! `mindrune bench record` on PostgreSQL, when `--database` / MINDRUNE_DATABASE_URL names one:
//! the same event lines recorded by MindRune into a library in a scratch schema of that
//! database, beside bare PostgreSQL inserts of the same rows into the same `uses` table, one
//! transaction each, in alternating blocks (the SQLite measurement's method, `bench.rs`).
//!
//! The design budget (≥ 5,000 uses/s, p99 < 2 ms) is written for embedded SQLite; on PostgreSQL
//! every use is a few round trips to a server, so only the ratio to bare inserts is a target
//! here, and uses/s and p99 are reported as figures. The scratch schema is dropped at the end,
//! also when the benchmark fails.

use mindrune_store::SkillRecords as _;
use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use mindrune_engine::Recorder;
use mindrune_store::PgStore;
use serde_json::json;

use crate::measure::{Figures, micros};
use crate::report::{Row, number};
use crate::workload::{
    self, BARE_XP, BATCH, SCRIPTS, TARGET_P99, TARGET_RATIO, TARGET_USES_PER_SECOND, Workload,
    add_bench_agent,
};

/// What the PostgreSQL baseline is.
const BARE_NAME: &str = "bare PostgreSQL insert, one tx each";
/// What the batched figure's PostgreSQL baseline is.
const BARE_BATCHED_NAME: &str = "bare PostgreSQL multi-row insert, tx of 100";

/// `bench record` on PostgreSQL alone, at `uses` uses (for `mindrune bench`): its rows.
pub fn record(url: &str, uses: usize) -> anyhow::Result<Vec<Row>> {
    let work = workload::workload(uses)?;
    Ok(measure(url, &work)?.rows(&format!("{uses} uses, {SCRIPTS} scripts")))
}

/// The figures of one PostgreSQL run.
pub(crate) struct Measured {
    /// host:port/database, never the password.
    location: String,
    schema: String,
    /// The server's `synchronous_commit`, which bounds what a commit costs.
    synchronous_commit: String,
    mindrune: Figures,
    bare: Figures,
    /// Ratio of mean latency, MindRune / bare.
    ratio: f64,
    /// Uses per second in write groups of [`BATCH`], and rows per second bare, [`BATCH`] rows a
    /// transaction in one multi-row insert.
    batched: (f64, f64),
}

/// A scratch schema; dropping the guard drops the schema and everything in it, also when the
/// benchmark failed half-way.
pub(crate) struct Scratch {
    store: PgStore,
    schema: String,
}

impl Scratch {
    /// Takes over `store`, opened in `schema`: the schema is dropped with the guard.
    pub(crate) fn new(store: PgStore, schema: String) -> Scratch {
        Scratch { store, schema }
    }

    pub(crate) fn store(&self) -> &PgStore {
        &self.store
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(err) = self.store.drop_schema() {
            eprintln!(
                "mindrune bench: could not drop the scratch schema {} in PostgreSQL at {}: {err}\n\
                 hint: drop it by hand: DROP SCHEMA {} CASCADE",
                self.schema,
                self.store.location(),
                self.schema
            );
        }
    }
}

/// A schema name no other run uses: `bench_<what>_<pid>_<nanos>`.
pub(crate) fn scratch_name(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("bench_{what}_{}_{nanos}", std::process::id())
}

/// The URL of the library in `schema` of the same database (a schema the URL named is
/// replaced: the benchmark never writes into a real library).
pub(crate) fn in_schema(url: &str, schema: &str) -> String {
    let url = mindrune_store::split_schema(url).0;
    let join = if url.contains('?') { '&' } else { '?' };
    format!("{url}{join}schema={schema}")
}

/// One plain connection to the database with `schema` as its search path: the baseline's.
fn connect(url: &str, schema: &str) -> anyhow::Result<postgres::Client> {
    let mut config: postgres::Config = mindrune_store::split_schema(url)
        .0
        .parse()
        .context("the --database URL is not one PostgreSQL reads")?;
    let options = match config.get_options() {
        Some(options) => format!("{options} -c search_path={schema}"),
        None => format!("-c search_path={schema}"),
    };
    config.options(&options);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    config
        .connect(postgres::NoTls)
        .context("cannot connect the baseline's client to PostgreSQL")
}

/// Records the workload's lines into a library in a scratch schema of the database at `url`,
/// beside bare inserts of the same rows, and drops the schema.
pub(crate) fn measure(url: &str, work: &Workload) -> anyhow::Result<Measured> {
    let uses = work.lines.len();
    let schema = scratch_name("record");
    let store = PgStore::open(&in_schema(url, &schema))
        .context("cannot make a scratch library in PostgreSQL for `bench record`")?;
    // From here on the schema exists: the guard drops it however this function ends.
    let scratch = Scratch { store, schema };
    let store = &scratch.store;

    // MindRune: the library's own owner and agent, as on SQLite.
    let agent = workload::add_bench_agent(store, work.dir.path(), "bench-owner", "bench")?;
    let recorder = Recorder::new(store);

    // Baseline: an owner of its own in the same tables (so the two never see each other's
    // rows), its skill and one version per script inserted first, then the same uses, bare.
    let baseline = add_bench_agent(store, work.dir.path(), "bench-baseline", "bench-baseline")?;
    let mut client = connect(url, &scratch.schema)?;
    let synchronous_commit: String = client.query_one("SHOW synchronous_commit", &[])?.get(0);
    let skill: i64 = client
        .query_one(
            "INSERT INTO skills (owner_id, agent_id, agent_name, name, path, created_at)
             VALUES ($1, $2, 'bench-baseline', 'x', 'bots/bench-baseline/x.ts', 0) RETURNING skill_id",
            &[&baseline.owner.0, &baseline.id.0],
        )?
        .get(0);
    let mut versions = Vec::with_capacity(SCRIPTS);
    for i in 0..SCRIPTS {
        let version: i64 = client
            .query_one(
                "INSERT INTO versions (owner_id, skill_id, number, digest, code, created_at)
                 VALUES ($1, $2, $3, $4, '', 0) RETURNING version_id",
                &[&baseline.owner.0, &skill, &(i as i64 + 1), &format!("d{i}")],
            )?
            .get(0);
        versions.push(version);
    }
    let insert = client.prepare(
        "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                           deaths, stuck, items_lost, source, call, output, event_id, recorded_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, 0, 0, FALSE, 0, 'shell', $8, $9, NULL, $4)",
    )?;

    let (mindrune, bare) = workload::alternate(
        uses,
        |i| {
            let recorded = recorder.record_line(&work.lines[i])?;
            anyhow::ensure!(
                recorded.runs.len() == 1,
                "the benchmark event did not record one run on PostgreSQL: {recorded:?}"
            );
            Ok(())
        },
        |i| {
            let event = &work.events[i];
            let mut tx = client.transaction()?;
            tx.execute(
                &insert,
                &[
                    &baseline.owner.0,
                    &versions[i % SCRIPTS],
                    &baseline.id.0,
                    &event.at.map_or(0, |at| at.unix_timestamp() * 1000),
                    &event.ok.unwrap_or(true),
                    &(event.duration_ms.unwrap_or(0) as i64),
                    &BARE_XP,
                    &workload::bare_call(event),
                    &event.output.as_deref(),
                ],
            )?;
            tx.commit()?;
            Ok(())
        },
    )?;
    anyhow::ensure!(
        store.use_count(agent.owner)? == uses as i64,
        "not every use was stored in PostgreSQL"
    );
    let batched = batched(
        url,
        work,
        &mut client,
        baseline.owner.0,
        baseline.id.0,
        &versions,
    )?;
    drop(client);
    Ok(Measured {
        location: store.location().to_string(),
        schema: scratch.schema.clone(),
        synchronous_commit,
        ratio: mindrune.mean.as_secs_f64() / bare.mean.as_secs_f64(),
        mindrune,
        bare,
        batched,
    })
}

/// The workload again, [`BATCH`] lines per write group (`Recorder::record_lines_together`) into
/// a library of its own in a second scratch schema, beside the same rows inserted bare [`BATCH`]
/// a transaction as one multi-row insert into the baseline's table (a group of each in turn, as
/// on SQLite). Returns uses/s and rows/s.
fn batched(
    url: &str,
    work: &Workload,
    client: &mut postgres::Client,
    owner: i64,
    agent: i64,
    versions: &[i64],
) -> anyhow::Result<(f64, f64)> {
    let schema = scratch_name("record_batched");
    let store = PgStore::open(&in_schema(url, &schema))
        .context("cannot make a scratch library in PostgreSQL for `bench record`'s write groups")?;
    let scratch = Scratch::new(store, schema);
    let store = scratch.store();
    let mine = workload::add_bench_agent(store, work.dir.path(), "bench-owner", "bench")?;
    let recorder = Recorder::new(store);
    let insert = client.prepare(
        "INSERT INTO uses (owner_id, version_id, agent_id, at, ok, duration_ms, xp, items, goal_progress,
                           deaths, stuck, items_lost, source, call, output, event_id, recorded_at)
         SELECT $1, version_id, $2, at, ok, duration_ms, $3, NULL, 0, 0, FALSE, 0, 'shell', call, output,
                NULL, at
         FROM unnest($4::bigint[], $5::bigint[], $6::boolean[], $7::bigint[], $8::text[], $9::text[])
              AS u(version_id, at, ok, duration_ms, call, output)",
    )?;
    let rates = workload::alternate_groups(work, &recorder, BATCH, |first, events| {
        let version_ids: Vec<i64> = (first..first + events.len())
            .map(|i| versions[i % SCRIPTS])
            .collect();
        let ats: Vec<i64> = events
            .iter()
            .map(|e| e.at.map_or(0, |at| at.unix_timestamp() * 1000))
            .collect();
        let oks: Vec<bool> = events.iter().map(|e| e.ok.unwrap_or(true)).collect();
        let durations: Vec<i64> = events
            .iter()
            .map(|e| e.duration_ms.unwrap_or(0) as i64)
            .collect();
        let calls: Vec<&str> = events.iter().map(workload::bare_call).collect();
        let outputs: Vec<Option<&str>> = events.iter().map(|e| e.output.as_deref()).collect();
        let mut tx = client.transaction()?;
        tx.execute(
            &insert,
            &[
                &owner,
                &agent,
                &BARE_XP,
                &version_ids,
                &ats,
                &oks,
                &durations,
                &calls,
                &outputs,
            ],
        )?;
        tx.commit()?;
        Ok(())
    })?;
    anyhow::ensure!(
        store.use_count(mine.owner)? == work.lines.len() as i64,
        "not every use was stored in write groups on PostgreSQL"
    );
    Ok(rates)
}

impl Measured {
    fn pass(&self) -> bool {
        self.ratio <= TARGET_RATIO
    }

    /// The `postgresql` object of `bench record --json`.
    pub(crate) fn json(&self) -> serde_json::Value {
        json!({
            "database": self.location,
            "schema": self.schema,
            "synchronous_commit": self.synchronous_commit,
            "mindrune": workload::figures_json(&self.mindrune),
            "baseline_bare_postgresql": workload::figures_json(&self.bare),
            "ratio": self.ratio,
            "batched": {
                "uses_per_group": BATCH,
                "mindrune_uses_per_second": self.batched.0,
                "baseline_bare_postgresql_rows_per_second": self.batched.1,
                "ratio": self.batched.0 / self.batched.1,
            },
            "targets": [{"figure": "ratio", "target": format!("≤ {TARGET_RATIO}×"), "pass": self.pass()}],
        })
    }

    /// The PostgreSQL part of `bench record`'s text, then both backends side by side.
    pub(crate) fn write_text(
        &self,
        out: &mut impl Write,
        uses: usize,
        [sqlite, sqlite_bare]: [&Figures; 2],
        sqlite_ratio: f64,
    ) -> std::io::Result<()> {
        writeln!(
            out,
            "\nthe same {uses} uses on PostgreSQL at {} (synchronous_commit={}; scratch schema {}, \
             dropped after the run)\n",
            self.location, self.synchronous_commit, self.schema
        )?;
        workload::write_figures(
            out,
            [
                (
                    "MindRune (parse, classify, match, insert, rescore)",
                    &self.mindrune,
                ),
                (BARE_NAME, &self.bare),
            ],
            self.ratio,
        )?;
        writeln!(
            out,
            "  {:<7} target {:<10} {}",
            "ratio",
            format!("≤ {TARGET_RATIO}×"),
            if self.pass() { "pass" } else { "FAIL" }
        )?;
        writeln!(
            out,
            "  {:<7} {} uses/s in write groups of {BATCH}, {} rows/s {BARE_BATCHED_NAME}: {:.2} (no target)",
            "groups",
            number(self.batched.0),
            number(self.batched.1),
            self.batched.0 / self.batched.1
        )?;
        writeln!(
            out,
            "  uses/s and p99 are figures only: the budget (≥ {TARGET_USES_PER_SECOND:.0} uses/s, \
             p99 < {}) is SQLite's\n",
            micros(TARGET_P99)
        )?;
        let line = |out: &mut dyn Write, name: &str, sqlite: String, pg: String| {
            writeln!(out, "{name:<42}{sqlite:>10}{pg:>12}")
        };
        line(out, "side by side", "SQLite".into(), "PostgreSQL".into())?;
        for (who, sqlite, pg) in [
            ("MindRune", sqlite, &self.mindrune),
            ("bare insert", sqlite_bare, &self.bare),
        ] {
            line(
                out,
                &format!("{who} uses/s"),
                number(sqlite.per_second),
                number(pg.per_second),
            )?;
            line(
                out,
                &format!("{who} p50"),
                micros(sqlite.p50),
                micros(pg.p50),
            )?;
            line(
                out,
                &format!("{who} p99"),
                micros(sqlite.p99),
                micros(pg.p99),
            )?;
        }
        line(
            out,
            "ratio of mean latency (MindRune / bare)",
            format!("{sqlite_ratio:.2}×"),
            format!("{:.2}×", self.ratio),
        )
    }

    /// `bench record`'s PostgreSQL rows: uses/s and p99 for the record, the ratio against its
    /// target.
    pub(crate) fn rows(&self, size: &str) -> Vec<Row> {
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        vec![
            Row::new("record", "uses recorded per second (PostgreSQL)", size)
                .figure(self.mindrune.per_second, "uses/s")
                .baseline(BARE_NAME, self.bare.per_second, "uses/s"),
            Row::new("record", "p99 latency of one use (PostgreSQL)", size)
                .figure(us(self.mindrune.p99), "µs")
                .baseline(BARE_NAME, us(self.bare.p99), "µs"),
            Row::new("record", "mean latency of one use (PostgreSQL)", size)
                .figure(us(self.mindrune.mean), "µs")
                .baseline(BARE_NAME, us(self.bare.mean), "µs")
                .target(format!("ratio ≤ {TARGET_RATIO}×"), self.pass()),
            Row::new("record", "in write groups of 100 (PostgreSQL)", size)
                .figure(self.batched.0, "uses/s")
                .baseline(BARE_BATCHED_NAME, self.batched.1, "rows/s"),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_schema_replaces_any_schema_the_url_names() {
        assert_eq!(
            in_schema("postgres://u@h:5432/db", "bench_record_1_2"),
            "postgres://u@h:5432/db?schema=bench_record_1_2"
        );
        assert_eq!(
            in_schema(
                "postgres://u@h/db?schema=lib&sslmode=disable",
                "bench_record_1_2"
            ),
            "postgres://u@h/db?sslmode=disable&schema=bench_record_1_2"
        );
        assert_eq!(
            mindrune_store::split_schema("postgres://u@h/db?schema=lib").0,
            "postgres://u@h/db"
        );
    }

    #[test]
    fn a_scratch_name_is_a_schema_name() {
        let name = scratch_name("record");
        assert!(
            name.starts_with("bench_record_") && name.len() <= 63,
            "{name}"
        );
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        );
    }
}
