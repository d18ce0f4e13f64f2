//! The shell-line classifier never panics, and never returns a run outside the workspace.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mindrune_core::{ShellContext, classify_shell_line};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let roots = ["/work"];
        let runs = classify_shell_line(
            text,
            &ShellContext {
                cwd: Some("/work"),
                workspace_roots: &roots,
            },
        );
        for run in &runs.runs {
            assert!(
                !run.starts_with('/') && !run.split('/').any(|c| c == ".."),
                "escaping run {run:?}"
            );
        }
    }
});
