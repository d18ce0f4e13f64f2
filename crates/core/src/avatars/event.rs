//! The event contract: how a host reports one tool call (one JSON object per line).
//!
//! Fields (all but `agent` optional): `id`, `agent`, `at`, `kind`, `command`, `cwd`, `script`,
//! `code`, `background`, `ok`, `duration_ms`, `output`, `measures`, `damage`, `code_at_start`.
//! Unknown fields are an error, not ignored: a typo must not silently drop a measurement.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The longest inline `code` accepted, in characters (rs-sdk's `execute_code` limit).
pub(crate) const MAX_CODE_CHARS: usize = 262_144;
/// The longest `command` accepted, in characters.
pub(crate) const MAX_COMMAND_CHARS: usize = 262_144;
/// The most scripts one event's `code_at_start` holds (one call that runs more is rare; the
/// rest are read when recorded, as without the field).
pub const MAX_SCRIPTS_AT_START: usize = 16;

/// What kind of tool call an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Shell,
    ExecuteCode,
}

/// Results of a run, when the host measured them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measures {
    #[serde(default)]
    pub xp: BTreeMap<String, f64>,
    #[serde(default)]
    pub items: BTreeMap<String, f64>,
    #[serde(default)]
    pub goal_progress: Option<f64>,
}

/// Harm a run came to, when the host measured it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Damage {
    #[serde(default)]
    pub deaths: u32,
    #[serde(default)]
    pub stuck: bool,
    #[serde(default)]
    pub items_lost: u32,
}

/// One tool call as it arrives on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvent {
    /// A host-chosen id; a second event with the same id is a retry and is not counted again.
    #[serde(default)]
    pub id: Option<String>,
    pub agent: String,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub at: Option<OffsetDateTime>,
    #[serde(default)]
    pub kind: Option<EventKind>,
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub script: Option<String>,
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub background: Option<bool>,
    #[serde(default)]
    pub ok: Option<bool>,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub output: Option<String>,
    #[serde(default)]
    pub measures: Option<Measures>,
    #[serde(default)]
    pub damage: Option<Damage>,
    /// The code each script the call ran had when the call started, by workspace-relative path
    /// (`bots/<bot>/<name>.ts`), as the host read it then: a run is filed under the version
    /// that ran, even when the file was edited before the event was recorded (a hook's
    /// `PostToolUse` comes after the run; a runner delivers later still).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_at_start: Option<BTreeMap<String, String>>,
}

/// What the call did, once the kind is settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Shell {
        command: String,
        cwd: Option<String>,
    },
    ExecuteScript {
        script: String,
    },
    ExecuteCode {
        code: String,
    },
}

/// A checked event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub agent: String,
    pub at: Option<OffsetDateTime>,
    pub call: Call,
    pub background: bool,
    pub ok: Option<bool>,
    pub duration_ms: Option<u64>,
    pub output: Option<String>,
    pub measures: Option<Measures>,
    pub damage: Option<Damage>,
    /// See [`RawEvent::code_at_start`]; empty when the host did not capture the code.
    pub code_at_start: BTreeMap<String, String>,
}

/// Why an event line was rejected: the field (when one is to blame) and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct EventError {
    pub field: Option<String>,
    pub message: String,
}

impl EventError {
    fn field(field: &str, message: impl Into<String>) -> EventError {
        EventError {
            field: Some(field.to_string()),
            message: message.into(),
        }
    }
}

/// Parses and checks one event line. A value of the wrong type names its field by its path
/// (`ok`, `at`, `measures.xp.Mining`), as the server's answers do.
pub fn parse_line(line: &str) -> Result<Event, EventError> {
    // Tracking the path costs a sixth of the parse on every field of every line; a line that
    // parses needs none, so only a failed line is read again with it, for its message.
    if let Ok(raw) = serde_json::from_str::<RawEvent>(line) {
        return check(raw);
    }
    let mut deserializer = serde_json::Deserializer::from_str(line);
    let raw: RawEvent = serde_path_to_error::deserialize(&mut deserializer).map_err(|err| {
        let path = err.path().to_string();
        // serde_json's message already says where (`at line 1 column 20`).
        let message = err.into_inner().to_string();
        let field = (path != "." && !path.is_empty()).then_some(path);
        EventError { field, message }
    })?;
    deserializer.end().map_err(|err| EventError {
        field: None,
        message: format!("{err}: one event per line"),
    })?;
    check(raw)
}

