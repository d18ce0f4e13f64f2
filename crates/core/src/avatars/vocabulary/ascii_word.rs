//! Reading a short ASCII word eight bytes at a time.
//!
//! Most words of free text are a few ASCII letters or digits followed by a space or a
//! punctuation mark. For those the tokenizer need not look at one byte at a time: it loads
//! sixteen bytes as two `u64`s, finds which bytes are letters or digits with a handful of
//! integer operations on all eight at once, lower-cases them the same way and has the word
//! packed (see [`super::name_matcher::pack`]) without a branch per byte. Anything else (an
//! apostrophe, a letter beyond ASCII, a word longer than sixteen bytes) is left to the
//! byte-at-a-time reader. There is no crate for this: it is a few lines of the well-known
//! "SIMD within a register" range test, and `unsafe` SIMD is not allowed here.

use super::folding::{ASCII_FOLD, BREAK};

/// The most bytes a word read here may have.
const WIDTH: usize = 16;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `x` (all below 0x80) that lies in `lo..=hi`. The sums stay
/// within their byte, since every byte of `x` and every addend is below 0x80.
#[inline(always)]
fn between(x: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = x.wrapping_add(ONES * u64::from(0x80 - lo));
    let above_hi = x.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least_lo & !above_hi & HIGH
}

/// Eight bytes as the word reader sees them: which are ASCII letters or digits (high bit of
/// each such byte), and the bytes lower-cased.
#[inline(always)]
fn classify(x: u64) -> (u64, u64) {
    let ascii = !x & HIGH;
    let low7 = x & !HIGH;
    let upper = between(low7, b'A', b'Z') & ascii;
    let word = (between(low7, b'0', b'9') | between(low7, b'a', b'z') | upper) & ascii;
    (word, x | (upper >> 2))
}

/// The bytes below `n` (at most 8) of a `u64`.
#[inline(always)]
fn first_bytes(n: usize) -> u64 {
    if n >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * n)) - 1
    }
}

/// How many of the eight bytes, from the lowest, are letters or digits.
#[inline(always)]
fn leading_word_bytes(word: u64) -> usize {
    ((!word & HIGH).trailing_zeros() / 8) as usize
}

/// The word starting at `bytes[at]`, when it is 1 to 16 ASCII letters and digits ended by an
/// ASCII word break (or by `end`): its length and its lower-cased bytes packed. `None` when
/// the byte-at-a-time reader must read it (or when `bytes[at]` starts no word).
#[inline(always)]
pub(super) fn short_ascii_word(bytes: &[u8], at: usize, end: usize) -> Option<(usize, u128)> {
    let valid = end.checked_sub(at)?.min(WIDTH);
    let (x0, x1) = match bytes.get(at..at + WIDTH) {
        Some(window) => {
            let (a, b) = window.split_at(8);
            (
                u64::from_le_bytes(a.try_into().ok()?),
                u64::from_le_bytes(b.try_into().ok()?),
            )
        }
        // Near the end of the text: the bytes that are there, then zeros (a word break).
        None => {
            let mut window = [0u8; WIDTH];
            for (slot, &b) in window.iter_mut().zip(bytes.get(at..end)?) {
                *slot = b;
            }
            let (a, b) = window.split_at(8);
            (
                u64::from_le_bytes(a.try_into().ok()?),
                u64::from_le_bytes(b.try_into().ok()?),
            )
        }
    };
    // Bytes past `end` are not this range's: read them as a break.
    let x0 = x0 & first_bytes(valid);
    let x1 = x1 & first_bytes(valid.saturating_sub(8));
    let (word0, lower0) = classify(x0);
    let mut len = leading_word_bytes(word0);
    let mut high = 0;
    if len == 8 {
        let (word1, lower1) = classify(x1);
        len += leading_word_bytes(word1);
        if len == WIDTH {
            return None;
        }
        high = lower1 & first_bytes(len - 8);
    }
    if len == 0 {
        return None;
    }
    // The byte after the word must be a break: an apostrophe continues the word, and a byte
    // beyond ASCII may be a letter. It is in the window already (a zero past `end`).
    let after = if len < 8 {
        x0 >> (8 * len)
    } else {
        x1 >> (8 * (len - 8))
    } as u8;
    if after >= 0x80 || ASCII_FOLD[usize::from(after)] != BREAK {
        return None;
    }
    let low = lower0 & first_bytes(len);
    Some((len, u128::from(high) << 64 | u128::from(low)))
}

#[cfg(test)]
mod tests {
    use super::super::name_matcher::pack;
    use super::*;
    use proptest::prelude::*;

    fn read(text: &str) -> Option<(usize, u128)> {
        short_ascii_word(text.as_bytes(), 0, text.len())
    }

    #[test]
    fn a_short_word_is_read_lower_cased_up_to_its_break() {
        assert_eq!(read("Lumbridge swamp"), Some((9, pack(b"lumbridge"))));
        assert_eq!(read("AL-Kharid"), Some((2, pack(b"al"))));
        assert_eq!(read("x"), Some((1, pack(b"x"))));
        assert_eq!(read("Dragon2h, then"), Some((8, pack(b"dragon2h"))));
        assert_eq!(read("abcdefghijklmnop"), None, "16 bytes is one too many");
        assert_eq!(
            read("abcdefghijklmno!"),
            Some((15, pack(b"abcdefghijklmno")))
        );
    }

    #[test]
    fn what_the_byte_reader_must_read_is_left_to_it() {
        assert_eq!(read("cook's"), None);
        assert_eq!(read("caf\u{e9} noir"), None);
        assert_eq!(read(" space first"), None);
        assert_eq!(read(""), None);
    }

    #[test]
    fn the_range_end_is_a_break_even_inside_the_text() {
        let text = "lumbridgeswamp";
        assert_eq!(
            short_ascii_word(text.as_bytes(), 0, 9),
            Some((9, pack(b"lumbridge")))
        );
        assert_eq!(
            short_ascii_word(text.as_bytes(), 9, 14),
            Some((5, pack(b"swamp")))
        );
    }

    proptest! {
        /// Whatever it reads, it reads as the spelling rules would, byte by byte.
        #[test]
        fn a_word_it_reads_is_the_folded_word(
            text in "[a-zA-Z0-9 '`,.\u{e9}\u{2019}:-]{0,40}",
            cut in 0usize..40,
        ) {
            let end = cut.min(text.len());
            prop_assume!(text.is_char_boundary(end));
            if let Some((len, packed)) = short_ascii_word(text.as_bytes(), 0, end) {
                let folded = super::super::name_key(&text[..end]);
                let first = folded.split(' ').next().unwrap_or("");
                prop_assert!(!text.starts_with(|c: char| !c.is_ascii_alphanumeric()));
                prop_assert_eq!(first.len(), len);
                prop_assert_eq!(pack(first.as_bytes()), packed);
            }
        }
    }
}
