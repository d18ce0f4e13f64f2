//! The server's TOML configuration never panics the parser, and its errors name a real place.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(err) = mindrune_server::parse_config(text, "mindrune.toml")
    {
        let _ = err.to_string();
    }
});
