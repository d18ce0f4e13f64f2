//! `mindrune bench secrets` and `mindrune bench near-repeat`: the secret scrubber over
//! generated scripts and run output, and the wrap-up's near-repeat lookup, each beside a
//! baseline measured in the same run.

use std::io::Write as _;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use mindrune_core::near_repeat;
use mindrune_core::secrets::Scrubber;
use mindrune_store::{NewSnippetUse, Outcome, Store as _};
use serde_json::json;

use crate::bench::{Dice, Print, Row, median, script_source, setup_library, time_it};

/// The target for secret scanning.
const TARGET_SECRETS_MB_PER_SECOND: f64 = 100.0;
/// How far the rate on the small input may stray from the large one and still be linear.
const LINEAR_WITHIN: f64 = 0.25;
/// Alternating blocks of the scrubber and the baseline.
const SCAN_BLOCKS: usize = 10;
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
/// documents and how many secrets were planted.
pub(crate) fn documents(bytes: usize) -> (Vec<String>, usize) {
    let mut dice = Dice(0x2545_f491_4f6c_dd1d);
    let mut docs = Vec::new();
    let (mut total, mut planted) = (0, 0);
    while total < bytes {
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
        total += doc.len();
        docs.push(doc);
    }
    (docs, planted)
}

struct Scan {
    bytes: usize,
    planted: usize,
    findings: usize,
    mb_per_second: f64,
    baseline_mb_per_second: f64,
    baseline_matches: usize,
    newline_mb_per_second: f64,
}

/// Scrubs `megabytes` of documents beside the baselines, in alternating blocks.
fn scan(scrubber: &Scrubber, megabytes: usize) -> anyhow::Result<Scan> {
    let (docs, planted) = documents(megabytes * 1_000_000);
    let bytes: usize = docs.iter().map(String::len).sum();
    let plain = aho_corasick::AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(mindrune_core::secrets::trigger_literals())?;
    let (mut took, mut plain_took, mut newline_took) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut findings, mut matches, mut newlines) = (0usize, 0usize, 0usize);
    for block in docs.chunks(docs.len().div_ceil(SCAN_BLOCKS)) {
        let began = Instant::now();
        for doc in block {
            findings += scrubber.scrub(doc).findings.len();
        }
        took += began.elapsed();
        let began = Instant::now();
        for doc in block {
            matches += plain.find_iter(doc).count();
        }
        plain_took += began.elapsed();
        let began = Instant::now();
        for doc in block {
            newlines += doc.bytes().filter(|&b| b == b'\n').count();
        }
        newline_took += began.elapsed();
    }
    std::hint::black_box(newlines);
    anyhow::ensure!(
        findings >= planted,
        "the scrubber found {findings} secrets where {planted} were planted"
    );
    let rate = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    Ok(Scan {
        bytes,
        planted,
        findings,
        mb_per_second: rate(took),
        baseline_mb_per_second: rate(plain_took),
        baseline_matches: matches,
        newline_mb_per_second: rate(newline_took),
    })
}

/// `mindrune bench secrets`: the scrubber over `megabytes` MB of generated scripts and run
/// output, and over a tenth of it to show the rate is flat (linear in input size).
pub fn secrets(megabytes: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    anyhow::ensure!(megabytes >= 1, "--megabytes must be at least 1");
    let scrubber = Scrubber::new(&[BOT_PASSWORD, OWNER_KEY]);
    let small_mb = (megabytes / 10).max(1);
    // Warm up: the scrubber's lazily built automata and patterns are built once per process,
    // not per megabyte.
    for planted in PLANTED {
        std::hint::black_box(scrubber.scrub(planted));
    }
    // The small input first, so the large one does not leave it a warm cache it would not have.
    let small = scan(&scrubber, small_mb)?;
    let large = scan(&scrubber, megabytes)?;
    let spread = small.mb_per_second / large.mb_per_second - 1.0;
    let linear = spread.abs() <= LINEAR_WITHIN;
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
        .figure(small.mb_per_second / large.mb_per_second, "×")
        .target(format!("1 ± {:.0} %", LINEAR_WITHIN * 100.0), linear),
    ];
    let mut out = std::io::stdout().lock();
    let scan_json = |scan: &Scan| {
        json!({
            "bytes": scan.bytes,
            "planted": scan.planted,
            "findings": scan.findings,
            "mb_per_second": scan.mb_per_second,
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
                    "large": scan_json(&large),
                    "small": scan_json(&small),
                    "small_over_large": small.mb_per_second / large.mb_per_second,
                    "rows": rows,
                }),
            )?;
            writeln!(out)?;
        }
        Print::Text => {
            writeln!(
                out,
                "mindrune bench secrets: the scrubber over generated rs-sdk scripts and run output\n"
            )?;
            for scan in [&large, &small] {
                writeln!(
                    out,
                    "{:.0} MB ({} secrets planted, {} findings): scrubber {:.0} MB/s; plain aho-corasick {:.0} MB/s ({} matches); counting newlines {:.0} MB/s",
                    scan.bytes as f64 / 1e6,
                    scan.planted,
                    scan.findings,
                    scan.mb_per_second,
                    scan.baseline_mb_per_second,
                    scan.baseline_matches,
                    scan.newline_mb_per_second
                )?;
            }
            writeln!(out)?;
            drop(out);
            crate::bench::print_rows(&rows, false)?;
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
                    digest: mindrune_core::digest::snippet_digest(&code),
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
    let (first, suggested) =
        time_it(|| Ok(mindrune_engine::snippets::advice(&store, &agent, now)?))?;
    let (mut lookups, mut tokenizing) = (Vec::new(), Vec::new());
    for _ in 0..LOOKUPS {
        lookups.push(time_it(|| Ok(mindrune_engine::snippets::advice(&store, &agent, now)?))?.0);
        tokenizing.push(
            time_it(|| {
                Ok(codes
                    .iter()
                    .filter_map(|code| near_repeat::shape(code))
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
            crate::bench::print_rows(&rows, false)?;
        }
        Print::Quiet => {}
    }
    Ok(rows)
}
