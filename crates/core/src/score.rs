//! The 0–1000 skill score: one pure implementation used by every face.
//!
//! A skill version's score is recomputed after every recorded use from its newest [`WINDOW`]
//! uses. It is the sum of five KPIs (reliability 450, effectiveness 250, confidence 150,
//! freshness 100, damage 50), blended with the inherited score of the version's parent while
//! the version has few uses of its own. Everything here is a pure function of its input: "now"
//! is the newest use's timestamp, never the clock, so every face computes the same number.

use std::collections::BTreeMap;

// ---------------------------------------------------------------------------------------------
// Weights and constants. They live here and nowhere else, so a change is one edit.
// ---------------------------------------------------------------------------------------------

/// The most uses a score looks at: the version's newest 200. Older uses are ignored, so a skill
/// that got better is not held back by its distant past.
pub const WINDOW: usize = 200;
/// The highest score; own score and total are clamped to `0..=SCORE_MAX`.
pub(crate) const SCORE_MAX: f64 = 1000.0;

/// Points for reliability: the Wilson lower bound of the success rate.
pub(crate) const RELIABILITY_POINTS: f64 = 450.0;
/// Points for effectiveness: result per minute against a reference rate.
pub(crate) const EFFECTIVENESS_POINTS: f64 = 250.0;
/// Points for confidence: how many uses, and how many avatars succeeded with the skill.
pub(crate) const CONFIDENCE_POINTS: f64 = 150.0;
/// Points for freshness: a success rate that favours recent uses.
pub(crate) const FRESHNESS_POINTS: f64 = 100.0;
/// Points for doing no damage: no deaths, no getting stuck, no lost items.
pub(crate) const DAMAGE_POINTS: f64 = 50.0;

/// The normal quantile of the Wilson interval: 1.96 is the two-sided 95 % bound.
pub(crate) const WILSON_Z: f64 = 1.96;

/// The rate ratio (own / reference) that earns all effectiveness points; a ratio of 1 (as good
/// as the reference) earns two thirds of them.
pub(crate) const EFFECTIVENESS_FULL_RATIO: f64 = 1.5;
/// How many of the newest uses are compared with the whole window when there is no peer
/// median, so a slowdown shows.
pub(crate) const RECENT_USES: usize = 10;
/// How many uses a family skill needs before its rate counts towards a peer median (applied by
/// the caller that computes `peer_median_rate`; see [`peer_median_rate`]).
pub const PEER_MIN_USES: usize = 3;
/// How many distinct skill or item names [`score`] remembers the slug match of while it walks
/// the window (an implementation detail: it changes speed, never the result).
const NAME_CACHE_SIZE: usize = 8;
/// Milliseconds in a minute: rates are per minute of run time.
pub(crate) const MS_PER_MINUTE: f64 = 60_000.0;

/// The number of uses at which the use-count part of confidence is full (log-scaled, so the
/// first uses count most).
pub(crate) const CONFIDENCE_FULL_USES: f64 = 50.0;
/// The share of confidence that comes from the number of uses.
pub(crate) const CONFIDENCE_USES_SHARE: f64 = 0.6;
/// The number of distinct agents with a successful use at which family consensus is full.
pub(crate) const CONFIDENCE_FULL_AGENTS: usize = 3;
/// The share of confidence that comes from family consensus (distinct agents with a success).
pub(crate) const CONFIDENCE_AGENTS_SHARE: f64 = 0.4;

/// A use's freshness weight halves every this many days of age.
pub(crate) const FRESHNESS_HALF_LIFE_DAYS: f64 = 7.0;
/// A use's freshness weight halves for every this many newer uses.
pub(crate) const FRESHNESS_HALF_LIFE_USES: f64 = 20.0;
/// The neutral prior success rate freshness drifts back to when the records are old.
pub(crate) const FRESHNESS_PRIOR: f64 = 0.5;
/// The weight of the neutral prior, in uses of full weight.
pub(crate) const FRESHNESS_PRIOR_WEIGHT: f64 = 1.0;
/// Seconds in a day, to turn timestamps into ages in days.
pub(crate) const SECONDS_PER_DAY: f64 = 86_400.0;

/// Damage for each death in a use.
pub(crate) const DAMAGE_PER_DEATH: f64 = 1.0;
/// Damage for a use that got stuck.
pub(crate) const DAMAGE_STUCK: f64 = 0.5;
/// Damage for losing a full backpack; fewer lost items count pro rata.
pub(crate) const DAMAGE_FULL_BACKPACK: f64 = 0.5;
/// Slots in a backpack: losing this many items is a full backpack.
pub(crate) const BACKPACK_SLOTS: f64 = 28.0;
/// The most damage one use can count, so a single disaster does not outweigh everything else.
pub(crate) const DAMAGE_MAX_PER_USE: f64 = 1.0;

/// A new version starts at this share of its parent's score (see [`inherited_from_parent`]).
pub(crate) const INHERIT_FACTOR: f64 = 0.9;
/// The inherited score weighs as much as this many own uses: with n own uses the total is
/// `n/(n+5)` own score plus `5/(n+5)` inherited.
pub(crate) const INHERIT_WEIGHT_USES: f64 = 5.0;

/// Standard sharing bar: a headed script is shared after this many runs of its current version…
pub(crate) const SHARE_BAR_RUNS: usize = 5;
/// …with at least this score.
pub(crate) const SHARE_BAR_SCORE: f64 = 600.0;
/// Eager family sharing's bar: this many runs of the current version…
pub(crate) const EAGER_SHARE_BAR_RUNS: usize = 3;
/// …with at least this score.
pub(crate) const EAGER_SHARE_BAR_SCORE: f64 = 500.0;

// ---------------------------------------------------------------------------------------------
// Inputs.
// ---------------------------------------------------------------------------------------------

/// One recorded use, as the score needs it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct UseSample {
    /// When the use happened, in unix seconds.
    pub at: i64,
    pub ok: bool,
    /// The agent (avatar) that ran it, for family consensus.
    pub agent: i64,
    pub duration_ms: u64,
    /// Skill name as printed by rs-sdk ("Woodcutting") → XP gained.
    #[serde(default)]
    pub xp: BTreeMap<String, f64>,
    /// Item name ("Iron ore") → count gained.
    #[serde(default)]
    pub items: BTreeMap<String, f64>,
    /// Progress on a goal or quest in `0..=1`; 0 when unknown.
    #[serde(default)]
    pub goal_progress: f64,
    #[serde(default)]
    pub deaths: u32,
    #[serde(default)]
    pub stuck: bool,
    #[serde(default)]
    pub items_lost: u32,
}

/// What a skill's result is measured in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Measure {
    /// XP of the named skills (slugs); empty means all XP.
    Xp(Vec<String>),
    /// Counts of the named items (slugs); empty means all items.
    Items(Vec<String>),
    /// Progress on a goal or quest.
    Goal,
    /// Nothing measurable (walking, banking, travel).
    Nothing,
}

