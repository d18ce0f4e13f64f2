//! A playbook skill file, `workspace/skills/<name>/SKILL.md`: its parser, its renderer and the
//! checks that block an unsafe one.
//!
//! A skill is a procedure written down. Its file opens with a block of YAML fields between two
//! `---` lines (the frontmatter: the trigger, when to use it and when not, preconditions, the
//! steps with the one tool each uses, forbidden tools, the expected result, failure modes,
//! evidence, and the version and status the runtime sets), and the procedure in prose follows as
//! the body.
//!
//! - [`parse`] reads a file. A field left out still loads and is reported as owed (a
//!   [`Diagnostic`]), because refusing a file written by hand would make it silently vanish;
//!   only a file that does not read back cleanly is a [`ParseError`].
//! - [`render`] writes the canonical text, and `parse(render(s))` gives `s` back.
//! - [`blocking_checks`] lists the gaps the spec says block a skill, because a skill with them
//!   could not be followed safely: a tool the runtime lacks, a tool the skill forbids itself, a
//!   step key other than `do` and `tool`, a declared but empty list of steps, anything that
//!   reads like a credential, and a path outside the home tree or one that cannot be shown to be
//!   inside it.
//!
//! The reader refuses YAML anchors and aliases, tags, merge keys and a second document. Anchors
//! and aliases let a few lines expand into gigabytes (the "billion laughs" alias bomb), and tags
//! and merge keys make a value mean something other than what it says. A skill file is written
//! by an assistant and read by a human, so it has no need of any of them, and refusing them
//! outright is simpler and safer than trusting a limit to catch the bad cases. They are found by
//! a scanner that follows libyaml's tokenizer (the one `yaml_serde` runs on) before `yaml_serde`
//! sees the text; the same scan gives the line of every key and step, which `yaml_serde`'s
//! values do not carry.
//!
//! Pure: no I/O, and nothing here panics on any input.

use std::fmt::Write as _;

use yaml_serde::Value;

use crate::secrets::{Scrubber, SecretKind};

mod read;
mod write;
use read::{has_merge_key, read_fields, yaml_error};
use write::{push_key, push_list, push_scalar};

mod phrasings;

/// The largest skill file read, in bytes; a larger one is refused before any parsing.
pub const MAX_SKILL_BYTES: usize = 256 * 1024;

/// The fields a skill declares, in the order [`render`] writes them (after the optional `name`).
pub(crate) const FIELDS: [&str; 11] = [
    "trigger",
    "use_when",
    "not_when",
    "preconditions",
    "steps",
    "forbidden-tools",
    "expected_result",
    "failure_modes",
    "evidence",
    "version",
    "status",
];

/// The file line of the frontmatter's first line: the opening `---` is line 1.
const FRONTMATTER_LINE_OFFSET: usize = 1;

/// The longest piece of the file's own text a message repeats, in characters.
const MAX_ECHO_CHARS: usize = 80;

/// A skill file as read: every field is `None` when the file leaves it out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SkillFile {
    pub name: Option<String>,
    pub trigger: Option<String>,
    pub use_when: Option<String>,
    pub not_when: Option<String>,
    pub preconditions: Option<Vec<String>>,
    /// `None`: the field is absent (owed). `Some` of an empty list: declared but empty, which
    /// blocks.
    pub steps: Option<Vec<Step>>,
    pub forbidden_tools: Option<Vec<String>>,
    pub expected_result: Option<String>,
    pub failure_modes: Option<Vec<String>>,
    pub evidence: Option<Vec<String>>,
    pub version: Option<u32>,
    pub status: Option<Status>,
    /// Everything after the closing `---` line, as written.
    pub body: String,
}

/// One step of the procedure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// What the step does: its `do` key (empty when the step has none).
    pub action: String,
    /// The one tool the step uses, if any.
    pub tool: Option<String>,
    /// Keys other than `do` and `tool`, in file order, each once. Any of them blocks the skill.
    pub other_keys: Vec<String>,
    /// The 1-based line of the step in the whole file, 0 if unknown.
    pub line: usize,
}

/// Where a skill stands. The runtime sets it; whoever writes a skill does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Draft,
    Active,
    Retired,
    Rejected,
}

impl Status {
    /// Every status, in the order of its life.
    pub(crate) const ALL: [Status; 4] = [
        Status::Draft,
        Status::Active,
        Status::Retired,
        Status::Rejected,
    ];

    /// The word the file holds.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Active => "active",
            Status::Retired => "retired",
            Status::Rejected => "rejected",
        }
    }

    /// Reads the word the file holds, written in lowercase.
    pub(crate) fn parse(word: &str) -> Option<Status> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == word)
    }
}

/// A problem that does not stop the file loading: an owed field, an unknown field (ignored), or
/// a field of the wrong type (treated as absent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The 1-based line in the whole file; 0 when the diagnostic is about something absent.
    pub line: usize,
    /// The field it is about.
    pub(crate) field: String,
    pub message: String,
}

/// Why a skill file does not read back cleanly. Each message names the line and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error(
        "SKILL.md is {bytes} bytes, more than the {max} a skill file may have: keep the \
         procedure short and put long material in files its steps read"
    )]
    TooLarge { bytes: usize, max: usize },
    #[error(
        "SKILL.md line {line}: a skill file must start with a line `---` that opens its block \
         of fields (trigger, steps and the rest), closed by another line `---`, with the \
         procedure in prose below it"
    )]
    NoFrontmatter { line: usize },
    #[error(
        "SKILL.md line {line}: the block of fields opened here is never closed: add a line \
         `---` after the last field"
    )]
    Unclosed { line: usize },
    #[error(
        "SKILL.md line {line}: the block of fields is not valid YAML ({message}): fix it there"
    )]
    NotYaml { line: usize, message: String },
    #[error(
        "SKILL.md line {line}: YAML anchors and aliases (`&name`, `*name`) are refused in a \
         skill file: write the value out in full"
    )]
    AnchorOrAlias { line: usize },
    #[error(
        "SKILL.md line {line}: YAML tags (`!name`, `!!type`) are refused in a skill file: \
         write the plain value, in quotes if it must stay text"
    )]
    Tag { line: usize },
    #[error(
        "SKILL.md line {line}: YAML merge keys (`<<:`) are refused in a skill file: write each \
         field out in full"
    )]
    MergeKey { line: usize },
    #[error(
        "SKILL.md line {line}: `{marker}` here would start a second YAML document, but the \
         block of fields is one document and ends at the first line that is exactly `---`: \
         remove it"
    )]
    SecondDocument { line: usize, marker: String },
    #[error("SKILL.md line {line}: `{key}` is written a second time in the same place: keep one")]
    DuplicateKey { line: usize, key: String },
    #[error(
        "SKILL.md line {line}: the block of fields is {found}, but it must be `field: value` \
         lines"
    )]
    NotAMapping { line: usize, found: &'static str },
    #[error(
        "SKILL.md line {line}: step {step} is {found}, but a step is written `- do: what to \
         do`, with `tool: name` below it when it uses a tool"
    )]
    StepNotMapping {
        line: usize,
        step: usize,
        found: &'static str,
    },
    #[error(
        "SKILL.md line {line}: step {step} has `{key}` as {found}, but it must be text (a step \
         names one tool, or leaves `tool:` out)"
    )]
    StepValue {
        line: usize,
        step: usize,
        key: &'static str,
        found: &'static str,
    },
}

/// What [`blocking_checks`] needs to know about the runtime and the machine.
#[derive(Debug, Clone, Copy)]
pub struct CheckContext<'a> {
    /// The tools the runtime has.
    pub runtime_tools: &'a [String],
    /// The absolute path of the home tree, unix style (`/home/alice`).
    pub home: &'a str,
    /// The absolute path of the workspace; relative paths in the text resolve against it.
    pub workspace: &'a str,
    /// Finds what reads like a credential.
    pub scrubber: &'a Scrubber,
}

/// The kinds of gap that block a skill, in the order the spec lists them (and
/// [`blocking_checks`] returns them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockerKind {
    UnknownTool,
    ForbiddenTool,
    StepKey,
    EmptySteps,
    Credential,
    PathOutsideHome,
    PathUnprovable,
}

