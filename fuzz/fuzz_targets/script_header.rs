//! The `@skill` header parser and the digest that strips it never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = mindrune_core::parse_header(text);
        let _ = mindrune_core::script_digest(text);
    }
});
