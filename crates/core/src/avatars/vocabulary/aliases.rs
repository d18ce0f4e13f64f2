//! Building a vocabulary: the alias table of every name, spelling and plural of each entry,
//! and how a name that could mean more than one tag is resolved.

use std::collections::HashMap;

use super::entries::{
    BUILTIN_ENTRIES, Entry, NICKNAME_LIST, Nickname, Skipped, builtin_entries, is_everyday,
    shorten, title_from_slug,
};
use super::folding::name_key;
use super::name_matcher::{self, NameMatcher};
use super::{MAX_ALIASES, MAX_NAME_CHARS, Vocabulary};
use crate::avatars::topics::{self, TOPIC_KINDS};

/// Collects entries for a [`Vocabulary`].
#[derive(Debug, Clone, Default)]
pub(crate) struct VocabularyBuilder {
    pub(super) entries: Vec<Entry>,
    pub(super) by_tag: HashMap<String, usize>,
    pub(super) skipped: Vec<Skipped>,
    pub(super) builtins: bool,
}

impl VocabularyBuilder {
    /// A builder that adds the compiled-in places, LostHQ pages and nicknames when it builds.
    pub(crate) fn new() -> VocabularyBuilder {
        VocabularyBuilder {
            builtins: true,
            ..VocabularyBuilder::default()
        }
    }

    /// A builder with only the entries given to it (for tests and tools).
    #[cfg(test)]
    pub(crate) fn without_builtins() -> VocabularyBuilder {
        VocabularyBuilder::default()
    }

    /// Adds an entry. An entry whose kind or slug is not a tag's is skipped with a note (and
    /// `false` returned). An entry whose tag is already there is merged into it: its title
    /// and aliases become other names of the first one, so a wiki page that now covers a
    /// LostHQ page keeps both spellings. Titles and aliases are made one line and cut to
    /// [`MAX_NAME_CHARS`]; an empty title becomes the slug's words.
    pub(crate) fn add(&mut self, entry: Entry) -> bool {
        let written = format!("{}:{}", entry.kind, entry.slug);
        let Some(tag) = topics::normalize_tag(&written) else {
            self.skipped.push(Skipped {
                what: shorten(&written),
                why: format!(
                    "not a tag (kind one of {}, slug of lower-case letters, digits and single hyphens); skipped",
                    TOPIC_KINDS.join(", ")
                ),
            });
            return false;
        };
        let (kind, slug) = tag.split_once(':').unwrap_or_default();
        let title = clean_name(&entry.title).unwrap_or_else(|| title_from_slug(slug));
        let aliases: Vec<String> = entry.aliases.iter().filter_map(|a| clean_name(a)).collect();
        match self.by_tag.get(&tag) {
            Some(&index) => {
                let existing = &mut self.entries[index];
                for name in std::iter::once(title).chain(aliases) {
                    add_alias(existing, name);
                }
            }
            None => {
                let mut fresh = Entry::new(kind, slug, &title, entry.source);
                for alias in aliases {
                    add_alias(&mut fresh, alias);
                }
                self.by_tag.insert(tag, self.entries.len());
                self.entries.push(fresh);
            }
        }
        true
    }

