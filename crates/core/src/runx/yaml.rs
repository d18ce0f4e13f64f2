//! The strict YAML subset Runx reads `X.yaml`, harness fixtures and SKILL.md frontmatter in.
//!
//! Runx parses package YAML with serde_norway after a line scanner
//! (`assert_execution_profile_yaml_subset`) has refused everything that makes one file mean two
//! things: anchors and aliases, merge keys (`<<`), tags, document markers, duplicate mapping
//! keys, explicit `?` keys, plain keys that contain `:` and plain values that contain `: `. A
//! package that passes here must parse to the same tree there, so this module refuses the same
//! constructs, but from a real YAML event stream (saphyr-parser) instead of a line heuristic, so
//! that a `&` inside a quoted string or a block scalar is never mistaken for an anchor.
//!
//! The result is a spanned tree ([`YamlNode`]): every node, and every mapping key on its own,
//! keeps its 1-based line and column, so the package checks in [`super::package`] can point an
//! author at the exact line of a refused field. [`YamlNode::to_json`] gives the plain
//! `serde_json::Value` the harness replay consumes, with scalars typed by the YAML 1.2 core
//! schema (which is what serde_norway does): `yes`, `on` and `2026-06-09` stay strings.
//!
//! The parser never panics on any input, and nesting deeper than [`MAX_DEPTH`] collections is
//! refused before it is built, so a hostile file costs bounded memory.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

/// The deepest nesting of mappings and sequences accepted. The real packages stay under 15
/// levels; the bound keeps a hostile file from costing unbounded memory and recursion in the
/// JSON conversion and the package checks, which walk the tree recursively.
pub(crate) const MAX_DEPTH: usize = 64;

/// A refusal, with where it happened: `X.yaml:12:5: anchors are not allowed in Runx YAML (...)`.
/// For an execution profile (`X.yaml`) refused for a construct Runx's profile subset names
/// (anchors, aliases and tags, merge keys, document markers, duplicate keys) it displays Runx's
/// own text first, `X.yaml: runner_manifest: YAML parse failed: …`, and this position and
/// message on a second line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render(.file, *.line, *.column, .message, .runx.as_deref()))]
pub struct YamlError {
    /// The file the text came from, as the author knows it (`X.yaml`, `fixtures/smoke.yaml`).
    pub file: String,
    /// The 1-based line in that file.
    pub line: usize,
    /// The 1-based column, in characters.
    pub column: usize,
    /// What is wrong and what to do about it.
    pub message: String,
    /// Runx's message for the same refusal, when the file is a profile and Runx has one.
    pub runx: Option<String>,
}

fn render(file: &str, line: usize, column: usize, message: &str, runx: Option<&str>) -> String {
    match runx {
        Some(runx) => format!(
            "{file}: runner_manifest: YAML parse failed: {runx}\n  at {file}:{line}:{column}: {message}"
        ),
        None => format!("{file}:{line}:{column}: {message}"),
    }
}

/// The constructs Runx's profile subset check refuses by name.
#[derive(Debug, Clone, Copy)]
enum RunxRefusal<'k> {
    AnchorAliasOrTag,
    DocumentMarker,
    MergeKey,
    DuplicateKey(&'k str),
}

impl RunxRefusal<'_> {
    /// Runx's words (`runx-parser` `yaml.rs`); they say `X.yaml` whichever profile it is.
    fn message(self, line: usize) -> String {
        match self {
            Self::AnchorAliasOrTag => format!(
                "YAML anchors, aliases, and tags are not supported in X.yaml at line {line}; write the profile explicitly."
            ),
            Self::DocumentMarker => format!(
                "YAML document markers are not supported in X.yaml at line {line}; use one plain profile document."
            ),
            Self::MergeKey => format!(
                "YAML merge keys are not supported in X.yaml at line {line}; write the profile explicitly."
            ),
            Self::DuplicateKey(key) => format!(
                "duplicate mapping key {key:?} in X.yaml at line {line}; keep profile keys unique."
            ),
        }
    }
}

/// Whether Runx reads the file as an execution profile.
fn is_profile(file: &str) -> bool {
    file == "X.yaml" || file.ends_with("/X.yaml")
}

/// One node of the document, with the position of its first character.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlNode {
    /// The 1-based line the node starts on.
    pub line: usize,
    /// The 1-based column the node starts at, in characters.
    pub column: usize,
    /// The node's value.
    pub value: YamlValue,
}

