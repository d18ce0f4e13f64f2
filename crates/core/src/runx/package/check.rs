//! The field checks of one YAML file: each helper reports against the file and the line of
//! the entry it reads, with Runx's closed field sets and its error texts.

use super::{PackageError, invalid, invalid_as_runx, join};
use crate::runx::yaml::{YamlEntry, YamlNode};

/// The field checks of one file: every helper reports against `file`.
pub(super) struct Check<'a> {
    pub(super) file: &'a str,
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

    /// The entries of a mapping, or a refusal saying what it is instead.
    pub(super) fn mapping<'n>(
        &self,
        node: &'n YamlNode,
        field: &str,
    ) -> Result<&'n [YamlEntry], PackageError> {
        node.as_mapping().ok_or_else(|| {
            self.err(
                node.line,
                field,
                format!("must be a mapping, not {}", node.kind()),
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
            self.err(
                entry.line,
                field,
                format!("must be a string, not {}; quote it", entry.value.kind()),
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
            Some(value) if value.trim().is_empty() => Err(self.err(
                line_of(entries, key),
                &field,
                "must not be empty; write a value or remove the field",
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
            .ok_or_else(|| self.err(line, &join(parent, key), "is required"))
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
                self.err(
                    entry.line,
                    &join(parent, key),
                    format!("must be true or false, not {}", entry.value.kind()),
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
                self.err(
                    entry.line,
                    &join(parent, key),
                    "must be a whole number of at least 0",
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
            self.err(
                entry.line,
                &field,
                format!("must be a list of strings, not {}", entry.value.kind()),
            )
        })?;
        items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                item.as_str().map(str::to_owned).ok_or_else(|| {
                    self.err(
                        item.line,
                        &format!("{field}[{index}]"),
                        format!("must be a string, not {}; quote it", item.kind()),
                    )
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
            return Err(self.err(
                line_of(entries, key),
                &format!("{}[{index}]", join(parent, key)),
                format!("must be a non-empty {what}; remove the blank entry"),
            ));
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
            Err(self.err(
                entry.line,
                field,
                format!("is {value:?}; use one of: {}", allowed.join(", ")),
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

pub(super) fn get<'n>(entries: &'n [YamlEntry], key: &str) -> Option<&'n YamlEntry> {
    entries.iter().find(|entry| entry.key == key)
}

pub(super) fn line_of(entries: &[YamlEntry], key: &str) -> usize {
    get(entries, key).map_or(1, |entry| entry.line)
}

pub(super) fn has(entries: &[YamlEntry], key: &str) -> bool {
    get(entries, key).is_some()
}