/// Checks a decoded event: the kind and its fields agree, sizes and numbers are sane.
pub fn check(raw: RawEvent) -> Result<Event, EventError> {
    if raw.agent.trim().is_empty() {
        return Err(EventError::field(
            "agent",
            "is empty; name the agent that made the call",
        ));
    }
    let kind = match raw.kind {
        Some(kind) => kind,
        None if raw.command.is_some() => EventKind::Shell,
        None if raw.script.is_some() || raw.code.is_some() => EventKind::ExecuteCode,
        None => {
            return Err(EventError::field(
                "kind",
                "is missing and cannot be told from the other fields; give `command` (shell) or `script`/`code` (execute_code)",
            ));
        }
    };
    let call = match kind {
        EventKind::Shell => {
            if raw.script.is_some() || raw.code.is_some() {
                return Err(EventError::field(
                    "kind",
                    "is `shell` but the event has `script` or `code`; those belong to `execute_code`",
                ));
            }
            let Some(command) = raw.command else {
                return Err(EventError::field(
                    "command",
                    "is missing; a shell event needs the command line",
                ));
            };
            if command.chars().count() > MAX_COMMAND_CHARS {
                return Err(EventError::field(
                    "command",
                    format!("is longer than {MAX_COMMAND_CHARS} characters"),
                ));
            }
            Call::Shell {
                command,
                cwd: raw.cwd,
            }
        }
        EventKind::ExecuteCode => {
            if raw.command.is_some() || raw.cwd.is_some() {
                return Err(EventError::field(
                    "kind",
                    "is `execute_code` but the event has `command`/`cwd`; those belong to `shell`",
                ));
            }
            match (raw.script, raw.code) {
                (Some(_), Some(_)) => {
                    return Err(EventError::field(
                        "script",
                        "and `code` are both given; an execute_code call runs one or the other",
                    ));
                }
                (Some(script), None) => {
                    if script.trim().is_empty() {
                        return Err(EventError::field("script", "is empty"));
                    }
                    Call::ExecuteScript { script }
                }
                (None, Some(code)) => {
                    if code.chars().count() > MAX_CODE_CHARS {
                        return Err(EventError::field(
                            "code",
                            format!(
                                "is longer than {MAX_CODE_CHARS} characters (rs-sdk's own limit); save it as a script"
                            ),
                        ));
                    }
                    Call::ExecuteCode { code }
                }
                (None, None) => {
                    return Err(EventError::field(
                        "script",
                        "or `code` is needed for an execute_code event",
                    ));
                }
            }
        }
    };
    if let Some(measures) = &raw.measures {
        for (name, value) in measures.xp.iter().chain(measures.items.iter()) {
            if !value.is_finite() || *value < 0.0 {
                return Err(EventError::field(
                    "measures",
                    format!("`{name}` is {value}; gains must be finite and not negative"),
                ));
            }
        }
        if let Some(progress) = measures.goal_progress
            && !(0.0..=1.0).contains(&progress)
        {
            return Err(EventError::field(
                "measures.goal_progress",
                format!("is {progress}; it must lie between 0 and 1"),
            ));
        }
    }
    let code_at_start = raw.code_at_start.unwrap_or_default();
    if code_at_start.len() > MAX_SCRIPTS_AT_START {
        return Err(EventError::field(
            "code_at_start",
            format!(
                "holds {} scripts; at most {MAX_SCRIPTS_AT_START} (leave the rest out: they are read when the event is recorded)",
                code_at_start.len()
            ),
        ));
    }
    for (path, code) in &code_at_start {
        let is_script = path
            .strip_prefix("bots/")
            .and_then(|rest| rest.split_once('/'))
            .is_some_and(|(bot, name)| {
                !bot.is_empty()
                    && bot != ".."
                    && bot != "."
                    && name.ends_with(".ts")
                    && !name.contains('/')
                    && !name.starts_with('.')
            });
        if !is_script {
            return Err(EventError::field(
                &format!("code_at_start.{path}"),
                "is not a bot's script path; keys are workspace-relative, bots/<bot>/<name>.ts",
            ));
        }
        if code.chars().count() > MAX_CODE_CHARS {
            return Err(EventError::field(
                &format!("code_at_start.{path}"),
                format!("is longer than {MAX_CODE_CHARS} characters; leave it out"),
            ));
        }
    }
    check_control_characters(raw.id.as_deref(), &raw.agent, &call, &code_at_start)?;
    Ok(Event {
        id: raw.id,
        agent: raw.agent,
        at: raw.at,
        call,
        background: raw.background.unwrap_or(false),
        ok: raw.ok,
        duration_ms: raw.duration_ms,
        output: raw.output,
        measures: raw.measures,
        damage: raw.damage,
        code_at_start,
    })
}

