//! Finding the vocabulary's names in folded text, a word at a time.
//!
//! Every name is a run of whole words (the spelling rules put one space between words), so
//! a name can only start at a word and only end at one. The matcher therefore works on words,
//! not bytes: each word of the text is looked up once in a hash table of the words that occur
//! in some name, and a name is a path of word ids in a trie. Words no name uses (most of any
//! text) cost one failed lookup; only a word that starts a name walks the trie.
//!
//! Why not a byte automaton (Aho–Corasick), as the rest of MindRune uses for many literals:
//! the vocabulary's ~3,000 names make a DFA of several megabytes, and the scan then waits on
//! a cache miss at nearly every byte (half the mapping time went to that one load, and the
//! bare `aho-corasick` scan of the same names runs below the 200 MB/s budget). The word
//! table is a few hundred kilobytes and its lookups do not depend on one another, so folding
//! and hashing run at the speed of the loop. The `aho-corasick` scan is still the baseline
//! `mindrune bench tags` measures against.
//!
//! Architecture invariant: [`NameMatcher`] finds exactly the names a scan of the folded text
//! for each name between two spaces would find, chosen leftmost-longest (the property test in
//! `vocabulary/mod.rs` compares it against that naive scan).

use std::collections::HashMap;

use foldhash::fast::FixedState;

/// No word, no node, no name.
pub(super) const NONE: u32 = u32::MAX;

/// Words up to this many bytes are looked up by their bytes packed into a `u128` (see
/// [`pack`]): the scan builds that number in registers as it folds the word, so a lookup
/// neither reads the word back from memory nor compares strings. Longer words (rare in names
/// and in text) are looked up by their bytes.
pub(super) const PACKED_BYTES: usize = 16;

/// A word of at most [`PACKED_BYTES`] bytes as one number: byte `i` in bits `8i..8i+8`. No
/// folded word holds a zero byte, so the packing is one-to-one.
pub(super) fn pack(word: &[u8]) -> u128 {
    word.iter()
        .enumerate()
        .fold(0, |packed, (i, &b)| packed | u128::from(b) << (8 * i))
}

/// A node of the trie (a run of words some name starts with) in four bytes, so the nodes
/// the scan reads stay in the first-level cache: the value of the name these words make in
/// the low 31 bits ([`NO_VALUE`] when they make none), and in the top bit whether some
/// longer name goes on from here.
#[derive(Clone, Copy)]
struct Node(u32);

/// The largest value a name may have.
pub(super) const MAX_VALUE: u32 = NO_VALUE - 1;
const NO_VALUE: u32 = (1 << 31) - 1;
const GOES_ON: u32 = 1 << 31;
const EMPTY: Node = Node(NO_VALUE);

impl Node {
    fn value(self) -> Option<u32> {
        let value = self.0 & !GOES_ON;
        (value != NO_VALUE).then_some(value)
    }

    fn goes_on(self) -> bool {
        self.0 & GOES_ON != 0
    }
}

/// The top bit of a word's token (what [`NameMatcher::word`] answers): no name starts with
/// this word, so the scan passes it without looking at its node. [`NONE`] has it too.
const INERT: u32 = 1 << 31;

/// The names as paths of word ids.
pub(super) struct NameMatcher {
    /// Every word of at most 8 bytes that occurs in some name, packed, to its id: most words
    /// are this short, and a table of `u64` keys takes half the cache of one of `u128`s.
    short_words: HashMap<u64, u32, FixedState>,
    /// The words of 9 to [`PACKED_BYTES`] bytes, packed, to their ids.
    middle_words: HashMap<u128, u32, FixedState>,
    /// The longer words of names, to their ids.
    long_words: HashMap<Box<[u8]>, u32, FixedState>,
    /// How many words the names use: word ids are `0..words`. A word's token is its id, with
    /// [`INERT`] when it starts no name.
    words: u32,
    /// The trie's edges below the first words: (node, word id) to node.
    edges: HashMap<(u32, u32), u32, FixedState>,
    /// Each node of the trie, by node id. The first `words` nodes are the one-word starts,
    /// one per word id (a word that starts no name has an empty one), so a word's node is
    /// its id and reading a word needs no second lookup.
    nodes: Vec<Node>,
    /// The longest word of any name, in bytes: a longer word of text is no name's.
    longest_word: usize,
}

