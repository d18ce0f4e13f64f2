//! The time a chart covers, as the owner picks it: the last 24 hours, 7 days, 30 days or all
//! of it (`?range=24h|7d|30d|all`), and the picker that links between them.
//!
//! A chart's horizontal axis is time: a range fixes its two ends (its start and now), so a
//! quiet week shows as a gap, and the runs bars are buckets of equal time (hours over 24 h,
//! days over 7 and 30 days, days or weeks over all of it).

use mindrune_store::{DAY_MILLIS, Millis};

use crate::charts::Bar;
use crate::html::{Markup, html};

const HOUR_MILLIS: Millis = 3_600_000;
/// Over "all", more days than this are drawn a week to a bar, so the bars stay wide enough to
/// see and to point at.
const MOST_DAY_BARS: i64 = 90;

/// The time a chart covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChartRange {
    Day,
    Week,
    Month,
    All,
}

impl ChartRange {
    /// Every range, in the picker's order.
    pub(crate) const ALL: [ChartRange; 4] = [
        ChartRange::Day,
        ChartRange::Week,
        ChartRange::Month,
        ChartRange::All,
    ];

    /// The range an address asks for (`None` or empty: `default`), or what is wrong, in words.
    pub(crate) fn parse(
        text: Option<&str>,
        default: ChartRange,
    ) -> Result<ChartRange, &'static str> {
        match text.map(str::trim) {
            None | Some("") => Ok(default),
            Some("24h") => Ok(ChartRange::Day),
            Some("7d") => Ok(ChartRange::Week),
            Some("30d") => Ok(ChartRange::Month),
            Some("all") => Ok(ChartRange::All),
            Some(_) => Err("`range` is 24h, 7d, 30d or all."),
        }
    }

    /// The range as its address writes it.
    pub(crate) fn query(self) -> &'static str {
        match self {
            ChartRange::Day => "24h",
            ChartRange::Week => "7d",
            ChartRange::Month => "30d",
            ChartRange::All => "all",
        }
    }

    /// The range as the picker says it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ChartRange::Day => "24 h",
            ChartRange::Week => "7 days",
            ChartRange::Month => "30 days",
            ChartRange::All => "All",
        }
    }

    /// The range in a sentence: "the last 7 days", "all the time there is".
    pub(crate) fn words(self) -> &'static str {
        match self {
            ChartRange::Day => "the last 24 hours",
            ChartRange::Week => "the last 7 days",
            ChartRange::Month => "the last 30 days",
            ChartRange::All => "all the time there is",
        }
    }

    /// Where the range starts at `now`; `first` is the oldest thing there is to draw, the
    /// start of "all" (now itself when there is nothing).
    pub(crate) fn start(self, now: Millis, first: Option<Millis>) -> Millis {
        match self {
            ChartRange::Day => now - DAY_MILLIS,
            ChartRange::Week => now - 7 * DAY_MILLIS,
            ChartRange::Month => now - 30 * DAY_MILLIS,
            ChartRange::All => first.unwrap_or(now).min(now),
        }
    }

    /// The buckets of a runs chart over this range, oldest first, each `[from, to)` with its
    /// label: 24 hours over 24 h; whole UTC days over 7 and 30 days (today the last); over all
    /// of it days from the first run's day, or weeks past [`MOST_DAY_BARS`] days.
    pub(crate) fn buckets(self, now: Millis, first: Option<Millis>) -> Vec<Bucket> {
        match self {
            ChartRange::Day => {
                let this_hour = now.div_euclid(HOUR_MILLIS);
                (this_hour - 23..=this_hour)
                    .map(|hour| Bucket {
                        from: hour * HOUR_MILLIS,
                        to: (hour + 1) * HOUR_MILLIS,
                        label: hour_label(hour * HOUR_MILLIS),
                    })
                    .collect()
            }
            ChartRange::Week => days(now, 7, 1),
            ChartRange::Month => days(now, 30, 1),
            ChartRange::All => {
                let today = now.div_euclid(DAY_MILLIS);
                let first_day = first
                    .map_or(today, |at| at.div_euclid(DAY_MILLIS))
                    .min(today);
                let span = today - first_day + 1;
                if span > MOST_DAY_BARS {
                    days(now, span, 7)
                } else {
                    days(now, span, 1)
                }
            }
        }
    }
}