/// One gap that blocks a skill from being written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocker {
    pub(crate) kind: BlockerKind,
    /// The 1-based line in the whole file, 0 if unknown.
    pub line: usize,
    /// The field the line belongs to, or `body`.
    pub(crate) field: String,
    pub message: String,
}

/// Reads a skill file: its fields, its body and the non-blocking diagnostics (owed, unknown and
/// wrong-typed fields).
pub fn parse(text: &str) -> Result<(SkillFile, Vec<Diagnostic>), ParseError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(ParseError::TooLarge {
            bytes: text.len(),
            max: MAX_SKILL_BYTES,
        });
    }
    let (fragment, body) = split(text)?;
    // libyaml reads `\r\n` as one line break too; normalising it first keeps the scanner's byte
    // positions and the error positions on the same text.
    let fragment = fragment.replace("\r\n", "\n");
    let (tokens, stop) = scan::scan(&fragment);
    let file_line = |line: usize| line + FRONTMATTER_LINE_OFFSET;
    match stop {
        scan::Stop::AnchorOrAlias { line } => {
            return Err(ParseError::AnchorOrAlias {
                line: file_line(line),
            });
        }
        scan::Stop::Tag { line } => {
            return Err(ParseError::Tag {
                line: file_line(line),
            });
        }
        scan::Stop::Document { line, marker } => {
            return Err(ParseError::SecondDocument {
                line: file_line(line),
                marker: marker.to_owned(),
            });
        }
        scan::Stop::TooDeep { line } => {
            return Err(ParseError::NotYaml {
                line: file_line(line),
                message: format!("it is nested more than {} levels deep", scan::MAX_DEPTH),
            });
        }
        scan::Stop::End | scan::Stop::Invalid => {}
    }
    let tree = match stop {
        scan::Stop::End => tree::build(&tokens),
        _ => None,
    };
    if let Some(line) = tree.as_ref().and_then(tree::first_merge_key) {
        return Err(ParseError::MergeKey {
            line: file_line(line),
        });
    }
    let value: Value = match yaml_serde::from_str(&fragment) {
        Ok(value) => value,
        Err(err) => return Err(yaml_error(&err, &fragment, tree.as_ref())),
    };
    if tree.is_none() && has_merge_key(&value) {
        // Only reached if the scanner could not follow a file yaml_serde accepts: the line is
        // then found by looking for the key's text.
        let line = fragment
            .lines()
            .position(|l| l.trim_start().starts_with("<<"))
            .map_or(1, |i| i + 1);
        return Err(ParseError::MergeKey {
            line: file_line(line),
        });
    }
    let mut skill = read_fields(&value, tree.as_ref())?;
    skill.0.body = body.to_owned();
    for field in owed_fields(&skill.0) {
        skill.1.push(Diagnostic {
            line: 0,
            field: field.to_owned(),
            message: format!("`{field}` is owed: it says {}", purpose(field)),
        });
    }
    Ok(skill)
}

/// The canonical text of a skill: fields in the order of [`FIELDS`] after `name`, absent ones
/// left out, one `- do:` (and `tool:`) per step, and the body after the closing `---` line.
pub fn render(skill: &SkillFile) -> String {
    let mut out = String::from("---\n");
    let text_fields = |out: &mut String, key: &str, value: &Option<String>| {
        if let Some(value) = value {
            out.push_str(key);
            out.push(':');
            push_scalar(out, value, 2);
        }
    };
    text_fields(&mut out, "name", &skill.name);
    text_fields(&mut out, "trigger", &skill.trigger);
    text_fields(&mut out, "use_when", &skill.use_when);
    text_fields(&mut out, "not_when", &skill.not_when);
    push_list(&mut out, "preconditions", skill.preconditions.as_deref());
    if let Some(steps) = &skill.steps {
        if steps.is_empty() {
            out.push_str("steps: []\n");
        } else {
            out.push_str("steps:\n");
            for step in steps {
                out.push_str("  - do:");
                push_scalar(&mut out, &step.action, 6);
                if let Some(tool) = &step.tool {
                    out.push_str("    tool:");
                    push_scalar(&mut out, tool, 6);
                }
                let mut seen: Vec<&str> = vec!["do", "tool"];
                for key in &step.other_keys {
                    // A repeated key would make the file unreadable; parse never produces one.
                    if seen.contains(&key.as_str()) {
                        continue;
                    }
                    seen.push(key);
                    out.push_str("    ");
                    push_key(&mut out, key);
                    out.push_str(":\n");
                }
            }
        }
    }
    push_list(
        &mut out,
        "forbidden-tools",
        skill.forbidden_tools.as_deref(),
    );
    text_fields(&mut out, "expected_result", &skill.expected_result);
    push_list(&mut out, "failure_modes", skill.failure_modes.as_deref());
    push_list(&mut out, "evidence", skill.evidence.as_deref());
    if let Some(version) = skill.version {
        let _ = writeln!(out, "version: {version}");
    }
    if let Some(status) = skill.status {
        let _ = writeln!(out, "status: {}", status.as_str());
    }
    out.push_str("---\n");
    out.push_str(&skill.body);
    out
}

/// The fields a skill owes, in the order of [`FIELDS`]: every field but `version` and `status`
/// (which the runtime sets) that is absent, or is text with nothing but white space in it. An
/// empty list is a declaration ("none"), not a debt; an empty `steps` blocks instead.
pub fn owed_fields(skill: &SkillFile) -> Vec<&'static str> {
    let blank = |text: &Option<String>| text.as_ref().is_none_or(|t| t.trim().is_empty());
    FIELDS
        .into_iter()
        .filter(|field| match *field {
            "trigger" => blank(&skill.trigger),
            "use_when" => blank(&skill.use_when),
            "not_when" => blank(&skill.not_when),
            "preconditions" => skill.preconditions.is_none(),
            "steps" => skill.steps.is_none(),
            "forbidden-tools" => skill.forbidden_tools.is_none(),
            "expected_result" => blank(&skill.expected_result),
            "failure_modes" => skill.failure_modes.is_none(),
            "evidence" => skill.evidence.is_none(),
            _ => false,
        })
        .collect()
}

/// The tools of the steps in order; steps without a tool are skipped.
pub fn tool_sequence(skill: &SkillFile) -> Vec<String> {
    skill
        .steps
        .iter()
        .flatten()
        .filter_map(|step| step.tool.clone())
        .collect()
}

