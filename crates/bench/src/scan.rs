//! `mindrune bench secrets` and `mindrune bench near-repeat`: the secret scrubber over
//! generated scripts and run output, and the wrap-up's near-repeat lookup, each beside a
//! baseline measured in the same run.

use std::io::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use aho_corasick::AhoCorasick;
use anyhow::Context as _;
use mindrune_core::Scrubber;
use mindrune_core::near_repeat_shape;
use mindrune_store::{NewSnippetUse, Outcome, Recording as _};
use serde_json::json;

use crate::measure::{Dice, median, time_it};
use crate::report::{Print, Row};
use crate::workload::{script_source, setup_library};

/// The target for secret scanning.
const TARGET_SECRETS_MB_PER_SECOND: f64 = 100.0;
/// How far the rate on the small input may stray from the large one and still be linear.
const LINEAR_WITHIN: f64 = 0.25;
/// Timed rounds (after one to warm up); every figure is the median round.
const ROUNDS: usize = 7;
/// The bot's password and the owner's key: the scrubber's known secrets.
const BOT_PASSWORD: &str = "benchpass123";
const OWNER_KEY: &str = "mrk_benchkey_0123456789abcdef0123456789abcdef";

/// Secrets as they slip into scripts and logs, planted now and then.
const PLANTED: &[&str] = &[
    "const password = \"hunter22x\";",
    "PASSWORD=benchpass123",
    "login failed for bench with benchpass123",
    "  token: 'ghp_Zx8qR2mN4vB6cD1eF3gH5iJ7kL9mN0pQ2rS4'",
    "AWS_ACCESS_KEY_ID=AKIAQ3EGRU7TLMZ4XW2P",
    "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlMTIzNDU2'",
    "fetch('https://bench:s3cretPw9@api.example.org/v1')",
];

/// Generated documents as the scrubber meets them: rs-sdk scripts and their run output, each a
/// few KB, at least `bytes` in all, with a secret planted in about one in fifty. Answers the
/// documents one after another, each one's byte range in that text, and how many secrets were
/// planted.
fn documents(bytes: usize) -> (String, Vec<Range<usize>>, usize) {
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    let mut text = String::with_capacity(bytes + bytes / 10);
    let mut docs = Vec::new();
    let mut planted = 0;
    while text.len() < bytes {
        let n = dice.below(100_000);
        let mut doc = if dice.below(2) == 0 {
            // A script, edited a little.
            let mut code = script_source(n);
            for _ in 0..dice.below(4) {
                code.push_str(&format!(
                    "  // step {n}: walk to ({}, {}) then open the {} and check the result\n  const r{n} = await bot.walkTo({}, {});\n  if (!r{n}.success) console.log('walk failed', r{n}.message);\n",
                    3_000 + n % 400,
                    3_100 + n % 300,
                    ["bank", "door", "gate", "chest"][n % 4],
                    3_000 + n % 400,
                    3_100 + n % 300,
                ));
            }
            code
        } else {
            // Run output: the script's log and rs-sdk's summary.
            let mut out = String::new();
            for t in 0..(5 + dice.below(40)) {
                out.push_str(&format!(
                    "[{:02}:{:02}:{:02}] chopping tree {t} at ({}, {}) — inventory {}/28, run energy {}%\n",
                    n % 24,
                    t % 60,
                    (n + t) % 60,
                    3_200 + t,
                    3_240 - t % 17,
                    t % 28,
                    100 - t % 100
                ));
            }
            out.push_str(&format!(
                "── Result ──\n{{ ok: true, logs: {} }}\n── State ──\nPos (3208, 3220) lvl 0 | HP 10/10\nXP: Woodcutting +{}\nInv 5/28: Bronze axe, Logs x4\n",
                n % 28,
                n % 900
            ));
            out
        };
        if dice.below(50) == 0 {
            let secret: &&str = dice.pick(PLANTED);
            doc.push_str(secret);
            doc.push('\n');
            planted += 1;
        }
        let start = text.len();
        text.push_str(&doc);
        docs.push(start..text.len());
    }
    (text, docs, planted)
}

