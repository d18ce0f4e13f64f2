//! The `runx.stable-json.v1` canonicalizer never panics on any text, and its output is a fixed
//! point: canonical JSON canonicalizes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::canonicalize_text;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(canonical) = canonicalize_text(&text) {
        assert_eq!(
            canonicalize_text(&canonical).as_deref(),
            Ok(canonical.as_str()),
            "{canonical}"
        );
    }
});