impl Measure {
    /// Chooses the measure from the skill's topic tags: `skill:<slug>` → XP of those skills;
    /// else `item:<slug>` → those items; else `quest:<slug>` → goal progress; else from what the
    /// window's runs produced: any XP → all XP, else any items → all items, else any goal
    /// progress → goal, else nothing.
    ///
    /// Tag prefixes are matched case-insensitively and the names after them are slugged, so
    /// `skill:Woodcutting` and `skill:woodcutting` mean the same. Only positive gains count as
    /// "produced", and only the newest [`WINDOW`] uses are looked at, as in [`score`].
    pub fn choose(tags: &[String], window: &[UseSample]) -> Measure {
        Measure::choose_among(tags.iter().map(String::as_str), window)
    }

    /// [`Measure::choose`] from tags lent one by one (a stored version's tag lines, say, with
    /// no copy of them made for each recorded use).
    pub fn choose_among<'t>(
        tags: impl Iterator<Item = &'t str> + Clone,
        window: &[UseSample],
    ) -> Measure {
        let named = |prefix: &str| -> Vec<String> {
            let mut slugs: Vec<String> = tags
                .clone()
                .filter_map(|tag| strip_prefix_ignore_case(tag.trim(), prefix))
                .map(slug)
                .filter(|s| !s.is_empty())
                .collect();
            slugs.sort();
            slugs.dedup();
            slugs
        };
        let skills = named("skill:");
        if !skills.is_empty() {
            return Measure::Xp(skills);
        }
        let items = named("item:");
        if !items.is_empty() {
            return Measure::Items(items);
        }
        if tags
            .clone()
            .any(|tag| strip_prefix_ignore_case(tag.trim(), "quest:").is_some())
        {
            return Measure::Goal;
        }
        let window = &window[..window.len().min(WINDOW)];
        let gained = |map: &BTreeMap<String, f64>| map.values().any(|v| *v > 0.0);
        if window.iter().any(|u| gained(&u.xp)) {
            Measure::Xp(Vec::new())
        } else if window.iter().any(|u| gained(&u.items)) {
            Measure::Items(Vec::new())
        } else if window.iter().any(|u| u.goal_progress > 0.0) {
            Measure::Goal
        } else {
            Measure::Nothing
        }
    }

    /// A stable key for comparing skills measured the same way: "xp", "xp:mining+smithing",
    /// "items", "items:logs", "goal", "none". Names are slugged, sorted and deduplicated, so the
    /// key does not depend on tag order or spelling.
    pub fn key(&self) -> String {
        fn with_names(kind: &str, names: &[String]) -> String {
            let mut slugs: Vec<String> = names
                .iter()
                .map(|n| slug(n))
                .filter(|s| !s.is_empty())
                .collect();
            if slugs.is_empty() {
                return kind.to_owned();
            }
            slugs.sort();
            slugs.dedup();
            format!("{kind}:{}", slugs.join("+"))
        }
        match self {
            Measure::Xp(names) => with_names("xp", names),
            Measure::Items(names) => with_names("items", names),
            Measure::Goal => "goal".to_owned(),
            Measure::Nothing => "none".to_owned(),
        }
    }

    /// The result of one use in this measure. Names are compared as slugs (see [`slug`]).
    ///
    /// Only gains count: negative or NaN entries (items used up, say) add nothing, because a
    /// skill's result is what it produced, and a negative result would make rates meaningless.
    /// Goal progress is clamped to `0..=1`.
    pub fn result_of(&self, u: &UseSample) -> f64 {
        self.result_with(u, &mut |key, names| names.iter().any(|n| slug_eq(key, n)))
    }

    /// [`Measure::result_of`] with the name test supplied, so [`score`] can remember its
    /// answers across the window.
    fn result_with<'w>(
        &self,
        u: &'w UseSample,
        named: &mut impl FnMut(&'w str, &[String]) -> bool,
    ) -> f64 {
        let mut sum_gains = |map: &'w BTreeMap<String, f64>, names: &[String]| -> f64 {
            map.iter()
                .filter(|(key, _)| names.is_empty() || named(key, names))
                // `max` turns a NaN into 0 as well as dropping losses.
                .map(|(_, v)| v.max(0.0))
                .sum()
        };
        match self {
            Measure::Xp(names) => sum_gains(&u.xp, names),
            Measure::Items(names) => sum_gains(&u.items, names),
            // A NaN is no progress (`clamp` would pass it through).
            Measure::Goal if u.goal_progress.is_nan() => 0.0,
            Measure::Goal => u.goal_progress.clamp(0.0, 1.0),
            Measure::Nothing => 0.0,
        }
    }
}

/// Remembers whether recent map keys matched a measure's names. A window's uses name the same
/// few skills or items over and over, so this compares each distinct key's slug once rather
/// than once per use, without allocating.
struct NameCache<'w> {
    seen: [(&'w str, bool); NAME_CACHE_SIZE],
    len: usize,
    /// The slot to overwrite next once the cache is full.
    next: usize,
}

impl<'w> NameCache<'w> {
    fn new() -> Self {
        NameCache {
            seen: [("", false); NAME_CACHE_SIZE],
            len: 0,
            next: 0,
        }
    }

    fn matches(&mut self, key: &'w str, names: &[String]) -> bool {
        if let Some(&(_, hit)) = self.seen[..self.len].iter().find(|(k, _)| *k == key) {
            return hit;
        }
        let hit = names.iter().any(|n| slug_eq(key, n));
        let slot = if self.len < NAME_CACHE_SIZE {
            self.len += 1;
            self.len - 1
        } else {
            self.next = (self.next + 1) % NAME_CACHE_SIZE;
            self.next
        };
        self.seen[slot] = (key, hit);
        hit
    }
}

/// `tag` without `prefix` when it starts with it, ignoring ASCII case.
fn strip_prefix_ignore_case<'t>(tag: &'t str, prefix: &str) -> Option<&'t str> {
    let head = tag.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &tag[prefix.len()..])
}

// ---------------------------------------------------------------------------------------------
// Slugs.
// ---------------------------------------------------------------------------------------------

/// The rs-sdk wiki slug of a name: lowercase, apostrophes removed, runs of other characters
/// outside `a-z0-9` turned into one `-`, and no `-` at either end. "Iron ore" → "iron-ore",
/// "Cook's Assistant" → "cooks-assistant".
///
/// Like the JavaScript rule it mirrors (`toLowerCase`, then `[^a-z0-9]+` → `-`), only ASCII
/// letters and digits survive; other letters separate words. Both the straight and the curly
/// apostrophe are removed, because wiki names use either.
pub(crate) fn slug(name: &str) -> String {
    SlugChars::new(name).collect()
}

/// Whether two names have the same slug, without building either.
fn slug_eq(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        // Names from rs-sdk are ASCII; bytes need no UTF-8 decoding and no Unicode tables.
        SlugBytes::new(a.as_bytes()).eq(SlugBytes::new(b.as_bytes()))
    } else {
        SlugChars::new(a).eq(SlugChars::new(b))
    }
}

/// The bytes of an ASCII name's slug: the same rule as [`SlugChars`], for the common case.
struct SlugBytes<'a> {
    bytes: &'a [u8],
    /// A separator was seen since the last byte emitted.
    gap: bool,
    /// Something has been emitted, so a separator before the next byte becomes `-`.
    started: bool,
}

