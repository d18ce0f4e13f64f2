//! High-entropy runs: a long random-looking token is a secret even when no rule names its
//! shape, unless it reads as a path, a URL word, a public value or base64 of prose.

use super::{MIN_ENTROPY_BITS, MIN_ENTROPY_RUN, SecretKind, Span};

pub(super) const F_TOKEN: u8 = 1;
pub(super) const F_DIGIT: u8 = 2;
pub(super) const F_LETTER: u8 = 4;
pub(super) const F_HEXISH: u8 = 8;

/// Character classes for the run scanner: base64 and base64url characters (without `=`, which
/// is only allowed as trailing padding), and whether each is a digit, a letter, or could belong
/// to a hex digest or UUID.
pub(super) static CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        let mut f = 0;
        if c.is_ascii_digit() {
            f = F_TOKEN | F_DIGIT | F_HEXISH;
        } else if c.is_ascii_alphabetic() {
            f = F_TOKEN | F_LETTER;
            if matches!(c, b'a'..=b'f' | b'A'..=b'F') {
                f |= F_HEXISH;
            }
        } else if c == b'-' {
            f = F_TOKEN | F_HEXISH;
        } else if matches!(c, b'_' | b'+' | b'/') {
            f = F_TOKEN;
        }
        t[i] = f;
        i += 1;
    }
    t
};

/// Calls `f(start, end)` for each run of token characters that is long enough, mixes letters and
/// digits, and is not pure hex. These cheap tests are all the prescan does; the rest happens
/// only on the lines this selects.
///
/// Token characters make up most of ordinary text, so looking at every byte would make this
/// loop the slowest part of scrubbing. Instead it probes one byte in [`MIN_ENTROPY_RUN`]: a run
/// long enough to matter must cover the probe, so a probe on a non-token byte skips a whole
/// window, and a probe on a token byte only walks its own run.
pub(super) fn for_each_candidate_run(b: &[u8], mut f: impl FnMut(usize, usize)) {
    let is_token = |c: u8| CLASSES[c as usize] & F_TOKEN != 0;
    // Invariant: `i == 0` or `b[i - 1]` is not a token byte, so no run starts before `i`
    // unless it was already handled.
    let mut i = 0;
    while i + MIN_ENTROPY_RUN <= b.len() {
        let probe = i + MIN_ENTROPY_RUN - 1;
        if !is_token(b[probe]) {
            i = probe + 1;
            continue;
        }
        let mut start = probe;
        while start > i && is_token(b[start - 1]) {
            start -= 1;
        }
        let mut end = probe + 1;
        while end < b.len() && is_token(b[end]) {
            end += 1;
        }
        // The letters of a `\n`, `\r`, `\t`, `\xff` or `\u00e9` escape belong to the escape, not
        // to the token after it (keys inside JSON and byte strings).
        if start > 0 && b[start - 1] == b'\\' {
            let escape = match b[start] {
                b'n' | b'r' | b't' => 1,
                b'x' => 3,
                b'u' => 5,
                _ => 0,
            };
            start = (start + escape).min(end);
        }
        if candidate_bytes(&b[start..end]) {
            f(start, end);
        }
        i = end + 1;
    }
}

/// The prescan's cheap tests on one run of token bytes: long enough, letters and digits, not
/// pure hex.
pub(super) fn candidate_bytes(run: &[u8]) -> bool {
    if run.len() < MIN_ENTROPY_RUN {
        return false;
    }
    let mut any = 0u8;
    let mut all = F_HEXISH;
    for &c in run {
        let f = CLASSES[c as usize];
        any |= f;
        all &= f;
    }
    any & F_DIGIT != 0 && any & F_LETTER != 0 && all & F_HEXISH == 0
}

pub(super) fn entropy_spans(line: &str, spans: &mut Vec<Span>) {
    let b = line.as_bytes();
    let mut url_words: Option<Vec<(usize, usize)>> = None;
    // Runs arrive in order and URL words are sorted, so one cursor walks both.
    let mut next_url = 0;
    for_each_candidate_run(b, |s, e| {
        let urls = url_words.get_or_insert_with(|| url_word_ranges(line));
        while next_url < urls.len() && urls[next_url].1 < e {
            next_url += 1;
        }
        if urls
            .get(next_url)
            .is_some_and(|&(us, ue)| us <= s && e <= ue)
        {
            return;
        }
        let pad = |end: usize| {
            let mut pe = end;
            while pe < b.len() && pe - end < 2 && b[pe] == b'=' {
                pe += 1;
            }
            pe
        };
        let run = &line[s..e];
        if is_path_like(run) {
            // `github.com/owner/repo/commit/<sha>` or `bots/woody1/<id>`: a path whose pieces
            // are judged one by one, so words and digests around a piece do not make it look
            // random (or hide a random piece).
            let mut ps = s;
            for piece in run.split('/') {
                let pe = ps + piece.len();
                if candidate_bytes(piece.as_bytes()) && is_random_token(line, ps, pe) {
                    let end = if pe == e { pad(pe) } else { pe };
                    spans.push(Span::new(ps, end, SecretKind::HighEntropy, true));
                }
                ps = pe + 1;
            }
        } else if is_random_token(line, s, e) {
            spans.push(Span::new(s, pad(e), SecretKind::HighEntropy, true));
        }
    });
}

