//! Inputs the fuzz targets (`fuzz/`) once broke, kept as tests so they stay fixed.

use std::sync::mpsc;
use std::time::Duration;

use mindrune_core::shell_line::{ShellContext, ShellRuns, classify_shell_line};

/// Classifies on another thread and fails (instead of hanging) if it takes too long.
fn classify_in_time(line: &'static str) -> ShellRuns {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let roots = ["/work"];
        let runs = classify_shell_line(
            line,
            &ShellContext {
                cwd: None,
                workspace_roots: &roots,
            },
        );
        let _ = send.send(runs);
    });
    receive
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("classifying {line:?} did not finish"))
}

#[test]
fn a_heredoc_whose_delimiter_is_only_white_space_is_refused_not_looped_on() {
    // brush-parser 0.4 trims the delimiter to nothing and then pushes empty tokens forever.
    for line in [
        "<<\x0c<#<<a'",
        "<<\x0c<#",
        "x<<\x0c<#<<a'",
        "<<\u{a0}<#",
        "cat <<\x0b<#",
    ] {
        let runs = classify_in_time(line);
        assert!(runs.runs.is_empty(), "{line:?}: {runs:?}");
    }
}