    /// Compiles the vocabulary: the alias table and its automaton. Returns what was skipped
    /// while adding and building; never panics.
    pub(crate) fn build(mut self) -> (Vocabulary, Vec<Skipped>) {
        let mut nicknames: &[Nickname] = &[];
        if self.builtins {
            for entry in builtin_entries() {
                self.add(entry);
            }
            self.skipped.extend(BUILTIN_ENTRIES.1.iter().cloned());
            self.skipped.extend(NICKNAME_LIST.1.iter().cloned());
            nicknames = &NICKNAME_LIST.0;
        }
        let VocabularyBuilder {
            entries,
            by_tag,
            skipped,
            ..
        } = self;

        let mut table = AliasTable::default();
        for (index, entry) in entries.iter().enumerate() {
            let kind = Kind::of(&entry.kind);
            let slug_words = entry.slug.replace('-', " ");
            let names = std::iter::once(entry.title.as_str())
                .chain(entry.aliases.iter().map(String::as_str))
                .chain(std::iter::once(slug_words.as_str()));
            for name in names {
                table.add_name(name, index as u32, kind);
            }
        }
        for (name, tag) in nicknames {
            if let Some(&index) = by_tag.get(tag) {
                table.add_name(name, index as u32, Kind::of(&entries[index].kind));
            }
        }

        let kinds: Vec<Kind> = entries.iter().map(|e| Kind::of(&e.kind)).collect();
        let mut keys: Vec<(String, Vec<Candidate>)> = table.names.into_iter().collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        let mut patterns = Vec::with_capacity(keys.len());
        let mut resolutions = Vec::with_capacity(keys.len());
        let mut by_key = HashMap::with_capacity(keys.len());
        for (key, candidates) in keys {
            let resolution = resolve(&candidates, &kinds);
            by_key.insert(key.clone().into_boxed_str(), resolutions.len() as u32);
            patterns.push(key);
            resolutions.push(resolution);
        }
        // The matcher reports, for each name, the entry it tags in free text, or that it
        // tags nothing there (everyday or ambiguous) but still covers its words.
        let matcher =
            NameMatcher::new(patterns.iter().zip(&resolutions).map(|(name, resolution)| {
                let value = match resolution {
                    Resolution::Tag {
                        entry,
                        everyday: false,
                    } => *entry,
                    _ => NO_TAG,
                };
                (name.as_str(), value)
            }));
        let tags: Vec<Box<str>> = entries.iter().map(|e| e.tag().into_boxed_str()).collect();
        let entry_of_tag = tags
            .iter()
            .enumerate()
            .map(|(index, tag)| (tag.clone(), index as u32))
            .collect();
        let vocabulary = Vocabulary {
            entries,
            tags,
            entry_of_tag,
            by_key,
            resolutions,
            patterns,
            matcher,
        };
        (vocabulary, skipped)
    }
}

/// Adds a name to an entry's aliases unless it already has it (in any spelling) or is full.
pub(super) fn add_alias(entry: &mut Entry, name: String) {
    let key = name_key(&name);
    if key.is_empty()
        || name_key(&entry.title) == key
        || entry.aliases.iter().any(|a| name_key(a) == key)
        || entry.aliases.len() >= MAX_ALIASES
    {
        return;
    }
    entry.aliases.push(name);
}

/// A name made one line, trimmed and cut to [`MAX_NAME_CHARS`]; `None` when nothing is left.
pub(super) fn clean_name(name: &str) -> Option<String> {
    let one_line: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(MAX_NAME_CHARS)
        .collect();
    let trimmed = one_line.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// The kind of a tag, as the ambiguity rule and the spelling variants need it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Quest,
    Item,
    Npc,
    Place,
    Other,
}

impl Kind {
    pub(super) fn of(kind: &str) -> Kind {
        match kind {
            "quest" => Kind::Quest,
            "item" => Kind::Item,
            "npc" => Kind::Npc,
            "place" => Kind::Place,
            _ => Kind::Other,
        }
    }
}

/// How firmly a name means a tag: a name as written beats a plural or possessive made from
/// another name ("rocks" is the NPC Rocks, not two NPCs called Rock).
pub(super) const WRITTEN: u8 = 2;
pub(super) const DERIVED: u8 = 1;

#[derive(Debug, Clone, Copy)]
pub(super) struct Candidate {
    pub(super) entry: u32,
    pub(super) strength: u8,
    pub(super) everyday: bool,
}

/// Every name (as the spelling rules read it) and the entries it may mean.
#[derive(Default)]
pub(super) struct AliasTable {
    pub(super) names: HashMap<String, Vec<Candidate>>,
}

impl AliasTable {
    /// Adds a name of an entry, without a leading "the", and its plural or possessive.
    pub(super) fn add_name(&mut self, name: &str, entry: u32, kind: Kind) {
        let key = name_key(name);
        let mut forms = vec![key.clone()];
        if let Some(rest) = key.strip_prefix("the ") {
            forms.push(rest.to_string());
        }
        for form in forms {
            if !form.bytes().any(|b| b.is_ascii_alphabetic() || b >= 0x80) {
                continue;
            }
            let everyday = is_everyday(&form);
            self.push(&form, entry, WRITTEN, everyday);
            if matches!(kind, Kind::Item | Kind::Npc)
                && let Some(plural) = plural(&form)
            {
                self.push(&plural, entry, DERIVED, everyday);
            }
            if matches!(kind, Kind::Npc | Kind::Place) {
                self.push(&format!("{form}s"), entry, DERIVED, everyday);
            }
        }
    }

