//! One hook call's JSON, parsed once: every part of a hook call (the guard, the recorder, the
//! playbook workspace's turn record) reads this value, never the text again.

use serde_json::Value;

/// A hook input that is not what Claude Code sends, by the field at fault.
#[derive(Debug, thiserror::Error)]
#[error("{}{message}", field.as_ref().map(|f| format!("hook field `{f}`: ")).unwrap_or_default())]
pub struct HookError {
    pub(crate) field: Option<String>,
    pub(crate) message: String,
}

pub(crate) fn hook_error(field: &str, message: impl Into<String>) -> HookError {
    HookError {
        field: Some(field.to_string()),
        message: message.into(),
    }
}

/// A hook call: its JSON object and the event it is for (`hook_event_name`).
#[derive(Debug, Clone)]
pub struct Payload {
    value: Value,
    event: String,
}

impl Payload {
    /// Reads a hook's stdin: a JSON object with a `hook_event_name`.
    pub fn parse(input: &str) -> Result<Payload, HookError> {
        let value: Value = serde_json::from_str(input).map_err(|err| HookError {
            field: None,
            message: format!("the hook input is not JSON: {err}"),
        })?;
        let event = value
            .get("hook_event_name")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                hook_error("hook_event_name", "is missing; is this a Claude Code hook?")
            })?
            .to_string();
        Ok(Payload { value, event })
    }

    /// `PreToolUse`, `PostToolUse`, `Stop`, …
    pub(crate) fn event(&self) -> &str {
        &self.event
    }

    /// The whole object, as Claude Code sent it.
    pub(crate) fn value(&self) -> &Value {
        &self.value
    }

    /// A text field of the object.
    pub(crate) fn text(&self, field: &str) -> Option<&str> {
        self.value.get(field).and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_names_its_event_or_says_what_is_missing() {
        let payload = Payload::parse(r#"{"hook_event_name": "Stop", "cwd": "/w"}"#).unwrap();
        assert_eq!((payload.event(), payload.text("cwd")), ("Stop", Some("/w")));
        let err = Payload::parse(r#"{"cwd": "/w"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("hook_event_name"));
        let err = Payload::parse("not json").unwrap_err();
        assert!(
            err.to_string().starts_with("the hook input is not JSON"),
            "{err}"
        );
    }
}