/// The spec's blocking checks over the whole file text (frontmatter and body) and its parse.
/// Blockers come in the order of [`BlockerKind`], then by line.
pub fn blocking_checks(text: &str, skill: &SkillFile, ctx: &CheckContext) -> Vec<Blocker> {
    let layout = Layout::of(text);
    let mut blockers = Vec::new();
    let steps = skill.steps.as_deref().unwrap_or_default();
    let forbidden = skill.forbidden_tools.as_deref().unwrap_or_default();
    for (index, step) in steps.iter().enumerate() {
        let number = index + 1;
        if let Some(tool) = &step.tool {
            if !ctx.runtime_tools.contains(tool) {
                let has = if ctx.runtime_tools.is_empty() {
                    "none".to_owned()
                } else {
                    ctx.runtime_tools.join(", ")
                };
                blockers.push(Blocker {
                    kind: BlockerKind::UnknownTool,
                    line: step.line,
                    field: "steps".to_owned(),
                    message: format!(
                        "step {number} names tool `{}`, which this runtime does not have; it \
                         has: {has}",
                        echo(tool)
                    ),
                });
            }
            if forbidden.contains(tool) {
                blockers.push(Blocker {
                    kind: BlockerKind::ForbiddenTool,
                    line: step.line,
                    field: "steps".to_owned(),
                    message: format!(
                        "step {number} names tool `{tool}`, which this skill's own \
                         forbidden-tools lists: use another tool in the step, or take it off \
                         forbidden-tools",
                        tool = echo(tool)
                    ),
                });
            }
        }
        for key in &step.other_keys {
            blockers.push(Blocker {
                kind: BlockerKind::StepKey,
                line: step.line,
                field: "steps".to_owned(),
                message: step_key_message(number, key),
            });
        }
    }
    if skill.steps.as_ref().is_some_and(Vec::is_empty) {
        blockers.push(Blocker {
            kind: BlockerKind::EmptySteps,
            line: layout.key_line("steps"),
            field: "steps".to_owned(),
            message: "`steps` is declared but lists no step: write the steps (`- do: …`), or \
                      leave `steps:` out while the procedure is still owed"
                .to_owned(),
        });
    }
    for finding in ctx.scrubber.scrub(text).findings {
        blockers.push(Blocker {
            kind: BlockerKind::Credential,
            line: finding.line,
            field: layout.field_of(finding.line),
            message: format!(
                "this line holds what reads like {}: a skill must never carry a credential, so \
                 take it out and let the step get it from where the runtime keeps secrets",
                describe_secret(finding.kind)
            ),
        });
    }
    // Credentials as people write them in sentences and commands, which the scrubber's shapes
    // do not cover (see `phrasings`).
    for (index, line) in text.split('\n').enumerate() {
        let number = index + 1;
        for phrasing in phrasings::find(line) {
            let on_line = |blocker: &Blocker| {
                blocker.kind == BlockerKind::Credential && blocker.line == number
            };
            if blockers.iter().any(on_line) {
                continue;
            }
            blockers.push(Blocker {
                kind: BlockerKind::Credential,
                line: number,
                field: layout.field_of(number),
                message: format!(
                    "this line holds what reads like {}: a skill must never carry a credential, \
                     so take it out and let the step get it from where the runtime keeps secrets",
                    phrasing.describe()
                ),
            });
        }
    }
    // Each field's value is a text of its own too: `do: PASSWORD="…"` is a .env line once the
    // YAML key is off, which the scan of the file's lines (where `- do:` stands first) cannot
    // tell from prose.
    let mut values: Vec<(usize, &str, &str)> = Vec::new();
    for (key, value) in [
        ("trigger", &skill.trigger),
        ("use_when", &skill.use_when),
        ("not_when", &skill.not_when),
        ("expected_result", &skill.expected_result),
    ] {
        if let Some(value) = value {
            values.push((layout.key_line(key), key, value));
        }
    }
    for (key, items) in [
        ("preconditions", &skill.preconditions),
        ("failure_modes", &skill.failure_modes),
        ("evidence", &skill.evidence),
    ] {
        for item in items.iter().flatten() {
            values.push((layout.key_line(key), key, item));
        }
    }
    for step in steps {
        values.push((step.line, "steps", &step.action));
    }
    for (line, field, value) in values {
        let Some(finding) = ctx.scrubber.scrub(value).findings.into_iter().next() else {
            continue;
        };
        let flagged =
            |blocker: &Blocker| blocker.kind == BlockerKind::Credential && blocker.field == field;
        if blockers.iter().any(flagged) {
            continue;
        }
        blockers.push(Blocker {
            kind: BlockerKind::Credential,
            line,
            field: field.to_owned(),
            message: format!(
                "`{field}` holds what reads like {}: a skill must never carry a credential, so \
                 take it out and let the step get it from where the runtime keeps secrets",
                describe_secret(finding.kind)
            ),
        });
    }
    blockers.extend(paths::blockers(text, ctx, &layout));
    blockers.sort_by_key(|blocker| (blocker.kind as u8, blocker.line));
    blockers
}

/// What each field says, for the owed diagnostics (the spec's table "What a skill declares").
fn purpose(field: &str) -> &'static str {
    match field {
        "trigger" => "the situation that should make the assistant reach for this skill",
        "use_when" => "when the skill applies",
        "not_when" => "the near misses where the skill does not apply",
        "preconditions" => "what must already be true before step one",
        "steps" => "the numbered steps, each naming the one tool it uses, or none",
        "forbidden-tools" => "the tools the procedure must never call",
        "expected_result" => "what done looks like, so the assistant can check",
        "failure_modes" => "the ways the skill is known to go wrong",
        "evidence" => "the work the skill was written from",
        _ => "what the runtime sets",
    }
}

fn step_key_message(number: usize, key: &str) -> String {
    let lower = key.to_lowercase();
    let hint = if lower.contains("tool") {
        "rename it to `tool` (one tool per step)"
    } else if lower.starts_with("do") || lower.contains("action") {
        "rename it to `do`"
    } else {
        "put what the step does under `do` and the one tool it uses under `tool`, or remove it"
    };
    format!(
        "step {number} has the key `{}`, but a step takes only `do` and `tool`: a misspelled \
         key would leave the step with no tool and no sign of it; {hint}",
        echo(key)
    )
}

fn describe_secret(kind: SecretKind) -> &'static str {
    match kind {
        SecretKind::KnownSecret => "one of the runtime's own secrets",
        SecretKind::Assignment => "a password or key assigned to a name",
        SecretKind::PrivateKey => "a private key",
        SecretKind::AwsKey => "an AWS access key id",
        SecretKind::GithubToken => "a GitHub token",
        SecretKind::GitlabToken => "a GitLab token",
        SecretKind::SlackToken => "a Slack token",
        SecretKind::WebhookUrl => "a webhook URL with its secret",
        SecretKind::OpenAiKey => "an OpenAI API key",
        SecretKind::AnthropicKey => "an Anthropic API key",
        SecretKind::StripeKey => "a Stripe key",
        SecretKind::GoogleApiKey => "a Google API key",
        SecretKind::NpmToken => "an npm token",
        SecretKind::HuggingFaceToken => "a Hugging Face token",
        SecretKind::SendGridKey => "a SendGrid key",
        SecretKind::TelegramToken => "a Telegram bot token",
        SecretKind::MindRuneKey => "a MindRune key or token",
        SecretKind::Jwt => "a JSON Web Token",
        SecretKind::UrlPassword => "a password inside a URL",
        SecretKind::BearerToken => "a bearer token",
        SecretKind::BasicAuth => "basic-auth credentials",
        SecretKind::HighEntropy => "a long random token",
    }
}

/// At most [`MAX_ECHO_CHARS`] characters of the file's own text, on one line, for a message.
fn echo(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_ECHO_CHARS)
        .collect();
    if text.chars().count() > MAX_ECHO_CHARS {
        out.push('…');
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Splitting the file.

/// Splits the text into the frontmatter (keeping the line break before the closing `---`, since
/// a block scalar that ends the fragment without one reads differently between YAML crates) and
/// the body after the closing line.
fn split(text: &str) -> Result<(&str, &str), ParseError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((first, rest)) = text.split_once('\n') else {
        return Err(if text.trim_end() == "---" {
            ParseError::Unclosed { line: 1 }
        } else {
            ParseError::NoFrontmatter { line: 1 }
        });
    };
    if first.trim_end() != "---" {
        return Err(ParseError::NoFrontmatter { line: 1 });
    }
    let mut start = 0;
    while start < rest.len() {
        let end = rest[start..].find('\n').map_or(rest.len(), |i| start + i);
        if rest[start..end].trim_end() == "---" {
            let body = rest.get(end + 1..).unwrap_or("");
            return Ok((&rest[..start], body));
        }
        start = end + 1;
    }
    Err(ParseError::Unclosed { line: 1 })
}

/// Where the frontmatter and its top-level keys lie in the raw text, found line by line: used
/// to name the field of a blocker's line.
struct Layout {
    /// The 1-based line of the closing `---`, 0 when the text has no frontmatter.
    closing: usize,
    /// The top-level keys (written at the start of a line) with their lines.
    keys: Vec<(usize, String)>,
}

impl Layout {
    fn of(text: &str) -> Layout {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.split('\n');
        let mut layout = Layout {
            closing: 0,
            keys: Vec::new(),
        };
        if lines.next().is_none_or(|first| first.trim_end() != "---") {
            return layout;
        }
        for (index, line) in lines.enumerate() {
            let number = index + 2;
            if line.trim_end() == "---" {
                layout.closing = number;
                return layout;
            }
            let starts_key = line.chars().next().is_some_and(|c| !" \t#-".contains(c));
            if let (true, Some((key, _))) = (starts_key, line.split_once(':')) {
                let key = key.trim().trim_matches(|c| c == '"' || c == '\'');
                layout.keys.push((number, key.to_owned()));
            }
        }
        // An unclosed block is not a frontmatter: every line is then the body's.
        layout.keys.clear();
        layout
    }

    fn field_of(&self, line: usize) -> String {
        if self.closing == 0 || line > self.closing {
            return "body".to_owned();
        }
        self.keys
            .iter()
            .rev()
            .find(|(key_line, _)| *key_line <= line)
            .map_or_else(|| "frontmatter".to_owned(), |(_, key)| key.clone())
    }