/// One generated input, built before anything is timed.
struct Input {
    /// The documents one after another.
    text: String,
    /// Each document's byte range in `text`; the scrub rows scrub them one call each.
    docs: Vec<Range<usize>>,
    /// `text` scrubbed, which the linear row scrubs again in one call. Scrubbed text holds
    /// nothing to redact, so no output is allocated and the rate is the scrubber's own: a fresh
    /// 50 MB output costs some 12,000 page faults that a 5 MB one, reused from the heap, does
    /// not (a fifth of the time on the reference machine), which alone would bias the ratio.
    clean: String,
    planted: usize,
}

impl Input {
    fn new(scrubber: &Scrubber, megabytes: usize) -> Input {
        let (text, docs, planted) = documents(megabytes * 1_000_000);
        Input {
            clean: scrubber.scrub(&text).text.into_owned(),
            text,
            docs,
            planted,
        }
    }

    fn docs(&self) -> Vec<&str> {
        self.docs
            .iter()
            .map(|doc| &self.text[doc.clone()])
            .collect()
    }
}

/// What one round measured on one input.
#[derive(Default)]
struct Sample {
    /// Bytes of documents the scrubber and each baseline went through.
    doc_bytes: usize,
    scrub: Duration,
    plain: Duration,
    newlines: Duration,
    findings: usize,
    matches: usize,
    /// Bytes of scrubbed text scrubbed again in one call each.
    clean_bytes: usize,
    clean: Duration,
}

impl Sample {
    /// The scrubber, then each baseline, over `docs`.
    fn docs(&mut self, scrubber: &Scrubber, plain: &AhoCorasick, docs: &[&str]) {
        let began = Instant::now();
        for doc in docs {
            self.findings += scrubber.scrub(doc).findings.len();
        }
        self.scrub += began.elapsed();
        let began = Instant::now();
        for doc in docs {
            self.matches += plain.find_iter(doc).count();
        }
        self.plain += began.elapsed();
        let began = Instant::now();
        let newlines: usize = docs
            .iter()
            .map(|doc| doc.bytes().filter(|&b| b == b'\n').count())
            .sum();
        self.newlines += began.elapsed();
        std::hint::black_box(newlines);
        self.doc_bytes += docs.iter().map(|doc| doc.len()).sum::<usize>();
    }

    /// The scrubber over an input's scrubbed text, in one call.
    fn clean(&mut self, scrubber: &Scrubber, input: &Input) -> anyhow::Result<()> {
        let began = Instant::now();
        let findings = scrubber.scrub(&input.clean).findings.len();
        self.clean += began.elapsed();
        anyhow::ensure!(
            findings == 0,
            "the scrubber found {findings} secrets in text it had scrubbed"
        );
        self.clean_bytes += input.clean.len();
        Ok(())
    }

    fn rate(bytes: usize, took: Duration) -> f64 {
        bytes as f64 / 1e6 / took.as_secs_f64()
    }
}

/// One round: `passes` passes over the small input's documents interleaved with as many blocks
/// of the large one's (one pass over it in all), so that both sizes run in the same few
/// milliseconds of the machine's weather; then `passes` scrubs of the small scrubbed text
/// around one of the large. Checks that every pass finds every planted secret.
fn round(
    scrubber: &Scrubber,
    plain: &AhoCorasick,
    (small, large): (&Input, &Input),
    passes: usize,
    small_first: bool,
) -> anyhow::Result<(Sample, Sample)> {
    let (small_docs, large_docs) = (small.docs(), large.docs());
    let mut blocks = large_docs.chunks(large_docs.len().div_ceil(passes));
    let (mut s, mut l) = (Sample::default(), Sample::default());
    for pass in 0..passes {
        let block = blocks.next().unwrap_or_default();
        if (pass % 2 == 0) == small_first {
            s.docs(scrubber, plain, &small_docs);
            l.docs(scrubber, plain, block);
        } else {
            l.docs(scrubber, plain, block);
            s.docs(scrubber, plain, &small_docs);
        }
    }
    for pass in 0..passes {
        if pass == passes / 2 {
            l.clean(scrubber, large)?;
        }
        s.clean(scrubber, small)?;
    }
    for (sample, input, passes) in [(&s, small, passes), (&l, large, 1)] {
        anyhow::ensure!(
            sample.findings >= input.planted * passes,
            "the scrubber found {} secrets where {} were planted",
            sample.findings,
            input.planted * passes
        );
    }
    Ok((s, l))
}