/// A run with two or more `/`-separated pieces that are words of three or more letters is a
/// path (`github.com/owner/repo/commit/…`, `organizations/256/gcpUserAccessBindings/…`), not
/// base64, where `/` is one character in 64 and letter-only pieces between two of them are rare.
pub(super) fn is_path_like(run: &str) -> bool {
    run.split('/')
        .filter(|p| p.len() >= 3 && p.bytes().all(|c| c.is_ascii_alphabetic()))
        .nth(1)
        .is_some()
}

/// Byte ranges of the whitespace/quote-delimited words that contain `://`.
pub(super) fn url_word_ranges(line: &str) -> Vec<(usize, usize)> {
    let b = line.as_bytes();
    let is_stop = |c: u8| {
        c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'`' | b'<' | b'>' | b'(' | b')')
    };
    let mut out: Vec<(usize, usize)> = Vec::new();
    let mut at = 0;
    while let Some(i) = line[at..].find("://") {
        let p = at + i;
        if out.last().is_some_and(|&(_, e)| p < e) {
            at = p + 3;
            continue;
        }
        let mut s = p;
        while s > 0 && !is_stop(b[s - 1]) {
            s -= 1;
        }
        let mut e = p + 3;
        while e < b.len() && !is_stop(b[e]) {
            e += 1;
        }
        out.push((s, e));
        at = e.max(p + 3);
    }
    out
}

pub(super) fn is_random_token(line: &str, s: usize, e: usize) -> bool {
    let run = &line[s..e];
    // Only the few bytes before the run matter; looking at more would make a long line with
    // many runs quadratic.
    let before = &line.as_bytes()[s.saturating_sub(8)..s];
    const DIGEST_PREFIXES: &[&str] = &[
        "sha1:", "sha224:", "sha256:", "sha384:", "sha512:", "md5:", "sha1=", "sha256=", "h1:",
        "base64,",
    ];
    let labelled = |p: &str| {
        before.len() >= p.len()
            && before[before.len() - p.len()..].eq_ignore_ascii_case(p.as_bytes())
    };
    if DIGEST_PREFIXES.iter().any(|p| labelled(p)) {
        return false;
    }
    if is_public_value(line, s, run) {
        return false;
    }
    let lower = run.to_ascii_lowercase();
    if ["sha1-", "sha256-", "sha384-", "sha512-"]
        .iter()
        .any(|p| lower.starts_with(p))
        || lower.contains("example")
    {
        return false;
    }
    // One-case identifiers with several separators: `TR31_V1_IBM3624_PIN_KEY`,
    // `tbwt-cooked-karambwan-4`. Random tokens mix cases.
    let separators = run.bytes().filter(|c| matches!(c, b'_' | b'-')).count();
    let has_upper = run.bytes().any(|c| c.is_ascii_uppercase());
    let has_lower = run.bytes().any(|c| c.is_ascii_lowercase());
    if separators >= 2 && has_upper != has_lower {
        return false;
    }
    // A label and a digest (`crash-7dc27920…`, `minimized-from-9486fb7c…`): every segment is a
    // plain word or pure hex.
    let labelled_digest = run
        .split(['_', '-', '/', '+'])
        .filter(|x| !x.is_empty())
        .all(|x| {
            x.bytes().all(|c| c.is_ascii_alphabetic()) || x.bytes().all(|c| c.is_ascii_hexdigit())
        });
    if labelled_digest {
        return false;
    }
    // Paths and structured identifiers: many short separated segments.
    let segments: Vec<&str> = run
        .split(['_', '-', '/', '+'])
        .filter(|x| !x.is_empty())
        .collect();
    if segments.len() >= 4 && segments.iter().all(|x| x.len() < 12) {
        return false;
    }
    if word_coverage(run) * 10 > run.len() * 6 {
        return false;
    }
    shannon_entropy(run.as_bytes()) >= MIN_ENTROPY_BITS && !is_base64_of_prose(run)
}

