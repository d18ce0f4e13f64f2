//! A host's transcript (Claude Code's `transcript_path` file) never makes the reader or the
//! observer panic: every line is read or is a diagnostic naming it, turns are numbered 1, 2, …,
//! and a repeat the observer finds is at least its minimum length, in at least its minimum of
//! turns, the last turn among them, and described on one line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{redone_in_last_turn, MIN_STEPS, MAX_STEPS, MIN_TURNS, describe_repeat, parse_transcript};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let read = parse_transcript(&text);
    let lines = text.lines().count();
    for diagnostic in &read.diagnostics {
        assert!(diagnostic.line >= 1 && diagnostic.line <= lines, "{diagnostic:?}");
    }
    for (index, turn) in read.turns.iter().enumerate() {
        assert_eq!(turn.number, index + 1);
    }
    if let Some(repeat) = redone_in_last_turn(&read.turns) {
        assert!(repeat.steps.len() >= MIN_STEPS);
        assert!(repeat.steps.len() <= MAX_STEPS);
        assert!(repeat.turns.len() >= MIN_TURNS);
        assert_eq!(repeat.turns.last(), read.turns.last().map(|t| &t.number));
        let described = describe_repeat(&repeat, &read.turns);
        assert!(described.contains(&repeat.key));
    }
});
