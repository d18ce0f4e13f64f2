//! Replacing the vocabulary, as both backends do it: the entries given are checked and put in
//! one order (each tag once, the first given winning), digested, and compared with the tags
//! the library holds; a backend only runs the statements.

use std::collections::{BTreeMap, HashSet};

use crate::{Result, StoreError, VocabularyChange, VocabularyEntry};

/// A vocabulary as given, checked: each tag once, sorted by kind and slug, so its digest does
/// not depend on the order the entries came in.
pub(crate) struct Replacement<'a> {
    pub(crate) wanted: BTreeMap<(String, String), &'a VocabularyEntry>,
    /// The digest of the whole vocabulary, kept beside it (`vocabulary_state`): one read tells
    /// a process whether the vocabulary it compiled is still current.
    pub(crate) digest: String,
}

/// Checks `entries` and puts them in order; an entry that is not a tag (`kind:slug`, lower
/// case) refuses the whole replacement.
pub(crate) fn replacement(entries: &[VocabularyEntry]) -> Result<Replacement<'_>> {
    let mut wanted: BTreeMap<(String, String), &VocabularyEntry> = BTreeMap::new();
    for entry in entries {
        let tag = format!("{}:{}", entry.kind, entry.slug);
        if mindrune_core::normalize_tag(&tag).as_deref() != Some(tag.as_str()) {
            return Err(StoreError::Conflict(format!(
                "vocabulary entry `{tag}` is not a tag (kind:slug, lower case); nothing was changed"
            )));
        }
        wanted
            .entry((entry.kind.clone(), entry.slug.clone()))
            .or_insert(entry);
    }
    let mut canonical = String::new();
    for ((kind, slug), entry) in &wanted {
        canonical.push_str(&format!(
            "{kind}\u{1f}{slug}\u{1f}{}\u{1f}{}\u{1f}{}\n",
            entry.title,
            entry.source.as_str(),
            aliases_of(entry)
        ));
    }
    let digest = mindrune_core::sha256(canonical.as_bytes());
    Ok(Replacement { wanted, digest })
}

impl Replacement<'_> {
    /// The tags the library holds that the replacement drops.
    pub(crate) fn gone<'e>(
        &self,
        existing: &'e HashSet<(String, String)>,
    ) -> impl Iterator<Item = &'e (String, String)> {
        existing
            .iter()
            .filter(|tag| !self.wanted.contains_key(*tag))
    }

    /// What replacing `existing` with this vocabulary changes: added and removed tags, sorted,
    /// and how many were kept.
    pub(crate) fn change(&self, existing: &HashSet<(String, String)>) -> VocabularyChange {
        let mut change = VocabularyChange::default();
        for (kind, slug) in self.gone(existing) {
            change.removed.push(format!("{kind}:{slug}"));
        }
        change.removed.sort();
        for tag @ (kind, slug) in self.wanted.keys() {
            if existing.contains(tag) {
                change.kept += 1;
            } else {
                change.added.push(format!("{kind}:{slug}"));
            }
        }
        change
    }
}

/// An entry's aliases as the library keeps them: newline-joined, so a line break inside one
/// becomes a space (it would split the alias).
pub(crate) fn aliases_of(entry: &VocabularyEntry) -> String {
    entry
        .aliases
        .iter()
        .map(|alias| alias.replace(['\n', '\r'], " "))
        .collect::<Vec<_>>()
        .join("\n")
}
