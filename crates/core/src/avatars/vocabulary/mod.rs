//! The topic-tag vocabulary: which names in free text mean which tag.
//!
//! Tags (`quest:restless-ghost`, `place:lumbridge`) let `grep -r` find everything about one
//! thing, but agents write "Cook's Assistant" and "lumby", not tags. A [`Vocabulary`] maps such
//! names to tags with an alias table built from every entry's title and other names:
//!
//! - **Entries** come from rs-sdk's wiki (one per page, `quest:`, `skill:`, `item:`, `npc:`,
//!   `shop:`; read by the engine), from a hand-kept list of pages the wiki lacks
//!   (`data/losthq.txt`) and from the places of the game's world (`data/places.txt`, the
//!   `place:` tags; the wiki has no area pages). The last two are compiled in, so an empty
//!   library still maps places.
//! - **Spellings**: case, apostrophes and hyphens do not matter ("Cook's Assistant",
//!   "cooks-assistant" and "COOKS ASSISTANT" are one name), a leading "The" may be left out,
//!   items and NPCs are found in the plural ("bronze pickaxes"), and NPCs and places with a
//!   possessive ("Lumbridge's"). A few nicknames (`data/nicknames.txt`: lumby, fally) are added.
//! - **Ambiguity**: a name that could mean two tags gives no tag, except that a quest's name
//!   wins over an NPC's or item's of the same name (Sea Slug is the quest). A name as written
//!   beats a plural or possessive made from another name.
//! - **Everyday words** (`data/everyday.txt`, and any single word of three letters or fewer)
//!   give no tag in free text, so "attack the goblin" names no topic; an exactly written tag
//!   (`quest:restless-ghost`) always counts, and [`Vocabulary::tag_for_name`] (a header's
//!   `Tags:` entry) accepts everyday names too.
//!
//! Names are found in the text after the spelling rules were applied to it (ASCII case
//! folded, apostrophes dropped, every other run of non-letters made one space), as whole
//! words only: "lumbridge" is not found in "xlumbridge" or "lumbridgex". The spelling rules
//! and the scan run in one pass without a folded copy of the text: each word is folded,
//! looked up once in the table of the words names use, and names are paths of those words in
//! a trie (`name_matcher.rs` says why this beats a byte automaton here). Of overlapping names
//! the leftmost-longest wins. A built vocabulary is `Send + Sync` and meant to be shared (the
//! engine keeps one per process).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::avatars::lessons;
use crate::avatars::topics::{self, TOPIC_KINDS};

mod ascii_word;
mod name_matcher;

use name_matcher::NameMatcher;

/// The places of the game's world: `slug|Name[|alias…]`.
const PLACES: &str = include_str!("../../../data/places.txt");
/// Items, NPCs and quest guides the wiki lacks: `kind:slug|Title[|alias…]`.
const LOSTHQ: &str = include_str!("../../../data/losthq.txt");
/// Nicknames: `name|tag`.
const NICKNAMES: &str = include_str!("../../../data/nicknames.txt");
/// Everyday words and phrases, one a line.
const EVERYDAY: &str = include_str!("../../../data/everyday.txt");