/// A node's value. Scalars are already typed by the YAML 1.2 core schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum YamlValue {
    /// `~`, `null`, or nothing at all (`key:` with no value).
    Null,
    /// `true` or `false` (any of the core schema's three spellings).
    Bool(bool),
    /// An integer or a finite float.
    Number(Number),
    /// Any other scalar, and every quoted or block scalar.
    String(String),
    /// A sequence, in order.
    Sequence(Vec<YamlNode>),
    /// A mapping, in document order; keys are unique.
    Mapping(Vec<YamlEntry>),
}

/// One key of a mapping with its value; the key keeps its own position, which is where a
/// refused field is reported.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct YamlEntry {
    /// The key's text.
    pub key: String,
    /// The 1-based line of the key.
    pub line: usize,
    /// The 1-based column of the key.
    pub column: usize,
    /// The value under the key.
    pub value: YamlNode,
}

impl YamlNode {
    /// The plain JSON value of the node (mapping keys sorted, as `serde_json::Map` keeps them).
    pub(crate) fn to_json(&self) -> Value {
        match &self.value {
            YamlValue::Null => Value::Null,
            YamlValue::Bool(value) => Value::Bool(*value),
            YamlValue::Number(value) => Value::Number(value.clone()),
            YamlValue::String(value) => Value::String(value.clone()),
            YamlValue::Sequence(items) => Value::Array(items.iter().map(Self::to_json).collect()),
            YamlValue::Mapping(entries) => Value::Object(
                entries
                    .iter()
                    .map(|entry| (entry.key.clone(), entry.value.to_json()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    /// A node made from a plain JSON value, every part of it placed at `line` (for a text
    /// whose positions are not known).
    pub(crate) fn from_json(value: &Value, line: usize) -> Self {
        let value = match value {
            Value::Null => YamlValue::Null,
            Value::Bool(value) => YamlValue::Bool(*value),
            Value::Number(value) => YamlValue::Number(value.clone()),
            Value::String(value) => YamlValue::String(value.clone()),
            Value::Array(items) => YamlValue::Sequence(
                items
                    .iter()
                    .map(|item| Self::from_json(item, line))
                    .collect(),
            ),
            Value::Object(map) => YamlValue::Mapping(
                map.iter()
                    .map(|(key, value)| YamlEntry {
                        key: key.clone(),
                        line,
                        column: 1,
                        value: Self::from_json(value, line),
                    })
                    .collect(),
            ),
        };
        Self {
            line,
            column: 1,
            value,
        }
    }

    /// Orders every mapping's entries by key, as a JSON reader that keeps its objects sorted
    /// (Runx's) walks them.
    pub(crate) fn sort_keys(&mut self) {
        match &mut self.value {
            YamlValue::Sequence(items) => items.iter_mut().for_each(Self::sort_keys),
            YamlValue::Mapping(entries) => {
                entries.sort_by(|a, b| a.key.cmp(&b.key));
                entries.iter_mut().for_each(|entry| entry.value.sort_keys());
            }
            _ => {}
        }
    }

    /// The entries when the node is a mapping.
    pub(crate) fn as_mapping(&self) -> Option<&[YamlEntry]> {
        match &self.value {
            YamlValue::Mapping(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items when the node is a sequence.
    pub(crate) fn as_sequence(&self) -> Option<&[YamlNode]> {
        match &self.value {
            YamlValue::Sequence(items) => Some(items),
            _ => None,
        }
    }

    /// The text when the node is a string scalar.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            YamlValue::String(value) => Some(value),
            _ => None,
        }
    }

    /// The value when the node is a boolean.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match self.value {
            YamlValue::Bool(value) => Some(value),
            _ => None,
        }
    }

    /// The value when the node is a non-negative integer.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match &self.value {
            YamlValue::Number(value) => value.as_u64(),
            _ => None,
        }
    }

    /// Whether the node is `null` (or empty).
    pub(crate) fn is_null(&self) -> bool {
        matches!(self.value, YamlValue::Null)
    }

    /// The entry under `key` when the node is a mapping.
    pub(crate) fn entry(&self, key: &str) -> Option<&YamlEntry> {
        self.as_mapping()?.iter().find(|entry| entry.key == key)
    }

    /// What kind of value the node holds, for messages such as "must be a mapping, not a string".
    pub(crate) fn kind(&self) -> &'static str {
        match &self.value {
            YamlValue::Null => "null",
            YamlValue::Bool(_) => "a boolean",
            YamlValue::Number(_) => "a number",
            YamlValue::String(_) => "a string",
            YamlValue::Sequence(_) => "a sequence",
            YamlValue::Mapping(_) => "a mapping",
        }
    }
}

/// Parses one Runx YAML document. `file` names it in errors. An empty document (or one with
/// only comments) is `null`.
pub(crate) fn parse(file: &str, text: &str) -> Result<YamlNode, YamlError> {
    parse_at(file, text, 1)
}

/// Parses one Runx YAML document that starts on line `first_line` of `file` (SKILL.md
/// frontmatter starts on line 2), so positions are reported in the file's own lines.
pub(crate) fn parse_at(file: &str, text: &str, first_line: usize) -> Result<YamlNode, YamlError> {
    Builder::new(file, text, first_line).run()
}

/// Parses one Runx YAML document straight to JSON.
#[cfg(test)]
pub(crate) fn parse_json(file: &str, text: &str) -> Result<Value, YamlError> {
    parse(file, text).map(|node| node.to_json())
}

/// A collection being built while its events arrive.
enum Frame {
    Sequence {
        line: usize,
        column: usize,
        items: Vec<YamlNode>,
    },
    Mapping {
        line: usize,
        column: usize,
        entries: Vec<YamlEntry>,
        /// The key read and waiting for its value: text, line, column.
        pending: Option<(String, usize, usize)>,
        /// Every key read so far, with its line, to name the first one in a duplicate error.
        seen: HashMap<String, usize>,
    },
}

struct Builder<'a> {
    file: &'a str,
    text: &'a str,
    /// The text's characters, because the parser's positions count characters, not bytes.
    chars: Vec<char>,
    /// Added to the parser's 1-based line numbers, minus one.
    first_line: usize,
    stack: Vec<Frame>,
    root: Option<YamlNode>,
    documents: usize,
}

