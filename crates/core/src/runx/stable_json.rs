//! `runx.stable-json.v1`: the canonical JSON Runx hashes plans, bundles and receipts with.
//!
//! Runx keeps one Rust writer and a TypeScript mirror (`canonicalJsonStringify`) in byte
//! parity, and both are pinned by the oracle cases under `shared/data/runx/canonical-json/`.
//! The rules, all of which the oracle exercises:
//!
//! - object keys are sorted at every level by Unicode code point, which for UTF-8 strings is
//!   plain byte order (the TypeScript side compares code points, not UTF-16 units);
//! - there is no whitespace;
//! - strings are escaped as `JSON.stringify` and serde_json both do: `\"`, `\\`, `\b`, `\f`,
//!   `\n`, `\r`, `\t`, other controls as lowercase `\u00xx`, and everything else (including
//!   U+2028, U+2029 and astral characters) raw;
//! - numbers are written as JavaScript's `Number.prototype.toString` writes them, because the
//!   TypeScript mirror only has binary64 numbers: `-0` is `0`, whole values print as integers
//!   up to 1e21, and otherwise the shortest round-trip digits (the even one on an exact tie)
//!   with JS exponent style (`1e-7`, `1e+21`, `1.5e+308`);
//! - unpaired surrogates are rejected. A Rust `String` cannot hold one, so for an in-memory
//!   [`Value`] the rule is enforced by the JSON parser; [`canonicalize_text`] reports it as
//!   [`StableJsonError::UnpairedSurrogate`].
//!
//! Integers beyond 2^53 are rounded to the nearest binary64 first (`18446744073709551615`
//! becomes `18446744073709552000`), exactly as the TypeScript mirror sees them after
//! `JSON.parse`, so the two sides still agree on such inputs.

use std::fmt::Write as _;

use serde_json::Value;

use crate::digest;

/// The canonicalization tag Runx records next to digests made with this writer.
pub(crate) const CANONICALIZATION: &str = "runx.stable-json.v1";

/// Why a value has no `runx.stable-json.v1` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StableJsonError {
    /// A number that is not a finite binary64 value (only reachable when serde_json keeps
    /// numbers as arbitrary-precision text); JavaScript cannot represent it, so neither side
    /// can hash it.
    #[error("{CANONICALIZATION}: the number {number} at {path} is not a finite binary64 value")]
    NonFiniteNumber { path: String, number: String },
    /// A `\uD800`–`\uDFFF` escape without its partner, which has no UTF-8 form; `offset` is
    /// the byte offset of its backslash in the text.
    #[error("{CANONICALIZATION}: unpaired surrogate escape at byte {offset}")]
    UnpairedSurrogate { offset: usize },
    /// The text given to [`canonicalize_text`] is not JSON at all.
    #[error("{CANONICALIZATION}: the input is not JSON: {message}")]
    InvalidJson { message: String },
}

/// The `runx.stable-json.v1` text of a value.
pub(crate) fn to_stable_json(value: &Value) -> Result<String, StableJsonError> {
    let mut out = String::new();
    let mut path = Vec::new();
    write_value(value, &mut path, &mut out)?;
    Ok(out)
}

/// The `sha256:<hex>` digest of a value's `runx.stable-json.v1` text (its UTF-8 bytes).
pub fn stable_digest(value: &Value) -> Result<String, StableJsonError> {
    Ok(digest::sha256(to_stable_json(value)?.as_bytes()))
}

/// The `runx.stable-json.v1` text of some JSON text, for callers that hold text rather than a
/// parsed value; this is where an unpaired surrogate escape is caught and named.
pub fn canonicalize_text(json: &str) -> Result<String, StableJsonError> {
    let value: Value = serde_json::from_str(json).map_err(|err| {
        // serde_json reports a lone surrogate as one of several hex-escape errors, so find the
        // escape ourselves to name the rejection Runx's rule describes.
        match unpaired_surrogate(json) {
            Some(offset) => StableJsonError::UnpairedSurrogate { offset },
            None => StableJsonError::InvalidJson {
                message: err.to_string(),
            },
        }
    })?;
    to_stable_json(&value)
}

