//! The tools' arguments. Their doc comments are the schema descriptions the assistant reads.

use mindrune_core::Act;
use mindrune_engine::Suggester;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Arguments of `workspace_read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReadArgs {
    /// The file to read, relative to the workspace (an absolute path inside it works too). A
    /// skill is `skills/<name>/SKILL.md`, or just `skills/<name>`.
    pub path: String,
    /// Where the record of the current turn is on disk, when your host tells you; it goes into
    /// the usage log beside a skill read, for the skill fixer to find.
    #[serde(default)]
    pub turn: Option<String>,
}

/// Arguments of `file_write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// The file to write, relative to the workspace; its folders are made. Anything under
    /// `skills/` is refused.
    pub path: String,
    /// The whole new text of the file.
    pub content: String,
}

/// Arguments of `file_copy` and `file_move`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CopyArgs {
    /// The file to take, relative to the workspace.
    pub from: String,
    /// Where it goes, relative to the workspace; never under `skills/`.
    pub to: String,
}

/// Who suggested a skill.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum SuggestedBy {
    /// You, on your own judgement.
    #[default]
    Assistant,
    /// Your human asked for it.
    Human,
    /// You are acting on the observer's suggestion.
    Observer,
    /// You are acting on a "what carries over" suggestion (a task closed as done).
    CarryOver,
}

impl SuggestedBy {
    pub(super) fn suggester(self) -> Suggester {
        match self {
            SuggestedBy::Assistant => Suggester::Assistant,
            SuggestedBy::Human => Suggester::Human,
            SuggestedBy::Observer => Suggester::Observer,
            SuggestedBy::CarryOver => Suggester::CarryOver,
        }
    }
}

/// Arguments of `skill_create`. Version and status are set by the runtime, never here.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateArgs {
    /// The skill's name, also its folder: lowercase letters, digits and `-` (e.g.
    /// `weekly-report`).
    pub name: String,
    /// The situation that should make you reach for this skill.
    #[serde(default)]
    pub trigger: Option<String>,
    /// When it applies.
    #[serde(default)]
    pub use_when: Option<String>,
    /// The near misses where it does not apply.
    #[serde(default)]
    pub not_when: Option<String>,
    /// What must already be true before step one.
    #[serde(default)]
    pub preconditions: Option<Vec<String>>,
    /// The numbered steps, in order, each an object with `do` (what the step does) and `tool`
    /// (the one tool it uses; leave it out when it uses none). No other key is allowed: a
    /// misspelled one is refused, never ignored.
    #[serde(default)]
    #[schemars(schema_with = "steps_schema")]
    pub steps: Option<Vec<Value>>,
    /// Tools the procedure must never call.
    #[serde(default)]
    pub forbidden_tools: Option<Vec<String>>,
    /// What done looks like, so whoever follows it can check.
    #[serde(default)]
    pub expected_result: Option<String>,
    /// The ways it is known to go wrong.
    #[serde(default)]
    pub failure_modes: Option<Vec<String>>,
    /// The work it was written from.
    #[serde(default)]
    pub evidence: Option<Vec<String>>,
    /// The procedure in prose: the body of SKILL.md below its fields.
    pub procedure: String,
    /// Who suggested the skill (default `assistant`).
    #[serde(default)]
    pub suggested_by: SuggestedBy,
    /// Whether the task this was written from was accepted as done (by your human or the
    /// project's own checks). A second success on the same steps as an existing skill then adds
    /// evidence to it instead of being refused as a duplicate.
    #[serde(default)]
    pub accepted_as_done: bool,
    /// Not an argument: the runtime sets a skill's version. Read only to refuse it by name.
    #[serde(default)]
    #[schemars(skip)]
    pub version: Option<Value>,
    /// Not an argument: the runtime sets a skill's status. Read only to refuse it by name.
    #[serde(default)]
    #[schemars(skip)]
    pub status: Option<Value>,
}

pub(super) fn steps_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "do": {
                    "type": "string",
                    "description": "What the step does, in a sentence."
                },
                "tool": {
                    "type": "string",
                    "description": "The one tool the step uses; leave it out when it uses none."
                }
            },
            "required": ["do"]
        }
    })
}

/// What `skill_refine` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum RefineAction {
    /// A step of a skill you followed failed, turned out wrong, or is missing. Needs `skill`,
    /// `revision` and `step` (and `turn` when you know it). Never for a use that went well.
    Report,
    /// The skill fixer files a corrected SKILL.md for a report. Needs `report`, `content` and
    /// `fingerprint`.
    Revise,
    /// Restore an earlier kept version. Needs `skill` and `version`.
    Revert,
    /// Ask whether a skill should stop being used; always your human's call. Needs `skill`
    /// (`why` is welcome).
    Retire,
}

