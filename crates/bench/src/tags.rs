//! `mindrune bench tags`: building the topic-tag vocabulary and mapping free text to tags.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;

use crate::measure::{Dice, median, micros, time_it};
use crate::report::{Print, Row};

/// The target for mapping free text to tags.
const TARGET_TAGS_MB_PER_SECOND: f64 = 200.0;
/// Timed builds of the vocabulary; the median is reported.
const TAG_BUILDS: usize = 5;
/// Alternating blocks of the two mapping measurements, so a slow patch of the machine falls
/// on both alike.
const TAG_BLOCKS: usize = 10;

/// Free text as agents write it: goals, preconditions, lab-log runs and prose, `Share:`
/// lessons and a little code, naming the vocabulary's pages by title (in any case), by
/// nickname and by exact tag, among everyday words. One line each, at least `bytes` in all.
fn free_text_lines(vocabulary: &mindrune_core::Vocabulary, bytes: usize) -> Vec<String> {
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
    use mindrune_core::{Source, parse_listing};

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
#[expect(
    clippy::too_many_lines,
    reason = "a benchmark script: each mapping and its baseline timed side by side, in order"
)]
pub fn tags(pages: Option<&Path>, megabytes: usize, print: Print) -> anyhow::Result<Vec<Row>> {
    use mindrune_core::Vocabulary;
    use mindrune_engine::build_from_wiki;

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
        let (read_took, read) = time_it(|| Ok(build_from_wiki(dir.path())?))?;
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