impl<'a> SlugBytes<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        SlugBytes {
            bytes,
            gap: false,
            started: false,
        }
    }
}

impl Iterator for SlugBytes<'_> {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        while let Some((&b, rest)) = self.bytes.split_first() {
            let b = b.to_ascii_lowercase();
            if b.is_ascii_lowercase() || b.is_ascii_digit() {
                if self.gap && self.started {
                    // Emit the separator and leave the byte for the next call.
                    self.gap = false;
                    return Some(b'-');
                }
                self.bytes = rest;
                self.gap = false;
                self.started = true;
                return Some(b);
            }
            self.bytes = rest;
            // Apostrophes vanish without separating; anything else separates.
            if b != b'\'' {
                self.gap = true;
            }
        }
        None
    }
}

/// The characters of a name's slug, produced lazily so comparisons need no allocation.
struct SlugChars<'a> {
    chars: std::str::Chars<'a>,
    /// The rest of a non-ASCII character's lowercase form (which may be several characters).
    lower: Option<std::char::ToLowercase>,
    /// A separator was seen since the last character emitted.
    gap: bool,
    /// Something has been emitted, so a separator before the next character becomes `-`.
    started: bool,
    /// A character held back while its preceding `-` is emitted.
    held: Option<char>,
}

impl<'a> SlugChars<'a> {
    fn new(name: &'a str) -> Self {
        SlugChars {
            chars: name.chars(),
            lower: None,
            gap: false,
            started: false,
            held: None,
        }
    }

    /// The next lowercase character. ASCII, by far the common case, skips the Unicode tables;
    /// other characters go through them because a few (the Kelvin sign, say) lowercase to ASCII.
    fn next_lower(&mut self) -> Option<char> {
        if let Some(lower) = &mut self.lower {
            if let Some(c) = lower.next() {
                return Some(c);
            }
            self.lower = None;
        }
        let c = self.chars.next()?;
        if c.is_ascii() {
            return Some(c.to_ascii_lowercase());
        }
        let mut lower = c.to_lowercase();
        let first = lower.next();
        self.lower = Some(lower);
        first
    }
}

impl Iterator for SlugChars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        if let Some(c) = self.held.take() {
            return Some(c);
        }
        while let Some(c) = self.next_lower() {
            if c == '\'' || c == '\u{2019}' {
                // Apostrophes vanish without separating: "Cap'n" → "capn".
                continue;
            }
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                // A separator only shows between two kept characters, never at either end.
                if self.gap && self.started {
                    self.gap = false;
                    self.held = Some(c);
                    return Some('-');
                }
                self.gap = false;
                self.started = true;
                return Some(c);
            }
            self.gap = true;
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// The score.
// ---------------------------------------------------------------------------------------------

/// Everything [`score`] needs; it reads nothing else.
#[derive(Debug, Clone, Copy)]
pub struct ScoreInput<'a> {
    /// The version's newest uses, NEWEST FIRST; at most [`WINDOW`] are used (extras are ignored).
    pub window: &'a [UseSample],
    pub measure: &'a Measure,
    /// Median result-per-minute of comparable family skills (same measure key, sharing a tag,
    /// at least [`PEER_MIN_USES`] uses), when there are any.
    pub peer_median_rate: Option<f64>,
    /// [`INHERIT_FACTOR`] × the parent's score when this version was created (None for a
    /// version without parent).
    pub inherited: Option<f64>,
}

/// The score and its parts, in points.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ScoreBreakdown {
    pub reliability: f64,
    pub effectiveness: f64,
    pub confidence: f64,
    pub freshness: f64,
    pub damage: f64,
    /// The sum of the five parts, clamped to `0..=SCORE_MAX`.
    pub own: f64,
    /// `own` blended with the inherited score; the number every face shows.
    pub total: f64,
    /// The own result per minute over the window, in the skill's measure (what peers compare).
    pub rate_per_minute: f64,
    /// Freshness's sums as of the newest use (its weights, and the weights of its successes),
    /// so a score read later can age them with the clock ([`aged_total`]). `None` in
    /// breakdowns stored before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_weight: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_weighted_ok: Option<f64>,
}

/// The score `breakdown` (of a version with `uses` uses and the `inherited` start) is worth
/// `days` after its newest use. Every use's freshness weight halves every
/// [`FRESHNESS_HALF_LIFE_DAYS`] of age, the prior's does not, so a skill left unused drifts
/// back to the middle; nothing else in the score depends on the clock. `None` when the
/// breakdown does not carry freshness's sums.
pub fn aged_total(
    breakdown: &ScoreBreakdown,
    uses: i64,
    inherited: Option<f64>,
    days: f64,
) -> Option<f64> {
    let (weight, weighted_ok) = (breakdown.fresh_weight?, breakdown.fresh_weighted_ok?);
    if !days.is_finite() || days <= 0.0 {
        return Some(breakdown.total);
    }
    let decay = (-days / FRESHNESS_HALF_LIFE_DAYS).exp2();
    let freshness = FRESHNESS_POINTS
        * (decay * weighted_ok + FRESHNESS_PRIOR * FRESHNESS_PRIOR_WEIGHT)
        / (decay * weight + FRESHNESS_PRIOR_WEIGHT);
    let own = clamp_score(
        breakdown.reliability
            + breakdown.effectiveness
            + breakdown.confidence
            + freshness
            + breakdown.damage,
    );
    let n = uses.clamp(0, WINDOW as i64) as f64;
    let total = match inherited.filter(|v| !v.is_nan()) {
        None => own,
        Some(inherited) => {
            n / (n + INHERIT_WEIGHT_USES) * own
                + INHERIT_WEIGHT_USES / (n + INHERIT_WEIGHT_USES) * inherited
        }
    };
    Some(clamp_score(total))
}

/// The starting score of a new version whose parent scored `parent_score`: the `inherited` of
/// [`ScoreInput`].
pub fn inherited_from_parent(parent_score: f64) -> f64 {
    INHERIT_FACTOR * parent_score
}

/// The Wilson score lower bound (z = [`WILSON_Z`]) of `successes` out of `n`; 0 when `n` is 0.
pub(crate) fn wilson_lower_bound(successes: usize, n: usize) -> f64 {
    // With no successes the bound is exactly 0 (z²/2n − z·√(z²/4n²) cancels), but floating
    // point leaves a rounding error, so it is returned exactly.
    if n == 0 || successes == 0 {
        return 0.0;
    }
    let p = successes.min(n) as f64 / n as f64;
    let n = n as f64;
    let z = WILSON_Z;
    let z2 = z * z;
    (p + z2 / (2.0 * n) - z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt()) / (1.0 + z2 / n)
}

/// Result per minute from sums over `count` uses.
///
/// When the uses recorded no duration at all, each counts as one minute, so the rate becomes
/// the result per use: a skill whose durations are unknown is still compared with itself
/// consistently, instead of dividing by zero.
fn rate_from(sum_result: f64, sum_minutes: f64, count: usize) -> f64 {
    if sum_minutes > 0.0 {
        sum_result / sum_minutes
    } else if count > 0 {
        sum_result / count as f64
    } else {
        0.0
    }
}

