//! Did a skill's live revision do better than the one it replaced?
//!
//! `playbook_record` reports, for each skill, whether its live revision has done better or
//! worse than the revision before it, or whether it is too early to say. Each read of a skill is
//! either clean or ends in a correction reported against that revision, so the two revisions
//! make a 2×2 table of corrections and clean reads, and the question is whether the live row has
//! fewer (or more) corrections than chance would give. Fisher's exact test answers exactly that,
//! and stays exact for the small counts a new revision starts with, where a chi-squared
//! approximation would not.
//!
//! It is written by hand: a hypergeometric sum over log-factorials is about thirty lines, while
//! the statistics crates that offer it pull in linear algebra and much more for it.
//!
//! Architecture invariant: everything here is pure and never panics on any input.

/// A 2×2 table of reads: the live revision's row, then the previous revision's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Table {
    /// Reads of the live revision that ended in a reported correction.
    pub(crate) a: u64,
    /// Clean reads of the live revision.
    pub(crate) b: u64,
    /// Reads of the previous revision that ended in a reported correction.
    pub(crate) c: u64,
    /// Clean reads of the previous revision.
    pub(crate) d: u64,
}

/// The three p-values of Fisher's exact test on a [`Table`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FisherResult {
    /// The probability, with the margins fixed, of a table at most as likely as the observed
    /// one.
    pub(crate) p_two_sided: f64,
    /// The lower tail of `a`: small when the live revision has fewer corrections than chance
    /// would give it.
    pub(crate) p_less: f64,
    /// The upper tail of `a`: small when the live revision has more corrections than chance
    /// would give it.
    pub(crate) p_greater: f64,
}

/// What the record says about the live revision against the one it replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The live revision has significantly fewer corrections per read.
    Better,
    /// The live revision has significantly more corrections per read.
    Worse,
    /// Both revisions have enough reads, and the difference could be chance.
    NoClearDifference,
    /// One of the revisions has fewer than [`MIN_READS`] reads.
    TooEarly,
}

impl Verdict {
    /// The verdict as a report writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoClearDifference => "no clear difference",
            Verdict::TooEarly => "too early to say",
        }
    }
}

/// A verdict with the evidence for it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub verdict: Verdict,
    /// The one-sided p-value behind the verdict; `None` when it is too early to test.
    pub p_value: Option<f64>,
    /// The name of the test, for the report: always [`TEST`].
    pub test: &'static str,
}

/// The test a [`Comparison`] names.
pub(crate) const TEST: &str = "Fisher's exact test, one-sided, on corrections per read";

/// How many reads each revision needs before anything is said about it.
pub const MIN_READS: u64 = 5;

/// The p-value below which a difference is reported as better or worse.
pub(crate) const SIGNIFICANCE: f64 = 0.05;

/// How much more likely than the observed table another table may be and still count as "at
/// most as likely" for the two-sided test, so rounding cannot split tables that tie exactly.
const TIE_TOLERANCE: f64 = 1e-7;

/// A table whose weight, relative to the most likely one, is below `exp(CUTOFF)` rounds to zero
/// in `f64`, and so does every table further out, so the sums stop there.
const CUTOFF: f64 = -750.0;

/// The most tables summed on each side of the most likely one. With counts up to about 10^9
/// the cutoff is reached long before this; the cap only keeps absurd counts bounded in time.
const MAX_STEPS: u128 = 1 << 20;

/// Below this, `ln n!` is computed from the product itself; from it on, Stirling's series is
/// accurate to the last bit.
const STIRLING_FROM: u128 = 32;