    pub(super) fn push(&mut self, key: &str, entry: u32, strength: u8, everyday: bool) {
        let everyday = everyday || is_everyday(key);
        let candidates = self.names.entry(key.to_string()).or_default();
        match candidates.iter_mut().find(|c| c.entry == entry) {
            Some(known) if known.strength < strength => {
                known.strength = strength;
                known.everyday = everyday;
            }
            Some(known) if known.strength == strength => known.everyday |= everyday,
            Some(_) => {}
            None => candidates.push(Candidate {
                entry,
                strength,
                everyday,
            }),
        }
    }
}

/// The plural of a name: its head word (the last word, or the one before " of ") in the
/// plural. `None` when it already ends in `s` or in a digit.
pub(super) fn plural(key: &str) -> Option<String> {
    let (head, tail) = match key.find(" of ") {
        Some(at) => (&key[..at], &key[at..]),
        None => (key, ""),
    };
    let (before, word) = match head.rfind(' ') {
        Some(at) => (&head[..=at], &head[at + 1..]),
        None => ("", head),
    };
    let last = *word.as_bytes().last()?;
    if !last.is_ascii_lowercase() || last == b's' {
        return None;
    }
    let plural = if let Some(stem) = word.strip_suffix("man")
        && !stem.ends_with('a')
    {
        format!("{stem}men")
    } else if let Some(stem) = word.strip_suffix("fe") {
        format!("{stem}ves")
    } else if let Some(stem) = word.strip_suffix("lf").or_else(|| word.strip_suffix("ief")) {
        let kept = &word[stem.len()..word.len() - 1];
        format!("{stem}{kept}ves")
    } else if ["x", "z", "ch", "sh"].iter().any(|end| word.ends_with(end)) {
        format!("{word}es")
    } else if let Some(stem) = word.strip_suffix('y')
        && stem.bytes().last().is_some_and(|b| !b"aeiou".contains(&b))
    {
        format!("{stem}ies")
    } else {
        format!("{word}s")
    };
    Some(format!("{before}{plural}{tail}"))
}

/// The value of a name that gives no tag in free text (see [`NameMatcher::new`]).
pub(super) const NO_TAG: u32 = name_matcher::MAX_VALUE;

/// What a name resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resolution {
    /// The name means this entry; `everyday` names count only outside free text.
    Tag { entry: u32, everyday: bool },
    /// The name could mean two things: no tag, but it still covers its words, so a shorter
    /// name inside it is not read instead.
    Ambiguous,
}

/// Resolves a name's candidates: the firmest ones decide; one entry is the tag; a quest among
/// NPCs and items wins; anything else is ambiguous.
pub(super) fn resolve(candidates: &[Candidate], kinds: &[Kind]) -> Resolution {
    let firmest = candidates.iter().map(|c| c.strength).max().unwrap_or(0);
    let top: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.strength == firmest)
        .collect();
    let kind = |c: &Candidate| kinds.get(c.entry as usize).copied().unwrap_or(Kind::Other);
    match top.as_slice() {
        [only] => Resolution::Tag {
            entry: only.entry,
            everyday: only.everyday,
        },
        many => {
            let quests: Vec<&&Candidate> = many.iter().filter(|c| kind(c) == Kind::Quest).collect();
            let rest_are_things = many
                .iter()
                .all(|c| matches!(kind(c), Kind::Quest | Kind::Npc | Kind::Item));
            match quests.as_slice() {
                [quest] if rest_are_things => Resolution::Tag {
                    entry: quest.entry,
                    everyday: quest.everyday,
                },
                _ => Resolution::Ambiguous,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_follow_english_well_enough() {
        let cases = [
            ("bronze pickaxe", Some("bronze pickaxes")),
            ("amulet of strength", Some("amulets of strength")),
            ("fisherman", Some("fishermen")),
            ("ogre shaman", Some("ogre shamans")),
            ("woman", Some("women")),
            ("wolf", Some("wolves")),
            ("thief", Some("thieves")),
            ("knife", Some("knives")),
            ("torch", Some("torches")),
            ("giant fly", Some("giant flies")),
            ("monkey", Some("monkeys")),
            ("logs", None),
            ("waterskin 4", None),
        ];
        for (name, expected) in cases {
            assert_eq!(plural(name).as_deref(), expected, "{name}");
        }
    }
}
