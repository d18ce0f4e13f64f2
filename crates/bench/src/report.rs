//! What a benchmark reports: rows of a figure beside its baseline measured in the same run,
//! and the table (or JSON) they print as.

use std::io::Write;

use serde::Serialize;
use serde_json::json;

/// How a benchmark shows what it measured: its own detail as text or JSON (the subcommands),
/// or nothing (`mindrune bench`, which prints one table of every benchmark's rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Print {
    Quiet,
    Text,
    Json,
}

impl Print {
    pub fn detail(json: bool) -> Print {
        if json { Print::Json } else { Print::Text }
    }
}

/// Whether a row's figure met its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// Measured for the record; no budget applies.
    Info,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Info => "info",
        }
    }
}

/// One line of the table: a figure beside its baseline measured in the same run.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The benchmark group (`record`, `mirror`, `tags`, `secrets`, …).
    pub group: String,
    /// What the figure is.
    pub name: String,
    /// The size of the generated data it was measured on.
    pub size: String,
    pub figure: Option<f64>,
    pub unit: String,
    /// What the baseline does.
    pub baseline_name: String,
    pub baseline: Option<f64>,
    pub baseline_unit: String,
    /// figure / baseline.
    pub ratio: Option<f64>,
    pub target: String,
    pub result: Verdict,
    /// This process's peak resident memory (VmHWM) after the group ran, in MiB.
    pub peak_rss_mib: Option<f64>,
}

impl Row {
    pub fn new(group: &str, name: &str, size: impl Into<String>) -> Row {
        Row {
            group: group.into(),
            name: name.into(),
            size: size.into(),
            figure: None,
            unit: String::new(),
            baseline_name: String::new(),
            baseline: None,
            baseline_unit: String::new(),
            ratio: None,
            target: "—".into(),
            result: Verdict::Info,
            peak_rss_mib: None,
        }
    }

    pub fn figure(mut self, value: f64, unit: &str) -> Row {
        self.figure = Some(value);
        self.unit = unit.into();
        self
    }

    /// The baseline; the ratio is figure / baseline.
    pub fn baseline(mut self, name: &str, value: f64, unit: &str) -> Row {
        self.baseline_name = name.into();
        self.baseline = Some(value);
        self.baseline_unit = unit.into();
        self.ratio = self.figure.filter(|_| value > 0.0).map(|f| f / value);
        self
    }

    pub fn target(mut self, target: impl Into<String>, pass: bool) -> Row {
        self.target = target.into();
        self.result = if pass { Verdict::Pass } else { Verdict::Fail };
        self
    }
}

/// This process's peak resident memory (VmHWM), in MiB.
pub(crate) fn own_peak_rss_mib() -> Option<f64> {
    peak_rss_of("self")
}

/// A process's peak resident memory (VmHWM) from `/proc/<pid>/status`, in MiB.
pub(crate) fn peak_rss_of(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Stamps every row with this process's peak RSS now (after its group ran).
pub(crate) fn stamp_rss(mut rows: Vec<Row>) -> Vec<Row> {
    let rss = own_peak_rss_mib();
    for row in &mut rows {
        row.peak_rss_mib = row.peak_rss_mib.or(rss);
    }
    rows
}

/// A number in a table cell, with as many digits as it deserves.
pub(crate) fn number(value: f64) -> String {
    let digits = if value >= 100.0 {
        0
    } else if value >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{value:.digits$}");
    // Thousands separators in the integer part.
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0
            && (int.len() - i).is_multiple_of(3)
            && c.is_ascii_digit()
            && int.as_bytes()[i - 1].is_ascii_digit()
        {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(frac) => format!("{grouped}.{frac}"),
        None => grouped,
    }
}

/// Prints rows as one table (or as JSON).
pub fn print_rows(rows: &[Row], json_out: bool) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if json_out {
        serde_json::to_writer_pretty(&mut out, &json!({ "rows": rows }))?;
        writeln!(out)?;
        return Ok(());
    }
    let header = [
        "benchmark",
        "size",
        "figure",
        "baseline",
        "ratio",
        "target",
        "result",
        "peak RSS",
    ];
    let cells: Vec<[String; 8]> = rows
        .iter()
        .map(|row| {
            let value = |v: Option<f64>, unit: &str| {
                v.map_or_else(|| "—".to_string(), |v| format!("{} {unit}", number(v)))
            };
            let baseline = match row.baseline {
                Some(_) => format!(
                    "{} ({})",
                    value(row.baseline, &row.baseline_unit),
                    row.baseline_name
                ),
                None if row.baseline_name.is_empty() => "—".into(),
                None => row.baseline_name.clone(),
            };
            [
                format!("{}: {}", row.group, row.name),
                row.size.clone(),
                value(row.figure, &row.unit),
                baseline,
                row.ratio.map_or_else(|| "—".into(), |r| format!("{r:.2}×")),
                row.target.clone(),
                row.result.label().into(),
                row.peak_rss_mib
                    .map_or_else(|| "—".into(), |m| format!("{m:.0} MiB")),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                let pad = w - cell.chars().count();
                // Numbers right-aligned, words left-aligned.
                if (2..=4).contains(&i) {
                    format!("{}{cell}", " ".repeat(pad))
                } else {
                    format!("{cell}{}", " ".repeat(pad))
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    writeln!(out, "{}", line(&header.map(String::from)))?;
    writeln!(
        out,
        "{}",
        widths
            .iter()
            .map(|w| "─".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
    )?;
    for row in &cells {
        writeln!(out, "{}", line(row))?;
    }
    let failed = rows.iter().filter(|r| r.result == Verdict::Fail).count();
    writeln!(
        out,
        "\n{} rows: {} pass, {failed} FAIL, {} info",
        rows.len(),
        rows.iter().filter(|r| r.result == Verdict::Pass).count(),
        rows.iter().filter(|r| r.result == Verdict::Info).count(),
    )?;
    Ok(())
}

/// The row that stands for a benchmark group that failed to run.
pub(crate) fn did_not_run(group: &str, name: &str, err: &anyhow::Error) -> Row {
    let mut row = Row::new(group, name, "—");
    row.baseline_name = format!("error: {err:#}");
    row.result = Verdict::Fail;
    row
}
