//! The dashboard's and the console's charts: SVG written here, on the server, by hand.
//!
//! No chart library and nothing from a CDN: the page's Content-Security-Policy allows only the
//! server's own script and style, and an SVG element in the page needs neither. Colours come
//! from classes that `static/app.css` styles (light and dark), never from inline styles.
//!
//! Every chart carries its text alternative: `role="img"` with a `<title>` and a `<desc>` that
//! says in a sentence what it shows, and (for the larger charts) the same numbers as a table
//! behind a disclosure. The charts are maud templates, so every text that reaches the SVG is
//! escaped; callers pass plain text. SVG inside HTML closes no element by itself, so every
//! shape is written with an end tag (`{}`), never as maud's void `;`.

use crate::html::{Markup, grouped, html};

/// The drawing area of the larger charts, in SVG units; the SVG scales to its box's width.
const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 180.0;
/// Room on the left for the scale's numbers and below for the first and last labels.
const LEFT: f64 = 40.0;
const BOTTOM: f64 = 20.0;
const TOP: f64 = 10.0;

/// One bar of a runs chart: a day (or any label) with its ok and failed runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bar {
    pub label: String,
    pub ok: u64,
    pub failed: u64,
}

/// One point of a line chart (a score after a run).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Point {
    /// When, in milliseconds since the epoch: the point's place across the chart.
    pub at: i64,
    /// When, as shown (`2025-06-01 14:02`).
    pub label: String,
    pub value: f64,
    /// The version the point belongs to; where it changes, the chart marks `v<n>`.
    pub version: i64,
    /// The run behind the point failed: the chart marks it with a cross.
    pub failed: bool,
}

/// The time a chart's horizontal axis covers, from its left end to its right, each with the
/// label written under it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeAxis {
    pub from: i64,
    pub to: i64,
    pub from_label: String,
    pub to_label: String,
}

impl TimeAxis {
    /// From `from` (labelled with its time) to `now` (labelled "now").
    pub(crate) fn until_now(from: i64, now: i64) -> TimeAxis {
        TimeAxis {
            from,
            to: now,
            from_label: crate::html::when(Some(from)),
            to_label: "now".into(),
        }
    }

    /// Where `at` falls across a plot from `left` to `right`; the middle when the axis has no
    /// length.
    fn x(&self, at: i64, left: f64, right: f64) -> f64 {
        if self.to <= self.from {
            return left + (right - left) / 2.0;
        }
        let fraction = (at - self.from) as f64 / (self.to - self.from) as f64;
        left + (right - left) * fraction.clamp(0.0, 1.0)
    }
}

/// One point of a line over time (an avatar's coins at an hour).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimedPoint {
    /// When, in milliseconds since the epoch: the point's place across the chart.
    pub at: i64,
    /// When, as shown (`2025-06-01 14:00`).
    pub label: String,
    pub value: i64,
}

/// A number as a coordinate: one decimal, without a trailing `.0`, so pages stay small.
fn coord(x: f64) -> String {
    let rounded = (x * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{}", rounded as i64)
    } else {
        format!("{rounded:.1}")
    }
}

/// The smallest of 1, 2, 5 × 10ⁿ at or above `max` (at least 1): the top of a scale whose
/// halves are round numbers.
pub(crate) fn nice_ceiling(max: f64) -> f64 {
    if !max.is_finite() || max <= 1.0 {
        return 1.0;
    }
    let magnitude = 10f64.powf(max.log10().floor());
    for step in [1.0, 2.0, 5.0, 10.0] {
        if step * magnitude >= max {
            return step * magnitude;
        }
    }
    10.0 * magnitude
}

/// A chart: a figure holding an SVG image with its title and description, what it draws
/// (`drawing`), and after the image `after` (the caption and the table).
fn figure(
    id: &str,
    class: &str,
    title: &str,
    desc: &str,
    (width, height): (f64, f64),
    drawing: Markup,
    after: Markup,
) -> Markup {
    html! {
        figure class={ "chart " (class) } id=(id) {
            svg viewBox={ "0 0 " (coord(width)) " " (coord(height)) } role="img"
                aria-labelledby={ (id) "-title " (id) "-desc" } preserveAspectRatio="none"
                xmlns="http://www.w3.org/2000/svg" {
                title id={ (id) "-title" } { (title) }
                desc id={ (id) "-desc" } { (desc) }
                (drawing)
            }
            (after)
        }
    }
}