/// `count` days up to today in bars of `per_bar` days, the last bar ending with today.
fn days(now: Millis, count: i64, per_bar: i64) -> Vec<Bucket> {
    let today = now.div_euclid(DAY_MILLIS);
    let bars = (count + per_bar - 1) / per_bar;
    (0..bars)
        .rev()
        .map(|back| {
            let last_day = today - back * per_bar;
            let first_day = last_day - per_bar + 1;
            Bucket {
                from: first_day * DAY_MILLIS,
                to: (last_day + 1) * DAY_MILLIS,
                label: if per_bar == 1 {
                    day_label(first_day * DAY_MILLIS)
                } else {
                    format!("week of {}", day_label(first_day * DAY_MILLIS))
                },
            }
        })
        .collect()
}

/// A stretch of a runs chart: runs with `from <= at < to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub(crate) from: Millis,
    pub(crate) to: Millis,
    pub(crate) label: String,
}

/// The family's runs over `range` as bars of equal time, and what one bar is (`hour`, `day`,
/// `week`): hours are counted with [`Store::runs_between`](mindrune_store::Store), days and
/// weeks from the runs per day.
pub(crate) fn family_runs(
    store: &dyn mindrune_store::Store,
    owner: mindrune_store::OwnerId,
    range: ChartRange,
    now: Millis,
) -> Result<(Vec<Bar>, &'static str), mindrune_store::StoreError> {
    let bar = |bucket: Bucket, (ok, failed): (i64, i64)| Bar {
        label: bucket.label,
        ok: u64::try_from(ok).unwrap_or(0),
        failed: u64::try_from(failed).unwrap_or(0),
    };
    if range == ChartRange::Day {
        let mut bars = Vec::with_capacity(24);
        for bucket in range.buckets(now, None) {
            let counts = store
                .runs_between(owner, bucket.from, bucket.to)?
                .iter()
                .fold((0, 0), |(ok, failed), r| (ok + r.ok, failed + r.failed));
            bars.push(bar(bucket, counts));
        }
        return Ok((bars, "hour"));
    }
    let since = match range {
        ChartRange::All => 0,
        _ => range.start(now, None).div_euclid(DAY_MILLIS) * DAY_MILLIS,
    };
    let per_day = store.runs_per_day(owner, since)?;
    let first = per_day.iter().map(|d| d.day * DAY_MILLIS).min();
    let buckets = range.buckets(now, first);
    let unit = match buckets.first() {
        Some(b) if b.to - b.from > DAY_MILLIS => "week",
        _ => "day",
    };
    let bars = buckets
        .into_iter()
        .map(|bucket| {
            let counts = per_day
                .iter()
                .filter(|d| (bucket.from..bucket.to).contains(&(d.day * DAY_MILLIS)))
                .fold((0, 0), |(ok, failed), d| (ok + d.ok, failed + d.failed));
            bar(bucket, counts)
        })
        .collect();
    Ok((bars, unit))
}

/// `2025-06-01`: the day `at` falls on.
fn day_label(at: Millis) -> String {
    crate::scripts::day_label(at.div_euclid(DAY_MILLIS))
}

/// `2025-06-01 14:00`.
fn hour_label(at: Millis) -> String {
    crate::html::when(Some(at))
}

/// A page's `?range=` (the other parameters of its address are read elsewhere).
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct RangeQuery {
    #[serde(default)]
    pub(crate) range: Option<String>,
}