/// Fisher's exact test on a 2×2 table.
///
/// With the row and column totals fixed, `a` follows a hypergeometric distribution. The
/// one-sided p-values are its two tails at `a` (both include `a` itself, so they add up to at
/// least 1); the two-sided p-value sums every table no more likely than the observed one, with a
/// relative tolerance of 1e-7 for ties, as scipy's `fisher_exact` does.
///
/// Each table's probability comes from log-factorials taken relative to the most likely table,
/// so nothing overflows, and the sums are compensated, so they stay accurate for counts up to
/// 10^6 and beyond. Every p-value is clamped to [0, 1].
pub(crate) fn fisher_exact(t: Table) -> FisherResult {
    let (a, b, c, d) = (
        u128::from(t.a),
        u128::from(t.b),
        u128::from(t.c),
        u128::from(t.d),
    );
    let (live, previous, corrections) = (a + b, c + d, a + c);
    let total = live + previous;
    // The smallest and largest `a` the margins allow; the observed `a` lies between them.
    let lowest = corrections.saturating_sub(previous);
    let highest = live.min(corrections);
    // The log of a table's probability, less the constant that every table shares.
    let log_weight = |x: u128| {
        -(ln_factorial(x)
            + ln_factorial(live - x)
            + ln_factorial(corrections - x)
            + ln_factorial(previous + x - corrections))
    };
    // The hypergeometric mode, floor((live + 1)(corrections + 1) / (total + 2)). It is taken in
    // floating point so the product cannot overflow; a mode off by one for enormous counts
    // only makes the most likely weight slightly above 1, which the sums do not mind.
    let mode = ((live as f64 + 1.0) * (corrections as f64 + 1.0) / (total as f64 + 2.0)).floor();
    let mode = (mode as u128).clamp(lowest, highest);
    let peak = log_weight(mode);
    let observed = (log_weight(a) - peak).exp();
    let tie = observed * (1.0 + TIE_TOLERANCE);

    let (mut all, mut less, mut greater, mut two_sided) = (
        Sum::default(),
        Sum::default(),
        Sum::default(),
        Sum::default(),
    );
    let mut add = |x: u128| {
        // In exact arithmetic no table outweighs the mode; rounding (which only matters for
        // absurd counts) must not let one overflow the sums.
        let log_relative = (log_weight(x) - peak).min(0.0);
        if log_relative < CUTOFF {
            return false;
        }
        let weight = log_relative.exp();
        all.add(weight);
        if x <= a {
            less.add(weight);
        }
        if x >= a {
            greater.add(weight);
        }
        if weight <= tie {
            two_sided.add(weight);
        }
        true
    };
    // The distribution is unimodal, so walking out from the mode on each side passes every
    // table that is not negligible before the first one that is.
    let mut x = mode;
    while add(x) && x > lowest && mode - x < MAX_STEPS {
        x -= 1;
    }
    let mut x = mode;
    while x < highest && x - mode < MAX_STEPS {
        x += 1;
        if !add(x) {
            break;
        }
    }

    // The mode's weight is 1, so the total is at least 1 and the divisions are safe.
    let all = all.value();
    let p = |sum: Sum| (sum.value() / all).clamp(0.0, 1.0);
    FisherResult {
        p_two_sided: p(two_sided),
        p_less: p(less),
        p_greater: p(greater),
    }
}

/// Compares the live revision of a skill with the revision it replaced, from each one's reads
/// and the corrections reported against it.
///
/// A revision's corrections are assumed to be at most its reads, and are clamped to them if
/// not. When either revision has fewer than [`MIN_READS`] reads it is too early to say
/// anything. Otherwise the live revision is better when it has fewer corrections per read than
/// chance would give (one-sided p below [`SIGNIFICANCE`]), worse when it has more, and
/// otherwise there is no clear difference, with the smaller one-sided p-value as the evidence.
pub fn compare_revisions(
    live_reads: u64,
    live_corrections: u64,
    previous_reads: u64,
    previous_corrections: u64,
) -> Comparison {
    if live_reads < MIN_READS || previous_reads < MIN_READS {
        return Comparison {
            verdict: Verdict::TooEarly,
            p_value: None,
            test: TEST,
        };
    }
    let live_corrections = live_corrections.min(live_reads);
    let previous_corrections = previous_corrections.min(previous_reads);
    let result = fisher_exact(Table {
        a: live_corrections,
        b: live_reads - live_corrections,
        c: previous_corrections,
        d: previous_reads - previous_corrections,
    });
    let (verdict, p_value) = if result.p_less < SIGNIFICANCE {
        (Verdict::Better, result.p_less)
    } else if result.p_greater < SIGNIFICANCE {
        (Verdict::Worse, result.p_greater)
    } else {
        (
            Verdict::NoClearDifference,
            result.p_less.min(result.p_greater),
        )
    };
    Comparison {
        verdict,
        p_value: Some(p_value),
        test: TEST,
    }
}

