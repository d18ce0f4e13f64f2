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
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, LazyLock};

use crate::avatars::lessons;
use crate::avatars::topics;

mod ascii_word;
mod name_matcher;

use name_matcher::NameMatcher;

mod aliases;
mod entries;
mod folding;
mod tagging;
use aliases::Resolution;
pub(crate) use aliases::VocabularyBuilder;
pub(crate) use entries::Skipped;
pub use entries::{Entry, Source, parse_listing};
pub(crate) use folding::name_key;
use tagging::{Chooser, SCRATCH, Scratch, WORD_BYTES, exact_spans, tokenize};

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
pub(crate) const MAX_NAME_CHARS: usize = 120;
/// The most other names an entry keeps.
pub(crate) const MAX_ALIASES: usize = 16;
/// Single words this long or shorter (`man`, `cow`, `imp`) are everyday words.
const SHORT_WORD_BYTES: usize = 3;

/// The topic-tag vocabulary, compiled. Build it with [`Vocabulary::from_entries`] (in this
/// crate, also `VocabularyBuilder`); share it (it is immutable and `Send + Sync`).
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

    #[cfg(test)]
    /// The compiled-in entries plus a listing of wiki pages (`kind:slug[|Title]` lines, see
    /// [`parse_listing`]).
    pub(crate) fn from_wiki_listing(listing: &str) -> (Vocabulary, Vec<Skipped>) {
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

    /// Whether it knows no tag. Public beside [`Vocabulary::len`], which other crates use
    /// (clippy's `len_without_is_empty`).
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
    pub(crate) fn tag_for_name(&self, name: &str) -> Option<&str> {
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
    use std::collections::HashSet;
    use std::ops::Range;

    use super::entries::{BUILTIN_ENTRIES, NICKNAME_LIST, builtin_entries};
    use super::tagging::{CHOOSE_AFTER_WORDS, FoundTags};
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