impl RefineAction {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            RefineAction::Report => "report",
            RefineAction::Revise => "revise",
            RefineAction::Revert => "revert",
            RefineAction::Retire => "retire",
        }
    }

    pub(super) fn act(self) -> Act {
        match self {
            RefineAction::Report => Act::Report,
            RefineAction::Revise => Act::Revise,
            RefineAction::Revert => Act::Revert,
            RefineAction::Retire => Act::Retire,
        }
    }
}

/// Arguments of `skill_refine`. Which ones are needed depends on `action`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RefineArgs {
    /// `report`, `revise`, `revert` or `retire`.
    pub action: RefineAction,
    /// The skill's name (report, revert, retire).
    #[serde(default)]
    pub skill: Option<String>,
    /// The revision you followed: the `version` in the SKILL.md you read (report).
    #[serde(default)]
    pub revision: Option<u32>,
    /// The step that failed, was wrong, or is missing (one past the last for a missing final
    /// step) (report).
    #[serde(default)]
    pub step: Option<u32>,
    /// Where the record of the turn is on disk, when your host tells you (report).
    #[serde(default)]
    pub turn: Option<String>,
    /// The report's number, as the fixer was given it (revise).
    #[serde(default)]
    pub report: Option<i64>,
    /// The whole corrected SKILL.md (revise).
    #[serde(default)]
    pub content: Option<String>,
    /// `sha256:<64 hex>` of the exact SKILL.md the correction was written against (revise).
    #[serde(default)]
    pub fingerprint: Option<String>,
    /// The token MindRune handed the skill fixer for this report (`MINDRUNE_FIXER_TOKEN`):
    /// only that fixer may file the report's revision (revise).
    #[serde(default)]
    pub token: Option<String>,
    /// The kept version to restore, from the skill's `history/` (revert).
    #[serde(default)]
    pub version: Option<u32>,
    /// Why the skill should stop being used (retire).
    #[serde(default)]
    pub why: Option<String>,
}

/// Arguments of `playbook_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    /// Words describing the work (e.g. "weekly report to the team"); empty lists every live
    /// skill by name.
    pub query: String,
    /// How many skills to return at most (default 10, at most 50).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Arguments of `playbook_record`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RecordArgs {
    /// One skill's name; leave it out for every live skill.
    #[serde(default)]
    pub skill: Option<String>,
}

/// The yes/no the human is asked through MCP elicitation.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct Approval {
    /// Yes to let it happen, no to refuse it.
    pub approve: bool,
}

rmcp::elicit_safe!(Approval);

/// A tool's arguments, parsed by the tool rather than by the framework, so that a malformed call
/// is a tool error the assistant reads (naming the field) rather than a protocol error its host
/// may hide. The schema is `T`'s.
#[derive(Debug)]
pub(super) struct Args<T>(pub(super) Result<T, String>, pub(super) CallPrint);

/// The fingerprint of a call's arguments, which the request state of an input-required round
/// carries: the retry must be the very call the human was asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CallPrint(pub(super) String);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Args<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let print = CallPrint(mindrune_core::sha256(canonical_json(&value).as_bytes()));
        Ok(Args(
            serde_path_to_error::deserialize(value).map_err(|err| {
                // serde's message may quote a value: only its start is echoed.
                let path = cut(&err.path().to_string(), ECHO_CHARS).into_owned();
                let inner = err.inner().to_string();
                let inner = cut(&inner, 2 * ECHO_CHARS);
                if path == "." {
                    format!("the arguments do not fit this tool: {inner}")
                } else {
                    format!("argument {path}: {inner}")
                }
            }),
            print,
        ))
    }
}

/// JSON with every object's keys sorted, so a client that re-serializes the same arguments in
/// another key order still makes the same call.
pub(super) fn canonical_json(value: &Value) -> String {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    format!(
                        "{}:{}",
                        Value::String(key.clone()),
                        canonical_json(&object[key])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(canonical_json)
                .collect::<Vec<_>>()
                .join(",")
        ),
        other => other.to_string(),
    }
}

