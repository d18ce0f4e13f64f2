//! The scrubber never panics, is idempotent, and never lets a known secret through.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::Scrubber;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let scrubber = Scrubber::new(&["hunter2-pass"]);
        let once = scrubber.scrub(text).text.into_owned();
        assert!(!once.contains("hunter2-pass"));
        let twice = scrubber.scrub(&once).text.into_owned();
        assert_eq!(once, twice);
    }
});