/// `ln n!`: the product itself for small `n`, Stirling's series with four correction terms
/// from [`STIRLING_FROM`] on, where the first term left out is below 1e-16.
fn ln_factorial(n: u128) -> f64 {
    if n < STIRLING_FROM {
        // Every product up to 31! is within f64's range, and rounds at most a few times.
        return (2..=n).fold(1.0_f64, |product, k| product * k as f64).ln();
    }
    let n = n as f64;
    let (inverse, inverse_squared) = (1.0 / n, 1.0 / (n * n));
    let correction = inverse
        * (1.0 / 12.0
            - inverse_squared
                * (1.0 / 360.0 - inverse_squared * (1.0 / 1260.0 - inverse_squared / 1680.0)));
    n * n.ln() - n + 0.5 * (std::f64::consts::TAU * n).ln() + correction
}

/// A compensated (Neumaier) sum, so tens of thousands of small terms added to a large one lose
/// nothing.
#[derive(Debug, Clone, Copy, Default)]
struct Sum {
    sum: f64,
    compensation: f64,
}

impl Sum {
    fn add(&mut self, term: f64) {
        let next = self.sum + term;
        if self.sum.abs() >= term.abs() {
            self.compensation += (self.sum - next) + term;
        } else {
            self.compensation += (term - next) + self.sum;
        }
        self.sum = next;
    }