impl<'a> Builder<'a> {
    fn new(file: &'a str, text: &'a str, first_line: usize) -> Self {
        Self {
            file,
            text,
            chars: text.chars().collect(),
            first_line: first_line.max(1),
            stack: Vec::new(),
            root: None,
            documents: 0,
        }
    }

    /// The file's 1-based line and column of a parser position (1-based line, 0-based column).
    fn position(&self, line: usize, column: usize) -> (usize, usize) {
        (
            line.saturating_add(self.first_line).saturating_sub(1),
            column.saturating_add(1),
        )
    }

    fn error_at(&self, line: usize, column: usize, message: impl Into<String>) -> YamlError {
        let (line, column) = self.position(line, column);
        YamlError {
            file: self.file.to_owned(),
            line,
            column,
            message: message.into(),
            runx: None,
        }
    }

    fn error(&self, span: &Span, message: impl Into<String>) -> YamlError {
        self.error_at(span.start.line(), span.start.col(), message)
    }

    /// [`Builder::error`] for a construct Runx refuses by name, carrying Runx's text when the
    /// file is a profile.
    fn refusal(&self, span: &Span, message: impl Into<String>, runx: RunxRefusal<'_>) -> YamlError {
        let mut error = self.error(span, message);
        if is_profile(self.file) {
            error.runx = Some(runx.message(error.line));
        }
        error
    }

