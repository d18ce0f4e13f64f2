//! Finding the tags in a text: a scan that folds it a word at a time, follows names through
//! the trie, and chooses between overlapping names.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::ops::Range;

use super::aliases::NO_TAG;
use super::folding::{ASCII_FOLD, BREAK, BeyondAscii, DROP, beyond_ascii};
use super::name_matcher::{self, NameMatcher};
use super::{MAX_NAME_CHARS, Vocabulary, ascii_word};
use crate::avatars::topics;

/// Per-thread buffers for [`Vocabulary::map`], so mapping a line allocates only its answer.
#[derive(Default)]
pub(super) struct Scratch {
    /// The entries whose tags a text gave.
    pub(super) seen: Seen,
    /// The bytes of a long word ([`WORD_BYTES`] once first used).
    pub(super) word: Vec<u8>,
    /// The words read and not yet chosen from, as tokens ([`name_matcher::NONE`] for a word
    /// no name holds; a run of such words is kept as one, since none of them can be part of
    /// a name).
    pub(super) words: Vec<u32>,
}

/// The most entries a thread's buffers keep between calls: one huge text must not hold its
/// memory for the rest of the thread's life.
pub(super) const SCRATCH_KEPT: usize = 4_096;

/// After this many words are read, the names among them are chosen at the next word no name
/// holds (no name goes past it), so a huge text is read in constant memory and at the same
/// rate as a line.
pub(super) const CHOOSE_AFTER_WORDS: usize = 2_048;

impl Scratch {
    pub(super) fn clear(&mut self) {
        self.words.clear();
        self.words.shrink_to(SCRATCH_KEPT);
    }
}

thread_local! {
    pub(super) static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The tags of one text in order of first appearance, each once. A tag of the vocabulary is
/// told apart by its entry's bit in `seen` (the thread's, cleared again after the text), an
/// exact tag the vocabulary does not know by comparing strings, with a set past
/// [`FoundTags::LISTED`] of them: a text with thousands of tags stays linear.
pub(super) struct FoundTags<'v, 's> {
    pub(super) vocabulary: &'v Vocabulary,
    pub(super) tags: Vec<Cow<'v, str>>,
    pub(super) seen: &'s mut Seen,
    pub(super) unknown: Vec<String>,
    pub(super) unknown_set: Option<HashSet<String>>,
}

/// One bit per entry of a vocabulary, and the entries whose bits are set.
#[derive(Default)]
pub(super) struct Seen {
    pub(super) bits: Vec<u64>,
    pub(super) set: Vec<u32>,
}

impl Seen {
    /// Sets an entry's bit; whether it was clear.
    pub(super) fn insert(&mut self, entry: u32) -> bool {
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
    pub(super) fn clear(&mut self) {
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
    pub(super) const LISTED: usize = 32;

    pub(super) fn new(vocabulary: &'v Vocabulary, seen: &'s mut Seen) -> FoundTags<'v, 's> {
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
    pub(super) fn push_entry(&mut self, entry: u32) {
        if let Some(tag) = self.vocabulary.tags.get(entry as usize)
            && self.seen.insert(entry)
        {
            self.tags.push(Cow::Borrowed(tag));
        }
    }

    /// A tag written exactly.
    pub(super) fn push_exact(&mut self, tag: String) {
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
pub(super) fn exact_spans(text: &str) -> Vec<(Range<usize>, Option<String>)> {
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
pub(super) const WORD_BYTES: usize = 4 * MAX_NAME_CHARS;

/// Splits text into words under the spelling rules (see [`fold_into`](super::folding::fold_into)) and looks each one up,
/// without a folded copy of the text: one pass, a byte at a time. A short word is packed
/// into two registers as it is folded (see [`name_matcher::pack`]); a long one is also
/// copied into a buffer, which is read only when the word ends long.
pub(super) struct Tokenizer<'a, 'v, 's> {
    pub(super) matcher: &'a NameMatcher,
    /// Where the words read go once a run of them is complete.
    pub(super) chooser: &'a mut Chooser<'v, 's>,
    /// Bytes 0..8 and 8..16 of the current word, packed.
    pub(super) low: u64,
    pub(super) high: u64,
    /// The current word's bytes, for a word longer than a packed one (the thread's buffer, so
    /// a call does not clear [`WORD_BYTES`] bytes first).
    pub(super) word: &'a mut [u8],
    /// Bytes of the current word (may exceed the buffer: then the word is no name's).
    pub(super) len: usize,
    pub(super) words: &'a mut Vec<u32>,
}

impl Tokenizer<'_, '_, '_> {
    #[inline(always)]
    pub(super) fn push(&mut self, byte: u8) {
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
    pub(super) fn word_break(&mut self) {
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
    pub(super) fn word_read(&mut self, id: u32) {
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
    pub(super) fn feed_text(&mut self, text: &str, range: Range<usize>) {
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
pub(super) fn tokenize(
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
pub(super) struct Chooser<'v, 's> {
    pub(super) vocabulary: &'v Vocabulary,
    pub(super) found: FoundTags<'v, 's>,
    /// Exact tags, and how many words of the text came before each.
    pub(super) exact: Vec<(usize, String)>,
    /// How many of `exact` are in `found`.
    pub(super) exact_taken: usize,
    /// How many words of the text were chosen from so far.
    pub(super) chosen: usize,
}

impl<'v, 's> Chooser<'v, 's> {
    pub(super) fn new(vocabulary: &'v Vocabulary, seen: &'s mut Seen) -> Chooser<'v, 's> {
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
    pub(super) fn choose(&mut self, words: &[u32]) {
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
    pub(super) fn take_exact(&mut self, before: usize) {
        while let Some((at, tag)) = self.exact.get_mut(self.exact_taken)
            && *at <= before
        {
            let tag = std::mem::take(tag);
            self.exact_taken += 1;
            self.found.push_exact(tag);
        }
    }

    pub(super) fn finish(mut self) -> Vec<Cow<'v, str>> {
        self.take_exact(usize::MAX);
        self.found.seen.clear();
        self.found.tags
    }
}
