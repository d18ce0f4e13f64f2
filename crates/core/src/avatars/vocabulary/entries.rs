//! Vocabulary entries: a tag with the names that mean it, read from a listing (rs-sdk's wiki
//! folders, the built-in places, LostHQ pages, nicknames and everyday words).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::folding::name_key;
use super::{EVERYDAY, LOSTHQ, NICKNAMES, PLACES, SHORT_WORD_BYTES};
use crate::avatars::topics::{self, TOPIC_KINDS};

/// Where an entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A page of rs-sdk's wiki.
    Wiki,
    /// The hand-kept list of pages the wiki lacks (`data/losthq.txt`).
    #[serde(rename = "losthq")]
    LostHq,
    /// The places list (`data/places.txt`).
    Places,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Wiki => "wiki",
            Source::LostHq => "losthq",
            Source::Places => "places",
        }
    }

    pub fn parse(text: &str) -> Option<Source> {
        match text {
            "wiki" => Some(Source::Wiki),
            "losthq" => Some(Source::LostHq),
            "places" => Some(Source::Places),
            _ => None,
        }
    }
}

/// One tag of the vocabulary and the names that mean it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// One of [`TOPIC_KINDS`].
    pub kind: String,
    /// `restless-ghost`: lower-case letters and digits joined by single hyphens.
    pub slug: String,
    /// The page's title (its first `# ` heading), or the place's name.
    pub title: String,
    pub source: Source,
    /// Other names: spellings, a former title.
    pub aliases: Vec<String>,
}

impl Entry {
    pub fn new(kind: &str, slug: &str, title: &str, source: Source) -> Entry {
        Entry {
            kind: kind.to_string(),
            slug: slug.to_string(),
            title: title.to_string(),
            source,
            aliases: Vec::new(),
        }
    }

    /// `kind:slug`.
    pub fn tag(&self) -> String {
        format!("{}:{}", self.kind, self.slug)
    }
}

/// Something left out while building, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// What was left out: a line (`line 12`), an entry (`item:Foo`), a name.
    pub(crate) what: String,
    pub(crate) why: String,
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.what, self.why)
    }
}

/// Reads a listing of entries, one a line: `kind:slug`, optionally `|Title` and `|alias`es
/// (`quest:cooks-assistant|Cook's Assistant`). Blank lines and `#` comments are skipped; a
/// line that is not a tag, or a tag listed twice, is skipped with a note naming its line. A
/// missing title is made from the slug ("Cooks Assistant"). Never panics.
pub fn parse_listing(listing: &str, source: Source) -> (Vec<Entry>, Vec<Skipped>) {
    parse_entries(listing, source, None)
}

/// Reads `kind:slug|…` lines, or with `kind` given `slug|…` lines of that kind.
pub(super) fn parse_entries(
    listing: &str,
    source: Source,
    kind: Option<&str>,
) -> (Vec<Entry>, Vec<Skipped>) {
    let mut entries: Vec<Entry> = Vec::new();
    let mut skipped = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (index, raw) in listing.lines().enumerate() {
        let line_no = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split('|').map(str::trim);
        let first = fields.next().unwrap_or_default();
        let written = match kind {
            Some(kind) => format!("{kind}:{first}"),
            None => first.to_string(),
        };
        let Some(tag) = topics::normalize_tag(&written) else {
            skipped.push(Skipped {
                what: format!("line {line_no}"),
                why: format!(
                    "`{}` is not a tag (`kind:slug`, kind one of {}, slug of lower-case letters, digits and single hyphens); skipped",
                    shorten(first),
                    TOPIC_KINDS.join(", ")
                ),
            });
            continue;
        };
        if let Some(first) = first_line.get(&tag) {
            skipped.push(Skipped {
                what: format!("line {line_no}"),
                why: format!("`{tag}` again (first on line {first}); skipped"),
            });
            continue;
        }
        first_line.insert(tag.clone(), line_no);
        let (kind, slug) = tag.split_once(':').unwrap_or_default();
        let title = fields
            .next()
            .filter(|t| !t.is_empty())
            .map_or_else(|| title_from_slug(slug), str::to_string);
        let mut entry = Entry::new(kind, slug, &title, source);
        entry.aliases = fields
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        entries.push(entry);
    }
    (entries, skipped)
}

/// A title made from a slug: `cooks-assistant` → `Cooks Assistant`.
pub(crate) fn title_from_slug(slug: &str) -> String {
    slug.split('-')
        .filter(|w| !w.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Cuts a line quoted in a note, so one long line cannot make the note long.
pub(super) fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The compiled-in entries (places, then the LostHQ list) and what was skipped reading them
/// (nothing: a test holds the files to that).
pub(super) static BUILTIN_ENTRIES: LazyLock<(Vec<Entry>, Vec<Skipped>)> = LazyLock::new(|| {
    let (mut entries, mut skipped) = parse_entries(PLACES, Source::Places, Some("place"));
    let (losthq, losthq_skipped) = parse_listing(LOSTHQ, Source::LostHq);
    entries.extend(losthq);
    skipped.extend(losthq_skipped);
    (entries, skipped)
});

/// A nickname and the tag it means.
pub(super) type Nickname = (String, String);

/// The compiled-in nicknames, and what was skipped reading them.
pub(super) static NICKNAME_LIST: LazyLock<(Vec<Nickname>, Vec<Skipped>)> = LazyLock::new(|| {
    let mut nicknames = Vec::new();
    let mut skipped = Vec::new();
    for (index, raw) in NICKNAMES.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line
            .split_once('|')
            .and_then(|(name, tag)| Some((name.trim(), topics::normalize_tag(tag)?)))
        {
            Some((name, tag)) if !name.is_empty() => nicknames.push((name.to_string(), tag)),
            _ => skipped.push(Skipped {
                what: format!("nicknames line {}", index + 1),
                why: "not `name|kind:slug`; skipped".into(),
            }),
        }
    }
    (nicknames, skipped)
});

/// The everyday words and phrases, as the spelling rules read them.
pub(super) static EVERYDAY_WORDS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    EVERYDAY
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(name_key)
        .filter(|key| !key.is_empty())
        .collect()
});

/// The entries compiled into MindRune: the places and the LostHQ list.
pub(crate) fn builtin_entries() -> Vec<Entry> {
    BUILTIN_ENTRIES.0.clone()
}

/// Whether a name (as the spelling rules read it) is an everyday word or phrase.
pub(super) fn is_everyday(key: &str) -> bool {
    (!key.contains(' ') && key.len() <= SHORT_WORD_BYTES) || EVERYDAY_WORDS.contains(key)
}
