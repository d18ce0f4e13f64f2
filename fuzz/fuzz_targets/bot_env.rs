//! A bot's `bot.env` read as bytes never panics, and every value found is scrubbed: no byte
//! sequence turns the password scrub off.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{MIN_KNOWN_SECRET_CHARS, REDACTED, Scrubber, secrets_in_bot_env_bytes};

fuzz_target!(|data: &[u8]| {
    let values = secrets_in_bot_env_bytes(data);
    let refs: Vec<&str> = values.iter().map(String::as_str).collect();
    let scrubber = Scrubber::new(&refs);
    for value in &values {
        let value = value.trim();
        if value.chars().count() < MIN_KNOWN_SECRET_CHARS
            || value.contains('\n')
            || REDACTED.contains(value)
        {
            continue;
        }
        // The value on a line of its own: the scrubber keeps lines, so nothing around it can
        // join a replacement into a false survivor.
        let text = format!("logged in with\n{value}\nok");
        let scrubbed = scrubber.scrub(&text).text.into_owned();
        let line = scrubbed.split('\n').nth(1).unwrap_or_default();
        assert!(!line.contains(value), "{value:?} survived: {scrubbed:?}");
    }
});