/// The horizontal scale lines at 0, half and the top, with their numbers.
fn scale(top: f64) -> Markup {
    scale_across(top, WIDTH, coord)
}

/// [`scale`] over a chart `width` wide, its numbers written by `number`.
fn scale_across(top: f64, width: f64, number: fn(f64) -> String) -> Markup {
    html! {
        @for fraction in [0.0, 0.5, 1.0] {
            @let y = TOP + (HEIGHT - TOP - BOTTOM) * (1.0 - fraction);
            line class="grid" x1=(coord(LEFT)) x2=(coord(width)) y1=(coord(y)) y2=(coord(y)) {}
            text class="axis" x=(coord(LEFT - 4.0)) y=(coord(y + 4.0)) text-anchor="end" {
                (number(top * fraction))
            }
        }
    }
}

/// The first and last labels under the plot.
fn ends(first: &str, last: &str) -> Markup {
    ends_across(first, last, WIDTH)
}

/// [`ends`] under a chart `width` wide.
fn ends_across(first: &str, last: &str, width: f64) -> Markup {
    let y = coord(HEIGHT - 4.0);
    html! {
        text class="axis" x=(coord(LEFT)) y=(y) { (first) }
        text class="axis" x=(coord(width)) y=(y) text-anchor="end" { (last) }
    }
}

/// A chart's numbers again, as a table behind a disclosure: `head` the column headings,
/// `rows` the rows' cells.
fn table(head: Markup, rows: Markup) -> Markup {
    html! {
        details class="chart-table" {
            summary { "As a table" }
            table { thead { tr { (head) } } tbody { (rows) } }
        }
    }
}

/// A scale's number in few characters (`250k`, `1.5M`), so it fits left of a narrow plot.
fn compact(x: f64) -> String {
    if x >= 1e6 {
        format!("{}M", coord(x / 1e6))
    } else if x >= 1e3 {
        format!("{}k", coord(x / 1e3))
    } else {
        coord(x)
    }
}

/// A chart with nothing to draw says so in words instead of drawing empty axes.
fn empty(id: &str, class: &str, title: &str, message: &str) -> Markup {
    html! {
        figure class={ "chart " (class) " empty" } id=(id) {
            figcaption { strong { (title) } ": " (message) }
        }
    }
}

/// Stacked bars of ok and failed runs, one per label (a day), with the scale at the left and
/// the numbers again in a table.
pub(crate) fn runs_bars(id: &str, title: &str, bars: &[Bar]) -> Markup {
    stacked_bars(id, title, bars, ["ok", "failed"])
}

