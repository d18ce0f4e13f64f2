//! Folding text into name keys: case, accents, apostrophes and punctuation folded the same
//! way for a name and for the text it is found in.

use std::ops::Range;

/// How each ASCII byte is read: a letter or digit (lower-cased), dropped (an apostrophe) or a
/// word break.
pub(super) const BREAK: u8 = 0;
pub(super) const DROP: u8 = 1;
pub(super) static ASCII_FOLD: [u8; 128] = {
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
pub(super) fn is_apostrophe(c: char) -> bool {
    matches!(c, '\u{2018}' | '\u{2019}' | '\u{02bc}' | '\u{00b4}')
}

/// How the spelling rules read a character beyond ASCII.
pub(super) enum BeyondAscii {
    /// An apostrophe: dropped.
    Dropped,
    /// A letter or digit: kept as it is.
    Letter,
    /// Anything else: a word break.
    Break,
}

/// The character at byte `at` of `text` (a character boundary), as the spelling rules read
/// it, and its width in bytes; `None` at the end.
pub(super) fn beyond_ascii(text: &str, at: usize) -> Option<(BeyondAscii, usize)> {
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
pub(super) fn fold_into(text: &str, range: Range<usize>, out: &mut Vec<u8>) {
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

pub(super) fn push_break(out: &mut Vec<u8>) {
    if out.last() != Some(&b' ') {
        out.push(b' ');
    }
}

/// A name as the spelling rules read it: `Cook's  Assistant!` → `cooks assistant`.
pub(crate) fn name_key(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len());
    fold_into(name, 0..name.len(), &mut out);
    let start = usize::from(out.first() == Some(&b' '));
    let end = out.len() - usize::from(out.len() > start && out.last() == Some(&b' '));
    // Only whole characters and ASCII bytes were copied, so the bytes are UTF-8.
    String::from_utf8(out[start..end].to_vec()).unwrap_or_default()
}