impl NameMatcher {
    /// Compiles the names (each one as the spelling rules read it: words of folded text with
    /// one space between them), each with the value [`NameMatcher::longest_at`] reports for
    /// it (at most [`MAX_VALUE`]; a larger one is taken as `MAX_VALUE`). Linear in the names'
    /// total length.
    pub(super) fn new<'a>(names: impl IntoIterator<Item = (&'a str, u32)>) -> NameMatcher {
        let mut matcher = NameMatcher {
            short_words: HashMap::with_hasher(FixedState::default()),
            middle_words: HashMap::with_hasher(FixedState::default()),
            long_words: HashMap::with_hasher(FixedState::default()),
            words: 0,
            edges: HashMap::with_hasher(FixedState::default()),
            nodes: Vec::new(),
            longest_word: 0,
        };
        // First every word gets its id, so the first nodes can be the word ids.
        let names: Vec<(Vec<u32>, u32)> = names
            .into_iter()
            .map(|(name, value)| {
                let ids = name
                    .split(' ')
                    .filter(|w| !w.is_empty())
                    .map(|word| matcher.intern(word.as_bytes()))
                    .collect();
                (ids, value)
            })
            .collect();
        matcher.nodes = vec![EMPTY; matcher.words as usize];
        for (ids, value) in names {
            let Some((&head, rest)) = ids.split_first() else {
                continue;
            };
            let mut node = head;
            for &id in rest {
                let next = matcher.nodes.len() as u32;
                let child = *matcher.edges.entry((node, id)).or_insert(next);
                if child == next {
                    matcher.nodes.push(EMPTY);
                }
                if let Some(parent) = matcher.nodes.get_mut(node as usize) {
                    parent.0 |= GOES_ON;
                }
                node = child;
            }
            if let Some(end) = matcher.nodes.get_mut(node as usize) {
                end.0 = (end.0 & GOES_ON) | value.min(MAX_VALUE);
            }
        }
        // A word that starts no name is marked in its token, so the scan skips it for free.
        let nodes = &matcher.nodes;
        let mark = |id: &mut u32| {
            if nodes
                .get(*id as usize)
                .is_none_or(|node| node.value().is_none() && !node.goes_on())
            {
                *id |= INERT;
            }
        };
        matcher.short_words.values_mut().for_each(mark);
        matcher.middle_words.values_mut().for_each(mark);
        matcher.long_words.values_mut().for_each(mark);
        matcher
    }

    /// The id of a word of a name, given it if it has none yet (before any is marked
    /// [`INERT`]).
    fn intern(&mut self, word: &[u8]) -> u32 {
        let known = self.word(word);
        if known != NONE {
            return known;
        }
        let id = self.words;
        self.words += 1;
        if word.len() <= 8 {
            self.short_words.insert(pack(word) as u64, id);
        } else if word.len() <= PACKED_BYTES {
            self.middle_words.insert(pack(word), id);
        } else {
            self.long_words.insert(word.into(), id);
        }
        self.longest_word = self.longest_word.max(word.len());
        id
    }

    /// The longest word any name holds, in bytes.
    #[cfg(test)]
    pub(super) fn longest_word(&self) -> usize {
        self.longest_word
    }

    /// The id of one folded word, or `NONE` when no name holds it.
    pub(super) fn word(&self, folded: &[u8]) -> u32 {
        if folded.len() <= PACKED_BYTES {
            self.packed_word(pack(folded))
        } else if folded.len() <= self.longest_word {
            self.long_words.get(folded).copied().unwrap_or(NONE)
        } else {
            NONE
        }
    }

    /// The id of a folded word of at most [`PACKED_BYTES`] bytes, given [`pack`]ed.
    #[inline(always)]
    pub(super) fn packed_word(&self, packed: u128) -> u32 {
        let found = match u64::try_from(packed) {
            Ok(short) => self.short_words.get(&short),
            Err(_) => self.middle_words.get(&packed),
        };
        found.copied().unwrap_or(NONE)
    }

    /// The longest name that starts at `words[0]` (tokens from [`NameMatcher::word`]): how
    /// many words it spans and its value.
    #[inline(always)]
    pub(super) fn longest_at(&self, words: &[u32]) -> Option<(usize, u32)> {
        let (&head, rest) = words.split_first()?;
        if head & INERT != 0 {
            return None;
        }
        let mut at = head;
        let mut node = *self.nodes.get(at as usize)?;
        let mut longest = node.value().map(|value| (1, value));
        for (read, &word) in rest.iter().enumerate() {
            if !node.goes_on() || word == NONE {
                break;
            }
            let Some(&next) = self.edges.get(&(at, word & !INERT)) else {
                break;
            };
            at = next;
            node = *self.nodes.get(at as usize)?;
            if let Some(value) = node.value() {
                longest = Some((read + 2, value));
            }
        }
        longest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(matcher: &NameMatcher, text: &str) -> Vec<u32> {
        text.split(' ')
            .map(|w| matcher.word(w.as_bytes()))
            .collect()
    }

    #[test]
    fn the_longest_name_at_a_word_is_found_and_a_prefix_alone_still_counts() {
        let matcher = NameMatcher::new([
            ("lumbridge", 0),
            ("lumbridge swamp", 1),
            ("lumbridge swamp caves", 2),
        ]);
        let words = ids(&matcher, "lumbridge swamp mine");
        assert_eq!(matcher.longest_at(&words), Some((2, 1)));
        let words = ids(&matcher, "lumbridge swamp caves");
        assert_eq!(matcher.longest_at(&words), Some((3, 2)));
        let words = ids(&matcher, "lumbridge castle");
        assert_eq!(matcher.longest_at(&words), Some((1, 0)));
    }

    #[test]
    fn a_word_of_no_name_stops_a_name_and_starts_none() {
        let matcher = NameMatcher::new([("cooks assistant", 0), ("port sarim", 1)]);
        assert_eq!(matcher.word(b"goblin"), NONE);
        assert_ne!(matcher.word(b"assistant"), NONE);
        assert_eq!(matcher.longest_at(&ids(&matcher, "assistant")), None);
        // "port" alone is no name, and a word no name holds breaks the path.
        assert_eq!(
            matcher.longest_at(&ids(&matcher, "port goblin sarim")),
            None
        );
        assert_eq!(
            matcher.longest_at(&ids(&matcher, "port sarim")),
            Some((2, 1))
        );
        assert_eq!(matcher.longest_at(&[]), None);
    }

    #[test]
    fn words_longer_than_a_packed_word_are_found_and_longer_than_every_name_word_are_not() {
        let matcher = NameMatcher::new([("abc de", 0), ("abcdefghijklmnopqrstu vwx", 1)]);
        assert_eq!(matcher.longest_word(), 21);
        assert_eq!(matcher.word(b"abcd"), NONE);
        assert_eq!(matcher.word(b"abcdefghijklmnopqrstuv"), NONE);
        assert_ne!(matcher.word(b"de"), NONE);
        let words = ids(&matcher, "abcdefghijklmnopqrstu vwx");
        assert_eq!(matcher.longest_at(&words), Some((2, 1)));
    }
}
