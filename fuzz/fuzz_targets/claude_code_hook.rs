//! Claude Code hook input never panics the hook handler.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let spool = tempfile::tempdir().expect("temp dir");
        // The spool folder stands for the project too, so a PreToolUse reads scripts (none).
        let _ = mindrune_engine::Payload::parse(text).map(|payload| {
            let hook = mindrune_engine::AvatarHook {
                agent: "fuzz",
                spool: spool.path(),
                project: Some(spool.path()),
                kept: &[],
            };
            mindrune_engine::handle_hook(&payload, &hook)
        });
    }
});
