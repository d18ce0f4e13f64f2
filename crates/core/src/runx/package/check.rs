//! The field checks of one YAML file: each helper reports against the file and the line of
//! the entry it reads, with Runx's closed field sets and its error texts.

use super::{
    PROFILE_FILE, PackageError, SKILL_FILE, SOURCE_FIELDS, invalid, invalid_as_runx, join,
};
use crate::runx::yaml::{YamlEntry, YamlNode, YamlValue};

/// The field checks of one file: every helper reports against `file`.
pub(super) struct Check<'a> {
    pub(super) file: &'a str,
    /// The file is a graph file a `kind: graph` fixture runs: its fields are a graph's, named
    /// by the Lab below `graph.` and by Runx as in a runner's graph ([`graph_field`]).
    pub(super) graph_file: bool,
}

impl Check<'_> {
    pub(super) fn err(&self, line: usize, field: &str, message: impl Into<String>) -> PackageError {
        invalid(self.file, line, field, message)
    }

    /// A refusal Runx words as `runx` (its whole text, path included), with MindRune's
    /// `at file:line: field: message` as the second line.
    pub(super) fn err_runx(
        &self,
        line: usize,
        field: &str,
        message: impl Into<String>,
        runx: String,
    ) -> PackageError {
        PackageError::Invalid {
            file: self.file.to_owned(),
            line,
            field: field.to_owned(),
            message: message.into(),
            runx: Some(runx),
        }
    }

    /// A refusal of `field` that Runx's generic field readers word as `<field> <runx>` (its
    /// `JsonFieldReader`: `must be a string.`, `is required.`, ...), where the Lab knows Runx's
    /// name for the field ([`Check::runx_field`]); elsewhere the Lab's own words only.
    pub(super) fn err_field(
        &self,
        line: usize,
        field: &str,
        message: impl Into<String>,
        runx: &str,
    ) -> PackageError {
        match self.runx_field(field) {
            Some(name) => self.err_runx(
                line,
                field,
                message,
                format!("{}: {name} {runx}", self.file),
            ),
            None => self.err(line, field, message),
        }
    }

    /// A refusal Runx words as `runx` (without the file) where the Lab knows Runx's name for
    /// `field` ([`Check::runx_field`]); elsewhere the Lab's own words only.
    pub(super) fn err_said(
        &self,
        line: usize,
        field: &str,
        message: impl Into<String>,
        runx: impl FnOnce(&str) -> String,
    ) -> PackageError {
        match self.runx_field(field) {
            Some(name) => {
                let runx = runx(&name);
                self.err_runx(line, field, message, format!("{}: {runx}", self.file))
            }
            None => self.err(line, field, message),
        }
    }

    /// Runx's name for the Lab's `field`, for the files whose field paths the Lab has matched
    /// to runx-cli 0.8.2's: X.yaml's (a runner's source fields, flattened or in a `source:`
    /// block, are Runx's `source.<key>`; a graph's fields as [`graph_field`] names them) and
    /// SKILL.md's frontmatter.
    pub(super) fn runx_field(&self, field: &str) -> Option<String> {
        // A local tool's manifest: Runx's tool validator names its fields as the Lab does
        // (`source.type`, `inputs.text.type`).
        if self.file == SKILL_FILE || is_tool_manifest(self.file) {
            return Some(field.to_owned());
        }
        if self.graph_file {
            return graph_field(field.strip_prefix("graph.")?);
        }
        if self.file != PROFILE_FILE {
            return None;
        }
        let Some(rest) = field.strip_prefix("runners.") else {
            return Some(field.to_owned());
        };
        let Some((_, tail)) = rest.split_once('.') else {
            return Some(field.to_owned());
        };
        let tail = tail.strip_prefix("source.").unwrap_or(tail);
        let key = tail.split(['.', '[']).next().unwrap_or_default();
        if key == "graph" && tail != "graph" {
            return graph_field(&tail["graph.".len()..]);
        }
        if SOURCE_FIELDS.contains(&key) {
            return Some(format!("source.{tail}"));
        }
        Some(field.to_owned())
    }

    /// The entries of a mapping, or a refusal saying what it is instead.
    pub(super) fn mapping<'n>(
        &self,
        node: &'n YamlNode,
        field: &str,
    ) -> Result<&'n [YamlEntry], PackageError> {
        node.as_mapping().ok_or_else(|| {
            self.err_field(
                node.line,
                field,
                format!("must be a mapping, not {}", node.kind()),
                "must be an object.",
            )
        })
    }

    /// The entries of an optional mapping field (absent or null is empty).
    pub(super) fn opt_mapping<'n>(
        &self,
        entries: &'n [YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<&'n [YamlEntry]>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => self.mapping(&entry.value, &join(parent, key)).map(Some),
        }
    }

    /// Refuses any key outside `allowed`, at the key's own line.
    pub(super) fn closed(
        &self,
        entries: &[YamlEntry],
        parent: &str,
        what: &str,
        allowed: &[&str],
    ) -> Result<(), PackageError> {
        self.closed_as(entries, parent, what, allowed, None)
    }

    /// [`Check::closed`] for a field set Runx checks with the same list in the same order:
    /// the refusal is worded as Runx's (`<runx_field>.<key> is not supported; allowed fields:
    /// …`), where `runx_field` is what Runx calls the parent.
    pub(super) fn closed_as(
        &self,
        entries: &[YamlEntry],
        parent: &str,
        what: &str,
        allowed: &[&str],
        runx_field: Option<&str>,
    ) -> Result<(), PackageError> {
        let Some(entry) = entries
            .iter()
            .find(|entry| !allowed.contains(&entry.key.as_str()))
        else {
            return Ok(());
        };
        let field = join(parent, &entry.key);
        let message = format!(
            "unknown {what} field; remove it or use one of: {}",
            allowed.join(", ")
        );
        Err(match runx_field {
            Some(runx_field) => invalid_as_runx(
                self.file,
                entry.line,
                &field,
                message,
                format!(
                    "{runx_field}.{} is not supported; allowed fields: {}.",
                    entry.key,
                    allowed.join(", ")
                ),
            ),
            None => self.err(entry.line, &field, message),
        })
    }

    pub(super) fn string<'n>(
        &self,
        entry: &'n YamlEntry,
        field: &str,
    ) -> Result<&'n str, PackageError> {
        entry.value.as_str().ok_or_else(|| {
            self.err_field(
                entry.line,
                field,
                format!("must be a string, not {}; quote it", entry.value.kind()),
                "must be a string.",
            )
        })
    }

    pub(super) fn opt_string<'n>(
        &self,
        entries: &'n [YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<&'n str>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => self.string(entry, &join(parent, key)).map(Some),
        }
    }

    /// An optional string that must not be blank when present.
    pub(super) fn opt_non_empty(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<String>, PackageError> {
        let field = join(parent, key);
        match self.opt_string(entries, key, parent)? {
            Some(value) if value.trim().is_empty() => Err(self.err_field(
                line_of(entries, key),
                &field,
                "must not be empty; write a value or remove the field",
                "must not be empty.",
            )),
            other => Ok(other.map(str::to_owned)),
        }
    }

    /// A required non-empty string; `line` is where to report it missing.
    pub(super) fn required(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        line: usize,
    ) -> Result<String, PackageError> {
        self.opt_non_empty(entries, key, parent)?
            .ok_or_else(|| self.err_field(line, &join(parent, key), "is required", "is required."))
    }

    pub(super) fn opt_bool(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<bool>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => entry.value.as_bool().map(Some).ok_or_else(|| {
                self.err_field(
                    entry.line,
                    &join(parent, key),
                    format!("must be true or false, not {}", entry.value.kind()),
                    "must be a boolean.",
                )
            }),
        }
    }

    pub(super) fn opt_u64(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<u64>, PackageError> {
        match get(entries, key) {
            None => Ok(None),
            Some(entry) if entry.value.is_null() => Ok(None),
            Some(entry) => entry.value.as_u64().map(Some).ok_or_else(|| {
                self.err_field(
                    entry.line,
                    &join(parent, key),
                    "must be a whole number of at least 0",
                    if matches!(entry.value.value, YamlValue::Number(_)) {
                        "must be a positive integer."
                    } else {
                        "must be a finite number."
                    },
                )
            }),
        }
    }

    /// An optional sequence of strings.
    pub(super) fn opt_strings(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<Option<Vec<String>>, PackageError> {
        let Some(entry) = get(entries, key).filter(|entry| !entry.value.is_null()) else {
            return Ok(None);
        };
        let field = join(parent, key);
        let items = entry.value.as_sequence().ok_or_else(|| {
            self.err_field(
                entry.line,
                &field,
                format!("must be a list of strings, not {}", entry.value.kind()),
                "must be an array of strings.",
            )
        })?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| match self.runx_field(&field) {
                        // Runx names the list, not the entry.
                        Some(name) => self.err_runx(
                            item.line,
                            &format!("{field}[{index}]"),
                            format!("must be a string, not {}; quote it", item.kind()),
                            format!("{}: {name} must be an array of strings.", self.file),
                        ),
                        None => self.err(
                            item.line,
                            &format!("{field}[{index}]"),
                            format!("must be a string, not {}; quote it", item.kind()),
                        ),
                    })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// An optional list of strings none of which may be blank.
    pub(super) fn opt_non_blank_strings(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        what: &str,
    ) -> Result<Vec<String>, PackageError> {
        let values = self.opt_strings(entries, key, parent)?.unwrap_or_default();
        if let Some(index) = values.iter().position(|value| value.trim().is_empty()) {
            let field = join(parent, key);
            let message = format!("must be a non-empty {what}; remove the blank entry");
            let at = format!("{field}[{index}]");
            return Err(match self.runx_field(&field).filter(|_| what == "scope") {
                Some(name) => self.err_runx(
                    line_of(entries, key),
                    &at,
                    message,
                    format!(
                        "{}: {name} must contain only non-empty scope strings",
                        self.file
                    ),
                ),
                None => self.err(line_of(entries, key), &at, message),
            });
        }
        Ok(values)
    }

    /// An optional mapping whose values are all strings.
    pub(super) fn string_map(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
    ) -> Result<(), PackageError> {
        let field = join(parent, key);
        for entry in self.opt_mapping(entries, key, parent)?.unwrap_or_default() {
            self.string(entry, &join(&field, &entry.key))?;
        }
        Ok(())
    }

    /// One of a closed set of words.
    pub(super) fn one_of<'v>(
        &self,
        entry: &'v YamlEntry,
        field: &str,
        allowed: &[&str],
    ) -> Result<&'v str, PackageError> {
        let value = self.string(entry, field)?;
        if allowed.contains(&value) {
            Ok(value)
        } else {
            Err(self.err_field(
                entry.line,
                field,
                format!("is {value:?}; use one of: {}", allowed.join(", ")),
                &format!("must be {}.", either(allowed)),
            ))
        }
    }

    pub(super) fn opt_one_of(
        &self,
        entries: &[YamlEntry],
        key: &str,
        parent: &str,
        allowed: &[&str],
    ) -> Result<Option<String>, PackageError> {
        match get(entries, key).filter(|entry| !entry.value.is_null()) {
            None => Ok(None),
            Some(entry) => self
                .one_of(entry, &join(parent, key), allowed)
                .map(|value| Some(value.to_owned())),
        }
    }
}