impl RangeQuery {
    /// The range a page's address asks for (`default` when none), or the page that says what
    /// is wrong with it, 400, with a way `back`.
    pub(crate) fn read(
        query: Result<axum::extract::Query<RangeQuery>, axum::extract::rejection::QueryRejection>,
        default: ChartRange,
        back: (&str, &str),
    ) -> Result<ChartRange, Box<axum::response::Response>> {
        let problem = match query {
            Ok(axum::extract::Query(q)) => match ChartRange::parse(q.range.as_deref(), default) {
                Ok(range) => return Ok(range),
                Err(problem) => problem,
            },
            Err(_) => {
                "The address's query could not be read; pick the chart's time with its links."
            }
        };
        Err(Box::new(crate::html::error_page(
            axum::http::StatusCode::BAD_REQUEST,
            problem,
            back,
        )))
    }
}

/// The picker: a link per range to `href` with `range=` set (`href` may hold a query already),
/// the current one marked; `anchor` brings the chart back into view.
pub(crate) fn picker(current: ChartRange, href: &str, anchor: &str) -> Markup {
    let joiner = if href.contains('?') { "&" } else { "?" };
    html! {
        nav.range-picker aria-label="Time the chart covers" { ul {
            @for range in ChartRange::ALL {
                li { a href={ (href) (joiner) "range=" (range.query()) "#" (anchor) }
                    aria-current=[(range == current).then_some("true")] { (range.label()) } }
            }
        } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Millis = 20_000 * DAY_MILLIS + 14 * HOUR_MILLIS + 5 * 60_000;

    #[test]
    fn an_address_names_one_of_four_ranges_or_is_refused() {
        assert_eq!(
            ChartRange::parse(None, ChartRange::Month),
            Ok(ChartRange::Month)
        );
        assert_eq!(
            ChartRange::parse(Some(""), ChartRange::All),
            Ok(ChartRange::All)
        );
        for range in ChartRange::ALL {
            assert_eq!(
                ChartRange::parse(Some(range.query()), ChartRange::Day),
                Ok(range)
            );
        }
        assert!(ChartRange::parse(Some("1y"), ChartRange::Day).is_err());
    }

    #[test]
    fn twenty_four_hours_are_hour_bars_ending_with_this_hour() {
        let buckets = ChartRange::Day.buckets(NOW, None);
        assert_eq!(buckets.len(), 24);
        assert!(buckets[23].from <= NOW && NOW < buckets[23].to);
        assert!(buckets.windows(2).all(|w| w[0].to == w[1].from));
        assert!(
            buckets[23].label.ends_with("14:00"),
            "{}",
            buckets[23].label
        );
    }

    #[test]
    fn seven_and_thirty_days_are_day_bars_ending_today() {
        let week = ChartRange::Week.buckets(NOW, None);
        assert_eq!(week.len(), 7);
        assert_eq!(week[6].from, 20_000 * DAY_MILLIS);
        assert_eq!(ChartRange::Month.buckets(NOW, None).len(), 30);
    }

    #[test]
    fn all_of_it_starts_at_the_first_run_and_turns_to_weeks_past_ninety_days() {
        let ten_days = ChartRange::All.buckets(NOW, Some(NOW - 9 * DAY_MILLIS));
        assert_eq!(ten_days.len(), 10);
        let year = ChartRange::All.buckets(NOW, Some(NOW - 364 * DAY_MILLIS));
        assert_eq!(year.len(), 53);
        assert!(year[0].label.starts_with("week of "));
        assert!(year[0].from <= NOW - 364 * DAY_MILLIS);
        assert!(year.windows(2).all(|w| w[0].to == w[1].from));
        assert_eq!(ChartRange::All.buckets(NOW, None).len(), 1);
    }

    #[test]
    fn the_picker_marks_the_current_range_and_keeps_the_query() {
        let html = picker(
            ChartRange::Week,
            "/dashboard/skills/3?result=failed",
            "score",
        )
        .into_string();
        assert!(html.contains(
            "<a href=\"/dashboard/skills/3?result=failed&amp;range=7d#score\" aria-current=\"true\">7 days</a>"
        ));
        assert_eq!(html.matches("<a ").count(), 4);
        assert!(
            picker(ChartRange::All, "/dashboard", "runs")
                .into_string()
                .contains("/dashboard?range=24h#runs")
        );
    }
}