fn median_of(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Scan {
    bytes: usize,
    planted: usize,
    /// In one pass.
    findings: usize,
    mb_per_second: f64,
    /// The scrubber's slowest and fastest round.
    mb_per_second_range: (f64, f64),
    baseline_mb_per_second: f64,
    /// In one pass.
    baseline_matches: usize,
    newline_mb_per_second: f64,
    /// The scrubbed input scrubbed again in one call.
    clean_mb_per_second: f64,
}

impl Scan {
    /// The median round of each contender.
    fn new(input: &Input, samples: &[Sample], passes: usize) -> Scan {
        let rates = |took: fn(&Sample) -> Duration, bytes: fn(&Sample) -> usize| {
            samples
                .iter()
                .map(|s| Sample::rate(bytes(s), took(s)))
                .collect::<Vec<f64>>()
        };
        let scrub = rates(|s| s.scrub, |s| s.doc_bytes);
        let range = scrub.iter().fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
        let last = samples.last();
        Scan {
            bytes: input.text.len(),
            planted: input.planted,
            findings: last.map_or(0, |s| s.findings / passes),
            mb_per_second: median_of(scrub),
            mb_per_second_range: range,
            baseline_mb_per_second: median_of(rates(|s| s.plain, |s| s.doc_bytes)),
            baseline_matches: last.map_or(0, |s| s.matches / passes),
            newline_mb_per_second: median_of(rates(|s| s.newlines, |s| s.doc_bytes)),
            clean_mb_per_second: median_of(rates(|s| s.clean, |s| s.clean_bytes)),
        }
    }
}

/// `mindrune bench secrets`: the scrubber over `megabytes` MB of generated scripts and run
/// output, and over a tenth of it to show the rate is flat (linear in input size).
///
/// Both inputs are generated first; then one round warms up (the lazily built automata and
/// patterns, first-touch page faults, the CPU's clock) and is dropped, and `ROUNDS` more are
/// timed. In each round the small input is passed over as many times as it fits into the large
/// one, interleaved with the large one's blocks, so both sizes are timed over the same duration
/// and the same moments; each figure is the median round.
///
/// The linear row is the median round's ratio of the two sizes scrubbed in one call each (see
/// `Input::clean`), so that work that grows faster than the text (a rescan of everything
/// before each hit, say) shows as a lower rate on the large one. The documents are a few KB
/// each at both sizes, so the ratio of their rates could not show it; it is in the detail.
pub fn secrets(megabytes: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(megabytes >= 1, "--megabytes must be at least 1");
    let scrubber = Scrubber::new(&[BOT_PASSWORD, OWNER_KEY]);
    let plain = AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(mindrune_core::trigger_literals())?;
    let small_mb = (megabytes / 10).max(1);
    let passes = megabytes.div_ceil(small_mb);
    let small = Input::new(&scrubber, small_mb);
    let large = Input::new(&scrubber, megabytes);
    round(&scrubber, &plain, (&small, &large), passes, true)?;
    let (mut small_samples, mut large_samples) = (Vec::new(), Vec::new());
    for r in 0..ROUNDS {
        let (s, l) = round(&scrubber, &plain, (&small, &large), passes, r % 2 == 1)?;
        small_samples.push(s);
        large_samples.push(l);
    }
    let ratio = |took: fn(&Sample) -> Duration, bytes: fn(&Sample) -> usize| {
        median_of(
            small_samples
                .iter()
                .zip(&large_samples)
                .map(|(s, l)| Sample::rate(bytes(s), took(s)) / Sample::rate(bytes(l), took(l)))
                .collect(),
        )
    };
    let small_over_large = ratio(|s| s.clean, |s| s.clean_bytes);
    let documents_small_over_large = ratio(|s| s.scrub, |s| s.doc_bytes);
    let small = Scan::new(&small, &small_samples, passes);
    let large = Scan::new(&large, &large_samples, 1);
    let linear = (small_over_large - 1.0).abs() <= LINEAR_WITHIN;
    let baseline = "plain aho-corasick, same trigger literals";
    let row = |scan: &Scan| {
        Row::new(
            "secrets",
            "scrub scripts and run output",
            format!(
                "{:.0} MB, {} secrets planted",
                scan.bytes as f64 / 1e6,
                scan.planted
            ),
        )
        .figure(scan.mb_per_second, "MB/s")
        .baseline(baseline, scan.baseline_mb_per_second, "MB/s")
        .target(
            format!("≥ {TARGET_SECRETS_MB_PER_SECOND:.0} MB/s"),
            scan.mb_per_second >= TARGET_SECRETS_MB_PER_SECOND,
        )
    };
    let rows = vec![
        row(&large),
        row(&small),
        Row::new(
            "secrets",
            "linear: small rate / large rate",
            format!("{small_mb} MB vs {megabytes} MB"),
        )
        .figure(small_over_large, "×")
        .target(format!("1 ± {:.0} %", LINEAR_WITHIN * 100.0), linear),
    ];
    let mut out = std::io::stdout().lock();
    let scan_json = |scan: &Scan, passes: usize| {
        json!({
            "bytes": scan.bytes,
            "planted": scan.planted,
            "findings": scan.findings,
            "passes_per_round": passes,
            "mb_per_second": scan.mb_per_second,
            "mb_per_second_slowest_round": scan.mb_per_second_range.0,
            "mb_per_second_fastest_round": scan.mb_per_second_range.1,
            "scrubbed_text_in_one_call_mb_per_second": scan.clean_mb_per_second,
            "baseline_plain_aho_corasick_mb_per_second": scan.baseline_mb_per_second,
            "baseline_matches": scan.baseline_matches,
            "baseline_count_newlines_mb_per_second": scan.newline_mb_per_second,
        })
    };
    match print {
        Print::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json!({
                    "benchmark": "secrets",
                    "rounds": ROUNDS,
                    "large": scan_json(&large, 1),
                    "small": scan_json(&small, passes),
                    "small_over_large": small_over_large,
                    "documents_small_over_large": documents_small_over_large,
                    "rows": rows,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(
                out,
                "mindrune bench secrets: the scrubber over generated rs-sdk scripts and run output\n\
                 (median of {ROUNDS} rounds after one to warm up; {passes} passes over the small input a round)\n"
            )?;
            for scan in [&large, &small] {
                writeln!(
                    out,
                    "{:.0} MB ({} secrets planted, {} findings): scrubber {:.0} MB/s (rounds {:.0}–{:.0}), its output again in one call {:.0} MB/s; plain aho-corasick {:.0} MB/s ({} matches); counting newlines {:.0} MB/s",
                    scan.bytes as f64 / 1e6,
                    scan.planted,
                    scan.findings,
                    scan.mb_per_second,
                    scan.mb_per_second_range.0,
                    scan.mb_per_second_range.1,
                    scan.clean_mb_per_second,
                    scan.baseline_mb_per_second,
                    scan.baseline_matches,
                    scan.newline_mb_per_second
                )?;
            }
            writeln!(
                out,
                "small rate / large rate: {small_over_large:.2} in one call (the linear row), {documents_small_over_large:.2} document by document\n"
            )?;
            drop(out);
            crate::report::print_rows(&rows, false)?;
        }
        Print::Quiet => {}
    }
    Ok(rows)
}

/// Days of snippet history the wrap-up looks at.
const DAYS: i64 = 7;
/// Timed lookups; the median is reported.
const LOOKUPS: usize = 9;

/// An inline snippet as an agent types it again and again: one of a few dozen shapes, with
/// numbers and strings that vary.
fn snippet(dice: &mut Dice) -> String {
    let (x, y, n) = (
        3_000 + dice.below(400),
        3_100 + dice.below(300),
        dice.below(28),
    );
    let item = *dice.pick(&["Logs", "Oak logs", "Raw shrimps", "Copper ore", "Bones"]);
    match dice.below(8) {
        0 => format!(
            "await bot.walkTo({x}, {y});\nconst tree = sdk.findNearbyLoc(/^Tree$/);\nif (tree) await bot.chopTree(tree);"
        ),
        1 => format!(
            "await bot.openBank();\nawait bot.depositItem(/{item}/, -1);\nawait bot.closeBank();"
        ),
        2 => format!(
            "const npc = sdk.findNearbyNpc(/Cow/);\nif (npc) {{ await bot.attackNpc(npc); console.log('attacking', {n}); }}"
        ),
        3 => format!(
            "for (let i = 0; i < {n}; i++) {{\n  const rock = sdk.findNearbyLoc(/Copper rocks/);\n  if (!rock) break;\n  await bot.mineRock(rock);\n}}"
        ),
        4 => {
            format!("console.log(sdk.getInventory().filter(i => i.name === '{item}').length, {n});")
        }
        5 => format!("await bot.walkTo({x}, {y});\nawait bot.pickupItem(/{item}/);"),
        6 => format!(
            "const spot = sdk.findNearbyNpc(/Fishing spot/);\nawait bot.walkTo({x}, {y});\nif (spot) await bot.fish(spot, 'Net');"
        ),
        _ => format!(
            "await bot.dropItem(/{item}/);\nawait bot.walkTo({x}, {y});\nconsole.log('dropped {item}', {n});"
        ),
    }
}

/// `mindrune bench near-repeat`: the wrap-up's lookup of inline code run again and again
/// (`engine::snippets::advice`) for an agent with `snippets` snippets over 7 days, beside
/// tokenizing the same snippets only.
pub fn near_repeat(snippets: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(snippets >= 1, "--snippets must be at least 1");
    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;
    let store = setup_library(dir.path(), "snippets.db")?;
    let agent = store
        .agent_by_name("bench")?
        .context("the bench agent vanished")?;
    let now: i64 = 1_790_000_000_000;
    let window = DAYS * 24 * 3_600_000;
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let mut codes = std::collections::BTreeSet::new();
    let mut runs = 0;
    while codes.len() < snippets {
        let code = snippet(&mut dice);
        // A snippet is run once to three times, at any time in the window.
        for _ in 0..=dice.below(3) {
            store.record_snippet_use(
                agent.owner,
                &NewSnippetUse {
                    agent: agent.id,
                    digest: mindrune_core::snippet_digest(&code),
                    code: code.clone(),
                    outcome: Outcome {
                        at: now - 1 - (dice.next() % window as u64) as i64,
                        ok: dice.below(10) != 0,
                        duration_ms: 2_000,
                        ..Outcome::default()
                    },
                    output: None,
                    event_id: None,
                },
            )?;
            runs += 1;
        }
        codes.insert(code);
    }
    let codes: Vec<String> = codes.into_iter().collect();
    let (first, suggested) = time_it(|| Ok(mindrune_engine::snippet_advice(&store, &agent, now)?))?;
    let (mut lookups, mut tokenizing) = (Vec::new(), Vec::new());
    for _ in 0..LOOKUPS {
        lookups.push(time_it(|| Ok(mindrune_engine::snippet_advice(&store, &agent, now)?))?.0);
        tokenizing.push(
            time_it(|| {
                Ok(codes
                    .iter()
                    .filter_map(|code| near_repeat_shape(code))
                    .count())
            })?
            .0,
        );
    }
    let (lookup, baseline) = (median(lookups), median(tokenizing));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let size = format!("{snippets} snippets, {runs} runs over {DAYS} days");
    let rows = vec![
        Row::new("near-repeat", "wrap-up lookup", &size)
            .figure(ms(lookup), "ms")
            .baseline("tokenize the same snippets only", ms(baseline), "ms"),
    ];
    let mut out = std::io::stdout().lock();
    match print {
        Print::Json => {
            serde_json::to_writer_pretty(
                &mut out,
                &json!({
                    "benchmark": "near-repeat",
                    "snippets": snippets,
                    "runs": runs,
                    "suggestions": suggested.len(),
                    "first_lookup_ms": ms(first),
                    "lookup_ms": ms(lookup),
                    "baseline_tokenize_ms": ms(baseline),
                    "rows": rows,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(
                out,
                "mindrune bench near-repeat: {size}; {} suggestions; first lookup {:.1} ms, then median of {LOOKUPS}\n",
                suggested.len(),
                ms(first)
            )?;
            drop(out);
            crate::report::print_rows(&rows, false)?;
        }
        Print::Quiet => {}
    }
    Ok(rows)
}
