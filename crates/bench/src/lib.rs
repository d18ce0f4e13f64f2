//! MindRune's benchmarks (`mindrune bench`): figures, each beside a baseline measured in the
//! same run.
//!
//! Speed targets live here, never in timed unit tests: a benchmark prints what it measured and
//! says whether the target held, and a person (or CI log reader) judges. The `mindrune` binary
//! parses the arguments and calls these functions; the benchmarks that spawn a process
//! (`serve`, `memory`, `guard`) spawn the running binary, so they run only inside `mindrune`.

use std::process::ExitCode;
use std::time::Instant;

mod faces;
mod guard;
mod measure;
mod mirror;
mod pg;
mod record;
mod report;
mod runner_load;
mod scale;
mod scan;
mod serve;
mod tags;
mod workload;

pub use faces::{lab, search};
pub use guard::guard;
pub use mirror::mirror;
pub use pg::record as record_postgres;
pub use record::record;
pub use report::{Print, Row, Verdict, print_rows};
pub use scale::{FOUR_SERVERS_BEFORE, Shape as ScaleShape, scale};
pub use scan::{near_repeat, secrets};
pub use serve::{memory, serve};
pub use tags::tags;

use report::{did_not_run, stamp_rss};

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
            Box::new(|| scan::secrets(ALL_SECRETS_MEGABYTES, Print::Quiet)),
        ),
        (
            "near-repeat",
            Box::new(|| scan::near_repeat(ALL_SNIPPETS, Print::Quiet)),
        ),
        (
            "serve",
            Box::new(move || {
                serve::serve(
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
                    Ok(pg::record(url, ALL_RECORD_USES).unwrap_or_else(|err| {
                        vec![did_not_run("record", "did not run (PostgreSQL)", &err)]
                    }))
                }),
            ),
        );
    }
    if !skip_memory {
        groups.push((
            "memory",
            Box::new(|| serve::memory(ALL_MEMORY_USES, Print::Quiet)),
        ));
    }
    groups.push((
        "search",
        Box::new(|| faces::search(ALL_SEARCH_SKILLS, Print::Quiet)),
    ));
    groups.push((
        "lab",
        Box::new(|| faces::lab(ALL_LAB_FILES, ALL_LAB_MEBIBYTES, Print::Quiet)),
    ));
    groups.push((
        "guard",
        Box::new(|| guard::guard(ALL_GUARD_CALLS, Print::Quiet)),
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