/// The minutes of a use.
/// How many steps a power of two is cut into by [`freshness_power`]'s table.
const POWER_STEPS_PER_DOUBLING: usize = 256;

/// 2^(j/256) for j in 0..256: the steps [`freshness_power`] scales.
static POWER_STEPS: std::sync::LazyLock<[f64; POWER_STEPS_PER_DOUBLING]> =
    std::sync::LazyLock::new(|| {
        std::array::from_fn(|j| (j as f64 / POWER_STEPS_PER_DOUBLING as f64).exp2())
    });

/// 2^x for a freshness weight (x ≤ 0 there), within two units in the last place of `f64::exp2`
/// (a property test holds it to that); 0 below 2^−1020, where a weight is nothing beside the
/// prior's.
///
/// Written here rather than called: a score takes up to 200 powers, and the C library's `exp2`
/// (a call each, with its checks for every kind of argument) was a thirteenth of recording a
/// use in a write group (`bench record`). This is the usual reduction, inlined: x = k/256 + r
/// with |r| ≤ 1/512, so 2^x = 2^⌊k/256⌋ · 2^((k mod 256)/256) · e^(r·ln 2), the middle factor
/// from a table and the last from its Taylor series to the fourth power (its first left-out
/// term is below 4·10⁻¹⁷), summed in two halves so that a window's powers overlap, and added
/// to the step as a small product so that it rounds once. Every face
/// scores through this one function, so a score is still the same to the last bit wherever it
/// is computed.
#[inline]
fn freshness_power(steps: &[f64; POWER_STEPS_PER_DOUBLING], x: f64) -> f64 {
    // Adding 1.5·2^52 rounds to a whole number of steps, which land in the low bits.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    const STEPS: f64 = POWER_STEPS_PER_DOUBLING as f64;
    if !(-1020.0..=1020.0).contains(&x) {
        return if x.is_nan() {
            x
        } else if x > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
    }
    let shifted = x * STEPS + ROUND;
    let k = shifted.to_bits() as i64 as i32;
    let r = x - (shifted - ROUND) / STEPS;
    let t = r * std::f64::consts::LN_2;
    let t2 = t * t;
    // The series less its 1, so the step is added to its small product, rounded once.
    let above_one = t + t2 * ((1.0 / 2.0 + t * (1.0 / 6.0)) + t2 * (1.0 / 24.0));
    let step = steps[(k & 255) as usize];
    let whole = f64::from_bits((((k >> 8) + 1023) as u64) << 52);
    whole * (step + step * above_one)
}

fn minutes(u: &UseSample) -> f64 {
    u.duration_ms as f64 / MS_PER_MINUTE
}

/// The result per minute of `uses` (newest first; only the newest [`WINDOW`] count) in
/// `measure`: the same rate [`score`] reports as `rate_per_minute`, for computing peer medians.
#[cfg(test)]
pub(crate) fn rate(measure: &Measure, uses: &[UseSample]) -> f64 {
    let uses = &uses[..uses.len().min(WINDOW)];
    let sum_result: f64 = uses.iter().map(|u| measure.result_of(u)).sum();
    let sum_minutes: f64 = uses.iter().map(minutes).sum();
    rate_from(sum_result, sum_minutes, uses.len()).min(f64::MAX)
}

/// The median of the comparable family skills' rates (see [`rate`]), for
/// [`ScoreInput::peer_median_rate`]; None when there are none. Non-finite rates are skipped.
/// The caller picks the peers: same [`Measure::key`], a shared tag, at least [`PEER_MIN_USES`]
/// uses.
pub fn peer_median_rate(rates: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut rates: Vec<f64> = rates.into_iter().filter(|r| r.is_finite()).collect();
    if rates.is_empty() {
        return None;
    }
    rates.sort_by(f64::total_cmp);
    let mid = rates.len() / 2;
    Some(if rates.len() % 2 == 1 {
        rates[mid]
    } else {
        rates[mid - 1] / 2.0 + rates[mid] / 2.0
    })
}

/// Clamps to `0..=SCORE_MAX`, mapping NaN to 0 so no face ever shows a NaN.
fn clamp_score(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, SCORE_MAX)
    }
}

/// The score of a skill version. See the module documentation and the constants above.
pub fn score(input: &ScoreInput<'_>) -> ScoreBreakdown {
    let mut names_seen = NameCache::new();
    score_by(input, |_, u| {
        input
            .measure
            .result_with(u, &mut |key, names| names_seen.matches(key, names))
    })
}

/// [`score`] with each use's result under `input.measure` already known: `results[i]` is
/// [`Measure::result_of`] of `input.window[i]` (at least as many as the window's uses that
/// count). The same sums in the same order, so the same score to the last bit; a writer that
/// keeps a version's window keeps its results beside it, and a new use costs one result, not a
/// window's worth of map walks.
pub fn score_measured(input: &ScoreInput<'_>, results: &[f64]) -> ScoreBreakdown {
    let counted = input.window.len().min(WINDOW);
    assert!(
        results.len() >= counted,
        "score_measured: {} results for a window of {counted} uses",
        results.len()
    );
    score_by(input, |i, _| results[i])
}

