//! The comparison rules a fixture's `expect` block is judged by, kept to Runx's semantics.
//!
//! * `exact`: the whole value equals (JSON equality, so `1840` and `1840.0` are one number).
//! * `subset`: an object matches on the keys it lists (a listed key that is absent compares as
//!   `null`); an array matches element-wise on its own positions, so it must not be longer than
//!   the actual array (Runx: `subset_arrays_match_ordered_object_prefixes`); anything else is
//!   equal or not.
//! * caller answers are oracles: each one must be observable somewhere in what the run
//!   produced — equal to some value in it, or a recursive object-subset of some object in it.

use serde_json::Value;

/// One failed comparison: where, and the two sides as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub path: String,
    pub expected: String,
    pub actual: String,
}

impl Mismatch {
    fn new(path: &str, expected: &Value, actual: &Value) -> Self {
        Self {
            path: path.to_owned(),
            expected: expected.to_string(),
            actual: actual.to_string(),
        }
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected {}, got {}",
            self.path, self.expected, self.actual
        )
    }
}

/// Runx's `subset`: the first mismatch, with its JSON path under `path`.
pub(crate) fn subset(expected: &Value, actual: &Value, path: &str) -> Result<(), Mismatch> {
    match expected {
        Value::Object(expected_object) => {
            let Some(actual_object) = actual.as_object() else {
                return Err(Mismatch::new(path, expected, actual));
            };
            for (key, expected_value) in expected_object {
                let actual_value = actual_object.get(key).unwrap_or(&Value::Null);
                subset(expected_value, actual_value, &format!("{path}.{key}"))?;
            }
            Ok(())
        }
        Value::Array(expected_items) => {
            let Some(actual_items) = actual.as_array() else {
                return Err(Mismatch::new(path, expected, actual));
            };
            if expected_items.len() > actual_items.len() {
                return Err(Mismatch::new(path, expected, actual));
            }
            for (index, (expected_item, actual_item)) in
                expected_items.iter().zip(actual_items).enumerate()
            {
                subset(expected_item, actual_item, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        _ if json_equal(expected, actual) => Ok(()),
        _ => Err(Mismatch::new(path, expected, actual)),
    }
}

/// Runx's `exact`.
pub(crate) fn exact(expected: &Value, actual: &Value, path: &str) -> Result<(), Mismatch> {
    if json_equal(expected, actual) {
        Ok(())
    } else {
        Err(Mismatch::new(path, expected, actual))
    }
}

/// JSON equality with numbers compared by value, because YAML `200` and a JavaScript `200`
/// can arrive as different serde representations (integer and float) of the same number.
pub(crate) fn json_equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(a), Value::Number(b)) => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (a.as_u64(), b.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => a.as_f64() == b.as_f64(),
            },
        },
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, x)| b.get(key).is_some_and(|y| json_equal(x, y)))
        }
        _ => left == right,
    }
}

/// Whether `expected` is observable in `actual`: equal to it, a recursive object-subset of it,
/// or either of those for some value nested anywhere inside it.
///
/// One step beyond Runx's literal text: a runtime packet `{data: X}` is also looked through
/// when it stands where the answer has an object, because the harness itself wraps a declared
/// `named_emits` output that way and an answer is not "lost" by being enveloped.
pub(crate) fn observable(expected: &Value, actual: &Value) -> bool {
    if json_equal(expected, actual) || object_subset(expected, actual) {
        return true;
    }
    match actual {
        Value::Array(items) => items.iter().any(|item| observable(expected, item)),
        Value::Object(map) => map.values().any(|item| observable(expected, item)),
        _ => false,
    }
}

fn object_subset(expected: &Value, actual: &Value) -> bool {
    let (Value::Object(expected), Value::Object(actual)) = (expected, actual) else {
        return false;
    };
    expected.iter().all(|(key, expected_value)| {
        actual.get(key).is_some_and(|actual_value| {
            let unwrapped = unwrap_envelope(actual_value);
            match (expected_value, actual_value) {
                (Value::Object(_), Value::Object(_)) => {
                    object_subset(expected_value, actual_value)
                        || unwrapped.is_some_and(|inner| {
                            json_equal(expected_value, inner)
                                || object_subset(expected_value, inner)
                        })
                }
                _ => {
                    json_equal(expected_value, actual_value)
                        || unwrapped.is_some_and(|inner| json_equal(expected_value, inner))
                }
            }
        })
    })
}

/// The inner value of a runtime `{data: ...}` envelope (optionally with a `schema`).
pub(crate) fn unwrap_envelope(value: &Value) -> Option<&Value> {
    let object = value.as_object()?;
    let data = object.get("data")?;
    let is_envelope = object.len() == 1
        || object
            .get("schema")
            .and_then(Value::as_str)
            .is_some_and(|schema| !schema.trim().is_empty());
    is_envelope.then_some(data)
}

/// Wrap a value in the canonical `{data: ...}` packet unless it already is one; Runx's
/// `data_envelope` is idempotent in the same way.
pub(crate) fn data_envelope(value: Value) -> Value {
    if unwrap_envelope(&value).is_some() {
        value
    } else {
        serde_json::json!({ "data": value })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn subset_objects_list_keys_and_missing_keys_are_null() {
        assert!(subset(&json!({"a": 1}), &json!({"a": 1.0, "b": 2}), "x").is_ok());
        assert_eq!(
            subset(
                &json!({"a": {"b": "ready"}}),
                &json!({"a": {"b": "refused"}}),
                "out"
            )
            .map_err(|m| m.to_string()),
            Err("out.a.b: expected \"ready\", got \"refused\"".to_owned())
        );
        assert!(subset(&json!({"gone": null}), &json!({}), "x").is_ok());
    }

    #[test]
    fn subset_arrays_are_ordered_prefixes() {
        assert!(
            subset(
                &json!([{"id": 1}]),
                &json!([{"id": 1, "s": 0}, {"id": 2}]),
                "x"
            )
            .is_ok()
        );
        assert!(subset(&json!([{"id": 1}, {"id": 2}]), &json!([{"id": 1}]), "x").is_err());
        assert!(subset(&json!([{"id": 2}]), &json!([{"id": 1}]), "x").is_err());
    }

    #[test]
    fn answers_are_observable_through_nesting_and_envelopes() {
        let answer = json!({"draft": {"decision": "ready"}});
        assert!(observable(&answer, &json!({"x": [answer.clone()]})));
        assert!(observable(
            &answer,
            &json!({"draft": {"data": {"decision": "ready", "extra": 1}}})
        ));
        assert!(!observable(
            &answer,
            &json!({"draft": {"decision": "refused"}})
        ));
    }
}