/// Stacked bars as [`runs_bars`], with other names for the two parts (`ok` is drawn below,
/// `failed` above): `["from a family skill", "other"]`.
pub(crate) fn stacked_bars(id: &str, title: &str, bars: &[Bar], names: [&str; 2]) -> Markup {
    let ok: u64 = bars.iter().map(|b| b.ok).sum();
    let failed: u64 = bars.iter().map(|b| b.failed).sum();
    if bars.is_empty() || ok + failed == 0 {
        return empty(id, "bars", title, "no runs in this time.");
    }
    let [ok_name, failed_name] = names;
    let (first, last) = (&bars[0].label, &bars[bars.len() - 1].label);
    let desc = format!(
        "{} runs from {first} to {last}: {ok} {ok_name}, {failed} {failed_name}.",
        ok + failed,
    );
    let top = nice_ceiling(
        bars.iter()
            .map(|b| (b.ok + b.failed) as f64)
            .fold(0.0, f64::max),
    );
    let plot = HEIGHT - TOP - BOTTOM;
    let base = TOP + plot;
    let slot = (WIDTH - LEFT) / bars.len() as f64;
    let width = (slot * 0.8).max(1.0);
    let drawing = html! {
        (scale(top))
        @for (i, bar) in bars.iter().enumerate() {
            @let x = LEFT + slot * i as f64 + (slot - width) / 2.0;
            @let ok_h = plot * bar.ok as f64 / top;
            @let failed_h = plot * bar.failed as f64 / top;
            g class="bar" data-label=(bar.label) data-ok=(bar.ok) data-failed=(bar.failed) {
                title { (bar.label) ": " (bar.ok) " " (ok_name) ", " (bar.failed) " " (failed_name) }
                @if bar.ok > 0 {
                    rect class="ok" x=(coord(x)) y=(coord(base - ok_h)) width=(coord(width))
                        height=(coord(ok_h)) {}
                }
                @if bar.failed > 0 {
                    rect class="failed" x=(coord(x)) y=(coord(base - ok_h - failed_h))
                        width=(coord(width)) height=(coord(failed_h)) {}
                }
            }
        }
        (ends(first, last))
    };
    let after = html! {
        figcaption {
            span class="key ok" { (ok_name) } " " span class="key failed" { (failed_name) } " " (desc)
        }
        (table(
            html! {
                th scope="col" { "Day" }
                th scope="col" class="num" { (ok_name) }
                th scope="col" class="num" { (failed_name) }
            },
            html! {
                @for bar in bars.iter().filter(|b| b.ok + b.failed > 0) {
                    tr { td { (bar.label) } td class="num" { (bar.ok) } td class="num" { (bar.failed) } }
                }
            },
        ))
    };
    figure(id, "bars", title, &desc, (WIDTH, HEIGHT), drawing, after)
}

/// A line of values over `0..=max`, oldest first, each placed by its time on `axis` (a
/// quiet stretch shows as one), failed runs marked with a cross, a labelled line wherever the
/// version changes, and the values again in a table.
pub(crate) fn score_line(
    id: &str,
    title: &str,
    points: &[Point],
    max: f64,
    axis: &TimeAxis,
) -> Markup {
    if points.is_empty() {
        return empty(id, "line", title, "no runs in this time.");
    }
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let desc = score_line_words(points);
    let plot = HEIGHT - TOP - BOTTOM;
    let x_of = |at: i64| axis.x(at, LEFT + 4.0, WIDTH - 4.0);
    let y_of = |v: f64| TOP + plot * (1.0 - (v / max).clamp(0.0, 1.0));
    let path: Vec<String> = points
        .iter()
        .map(|p| format!("{},{}", coord(x_of(p.at)), coord(y_of(p.value))))
        .collect();
    let drawing = html! {
        (scale(max))
        @for pair in points.windows(2).filter(|pair| pair[0].version != pair[1].version) {
            // The new version's first run: the change happened by then.
            @let x = x_of(pair[1].at);
            g class="version-change" data-version=(pair[1].version) {
                line x1=(coord(x)) x2=(coord(x)) y1=(coord(TOP)) y2=(coord(TOP + plot)) {}
                text class="axis" x=(coord(x + 3.0)) y=(coord(TOP + 10.0)) { "v" (pair[1].version) }
            }
        }
        polyline class="series" points=(path.join(" ")) {}
        @for p in points {
            @let (x, y) = (x_of(p.at), y_of(p.value));
            @let tip = format!(
                "{}: v{}, {}{}",
                p.label,
                p.version,
                coord(p.value),
                if p.failed { ", failed" } else { "" }
            );
            @if p.failed {
                path class="dot failed" d={
                    "M" (coord(x - 3.5)) "," (coord(y - 3.5)) "L" (coord(x + 3.5)) "," (coord(y + 3.5))
                    "M" (coord(x - 3.5)) "," (coord(y + 3.5)) "L" (coord(x + 3.5)) "," (coord(y - 3.5))
                } data-value=(coord(p.value)) { title { (tip) } }
            } @else {
                circle class="dot" cx=(coord(x)) cy=(coord(y)) r="2.5" data-value=(coord(p.value)) {
                    title { (tip) }
                }
            }
        }
        (ends(&axis.from_label, &axis.to_label))
    };
    let after = html! {
        figcaption {
            span class="key dot-key" { "ok run" } " " span class="key cross-key" { "failed run" } " " (desc)
        }
        (table(
            html! {
                th scope="col" { "When (UTC)" }
                th scope="col" { "Version" }
                th scope="col" { "Run" }
                th scope="col" class="num" { "Value" }
            },
            html! {
                @for p in points.iter().rev() {
                    tr {
                        td { (p.label) }
                        td { "v" (p.version) }
                        td { @if p.failed { "failed" } @else { "ok" } }
                        td class="num" { (coord(p.value)) }
                    }
                }
            },
        ))
    };
    figure(id, "line", title, &desc, (WIDTH, HEIGHT), drawing, after)
}

