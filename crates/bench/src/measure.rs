//! Timing and deterministic data helpers every benchmark shares.

use std::time::{Duration, Instant};

/// A latency distribution: its rate, median, tail and mean.
pub(crate) struct Figures {
    pub(crate) per_second: f64,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
    pub(crate) mean: Duration,
}

pub(crate) fn figures(mut latencies: Vec<Duration>, total: Duration) -> Figures {
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    Figures {
        per_second: latencies.len() as f64 / total.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
        mean: total / latencies.len() as u32,
    }
}

pub(crate) fn micros(d: Duration) -> String {
    if d >= Duration::from_millis(10) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.0} µs", d.as_secs_f64() * 1e6)
    }
}

pub(crate) fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// The `q` quantile of sorted samples (nearest rank); zero for no samples.
pub(crate) fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * q).round() as usize]
}

pub(crate) fn time_it<T>(
    work: impl FnOnce() -> anyhow::Result<T>,
) -> anyhow::Result<(Duration, T)> {
    let began = Instant::now();
    let value = work()?;
    Ok((began.elapsed(), value))
}

/// A small deterministic random source (xorshift64*), so every run maps the same text.
pub(crate) struct Dice(pub(crate) u64);

impl Dice {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