    /// The source text that starts at a span up to the next whitespace, such as `&base` or
    /// `!custom`, to name the refused construct in the message.
    fn token_at(&self, span: &Span) -> String {
        let token: String = self
            .chars
            .get(span.start.index()..)
            .unwrap_or_default()
            .iter()
            .copied()
            .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | ']' | '}'))
            .take(64)
            .collect();
        token
    }

    fn run(mut self) -> Result<YamlNode, YamlError> {
        let mut parser = Parser::new_from_str(self.text);
        while let Some(next) = parser.next_event() {
            let (event, span) = match next {
                Ok(pair) => pair,
                Err(err) => {
                    let marker = *err.marker();
                    // An alias to an anchor that was never defined fails in the parser before
                    // it becomes an event; it is still an alias, so say so.
                    if err.info().contains("unknown anchor") {
                        return Err(self.alias(&Span::empty(marker)));
                    }
                    return Err(self.error_at(marker.line(), marker.col(), syntax(err.info())));
                }
            };
            match event {
                Event::StreamEnd => break,
                Event::Nothing | Event::StreamStart => {}
                Event::DocumentStart(explicit) => {
                    self.documents += 1;
                    if explicit {
                        return Err(self.refusal(
                            &span,
                            "document markers (---) are not allowed in Runx YAML (keep one \
                             document and remove the ---)",
                            RunxRefusal::DocumentMarker,
                        ));
                    }
                    if self.documents > 1 {
                        return Err(self.refusal(
                            &span,
                            "a second YAML document is not allowed in Runx YAML (keep one \
                             document per file)",
                            RunxRefusal::DocumentMarker,
                        ));
                    }
                }
                Event::DocumentEnd => {
                    // An implicit end has an empty span; only a written `...` has characters.
                    if span.start.index() != span.end.index() {
                        return Err(self.refusal(
                            &span,
                            "document end markers (...) are not allowed in Runx YAML (remove \
                             the ...)",
                            RunxRefusal::DocumentMarker,
                        ));
                    }
                }
                Event::Alias(_) => return Err(self.alias(&span)),
                Event::Scalar(value, style, anchor, tag) => {
                    self.refuse_anchor_or_tag(&span, anchor, tag.is_some())?;
                    self.scalar(&value, style, &span)?;
                }
                Event::SequenceStart(anchor, tag) => {
                    self.refuse_anchor_or_tag(&span, anchor, tag.is_some())?;
                    self.open(&span, false)?;
                }
                Event::MappingStart(anchor, tag) => {
                    self.refuse_anchor_or_tag(&span, anchor, tag.is_some())?;
                    self.open(&span, true)?;
                }
                Event::SequenceEnd | Event::MappingEnd => self.close(&span)?,
            }
        }
        Ok(self.root.unwrap_or(YamlNode {
            line: self.first_line,
            column: 1,
            value: YamlValue::Null,
        }))
    }

    fn alias(&self, span: &Span) -> YamlError {
        let token = self.token_at(span);
        self.refusal(
            span,
            format!(
                "aliases are not allowed in Runx YAML (replace {token} with the value it refers \
                 to)"
            ),
            RunxRefusal::AnchorAliasOrTag,
        )
    }

    fn refuse_anchor_or_tag(
        &self,
        span: &Span,
        anchor: usize,
        tagged: bool,
    ) -> Result<(), YamlError> {
        if anchor == 0 && !tagged {
            return Ok(());
        }
        let token = self.token_at(span);
        let message = if token.starts_with('&') {
            format!("anchors are not allowed in Runx YAML (remove {token} and repeat the value)")
        } else if token.starts_with('!') {
            format!(
                "tags are not allowed in Runx YAML (remove {token}; quote the value if it must \
                 be a string)"
            )
        } else if anchor != 0 {
            "anchors are not allowed in Runx YAML (remove the anchor and repeat the value)"
                .to_owned()
        } else {
            "tags are not allowed in Runx YAML (remove the tag)".to_owned()
        };
        Err(self.refusal(span, message, RunxRefusal::AnchorAliasOrTag))
    }

    /// Whether the top of the stack is a mapping waiting for a key.
    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame::Mapping { pending: None, .. })
        )
    }

    fn open(&mut self, span: &Span, mapping: bool) -> Result<(), YamlError> {
        if self.expects_key() {
            return Err(self.error(
                span,
                "mapping keys must be plain strings in Runx YAML (write the key as text)",
            ));
        }
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.error(
                span,
                format!(
                    "the document nests deeper than {MAX_DEPTH} levels (flatten the structure)"
                ),
            ));
        }
        let (line, column) = self.position(span.start.line(), span.start.col());
        self.stack.push(if mapping {
            Frame::Mapping {
                line,
                column,
                entries: Vec::new(),
                pending: None,
                seen: HashMap::new(),
            }
        } else {
            Frame::Sequence {
                line,
                column,
                items: Vec::new(),
            }
        });
        Ok(())
    }

    fn close(&mut self, span: &Span) -> Result<(), YamlError> {
        let node = match self.stack.pop() {
            Some(Frame::Sequence {
                line,
                column,
                items,
            }) => YamlNode {
                line,
                column,
                value: YamlValue::Sequence(items),
            },
            Some(Frame::Mapping {
                line,
                column,
                entries,
                pending,
                ..
            }) => {
                // The parser always delivers a value (possibly an empty scalar) for a key, so a
                // pending key here means a malformed stream; refuse rather than guess.
                if let Some((key, key_line, key_column)) = pending {
                    return Err(YamlError {
                        file: self.file.to_owned(),
                        line: key_line,
                        column: key_column,
                        message: format!("the key {key} has no value"),
                        runx: None,
                    });
                }
                YamlNode {
                    line,
                    column,
                    value: YamlValue::Mapping(entries),
                }
            }
            None => return Err(self.error(span, "unbalanced YAML collection end")),
        };
        self.attach(node)
    }

    fn scalar(&mut self, value: &str, style: ScalarStyle, span: &Span) -> Result<(), YamlError> {
        if self.expects_key() {
            return self.key(value, style, span);
        }
        let typed = if style == ScalarStyle::Plain {
            match core_schema(value) {
                Ok(typed) => typed,
                Err(message) => return Err(self.error(span, message)),
            }
        } else {
            YamlValue::String(value.to_owned())
        };
        let (line, column) = self.position(span.start.line(), span.start.col());
        self.attach(YamlNode {
            line,
            column,
            value: typed,
        })
    }

    fn key(&mut self, value: &str, style: ScalarStyle, span: &Span) -> Result<(), YamlError> {
        if self.explicit_key_before(span) {
            return Err(self.error(
                span,
                "explicit keys (?) are not allowed in Runx YAML (write `key: value` on one line)",
            ));
        }
        if style == ScalarStyle::Plain {
            if value == "<<" {
                return Err(self.refusal(
                    span,
                    "merge keys (<<) are not allowed in Runx YAML (write the merged fields out)",
                    RunxRefusal::MergeKey,
                ));
            }
            if value.is_empty() {
                return Err(self.error(span, "a mapping key is empty (write the key's name)"));
            }
            if value.contains(':') {
                return Err(self.error(
                    span,
                    format!(
                        "the key {value} contains ':', which Runx reads as ambiguous (quote the \
                         key: \"{value}\")"
                    ),
                ));
            }
        } else if !matches!(style, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) {
            return Err(self.error(
                span,
                "mapping keys must be plain or quoted strings in Runx YAML (not block scalars)",
            ));
        }
        let (line, column) = self.position(span.start.line(), span.start.col());
        let file = self.file;
        let Some(Frame::Mapping { pending, seen, .. }) = self.stack.last_mut() else {
            return Err(YamlError {
                file: file.to_owned(),
                line,
                column,
                message: "a key outside a mapping".to_owned(),
                runx: None,
            });
        };
        if let Some(first) = seen.get(value) {
            return Err(YamlError {
                file: file.to_owned(),
                line,
                column,
                message: format!("duplicate key {value} (first at line {first}); keep one"),
                runx: is_profile(file).then(|| RunxRefusal::DuplicateKey(value).message(line)),
            });
        }
        seen.insert(value.to_owned(), line);
        *pending = Some((value.to_owned(), line, column));
        Ok(())
    }

    /// Whether the key at `span` was written after an explicit-key indicator (`? key`), found
    /// by looking back over whitespace for a `?` that stands on its own.
    fn explicit_key_before(&self, span: &Span) -> bool {
        let before: Vec<char> = self
            .chars
            .get(..span.start.index())
            .unwrap_or_default()
            .iter()
            .rev()
            .skip_while(|c| c.is_whitespace())
            .take(2)
            .copied()
            .collect();
        match before.as_slice() {
            ['?'] => true,
            ['?', prev, ..] => prev.is_whitespace() || matches!(prev, '{' | '[' | ',' | '-'),
            _ => false,
        }
    }

    /// Puts a finished node where it belongs: the root, a sequence item, or a mapping value.
    fn attach(&mut self, node: YamlNode) -> Result<(), YamlError> {
        match self.stack.last_mut() {
            None => {
                self.root = Some(node);
                Ok(())
            }
            Some(Frame::Sequence { items, .. }) => {
                items.push(node);
                Ok(())
            }
            Some(Frame::Mapping {
                entries, pending, ..
            }) => match pending.take() {
                Some((key, line, column)) => {
                    entries.push(YamlEntry {
                        key,
                        line,
                        column,
                        value: node,
                    });
                    Ok(())
                }
                None => Err(YamlError {
                    file: self.file.to_owned(),
                    line: node.line,
                    column: node.column,
                    message: "mapping keys must be plain strings in Runx YAML (write the key as \
                              text)"
                        .to_owned(),
                    runx: None,
                }),
            },
        }
    }
}