/// The longest name kept, in characters: a page whose heading runs on is cut, so one odd page
/// cannot make the matcher large.
pub const MAX_NAME_CHARS: usize = 120;
/// The most other names an entry keeps.
pub const MAX_ALIASES: usize = 16;
/// Single words this long or shorter (`man`, `cow`, `imp`) are everyday words.
const SHORT_WORD_BYTES: usize = 3;

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
    pub what: String,
    pub why: String,
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
fn parse_entries(listing: &str, source: Source, kind: Option<&str>) -> (Vec<Entry>, Vec<Skipped>) {
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
pub fn title_from_slug(slug: &str) -> String {
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
fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The compiled-in entries (places, then the LostHQ list) and what was skipped reading them
/// (nothing: a test holds the files to that).
static BUILTIN_ENTRIES: LazyLock<(Vec<Entry>, Vec<Skipped>)> = LazyLock::new(|| {
    let (mut entries, mut skipped) = parse_entries(PLACES, Source::Places, Some("place"));
    let (losthq, losthq_skipped) = parse_listing(LOSTHQ, Source::LostHq);
    entries.extend(losthq);
    skipped.extend(losthq_skipped);
    (entries, skipped)
});

/// A nickname and the tag it means.
type Nickname = (String, String);

/// The compiled-in nicknames, and what was skipped reading them.
static NICKNAME_LIST: LazyLock<(Vec<Nickname>, Vec<Skipped>)> = LazyLock::new(|| {
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
static EVERYDAY_WORDS: LazyLock<HashSet<String>> = LazyLock::new(|| {
    EVERYDAY
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(name_key)
        .filter(|key| !key.is_empty())
        .collect()
});

/// The entries compiled into MindRune: the places and the LostHQ list.
pub fn builtin_entries() -> Vec<Entry> {
    BUILTIN_ENTRIES.0.clone()
}

/// Whether a name (as the spelling rules read it) is an everyday word or phrase.
fn is_everyday(key: &str) -> bool {
    (!key.contains(' ') && key.len() <= SHORT_WORD_BYTES) || EVERYDAY_WORDS.contains(key)
}

/// Collects entries for a [`Vocabulary`].
#[derive(Debug, Clone, Default)]
pub struct VocabularyBuilder {
    entries: Vec<Entry>,
    by_tag: HashMap<String, usize>,
    skipped: Vec<Skipped>,
    builtins: bool,
}

impl VocabularyBuilder {
    /// A builder that adds the compiled-in places, LostHQ pages and nicknames when it builds.
    pub fn new() -> VocabularyBuilder {
        VocabularyBuilder {
            builtins: true,
            ..VocabularyBuilder::default()
        }
    }

    /// A builder with only the entries given to it (for tests and tools).
    pub fn without_builtins() -> VocabularyBuilder {
        VocabularyBuilder::default()
    }

    /// Adds an entry. An entry whose kind or slug is not a tag's is skipped with a note (and
    /// `false` returned). An entry whose tag is already there is merged into it: its title
    /// and aliases become other names of the first one, so a wiki page that now covers a
    /// LostHQ page keeps both spellings. Titles and aliases are made one line and cut to
    /// [`MAX_NAME_CHARS`]; an empty title becomes the slug's words.
    pub fn add(&mut self, entry: Entry) -> bool {
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
    pub fn build(mut self) -> (Vocabulary, Vec<Skipped>) {
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
fn add_alias(entry: &mut Entry, name: String) {
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
fn clean_name(name: &str) -> Option<String> {
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
enum Kind {
    Quest,
    Item,
    Npc,
    Place,
    Other,
}

impl Kind {
    fn of(kind: &str) -> Kind {
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
const WRITTEN: u8 = 2;
const DERIVED: u8 = 1;

#[derive(Debug, Clone, Copy)]
struct Candidate {
    entry: u32,
    strength: u8,
    everyday: bool,
}

/// Every name (as the spelling rules read it) and the entries it may mean.
#[derive(Default)]
struct AliasTable {
    names: HashMap<String, Vec<Candidate>>,
}

impl AliasTable {
    /// Adds a name of an entry, without a leading "the", and its plural or possessive.
    fn add_name(&mut self, name: &str, entry: u32, kind: Kind) {
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

    fn push(&mut self, key: &str, entry: u32, strength: u8, everyday: bool) {
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
fn plural(key: &str) -> Option<String> {
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
const NO_TAG: u32 = name_matcher::MAX_VALUE;

/// What a name resolves to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    /// The name means this entry; `everyday` names count only outside free text.
    Tag { entry: u32, everyday: bool },
    /// The name could mean two things: no tag, but it still covers its words, so a shorter
    /// name inside it is not read instead.
    Ambiguous,
}

/// Resolves a name's candidates: the firmest ones decide; one entry is the tag; a quest among
/// NPCs and items wins; anything else is ambiguous.
fn resolve(candidates: &[Candidate], kinds: &[Kind]) -> Resolution {
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

/// How each ASCII byte is read: a letter or digit (lower-cased), dropped (an apostrophe) or a
/// word break.
const BREAK: u8 = 0;
const DROP: u8 = 1;
static ASCII_FOLD: [u8; 128] = {
    let mut table = [BREAK; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() {
            table[b] = c.to_ascii_lowercase();
        }
        b += 1;
    }
    table[b'\'' as usize] = DROP;
    table[b'`' as usize] = DROP;
    table
};

/// Apostrophes beyond ASCII: dropped like `'`, so "Cook’s" reads as "cooks".
fn is_apostrophe(c: char) -> bool {
    matches!(c, '\u{2018}' | '\u{2019}' | '\u{02bc}' | '\u{00b4}')
}

/// How the spelling rules read a character beyond ASCII.
enum BeyondAscii {
    /// An apostrophe: dropped.
    Dropped,
    /// A letter or digit: kept as it is.
    Letter,
    /// Anything else: a word break.
    Break,
}

/// The character at byte `at` of `text` (a character boundary), as the spelling rules read
/// it, and its width in bytes; `None` at the end.
fn beyond_ascii(text: &str, at: usize) -> Option<(BeyondAscii, usize)> {
    let c = text.get(at..)?.chars().next()?;
    let kind = if is_apostrophe(c) {
        BeyondAscii::Dropped
    } else if c.is_alphanumeric() {
        BeyondAscii::Letter
    } else {
        BeyondAscii::Break
    };
    Some((kind, c.len_utf8()))
}

/// Applies the spelling rules to `text` from byte `from` to `to`, appending to `out`: ASCII
/// letters and digits lower-cased, apostrophes dropped, other letters and digits kept, and
/// every run of anything else one space.
fn fold_into(text: &str, range: Range<usize>, out: &mut Vec<u8>) {
    let bytes = text.as_bytes();
    let mut i = range.start;
    while i < range.end {
        let b = bytes[i];
        if b < 0x80 {
            match ASCII_FOLD[b as usize] {
                BREAK => push_break(out),
                DROP => {}
                c => out.push(c),
            }
            i += 1;
            continue;
        }
        // Not ASCII: `i` is on a character boundary, since only whole characters are stepped.
        let Some((kind, width)) = beyond_ascii(text, i) else {
            break;
        };
        match kind {
            BeyondAscii::Dropped => {}
            BeyondAscii::Letter => out.extend_from_slice(&bytes[i..i + width]),
            BeyondAscii::Break => push_break(out),
        }
        i += width;
    }
}

fn push_break(out: &mut Vec<u8>) {
    if out.last() != Some(&b' ') {
        out.push(b' ');
    }
}

/// A name as the spelling rules read it: `Cook's  Assistant!` → `cooks assistant`.
pub fn name_key(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len());
    fold_into(name, 0..name.len(), &mut out);
    let start = usize::from(out.first() == Some(&b' '));
    let end = out.len() - usize::from(out.len() > start && out.last() == Some(&b' '));
    // Only whole characters and ASCII bytes were copied, so the bytes are UTF-8.
    String::from_utf8(out[start..end].to_vec()).unwrap_or_default()
}

/// Per-thread buffers for [`Vocabulary::map`], so mapping a line allocates only its answer.
#[derive(Default)]
struct Scratch {
    /// The entries whose tags a text gave.
    seen: Seen,
    /// The bytes of a long word ([`WORD_BYTES`] once first used).
    word: Vec<u8>,
    /// The words read and not yet chosen from, as tokens ([`name_matcher::NONE`] for a word
    /// no name holds; a run of such words is kept as one, since none of them can be part of
    /// a name).
    words: Vec<u32>,
}

/// The most entries a thread's buffers keep between calls: one huge text must not hold its
/// memory for the rest of the thread's life.
const SCRATCH_KEPT: usize = 4_096;

/// After this many words are read, the names among them are chosen at the next word no name
/// holds (no name goes past it), so a huge text is read in constant memory and at the same
/// rate as a line.
const CHOOSE_AFTER_WORDS: usize = 2_048;

impl Scratch {
    fn clear(&mut self) {
        self.words.clear();
        self.words.shrink_to(SCRATCH_KEPT);
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The tags of one text in order of first appearance, each once. A tag of the vocabulary is
/// told apart by its entry's bit in `seen` (the thread's, cleared again after the text), an
/// exact tag the vocabulary does not know by comparing strings, with a set past
/// [`FoundTags::LISTED`] of them: a text with thousands of tags stays linear.
struct FoundTags<'v, 's> {
    vocabulary: &'v Vocabulary,
    tags: Vec<Cow<'v, str>>,
    seen: &'s mut Seen,
    unknown: Vec<String>,
    unknown_set: Option<HashSet<String>>,
}

/// One bit per entry of a vocabulary, and the entries whose bits are set.
#[derive(Default)]
struct Seen {
    bits: Vec<u64>,
    set: Vec<u32>,
}

impl Seen {
    /// Sets an entry's bit; whether it was clear.
    fn insert(&mut self, entry: u32) -> bool {
        let (word, bit) = (entry as usize / 64, 1u64 << (entry % 64));
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        let fresh = self.bits[word] & bit == 0;
        if fresh {
            self.bits[word] |= bit;
            self.set.push(entry);
        }
        fresh
    }

    /// Clears the bits set, in time proportional to their number.
    fn clear(&mut self) {
        for entry in self.set.drain(..) {
            if let Some(word) = self.bits.get_mut(entry as usize / 64) {
                *word = 0;
            }
        }
        self.set.shrink_to(SCRATCH_KEPT);
        self.bits.truncate(SCRATCH_KEPT);
    }
}

impl<'v, 's> FoundTags<'v, 's> {
    const LISTED: usize = 32;

    fn new(vocabulary: &'v Vocabulary, seen: &'s mut Seen) -> FoundTags<'v, 's> {
        seen.clear();
        FoundTags {
            vocabulary,
            tags: Vec::new(),
            seen,
            unknown: Vec::new(),
            unknown_set: None,
        }
    }

    /// A tag of the vocabulary's entry.
    fn push_entry(&mut self, entry: u32) {
        if let Some(tag) = self.vocabulary.tags.get(entry as usize)
            && self.seen.insert(entry)
        {
            self.tags.push(Cow::Borrowed(tag));
        }
    }

    /// A tag written exactly.
    fn push_exact(&mut self, tag: String) {
        if let Some(&entry) = self.vocabulary.entry_of_tag.get(tag.as_str()) {
            return self.push_entry(entry);
        }
        match &mut self.unknown_set {
            Some(set) => {
                if !set.insert(tag.clone()) {
                    return;
                }
            }
            None => {
                if self.unknown.contains(&tag) {
                    return;
                }
                self.unknown.push(tag.clone());
                if self.unknown.len() > Self::LISTED {
                    self.unknown_set =
                        Some(std::mem::take(&mut self.unknown).into_iter().collect());
                }
            }
        }
        self.tags.push(Cow::Owned(tag));
    }
}

/// The spans of the exact tags (with the tag) and skill references (without) in a text, by
/// where they start. Both start only at a kind word before a colon ([`topics::kind_colons`]),
/// and most texts have none: they cost one `memchr` pass.
fn exact_spans(text: &str) -> Vec<(Range<usize>, Option<String>)> {
    let kinds = topics::kind_colons(text);
    if kinds.is_empty() {
        return Vec::new();
    }
    let mut written: Vec<(Range<usize>, Option<String>)> = topics::tag_spans_at(text, &kinds)
        .into_iter()
        .map(|(span, tag)| (span, Some(tag)))
        .collect();
    if kinds.iter().any(|kind| kind.skill) {
        written.extend(
            topics::skill_ref_spans_at(text, &kinds)
                .into_iter()
                .map(|(span, _)| (span, None)),
        );
        written.sort_by_key(|(span, _)| span.start);
    }
    written
}

/// The longest word the tokenizer keeps: a longer one is no name's (names are at most
/// [`MAX_NAME_CHARS`] characters), so only its length is counted.
const WORD_BYTES: usize = 4 * MAX_NAME_CHARS;

/// Splits text into words under the spelling rules (see [`fold_into`]) and looks each one up,
/// without a folded copy of the text: one pass, a byte at a time. A short word is packed
/// into two registers as it is folded (see [`name_matcher::pack`]); a long one is also
/// copied into a buffer, which is read only when the word ends long.
struct Tokenizer<'a, 'v, 's> {
    matcher: &'a NameMatcher,
    /// Where the words read go once a run of them is complete.
    chooser: &'a mut Chooser<'v, 's>,
    /// Bytes 0..8 and 8..16 of the current word, packed.
    low: u64,
    high: u64,
    /// The current word's bytes, for a word longer than a packed one (the thread's buffer, so
    /// a call does not clear [`WORD_BYTES`] bytes first).
    word: &'a mut [u8],
    /// Bytes of the current word (may exceed the buffer: then the word is no name's).
    len: usize,
    words: &'a mut Vec<u32>,
}

impl Tokenizer<'_, '_, '_> {
    #[inline(always)]
    fn push(&mut self, byte: u8) {
        let len = self.len;
        if len < 8 {
            self.low |= u64::from(byte) << (8 * len);
        } else if len < name_matcher::PACKED_BYTES {
            self.high |= u64::from(byte) << (8 * (len - 8));
        }
        if let Some(slot) = self.word.get_mut(len) {
            *slot = byte;
        }
        self.len = len + 1;
    }

    /// Ends the current word, if one was begun.
    #[inline(always)]
    fn word_break(&mut self) {
        let len = self.len;
        if len == 0 {
            return;
        }
        let id = if len <= name_matcher::PACKED_BYTES {
            self.matcher
                .packed_word(u128::from(self.high) << 64 | u128::from(self.low))
        } else {
            match self.word.get(..len) {
                Some(word) => self.matcher.word(word),
                None => name_matcher::NONE,
            }
        };
        (self.len, self.low, self.high) = (0, 0, 0);
        self.word_read(id);
    }

    /// Notes a whole word read.
    #[inline(always)]
    fn word_read(&mut self, id: u32) {
        if id != name_matcher::NONE {
            self.words.push(id);
        } else if self.words.last() != Some(&name_matcher::NONE) {
            self.words.push(id);
            if self.words.len() >= CHOOSE_AFTER_WORDS {
                self.chooser.choose(self.words);
                self.words.clear();
            }
        }
    }

    /// Reads `text[range]`.
    fn feed_text(&mut self, text: &str, range: Range<usize>) {
        let bytes = text.as_bytes();
        let mut i = range.start;
        while i < range.end {
            let b = bytes[i];
            if b < 0x80 {
                match ASCII_FOLD[b as usize] {
                    BREAK => self.word_break(),
                    DROP => {}
                    c => {
                        // At a word's first byte, most words are read whole and at once.
                        if self.len == 0
                            && let Some((len, packed)) =
                                ascii_word::short_ascii_word(bytes, i, range.end)
                        {
                            self.word_read(self.matcher.packed_word(packed));
                            i += len;
                            continue;
                        }
                        self.push(c);
                    }
                }
                i += 1;
                continue;
            }
            // Not ASCII: `i` is on a character boundary, since only whole characters are
            // stepped.
            let Some((kind, width)) = beyond_ascii(text, i) else {
                break;
            };
            match kind {
                BeyondAscii::Dropped => {}
                BeyondAscii::Letter => {
                    for &byte in &bytes[i..i + width] {
                        self.push(byte);
                    }
                }
                BeyondAscii::Break => self.word_break(),
            }
            i += width;
        }
    }
}

/// Reads the whole text, handing its words to `chooser` a run at a time: the exact tags'
/// spans are word breaks (and noted where they stood), everything else is read under the
/// spelling rules.
fn tokenize(
    matcher: &NameMatcher,
    text: &str,
    written: Vec<(Range<usize>, Option<String>)>,
    (words, word): (&mut Vec<u32>, &mut [u8]),
    chooser: &mut Chooser<'_, '_>,
) {
    let mut tokenizer = Tokenizer {
        matcher,
        chooser,
        low: 0,
        high: 0,
        word,
        len: 0,
        words,
    };
    let mut at = 0;
    for (span, tag) in written {
        if span.start < at {
            continue;
        }
        tokenizer.feed_text(text, at..span.start);
        tokenizer.word_break();
        if let Some(tag) = tag {
            let before = tokenizer.chooser.chosen + tokenizer.words.len();
            tokenizer.chooser.exact.push((before, tag));
        }
        at = span.end;
    }
    tokenizer.feed_text(text, at..text.len());
    tokenizer.word_break();
    tokenizer.chooser.choose(tokenizer.words);
    tokenizer.words.clear();
}

/// Chooses the names among the words read, leftmost-longest, and gathers the tags in order:
/// "Lumbridge Swamp" is the swamp and not Lumbridge. A name that could mean two things, or
/// an everyday one, gives no tag but still covers its words.
struct Chooser<'v, 's> {
    vocabulary: &'v Vocabulary,
    found: FoundTags<'v, 's>,
    /// Exact tags, and how many words of the text came before each.
    exact: Vec<(usize, String)>,
    /// How many of `exact` are in `found`.
    exact_taken: usize,
    /// How many words of the text were chosen from so far.
    chosen: usize,
}

impl<'v, 's> Chooser<'v, 's> {
    fn new(vocabulary: &'v Vocabulary, seen: &'s mut Seen) -> Chooser<'v, 's> {
        Chooser {
            vocabulary,
            found: FoundTags::new(vocabulary, seen),
            exact: Vec::new(),
            exact_taken: 0,
            chosen: 0,
        }
    }

    /// Chooses among the next words of the text. No name goes past the last of them: it is
    /// the text's last word or a word no name holds.
    fn choose(&mut self, words: &[u32]) {
        let vocabulary = self.vocabulary;
        let mut start = 0;
        while start < words.len() {
            let Some((spanned, entry)) = vocabulary.matcher.longest_at(&words[start..]) else {
                start += 1;
                continue;
            };
            let at = self.chosen + start;
            start += spanned;
            if entry == NO_TAG {
                // An everyday or ambiguous name.
                continue;
            }
            // Exact tags written before this name come first.
            self.take_exact(at);
            self.found.push_entry(entry);
        }
        self.chosen += words.len();
    }

    /// Takes the exact tags written before the `before`th word of the text.
    fn take_exact(&mut self, before: usize) {
        while let Some((at, tag)) = self.exact.get_mut(self.exact_taken)
            && *at <= before
        {
            let tag = std::mem::take(tag);
            self.exact_taken += 1;
            self.found.push_exact(tag);
        }
    }

    fn finish(mut self) -> Vec<Cow<'v, str>> {
        self.take_exact(usize::MAX);
        self.found.seen.clear();
        self.found.tags
    }
}

/// The topic-tag vocabulary, compiled. Build it with [`VocabularyBuilder`],
/// [`Vocabulary::from_entries`] or [`Vocabulary::from_wiki_listing`]; share it (it is
/// immutable and `Send + Sync`).
pub struct Vocabulary {
    entries: Vec<Entry>,
    /// `kind:slug` of each entry, by entry index.
    tags: Vec<Box<str>>,
    /// Every name, as the spelling rules read it, to its pattern index.
    by_key: HashMap<Box<str>, u32>,
    /// Each entry's index by its tag.
    entry_of_tag: HashMap<Box<str>, u32, foldhash::fast::FixedState>,
    /// What each pattern (name) resolves to.
    resolutions: Vec<Resolution>,
    /// Every name as the spelling rules read it, by pattern index.
    patterns: Vec<String>,
    /// The names, as the scan finds them.
    matcher: NameMatcher,
}

impl fmt::Debug for Vocabulary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Vocabulary")
            .field("tags", &self.entries.len())
            .field("names", &self.patterns.len())
            .finish()
    }
}

static BUILTIN: LazyLock<Arc<Vocabulary>> =
    LazyLock::new(|| Arc::new(VocabularyBuilder::new().build().0));

impl Vocabulary {
    /// The compiled-in vocabulary alone (places, LostHQ pages, nicknames): what a library
    /// without a wiki vocabulary maps with. Built once per process.
    pub fn builtin() -> Arc<Vocabulary> {
        BUILTIN.clone()
    }

    /// The compiled-in entries plus these.
    pub fn from_entries(entries: impl IntoIterator<Item = Entry>) -> (Vocabulary, Vec<Skipped>) {
        let mut builder = VocabularyBuilder::new();
        for entry in entries {
            builder.add(entry);
        }
        builder.build()
    }

    /// The compiled-in entries plus a listing of wiki pages (`kind:slug[|Title]` lines, see
    /// [`parse_listing`]).
    pub fn from_wiki_listing(listing: &str) -> (Vocabulary, Vec<Skipped>) {
        let (entries, mut skipped) = parse_listing(listing, Source::Wiki);
        let (vocabulary, more) = Vocabulary::from_entries(entries);
        skipped.extend(more);
        (vocabulary, skipped)
    }

    /// Every entry, in the order added (entries given first, then the compiled-in ones).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// How many tags it knows.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many names (spellings, plurals, nicknames) its alias table holds.
    pub fn name_count(&self) -> usize {
        self.patterns.len()
    }

    /// Every name of the alias table as the spelling rules read it (`cooks assistant`), for
    /// tools that compare against a plain scan.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.patterns.iter().map(String::as_str)
    }

    /// Tags per kind.
    pub fn counts_by_kind(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for entry in &self.entries {
            *counts.entry(entry.kind.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Whether it knows this tag (`quest:restless-ghost`).
    pub fn contains_tag(&self, tag: &str) -> bool {
        self.entry_of_tag.contains_key(tag)
    }

    /// The tag one name means, everyday names included (a header's `Tags: goblin` names the
    /// goblin), or `None` when the name is unknown or could mean two things.
    pub fn tag_for_name(&self, name: &str) -> Option<&str> {
        let key = name_key(name);
        let index = *self.by_key.get(key.as_str())?;
        match self.resolutions.get(index as usize)? {
            Resolution::Tag { entry, .. } => self.tags.get(*entry as usize).map(|t| &**t),
            Resolution::Ambiguous => None,
        }
    }

    /// The tag of one word of a header's `Tags:`: the word as an exact tag
    /// (`Quest:Restless-Ghost`), else as a name (`lumby`, `cooks-assistant`).
    pub fn tag_for_word(&self, word: &str) -> Option<String> {
        topics::normalize_tag(word).or_else(|| self.tag_for_name(word).map(str::to_string))
    }

    /// The topic tags of free text: tags written exactly ([`topics::exact_tags`]) and the tags
    /// of the names in it, without duplicates, in order of appearance. Everyday names and
    /// names that could mean two things give none. Never panics; linear in the text.
    ///
    /// A tag from the vocabulary is lent from it, an exact tag it does not know is owned: most
    /// texts' tags cost no allocation of their own.
    pub fn map(&self, text: &str) -> Vec<Cow<'_, str>> {
        SCRATCH.with(|cell| match cell.try_borrow_mut() {
            Ok(mut scratch) => self.map_with(text, &mut scratch),
            // Only a re-entrant call could find it borrowed; it gets its own.
            Err(_) => self.map_with(text, &mut Scratch::default()),
        })
    }

    fn map_with(&self, text: &str, scratch: &mut Scratch) -> Vec<Cow<'_, str>> {
        scratch.clear();
        // Exact tags and skill references are taken as written: their words are not read
        // again as names (`skill:buzz/lumbridge-cows` is feedback, not about Lumbridge).
        let written = exact_spans(text);
        let mut chooser = Chooser::new(self, &mut scratch.seen);
        if scratch.word.len() != WORD_BYTES {
            scratch.word = vec![0; WORD_BYTES];
        }
        let buffers = (&mut scratch.words, scratch.word.as_mut_slice());
        tokenize(&self.matcher, text, written, buffers, &mut chooser);
        chooser.finish()
    }

    /// A lesson with the tags the vocabulary finds in it that it does not already carry
    /// written as `[tag]`s after its leading tag groups, so the stored lesson shows its tags
    /// first: "Father Aereck is in the church for The Restless Ghost" becomes
    /// "[npc:father-aereck] [quest:restless-ghost] Father Aereck is in …". Idempotent: a
    /// tagged lesson is returned unchanged.
    pub fn tag_lesson(&self, text: &str) -> String {
        let carried = topics::exact_tags(text);
        let missing: Vec<Cow<'_, str>> = self
            .map(text)
            .into_iter()
            .filter(|tag| !carried.iter().any(|c| c == tag))
            .collect();
        if missing.is_empty() {
            return text.to_string();
        }
        let at = lessons::leading_tags_end(text);
        let mut tagged = String::with_capacity(text.len() + missing.len() * 24);
        tagged.push_str(&text[..at]);
        for tag in &missing {
            tagged.push('[');
            tagged.push_str(tag);
            tagged.push_str("] ");
        }
        tagged.push_str(text[at..].trim_start());
        tagged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rs-sdk's wiki pages, one `kind:slug` a line (1,350 of them), from the project's shared data:
    /// `$MINDRUNE_SHARED` when set, else `../shared` beside the checkout (where CI has it).
    fn wiki_pages_path() -> std::path::PathBuf {
        let shared = std::env::var_os("MINDRUNE_SHARED").map_or_else(
            || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
            std::path::PathBuf::from,
        );
        shared.join("data/rs-sdk/wiki-pages.txt")
    }

    fn wiki_listing() -> String {
        let path = wiki_pages_path();
        std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err} (set MINDRUNE_SHARED to the shared folder)",
                path.display()
            )
        })
    }

    static WIKI: LazyLock<Vocabulary> = LazyLock::new(|| {
        let (vocabulary, skipped) = Vocabulary::from_wiki_listing(&wiki_listing());
        assert!(skipped.is_empty(), "{skipped:?}");
        vocabulary
    });

    fn map(text: &str) -> Vec<String> {
        WIKI.map(text).into_iter().map(Cow::into_owned).collect()
    }

    #[test]
    fn the_compiled_in_lists_read_without_a_single_skip() {
        let (entries, skipped) = &*BUILTIN_ENTRIES;
        assert!(skipped.is_empty(), "{skipped:?}");
        assert!(NICKNAME_LIST.1.is_empty(), "{:?}", NICKNAME_LIST.1);
        let places = entries
            .iter()
            .filter(|e| e.source == Source::Places)
            .count();
        let losthq = entries
            .iter()
            .filter(|e| e.source == Source::LostHq)
            .count();
        assert_eq!(
            (places, losthq),
            (73, 58),
            "the spec counts 73 places and 58 LostHQ pages"
        );
        let mut tags: Vec<String> = entries.iter().map(Entry::tag).collect();
        tags.sort();
        tags.dedup();
        assert_eq!(
            tags.len(),
            entries.len(),
            "a compiled-in tag is listed twice"
        );
    }

    #[test]
    fn the_losthq_list_holds_only_pages_the_wiki_lacks() {
        let listing = wiki_listing();
        let wiki: HashSet<&str> = listing.lines().map(str::trim).collect();
        for entry in builtin_entries() {
            assert!(
                !wiki.contains(entry.tag().as_str()),
                "{} is a wiki page",
                entry.tag()
            );
        }
    }

    #[test]
    fn every_nickname_names_a_tag_of_the_full_vocabulary() {
        for (name, tag) in &NICKNAME_LIST.0 {
            assert!(WIKI.contains_tag(tag), "{name} → {tag}");
            assert_eq!(WIKI.tag_for_name(name), Some(tag.as_str()), "{name}");
        }
    }

    #[test]
    fn the_full_vocabulary_has_every_wiki_page_place_and_losthq_page() {
        assert_eq!(WIKI.len(), 1_350 + 73 + 58);
        let counts = WIKI.counts_by_kind();
        assert_eq!(counts["quest"], 59 + 17);
        assert_eq!(counts["skill"], 18);
        assert_eq!(counts["shop"], 119);
        assert_eq!(counts["place"], 73);
    }

    #[test]
    fn the_specs_examples() {
        // A nickname.
        assert_eq!(map("fight in lumby"), ["place:lumbridge"]);
        // A title in another spelling: apostrophe, hyphen, case.
        assert_eq!(map("Finish Cook's Assistant"), ["quest:cooks-assistant"]);
        assert_eq!(map("COOKS-ASSISTANT first"), ["quest:cooks-assistant"]);
        // Everyday words name no topic.
        assert!(map("attack the goblin").is_empty());
        // An exactly written tag always counts, known or not.
        assert_eq!(map("Tags: quest:restless-ghost"), ["quest:restless-ghost"]);
        assert_eq!(map("see npc:goblin"), ["npc:goblin"]);
        assert_eq!(map("place:somewhere-new"), ["place:somewhere-new"]);
    }

    /// Free text as agents write it (goals, preconditions, lessons) and the tags it carries.
    const FREE_TEXT: &[(&str, &[&str])] = &[
        (
            "Walk to Lumbridge and kill cows for cowhide",
            &["place:lumbridge", "item:cowhide"],
        ),
        (
            "Mine iron ore in the Dwarven Mine and smelt it in Falador",
            &["item:iron-ore", "place:dwarven-mine", "place:falador"],
        ),
        (
            "Pickpocket men in Ardougne until 40 thieving",
            &["place:ardougne", "skill:thieving"],
        ),
        (
            "Chop willow trees at Draynor and burn the willow logs",
            &["place:draynor-village", "item:willow-logs"],
        ),
        (
            "Start The Restless Ghost: talk to Father Aereck, then Father Urhney in Lumbridge Swamp",
            &[
                "quest:restless-ghost",
                "npc:father-aereck",
                "npc:father-urhney",
                "place:lumbridge-swamp",
            ],
        ),
        (
            "Needs a ghostspeak amulet for the ghost",
            &["item:ghostspeak-amulet"],
        ),
        (
            "Fish shrimps at Lumbridge Swamp with a small fishing net",
            &["place:lumbridge-swamp", "item:small-fishing-net"],
        ),
        (
            "Buy feathers at Gerrant's Fishy Business in Port Sarim",
            &["shop:gerrants-fishy-business", "place:port-sarim"],
        ),
        (
            "Cook lobsters on the range in Catherby",
            &["place:catherby"],
        ),
        (
            "Kill hill giants in the Edgeville Dungeon for big bones",
            &[
                "npc:hill-giant",
                "place:edgeville-dungeon",
                "item:big-bones",
            ],
        ),
        (
            "Get 31 prayer before Priest in Peril",
            &["quest:priest-in-peril"],
        ),
        (
            "Mine essence for Aubury in Varrock",
            &["npc:aubury", "place:varrock"],
        ),
        (
            "Bank at Al-Kharid then smelt gold bars",
            &["place:al-kharid", "item:gold-bar"],
        ),
        ("Fally park has no bank", &["place:falador"]),
        (
            "Kill the Lesser demon in Karamja Volcano",
            &["npc:lesser-demon", "place:karamja-volcano"],
        ),
        (
            "Buy a rune pick from Nurmof",
            &["item:rune-pickaxe", "npc:nurmof"],
        ),
        ("Train on chickens east of lumby", &["place:lumbridge"]),
        (
            "Doric's Quest needs clay, copper ore and iron ore",
            &["quest:dorics-quest", "item:copper-ore", "item:iron-ore"],
        ),
        (
            "Talk to Doric north of Falador",
            &["npc:doric", "place:falador"],
        ),
        (
            "Sell the items at the Varrock General Store",
            &["shop:varrock-general-store"],
        ),
        (
            "Run from the Wilderness when skulled",
            &["place:wilderness"],
        ),
        ("Steal from the silk stall in Ardy", &["place:ardougne"]),
        (
            "Do Dragon Slayer after Sir Amik Varze gives the Black Knights' Fortress reward",
            &[
                "quest:dragon-slayer",
                "npc:sir-amik-varze",
                "quest:black-knights-fortress",
            ],
        ),
        (
            "Drink the attack potion(3) before fighting",
            &["item:attack-potion-3"],
        ),
        (
            "Catch trout and salmon with a fly fishing rod at Barbarian Village",
            &["item:fly-fishing-rod", "place:barbarian-village"],
        ),
        (
            "The wizard in the Wizards' Tower teleports you",
            &["place:wizards-tower"],
        ),
        (
            "Take the boat from Port Sarim to Karamja",
            &["place:port-sarim", "place:karamja"],
        ),
        (
            "Fletch oak shortbows in Seers' Village",
            &["item:oak-shortbow", "place:seers-village"],
        ),
        (
            "Kill ice warriors in the Asgarnian Ice Dungeon",
            &["npc:ice-warrior", "place:asgarnian-ice-dungeon"],
        ),
        (
            "the cook needs an egg, a bucket of milk and a pot of flour",
            &["item:bucket-of-milk", "item:pot-of-flour"],
        ),
        ("Smith bronze daggers on the anvil", &["item:bronze-dagger"]),
        (
            "Craft gold rings in the Crafting Guild",
            &["item:gold-ring", "place:crafting-guild"],
        ),
        (
            "Monkey Madness starts in the Tree Gnome Stronghold",
            &["quest:monkey-madness", "place:tree-gnome-stronghold"],
        ),
        ("Kill Elvarg on Crandor", &["npc:elvarg", "place:crandor"]),
        (
            "Goblin Diplomacy: dye goblin mail in the Goblin Village",
            &["quest:goblin-diplomacy", "place:goblin-village"],
        ),
        (
            "Herblore at Taverly needs Druidic Ritual",
            &["skill:herblore", "place:taverley", "quest:druidic-ritual"],
        ),
        (
            "Lumbridge's cows are north of the castle",
            &["place:lumbridge"],
        ),
        (
            "Lumbridge Swamp fishing",
            &["place:lumbridge-swamp", "skill:fishing"],
        ),
        (
            "woodcutting in seers",
            &["skill:woodcutting", "place:seers-village"],
        ),
        ("Wear an anti-dragon shield", &["item:anti-dragon-shield"]),
        (
            "Gertrude's Cat is a quest and a cat",
            &["quest:gertudes-cat"],
        ),
        ("Romeo & Juliet", &["quest:romeo-and-juliet"]),
        ("Al-Kharid warriors hit hard", &["npc:al-kharid-warrior"]),
        (
            "see quest:restless-ghost and place:draynor-village",
            &["quest:restless-ghost", "place:draynor-village"],
        ),
        (
            "QUEST:Restless-Ghost written in capitals",
            &["quest:restless-ghost"],
        ),
        (
            "[quest:restless-ghost] Father Aereck is in the church",
            &["quest:restless-ghost", "npc:father-aereck"],
        ),
        // Everyday names, and text that holds no name at all.
        ("attack the goblin", &[]),
        ("kill cows and goblins, then bank the logs", &[]),
        ("the man stands near the tree", &[]),
        ("Buy a chisel and a hammer", &[]),
        ("the fishing spot moved", &[]),
        ("subquest:x is not a tag", &[]),
        // Names that could mean two things: no tag, unless a quest's name meets an NPC's or
        // an item's.
        ("talk to Oziach", &[]),
        ("through the Shantay Pass", &[]),
        ("Shilo Village gems", &[]),
        ("gems in Shilo", &["place:shilo-village"]),
        ("Sea Slug", &["quest:sea-slug"]),
        ("fetch the Holy Grail", &["quest:holy-grail"]),
        // A name glued to other letters is no name; a feedback reference is no topic.
        ("xlumbridge lumbridgex", &[]),
        ("skill:buzz/lumbridge-cows fails", &[]),
    ];

    #[test]
    fn free_text_lines_map_to_their_tags() {
        assert!(FREE_TEXT.len() >= 40);
        let mut wrong = Vec::new();
        for (text, expected) in FREE_TEXT {
            let got = map(text);
            if got != *expected {
                wrong.push(format!("{text:?}: expected {expected:?}, got {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn the_longest_whole_name_wins_and_a_shorter_name_gets_its_chance() {
        assert_eq!(map("Lumbridge Swamp"), ["place:lumbridge-swamp"]);
        assert_eq!(
            map("Lumbridge General Store"),
            ["shop:lumbridge-general-store"]
        );
        // "port sarimx" is no name, but "sarim" further on is.
        assert_eq!(map("port sarimx, export sarim"), ["place:port-sarim"]);
        assert_eq!(
            map("lumbridge varrock falador"),
            ["place:lumbridge", "place:varrock", "place:falador"]
        );
    }

    #[test]
    fn tags_come_once_in_order_of_appearance() {
        assert_eq!(
            map("Varrock, then lumby, then Lumbridge and place:varrock again"),
            ["place:varrock", "place:lumbridge"]
        );
        assert_eq!(
            map("lumby first, quest:restless-ghost second"),
            ["place:lumbridge", "quest:restless-ghost"]
        );
    }

    #[test]
    fn a_text_naming_many_tags_gives_each_once_in_order_of_appearance() {
        // More tags than FoundTags lists before it keeps a set, each written twice.
        let places: Vec<&Entry> = WIKI
            .entries()
            .iter()
            .filter(|e| e.kind == "place" && map(&e.title) == [e.tag()])
            .take(3 * FoundTags::LISTED)
            .collect();
        assert!(places.len() > FoundTags::LISTED, "{} places", places.len());
        let titles: Vec<&str> = places.iter().map(|e| e.title.as_str()).collect();
        let exact: Vec<String> = places.iter().map(|e| e.tag()).collect();
        let text = format!(
            "{}. {}. {}",
            titles.join(", then "),
            exact.join(" "),
            titles.join(" and ")
        );
        assert_eq!(map(&text), exact);
        // And exact tags the vocabulary does not know, each written twice.
        let unknown: Vec<String> = (0..3 * FoundTags::LISTED)
            .map(|n| format!("item:no-such-thing-{n}"))
            .collect();
        let text = format!("{} and again {}", unknown.join(", "), unknown.join(" "));
        assert_eq!(map(&text), unknown);
    }

    #[test]
    fn a_name_is_whole_wherever_it_falls_in_a_long_text() {
        // Words that are parts of names (never a break between runs), then a name whose
        // first word is a name of its own, at every place around the size of a run.
        for before in CHOOSE_AFTER_WORDS - 4..CHOOSE_AFTER_WORDS + 4 {
            let text = format!("{}Lumbridge Swamp", "the ".repeat(before));
            assert_eq!(
                map(&text),
                ["place:lumbridge-swamp"],
                "after {before} words"
            );
            let text = format!(
                "{}quest:restless-ghost and Lumbridge Swamp",
                "the x ".repeat(before)
            );
            assert_eq!(
                map(&text),
                ["quest:restless-ghost", "place:lumbridge-swamp"],
                "after {before} words"
            );
        }
    }

    #[test]
    fn every_spelling_of_a_name_is_the_same_name() {
        for text in [
            "Cook's Assistant",
            "Cook’s Assistant",
            "cooks assistant",
            "COOKS-ASSISTANT",
            "cook's   assistant",
            "cooks_assistant",
            "(cooks assistant)",
        ] {
            assert_eq!(map(text), ["quest:cooks-assistant"], "{text}");
        }
        assert_eq!(map("the Restless Ghost"), ["quest:restless-ghost"]);
        assert_eq!(map("bronze pickaxes"), ["item:bronze-pickaxe"]);
        assert_eq!(map("giant rats"), ["npc:giant-rat"]);
        // A plural of an everyday name is everyday too.
        assert!(map("fishermen").is_empty());
        assert_eq!(WIKI.tag_for_name("fishermen"), Some("npc:fisherman"));
    }

    #[test]
    fn a_tags_entry_may_name_an_everyday_thing() {
        assert_eq!(WIKI.tag_for_name("goblin"), Some("npc:goblin"));
        assert_eq!(WIKI.tag_for_name("Goblins"), Some("npc:goblin"));
        assert_eq!(WIKI.tag_for_name("attack"), Some("skill:attack"));
        assert_eq!(WIKI.tag_for_name("oziach"), None, "an NPC and a shop");
        assert_eq!(WIKI.tag_for_name("nothing at all"), None);
        assert_eq!(
            WIKI.tag_for_word("cooks-assistant").as_deref(),
            Some("quest:cooks-assistant")
        );
        assert_eq!(
            WIKI.tag_for_word("Quest:Restless-Ghost").as_deref(),
            Some("quest:restless-ghost")
        );
        assert_eq!(
            WIKI.tag_for_word("lumby").as_deref(),
            Some("place:lumbridge")
        );
    }

    #[test]
    fn an_empty_library_still_maps_exact_tags_and_places() {
        let builtin = Vocabulary::builtin();
        assert_eq!(builtin.len(), 73 + 58);
        assert_eq!(
            builtin.map("fight in lumby for quest:cooks-assistant"),
            ["place:lumbridge", "quest:cooks-assistant"]
        );
        assert!(
            builtin.map("Cook's Assistant").is_empty(),
            "the wiki's pages are not built in"
        );
        assert_eq!(
            builtin.map("Regicide starts in West Ardougne"),
            ["quest:regicide", "place:west-ardougne"]
        );
    }

    #[test]
    fn a_builder_skips_what_is_not_a_tag_and_merges_what_is_there_twice() {
        let mut builder = VocabularyBuilder::without_builtins();
        assert!(!builder.add(Entry::new("monster", "goblin", "Goblin", Source::Wiki)));
        assert!(!builder.add(Entry::new("item", "Bad Slug!", "x", Source::Wiki)));
        assert!(builder.add(Entry::new("quest", "regicide", "Regicide", Source::Wiki)));
        let mut again = Entry::new("quest", "regicide", "King Tyras Quest", Source::LostHq);
        again.aliases.push("regicide".into());
        assert!(builder.add(again));
        assert!(builder.add(Entry::new("item", "odd", "\u{7}\n  ", Source::Wiki)));
        assert!(builder.add(Entry::new("npc", "long", &"n".repeat(500), Source::Wiki)));
        let (vocabulary, skipped) = builder.build();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(
            skipped[0]
                .to_string()
                .starts_with("monster:goblin: not a tag")
        );
        assert_eq!(vocabulary.len(), 3);
        let regicide = &vocabulary.entries()[0];
        assert_eq!(regicide.title, "Regicide");
        assert_eq!(regicide.aliases, ["King Tyras Quest"]);
        assert_eq!(regicide.source, Source::Wiki);
        assert_eq!(vocabulary.map("the king tyras quest"), ["quest:regicide"]);
        assert_eq!(
            vocabulary.entries()[1].title,
            "Odd",
            "an empty title is the slug's words"
        );
        assert_eq!(
            vocabulary.entries()[2].title.chars().count(),
            MAX_NAME_CHARS
        );
        assert!(
            vocabulary.map("lumby").is_empty(),
            "no built-in places without builtins"
        );
    }

    #[test]
    fn a_listing_reports_lines_it_cannot_read() {
        let listing = "# pages\n\nquest:cooks-assistant|Cook's Assistant\nitem:bronze-pickaxe\nmonster:goblin\nquest:cooks-assistant\nitem:\n  npc:Father-Aereck | Father Aereck | Aereck  \n";
        let (entries, skipped) = parse_listing(listing, Source::Wiki);
        let tags: Vec<String> = entries.iter().map(Entry::tag).collect();
        assert_eq!(
            tags,
            [
                "quest:cooks-assistant",
                "item:bronze-pickaxe",
                "npc:father-aereck"
            ]
        );
        assert_eq!(entries[1].title, "Bronze Pickaxe");
        assert_eq!(entries[2].aliases, ["Aereck"]);
        let notes: Vec<String> = skipped.iter().map(Skipped::to_string).collect();
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0].starts_with("line 5: `monster:goblin` is not a tag"),
            "{notes:?}"
        );
        assert_eq!(
            notes[1],
            "line 6: `quest:cooks-assistant` again (first on line 3); skipped"
        );
        assert!(
            notes[2].starts_with("line 7: `item:` is not a tag"),
            "{notes:?}"
        );
    }

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

    #[test]
    fn a_lesson_carries_its_tags_first() {
        assert_eq!(
            WIKI.tag_lesson("Father Aereck is in the church for The Restless Ghost"),
            "[npc:father-aereck] [quest:restless-ghost] Father Aereck is in the church for The Restless Ghost"
        );
        // Tags the author wrote stay first; the ones found follow them.
        assert_eq!(
            WIKI.tag_lesson("[quest:restless-ghost] Father Aereck is in the church"),
            "[quest:restless-ghost] [npc:father-aereck] Father Aereck is in the church"
        );
        assert_eq!(
            WIKI.tag_lesson("[skill:pickles/mine-iron] fails in lumby"),
            "[skill:pickles/mine-iron] [place:lumbridge] fails in lumby"
        );
        let tagged = "[quest:restless-ghost] Father Aereck (npc:father-aereck) is in the church";
        assert_eq!(WIKI.tag_lesson(tagged), tagged);
        assert_eq!(WIKI.tag_lesson("bank first"), "bank first");
    }

    #[test]
    fn name_keys_fold_case_apostrophes_and_breaks() {
        assert_eq!(name_key("  Cook's  Assistant! "), "cooks assistant");
        assert_eq!(name_key("Rune 2h-sword"), "rune 2h sword");
        assert_eq!(name_key("Waterskin (4)"), "waterskin 4");
        // Only ASCII is folded, so no foreign letter can fold into an ASCII name.
        assert_eq!(name_key("Café—Ölberg"), "café Ölberg");
        assert_eq!(name_key("'`'"), "");
        assert_eq!(name_key(""), "");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// Names that count in free text, as written in it.
        const NAMES: &[(&str, &str)] = &[
            ("Lumbridge", "place:lumbridge"),
            ("Varrock", "place:varrock"),
            ("Cook's Assistant", "quest:cooks-assistant"),
            ("bronze pickaxe", "item:bronze-pickaxe"),
            ("Father Aereck", "npc:father-aereck"),
            ("lumby", "place:lumbridge"),
            ("Al-Kharid", "place:al-kharid"),
        ];

        fn text_strategy() -> impl Strategy<Value = String> {
            prop::collection::vec(
                prop_oneof![
                    "\\PC{0,8}",
                    Just("lumby".to_string()),
                    Just("Cook's".to_string()),
                    Just("Assistant".to_string()),
                    Just("quest:restless-ghost".to_string()),
                    Just("skill:a/b".to_string()),
                    Just("goblin".to_string()),
                    Just("Lumbridge Swamp".to_string()),
                    Just("’".to_string()),
                    Just("-".to_string()),
                    Just(" ".to_string()),
                    Just("[".to_string()),
                    Just("]".to_string()),
                ],
                0..16,
            )
            .prop_map(|parts| parts.concat())
        }

        /// The tags of `text` by the plainest reading of the rules: fold the whole text, then at
        /// each word try every known name from the longest down; a name found covers its words.
        /// (Texts without colons, so without exact tags.)
        fn naive_map(vocabulary: &Vocabulary, text: &str) -> Vec<String> {
            let folded = name_key(text);
            let words: Vec<&str> = folded.split(' ').filter(|w| !w.is_empty()).collect();
            let longest = vocabulary
                .names()
                .map(|n| n.split(' ').count())
                .max()
                .unwrap_or(0);
            let mut tags = Vec::new();
            let mut at = 0;
            while at < words.len() {
                let found = (1..=longest.min(words.len() - at)).rev().find_map(|n| {
                    let name = words[at..at + n].join(" ");
                    vocabulary.by_key.get(name.as_str()).map(|&p| (n, p))
                });
                let Some((spanned, pattern)) = found else {
                    at += 1;
                    continue;
                };
                at += spanned;
                if let Resolution::Tag {
                    entry,
                    everyday: false,
                } = vocabulary.resolutions[pattern as usize]
                {
                    let tag = vocabulary.tags[entry as usize].to_string();
                    if !tags.contains(&tag) {
                        tags.push(tag);
                    }
                }
            }
            tags
        }

        /// Text made of the vocabulary's own words (so names, parts of names and runs of
        /// names are common), other words and the breaks and apostrophes the rules fold.
        fn name_words_strategy() -> impl Strategy<Value = String> {
            let words: Vec<String> = {
                let mut words: Vec<String> = WIKI
                    .names()
                    .flat_map(|n| n.split(' '))
                    .map(str::to_string)
                    .collect();
                words.sort();
                words.dedup();
                words
            };
            let names: Vec<String> = WIKI.names().map(str::to_string).collect();
            prop::collection::vec(
                prop_oneof![
                    4 => prop::sample::select(words),
                    3 => prop::sample::select(names),
                    1 => "[a-zA-Z0-9]{1,7}",
                    1 => "\\PC{1,3}",
                ]
                .prop_flat_map(|word| {
                    (
                        Just(word),
                        prop::sample::select(vec![" ", " ", ", ", "'s ", "-", "’", "\n", " the "]),
                    )
                })
                .prop_map(|(word, gap)| format!("{word}{gap}")),
                0..24,
            )
            .prop_map(|parts| parts.concat().replace(':', " "))
        }

        #[test]
        fn a_text_of_many_runs_of_words_maps_as_its_naive_reading() {
            // Every name of the vocabulary in one text, from a few different first ones: far
            // more words than are chosen from at once.
            let names: Vec<&str> = WIKI.names().collect();
            for seed in [0, 1, 977, names.len() / 2, names.len() - 1] {
                let (after, before) = names.split_at(seed);
                let text = after
                    .iter()
                    .chain(before)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" and ");
                assert!(text.split(' ').count() > 2 * CHOOSE_AFTER_WORDS);
                assert_eq!(map(&text), naive_map(&WIKI, &text));
                // Exact tags keep their places across the runs.
                let tagged = format!("quest:restless-ghost {text} varrock quest:cooks-assistant");
                let mut expected = vec!["quest:restless-ghost".to_string()];
                expected.extend(
                    naive_map(&WIKI, &text)
                        .into_iter()
                        .filter(|t| *t != "quest:restless-ghost"),
                );
                for tag in ["place:varrock", "quest:cooks-assistant"] {
                    if !expected.iter().any(|t| t == tag) {
                        expected.push(tag.to_string());
                    }
                }
                assert_eq!(map(&tagged), expected);
            }
        }

        proptest! {
            #[test]
            fn mapping_any_text_never_panics_and_gives_unique_known_or_exact_tags(text in text_strategy()) {
                let tags = map(&text);
                let exact = topics::exact_tags(&text);
                for tag in &tags {
                    prop_assert_eq!(topics::normalize_tag(tag), Some(tag.clone()));
                    prop_assert!(WIKI.contains_tag(tag) || exact.contains(tag), "{}", tag);
                    prop_assert_eq!(tags.iter().filter(|t| *t == tag).count(), 1);
                }
                for tag in exact {
                    prop_assert!(tags.contains(&tag));
                }
            }

            #[test]
            fn the_word_scan_finds_what_a_naive_scan_of_the_folded_text_finds(
                text in name_words_strategy(),
            ) {
                prop_assert_eq!(map(&text), naive_map(&WIKI, &text), "{:?}", text);
            }

            #[test]
            fn the_exact_spans_are_every_tag_and_skill_reference_in_order(
                text in text_strategy(),
            ) {
                let mut everywhere: Vec<(Range<usize>, Option<String>)> = topics::tag_spans(&text)
                    .into_iter()
                    .map(|(span, tag)| (span, Some(tag)))
                    .chain(topics::skill_ref_spans(&text).into_iter().map(|(span, _)| (span, None)))
                    .collect();
                everywhere.sort_by_key(|(span, _)| span.start);
                prop_assert_eq!(exact_spans(&text), everywhere);
            }

            #[test]
            fn mapping_is_idempotent(text in text_strategy()) {
                let tags = map(&text);
                prop_assert_eq!(map(&tags.join(" ")), tags.clone());
                let tagged = WIKI.tag_lesson(&text);
                prop_assert_eq!(WIKI.tag_lesson(&tagged), tagged.clone());
                let mut before = tags;
                let mut after = map(&tagged);
                before.sort();
                after.sort();
                prop_assert_eq!(before, after);
            }

            #[test]
            fn a_name_between_word_breaks_is_found(
                index in 0..NAMES.len(),
                before in "[a-z ]{0,12}",
                after in "[a-z ]{0,12}",
                open in prop::sample::select(vec![" ", ", ", " (", "\n", " \"", "..."]),
                close in prop::sample::select(vec![" ", ".", ")", "!", "\n", ", ", "?"]),
            ) {
                let (name, tag) = NAMES[index];
                let text = format!("{before}{open}{name}{close}{after}");
                prop_assert!(map(&text).contains(&tag.to_string()), "{}", text);
            }

            #[test]
            fn a_name_glued_to_a_letter_or_digit_is_not_found(
                index in 0..NAMES.len(),
                glue in "[a-rt-z0-9]",
                front in any::<bool>(),
            ) {
                let (name, tag) = NAMES[index];
                let text = if front { format!("{glue}{name}") } else { format!("{name}{glue}") };
                prop_assert!(!map(&text).contains(&tag.to_string()), "{}", text);
            }
        }
    }
}