/// What a score line shows, in a sentence: its points, first and last values, failed runs and
/// version changes.
fn score_line_words(points: &[Point]) -> String {
    let last = &points[points.len() - 1];
    let changes = points
        .windows(2)
        .filter(|w| w[0].version != w[1].version)
        .count();
    let failures = points.iter().filter(|p| p.failed).count();
    let mut desc = format!(
        "{} from {} to {}: from {} to {}",
        crate::html::count(points.len() as i64, "point", "points"),
        points[0].label,
        last.label,
        coord(points[0].value),
        coord(last.value),
    );
    for (n, one, many) in [
        (failures, "failed run", "failed runs"),
        (changes, "version change", "version changes"),
    ] {
        if n > 0 {
            desc.push_str(", ");
            desc.push_str(&crate::html::count(n as i64, one, many));
        }
    }
    desc.push('.');
    desc
}

/// The width of [`amount_line`], drawn in a narrow column: its SVG units are close to the
/// page's pixels there, so its text is not stretched.
const NARROW: f64 = 320.0;

/// A line of amounts over time (`unit`: `coins`), oldest first, placed by their time so a gap
/// in the reports shows as one; the text alternative says the first, last, lowest and highest
/// amounts in words, and the table lists them all.
pub(crate) fn amount_line(
    id: &str,
    title: &str,
    points: &[TimedPoint],
    unit: &str,
    axis: &TimeAxis,
) -> Markup {
    if points.is_empty() {
        return empty(id, "line", title, "nothing reported yet.");
    }
    let first = &points[0];
    let last = &points[points.len() - 1];
    let lowest = points.iter().map(|p| p.value).min().unwrap_or(0);
    let highest = points.iter().map(|p| p.value).max().unwrap_or(0);
    let amount = |v: i64| format!("{} {unit}", grouped(v));
    let desc = format!(
        "{} from {} to {}: {} at first and {} at last; lowest {}, highest {}.",
        crate::html::count(points.len() as i64, "point", "points"),
        first.label,
        last.label,
        amount(first.value),
        amount(last.value),
        amount(lowest),
        amount(highest),
    );
    let top = nice_ceiling(highest.max(0) as f64);
    let plot = HEIGHT - TOP - BOTTOM;
    let x_of = |at: i64| axis.x(at, LEFT, NARROW);
    let y_of = |v: i64| TOP + plot * (1.0 - (v as f64 / top).clamp(0.0, 1.0));
    let path: Vec<String> = points
        .iter()
        .map(|p| format!("{},{}", coord(x_of(p.at)), coord(y_of(p.value))))
        .collect();
    let drawing = html! {
        (scale_across(top, NARROW, compact))
        polyline class="series" points=(path.join(" ")) {}
        @for p in points {
            circle class="dot" cx=(coord(x_of(p.at))) cy=(coord(y_of(p.value))) r="2.5"
                data-value=(p.value) { title { (p.label) ": " (amount(p.value)) } }
        }
        (ends_across(&axis.from_label, &axis.to_label, NARROW))
    };
    let after = html! {
        figcaption { (desc) }
        (table(
            html! {
                th scope="col" { "When (UTC)" }
                th scope="col" class="num" { (capitalized(unit)) }
            },
            html! {
                @for p in points.iter().rev() {
                    tr { td { (p.label) } td class="num" { (grouped(p.value)) } }
                }
            },
        ))
    };
    figure(
        id,
        "line amounts",
        title,
        &desc,
        (NARROW, HEIGHT),
        drawing,
        after,
    )
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A small line of values over `0..=max`, oldest first, for a list: its `aria-label` says the
/// first and the last value in words.
pub(crate) fn sparkline(label: &str, values: &[f64], max: f64) -> Markup {
    const W: f64 = 100.0;
    const H: f64 = 24.0;
    if values.is_empty() {
        return html! { span class="sparkline empty small muted" { (label) ": no runs yet" } };
    }
    let max = if max.is_finite() && max > 0.0 {
        max
    } else {
        1.0
    };
    let y_of = |v: f64| 2.0 + (H - 4.0) * (1.0 - (v / max).clamp(0.0, 1.0));
    let x_of = |i: usize| {
        if values.len() == 1 {
            W / 2.0
        } else {
            W * i as f64 / (values.len() - 1) as f64
        }
    };
    let words = format!(
        "{label}: {} from {} to {}",
        crate::html::count(values.len() as i64, "run", "runs"),
        coord(values[0]),
        coord(values[values.len() - 1])
    );
    let path: Vec<String> = values
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{},{}", coord(x_of(i)), coord(y_of(*v))))
        .collect();
    let last = values.len() - 1;
    html! {
        svg class="sparkline" viewBox={ "0 0 " (coord(W)) " " (coord(H)) } role="img"
            aria-label=(words) preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg" {
            title { (words) }
            polyline class="series" points=(path.join(" ")) {}
            circle class="dot" cx=(coord(x_of(last))) cy=(coord(y_of(values[last]))) r="2" {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bar(label: &str, ok: u64, failed: u64) -> Bar {
        Bar {
            label: label.into(),
            ok,
            failed,
        }
    }

    fn point(label: &str, value: f64, version: i64) -> Point {
        Point {
            at: 0,
            label: label.into(),
            value,
            version,
            failed: false,
        }
    }

    /// A point `at_hours` in, its label the hour.
    fn run(at_hours: i64, value: f64, version: i64, failed: bool) -> Point {
        Point {
            at: at_hours * 3_600_000,
            label: format!("h{at_hours}"),
            value,
            version,
            failed,
        }
    }

    /// An axis from hour `from` to hour `to`.
    fn hours(from: i64, to: i64) -> TimeAxis {
        TimeAxis {
            from: from * 3_600_000,
            to: to * 3_600_000,
            from_label: format!("h{from}"),
            to_label: format!("h{to}"),
        }
    }

    /// The `name="…"` values of every element `tag` in `svg`, as numbers.
    fn attributes(svg: &str, tag: &str, name: &str) -> Vec<f64> {
        svg.split(&format!("<{tag} "))
            .skip(1)
            .filter_map(|rest| {
                let start = rest.find(&format!(" {name}=\""))? + name.len() + 3;
                let end = rest[start..].find('"')? + start;
                rest[start..end].parse().ok()
            })
            .collect()
    }

    #[test]
    fn every_text_is_escaped() {
        let svg = runs_bars("c<1>", "<b>runs</b>", &[bar("a&\"b'<", 1, 0)]).into_string();
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("&lt;b&gt;runs&lt;/b&gt;"), "{svg}");
        assert!(svg.contains("a&amp;&quot;b'&lt;"), "{svg}");
        assert!(svg.contains("id=\"c&lt;1&gt;\""), "{svg}");
        let line = score_line("l", "t", &[point("<x>", 1.0, 1)], 10.0, &hours(0, 0)).into_string();
        assert!(
            line.contains("&lt;x&gt;") && !line.contains("<x>"),
            "{line}"
        );
        let spark = sparkline("\"><script>", &[1.0], 10.0).into_string();
        assert!(!spark.contains("<script>"), "{spark}");
    }

    #[test]
    fn an_empty_series_says_so_in_words_and_draws_nothing() {
        for html in [
            runs_bars("a", "Runs", &[]).into_string(),
            runs_bars("a", "Runs", &[bar("d", 0, 0)]).into_string(),
            score_line("b", "Score", &[], 1000.0, &hours(0, 1)).into_string(),
        ] {
            assert!(!html.contains("<svg"), "{html}");
            assert!(html.contains("class=\"chart"), "{html}");
            assert!(html.contains("no runs"), "{html}");
        }
        assert!(!sparkline("x", &[], 1000.0).into_string().contains("<svg"));
    }

    #[test]
    fn one_point_sits_in_the_middle_at_its_height() {
        let line =
            score_line("s", "Score", &[point("t", 500.0, 3)], 1000.0, &hours(0, 0)).into_string();
        assert_eq!(
            attributes(&line, "circle", "cx"),
            [coord_value(LEFT + 4.0 + (WIDTH - LEFT - 8.0) / 2.0)]
        );
        let plot = HEIGHT - TOP - BOTTOM;
        assert_eq!(
            attributes(&line, "circle", "cy"),
            [coord_value(TOP + plot / 2.0)]
        );
        assert!(!line.contains("version-change"), "{line}");
        assert!(
            line.contains("1 point from t to t: from 500 to 500."),
            "{line}"
        );
        let spark = sparkline("x", &[250.0], 1000.0).into_string();
        assert!(spark.contains("cx=\"50\""), "{spark}");
    }

    fn coord_value(x: f64) -> f64 {
        coord(x).parse().unwrap()
    }

    #[test]
    fn the_tallest_bar_reaches_a_round_top_and_the_others_scale_with_it() {
        let svg = runs_bars(
            "r",
            "Runs",
            &[bar("1", 3, 1), bar("2", 2, 0), bar("3", 0, 0)],
        )
        .into_string();
        // 4 runs at most: the scale's top is 5.
        assert!(svg.contains(">5</text>"), "{svg}");
        let heights = attributes(&svg, "rect", "height");
        let plot = HEIGHT - TOP - BOTTOM;
        assert_eq!(
            heights,
            [
                coord_value(plot * 3.0 / 5.0),
                coord_value(plot / 5.0),
                coord_value(plot * 2.0 / 5.0)
            ]
        );
        assert!(svg.contains("6 runs from 1 to 3: 5 ok, 1 failed."), "{svg}");
        // The table lists the days that had runs.
        assert_eq!(svg.matches("<tr><td>").count(), 2, "{svg}");
    }

    #[test]
    fn a_version_change_is_labelled_at_the_new_version_s_first_run() {
        let line = score_line(
            "s",
            "Score",
            &[
                run(0, 400.0, 1, false),
                run(1, 500.0, 1, false),
                run(3, 800.0, 2, false),
            ],
            1000.0,
            &hours(0, 4),
        )
        .into_string();
        assert_eq!(
            line.matches("class=\"version-change\"").count(),
            1,
            "{line}"
        );
        assert!(line.contains("data-version=\"2\""), "{line}");
        assert!(line.contains(">v2</text>"), "{line}");
        let at_run = coord(LEFT + 4.0 + (WIDTH - LEFT - 8.0) * 3.0 / 4.0);
        assert!(line.contains(&format!("x1=\"{at_run}\"")), "{line}");
        assert!(line.contains("1 version change"), "{line}");
    }

    #[test]
    fn points_sit_where_their_time_is_so_a_quiet_stretch_shows() {
        // Two runs an hour apart, then one nine hours later: the gap is nine times as wide.
        let line = score_line(
            "s",
            "Score",
            &[
                run(0, 100.0, 1, false),
                run(1, 200.0, 1, false),
                run(10, 300.0, 1, false),
            ],
            1000.0,
            &hours(0, 10),
        )
        .into_string();
        let xs = attributes(&line, "circle", "cx");
        assert_eq!(xs.len(), 3);
        let (first_gap, second_gap) = (xs[1] - xs[0], xs[2] - xs[1]);
        assert!((second_gap / first_gap - 9.0).abs() < 0.1, "{xs:?}");
        assert!(
            line.contains(">h0</text>") && line.contains(">h10</text>"),
            "{line}"
        );
    }

    #[test]
    fn failed_runs_are_crosses_on_the_line_and_counted_in_words() {
        let line = score_line(
            "s",
            "Score",
            &[
                run(0, 600.0, 1, false),
                run(1, 550.0, 1, true),
                run(2, 500.0, 1, true),
            ],
            1000.0,
            &hours(0, 2),
        )
        .into_string();
        assert_eq!(
            line.matches("<path class=\"dot failed\"").count(),
            2,
            "{line}"
        );
        assert_eq!(line.matches("<circle class=\"dot\"").count(), 1, "{line}");
        assert!(line.contains("h1: v1, 550, failed"), "{line}");
        assert!(line.contains("2 failed runs"), "{line}");
        assert!(line.contains("<td>failed</td>"), "{line}");
    }

    fn timed(at_hours: i64, value: i64) -> TimedPoint {
        TimedPoint {
            at: at_hours * 3_600_000,
            label: format!("h{at_hours}"),
            value,
        }
    }

    #[test]
    fn an_amount_line_places_points_by_time_and_says_its_ends_and_extremes() {
        let line = amount_line(
            "w",
            "Coins",
            &[timed(0, 1_200), timed(1, 300), timed(4, 2_500_000)],
            "coins",
            &hours(0, 4),
        )
        .into_string();
        assert!(
            line.contains(
                "3 points from h0 to h4: 1,200 coins at first and 2,500,000 coins at last; \
                 lowest 300 coins, highest 2,500,000 coins."
            ),
            "{line}"
        );
        // The second point is a quarter of the way across: it came an hour after the first
        // of four.
        let xs = attributes(&line, "circle", "cx");
        assert_eq!(
            xs,
            [
                coord_value(LEFT),
                coord_value(LEFT + (NARROW - LEFT) / 4.0),
                coord_value(NARROW)
            ]
        );
        // 2.5M at most: the scale's top is 5M, written short.
        assert!(
            line.contains(">5M</text>") && line.contains(">2.5M</text>"),
            "{line}"
        );
        assert_eq!(line.matches("<tr><td>").count(), 3, "{line}");
        assert!(
            amount_line("w", "Coins", &[], "coins", &hours(0, 1))
                .into_string()
                .contains("nothing reported yet")
        );
    }

    #[test]
    fn nice_ceilings_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(f64::NAN), 1.0);
        assert_eq!(nice_ceiling(3.0), 5.0);
        assert_eq!(nice_ceiling(10.0), 10.0);
        assert_eq!(nice_ceiling(11.0), 20.0);
        assert_eq!(nice_ceiling(812.0), 1000.0);
    }

    proptest! {
        #[test]
        fn every_drawn_shape_stays_inside_the_chart(
            bars in proptest::collection::vec((0u64..10_000, 0u64..10_000), 1..60),
            values in proptest::collection::vec(-50.0f64..2000.0, 1..80),
        ) {
            let bars: Vec<Bar> = bars.iter().enumerate().map(|(i, (ok, failed))| bar(&i.to_string(), *ok, *failed)).collect();
            let svg = runs_bars("r", "Runs", &bars).into_string();
            for (y, h) in attributes(&svg, "rect", "y").iter().zip(attributes(&svg, "rect", "height")) {
                // Each coordinate is rounded to a tenth, so a sum may be off by two tenths.
                prop_assert!(*y >= TOP - 0.1 && y + h <= HEIGHT - BOTTOM + 0.2, "{y} {h}");
            }
            // Runs an hour apart, some before the axis starts or after it ends.
            let points: Vec<Point> = values
                .iter()
                .enumerate()
                .map(|(i, v)| run(i as i64 - 5, *v, 1 + i as i64 / 10, i % 3 == 0))
                .collect();
            let line = score_line("s", "Score", &points, 1000.0, &hours(0, 40)).into_string();
            for cy in attributes(&line, "circle", "cy") {
                prop_assert!((TOP - 0.1..=HEIGHT - BOTTOM + 0.1).contains(&cy), "{cy}");
            }
            for cx in attributes(&line, "circle", "cx") {
                prop_assert!((LEFT - 0.1..=WIDTH + 0.1).contains(&cx), "{cx}");
            }
        }
    }
}
