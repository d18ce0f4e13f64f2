//! Progress of long commands on a terminal: a bar when the amount of work is known, a spinner
//! when it is not. Drawn on stderr, and only when stderr is a terminal, so a piped or captured
//! run prints exactly what it printed before.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar (or spinner) that is cleared when dropped, leaving the terminal as the command's own
/// output wrote it.
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// `total` units of work (bytes, cases) under `label`.
    pub(crate) fn bar(total: u64, label: &str, unit: Unit) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(total), target());
        let template = match unit {
            Unit::Bytes => "{msg} {wide_bar} {binary_bytes}/{binary_total_bytes} ({eta})",
            // The message says which case of how many; the bar and the time are what is left.
            Unit::Cases => "{msg} {wide_bar} ({elapsed})",
        };
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(label.to_string());
        Progress { bar }
    }

    /// Work of unknown length under `label`.
    pub(crate) fn spinner(label: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(None, target());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar }
    }

    pub(crate) fn advance(&self, by: u64) {
        self.bar.inc(by);
    }

    /// `done` units of the total are done.
    pub(crate) fn reach(&self, done: u64) {
        self.bar.set_position(done);
    }

    pub(crate) fn say(&self, message: &str) {
        self.bar.set_message(message.to_string());
    }

    /// Runs `write` (the command's own output) with the bar taken off the terminal meanwhile,
    /// so the two never tear each other's lines.
    pub(crate) fn suspend<T>(&self, write: impl FnOnce() -> T) -> T {
        self.bar.suspend(write)
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// What a bar counts.
#[derive(Clone, Copy)]
pub(crate) enum Unit {
    Bytes,
    /// A harness replay's cases.
    Cases,
}

fn target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}
