//! What a hook prints on stdout, where Claude Code reads it: always one JSON object, so nothing
//! else can be mistaken for an answer.

use serde_json::{Value, json};

/// A `PreToolUse` answer that denies the call: Claude Code does not run it and tells the model
/// the reason.
pub fn deny(reason: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

/// A `SessionStart` answer: `text` becomes the agent's context.
pub fn session_context(text: &str) -> Value {
    context("SessionStart", text)
}

/// A `SessionStart` answer that also shows `warning` to the user (`systemMessage`).
pub fn session_context_warned(text: &str, warning: &str) -> Value {
    let mut answer = session_context(text);
    answer["systemMessage"] = Value::String(warning.to_string());
    answer
}

/// A `UserPromptSubmit` answer: `text` is added to the turn's context.
pub fn prompt_context(text: &str) -> Value {
    context("UserPromptSubmit", text)
}

/// Any hook's answer that only shows `message` to the user.
pub fn system_message(message: &str) -> Value {
    json!({ "systemMessage": message })
}

fn context(event: &str, text: &str) -> Value {
    json!({
        "hookSpecificOutput": {
            "hookEventName": event,
            "additionalContext": text,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_have_the_shapes_claude_code_reads() {
        assert_eq!(
            deny("no")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        let warned = session_context_warned("read this", "stale");
        assert_eq!(warned["systemMessage"], "stale");
        assert_eq!(
            warned["hookSpecificOutput"]["additionalContext"],
            "read this"
        );
        assert_eq!(
            prompt_context("x")["hookSpecificOutput"]["hookEventName"],
            "UserPromptSubmit"
        );
    }
}