/// Values that are public by design and only look random: publishable keys (Stripe's
/// `pk_live_`/`pk_test_`, Mapbox's `pk.`), an SSH public key after its type (`ssh-ed25519 AAAA…`),
/// an age recipient (`age1…`), a reCAPTCHA site key (`data-sitekey="6L…"`). Their secret
/// halves (`sk_live_`, `sk.`, `AGE-SECRET-KEY-1`, the PEM private key) have rules of their own.
pub(super) fn is_public_value(line: &str, s: usize, run: &str) -> bool {
    if run.starts_with("pk_live_")
        || run.starts_with("pk_test_")
        || run.starts_with("pk.eyJ")
        || (run.starts_with("eyJ") && line[..s].ends_with("pk."))
    {
        return true;
    }
    if run.starts_with("age1")
        && run.len() >= 58
        && run[4..]
            .bytes()
            .all(|c| b"qpzry9x8gf2tvdw0s3jn54khce6mua7l".contains(&c))
    {
        return true;
    }
    let before = &line[..s];
    if run.starts_with("AAAA") {
        let key_type = before.trim_end().rsplit(' ').next().unwrap_or("");
        if before.ends_with(' ')
            && (key_type.starts_with("ssh-")
                || key_type.starts_with("ecdsa-sha2-")
                || key_type.starts_with("sk-ssh-")
                || key_type.starts_with("sk-ecdsa-"))
        {
            return true;
        }
    }
    let near = &before.as_bytes()[before.len().saturating_sub(16)..];
    near.windows(7).any(|w| w.eq_ignore_ascii_case(b"sitekey"))
}

/// Whether a run is base64 (or base64url) of ordinary prose: every decoded byte printable ASCII
/// or a line break, at least one space, and mostly letters and spaces. Random key material
/// decodes to arbitrary bytes (the chance that 24 random bytes are all printable is below
/// 10^-10), so this only lets encoded text through (`"VGhlIHF1aWNr…"`). Credentials encoded
/// without a space (`user:password`) still count; `Authorization: Basic` is caught by its own
/// rule anyway.
pub(super) fn is_base64_of_prose(run: &str) -> bool {
    let sextet = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        })
    };
    let (mut bytes, mut spaces, mut wordy) = (0usize, 0usize, 0usize);
    for chunk in run.as_bytes().chunks_exact(4) {
        let mut n = 0u32;
        for &c in chunk {
            match sextet(c) {
                Some(v) => n = (n << 6) | v,
                None => return false,
            }
        }
        for byte in [(n >> 16) as u8, (n >> 8) as u8, n as u8] {
            match byte {
                b' ' => spaces += 1,
                b'\n' | b'\r' | b'\t' => {}
                0x21..=0x7e => {}
                _ => return false,
            }
            if byte == b' ' || byte.is_ascii_alphabetic() {
                wordy += 1;
            }
            bytes += 1;
        }
    }
    bytes >= 18 && spaces > 0 && wordy * 10 >= bytes * 7
}

/// How many characters belong to words: a lower-case run of three or more letters with an
/// optional capital before it (`inventory`, `Renderer`, `List`), or four or more capitals
/// (`VERIFICATION`) with a vowel among them. Identifiers and paths are mostly words (65–98% in samples), while in
/// random base62 text more than 60% is rare (about 2% of 32-character tokens), which is where
/// the threshold sits.
pub(super) fn word_coverage(run: &str) -> usize {
    let b = run.as_bytes();
    let mut total = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_uppercase() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_uppercase() {
                j += 1;
            }
            let caps = j - i;
            let mut k = j;
            while k < b.len() && b[k].is_ascii_lowercase() {
                k += 1;
            }
            let lower = k - j;
            if lower >= 3 {
                // `HTTPServer`: the acronym (if long enough) and the capitalised word.
                total += lower + 1 + if caps > 4 { caps - 1 } else { 0 };
            } else if caps >= 4 && b[i..j].iter().any(|c| b"AEIOUY".contains(c)) {
                // Capitals without a vowel (`LJZPKTQ`) are random base64, not a word.
                total += caps;
            }
            i = k.max(i + 1);
        } else if c.is_ascii_lowercase() {
            let mut k = i;
            while k < b.len() && b[k].is_ascii_lowercase() {
                k += 1;
            }
            if k - i >= 3 {
                total += k - i;
            }
            i = k;
        } else {
            i += 1;
        }
    }
    total
}

pub(super) fn shannon_entropy(b: &[u8]) -> f64 {
    if b.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &c in b {
        counts[c as usize] += 1;
    }
    let n = b.len() as f64;
    counts
        .iter()
        .filter(|&&k| k > 0)
        .map(|&k| {
            let p = f64::from(k) / n;
            -p * p.log2()
        })
        .sum()
}