    fn value(self) -> f64 {
        self.sum + self.compensation
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn table(a: u64, b: u64, c: u64, d: u64) -> Table {
        Table { a, b, c, d }
    }

    /// Asserts that `got` is within a relative 1e-9 of `want` (or 1e-300 absolutely).
    fn close(got: f64, want: f64, what: &str) {
        let tolerance = (want.abs() * 1e-9).max(1e-300);
        assert!(
            (got - want).abs() <= tolerance,
            "{what}: got {got:e}, want {want:e}"
        );
    }

    /// Asserts all three p-values against scipy.stats.fisher_exact (scipy 1.17.1).
    fn matches_scipy(t: Table, two_sided: f64, less: f64, greater: f64) {
        let result = fisher_exact(t);
        close(result.p_two_sided, two_sided, &format!("{t:?} two-sided"));
        close(result.p_less, less, &format!("{t:?} less"));
        close(result.p_greater, greater, &format!("{t:?} greater"));
    }

    /// The same test done the obvious way, with exact integer binomial coefficients, for
    /// tables small enough that they fit.
    fn naive(t: Table) -> FisherResult {
        fn choose(n: u128, k: u128) -> u128 {
            (0..k).fold(1, |product, i| product * (n - i) / (i + 1))
        }
        let (a, b, c, d) = (
            u128::from(t.a),
            u128::from(t.b),
            u128::from(t.c),
            u128::from(t.d),
        );
        let (live, previous, corrections) = (a + b, c + d, a + c);
        let weight = |x: u128| (choose(live, x) * choose(previous, corrections - x)) as f64;
        let xs = corrections.saturating_sub(previous)..=live.min(corrections);
        let all: f64 = xs.clone().map(weight).sum();
        let tie = weight(a) * (1.0 + TIE_TOLERANCE);
        FisherResult {
            p_two_sided: xs.clone().map(weight).filter(|w| *w <= tie).sum::<f64>() / all,
            p_less: xs.clone().filter(|x| *x <= a).map(weight).sum::<f64>() / all,
            p_greater: xs.filter(|x| *x >= a).map(weight).sum::<f64>() / all,
        }
    }

    #[test]
    fn the_tea_tasting_table_matches_scipy() {
        matches_scipy(
            table(3, 1, 1, 3),
            0.48571428571428565,
            0.9857142857142858,
            0.24285714285714283,
        );
    }

    #[test]
    fn a_lopsided_small_table_matches_scipy() {
        matches_scipy(
            table(1, 9, 11, 3),
            0.0027594561852200836,
            0.0013797280926100418,
            0.9999663480953022,
        );
        matches_scipy(
            table(2, 8, 7, 3),
            0.06977851869492736,
            0.03488925934746368,
            0.9972612526792093,
        );
        matches_scipy(
            table(20, 30, 40, 10),
            8.30865870623915e-05,
            4.154329353119575e-05,
            0.999993675397855,
        );
    }

    #[test]
    fn tables_at_the_edge_of_their_margins_match_scipy() {
        matches_scipy(
            table(0, 5, 5, 0),
            0.007936507936507938,
            0.003968253968253969,
            1.0,
        );
        matches_scipy(
            table(5, 0, 0, 5),
            0.007936507936507938,
            1.0,
            0.003968253968253969,
        );
        matches_scipy(
            table(10, 0, 0, 10),
            1.082508822446903e-05,
            1.0,
            5.412544112234515e-06,
        );
        matches_scipy(
            table(0, 10, 6, 4),
            0.010835913312693497,
            0.0054179566563467485,
            1.0,
        );
        matches_scipy(
            table(0, 5, 4, 1),
            0.04761904761904762,
            0.02380952380952381,
            1.0,
        );
    }

    #[test]
    fn identical_rows_match_scipy() {
        matches_scipy(table(1, 9, 1, 9), 1.0, 0.763157894736842, 0.763157894736842);
        matches_scipy(
            table(3, 2, 1, 4),
            0.5238095238095238,
            0.9761904761904762,
            0.2619047619047619,
        );
    }

    #[test]
    fn large_counts_match_scipy() {
        matches_scipy(
            table(500, 500, 400, 600),
            8.453719674485626e-06,
            0.9999972334285216,
            4.226859837242813e-06,
        );
        matches_scipy(
            table(100_000, 900_000, 101_000, 899_000),
            0.018800806211350142,
            0.009400403105675071,
            0.9907177113187661,
        );
    }

    #[test]
    fn an_empty_table_is_certain() {
        let result = fisher_exact(table(0, 0, 0, 0));
        assert_eq!(
            result,
            FisherResult {
                p_two_sided: 1.0,
                p_less: 1.0,
                p_greater: 1.0
            }
        );
    }

    #[test]
    fn absurd_counts_stay_finite_and_bounded() {
        for t in [
            table(u64::MAX, u64::MAX, u64::MAX, u64::MAX),
            table(u64::MAX, 0, 0, u64::MAX),
            table(1 << 40, 1 << 41, 1 << 40, 1 << 39),
        ] {
            let result = fisher_exact(t);
            for p in [result.p_two_sided, result.p_less, result.p_greater] {
                assert!((0.0..=1.0).contains(&p), "{t:?}: {result:?}");
            }
        }
    }

    #[test]
    fn ln_factorial_is_exact_on_both_sides_of_the_switch() {
        let mut exact = 0.0_f64;
        for n in 1..=200_u128 {
            exact += (n as f64).ln();
            let got = ln_factorial(n);
            assert!(
                (got - exact).abs() <= 1e-12 * exact.max(1.0),
                "{n}: {got} vs {exact}"
            );
        }
        assert_eq!(ln_factorial(0), 0.0);
    }

    #[test]
    fn too_few_reads_on_either_side_is_too_early() {
        for (live, previous) in [(0, 0), (4, 100), (100, 4), (MIN_READS - 1, MIN_READS)] {
            let comparison = compare_revisions(live, 0, previous, previous);
            assert_eq!(comparison.verdict, Verdict::TooEarly, "{live} {previous}");
            assert_eq!(comparison.p_value, None);
            assert_eq!(comparison.test, TEST);
        }
    }

    #[test]
    fn fewer_corrections_on_the_live_revision_is_better() {
        let comparison = compare_revisions(20, 0, 20, 10);
        assert_eq!(comparison.verdict, Verdict::Better);
        let p = comparison.p_value.expect("tested");
        assert!(p < SIGNIFICANCE, "{p}");
        close(p, fisher_exact(table(0, 20, 10, 10)).p_less, "p");
        assert_eq!(
            comparison.test,
            "Fisher's exact test, one-sided, on corrections per read"
        );
    }

    #[test]
    fn more_corrections_on_the_live_revision_is_worse() {
        let comparison = compare_revisions(20, 10, 20, 0);
        assert_eq!(comparison.verdict, Verdict::Worse);
        let p = comparison.p_value.expect("tested");
        close(p, fisher_exact(table(10, 10, 0, 20)).p_greater, "p");
    }

    #[test]
    fn a_small_difference_is_no_clear_difference() {
        let comparison = compare_revisions(10, 2, 10, 3);
        assert_eq!(comparison.verdict, Verdict::NoClearDifference);
        let result = fisher_exact(table(2, 8, 3, 7));
        close(
            comparison.p_value.expect("tested"),
            result.p_less.min(result.p_greater),
            "p",
        );
        let clean = compare_revisions(MIN_READS, 0, MIN_READS, 0);
        assert_eq!(clean.verdict, Verdict::NoClearDifference);
        assert_eq!(clean.p_value, Some(1.0));
    }

    #[test]
    fn the_threshold_cases_from_scipy_fall_on_the_right_side() {
        // [[0, 5], [4, 1]]: one-sided 0.0238, so five clean reads beat four corrections in five.
        assert_eq!(compare_revisions(5, 0, 5, 4).verdict, Verdict::Better);
        // [[0, 5], [3, 2]]: one-sided 0.0833, so three in five is not yet enough.
        assert_eq!(
            compare_revisions(5, 0, 5, 3).verdict,
            Verdict::NoClearDifference
        );
    }

    #[test]
    fn corrections_above_reads_are_clamped() {
        assert_eq!(
            compare_revisions(10, 50, 10, 0),
            compare_revisions(10, 10, 10, 0)
        );
        assert_eq!(compare_revisions(10, 50, 10, 0).verdict, Verdict::Worse);
    }

    fn small() -> impl Strategy<Value = u64> {
        0_u64..40
    }

    proptest! {
        #[test]
        fn p_values_are_probabilities_whose_tails_overlap(
            a in small(), b in small(), c in small(), d in small()
        ) {
            let result = fisher_exact(table(a, b, c, d));
            for p in [result.p_two_sided, result.p_less, result.p_greater] {
                prop_assert!((0.0..=1.0).contains(&p), "{result:?}");
            }
            prop_assert!(result.p_less + result.p_greater >= 1.0 - 1e-9, "{result:?}");
            // The tail on the far side of the mode is part of the two-sided sum.
            prop_assert!(
                result.p_two_sided >= result.p_less.min(result.p_greater) - 1e-12,
                "{result:?}"
            );
        }

        #[test]
        fn swapping_the_rows_swaps_less_and_greater(
            a in 0_u64..3000, b in 0_u64..3000, c in 0_u64..3000, d in 0_u64..3000
        ) {
            let result = fisher_exact(table(a, b, c, d));
            let swapped = fisher_exact(table(c, d, a, b));
            let near = |x: f64, y: f64| (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1e-290);
            prop_assert!(near(result.p_less, swapped.p_greater), "{result:?} {swapped:?}");
            prop_assert!(near(result.p_greater, swapped.p_less), "{result:?} {swapped:?}");
            prop_assert!(near(result.p_two_sided, swapped.p_two_sided), "{result:?} {swapped:?}");
        }

        #[test]
        fn small_tables_agree_with_exact_binomials(
            a in 0_u64..16, b in 0_u64..16, c in 0_u64..16, d in 0_u64..16
        ) {
            let t = table(a, b, c, d);
            let (got, want) = (fisher_exact(t), naive(t));
            let near = |x: f64, y: f64| (x - y).abs() <= 1e-10 * y.max(1e-300);
            prop_assert!(near(got.p_less, want.p_less), "{got:?} {want:?}");
            prop_assert!(near(got.p_greater, want.p_greater), "{got:?} {want:?}");
            prop_assert!(near(got.p_two_sided, want.p_two_sided), "{got:?} {want:?}");
        }

        #[test]
        fn a_verdict_is_backed_by_its_p_value(
            live in 0_u64..60,
            live_bad in 0_u64..60,
            previous in 0_u64..60,
            previous_bad in 0_u64..60,
        ) {
            let comparison = compare_revisions(live, live_bad, previous, previous_bad);
            match comparison.verdict {
                Verdict::TooEarly => {
                    prop_assert!(live < MIN_READS || previous < MIN_READS);
                    prop_assert_eq!(comparison.p_value, None);
                }
                Verdict::Better | Verdict::Worse => {
                    prop_assert!(comparison.p_value.expect("tested") < SIGNIFICANCE);
                }
                Verdict::NoClearDifference => {
                    prop_assert!(comparison.p_value.expect("tested") >= SIGNIFICANCE);
                }
            }
        }
    }
}