/// The message for a syntax error from the parser, with a hint for the common mistakes.
fn syntax(info: &str) -> String {
    let hint = if info.contains("mapping values are not allowed") {
        " (quote a value that contains ': ')"
    } else if info.contains("tab") {
        " (indent with spaces, not tabs)"
    } else if info.contains("cannot start any token") {
        " (quote the value)"
    } else if info.contains("did not find expected") || info.contains("while parsing") {
        " (check the indentation and the brackets or quotes on this line)"
    } else {
        ""
    };
    format!("invalid YAML: {info}{hint}")
}

/// Types a plain scalar by the YAML 1.2 core schema, the way serde_norway reads it: null,
/// booleans, integers (decimal, `0o` octal, `0x` hex) and floats; everything else is a string.
/// Infinities and NaN have no JSON form, so they are refused rather than silently changed.
fn core_schema(text: &str) -> Result<YamlValue, String> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(YamlValue::Null),
        "true" | "True" | "TRUE" => return Ok(YamlValue::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(YamlValue::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => {
            return Err(format!(
                "{text} has no JSON value (quote it if you mean the text \"{text}\")"
            ));
        }
        _ => {}
    }
    if let Some(digits) = text.strip_prefix("0o")
        && !digits.is_empty()
        && digits.bytes().all(|b| (b'0'..=b'7').contains(&b))
    {
        return u64::from_str_radix(digits, 8)
            .map(|n| YamlValue::Number(n.into()))
            .map_err(|_| out_of_range(text));
    }
    if let Some(digits) = text.strip_prefix("0x")
        && !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return u64::from_str_radix(digits, 16)
            .map(|n| YamlValue::Number(n.into()))
            .map_err(|_| out_of_range(text));
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if !unsigned.is_empty() && unsigned.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(n) = text.parse::<i64>() {
            return Ok(YamlValue::Number(n.into()));
        }
        if let Ok(n) = text.trim_start_matches('+').parse::<u64>() {
            return Ok(YamlValue::Number(n.into()));
        }
        return float(text);
    }
    if is_core_float(unsigned) {
        return float(text);
    }
    Ok(YamlValue::String(text.to_owned()))
}