    fn key_line(&self, key: &str) -> usize {
        self.keys
            .iter()
            .find(|(_, k)| k == key)
            .map_or(0, |(line, _)| *line)
    }
}

// ---------------------------------------------------------------------------------------------
// Reading the values.

// ---------------------------------------------------------------------------------------------
// Rendering.

mod scan;

mod tree;

mod paths;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EXAMPLE: &str = "---
name: weekly-report
trigger: the human asks for the weekly report
use_when: a week of notes exists under notes/
not_when: the human wants a single day's summary
preconditions:
  - notes/ holds this week's files
steps:
  - do: Read this week's notes
    tool: workspace_read
  - do: Decide what matters
  - do: Write the report to reports/weekly.md
    tool: file_write
forbidden-tools:
  - shell
expected_result: reports/weekly.md exists with one section per project
failure_modes:
  - notes from last week get included
evidence:
  - the 2026-11-20 weekly report the human accepted
version: 3
status: active
---
Procedure prose in markdown...
";

    fn tools() -> Vec<String> {
        ["workspace_read", "file_write", "shell"]
            .map(str::to_owned)
            .to_vec()
    }

    fn check(text: &str) -> Vec<Blocker> {
        let (skill, _) = parse(text).unwrap_or_else(|err| panic!("{err}\n{text}"));
        let scrubber = Scrubber::new(&[]);
        let tools = tools();
        let ctx = CheckContext {
            runtime_tools: &tools,
            home: "/home/alice",
            workspace: "/home/alice/workspace",
            scrubber: &scrubber,
        };
        blocking_checks(text, &skill, &ctx)
    }

    fn kinds(blockers: &[Blocker]) -> Vec<BlockerKind> {
        blockers.iter().map(|b| b.kind).collect()
    }

    /// A complete skill with `extra` as its steps (and anything else) and `body` as its body.
    fn skill_with(steps: &str, body: &str) -> String {
        format!(
            "---\ntrigger: t\nuse_when: u\nnot_when: n\npreconditions: []\n{steps}\
             forbidden-tools:\n  - shell\nexpected_result: e\nfailure_modes: []\nevidence: []\n---\n{body}"
        )
    }

    fn err(text: &str) -> ParseError {
        match parse(text) {
            Ok(parsed) => panic!("expected an error, got {parsed:?}"),
            Err(err) => err,
        }
    }

    #[test]
    fn the_spec_example_parses_with_no_diagnostics() {
        let (skill, diagnostics) = parse(EXAMPLE).unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        assert_eq!(skill.name.as_deref(), Some("weekly-report"));
        assert_eq!(
            skill.trigger.as_deref(),
            Some("the human asks for the weekly report")
        );
        assert_eq!(
            skill.not_when.as_deref(),
            Some("the human wants a single day's summary")
        );
        assert_eq!(
            skill.preconditions,
            Some(vec!["notes/ holds this week's files".to_owned()])
        );
        let steps = skill.steps.as_ref().unwrap();
        assert_eq!(steps.len(), 3);
        assert_eq!(steps[0].action, "Read this week's notes");
        assert_eq!(steps[0].tool.as_deref(), Some("workspace_read"));
        assert_eq!(steps[1].tool, None);
        assert_eq!([steps[0].line, steps[1].line, steps[2].line], [9, 11, 12]);
        assert_eq!(skill.forbidden_tools, Some(vec!["shell".to_owned()]));
        assert_eq!(skill.version, Some(3));
        assert_eq!(skill.status, Some(Status::Active));
        assert_eq!(skill.body, "Procedure prose in markdown...\n");
        assert!(owed_fields(&skill).is_empty());
    }

    #[test]
    fn the_spec_example_is_already_canonical() {
        let (skill, _) = parse(EXAMPLE).unwrap();
        assert_eq!(render(&skill), EXAMPLE);
    }

    #[test]
    fn the_spec_example_passes_the_blocking_checks_on_a_runtime_with_its_tools() {
        let (skill, _) = parse(EXAMPLE).unwrap();
        let scrubber = Scrubber::new(&[]);
        let tools = ["workspace_read".to_owned(), "file_write".to_owned()];
        let ctx = CheckContext {
            runtime_tools: &tools,
            home: "/home/alice",
            workspace: "/home/alice/workspace",
            scrubber: &scrubber,
        };
        assert_eq!(blocking_checks(EXAMPLE, &skill, &ctx), vec![]);
    }

    #[test]
    fn a_file_missing_trigger_and_evidence_owes_them() {
        let text = EXAMPLE
            .replace("trigger: the human asks for the weekly report\n", "")
            .replace(
                "evidence:\n  - the 2026-11-20 weekly report the human accepted\n",
                "",
            );
        let (skill, diagnostics) = parse(&text).unwrap();
        assert_eq!(owed_fields(&skill), vec!["trigger", "evidence"]);
        let owed: Vec<&str> = diagnostics.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(owed, vec!["trigger", "evidence"]);
        assert!(
            diagnostics[0].message.starts_with("`trigger` is owed"),
            "{diagnostics:?}"
        );
    }

    #[test]
    fn an_empty_block_of_fields_loads_with_everything_owed() {
        let (skill, diagnostics) = parse("---\n---\n").unwrap();
        assert_eq!(skill, SkillFile::default());
        let owed = owed_fields(&skill);
        assert_eq!(owed, FIELDS[..9].to_vec());
        assert_eq!(diagnostics.len(), 9);
        assert!(diagnostics.iter().all(|d| d.line == 0));
    }

    #[test]
    fn a_block_of_only_comments_loads_like_an_empty_one() {
        let (skill, _) = parse("---\n# nothing yet\n---\nbody").unwrap();
        assert_eq!(skill.body, "body");
        assert_eq!(skill.steps, None);
    }

    #[test]
    fn a_blank_text_field_is_still_owed() {
        let (skill, _) = parse("---\ntrigger: \"  \"\n---\n").unwrap();
        assert_eq!(skill.trigger.as_deref(), Some("  "));
        assert!(owed_fields(&skill).contains(&"trigger"));
    }

    #[test]
    fn an_unknown_field_is_ignored_with_a_diagnostic_and_a_hint_when_it_is_a_misspelling() {
        let (skill, diagnostics) =
            parse("---\ntools: [a]\nforbidden_tools:\n  - shell\n---\n").unwrap();
        assert_eq!(skill.forbidden_tools, None);
        assert_eq!(diagnostics[0].line, 2);
        assert_eq!(diagnostics[0].message, "unknown field `tools` is ignored");
        assert_eq!(diagnostics[1].line, 3);
        assert_eq!(
            diagnostics[1].message,
            "unknown field `forbidden_tools` is ignored: did you mean `forbidden-tools`?"
        );
    }

    #[test]
    fn a_wrong_typed_field_is_treated_as_absent_with_a_diagnostic() {
        let text = "---\ntrigger: [1, 2]\nuse_when: 42\nevidence:\n  - fine\n  - 7\nversion: 0\nstatus: live\n---\n";
        let (skill, diagnostics) = parse(text).unwrap();
        assert_eq!(skill.trigger, None);
        assert_eq!(skill.use_when, None);
        assert_eq!(skill.evidence, None);
        assert_eq!(skill.version, None);
        assert_eq!(skill.status, None);
        let wrong: Vec<(usize, &str)> = diagnostics
            .iter()
            .filter(|d| d.line > 0)
            .map(|d| (d.line, d.field.as_str()))
            .collect();
        assert_eq!(
            wrong,
            vec![
                (2, "trigger"),
                (3, "use_when"),
                (4, "evidence"),
                (7, "version"),
                (8, "status")
            ]
        );
        assert!(
            diagnostics[0]
                .message
                .contains("is a list, but it must be text")
        );
        assert!(diagnostics[1].message.contains("put it in quotes"));
        assert!(diagnostics[2].message.contains("item 2 is a number"));
        assert!(diagnostics[4].message.contains("`live`"));
        // A field treated as absent is owed like one left out.
        assert!(owed_fields(&skill).contains(&"trigger"));
    }

    #[test]
    fn a_single_string_is_a_one_item_list_and_an_empty_list_is_a_declaration() {
        let (skill, _) =
            parse("---\nforbidden-tools: shell\npreconditions: []\nevidence:\n---\n").unwrap();
        assert_eq!(skill.forbidden_tools, Some(vec!["shell".to_owned()]));
        assert_eq!(skill.preconditions, Some(vec![]));
        assert_eq!(skill.evidence, Some(vec![]));
        assert!(!owed_fields(&skill).contains(&"preconditions"));
    }

    #[test]
    fn multi_line_text_reads_as_yaml_says() {
        let text = "---\ntrigger: |\n  line one\n  line two\nuse_when: >-\n  folded\n  together\nnot_when: \"quoted\\ttab\"\n---\n";
        let (skill, _) = parse(text).unwrap();
        assert_eq!(skill.trigger.as_deref(), Some("line one\nline two\n"));
        assert_eq!(skill.use_when.as_deref(), Some("folded together"));
        assert_eq!(skill.not_when.as_deref(), Some("quoted\ttab"));
    }

    #[test]
    fn a_folded_scalar_that_ends_the_block_keeps_its_final_newline() {
        // The line break before the closing `---` stays in the fragment, so a block scalar at the
        // end of the block ends with its newline like one anywhere else; without that break YAML
        // readers disagree (yaml_serde reads `a b`, others `a b\n`).
        let (skill, _) = parse("---\ntrigger: >\n  a\n  b\n---\nbody\n").unwrap();
        assert_eq!(skill.trigger.as_deref(), Some("a b\n"));
        assert_eq!(skill.body, "body\n");
    }

    #[test]
    fn a_step_without_do_loads_with_a_diagnostic() {
        let (skill, diagnostics) = parse("---\nsteps:\n  - tool: shell\n---\n").unwrap();
        let steps = skill.steps.unwrap();
        assert_eq!(steps[0].action, "");
        assert_eq!(steps[0].tool.as_deref(), Some("shell"));
        assert!(
            diagnostics
                .iter()
                .any(|d| d.message == "step 1 has no `do`: say what the step does")
        );
    }

    #[test]
    fn steps_in_flow_style_read_the_same_as_in_block_style() {
        let (skill, _) = parse("---\nsteps: [{do: a, tool: shell}, {do: b}]\n---\n").unwrap();
        let steps = skill.steps.unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].tool.as_deref(), Some("shell"));
        assert_eq!(steps[1].action, "b");
        assert_eq!(steps[1].line, 2);
    }

    #[test]
    fn the_step_lines_count_in_the_whole_file_with_comments_and_blank_lines() {
        let text = "---\n# a comment\n\nsteps:\n\n  # first\n  -\n    do: a\n  - do: b\n---\n";
        let (skill, _) = parse(text).unwrap();
        let lines: Vec<usize> = skill.steps.unwrap().iter().map(|s| s.line).collect();
        assert_eq!(lines, vec![7, 9]);
    }

    #[test]
    fn the_tool_sequence_skips_steps_without_a_tool() {
        let (skill, _) = parse(EXAMPLE).unwrap();
        assert_eq!(tool_sequence(&skill), vec!["workspace_read", "file_write"]);
        assert!(tool_sequence(&SkillFile::default()).is_empty());
    }

    #[test]
    fn status_words_round_trip() {
        for status in Status::ALL {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
        assert_eq!(Status::parse("Active"), None);
    }

    // Blocking checks.

    #[test]
    fn a_step_naming_a_tool_the_runtime_lacks_is_blocked() {
        let text = skill_with(
            "steps:\n  - do: a\n    tool: workspace_read\n  - do: b\n    tool: sql\n",
            "",
        );
        let blockers = check(&text);
        assert_eq!(kinds(&blockers), vec![BlockerKind::UnknownTool]);
        assert_eq!(blockers[0].line, 9);
        assert_eq!(
            blockers[0].message,
            "step 2 names tool `sql`, which this runtime does not have; it has: workspace_read, \
             file_write, shell"
        );
    }

    #[test]
    fn a_step_naming_a_tool_the_runtime_has_is_not_blocked() {
        let text = skill_with("steps:\n  - do: a\n    tool: workspace_read\n", "");
        assert_eq!(check(&text), vec![]);
    }

    #[test]
    fn a_step_naming_a_tool_the_skill_forbids_is_blocked() {
        let text = skill_with("steps:\n  - do: a\n    tool: shell\n", "");
        let blockers = check(&text);
        assert_eq!(kinds(&blockers), vec![BlockerKind::ForbiddenTool]);
        assert_eq!(blockers[0].line, 7);
        assert!(blockers[0].message.starts_with(
            "step 1 names tool `shell`, which this skill's own forbidden-tools lists"
        ));
    }

    #[test]
    fn a_step_naming_a_tool_the_skill_does_not_forbid_is_not_blocked() {
        let text = skill_with("steps:\n  - do: a\n    tool: file_write\n", "");
        assert_eq!(check(&text), vec![]);
    }

    #[test]
    fn a_misspelled_tools_key_in_a_step_is_blocked() {
        let text = skill_with("steps:\n  - do: a\n    tools: file_write\n", "");
        let (skill, _) = parse(&text).unwrap();
        assert_eq!(skill.steps.as_ref().unwrap()[0].other_keys, vec!["tools"]);
        let blockers = check(&text);
        assert_eq!(kinds(&blockers), vec![BlockerKind::StepKey]);
        assert_eq!(blockers[0].line, 7);
        assert!(
            blockers[0].message.contains("no tool and no sign of it"),
            "{}",
            blockers[0].message
        );
        assert!(blockers[0].message.contains("rename it to `tool`"));
    }

    #[test]
    fn a_step_with_only_do_and_tool_is_not_blocked() {
        let text = skill_with("steps:\n  - do: a\n    tool: file_write\n  - do: b\n", "");
        assert_eq!(check(&text), vec![]);
    }

    #[test]
    fn a_declared_but_empty_list_of_steps_is_blocked() {
        for steps in ["steps: []\n", "steps:\n", "steps: ~\n"] {
            let blockers = check(&skill_with(steps, ""));
            assert_eq!(kinds(&blockers), vec![BlockerKind::EmptySteps], "{steps}");
            assert_eq!(blockers[0].line, 6);
            assert_eq!(blockers[0].field, "steps");
        }
    }

    #[test]
    fn absent_steps_are_owed_not_blocking() {
        let text = skill_with("", "");
        let (skill, diagnostics) = parse(&text).unwrap();
        assert_eq!(owed_fields(&skill), vec!["steps"]);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(check(&text), vec![]);
    }

    #[test]
    fn a_credential_anywhere_in_the_file_is_blocked_without_repeating_it() {
        let key = "AKIAQ3EGJ7LPRX5TWN2M";
        let text = skill_with(
            "steps:\n  - do: a\n",
            &format!("Use the key {key} to sign in.\n"),
        );
        let blockers = check(&text);
        assert_eq!(kinds(&blockers), vec![BlockerKind::Credential]);
        assert_eq!(blockers[0].line, 14);
        assert_eq!(blockers[0].field, "body");
        assert!(blockers[0].message.contains("an AWS access key id"));
        assert!(!blockers[0].message.contains(key));

        let in_frontmatter = skill_with(&format!("steps:\n  - do: sign in with {key}\n"), "");
        let blockers = check(&in_frontmatter);
        assert_eq!(kinds(&blockers), vec![BlockerKind::Credential]);
        assert_eq!((blockers[0].line, blockers[0].field.as_str()), (7, "steps"));
    }

    #[test]
    fn a_documentation_placeholder_key_is_not_a_credential() {
        let text = skill_with(
            "steps:\n  - do: a\n",
            "The key looks like AKIAIOSFODNN7EXAMPLE.\n",
        );
        assert_eq!(check(&text), vec![]);
    }

    #[test]
    fn paths_outside_the_home_tree_or_not_provably_inside_it_are_blocked() {
        let cases = [
            ("/etc/passwd", BlockerKind::PathOutsideHome),
            ("/home/alice/../bob", BlockerKind::PathOutsideHome),
            ("/home/alicex/f", BlockerKind::PathOutsideHome),
            ("../../../etc/x", BlockerKind::PathOutsideHome),
            ("notes/../../../../tmp", BlockerKind::PathOutsideHome),
            ("file:///etc/hosts", BlockerKind::PathOutsideHome),
            ("C:\\Users", BlockerKind::PathOutsideHome),
            ("~/x", BlockerKind::PathUnprovable),
            ("~bob/x", BlockerKind::PathUnprovable),
            ("$HOME/x", BlockerKind::PathUnprovable),
            ("${HOME}/x", BlockerKind::PathUnprovable),
            ("%APPDATA%\\x", BlockerKind::PathUnprovable),
            ("\\\\server\\share", BlockerKind::PathUnprovable),
            ("//server/share", BlockerKind::PathUnprovable),
            ("smb://server/share", BlockerKind::PathUnprovable),
            ("file://server/share", BlockerKind::PathUnprovable),
            ("C:notes", BlockerKind::PathUnprovable),
            ("$TMPDIR", BlockerKind::PathUnprovable),
            ("${HOME}", BlockerKind::PathUnprovable),
            ("%USERPROFILE%", BlockerKind::PathUnprovable),
        ];
        for (path, kind) in cases {
            let text = skill_with("steps:\n  - do: a\n", &format!("Then open {path}.\n"));
            let blockers = check(&text);
            assert_eq!(kinds(&blockers), vec![kind], "{path}: {blockers:?}");
            assert_eq!(blockers[0].line, 14, "{path}");
            assert!(
                blockers[0].message.contains(path),
                "{path}: {}",
                blockers[0].message
            );
        }
    }

    /// Paths as people write them in commands and prose, which a split on white space alone
    /// misses, and text with backslashes and braces that is not a path at all.
    const PATH_PHRASINGS: &[(&str, Option<BlockerKind>)] = &[
        ("{/etc/passwd}", Some(BlockerKind::PathOutsideHome)),
        (
            "cat {/etc/passwd,/etc/shadow}",
            Some(BlockerKind::PathOutsideHome),
        ),
        ("path:/etc/passwd", Some(BlockerKind::PathOutsideHome)),
        ("scp host:/etc/passwd .", Some(BlockerKind::PathOutsideHome)),
        (
            "rsync -a backup:~/mail .",
            Some(BlockerKind::PathUnprovable),
        ),
        ("see:/home/alice/notes/x.md", None),
        ("cp {notes,reports}/week.md /home/alice/out/", None),
        ("Match dates with \\d{4}-\\d{2}-\\d{2}", None),
        ("Strip the bell \\x07 from each line", None),
        ("Split on \\t and \\n, then trim", None),
        ("the meeting is at 10:30/11:00", None),
        ("open https://example.com/a:/b", None),
    ];

    /// Each phrasing in the body, and as a step rendered by the door (quoted when it must be).
    #[test]
    fn paths_as_people_write_them_are_judged_and_regexes_and_escapes_are_not_paths() {
        for (phrase, expected) in PATH_PHRASINGS {
            let phrase = phrase.to_string();
            let in_body = skill_with("steps:\n  - do: a\n", &format!("{phrase}\n"));
            let mut in_steps: SkillFile = parse(&in_body).unwrap().0;
            let steps = in_steps.steps.get_or_insert_with(Vec::new);
            for (index, text) in [phrase.clone(), format!("Run: {phrase}")]
                .into_iter()
                .enumerate()
            {
                steps.push(Step {
                    action: text,
                    tool: None,
                    other_keys: Vec::new(),
                    line: index,
                });
            }
            in_steps.body = String::new();
            let rendered = render(&in_steps);
            for text in [in_body, rendered] {
                let blockers = check(&text);
                let kinds: Vec<BlockerKind> = kinds(&blockers)
                    .into_iter()
                    .filter(|kind| {
                        matches!(
                            kind,
                            BlockerKind::PathOutsideHome | BlockerKind::PathUnprovable
                        )
                    })
                    .collect();
                match expected {
                    Some(kind) => assert!(
                        !kinds.is_empty() && kinds.iter().all(|found| found == kind),
                        "{phrase:?} in\n{text}\n{blockers:?}"
                    ),
                    None => assert!(kinds.is_empty(), "{phrase:?} in\n{text}\n{blockers:?}"),
                }
            }
        }
    }

    #[test]
    fn a_path_after_many_words_and_braces_on_one_line_is_still_found() {
        let words = vec!["{a,b,c}{d,e,f}{g,h}"; 40].join(" ");
        let text = skill_with(
            "steps:\n  - do: a\n",
            &format!("{words} then cat /etc/passwd\n"),
        );
        assert!(kinds(&check(&text)).contains(&BlockerKind::PathOutsideHome));
    }

    proptest! {
        /// Any absolute path outside the home tree is found inside braces and after a `word:`.
        #[test]
        fn an_outside_path_in_braces_or_after_a_colon_is_blocked(
            dir in prop::sample::select(vec!["etc", "var", "tmp", "root", "srv"]),
            file in "[a-z]{1,10}",
            shape in prop::sample::select(vec!["{{{}}}", "cat {{{},/home/alice/x}}", "path:{}", "scp host:{} .", "x={}"]),
        ) {
            let path = format!("/{dir}/{file}");
            let line = shape.replace("{}", &path).replace("{{", "{").replace("}}", "}");
            let text = skill_with("steps:\n  - do: a\n", &format!("{line}\n"));
            let blockers = check(&text);
            prop_assert!(
                kinds(&blockers).contains(&BlockerKind::PathOutsideHome),
                "{line}: {blockers:?}"
            );
        }
    }

    #[test]
    fn paths_inside_the_home_tree_and_things_that_are_not_paths_are_fine() {
        let fine = [
            "/home/alice/notes",
            "/home/alice",
            "/home/alice/./a/../b",
            "notes/a.md",
            "./a",
            "../notes",
            "and/or",
            "https://example.com/a/b",
            "mailto:alice@example.com",
            "$5/month",
            "50%/50%",
            "a / b",
            "~ 5 minutes",
            "file:///home/alice/x",
            "[link](./a.md)",
            "`/home/alice/x`.",
        ];
        for text in fine {
            let text = skill_with("steps:\n  - do: a\n", &format!("Then see {text}.\n"));
            assert_eq!(check(&text), vec![], "{text}");
        }
    }

    #[test]
    fn a_path_in_the_frontmatter_is_checked_too_and_reported_once() {
        let text = skill_with(
            "steps:\n  - do: read /etc/passwd\n  - do: read /etc/passwd again\n",
            "Never touch /etc/passwd.\n",
        );
        let blockers = check(&text);
        assert_eq!(kinds(&blockers), vec![BlockerKind::PathOutsideHome]);
        assert_eq!((blockers[0].line, blockers[0].field.as_str()), (7, "steps"));
        assert_eq!(
            blockers[0].message,
            "`/etc/passwd` is outside the home tree /home/alice: a skill may only name paths \
             inside it"
        );
    }

    #[test]
    fn a_relative_path_that_escapes_says_where_it_resolves() {
        let text = skill_with("steps:\n  - do: a\n", "Open ../../../etc/x\n");
        let blockers = check(&text);
        assert!(
            blockers[0].message.contains("resolves to /etc/x"),
            "{}",
            blockers[0].message
        );
    }

    #[test]
    fn blockers_come_in_the_spec_order_then_by_line() {
        let text = format!(
            "---\ntrigger: see ~/x\nsteps:\n  - do: a\n    tool: shell\n    tools: b\n  - do: c\n    tool: sql\n  - do: d\n    tool: nope\nforbidden-tools: [shell]\n---\n/etc/passwd and {}\n",
            "AKIAQ3EGJ7LPRX5TWN2M"
        );
        let blockers = check(&text);
        let got: Vec<(BlockerKind, usize)> = blockers.iter().map(|b| (b.kind, b.line)).collect();
        assert_eq!(
            got,
            vec![
                (BlockerKind::UnknownTool, 7),
                (BlockerKind::UnknownTool, 9),
                (BlockerKind::ForbiddenTool, 4),
                (BlockerKind::StepKey, 4),
                (BlockerKind::Credential, 13),
                (BlockerKind::PathOutsideHome, 13),
                (BlockerKind::PathUnprovable, 2),
            ]
        );
    }

    // Parse errors.

    #[test]
    fn a_block_that_is_not_yaml_names_its_line() {
        let error = err("---\ntrigger: a\nuse_when: b: c\n---\n");
        assert_eq!(
            error,
            ParseError::NotYaml {
                line: 3,
                message: "mapping values are not allowed in this context".to_owned()
            }
        );
        assert_eq!(
            error.to_string(),
            "SKILL.md line 3: the block of fields is not valid YAML (mapping values are not \
             allowed in this context): fix it there"
        );
    }

    #[test]
    fn a_control_character_names_its_line() {
        let error = err("---\ntrigger: a\nuse_when: b\u{1}\n---\n");
        assert!(
            matches!(error, ParseError::NotYaml { line: 3, .. }),
            "{error:?}"
        );
    }

    #[test]
    fn an_alias_bomb_is_refused_at_once() {
        let mut text = String::from(
            "---\na0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for level in 1..10 {
            let refs: Vec<String> = (0..9).map(|_| format!("*a{}", level - 1)).collect();
            text.push_str(&format!("a{level}: &a{level} [{}]\n", refs.join(",")));
        }
        text.push_str("---\n");
        let started = std::time::Instant::now();
        assert_eq!(err(&text), ParseError::AnchorOrAlias { line: 2 });
        assert!(started.elapsed() < std::time::Duration::from_millis(100));
    }

    #[test]
    fn anchors_and_aliases_are_refused_with_their_line() {
        assert_eq!(
            err("---\nx: &a hello\n---\n"),
            ParseError::AnchorOrAlias { line: 2 }
        );
        assert_eq!(
            err("---\nx: a\ny: *a\n---\n"),
            ParseError::AnchorOrAlias { line: 3 }
        );
        assert_eq!(
            err("---\nsteps:\n  - &s\n    do: a\n---\n"),
            ParseError::AnchorOrAlias { line: 3 }
        );
        assert!(
            err("---\nx: &a hello\n---\n")
                .to_string()
                .starts_with("SKILL.md line 2: YAML anchors")
        );
    }

    #[test]
    fn an_ampersand_or_star_inside_text_is_not_an_anchor() {
        let text = "---\ntrigger: salt & pepper *twice*\nuse_when: \"&quoted\"\nnot_when: '*single'\n# &comment\nexpected_result: |\n  &literal\n  *block\nfailure_modes:\n  - a\n    &continued\n---\n&body *body\n";
        let (skill, _) = parse(text).unwrap();
        assert_eq!(skill.trigger.as_deref(), Some("salt & pepper *twice*"));
        assert_eq!(skill.use_when.as_deref(), Some("&quoted"));
        assert_eq!(skill.expected_result.as_deref(), Some("&literal\n*block\n"));
        assert_eq!(skill.failure_modes, Some(vec!["a &continued".to_owned()]));
    }

    #[test]
    fn a_key_written_twice_is_refused_with_its_second_line_and_name() {
        assert_eq!(
            err("---\ntrigger: a\nsteps: []\ntrigger: b\n---\n"),
            ParseError::DuplicateKey {
                line: 4,
                key: "trigger".to_owned()
            }
        );
        let in_step = err("---\nsteps:\n  - do: a\n    tool: x\n    tool: y\n---\n");
        assert_eq!(
            in_step,
            ParseError::DuplicateKey {
                line: 5,
                key: "tool".to_owned()
            }
        );
        assert_eq!(
            in_step.to_string(),
            "SKILL.md line 5: `tool` is written a second time in the same place: keep one"
        );
    }

    #[test]
    fn tags_are_refused() {
        assert_eq!(
            err("---\nversion: !!str 3\n---\n"),
            ParseError::Tag { line: 2 }
        );
        assert_eq!(
            err("---\ntrigger: !custom x\n---\n"),
            ParseError::Tag { line: 2 }
        );
    }

    #[test]
    fn a_merge_key_is_refused() {
        assert_eq!(
            err("---\nbase: {trigger: a}\nsteps:\n  - <<: {do: a}\n    tool: x\n---\n"),
            ParseError::MergeKey { line: 4 }
        );
        // Quoted, `<<` is only a key like any other (and an unknown field).
        let (_, diagnostics) = parse("---\n\"<<\": x\n---\n").unwrap();
        assert_eq!(diagnostics[0].message, "unknown field `<<` is ignored");
    }

    #[test]
    fn a_second_document_inside_the_block_is_refused() {
        assert_eq!(
            err("---\ntrigger: a\n--- # second\nuse_when: b\n---\n"),
            ParseError::SecondDocument {
                line: 3,
                marker: "---".to_owned()
            }
        );
        assert_eq!(
            err("---\ntrigger: a\n...\nuse_when: b\n---\n"),
            ParseError::SecondDocument {
                line: 3,
                marker: "...".to_owned()
            }
        );
        assert_eq!(
            err("---\n%YAML 1.2\ntrigger: a\n---\n"),
            ParseError::SecondDocument {
                line: 2,
                marker: "%".to_owned()
            }
        );
    }

    #[test]
    fn a_file_of_ten_megabytes_is_refused_by_size_before_parsing() {
        let text = format!("---\n{}", "a".repeat(10 * 1024 * 1024));
        let started = std::time::Instant::now();
        assert_eq!(
            err(&text),
            ParseError::TooLarge {
                bytes: text.len(),
                max: MAX_SKILL_BYTES
            }
        );
        assert!(started.elapsed() < std::time::Duration::from_millis(50));
    }

    #[test]
    fn a_file_with_crlf_line_ends_parses() {
        let text = EXAMPLE.replace('\n', "\r\n");
        let (skill, diagnostics) = parse(&text).unwrap();
        assert!(diagnostics.is_empty(), "{diagnostics:?}");
        let (expected, _) = parse(EXAMPLE).unwrap();
        assert_eq!(
            SkillFile {
                body: expected.body.replace('\n', "\r\n"),
                ..expected
            },
            skill
        );
    }

    #[test]
    fn a_byte_order_mark_is_tolerated() {
        let (skill, _) = parse(&format!("\u{feff}{EXAMPLE}")).unwrap();
        assert_eq!(skill, parse(EXAMPLE).unwrap().0);
        let blockers = check(&format!("\u{feff}{}", skill_with("steps: []\n", "")));
        assert_eq!(blockers[0].line, 6);
    }

    #[test]
    fn a_file_without_the_opening_line_says_what_the_first_line_must_be() {
        let error = err("# Weekly report\n\ntrigger: x\n");
        assert_eq!(error, ParseError::NoFrontmatter { line: 1 });
        assert!(
            error
                .to_string()
                .starts_with("SKILL.md line 1: a skill file must start with a line `---`")
        );
        assert_eq!(err(""), ParseError::NoFrontmatter { line: 1 });
    }

    #[test]
    fn an_unclosed_block_is_refused() {
        assert_eq!(err("---\ntrigger: x\n"), ParseError::Unclosed { line: 1 });
        assert_eq!(err("---"), ParseError::Unclosed { line: 1 });
    }

    #[test]
    fn a_step_that_is_not_a_mapping_is_refused() {
        let error = err("---\nsteps:\n  - do: a\n  - Read the notes\n---\n");
        assert_eq!(
            error,
            ParseError::StepNotMapping {
                line: 4,
                step: 2,
                found: "text"
            }
        );
        assert_eq!(
            error.to_string(),
            "SKILL.md line 4: step 2 is text, but a step is written `- do: what to do`, with \
             `tool: name` below it when it uses a tool"
        );
        assert!(matches!(
            err("---\nsteps:\n  -\n---\n"),
            ParseError::StepNotMapping { line: 3, .. }
        ));
    }

    #[test]
    fn a_step_tool_that_is_not_text_is_refused() {
        assert_eq!(
            err("---\nsteps:\n  - do: a\n    tool: [x, y]\n---\n"),
            ParseError::StepValue {
                line: 3,
                step: 1,
                key: "tool",
                found: "a list"
            }
        );
    }

    #[test]
    fn a_block_that_is_a_list_is_refused() {
        assert_eq!(
            err("---\n- trigger: a\n---\n"),
            ParseError::NotAMapping {
                line: 2,
                found: "a list"
            }
        );
    }

    #[test]
    fn nesting_deeper_than_any_skill_needs_is_refused() {
        let text = format!(
            "---\ntrigger: {}{}\n---\n",
            "[".repeat(200),
            "]".repeat(200)
        );
        assert!(matches!(err(&text), ParseError::NotYaml { line: 2, .. }));
    }

    #[test]
    fn no_error_message_ends_with_a_period() {
        let errors = [
            ParseError::TooLarge { bytes: 1, max: 0 },
            err(""),
            err("---\n"),
            err("---\na: b: c\n---\n"),
            err("---\na: &x 1\n---\n"),
            err("---\na: !x 1\n---\n"),
            err("---\n<<: {}\n---\n"),
            err("---\n...\n---\n"),
            err("---\na: 1\na: 2\n---\n"),
            err("---\n- a\n---\n"),
            err("---\nsteps: [a]\n---\n"),
            err("---\nsteps: [{do: [a]}]\n---\n"),
        ];
        for error in errors {
            let message = error.to_string();
            assert!(!message.ends_with('.'), "{message}");
            assert!(message.starts_with("SKILL.md"), "{message}");
        }
    }

    // Rendering.

    #[test]
    fn render_quotes_what_would_not_read_back_as_text() {
        let skill = SkillFile {
            trigger: Some("true".to_owned()),
            use_when: Some("a: b # c".to_owned()),
            not_when: Some("- dash".to_owned()),
            expected_result: Some("  two lines\nsecond".to_owned()),
            preconditions: Some(vec!["3".to_owned(), "line\nbreak\n".to_owned()]),
            steps: Some(vec![Step {
                action: "multi\nline".to_owned(),
                tool: Some("null".to_owned()),
                other_keys: vec!["tools".to_owned(), "a b: c".to_owned()],
                line: 0,
            }]),
            ..SkillFile::default()
        };
        let text = render(&skill);
        assert_eq!(
            text,
            "---\ntrigger: \"true\"\nuse_when: \"a: b # c\"\nnot_when: \"- dash\"\npreconditions:\n  - \"3\"\n  - |\n    line\n    break\nsteps:\n  - do: |-\n      multi\n      line\n    tool: \"null\"\n    tools:\n    \"a b: c\":\nexpected_result: \"  two lines\\nsecond\"\n---\n"
        );
        let (back, _) = parse(&text).unwrap();
        assert_eq!(without_lines(back), skill);
    }

    fn without_lines(mut skill: SkillFile) -> SkillFile {
        for step in skill.steps.iter_mut().flatten() {
            step.line = 0;
        }
        skill
    }

    fn text_strategy() -> impl Strategy<Value = String> {
        "([ -~]|[é€\\t\\n\\r\\x{85}\\x{2028}\\x{feff}]|: | #|---|\\.\\.\\.|&a|\\*a|!t|<<|  ){0,12}"
    }

    fn list_strategy() -> impl Strategy<Value = Option<Vec<String>>> {
        proptest::option::of(proptest::collection::vec(text_strategy(), 0..3))
    }

    fn step_strategy() -> impl Strategy<Value = Step> {
        (
            text_strategy(),
            proptest::option::of(text_strategy()),
            proptest::collection::vec("[a-z_ ]{1,8}", 0..3),
        )
            .prop_map(|(action, tool, keys)| {
                let mut other_keys: Vec<String> = Vec::new();
                for key in keys {
                    if key != "do" && key != "tool" && !other_keys.contains(&key) {
                        other_keys.push(key);
                    }
                }
                Step {
                    action,
                    tool,
                    other_keys,
                    line: 0,
                }
            })
    }

    fn skill_strategy() -> impl Strategy<Value = SkillFile> {
        let texts = (
            proptest::option::of(text_strategy()),
            proptest::option::of(text_strategy()),
            proptest::option::of(text_strategy()),
            proptest::option::of(text_strategy()),
            proptest::option::of(text_strategy()),
        );
        let lists = (
            list_strategy(),
            list_strategy(),
            list_strategy(),
            list_strategy(),
        );
        let rest = (
            proptest::option::of(proptest::collection::vec(step_strategy(), 0..4)),
            proptest::option::of(1..=u32::MAX),
            proptest::option::of(proptest::sample::select(Status::ALL.to_vec())),
            "([ -~]|\\n|---\\n){0,40}",
        );
        (texts, lists, rest).prop_map(
            |(
                (name, trigger, use_when, not_when, expected_result),
                (preconditions, forbidden_tools, failure_modes, evidence),
                (steps, version, status, body),
            )| SkillFile {
                name,
                trigger,
                use_when,
                not_when,
                preconditions,
                steps,
                forbidden_tools,
                expected_result,
                failure_modes,
                evidence,
                version,
                status,
                body,
            },
        )
    }

    /// Whether the scan's tree has the shape of yaml_serde's value: the same mappings with the
    /// same number of entries, the same lists with the same number of items.
    fn same_shape(node: &tree::Node, value: &Value) -> bool {
        match (node, value) {
            (tree::Node::Map { entries, .. }, Value::Mapping(mapping)) => {
                entries.len() == mapping.len()
                    && entries.iter().zip(mapping).all(|(entry, (key, value))| {
                        same_shape(&entry.key, key) && same_shape(&entry.value, value)
                    })
            }
            (tree::Node::Seq { items, .. }, Value::Sequence(values)) => {
                items.len() == values.len()
                    && items
                        .iter()
                        .zip(values)
                        .all(|((_, item), value)| same_shape(item, value))
            }
            (tree::Node::Empty { .. }, Value::Null) => true,
            (tree::Node::Scalar { .. }, value) => !matches!(
                value,
                Value::Mapping(_) | Value::Sequence(_) | Value::Tagged(_)
            ),
            _ => false,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn the_scan_reads_the_same_structure_as_yaml_serde(
            fragment in "([a-z]{1,3}: |  |- |\\? |: |\\[|\\]|\\{|\\}|, |\\||>|\"|'|#|&a |\\*a|!|\\n|\\t|[a-z:-]|---|\\.\\.\\.|%){0,60}",
        ) {
            let (tokens, stop) = scan::scan(&fragment);
            if let (Ok(value), scan::Stop::End) = (yaml_serde::from_str::<Value>(&fragment), &stop) {
                let tree = tree::build(&tokens);
                prop_assert!(tree.is_some(), "{fragment:?} {tokens:?}");
                let tree = tree.unwrap();
                prop_assert!(same_shape(&tree, &value), "{fragment:?} {value:?}");
            }
        }

        #[test]
        fn a_rendered_skill_parses_back_to_itself(skill in skill_strategy()) {
            let text = render(&skill);
            let parsed = parse(&text);
            prop_assert!(parsed.is_ok(), "{parsed:?}\n{text}");
            let (back, _) = parsed.unwrap();
            prop_assert_eq!(without_lines(back), skill, "{}", text);
        }

        #[test]
        fn parsing_never_panics_on_any_text(text in "\\PC{0,400}") {
            let _ = parse(&text);
        }

        #[test]
        fn parsing_never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }

        #[test]
        fn parsing_never_panics_on_frontmatter_like_text_and_lines_stay_in_the_file(
            block in "([a-z_-]{1,6}: |  - |- |\\[|\\]|\\{|\\}|, |: |\\||>|\"|'|#|&|\\*|!|\\n|\\t| |[a-z]|\\\\){0,80}",
            body in "([ -~]|\\n){0,40}",
        ) {
            let text = format!("---\n{block}\n---\n{body}");
            let line_count = text.split('\n').count();
            match parse(&text) {
                Ok((skill, diagnostics)) => {
                    for step in skill.steps.iter().flatten() {
                        prop_assert!(step.line <= line_count, "{step:?}");
                    }
                    for diagnostic in diagnostics {
                        prop_assert!(diagnostic.line <= line_count, "{diagnostic:?}");
                    }
                    let scrubber = Scrubber::new(&[]);
                    let tools = tools();
                    let ctx = CheckContext {
                        runtime_tools: &tools,
                        home: "/home/alice",
                        workspace: "/home/alice/workspace",
                        scrubber: &scrubber,
                    };
                    let _ = blocking_checks(&text, &skill, &ctx);
                    let rendered = render(&skill);
                    let back = parse(&rendered);
                    prop_assert!(back.is_ok(), "{back:?}\n{rendered}");
                    prop_assert_eq!(without_lines(back.unwrap().0), without_lines(skill));
                }
                Err(error) => {
                    let message = error.to_string();
                    prop_assert!(!message.ends_with('.'), "{message}");
                }
            }
        }
    }
}
