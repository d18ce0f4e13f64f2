//! The rs-sdk output parser never panics and reports only finite, non-negative XP.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let parsed = mindrune_core::rs_output::parse_run_output(text);
        assert!(parsed.xp.values().all(|xp| xp.is_finite() && *xp >= 0.0));
    }
});
