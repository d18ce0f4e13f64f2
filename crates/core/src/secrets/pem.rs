//! PEM private keys: a key block is scrubbed whole, from its BEGIN line to its END line,
//! and a public key's block is left alone.

use super::{REDACTED, SecretKind, Span};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct PemState {
    /// Inside a private key body that started on an earlier line.
    pub(super) active: bool,
    /// This block already produced its finding.
    pub(super) reported: bool,
    /// Inside a certificate or public key block (`-----BEGIN CERTIFICATE-----`): its body lines
    /// are public and only look random, so the shape and entropy rules skip them.
    pub(super) public: bool,
}

pub(super) enum BodyLine {
    /// Key material to redact, at this byte range.
    Secret(usize, usize),
    /// Blank or already `[redacted]`: still inside the body, nothing to do.
    Clean,
    /// Not key material: the block is over (or never was a key).
    NotBody,
}

/// Finds `-----BEGIN …PRIVATE KEY…-----` or `-----END …-----` at or after `from`. Returns the
/// marker's start and the end of its closing dashes.
pub(super) fn find_pem_marker(line: &str, from: usize, opener: &str) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = line.get(at..)?.find(opener) {
        let start = at + i;
        let label_start = start + opener.len();
        let close = line[label_start..].find("-----").map(|j| label_start + j)?;
        let label = &line[label_start..close];
        let plausible = label.len() <= 40
            && label
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ')
            && (label.ends_with("PRIVATE KEY") || label.ends_with("PRIVATE KEY BLOCK"));
        if plausible {
            return Some((start, close + 5));
        }
        at = label_start;
    }
    None
}

/// Whether `line` ends with the BEGIN marker of a public block (a certificate, a public key, a
/// PGP public key block, a certificate request or CRL) whose body follows on the next lines.
pub(super) fn opens_public_block(line: &str) -> bool {
    const PUBLIC: &[&str] = &[
        "CERTIFICATE",
        "TRUSTED CERTIFICATE",
        "CERTIFICATE REQUEST",
        "NEW CERTIFICATE REQUEST",
        "X509 CRL",
        "PUBLIC KEY",
        "RSA PUBLIC KEY",
        "PGP PUBLIC KEY BLOCK",
        "PGP SIGNATURE",
        "SSH2 PUBLIC KEY",
    ];
    let t = line.trim_end().trim_end_matches(['"', '\'', ',']);
    let Some(at) = t.rfind("-----BEGIN ") else {
        return false;
    };
    let label = &t[at + "-----BEGIN ".len()..];
    label
        .strip_suffix("-----")
        .is_some_and(|label| PUBLIC.contains(&label))
}

/// A line of a public block's body: base64, a blank line, or a `Name: value` armor header.
pub(super) fn is_public_body_line(line: &str) -> bool {
    let t = line.trim().trim_matches(['"', '\'', ',']);
    t.is_empty()
        || t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        || (t.len() < 200
            && t.split_once(": ").is_some_and(|(name, _)| {
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            }))
}

/// Trims the syntax around key material inside `line[from..to]`: indentation, quotes, string
/// concatenation, trailing commas and `\n` escapes. Returns the byte range left.
pub(super) fn pem_core(line: &str, from: usize, to: usize) -> (usize, usize) {
    let b = line.as_bytes();
    let (mut s, mut e) = (from, to);
    loop {
        if s < e && (b[s].is_ascii_whitespace() || matches!(b[s], b'"' | b'\'' | b'`' | b'(')) {
            s += 1;
        } else if s + 1 < e && b[s] == b'\\' && matches!(b[s + 1], b'n' | b'r') {
            s += 2;
        } else {
            break;
        }
    }
    loop {
        if e > s
            && (b[e - 1].is_ascii_whitespace()
                || matches!(b[e - 1], b'"' | b'\'' | b'`' | b',' | b';' | b'+' | b')'))
        {
            e -= 1;
        } else if e >= s + 2 && b[e - 2] == b'\\' && matches!(b[e - 1], b'n' | b'r') {
            e -= 2;
        } else {
            break;
        }
    }
    (s, e)
}

/// Base64 with optional inner `\n` escapes (a key written on one line of JSON).
pub(super) fn is_pem_body(core: &str) -> bool {
    let b = core.as_bytes();
    if b.is_empty() || core == REDACTED {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() && matches!(b[i + 1], b'n' | b'r') => i += 2,
            c if c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=') => i += 1,
            _ => return false,
        }
    }
    true
}

/// A `Proc-Type: 4,ENCRYPTED` style header inside an encrypted PEM body.
pub(super) fn is_pem_header(core: &str) -> bool {
    core.split_once(": ").is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

pub(super) fn pem_body_line(line: &str) -> BodyLine {
    let (s, e) = pem_core(line, 0, line.len());
    let core = &line[s..e];
    if core.is_empty() || core == REDACTED {
        BodyLine::Clean
    } else if is_pem_body(core) || is_pem_header(core) {
        BodyLine::Secret(s, e)
    } else {
        BodyLine::NotBody
    }
}

/// Handles BEGIN markers on a line: redacts key material that follows on the same line and
/// reports whether a body continues on the next lines.
pub(super) fn pem_begin_spans(line: &str, mut pem: PemState, spans: &mut Vec<Span>) -> PemState {
    let mut at = 0;
    while let Some((_, marker_end)) = find_pem_marker(line, at, "-----BEGIN ") {
        let end = find_pem_marker(line, marker_end, "-----END ");
        let body_end = end.map_or(line.len(), |(s, _)| s);
        let (cs, ce) = pem_core(line, marker_end, body_end);
        let core = &line[cs..ce];
        let body = is_pem_body(core);
        if body {
            spans.push(Span::new(cs, ce, SecretKind::PrivateKey, true));
        }
        match end {
            Some((_, end_marker_end)) => {
                pem = PemState::default();
                at = end_marker_end;
            }
            None => {
                // Only a marker that ends its line (or is followed by key material) opens a
                // multi-line body; a marker quoted in prose does not.
                if body || core.is_empty() || core == REDACTED {
                    pem = PemState {
                        active: true,
                        reported: body,
                        public: false,
                    };
                }
                break;
            }
        }
    }
    pem
}