impl<T: JsonSchema> JsonSchema for Args<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// The longest path a tool takes (`path`, `from`, `to`, `turn`), in bytes: Linux's `PATH_MAX`.
pub(crate) const MAX_PATH_ARG_BYTES: usize = 4096;
/// The longest short text a tool takes (a skill's `trigger`, `use_when`, a list's item, `why`,
/// any argument not named below), in bytes.
pub(crate) const MAX_TEXT_ARG_BYTES: usize = 4096;
/// The longest skill or fixer name, fingerprint or token, in bytes.
pub(crate) const MAX_NAME_ARG_BYTES: usize = 256;
/// The most items of a list argument (`steps`, `preconditions`, `evidence`, ...).
pub(crate) const MAX_LIST_ARG_ITEMS: usize = 64;
/// The most arguments one call holds, and the longest argument name, in bytes.
pub(crate) const MAX_ARGS: usize = 32;
pub(crate) const MAX_ARG_NAME_BYTES: usize = 64;
/// How much of an argument, path or tool name is echoed back in an answer or a log line.
pub(crate) const ECHO_CHARS: usize = 200;

/// `text` cut to its first `chars` characters, with `…` when something was cut.
pub(super) fn cut(text: &str, chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}…", &text[..end]).into(),
        None => text.into(),
    }
}

/// The bound of one argument: the longest string (at any depth under it) in bytes, and the
/// most items of a list.
fn bound_of(tool: &str, argument: &str) -> usize {
    use mindrune_core::MAX_SKILL_BYTES;
    use mindrune_engine::MAX_QUERY_BYTES;
    use mindrune_engine::MAX_WRITE_BYTES;
    match (tool, argument) {
        ("file_write", "content") => MAX_WRITE_BYTES,
        (_, "content" | "procedure") => MAX_SKILL_BYTES,
        (_, "query") => MAX_QUERY_BYTES,
        (_, "path" | "from" | "to" | "turn") => MAX_PATH_ARG_BYTES,
        (_, "name" | "skill" | "fingerprint" | "token") => MAX_NAME_ARG_BYTES,
        _ => MAX_TEXT_ARG_BYTES,
    }
}

/// Checks a call's arguments against their bounds before any work (and before they are
/// parsed into the tool's arguments): the error names the argument and its bound, and echoes
/// no value.
pub(super) fn check_bounds(
    tool: &str,
    arguments: Option<&serde_json::Map<String, Value>>,
) -> Result<(), String> {
    let Some(arguments) = arguments else {
        return Ok(());
    };
    if arguments.len() > MAX_ARGS {
        return Err(format!(
            "the call holds {} arguments; a tool takes at most {MAX_ARGS}",
            arguments.len()
        ));
    }
    for (name, value) in arguments {
        if name.len() > MAX_ARG_NAME_BYTES {
            return Err(format!(
                "an argument's name is {} bytes (`{}`); names are at most {MAX_ARG_NAME_BYTES} bytes",
                name.len(),
                cut(name, 40)
            ));
        }
        check_value(name, value, bound_of(tool, name))?;
    }
    Ok(())
}

fn check_value(name: &str, value: &Value, bytes: usize) -> Result<(), String> {
    match value {
        Value::String(text) if text.len() > bytes => Err(format!(
            "argument {name} is {} bytes; it may be at most {bytes} bytes",
            text.len()
        )),
        Value::Array(items) if items.len() > MAX_LIST_ARG_ITEMS => Err(format!(
            "argument {name} holds {} items; it may hold at most {MAX_LIST_ARG_ITEMS}",
            items.len()
        )),
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| check_value(name, item, bytes.min(MAX_TEXT_ARG_BYTES))),
        Value::Object(fields) if fields.len() > MAX_ARGS => Err(format!(
            "argument {name} holds {} fields; it may hold at most {MAX_ARGS}",
            fields.len()
        )),
        Value::Object(fields) => fields.iter().try_for_each(|(key, item)| {
            if key.len() > MAX_ARG_NAME_BYTES {
                return Err(format!(
                    "argument {name} holds a field name of {} bytes; names are at most {MAX_ARG_NAME_BYTES} bytes",
                    key.len()
                ));
            }
            check_value(name, item, bytes)
        }),
        _ => Ok(()),
    }
}

/// A call's arguments as a log shows them: each name with its size (a string's bytes, a list's
/// items), never a value.
pub(super) fn sizes(arguments: Option<&serde_json::Map<String, Value>>) -> String {
    fn size(value: &Value) -> String {
        match value {
            Value::String(text) => format!("{} bytes", text.len()),
            Value::Array(items) => format!("{} items", items.len()),
            Value::Object(fields) => format!("{} fields", fields.len()),
            Value::Null => "null".into(),
            Value::Bool(_) => "a boolean".into(),
            Value::Number(_) => "a number".into(),
        }
    }
    let Some(arguments) = arguments else {
        return "none".into();
    };
    arguments
        .iter()
        .map(|(name, value)| format!("{}: {}", cut(name, 40), size(value)))
        .collect::<Vec<_>>()
        .join(", ")
}