/// Whether an unsigned scalar matches the core schema's float form
/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`.
fn is_core_float(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let whole = digits(&mut i);
    let mut fraction = 0;
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        fraction = digits(&mut i);
    } else if whole == 0 {
        return false;
    }
    if whole == 0 && fraction == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

fn float(text: &str) -> Result<YamlValue, String> {
    let parsed: f64 = text
        .trim_start_matches('+')
        .parse()
        .map_err(|_| out_of_range(text))?;
    Number::from_f64(parsed)
        .map(YamlValue::Number)
        .ok_or_else(|| out_of_range(text))
}

fn out_of_range(text: &str) -> String {
    format!("the number {text} is out of range (quote it if you mean the text \"{text}\")")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn refused(text: &str) -> YamlError {
        match parse("X.yaml", text) {
            Ok(node) => panic!("accepted {text:?} as {:?}", node.to_json()),
            Err(err) => err,
        }
    }

    fn at(err: &YamlError) -> (usize, usize) {
        (err.line, err.column)
    }

    #[test]
    fn anchors_are_refused_with_their_name_line_and_column() {
        let err = refused("skill: demo\nrunners:\n  one: &base\n    type: agent\n");
        assert_eq!(at(&err), (3, 8), "{err}");
        assert_eq!(
            err.to_string(),
            "X.yaml: runner_manifest: YAML parse failed: YAML anchors, aliases, and tags are not supported in X.yaml at line 3; write the profile explicitly.\n  at X.yaml:3:8: anchors are not allowed in Runx YAML (remove &base and repeat the value)"
        );
        // A file that is not a profile keeps MindRune's one line.
        let err = parse("fixtures/case.yaml", "a: &s text\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "fixtures/case.yaml:1:4: anchors are not allowed in Runx YAML (remove &s and repeat the value)"
        );
        let err = refused("a: &s text\n");
        assert!(err.message.contains("&s"), "{err}");
    }

    #[test]
    fn aliases_are_refused() {
        let err = refused("a: 1\nb: *a\n");
        assert_eq!(at(&err), (2, 4), "{err}");
        assert!(err.message.contains("aliases are not allowed"), "{err}");
        assert!(err.message.contains("*a"), "{err}");
    }

    #[test]
    fn merge_keys_are_refused() {
        let err = refused("a:\n  x: 1\nb:\n  <<: {x: 2}\n");
        assert_eq!(at(&err), (4, 3), "{err}");
        assert!(err.message.contains("merge keys (<<)"), "{err}");
        // A quoted "<<" is an ordinary key, as it is for Runx.
        assert_eq!(
            parse_json("X.yaml", "\"<<\": 1\n").unwrap(),
            json!({"<<": 1})
        );
    }

    #[test]
    fn tags_are_refused_custom_and_core_alike() {
        let err = refused("runners:\n  one:\n    type: !custom graph\n");
        assert_eq!(at(&err), (3, 11), "{err}");
        assert!(err.message.contains("tags are not allowed"), "{err}");
        assert!(err.message.contains("!custom"), "{err}");
        let err = refused("version: !!str 1.0\n");
        assert!(err.message.contains("!!str"), "{err}");
        let err = refused("list: !seq\n  - a\n");
        assert!(err.message.contains("tags are not allowed"), "{err}");
    }

    #[test]
    fn document_markers_are_refused() {
        let err = refused("---\nskill: demo\n");
        assert_eq!(at(&err), (1, 1), "{err}");
        assert!(err.message.contains("document markers (---)"), "{err}");
        let err = refused("skill: demo\n...\n");
        assert_eq!(at(&err), (2, 1), "{err}");
        assert!(err.message.contains("(...)"), "{err}");
        let err = refused("skill: demo\n---\nskill: other\n");
        assert_eq!(at(&err), (2, 1), "{err}");
        let err = refused("%YAML 1.2\n---\na: 1\n");
        assert!(err.message.contains("document markers"), "{err}");
    }

    #[test]
    fn duplicate_keys_are_refused_naming_the_first() {
        let err = refused("skill: one\nversion: \"1\"\nskill: two\n");
        assert_eq!(at(&err), (3, 1), "{err}");
        assert!(
            err.message
                .contains("duplicate key skill (first at line 1)"),
            "{err}"
        );
        // Quoting does not make a different key.
        let err = refused("a: 1\n'a': 2\n");
        assert!(err.message.contains("duplicate key a"), "{err}");
        let err = refused("x: {b: 1, b: 2}\n");
        assert_eq!(at(&err), (1, 11), "{err}");
        // Separate items of a sequence may reuse keys.
        assert_eq!(
            parse_json("X.yaml", "steps:\n  - id: a\n  - id: b\n").unwrap(),
            json!({"steps": [{"id": "a"}, {"id": "b"}]})
        );
    }

    #[test]
    fn explicit_and_complex_keys_are_refused() {
        let err = refused("? a\n: 1\n");
        assert!(err.message.contains("explicit keys (?)"), "{err}");
        let err = refused("?\n  a\n: 1\n");
        assert!(err.message.contains("explicit keys (?)"), "{err}");
        let err = refused("x: {? a: 1}\n");
        assert!(err.message.contains("explicit keys (?)"), "{err}");
        let err = refused("[a]: 1\n");
        assert!(err.message.contains("keys must be plain strings"), "{err}");
        // A `?` inside a value is just text.
        assert_eq!(
            parse_json("X.yaml", "q: why?\nr: 1\n").unwrap(),
            json!({"q": "why?", "r": 1})
        );
    }

    #[test]
    fn ambiguous_colons_are_refused_with_a_quote_hint() {
        let err = refused("skill: bad\nemail:send:\n  type: cli-tool\n");
        assert_eq!(at(&err), (2, 1), "{err}");
        assert!(err.message.contains("quote the key"), "{err}");
        let err = refused("description: needs quote (granted: repo.read)\n");
        assert_eq!(err.line, 1, "{err}");
        assert!(
            err.message.contains("quote a value that contains ': '"),
            "{err}"
        );
        assert_eq!(
            parse_json(
                "X.yaml",
                "description: \"quoted (granted: repo.read)\"\nurl: https://a.b/c\n"
            )
            .unwrap(),
            json!({"description": "quoted (granted: repo.read)", "url": "https://a.b/c"})
        );
    }

    #[test]
    fn nesting_deeper_than_the_bound_is_refused() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        let err = refused(&deep);
        assert!(err.message.contains("nests deeper than 64"), "{err}");
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse("X.yaml", &ok).is_ok());
        let mut block = String::new();
        for level in 0..=MAX_DEPTH {
            block.push_str(&" ".repeat(level * 2));
            block.push_str("k:\n");
        }
        assert!(refused(&block).message.contains("nests deeper"));
    }

    #[test]
    fn scalars_follow_the_yaml_1_2_core_schema() {
        let value = parse_json(
            "X.yaml",
            "a: yes\nb: on\nc: ~\nd:\ne: True\nf: 0o17\ng: 0x1F\nh: -12\ni: 1.5e3\nj: .5\n\
             k: \"true\"\nl: '12'\nm: 2026-06-09T00:00:00Z\nn: 1_000\no: 012\np: 18446744073709551615\n\
             q: |\n  line\n",
        )
        .unwrap();
        assert_eq!(
            value,
            json!({
                "a": "yes", "b": "on", "c": null, "d": null, "e": true, "f": 15, "g": 31,
                "h": -12, "i": 1500.0, "j": 0.5, "k": "true", "l": "12",
                "m": "2026-06-09T00:00:00Z", "n": "1_000", "o": 12,
                "p": 18_446_744_073_709_551_615_u64, "q": "line\n"
            })
        );
        assert!(refused("a: .inf\n").message.contains("no JSON value"));
        assert!(refused("a: .nan\n").message.contains("quote it"));
        assert!(refused("a: 1e999\n").message.contains("out of range"));
    }

    #[test]
    fn keys_keep_their_own_line_and_values_theirs() {
        let node = parse("X.yaml", "runners:\n  build:\n    type:\n      graph\n").unwrap();
        let runners = node.entry("runners").unwrap();
        assert_eq!((runners.line, runners.column), (1, 1));
        let build = runners.value.entry("build").unwrap();
        assert_eq!((build.line, build.column), (2, 3));
        let kind = build.value.entry("type").unwrap();
        assert_eq!((kind.line, kind.value.line, kind.value.column), (3, 4, 7));
        assert_eq!(kind.value.as_str(), Some("graph"));
    }

    #[test]
    fn a_first_line_offset_reports_positions_in_the_enclosing_file() {
        let err = parse_at("SKILL.md", "name: a\nname: b\n", 2).unwrap_err();
        assert_eq!(err.to_string().split(": ").next(), Some("SKILL.md:3:1"));
    }

    #[test]
    fn empty_and_comment_only_documents_are_null() {
        assert_eq!(parse_json("X.yaml", "").unwrap(), Value::Null);
        assert_eq!(parse_json("X.yaml", "# nothing\n").unwrap(), Value::Null);
    }

    #[test]
    fn syntax_errors_carry_a_position_and_never_a_panic() {
        let err = refused("a: [1, 2\n");
        assert!(err.message.starts_with("invalid YAML"), "{err}");
        let err = refused("a:\n\tb: 1\n");
        assert!(err.message.contains("spaces, not tabs"), "{err}");
        assert_eq!(err.line, 2);
    }

    #[test]
    fn real_package_yaml_parses() {
        let root = shared().join("data/runx/packages");
        let mut count = 0;
        for package in ["hello-world", "web-fetch", "weather-forecast", "skill-lab"] {
            let dir = root.join(package);
            let mut paths = vec![dir.join("X.yaml")];
            if let Ok(entries) = std::fs::read_dir(dir.join("fixtures")) {
                paths.extend(entries.flatten().map(|entry| entry.path()));
            }
            for path in paths {
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
                let value = parse_json(&path.display().to_string(), &text)
                    .unwrap_or_else(|err| panic!("{err}"));
                assert!(value.is_object(), "{}", path.display());
                count += 1;
            }
        }
        assert_eq!(count, 17);
    }

    /// `$MINDRUNE_SHARED` when set, else `../shared` beside the checkout (where CI has it).
    pub(crate) fn shared() -> std::path::PathBuf {
        std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")).into(),
            std::path::PathBuf::from,
        )
    }

    fn real_profiles() -> Vec<String> {
        let root = shared().join("data/runx/packages");
        ["hello-world", "web-fetch", "weather-forecast", "skill-lab"]
            .iter()
            .map(|package| {
                std::fs::read_to_string(root.join(package).join("X.yaml")).unwrap_or_default()
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Any text at all gets a tree or an error with a position inside the text.
        #[test]
        fn never_panics_on_arbitrary_text(text in "\\PC{0,300}") {
            if let Err(err) = parse("X.yaml", &text) {
                prop_assert!(err.line >= 1 && err.column >= 1, "{}", err);
            }
        }

        /// YAML-ish text built from the characters that steer the parser.
        #[test]
        fn never_panics_on_yaml_shaped_text(
            text in "[-a-z0-9:?&*!|>%@`'\"#{}\\[\\],. \n\t]{0,200}"
        ) {
            let _ = parse("X.yaml", &text);
        }

        /// A real X.yaml with a slice deleted, duplicated or replaced still never panics.
        #[test]
        fn never_panics_on_mutated_real_profiles(
            which in 0usize..4,
            at in any::<prop::sample::Index>(),
            len in 0usize..40,
            insert in "[-a-z:?&*!|>\\[\\]{}'\" \n]{0,12}",
        ) {
            let profiles = real_profiles();
            let text = &profiles[which % profiles.len()];
            let chars: Vec<char> = text.chars().collect();
            let start = at.index(chars.len().max(1)).min(chars.len());
            let end = (start + len).min(chars.len());
            let mutated: String = chars[..start]
                .iter()
                .chain(insert.chars().collect::<Vec<_>>().iter())
                .chain(chars[end..].iter())
                .collect();
            let _ = parse("X.yaml", &mutated);
        }
    }
}