/// Refuses control characters where no line of text holds them: none at all in `id`, `agent`,
/// `cwd`, `script` and `code_at_start`'s paths; in `command` none but tab, newline and carriage
/// return (a command line may span lines: a heredoc, a `\`-continued line). `code`, `output`
/// and a script's code are the host's text as it was (a program, a terminal's output) and are
/// not checked. The error names the field, the character and where it is.
pub fn check_control_characters(
    id: Option<&str>,
    agent: &str,
    call: &Call,
    code_at_start: &BTreeMap<String, String>,
) -> Result<(), EventError> {
    let mut fields: Vec<(String, &str, bool)> = Vec::new();
    if let Some(id) = id {
        fields.push(("id".into(), id, false));
    }
    fields.push(("agent".into(), agent, false));
    match call {
        Call::Shell { command, cwd } => {
            fields.push(("command".into(), command, true));
            if let Some(cwd) = cwd {
                fields.push(("cwd".into(), cwd, false));
            }
        }
        Call::ExecuteScript { script } => fields.push(("script".into(), script, false)),
        Call::ExecuteCode { .. } => {}
    }
    for path in code_at_start.keys() {
        fields.push(("code_at_start".into(), path, false));
    }
    for (field, text, lines) in fields {
        let found = text
            .chars()
            .enumerate()
            .find(|&(_, c)| c.is_control() && !(lines && matches!(c, '\t' | '\n' | '\r')));
        if let Some((at, c)) = found {
            let what = if c == '\0' {
                "a NUL character".to_owned()
            } else {
                "a control character".to_owned()
            };
            let allowed = if lines {
                "a command may hold no control character but tab, newline and carriage return"
            } else {
                "this field may hold no control character"
            };
            return Err(EventError::field(
                &field,
                format!(
                    "holds {what} (U+{:04X}) at character {}; {allowed}: send the text without it",
                    u32::from(c),
                    at + 1
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_at_start_holds_only_bot_scripts_and_names_the_bad_key() {
        let event = parse_line(
            r#"{"agent":"buzz","command":"bun bots/buzz/chop.ts","code_at_start":{"bots/buzz/chop.ts":"await bot.chop();\n"}}"#,
        )
        .unwrap();
        assert_eq!(
            event
                .code_at_start
                .get("bots/buzz/chop.ts")
                .map(String::as_str),
            Some("await bot.chop();\n")
        );
        for key in [
            "../etc/passwd",
            "bots/buzz/notes.md",
            "bots/../x.ts",
            "bots/buzz/a/b.ts",
            "/work/bots/buzz/chop.ts",
        ] {
            let line =
                format!(r#"{{"agent":"buzz","command":"bun x","code_at_start":{{"{key}":"x"}}}}"#);
            let err = parse_line(&line).unwrap_err();
            assert_eq!(
                err.field.as_deref(),
                Some(format!("code_at_start.{key}").as_str()),
                "{key}"
            );
        }
    }

    #[test]
    fn a_shell_event_parses_and_its_kind_is_inferred() {
        let event = parse_line(
            r#"{"agent":"buzz","at":"2026-11-28T10:00:00Z","command":"bun bots/buzz/chop.ts","cwd":"/work","ok":true,"duration_ms":61000}"#,
        )
        .unwrap();
        assert_eq!(event.agent, "buzz");
        assert!(matches!(event.call, Call::Shell { .. }));
        assert_eq!(event.duration_ms, Some(61_000));
    }

    #[test]
    fn an_execute_code_event_with_measures_and_damage_parses() {
        let event = parse_line(
            r#"{"agent":"buzz","kind":"execute_code","script":"bots/buzz/mine.ts","ok":false,"measures":{"xp":{"Mining":1250},"items":{"Iron ore":14},"goal_progress":0.5},"damage":{"deaths":1,"stuck":false,"items_lost":3}}"#,
        )
        .unwrap();
        assert_eq!(
            event.call,
            Call::ExecuteScript {
                script: "bots/buzz/mine.ts".into()
            }
        );
        assert_eq!(event.measures.unwrap().xp["Mining"], 1250.0);
        assert_eq!(event.damage.unwrap().deaths, 1);
    }

    #[test]
    fn an_unknown_field_is_an_error_that_names_it() {
        let err = parse_line(r#"{"agent":"buzz","command":"ls","okay":true}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("okay"));
    }

    #[test]
    fn bad_json_is_an_error_with_a_column() {
        let err = parse_line(r#"{"agent":"buzz","#).unwrap_err();
        assert!(err.message.contains("column"), "{err}");
    }

    #[test]
    fn code_over_the_limit_is_rejected() {
        let code = "a".repeat(MAX_CODE_CHARS + 1);
        let line = serde_json::json!({"agent": "buzz", "code": code}).to_string();
        assert_eq!(
            parse_line(&line).unwrap_err().field.as_deref(),
            Some("code")
        );
    }

    #[test]
    fn control_characters_are_refused_by_field_and_a_command_keeps_its_tabs_and_newlines() {
        let err = parse_line(r#"{"id":"a\u0000b","agent":"buzz","command":"ls"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("id"));
        assert!(
            err.to_string()
                .starts_with("field `id`: holds a NUL character (U+0000) at character 2;"),
            "{err}"
        );
        let err = parse_line(r#"{"agent":"buzz","command":"ls\u0000 -l"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("command"), "{err}");
        let err = parse_line(r#"{"agent":"buzz","command":"ls","cwd":"/w\u001b[2J"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("cwd"), "{err}");
        assert!(
            err.message.contains("a control character (U+001B)"),
            "{err}"
        );
        let err = parse_line(r#"{"agent":"bu\tzz","command":"ls"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("agent"), "{err}");
        let err = parse_line(r#"{"agent":"buzz","script":"bots/buzz/a\n.ts"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("script"), "{err}");
        let err = parse_line(
            r#"{"agent":"buzz","script":"bots/buzz/a.ts","code_at_start":{"bots/buzz/\u0007.ts":"x"}}"#,
        )
        .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("code_at_start"), "{err}");
        // A command may span lines and hold tabs; code and output are the host's text as is.
        parse_line(
            r#"{"agent":"buzz","command":"cat <<EOF\r\n\ta\nEOF","output":"\u001b[31mred\u0000"}"#,
        )
        .unwrap();
        parse_line(r#"{"agent":"buzz","code":"let a = '\u0000';"}"#).unwrap();
    }

    #[test]
    fn script_and_code_together_are_rejected() {
        let err = parse_line(r#"{"agent":"a","script":"bots/a/x.ts","code":"1"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("script"));
    }

    #[test]
    fn negative_xp_is_rejected() {
        let err = parse_line(r#"{"agent":"a","command":"x","measures":{"xp":{"Mining":-1}}}"#)
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("measures"));
    }

    #[test]
    fn a_value_of_the_wrong_type_names_its_field() {
        let err = parse_line(r#"{"agent":"a","command":"x","ok":"yes"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("ok"), "{err}");
        assert!(
            err.to_string().starts_with("field `ok`: invalid type"),
            "{err}"
        );
        let err = parse_line(r#"{"agent":"a","command":"x","measures":{"xp":{"Mining":"lots"}}}"#)
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("measures.xp.Mining"), "{err}");
        let err = parse_line(r#"{"agent":"a","command":"x","damage":{"deaths":1,"lost":2}}"#)
            .unwrap_err();
        assert_eq!(err.field.as_deref(), Some("damage.lost"), "{err}");
    }

    #[test]
    fn a_year_out_of_range_names_the_timestamp_field() {
        let err =
            parse_line(r#"{"agent":"a","command":"x","at":"99999-01-01T00:00:00Z"}"#).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("at"), "{err}");
    }

    #[test]
    fn trailing_text_after_the_event_is_an_error() {
        assert!(parse_line(r#"{"agent":"a","command":"x"} {"#).is_err());
    }

    #[test]
    fn a_bad_timestamp_is_rejected() {
        assert!(parse_line(r#"{"agent":"a","command":"x","at":"yesterday"}"#).is_err());
    }

    /// The path-tracking parse alone, as `parse_line` was before its fast path.
    fn parse_line_tracking_paths(line: &str) -> Result<RawEvent, String> {
        let mut deserializer = serde_json::Deserializer::from_str(line);
        let raw: RawEvent =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|e| e.to_string())?;
        deserializer.end().map_err(|e| e.to_string())?;
        Ok(raw)
    }

    fn event_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let field = prop_oneof![
            Just(r#""agent":"buzz""#.to_string()),
            Just(r#""command":"bun bots/buzz/chop.ts""#.to_string()),
            Just(r#""kind":"shell""#.to_string()),
            Just(r#""ok":true"#.to_string()),
            Just(r#""ok":"yes""#.to_string()),
            Just(r#""duration_ms":1200"#.to_string()),
            Just(r#""duration_ms":-3"#.to_string()),
            Just(r#""at":"2026-12-01T10:00:00Z""#.to_string()),
            Just(r#""measures":{"xp":{"Woodcutting":25}}"#.to_string()),
            Just(r#""measures":{"xp":{"Woodcutting":"lots"}}"#.to_string()),
            Just(r#""id":"e1""#.to_string()),
            Just(r#""nonsense":1"#.to_string()),
        ];
        (proptest::collection::vec(field, 0..6), "[ }]{0,2}")
            .prop_map(|(fields, tail)| format!("{{{}}}{tail}", fields.join(",")))
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(line in "\\PC{0,300}") {
            let _ = parse_line(&line);
        }

        #[test]
        fn a_line_parses_exactly_when_the_path_tracking_parse_accepts_it(line in event_line()) {
            let tracked = parse_line_tracking_paths(&line);
            let parsed = parse_line(&line);
            match tracked {
                Ok(raw) => proptest::prop_assert_eq!(parsed, check(raw)),
                Err(_) => proptest::prop_assert!(parsed.is_err(), "{line}"),
            }
        }
    }
}
