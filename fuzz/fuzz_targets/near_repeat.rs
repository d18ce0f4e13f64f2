//! Snippet shapes never panic, are deterministic, and every suggestion names a clean file.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use mindrune_core::snippet_digest;
use mindrune_core::{RecentSnippet, analyze_near_repeat, suggestions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let analysis = analyze_near_repeat(text);
    assert_eq!(analysis, analyze_near_repeat(text), "tokenizing is deterministic");
    if let Some(analysis) = &analysis {
        let placeholders = analysis
            .shape
            .text()
            .split(' ')
            .filter(|t| t.contains("<num>") || t.contains("<str>") || t.contains("<re>"))
            .count();
        assert_eq!(
            placeholders,
            analysis.literals.len(),
            "one placeholder per literal"
        );
    }
    // Each line is a version of a snippet with two successful runs, so near-repeats among the
    // lines make groups.
    let recent: Vec<RecentSnippet> = text
        .split('\u{1}')
        .enumerate()
        .map(|(i, code)| RecentSnippet {
            digest: snippet_digest(code),
            code: code.to_string(),
            ok_runs: 2,
            last_run_at: i as i64,
        })
        .collect();
    for suggestion in suggestions("bot", &recent, &HashMap::new()) {
        assert!(suggestion.count >= 3);
        assert!(!suggestion.slug.is_empty());
        assert!(
            suggestion
                .slug
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{}",
            suggestion.slug
        );
        assert!(suggestion.quote.lines().count() <= mindrune_core::MAX_QUOTE_LINES);
    }
});
