//! A bot's `bot.env` (where rs-sdk keeps the bot's password) read for the values that must
//! never be written anywhere.
//!
//! It is read as bytes, never as text: rs-sdk writes it in UTF-8, but a hand-edited file may
//! hold a Latin-1 comment or a password typed in Latin-1, and a file that failed to decode once
//! turned the password scrub off. No byte sequence does that here: each value is returned as
//! its UTF-8 reading (exact when valid, lossy with U+FFFD otherwise: what a program printing the
//! raw bytes shows through a UTF-8 terminal or transcript) and, when it holds a byte past ASCII,
//! its Latin-1 reading (each byte the char of the same code point: what a program that read the
//! file as Latin-1 prints in UTF-8).

/// Every value of a secret-named variable in `bytes`, in each reading, duplicates dropped.
/// Never fails and never panics: a line it cannot read as an assignment is passed over.
pub fn secrets_in_bot_env_bytes(bytes: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    for line in bytes.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() || line[0] == b'#' {
            continue;
        }
        let line = strip_export(line);
        let Some(eq) = line.iter().position(|&b| b == b'=') else {
            continue;
        };
        let name = line[..eq].trim_ascii().to_ascii_uppercase();
        if !is_secret_name(&name) {
            continue;
        }
        for value in values_of(&line[eq + 1..]) {
            if value.is_empty() || (value.starts_with(b"{{") && value.ends_with(b"}}")) {
                continue;
            }
            for reading in readings(value) {
                if !out.contains(&reading) {
                    out.push(reading);
                }
            }
        }
    }
    out
}

/// `export NAME=…` (a shell's spelling, which rs-sdk's loader accepts too) is `NAME=…`.
fn strip_export(line: &[u8]) -> &[u8] {
    match line.strip_prefix(b"export") {
        Some(rest) if rest.first().is_some_and(u8::is_ascii_whitespace) => rest.trim_ascii_start(),
        _ => line,
    }
}

/// Names of secrets (upper-cased): PASSWORD, PASSWD, PASSPHRASE, TOKEN or SECRET anywhere, a
/// name ending in KEY or PWD, and `PASS` alone or as the last word (`BOT_PASS`).
fn is_secret_name(name: &[u8]) -> bool {
    let contains = |needle: &[u8]| name.windows(needle.len()).any(|w| w == needle);
    [
        &b"PASSWORD"[..],
        b"PASSWD",
        b"PASSPHRASE",
        b"TOKEN",
        b"SECRET",
    ]
    .iter()
    .any(|w| contains(w))
        || name.ends_with(b"KEY")
        || name.ends_with(b"PWD")
        || name == b"PASS"
        || name.ends_with(b"_PASS")
}

/// The value after `=`: inside single or double quotes everything up to the closing quote
/// (a `#` there is part of the value); unquoted, up to a ` #` comment. A double-quoted value
/// with backslash escapes is returned both as written and unescaped, since either may be what
/// the bot logs in with. An unclosed quote takes the rest of the line.
fn values_of(rest: &[u8]) -> Vec<&[u8]> {
    let v = rest.trim_ascii_start();
    match v.first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let inner = &v[1..];
            let mut i = 0;
            while i < inner.len() {
                if quote == b'"' && inner[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if inner[i] == quote {
                    return vec![&inner[..i]];
                }
                i += 1;
            }
            vec![inner.trim_ascii_end()]
        }
        _ => {
            let end = (1..v.len())
                .find(|&i| v[i] == b'#' && v[i - 1].is_ascii_whitespace())
                .unwrap_or(v.len());
            vec![v[..end].trim_ascii_end()]
        }
    }
}