/// Runx's list of choices: `a or b`, `a, b, or c`.
fn either(allowed: &[&str]) -> String {
    match allowed {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [a, b] => format!("{a} or {b}"),
        [rest @ .., last] => format!("{}, or {last}", rest.join(", ")),
    }
}

/// Whether `file` is a local tool's manifest (`…/tools/…/manifest.json`).
fn is_tool_manifest(file: &str) -> bool {
    file.ends_with("/manifest.json") && file.split('/').any(|segment| segment == "tools")
}

/// Runx's name for a field inside a runner's graph (`field` is the Lab's path below
/// `graph.`): Runx's graph validator names the graph's own fields bare (`name`), a step by its
/// index (`steps.0.tool`), and an inline step's source as `steps.0.run is not a valid inline
/// source: source.<key>`. `None` for what is not matched to Runx's wording.
fn graph_field(field: &str) -> Option<String> {
    let Some(rest) = field.strip_prefix("steps[") else {
        return (!field.contains('.') && !field.contains('[')).then(|| field.to_owned());
    };
    let (index, rest) = rest.split_once(']')?;
    let step = format!("steps.{index}");
    match rest.strip_prefix('.') {
        None if rest.is_empty() => Some(step),
        None => None,
        Some(inner) => match inner.strip_prefix("run.") {
            Some(source) => Some(format!(
                "{step}.run is not a valid inline source: source.{source}"
            )),
            None => Some(format!("{step}.{inner}")),
        },
    }
}

pub(super) fn get<'n>(entries: &'n [YamlEntry], key: &str) -> Option<&'n YamlEntry> {
    entries.iter().find(|entry| entry.key == key)
}

pub(super) fn line_of(entries: &[YamlEntry], key: &str) -> usize {
    get(entries, key).map_or(1, |entry| entry.line)
}

pub(super) fn has(entries: &[YamlEntry], key: &str) -> bool {
    get(entries, key).is_some()
}
