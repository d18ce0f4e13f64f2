//! A host's turn record, read for what the turn cost (`playbook_record`), never panics, and a
//! record that reports something reports a number.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_engine::parse_turn_cost;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(turn) = parse_turn_cost(&text) {
        assert!(turn.tokens.is_some() || turn.tool_calls.is_some(), "{turn:?}");
    }
});