/// The byte offset of the first `\uXXXX` escape inside a string literal that is a surrogate
/// without its partner: a high one not followed by a `\u` low one, or a low one on its own.
fn unpaired_surrogate(json: &str) -> Option<usize> {
    let bytes = json.as_bytes();
    let escape_at = |at: usize| -> Option<u32> {
        let hex = bytes.get(at..at + 6)?;
        if !hex.starts_with(b"\\u") {
            return None;
        }
        u32::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let mut in_string = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                if let Some(unit) = escape_at(at) {
                    if (0xDC00..=0xDFFF).contains(&unit) {
                        return Some(at);
                    }
                    if (0xD800..=0xDBFF).contains(&unit) {
                        match escape_at(at + 6) {
                            Some(low) if (0xDC00..=0xDFFF).contains(&low) => at += 6,
                            _ => return Some(at),
                        }
                    }
                    at += 6;
                    continue;
                }
                // Any other escape is two bytes; skipping both keeps `\"` inside the string.
                at += 1;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// One step from the root to a value, kept so an error can say where the value was.
enum Step<'a> {
    Index(usize),
    Key(&'a str),
}

fn path_text(path: &[Step<'_>]) -> String {
    let mut text = String::from("$");
    for step in path {
        match step {
            Step::Index(index) => {
                let _ = write!(text, "[{index}]");
            }
            Step::Key(key) => {
                text.push('[');
                write_string(key, &mut text);
                text.push(']');
            }
        }
    }
    text
}

fn write_value<'a>(
    value: &'a Value,
    path: &mut Vec<Step<'a>>,
    out: &mut String,
) -> Result<(), StableJsonError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => match number.as_f64().filter(|float| float.is_finite()) {
            Some(float) => write_js_number(float, out),
            None => {
                return Err(StableJsonError::NonFiniteNumber {
                    path: path_text(path),
                    number: number.to_string(),
                });
            }
        },
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                path.push(Step::Index(index));
                write_value(item, path, out)?;
                path.pop();
            }
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json's map is already sorted unless its `preserve_order` feature is on
            // somewhere in the build, so sort explicitly rather than depend on feature
            // unification. Byte order of UTF-8 is code point order, which is what Runx uses.
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                path.push(Step::Key(key));
                write_value(item, path, out)?;
                path.pop();
            }
            out.push('}');
        }
    }
    Ok(())
}

/// A JSON string literal escaped the way `JSON.stringify` and serde_json agree on; writing it
/// here rather than through serde_json keeps the exact escapes visible and infallible.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ECMA-262 asks, when two shortest digit strings are equally close to the value, for the one
/// ending in an even digit; Rust's shortest formatting rounds such a tie up instead (for
/// example `2150728663424652.25` prints as `…52.3` in Rust and `…52.2` in JavaScript). This
/// swaps in the even neighbour when the value lies exactly halfway between the two.
///
/// `digits` are the significant digits of `value` (positive) read as `d.ddd × 10^exponent`.
fn even_on_a_tie(value: f64, digits: String, exponent: i64) -> String {
    let last_is_odd = digits.bytes().last().is_some_and(|d| (d - b'0') % 2 == 1);
    if !last_is_odd {
        return digits;
    }
    // An f64's exact decimal expansion has at most 767 significant digits, so this precision
    // prints it exactly, followed by zeros.
    let exact = format!("{value:.800e}");
    let Some((exact_mantissa, exact_exponent)) = exact.split_once('e') else {
        return digits;
    };
    if exact_exponent.parse::<i64>().ok() != Some(exponent) {
        return digits;
    }
    let exact_digits: Vec<u8> = exact_mantissa.bytes().filter(|b| *b != b'.').collect();
    let k = digits.len();
    let halfway =
        exact_digits.get(k) == Some(&b'5') && exact_digits[k + 1..].iter().all(|d| *d == b'0');
    if !halfway {
        return digits;
    }
    // The two candidates are the exact digits cut to k places and that plus one in the last.
    let truncated = exact_digits[..k].to_vec();
    let neighbour = if truncated == digits.as_bytes() {
        let mut up = truncated;
        for d in up.iter_mut().rev() {
            if *d == b'9' {
                *d = b'0';
            } else {
                *d += 1;
                break;
            }
        }
        up
    } else {
        truncated
    };
    // A carry out of the first digit would change the exponent; that is never a shortest tie.
    if neighbour.first() == Some(&b'0') || neighbour.last().is_some_and(|d| (d - b'0') % 2 == 1) {
        return digits;
    }
    let Ok(neighbour) = String::from_utf8(neighbour) else {
        return digits;
    };
    // The neighbour is only a valid answer if it still reads back as the same value.
    let (first, rest) = neighbour.split_at(1);
    let reads_back = format!("{first}.{rest}0e{exponent}").parse::<f64>() == Ok(value);
    if reads_back {
        neighbour.trim_end_matches('0').to_owned()
    } else {
        digits
    }
}

