//! Content digests: what identifies a version.
//!
//! Digests are `sha256:<hex>` so anyone can check one with `sha256sum`. A script's version is
//! the digest of its code *without* its `@skill` header, so writing or editing the header is
//! never a new version.

use sha2::{Digest as _, Sha256};

use crate::header;

/// The `sha256:<hex>` digest of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    sha256_text(&Sha256::digest(bytes))
}

/// A SHA-256 hash already computed (a streaming hasher's output) as `sha256:<hex>`.
pub fn sha256_text(hash: &[u8]) -> String {
    // sha2 0.11's output no longer implements `LowerHex`, so hex-encode by hand.
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash {
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0x0f)]);
    }
    out
}

/// The stored form of a secret MindRune issues or is given (an owner's key, a runner's,
/// operator's or session token): its `sha256:` digest. The one rule for every secret the
/// library keeps, so a stored value is never the secret and any backend can look one up.
pub fn secret_digest(secret: &str) -> String {
    sha256(secret.as_bytes())
}

/// Whether a stored value is already a [`secret_digest`] (`sha256:` and 64 lowercase hex), so
/// a library written before keys were digested can be told apart and digested once.
pub fn is_secret_digest(value: &str) -> bool {
    value.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

const HEX: [char; 16] = [
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
];

/// The code a script runs: its text with a leading `@skill` header (and the blank lines right
/// after it) removed, and line endings made `\n`, so an editor that saves CRLF or a header edit
/// does not make a new version.
pub fn code_without_header(source: &str) -> String {
    let body = match header::locate(source) {
        Some(span) => &source[span.end..],
        None => source,
    };
    let body = body.trim_start_matches(['\n', '\r']);
    // Every run of `\r` right before a `\n` goes, in one pass: replacing `\r\n` once would
    // leave `\r\n` behind from `\r\r\n`, and the stored code would then not be stable under
    // a second normalisation (a copied file would stop matching its own version).
    let mut out = String::with_capacity(body.len());
    let mut pending_cr = 0usize;
    for c in body.chars() {
        match c {
            '\r' => pending_cr += 1,
            '\n' => {
                pending_cr = 0;
                out.push('\n');
            }
            other => {
                out.extend(std::iter::repeat_n('\r', pending_cr));
                pending_cr = 0;
                out.push(other);
            }
        }
    }
    out.extend(std::iter::repeat_n('\r', pending_cr));
    out
}

/// The digest of a script's version: its code without the header.
pub fn script_digest(source: &str) -> String {
    sha256(code_without_header(source).as_bytes())
}

/// The digest of an inline `execute_code` snippet, with all runs of white space folded to one
/// space and the ends trimmed, so whitespace-identical snippets share one history.
pub fn snippet_digest(code: &str) -> String {
    let mut folded = String::with_capacity(code.len());
    for word in code.split_whitespace() {
        if !folded.is_empty() {
            folded.push(' ');
        }
        folded.push_str(word);
    }
    sha256(folded.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_s_digest_is_recognised_and_the_secret_is_not() {
        let key = "mrk_0123456789abcdef0123456789abcdef0123456789abcdef";
        assert!(is_secret_digest(&secret_digest(key)));
        assert!(!is_secret_digest(key));
        assert!(!is_secret_digest("sha256:"));
        assert!(!is_secret_digest(&secret_digest(key).to_uppercase()));
    }

    #[test]
    fn sha256_matches_sha256sum() {
        assert_eq!(
            sha256(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn adding_or_editing_the_header_keeps_the_digest() {
        let bare =
            "import { runScript } from '../../sdk/runner';\nawait runScript(async () => {});\n";
        let headed = format!("/** @skill chop-oaks\n * Goal: chop oaks\n */\n{bare}");
        let edited = format!(
            "/** @skill chop-oaks\n * Goal: chop oaks west of Draynor\n * Tags: skill:woodcutting\n */\n\n{bare}"
        );
        assert_eq!(script_digest(bare), script_digest(&headed));
        assert_eq!(script_digest(bare), script_digest(&edited));
    }

    #[test]
    fn changing_the_code_changes_the_digest() {
        assert_ne!(
            script_digest("await a(1);\n"),
            script_digest("await a(2);\n")
        );
    }

    #[test]
    fn crlf_line_endings_keep_the_digest() {
        assert_eq!(
            script_digest("a();\r\nb();\r\n"),
            script_digest("a();\nb();\n")
        );
    }

    #[test]
    fn an_ordinary_doc_comment_is_part_of_the_code() {
        assert_ne!(
            script_digest("/** Chops trees. */\na();\n"),
            script_digest("a();\n")
        );
    }

    #[test]
    fn whitespace_identical_snippets_share_a_digest() {
        assert_eq!(
            snippet_digest("await bot.chopTree();\n  await bot.bank();"),
            snippet_digest("await bot.chopTree(); await   bot.bank();\n")
        );
        assert_ne!(snippet_digest("a(1)"), snippet_digest("a(2)"));
    }
}
