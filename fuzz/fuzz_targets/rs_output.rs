//! The rs-sdk output parser never panics, reports only finite, non-negative XP and reads a
//! level only beside its XP; measuring a run against a previous one (the input split in two at
//! its first NUL) never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{measure_against, parse_run_output};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let parsed = parse_run_output(text);
        assert!(parsed.xp.values().all(|xp| xp.is_finite() && *xp >= 0.0));
        assert!(parsed.skill_totals.values().all(|xp| xp.is_finite() && *xp >= 0.0));
        // A level is read only beside its XP; a full state has levels.
        assert!(parsed.skill_levels.keys().all(|k| parsed.skill_totals.contains_key(k)));
        assert!(!parsed.full_state() || !parsed.skill_levels.is_empty());
        let (now, before) = text.split_once('\0').unwrap_or((text, ""));
        let facts = measure_against(&parse_run_output(now), Some(&parse_run_output(before)));
        assert!(facts.xp.values().all(|xp| xp.is_finite() && *xp > 0.0));
        assert!(facts.items.values().all(|n| n.is_finite()));
    }
});