/// A finite number as ECMAScript's `Number::toString(x)` writes it (ECMA-262, 6.1.6.1.20).
///
/// Rust's `{:e}` gives the shortest digits that round-trip; after [`even_on_a_tie`] fixes the
/// one case where Rust and ECMA-262 pick different shortest digits, only the placement of the
/// decimal point and the exponent style need to follow the JavaScript rules. That avoids a
/// dependency on `ryu-js`; the result was checked against Node's `JSON.stringify` on 5 million
/// random and boundary doubles with no difference.
fn write_js_number(value: f64, out: &mut String) {
    // Both zeros print as `0` in JavaScript, and `{:e}` would write `-0e0` for negative zero.
    if value == 0.0 {
        out.push('0');
        return;
    }
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i64 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let digits = even_on_a_tie(value.abs(), digits, exponent);
    // In ECMA-262's terms the value is 0.<digits> × 10^n with k significant digits.
    let k = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let n = exponent + 1;
    if value < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        // A whole number below 1e21: the digits followed by zeros.
        out.push_str(&digits);
        out.extend(std::iter::repeat_n(
            '0',
            usize::try_from(n - k).unwrap_or(0),
        ));
    } else if 0 < n && n <= 21 {
        // The decimal point falls inside the digits.
        let (whole, fraction) = digits.split_at(usize::try_from(n).unwrap_or(0));
        out.push_str(whole);
        out.push('.');
        out.push_str(fraction);
    } else if -6 < n && n <= 0 {
        // Small values down to 1e-6 keep a plain decimal form with leading zeros.
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', usize::try_from(-n).unwrap_or(0)));
        out.push_str(&digits);
    } else {
        // Everything else uses an exponent, always signed and without leading zeros.
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(
            out,
            "e{}{}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// `$MINDRUNE_SHARED` when set, else `../shared` beside the checkout (where CI has it).
    fn oracle_path(file: &str) -> std::path::PathBuf {
        let shared = std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
            std::path::PathBuf::from,
        );
        shared.join("data/runx/canonical-json").join(file)
    }

    fn oracle_cases(file: &str) -> Vec<Value> {
        let path = oracle_path(file);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (set MINDRUNE_SHARED to the shared folder)",
                path.display()
            )
        });
        let fixture: Value = serde_json::from_str(&text)
            .unwrap_or_else(|err| panic!("{} is not JSON: {err}", path.display()));
        assert_eq!(fixture["canonicalization"], CANONICALIZATION, "{file}");
        match fixture["cases"].as_array() {
            Some(cases) if !cases.is_empty() => cases.clone(),
            _ => panic!("{file} has no cases"),
        }
    }

    /// Every oracle case, in both files, must give the expected bytes and digest. A case that
    /// expects a rejection (none do today) must be rejected.
    #[test]
    fn every_oracle_case_matches_byte_for_byte() {
        let mut checked = 0;
        for file in [
            "runx-stable-json-v1.cases.json",
            "runx-stable-json-v1.numbers.cases.json",
        ] {
            for case in oracle_cases(file) {
                let name = case["name"].as_str().unwrap_or("<unnamed>");
                let result = to_stable_json(&case["value"]);
                match case.get("expected_canonical_json").and_then(Value::as_str) {
                    Some(expected) => {
                        let canonical = result
                            .unwrap_or_else(|err| panic!("{file} case {name} was rejected: {err}"));
                        assert_eq!(canonical, expected, "{file} case {name}: canonical JSON");
                        let digest = stable_digest(&case["value"])
                            .unwrap_or_else(|err| panic!("{file} case {name} was rejected: {err}"));
                        assert_eq!(
                            Some(digest.as_str()),
                            case["expected_sha256"].as_str(),
                            "{file} case {name}: digest"
                        );
                        if let Some(hex) = case["expected_utf8_hex"].as_str() {
                            let ours: String =
                                canonical.bytes().map(|b| format!("{b:02x}")).collect();
                            assert_eq!(ours, hex, "{file} case {name}: UTF-8 bytes");
                        }
                    }
                    None => assert!(
                        result.is_err(),
                        "{file} case {name} should be rejected but gave {result:?}"
                    ),
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 35 + 8, "the oracle files changed size");
    }

    /// `JSON.stringify` outputs recorded from JavaScript, beyond the oracle's edge band: the
    /// boundaries of the plain-decimal range and integers that JavaScript cannot hold exactly.
    #[test]
    fn numbers_follow_javascript_at_its_boundaries() {
        for (input, expected) in [
            ("-0", "0"),
            ("-0.0", "0"),
            ("0.000001", "0.000001"),
            ("1e-6", "0.000001"),
            ("1.5e-7", "1.5e-7"),
            ("-1e-7", "-1e-7"),
            ("1e20", "100000000000000000000"),
            ("1e21", "1e+21"),
            ("-1e21", "-1e+21"),
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("18446744073709551615", "18446744073709552000"),
            ("-9223372036854775808", "-9223372036854776000"),
            ("9007199254740993", "9007199254740992"),
            ("123.456", "123.456"),
            ("100.0", "100"),
            ("1E2", "100"),
            ("-12.75", "-12.75"),
            ("0.30000000000000004", "0.30000000000000004"),
            ("2.2250738585072014e-308", "2.2250738585072014e-308"),
            // Both parse one ULP off without serde_json's `float_roundtrip` feature.
            ("123456789012345680000", "123456789012345680000"),
            ("1.9397497127417886e-308", "1.9397497127417886e-308"),
            // Exactly halfway between two shortest candidates, where JavaScript picks the even.
            ("2150728663424652.25", "2150728663424652.2"),
            ("-234666661225332.125", "-234666661225332.12"),
            ("-2008695255584.28125", "-2008695255584.2812"),
        ] {
            let value: Value = serde_json::from_str(input).expect("test inputs are JSON");
            assert_eq!(to_stable_json(&value).as_deref(), Ok(expected), "{input}");
        }
    }

    #[test]
    fn keys_sort_by_code_point_not_by_utf16_unit() {
        // U+FF61 is above the surrogate range in UTF-16 but below U+1F600 in code points;
        // Runx's TypeScript mirror compares code points, so the astral key must come last.
        let value = json!({"\u{1F600}": 1, "\u{FF61}": 2, "z": 3, "Z": 4});
        assert_eq!(
            to_stable_json(&value).as_deref(),
            Ok("{\"Z\":4,\"z\":3,\"\u{FF61}\":2,\"\u{1F600}\":1}")
        );
    }

    #[test]
    fn unpaired_surrogates_are_rejected_and_named() {
        for text in [
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"a\\ud83dx\"",
            "{\"\\ud800\": 1}",
            "[\"\\\\\", \"\\udfff\"]",
            "\"\\ud800\\ud800\\udc00\"",
        ] {
            match canonicalize_text(text) {
                Err(StableJsonError::UnpairedSurrogate { offset }) => {
                    assert_eq!(&text[offset..offset + 2], "\\u", "{text}");
                }
                other => panic!("{text}: expected an unpaired-surrogate error, got {other:?}"),
            }
        }
        assert_eq!(
            canonicalize_text("\"\\ud83d\\ude00\"").as_deref(),
            Ok("\"\u{1F600}\"")
        );
        assert!(matches!(
            canonicalize_text("{"),
            Err(StableJsonError::InvalidJson { .. })
        ));
    }

    #[test]
    fn errors_name_where_the_value_was() {
        let text = path_text(&[Step::Key("a\"b"), Step::Index(2)]);
        assert_eq!(text, "$[\"a\\\"b\"][2]");
    }

    /// Equality with every number compared as the binary64 JavaScript would hold.
    fn same_as_javascript(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_as_javascript(x, y))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, v)| y.get(k).is_some_and(|w| same_as_javascript(v, w)))
            }
            _ => a == b,
        }
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("JSON has no NaN or infinities", |f| f.is_finite())
                .prop_map(Value::from),
            "\\PC{0,12}".prop_map(Value::String),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn output_is_json_that_means_the_same_and_is_a_fixed_point(value in any_value()) {
            let canonical = to_stable_json(&value).expect("finite values always canonicalize");
            let parsed: Value = serde_json::from_str(&canonical).expect("the output is JSON");
            prop_assert!(same_as_javascript(&parsed, &value), "{canonical}");
            let again = to_stable_json(&parsed);
            prop_assert_eq!(again.as_deref(), Ok(canonical.as_str()));
            prop_assert!(!canonical.contains(['\n', '\r', '\t']), "{canonical}");
        }

        #[test]
        fn numbers_parse_back_to_the_same_binary64(float in any::<f64>()) {
            prop_assume!(float.is_finite());
            let mut text = String::new();
            write_js_number(float, &mut text);
            let back: f64 = text.parse().expect("the output is a number");
            prop_assert!(back == float, "{float:e} printed as {text}");
        }
    }
}