/// The UTF-8 reading of a value, its unescaped reading when it holds backslashes, and its
/// Latin-1 reading when it holds a byte past ASCII.
fn readings(value: &[u8]) -> Vec<String> {
    let mut spellings: Vec<Vec<u8>> = vec![value.to_vec()];
    if value.contains(&b'\\') {
        let mut plain = Vec::with_capacity(value.len());
        let mut bytes = value.iter();
        while let Some(&b) = bytes.next() {
            if b == b'\\' {
                if let Some(&next) = bytes.next() {
                    plain.push(next);
                }
            } else {
                plain.push(b);
            }
        }
        if !plain.is_empty() {
            spellings.push(plain);
        }
    }
    let mut out: Vec<String> = Vec::new();
    for spelling in &spellings {
        let utf8 = String::from_utf8_lossy(spelling).into_owned();
        let latin1: Option<String> =
            (!spelling.is_ascii()).then(|| spelling.iter().map(|&b| char::from(b)).collect());
        for reading in std::iter::once(utf8).chain(latin1) {
            if !out.contains(&reading) {
                out.push(reading);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_latin1_password_is_returned_in_its_utf8_lossy_and_latin1_readings() {
        let env = b"# mot de passe: \xe9t\xe9\nPASSWORD=h\xe9llo-Secr3t-xyz # set by ops\n";
        assert_eq!(
            secrets_in_bot_env_bytes(env),
            vec!["h\u{fffd}llo-Secr3t-xyz", "h\u{e9}llo-Secr3t-xyz"]
        );
    }

    #[test]
    fn a_utf8_password_is_returned_exactly_and_in_its_latin1_reading() {
        let env = "PASSWORD=héllo-ok\n".as_bytes();
        assert_eq!(
            secrets_in_bot_env_bytes(env),
            vec!["héllo-ok".to_string(), "h\u{c3}\u{a9}llo-ok".to_string()]
        );
        assert_eq!(
            secrets_in_bot_env_bytes(b"PASSWORD=plain-ascii\n"),
            vec!["plain-ascii"]
        );
    }

    #[test]
    fn pass_passwd_pwd_and_key_names_are_secrets_and_others_are_not() {
        let env = b"PASS=one-1111\nBOT_PASS=two-2222\nPASSWD=three-333\nDB_PWD=four-4444\n\
                    API_KEY=five-5555\nMYKEY=six-66666\nGH_TOKEN=seven-777\nclient_secret=eight-88\n\
                    db_password=nine-999\nBYPASS=not-a-secret\nUSERNAME=woody\nSERVER=x.dev\n";
        assert_eq!(
            secrets_in_bot_env_bytes(env),
            vec![
                "one-1111",
                "two-2222",
                "three-333",
                "four-4444",
                "five-5555",
                "six-66666",
                "seven-777",
                "eight-88",
                "nine-999"
            ]
        );
    }

    #[test]
    fn quotes_keep_a_hash_and_an_unquoted_value_loses_its_trailing_comment() {
        let env = b"PASSWORD=\"a#b c # d\" # comment\nTOKEN='x # y'\nSECRET=abc#def # note\n\
                    export  API_KEY=exported-1\nexport\tDB_PWD = tabbed-2 \r\nOPEN_PASSWORD=\"unclosed # v \n\
                    ESC_PASSWORD=\"a\\\"b-long\"\n";
        assert_eq!(
            secrets_in_bot_env_bytes(env),
            vec![
                "a#b c # d",
                "x # y",
                "abc#def",
                "exported-1",
                "tabbed-2",
                "unclosed # v",
                "a\\\"b-long",
                "a\"b-long"
            ]
        );
    }

    #[test]
    fn comments_empty_values_placeholders_and_a_byte_order_mark_are_handled() {
        let env = b"\xef\xbb\xbfPASSWORD=after-bom\n# PASSWORD=commented\n  # TOKEN=indented\n\
                    SECRET=\nTEMPLATE_PASSWORD={{PASSWORD}}\nnot a line\nPASSWORD=after-bom\n";
        assert_eq!(secrets_in_bot_env_bytes(env), vec!["after-bom"]);
        assert!(secrets_in_bot_env_bytes(b"").is_empty());
    }

    #[test]
    fn every_reading_of_a_latin1_password_is_scrubbed_and_none_without_it() {
        let env = b"PASSWORD=h\xe9llo-Secr3t-xyz # set by ops\n";
        let output = "logged in with h\u{e9}llo-Secr3t-xyz\nretry h\u{fffd}llo-Secr3t-xyz\n";
        // Without the bot's secrets nothing in this output looks like a credential: only the
        // known values protect it.
        assert_eq!(super::super::Scrubber::new(&[]).scrub(output).text, output);
        let known = secrets_in_bot_env_bytes(env);
        let refs: Vec<&str> = known.iter().map(String::as_str).collect();
        let scrubbed = super::super::Scrubber::new(&refs)
            .scrub(output)
            .text
            .into_owned();
        assert!(!scrubbed.contains("llo-Secr3t-xyz"), "{scrubbed}");
    }

    proptest! {
        #[test]
        fn the_parser_never_panics_on_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = secrets_in_bot_env_bytes(&bytes);
        }

        #[test]
        fn a_value_of_any_bytes_after_password_is_found_in_its_latin1_reading(
            value in proptest::collection::vec(any::<u8>().prop_filter("no line end, quote, hash or space", |b| !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b'#')), 1..40)
        ) {
            let mut env = b"PASSWORD=".to_vec();
            env.extend_from_slice(&value);
            env.push(b'\n');
            let found = secrets_in_bot_env_bytes(&env);
            let latin1: String = value.iter().map(|&b| char::from(b)).collect();
            let lossy = String::from_utf8_lossy(&value).into_owned();
            prop_assert!(found.contains(&latin1) || value.starts_with(b"{{"));
            prop_assert!(found.contains(&lossy) || value.starts_with(b"{{"));
        }
    }
}