fn score_by<'w>(
    input: &ScoreInput<'w>,
    mut result_of: impl FnMut(usize, &'w UseSample) -> f64,
) -> ScoreBreakdown {
    let uses = &input.window[..input.window.len().min(WINDOW)];
    // A NaN inherited score is no information, so it is treated as no parent.
    let inherited = input.inherited.filter(|v| !v.is_nan());
    let n = uses.len();
    if n == 0 {
        return ScoreBreakdown {
            reliability: 0.0,
            effectiveness: 0.0,
            confidence: 0.0,
            freshness: 0.0,
            damage: 0.0,
            own: 0.0,
            total: clamp_score(inherited.unwrap_or(0.0)),
            rate_per_minute: 0.0,
            fresh_weight: None,
            fresh_weighted_ok: None,
        };
    }
    let now = uses[0].at as f64;

    let steps = &*POWER_STEPS;
    // One pass gathers every sum, so the score allocates nothing.
    let mut successes = 0usize;
    let (mut sum_result, mut sum_minutes) = (0.0f64, 0.0f64);
    let (mut recent_result, mut recent_minutes) = (0.0f64, 0.0f64);
    let (mut fresh_weighted_ok, mut fresh_weight) = (0.0f64, 0.0f64);
    let mut sum_damage = 0.0f64;
    // Only the first CONFIDENCE_FULL_AGENTS distinct agents matter, so a tiny array suffices.
    let mut agents = [0i64; CONFIDENCE_FULL_AGENTS];
    let mut agent_count = 0usize;

    for (i, u) in uses.iter().enumerate() {
        if u.ok {
            successes += 1;
            if agent_count < CONFIDENCE_FULL_AGENTS && !agents[..agent_count].contains(&u.agent) {
                agents[agent_count] = u.agent;
                agent_count += 1;
            }
        }

        let result = result_of(i, u);
        let mins = minutes(u);
        sum_result += result;
        sum_minutes += mins;
        if i < RECENT_USES {
            recent_result += result;
            recent_minutes += mins;
        }

        // Timestamps go through f64 so that extreme values cannot overflow the subtraction.
        let age_days = ((now - u.at as f64) / SECONDS_PER_DAY).max(0.0);
        let newer = i as f64;
        // 2^(−age/7) × 2^(−newer/20), written as one power because a power is the loop's
        // costliest step.
        let w = freshness_power(
            steps,
            -age_days / FRESHNESS_HALF_LIFE_DAYS - newer / FRESHNESS_HALF_LIFE_USES,
        );
        fresh_weight += w;
        if u.ok {
            fresh_weighted_ok += w;
        }

        let damage = u.deaths as f64 * DAMAGE_PER_DEATH
            + if u.stuck { DAMAGE_STUCK } else { 0.0 }
            + DAMAGE_FULL_BACKPACK * u.items_lost as f64 / BACKPACK_SLOTS;
        sum_damage += damage.min(DAMAGE_MAX_PER_USE);
    }
    let nf = n as f64;

    let reliability = RELIABILITY_POINTS * wilson_lower_bound(successes, n);

    let own_rate = rate_from(sum_result, sum_minutes, n);
    let ratio = match (input.measure, input.peer_median_rate) {
        (Measure::Nothing, _) => 1.0,
        // An infinite or non-positive peer rate is no usable reference, so it is ignored.
        (_, Some(peer)) if peer > 0.0 && peer.is_finite() => own_rate / peer,
        _ if own_rate > 0.0 => {
            rate_from(recent_result, recent_minutes, n.min(RECENT_USES)) / own_rate
        }
        // The reference rate is 0: nothing measurable, so the skill is as good as itself.
        _ => 1.0,
    };
    // Infinite rates (overflowing sums) can make the ratio NaN; that compares nothing.
    let ratio = if ratio.is_nan() { 1.0 } else { ratio.max(0.0) };
    let effectiveness = EFFECTIVENESS_POINTS * (ratio / EFFECTIVENESS_FULL_RATIO).min(1.0);

    let uses_part = (nf.ln_1p() / CONFIDENCE_FULL_USES.ln_1p()).min(1.0);
    let agents_part = (agent_count as f64 / CONFIDENCE_FULL_AGENTS as f64).min(1.0);
    let confidence = CONFIDENCE_POINTS
        * (CONFIDENCE_USES_SHARE * uses_part + CONFIDENCE_AGENTS_SHARE * agents_part);

    let freshness = FRESHNESS_POINTS
        * (fresh_weighted_ok + FRESHNESS_PRIOR * FRESHNESS_PRIOR_WEIGHT)
        / (fresh_weight + FRESHNESS_PRIOR_WEIGHT);

    let damage = DAMAGE_POINTS * (1.0 - sum_damage / nf);

    let own = clamp_score(reliability + effectiveness + confidence + freshness + damage);
    let total = match inherited {
        None => own,
        Some(inherited) => {
            nf / (nf + INHERIT_WEIGHT_USES) * own
                + INHERIT_WEIGHT_USES / (nf + INHERIT_WEIGHT_USES) * inherited
        }
    };

    ScoreBreakdown {
        reliability,
        effectiveness,
        confidence,
        freshness,
        damage,
        own,
        total: clamp_score(total),
        // Saturated so a serialised breakdown never carries an infinity (JSON has none).
        rate_per_minute: own_rate.min(f64::MAX),
        fresh_weight: Some(fresh_weight),
        fresh_weighted_ok: Some(fresh_weighted_ok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_score_read_later_drifts_back_to_the_middle_as_freshness_ages() {
        let window: Vec<UseSample> = (0..5)
            .map(|i| UseSample {
                at: 1_000_000 - i * 60,
                ok: true,
                agent: 1,
                duration_ms: 60_000,
                xp: BTreeMap::new(),
                items: BTreeMap::new(),
                goal_progress: 0.0,
                deaths: 0,
                stuck: false,
                items_lost: 0,
            })
            .collect();
        let b = score(&ScoreInput {
            window: &window,
            measure: &Measure::Nothing,
            peer_median_rate: None,
            inherited: None,
        });
        // Right after the run nothing has aged.
        assert!(close(aged_total(&b, 5, None, 0.0).unwrap(), b.total, 1e-9));
        let week = aged_total(&b, 5, None, 7.0).unwrap();
        let year = aged_total(&b, 5, None, 365.0).unwrap();
        assert!(week < b.total && year < week, "{} {week} {year}", b.total);
        // Freshness alone moves: at most its 100 points, towards its neutral 50.
        assert!(close(year, b.total - b.freshness + 50.0, 0.01), "{year}");
        // An old breakdown without the sums cannot be aged.
        let old = ScoreBreakdown {
            fresh_weight: None,
            ..b
        };
        assert_eq!(aged_total(&old, 5, None, 30.0), None);
        // A run of failures drifts up to the middle the same way.
        let failing: Vec<UseSample> = window
            .iter()
            .map(|u| UseSample {
                ok: false,
                ..u.clone()
            })
            .collect();
        let f = score(&ScoreInput {
            window: &failing,
            measure: &Measure::Nothing,
            peer_median_rate: None,
            inherited: None,
        });
        assert!(aged_total(&f, 5, None, 365.0).unwrap() > f.total);
    }

    /// A clean use: ok, no measurable result, no damage, one minute long.
    fn clean(at: i64, agent: i64) -> UseSample {
        UseSample {
            at,
            ok: true,
            agent,
            duration_ms: 60_000,
            xp: BTreeMap::new(),
            items: BTreeMap::new(),
            goal_progress: 0.0,
            deaths: 0,
            stuck: false,
            items_lost: 0,
        }
    }

    fn failed(at: i64, agent: i64) -> UseSample {
        UseSample {
            ok: false,
            ..clean(at, agent)
        }
    }

    /// `k` clean uses by one agent, a few minutes apart, newest first.
    fn clean_runs(k: usize) -> Vec<UseSample> {
        (0..k)
            .map(|i| clean(1_700_000_000 - 300 * i as i64, 1))
            .collect()
    }

    fn score_of(window: &[UseSample], measure: &Measure, inherited: Option<f64>) -> ScoreBreakdown {
        score(&ScoreInput {
            window,
            measure,
            peer_median_rate: None,
            inherited,
        })
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn five_clean_runs_score_about_620() {
        let s = score_of(&clean_runs(5), &Measure::Nothing, None);
        assert!(close(s.total, 623.34, 0.01), "{s:?}");
        // The same timestamp gives the same figure to within a hair: age halves over days.
        let same: Vec<_> = (0..5).map(|_| clean(1_700_000_000, 1)).collect();
        assert!(close(
            score_of(&same, &Measure::Nothing, None).total,
            623.4,
            0.1
        ));
    }

    #[test]
    fn three_clean_runs_score_about_550() {
        let s = score_of(&clean_runs(3), &Measure::Nothing, None);
        assert!(close(s.total, 552.89, 0.01), "{s:?}");
    }

    #[test]
    fn wilson_two_of_two_is_0_34() {
        assert!(close(wilson_lower_bound(2, 2), 0.342, 0.0005));
    }

    #[test]
    fn wilson_ten_of_ten_is_0_72() {
        assert!(close(wilson_lower_bound(10, 10), 0.722, 0.0005));
    }

    #[test]
    fn wilson_none_of_n_is_0() {
        for n in 1..=WINDOW {
            assert_eq!(wilson_lower_bound(0, n), 0.0);
        }
    }

    #[test]
    fn edit_of_a_650_parent_starts_at_585() {
        let inherited = inherited_from_parent(650.0);
        let s = score_of(&[], &Measure::Nothing, Some(inherited));
        assert!(close(s.total, 585.0, 1e-9), "{s:?}");
        assert_eq!(s.own, 0.0);
    }

    #[test]
    fn edit_of_a_650_parent_is_above_600_after_5_clean_runs() {
        let s = score_of(
            &clean_runs(5),
            &Measure::Nothing,
            Some(inherited_from_parent(650.0)),
        );
        assert!(s.total > SHARE_BAR_SCORE, "{s:?}");
        assert!(close(s.total, 604.17, 0.01), "{s:?}");
    }

    #[test]
    fn broken_edit_of_a_650_parent_is_below_500_after_2_failed_runs() {
        let window = [failed(1_700_000_000, 1), failed(1_699_999_700, 1)];
        let s = score_of(
            &window,
            &Measure::Nothing,
            Some(inherited_from_parent(650.0)),
        );
        assert!(s.total < 500.0, "{s:?}");
    }

    #[test]
    fn nothing_measurable_gets_167_of_250_effectiveness() {
        let window = clean_runs(5);
        let measure = Measure::choose(&[], &window);
        assert_eq!(measure, Measure::Nothing);
        let s = score_of(&window, &measure, None);
        assert!(close(s.effectiveness, 166.7, 0.05), "{s:?}");
        // A peer median does not change that: there is nothing to compare.
        let with_peer = score(&ScoreInput {
            window: &window,
            measure: &measure,
            peer_median_rate: Some(100.0),
            inherited: None,
        });
        assert_eq!(with_peer.effectiveness, s.effectiveness);
    }

    #[test]
    fn steady_xp_script_gets_the_same_effectiveness_as_nothing_measurable() {
        let window: Vec<_> = clean_runs(12)
            .into_iter()
            .map(|mut u| {
                u.xp.insert("Woodcutting".into(), 250.0);
                u
            })
            .collect();
        let measure = Measure::choose(&[], &window);
        assert_eq!(measure, Measure::Xp(vec![]));
        let s = score_of(&window, &measure, None);
        assert!(close(s.effectiveness, 250.0 / 1.5, 1e-9), "{s:?}");
        assert!(close(s.rate_per_minute, 250.0, 1e-9), "{s:?}");
    }

    #[test]
    fn twice_as_fast_as_the_peer_median_gets_the_full_250() {
        let window: Vec<_> = clean_runs(5)
            .into_iter()
            .map(|mut u| {
                u.xp.insert("Woodcutting".into(), 1_000.0);
                u
            })
            .collect();
        let measure = Measure::Xp(vec!["woodcutting".into()]);
        let with_peer = |peer: Option<f64>| {
            score(&ScoreInput {
                window: &window,
                measure: &measure,
                peer_median_rate: peer,
                inherited: None,
            })
        };
        let s = with_peer(Some(500.0));
        assert_eq!(s.rate_per_minute, 1_000.0);
        assert_eq!(s.effectiveness, EFFECTIVENESS_POINTS, "{s:?}");
        // As fast as the peers earns two thirds, half as fast a third.
        assert!(close(
            with_peer(Some(1_000.0)).effectiveness,
            250.0 / 1.5,
            1e-9
        ));
        assert!(close(
            with_peer(Some(2_000.0)).effectiveness,
            250.0 / 3.0,
            1e-9
        ));
        // A peer rate that is no usable reference falls back to the skill's own history.
        for unusable in [0.0, -1.0, f64::INFINITY] {
            assert_eq!(with_peer(Some(unusable)), with_peer(None));
        }
    }

    #[test]
    fn a_slowdown_in_the_newest_runs_lowers_effectiveness() {
        let window: Vec<_> = clean_runs(30)
            .into_iter()
            .enumerate()
            .map(|(i, mut u)| {
                // The newest 10 runs take twice as long for the same XP.
                u.duration_ms = if i < RECENT_USES { 120_000 } else { 60_000 };
                u.xp.insert("Mining".into(), 100.0);
                u
            })
            .collect();
        let measure = Measure::choose(&[], &window);
        let s = score_of(&window, &measure, None);
        assert!(s.effectiveness < 250.0 / 1.5 * 0.7, "{s:?}");
    }

    #[test]
    fn zero_durations_count_a_minute_per_use() {
        let window: Vec<_> = clean_runs(4)
            .into_iter()
            .map(|mut u| {
                u.duration_ms = 0;
                u.items.insert("Logs".into(), 7.0);
                u
            })
            .collect();
        let measure = Measure::Items(vec!["logs".into()]);
        assert_eq!(rate(&measure, &window), 7.0);
        let s = score_of(&window, &measure, None);
        assert_eq!(s.rate_per_minute, 7.0);
        assert!(close(s.effectiveness, 250.0 / 1.5, 1e-9));
    }

    #[test]
    fn eager_bar_one_failure_in_three_does_not_reach_500() {
        for failure in 0..3 {
            let window: Vec<_> = (0..3)
                .map(|i| {
                    let at = 1_700_000_000 - 300 * i as i64;
                    if i == failure {
                        failed(at, 1)
                    } else {
                        clean(at, 1)
                    }
                })
                .collect();
            let s = score_of(&window, &Measure::Nothing, None);
            assert!(
                s.total < EAGER_SHARE_BAR_SCORE,
                "failure at {failure}: {s:?}"
            );
        }
        // And three clean runs do reach it.
        let s = score_of(&clean_runs(EAGER_SHARE_BAR_RUNS), &Measure::Nothing, None);
        assert!(s.total >= EAGER_SHARE_BAR_SCORE);
    }

    #[test]
    fn eager_bar_three_agents_score_more_than_one() {
        let one = clean_runs(3);
        let three: Vec<_> = (0..3)
            .map(|i| clean(1_700_000_000 - 300 * i, i + 1))
            .collect();
        let s1 = score_of(&one, &Measure::Nothing, None);
        let s3 = score_of(&three, &Measure::Nothing, None);
        assert!(s3.total > s1.total, "{s1:?} vs {s3:?}");
        assert!(close(s3.total, 592.89, 0.01), "{s3:?}");
    }

    #[test]
    fn an_agent_with_only_failures_adds_no_consensus() {
        let mut window = clean_runs(3);
        window[1] = failed(window[1].at, 2);
        window[2].agent = 3;
        let s = score_of(&window, &Measure::Nothing, None);
        // Agents 1 and 3 succeeded; agent 2 only failed.
        let uses_part = 4f64.ln() / 51f64.ln();
        assert!(close(
            s.confidence,
            150.0 * (0.6 * uses_part + 0.4 * 2.0 / 3.0),
            1e-9
        ));
    }

    #[test]
    fn damage_counts_deaths_stuck_and_lost_items() {
        let mut window = clean_runs(4);
        window[0].deaths = 3; // capped at 1
        window[1].stuck = true; // 0.5
        window[2].items_lost = 14; // 0.25
        let s = score_of(&window, &Measure::Nothing, None);
        assert!(close(s.damage, 50.0 * (1.0 - 1.75 / 4.0), 1e-9), "{s:?}");
    }

    #[test]
    fn old_records_drift_back_to_the_middle() {
        // A failure a year ago barely counts next to a fresh success… but only via the prior.
        let window = [
            clean(1_700_000_000, 1),
            failed(1_700_000_000 - 365 * 86_400, 1),
        ];
        let s = score_of(&window, &Measure::Nothing, None);
        assert!(close(s.freshness, 100.0 * 1.5 / 2.0, 1e-6), "{s:?}");
    }

    #[test]
    fn measure_from_skill_tag_counts_only_that_skills_xp() {
        let tags = vec!["skill:woodcutting".to_owned(), "item:logs".to_owned()];
        let measure = Measure::choose(&tags, &[]);
        assert_eq!(measure, Measure::Xp(vec!["woodcutting".into()]));
        assert_eq!(measure.key(), "xp:woodcutting");
        let mut u = clean(0, 1);
        u.xp.insert("Woodcutting".into(), 25.0);
        u.xp.insert("Firemaking".into(), 40.0);
        u.items.insert("Logs".into(), 1.0);
        assert_eq!(measure.result_of(&u), 25.0);
    }

    #[test]
    fn measure_from_item_tag_counts_only_those_items() {
        let tags = vec!["item:logs".to_owned(), "woodcutting".to_owned()];
        let measure = Measure::choose(&tags, &[]);
        assert_eq!(measure, Measure::Items(vec!["logs".into()]));
        assert_eq!(measure.key(), "items:logs");
        let mut u = clean(0, 1);
        u.xp.insert("Woodcutting".into(), 25.0);
        u.items.insert("Logs".into(), 3.0);
        u.items.insert("Oak logs".into(), 5.0);
        assert_eq!(measure.result_of(&u), 3.0);
        // Losses are not results.
        u.items.insert("Logs".into(), -3.0);
        assert_eq!(measure.result_of(&u), 0.0);
    }

    #[test]
    fn measure_from_quest_tag_is_goal() {
        let tags = vec!["quest:cooks-assistant".to_owned()];
        let measure = Measure::choose(&tags, &[]);
        assert_eq!(measure, Measure::Goal);
        assert_eq!(measure.key(), "goal");
        let mut u = clean(0, 1);
        u.goal_progress = 0.5;
        assert_eq!(measure.result_of(&u), 0.5);
    }

    #[test]
    fn measure_from_what_the_runs_produced() {
        let mut u = clean(0, 1);
        assert_eq!(
            Measure::choose(&[], std::slice::from_ref(&u)),
            Measure::Nothing
        );
        u.goal_progress = 0.2;
        assert_eq!(
            Measure::choose(&[], std::slice::from_ref(&u)),
            Measure::Goal
        );
        u.items.insert("Iron ore".into(), 2.0);
        assert_eq!(
            Measure::choose(&[], std::slice::from_ref(&u)),
            Measure::Items(vec![])
        );
        u.xp.insert("Mining".into(), 35.0);
        assert_eq!(
            Measure::choose(&[], std::slice::from_ref(&u)),
            Measure::Xp(vec![])
        );
        assert_eq!(Measure::Xp(vec![]).key(), "xp");
        assert_eq!(Measure::Items(vec![]).key(), "items");
        assert_eq!(Measure::Nothing.key(), "none");
    }

    #[test]
    fn measure_key_is_sorted_and_slugged() {
        let tags = vec![
            "skill:Smithing".to_owned(),
            "Skill:mining".to_owned(),
            "skill:smithing".to_owned(),
        ];
        let measure = Measure::choose(&tags, &[]);
        assert_eq!(measure.key(), "xp:mining+smithing");
        assert_eq!(
            Measure::Xp(vec!["Smithing".into(), "Mining".into()]).key(),
            "xp:mining+smithing"
        );
    }

    #[test]
    fn slug_follows_the_wiki_rule() {
        assert_eq!(slug("Cook's Assistant"), "cooks-assistant");
        assert_eq!(slug("Iron ore"), "iron-ore");
        assert_eq!(slug("Cap'n Izzy No-Beard"), "capn-izzy-no-beard");
        assert_eq!(slug("  --Rune  2h sword (p++)--  "), "rune-2h-sword-p");
        assert_eq!(slug("Cook\u{2019}s Assistant"), "cooks-assistant");
        assert_eq!(slug("''"), "");
        assert!(slug_eq("Iron ore", "iron-ore"));
        // A leading separator must not leave a gap pending after the first character.
        assert!(slug_eq(":Aa", "aa"));
        assert!(slug_eq("Cap'n Izzy No-Beard", "capn-izzy-no-beard"));
        assert!(!slug_eq("Iron ore", "iron-ores"));
    }

    #[test]
    fn peer_median_is_the_middle_rate() {
        assert_eq!(peer_median_rate([]), None);
        assert_eq!(peer_median_rate([3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(peer_median_rate([4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(peer_median_rate([f64::NAN, 5.0]), Some(5.0));
    }

    /// Properties that hold for any window.
    mod properties {
        use super::super::*;
        use proptest::prelude::*;

        fn amount() -> impl Strategy<Value = f64> {
            prop_oneof![
                4 => 0.0..10_000.0f64,
                1 => -1_000.0..0.0f64,
                1 => Just(0.0),
                1 => Just(1e300),
                1 => Just(f64::MAX),
            ]
        }

        fn gains() -> impl Strategy<Value = BTreeMap<String, f64>> {
            proptest::collection::btree_map(
                prop_oneof![
                    Just("Woodcutting".to_owned()),
                    Just("Mining".to_owned()),
                    Just("Logs".to_owned()),
                    Just("Iron ore".to_owned()),
                    Just("Cook's Assistant".to_owned()),
                    Just("--".to_owned()),
                ],
                amount(),
                0..4,
            )
        }

        prop_compose! {
            fn use_sample()(
                at in prop_oneof![
                    8 => 1_690_000_000i64..1_700_000_000,
                    1 => any::<i64>(),
                ],
                ok in any::<bool>(),
                agent in 0i64..6,
                duration_ms in prop_oneof![
                    2 => Just(0u64),
                    6 => 0u64..3_600_000,
                    1 => any::<u64>(),
                ],
                xp in gains(),
                items in gains(),
                goal_progress in -1.0..2.0f64,
                deaths in prop_oneof![4 => 0u32..3, 1 => any::<u32>()],
                stuck in any::<bool>(),
                items_lost in prop_oneof![4 => 0u32..40, 1 => any::<u32>()],
            ) -> UseSample {
                UseSample { at, ok, agent, duration_ms, xp, items, goal_progress, deaths, stuck, items_lost }
            }
        }

        fn window(max: usize) -> impl Strategy<Value = Vec<UseSample>> {
            proptest::collection::vec(use_sample(), 0..=max)
        }

        fn measure() -> impl Strategy<Value = Measure> {
            prop_oneof![
                Just(Measure::Xp(vec![])),
                Just(Measure::Xp(vec!["woodcutting".into()])),
                Just(Measure::Xp(vec!["mining".into(), "smithing".into()])),
                Just(Measure::Items(vec![])),
                Just(Measure::Items(vec!["iron-ore".into()])),
                Just(Measure::Goal),
                Just(Measure::Nothing),
            ]
        }

        /// Units in the last place between `a` and `b` (both positive and finite).
        fn ulps(a: f64, b: f64) -> u64 {
            a.to_bits().abs_diff(b.to_bits())
        }

        proptest! {
            #[test]
            fn a_freshness_power_is_within_two_ulps_of_exp2(x in -1020.0..=20.0f64) {
                let (power, exact) = (freshness_power(&POWER_STEPS, x), x.exp2());
                prop_assert!(ulps(power, exact) <= 2, "2^{x}: {power} against {exact}");
            }

            #[test]
            fn the_weights_a_window_takes_are_within_two_ulps_of_exp2(
                age_days in 0.0..3650.0f64,
                newer in 0usize..WINDOW,
            ) {
                let x = -age_days / FRESHNESS_HALF_LIFE_DAYS
                    - newer as f64 / FRESHNESS_HALF_LIFE_USES;
                let (power, exact) = (freshness_power(&POWER_STEPS, x), x.exp2());
                prop_assert!(ulps(power, exact) <= 2, "2^{x}: {power} against {exact}");
            }
        }

        #[test]
        fn a_freshness_power_past_its_range_is_zero_infinity_or_nan() {
            for (x, expected) in [
                (-1020.5, 0.0),
                (f64::NEG_INFINITY, 0.0),
                (2000.0, f64::INFINITY),
            ] {
                assert_eq!(freshness_power(&POWER_STEPS, x), expected);
            }
            assert!(freshness_power(&POWER_STEPS, f64::NAN).is_nan());
            assert_eq!(freshness_power(&POWER_STEPS, 0.0), 1.0);
            assert_eq!(freshness_power(&POWER_STEPS, -1.0), 0.5);
        }

        fn peer() -> impl Strategy<Value = Option<f64>> {
            proptest::option::of(prop_oneof![
                0.0..10_000.0f64,
                Just(0.0),
                Just(-5.0),
                Just(f64::MAX),
                Just(f64::INFINITY),
            ])
        }

        fn inherited() -> impl Strategy<Value = Option<f64>> {
            proptest::option::of(prop_oneof![
                0.0..=900.0f64,
                -100.0..2_000.0f64,
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
            ])
        }

        fn run(
            w: &[UseSample],
            m: &Measure,
            peer: Option<f64>,
            inherited: Option<f64>,
        ) -> ScoreBreakdown {
            score(&ScoreInput {
                window: w,
                measure: m,
                peer_median_rate: peer,
                inherited,
            })
        }

        proptest! {
            // Windows of up to 250 uses are slow to generate in a debug build; 64 cases of each
            // still cover zero durations, huge amounts and long windows many times over.
            #![proptest_config(ProptestConfig::with_cases(64))]

            #[test]
            fn a_score_from_results_known_beforehand_is_the_same_score_to_the_bit(
                w in window(250), m in measure(), p in peer(), i in inherited(),
            ) {
                let results: Vec<f64> = w.iter().map(|u| m.result_of(u)).collect();
                let measured = score_measured(
                    &ScoreInput { window: &w, measure: &m, peer_median_rate: p, inherited: i },
                    &results,
                );
                let direct = run(&w, &m, p, i);
                // Bit for bit (NaN never appears: the score maps it away).
                prop_assert_eq!(
                    serde_json::to_string(&measured).unwrap(),
                    serde_json::to_string(&direct).unwrap()
                );
                prop_assert_eq!(measured.total.to_bits(), direct.total.to_bits());
            }

            #[test]
            fn total_and_own_are_finite_and_in_range(
                w in window(250), m in measure(), p in peer(), i in inherited(),
            ) {
                let s = run(&w, &m, p, i);
                for v in [s.total, s.own] {
                    prop_assert!(v.is_finite() && (0.0..=SCORE_MAX).contains(&v), "{s:?}");
                }
                for v in [s.reliability, s.effectiveness, s.confidence, s.freshness, s.damage, s.rate_per_minute] {
                    prop_assert!(v.is_finite() && v >= 0.0, "{s:?}");
                }
            }

            #[test]
            fn more_successes_never_lower_reliability(
                w in window(250), m in measure(), pick in any::<proptest::sample::Index>(),
            ) {
                let failures: Vec<usize> = (0..w.len()).filter(|&i| !w[i].ok).collect();
                prop_assume!(!failures.is_empty());
                let mut better = w.clone();
                better[failures[pick.index(failures.len())]].ok = true;
                let before = run(&w, &m, None, None);
                let after = run(&better, &m, None, None);
                prop_assert!(after.reliability >= before.reliability, "{before:?} → {after:?}");
            }

            #[test]
            fn a_death_never_raises_the_total(
                w in window(250), m in measure(), p in peer(), i in inherited(),
                pick in any::<proptest::sample::Index>(),
            ) {
                prop_assume!(!w.is_empty());
                let mut worse = w.clone();
                let u = &mut worse[pick.index(w.len())];
                u.deaths = u.deaths.saturating_add(1);
                let before = run(&w, &m, p, i);
                let after = run(&worse, &m, p, i);
                prop_assert!(after.total <= before.total, "{before:?} → {after:?}");
            }

            #[test]
            fn only_the_newest_200_count(
                w in proptest::collection::vec(use_sample(), WINDOW..=250),
                extra in window(50),
                m in measure(), p in peer(), i in inherited(),
            ) {
                let mut other = w[..WINDOW].to_vec();
                other.extend(extra);
                prop_assert_eq!(run(&w, &m, p, i), run(&w[..WINDOW], &m, p, i));
                prop_assert_eq!(run(&w, &m, p, i), run(&other, &m, p, i));
                prop_assert_eq!(Measure::choose(&[], &w), Measure::choose(&[], &other));
            }

            #[test]
            fn slug_is_idempotent_and_clean(
                name in prop_oneof!["\\PC{0,30}", "[ -~]{0,30}", "[A-Za-z' ]{0,30}"],
            ) {
                let s = slug(&name);
                prop_assert_eq!(slug(&s), s.clone());
                prop_assert!(s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
                prop_assert!(!s.starts_with('-') && !s.ends_with('-') && !s.contains("--"));
                prop_assert!(slug_eq(&name, &s));
            }
        }
    }
}
