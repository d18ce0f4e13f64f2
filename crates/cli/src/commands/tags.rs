//! `mindrune tags`: the topic tags built from a wiki, and a text mapped to them.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use mindrune_engine::now_millis;

use super::{EXIT_BAD_INPUT, thousands};
use crate::library;
use crate::progress::Progress;

/// How many changed tags `tags build` lists by name before it only counts the rest.
const TAGS_LISTED: usize = 20;

/// `mindrune tags build --wiki DIR`.
pub(crate) fn tags_build(home: &Path, wiki: &Path, json: bool) -> anyhow::Result<ExitCode> {
    use mindrune_engine::{WIKI_FOLDERS, build_from_wiki, write_vocabulary};

    let store = library::open(home)?;
    let progress = Progress::spinner(&format!("reading the wiki at {}", wiki.display()));
    let read = build_from_wiki(wiki)?;
    progress.say(&format!(
        "building the vocabulary of {} pages",
        thousands(read.entries.len())
    ));
    let written = write_vocabulary(&*store, &read, now_millis())?;
    drop(progress);
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "wiki": read.folder,
                "pages": read.entries.len(),
                "tags": written.counts.values().sum::<usize>(),
                "kinds": written.counts,
                "sources": written.sources,
                "added": written.change.added,
                "removed": written.change.removed,
                "kept": written.change.kept,
                "missing_folders": read.missing,
                "skipped": read.skipped.iter().chain(&written.skipped).collect::<Vec<_>>(),
            }),
        )?;
        writeln!(out)?;
    } else {
        let total: usize = written.counts.values().sum();
        let source = |name: &str| written.sources.get(name).copied().unwrap_or(0);
        writeln!(
            out,
            "Read {} pages from {}.",
            thousands(read.entries.len()),
            read.folder
        )?;
        writeln!(
            out,
            "The vocabulary has {} tags ({} wiki pages, {} LostHQ pages, {} places):",
            thousands(total),
            thousands(source("wiki")),
            source("losthq"),
            source("places")
        )?;
        for kind in mindrune_core::TOPIC_KINDS {
            let count = written.counts.get(kind).copied().unwrap_or(0);
            writeln!(out, "  {kind:<6}{:>7}", thousands(count))?;
        }
        for (verb, tags) in [
            ("Added", &written.change.added),
            ("Removed", &written.change.removed),
        ] {
            if tags.is_empty() {
                writeln!(out, "{verb} no tags.")?;
                continue;
            }
            let shown: Vec<&str> = tags.iter().take(TAGS_LISTED).map(String::as_str).collect();
            let more = tags.len() - shown.len();
            writeln!(
                out,
                "{verb} {} {}: {}{}",
                thousands(tags.len()),
                if tags.len() == 1 { "tag" } else { "tags" },
                shown.join(", "),
                if more > 0 {
                    format!(", and {} more", thousands(more))
                } else {
                    String::new()
                }
            )?;
        }
        if written.change.kept > 0 {
            writeln!(out, "Kept {} tags.", thousands(written.change.kept))?;
        }
        for name in &read.missing {
            let kind = WIKI_FOLDERS
                .iter()
                .find(|(folder, _)| folder == name)
                .map_or("its", |(_, kind)| kind);
            writeln!(
                out,
                "The wiki has no {name}/ folder, so no {kind}: tags come from it."
            )?;
        }
        let skipped: Vec<&String> = read.skipped.iter().chain(&written.skipped).collect();
        if !skipped.is_empty() {
            writeln!(out, "\nSkipped {}:", thousands(skipped.len()))?;
            for note in &skipped {
                writeln!(out, "  {note}")?;
            }
        }
    }
    // Files skipped are input partly rejected: the rest was still written.
    let partly = !read.skipped.is_empty() || !written.skipped.is_empty();
    Ok(if partly {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

/// `mindrune tags map [TEXT|-]`: the tags a text carries, one a line. Without a library the
/// built-in vocabulary (exact tags, places, LostHQ pages) maps it, and stderr says so.
pub(crate) fn tags_map(home: &Path, text: &[String]) -> anyhow::Result<ExitCode> {
    let text = match text {
        [] => None,
        [only] if only == "-" => None,
        words => Some(words.join(" ")),
    };
    let text = match text {
        Some(text) => text,
        None => {
            let mut input = String::new();
            std::io::stdin()
                .lock()
                .read_to_string(&mut input)
                .context("cannot read the text from standard input (is it UTF-8?)")?;
            input
        }
    };
    let vocabulary = if library::exists(home) {
        mindrune_engine::load_vocabulary(&*library::open(home)?)?
    } else {
        eprintln!(
            "note: no MindRune library at {}; mapping with the built-in places and LostHQ pages only",
            library::database(home)
        );
        mindrune_core::Vocabulary::builtin()
    };
    let mut out = std::io::stdout().lock();
    for tag in vocabulary.map(&text) {
        writeln!(out, "{tag}")?;
    }
    Ok(ExitCode::SUCCESS)
}
