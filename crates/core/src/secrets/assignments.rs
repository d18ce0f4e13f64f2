//! Credential-looking assignments: `password = …`, `API_KEY: …`, a credential name beside a
//! secret-looking value, with the placeholders and code values that are not secrets.

use super::entropy::{is_path_like, shannon_entropy, word_coverage};
use super::shapes::{R_ASSIGN, R_VENDOR_NAME};
use super::{LineHits, SecretKind, Span};

pub(super) fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-' | b'.')
}

/// Walks the trigger hits of a line, expands each to the identifier around it, and if that
/// identifier names a credential, parses the value assigned to it.
pub(super) fn assignment_spans(line: &str, hits: LineHits<'_>, spans: &mut Vec<Span>) {
    let b = line.as_bytes();
    let decl_line = is_declaration_line(line);
    // Nothing before this byte is looked at again: a later hit inside an identifier or value
    // already handled would only repeat work (and could make a long line quadratic).
    let mut skip_until = 0;
    for hit in hits
        .hits
        .iter()
        .filter(|h| h.bits & (R_ASSIGN | R_VENDOR_NAME) != 0)
    {
        let (hit_start, hit_end) = (hit.start - hits.base, hit.end - hits.base);
        if hit_start < skip_until {
            continue;
        }
        let mut s = hit_start;
        while s > 0 && is_ident_byte(b[s - 1]) {
            s -= 1;
        }
        let mut e = hit_end.min(b.len());
        if b[e - 1] == b'=' {
            // A trigger that ends in `=` (`sig=`): the name ends before it.
            e -= 1;
        } else {
            while e < b.len() && is_ident_byte(b[e]) {
                e += 1;
            }
        }
        skip_until = e;
        let ident = line[s..e].trim_end_matches(['.', '-']);
        let name = ident.rsplit('.').next().unwrap_or(ident);
        // A name holding only a vendor's keyword (`Meraki=…`, `cohere: …`), as gitleaks' keyword
        // rules read it: only a long random value counts.
        let vendor_only = !is_credential_name(name);
        if vendor_only && !(hit.bits & R_VENDOR_NAME != 0 && is_vendor_name(name)) {
            continue;
        }
        let parsed = parse_assignment(line, s, s + ident.len(), decl_line);
        if let Some(parsed) = parsed {
            skip_until = skip_until.max(parsed.consumed);
            for (vs, ve) in parsed.secret {
                // A publishable key is meant to be shipped to browsers, whatever its name.
                let value = &line[vs..ve];
                if vendor_only && !is_vendor_value(value) {
                    continue;
                }
                if value.starts_with("pk_live_")
                    || value.starts_with("pk_test_")
                    || value.starts_with("pk.eyJ")
                {
                    continue;
                }
                spans.push(Span::new(vs, ve, SecretKind::Assignment, true));
            }
        }
    }
}

/// The vendor keywords of gitleaks' keyword rules (a name holding one, followed by an
/// assignment, is where those rules look for the vendor's token), less the generic words the
/// credential names already cover.
pub(super) const VENDOR_KEYWORDS: &[&str] = &[
    "adafruit",
    "adobe",
    "airtable",
    "algolia",
    "alibaba",
    "artifactory",
    "asana",
    "atlassian",
    "beamer",
    "bintray",
    "bitbucket",
    "bittrex",
    "cloudflare",
    "codecov",
    "cohere",
    "coinbase",
    "confluence",
    "confluent",
    "contentful",
    "datadog",
    "discord",
    "dnkey",
    "droneci",
    "dropbox",
    "etsy",
    "facebook",
    "fastly",
    "finicity",
    "finnhub",
    "flickr",
    "freshbooks",
    "gitter",
    "gocardless",
    "heroku",
    "hubspot",
    "intercom",
    "jfrog",
    "jira",
    "kraken",
    "kucoin",
    "launchdarkly",
    "linkedin",
    "looker",
    "mailchimp",
    "mailgun",
    "mattermost",
    "meraki",
    "messagebird",
    "netlify",
    "newrelic",
    "new_relic",
    "nytimes",
    "okta",
    "plaid",
    "privateai",
    "private_ai",
    "rapidapi",
    "sendbird",
    "sentry",
    "snyk",
    "sonar",
    "squarespace",
    "sumo",
    "travis",
    "twitch",
    "twitter",
    "xray",
    "yandex",
    "zendesk",
];

/// A name that holds a vendor keyword and no word saying it is something else (`meraki_url`,
/// `sentry_org_id`, `datadog_host`).
pub(super) fn is_vendor_name(name: &str) -> bool {
    let raw = name.as_bytes();
    if raw.len() > 64 {
        return false;
    }
    let mut describes = false;
    split_name_words(raw, |s, e| {
        let w = name[s..e].to_ascii_lowercase();
        describes |= in_sorted(NOT_A_VALUE_WORDS, &w) || in_sorted(VENDOR_NOT_A_SECRET, &w);
    });
    !describes
}

/// Words beside a vendor's keyword that name something public.
pub(super) const VENDOR_NOT_A_SECRET: &[&str] = &[
    "account",
    "app",
    "base",
    "build",
    "channel",
    "client",
    "commit",
    "dsn",
    "email",
    "environment",
    "event",
    "model",
    "org",
    "organization",
    "project",
    "region",
    "release",
    "sdk",
    "site",
    "team",
    "tenant",
    "ttl",
    "url",
    "user",
    "username",
    "version",
];

/// A value a vendor-keyword name holds that is that vendor's token: long, random, mixed
/// letters and digits, not a version, path or word.
pub(super) fn is_vendor_value(v: &str) -> bool {
    let version = v
        .as_bytes()
        .windows(3)
        .any(|w| w[0].is_ascii_digit() && w[1] == b'.' && w[2].is_ascii_digit());
    !version
        && v.len() >= 16
        && v.bytes().any(|b| b.is_ascii_digit())
        && v.bytes().any(|b| b.is_ascii_alphabetic())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-+/=.".contains(&b))
        && shannon_entropy(v.as_bytes()) >= 3.5
        && word_coverage(v) * 100 < v.len() * 60
}

/// What may stand before a `NAME=value` line that was commented out or listed (`// KEY=…`,
/// `# KEY=…`, `-- KEY=…`, `* KEY=…`, `- KEY=…`, `> KEY=…`, `; KEY=…`): the value is as real.
pub(super) const COMMENT_MARKS: &[char] = &['/', '#', '-', '*', '>', ';', ' ', '\t'];

pub(super) fn is_declaration_line(line: &str) -> bool {
    let t = line.trim_start();
    let t = t.strip_prefix("export ").unwrap_or(t);
    [
        "const ",
        "let ",
        "var ",
        "val ",
        "final ",
        "static ",
        "private ",
        "public ",
        "protected ",
        "readonly ",
        "pub ",
        "pub(",
        "type ",
        "fn ",
        "def ",
        "func ",
        "function ",
    ]
    .iter()
    .any(|k| t.starts_with(k))
}

/// Words that make a name describe a credential instead of holding one.
pub(super) const NOT_A_VALUE_WORDS: &[&str] = &[
    "btn",
    "budget",
    "button",
    "cache",
    "changed",
    "class",
    "color",
    "count",
    "counts",
    "desc",
    "description",
    "dir",
    "directory",
    "disabled",
    "enabled",
    "endpoint",
    "env",
    "error",
    "errors",
    "expiration",
    "expire",
    "expired",
    "expires",
    "expiry",
    "field",
    "fields",
    "file",
    "filename",
    "font",
    "format",
    "header",
    "height",
    "hint",
    "host",
    "hostname",
    "icon",
    "id",
    "ids",
    "idx",
    "index",
    "input",
    "kind",
    "label",
    "len",
    "length",
    "limit",
    "limits",
    "manager",
    "max",
    "message",
    "method",
    "min",
    "mode",
    "msg",
    "name",
    "names",
    "num",
    "number",
    "offset",
    "page",
    "path",
    "pattern",
    "placeholder",
    "policy",
    "port",
    "pos",
    "position",
    "prefix",
    "prompt",
    "provider",
    "regex",
    "required",
    "reset",
    "rule",
    "rules",
    "schema",
    "scope",
    "scopes",
    "service",
    "show",
    "size",
    "state",
    "status",
    "step",
    "storage",
    "store",
    "strategy",
    "strength",
    "style",
    "suffix",
    "template",
    "text",
    "timeout",
    "title",
    "tokenize",
    "tokenized",
    "tokenizer",
    "tokens",
    "ttl",
    "type",
    "types",
    "uri",
    "url",
    "urls",
    "usage",
    "valid",
    "validation",
    "validator",
    "var",
    "version",
    "visible",
    "width",
];

/// Words that are a credential anywhere in a name (`passwordHash`, `clientSecret`).
pub(super) const CREDENTIAL_WORDS: &[&str] = &[
    "accesskey",
    "apikey",
    "authorization",
    "cred",
    "credential",
    "credentials",
    "creds",
    "passcode",
    "passphrase",
    "passwd",
    "password",
    "passwords",
    "privatekey",
    "secret",
    "secretkey",
    "secrets",
    "token",
];

/// Endings of run-together lower-case words (`dbpassword`, `clientsecret`, `accesstoken`).
pub(super) const CREDENTIAL_SUFFIXES: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "credential",
    "credentials",
];

/// Words that are a credential only as the last word (`dbPass`, but not `passThrough`).
pub(super) const CREDENTIAL_LAST_WORDS: &[&str] = &[
    "auth",
    "oauth",
    "pass",
    "psk",
    "pw",
    "pwd",
    "sig",
    "signature",
];

/// Words that make a following `key` a secret key (`apiKey`, `ACCESS_KEY`).
pub(super) const KEY_QUALIFIERS: &[&str] = &[
    "access",
    "account",
    "admin",
    "api",
    "app",
    "auth",
    "bot",
    "client",
    "consumer",
    "deploy",
    "encryption",
    "hmac",
    "jwt",
    "license",
    "master",
    "mindrune",
    "owner",
    "personal",
    "private",
    "secret",
    "session",
    "shared",
    "sign",
    "signing",
    "ssh",
    "subscription",
    "webhook",
];

/// Words before `KEY` in an env-style name that make it not a secret (`PUBLIC_KEY`).
pub(super) const PUBLIC_KEY_QUALIFIERS: &[&str] = &[
    "composite",
    "cursor",
    "dedupe",
    "foreign",
    "group",
    "hash",
    "hot",
    "idempotency",
    "lookup",
    "map",
    "partition",
    "primary",
    "pub",
    "public",
    "publishable",
    "row",
    "short",
    "shortcut",
    "sort",
    "unique",
];

pub(super) fn is_credential_name(name: &str) -> bool {
    let name = name.trim_matches(|c: char| matches!(c, '-' | '$' | '_' | '@'));
    if name.is_empty() || name.len() > 64 {
        return false;
    }
    // This runs for every trigger hit (`keys`, `keyboard`, `Object.keys` …), so it works on a
    // stack copy instead of allocating a word list.
    let raw = name.as_bytes();
    let mut lower = [0u8; 64];
    for (d, c) in lower.iter_mut().zip(raw) {
        *d = c.to_ascii_lowercase();
    }
    let mut words = [(0usize, 0usize); 64];
    let mut n = 0;
    split_name_words(raw, |s, e| {
        words[n] = (s, e);
        n += 1;
    });
    let word = |i: usize| {
        let (s, e) = words[i];
        std::str::from_utf8(&lower[s..e]).unwrap_or("")
    };
    // A service account's `private_key_id` names its key at Google: with the key it is the
    // credential, and it is the one `…_id` that is.
    if n == 3 && word(0) == "private" && word(1) == "key" && word(2) == "id" {
        return true;
    }
    // A describing word (`tokenCount`, `secretName`, `passwordField`) makes the name a
    // description, unless a credential word follows it (`HOST_IO_API_KEY`, `id_token`): then
    // only the words after it count.
    let mut first = 0;
    if let Some(nv) = (0..n)
        .rev()
        .find(|&i| in_sorted(NOT_A_VALUE_WORDS, word(i)))
    {
        let strong_after = (nv + 1..n).any(|i| {
            let w = word(i);
            in_sorted(CREDENTIAL_WORDS, w)
                || (w != "key" && CREDENTIAL_SUFFIXES.iter().any(|s| w.ends_with(s)))
                || (w == "key" && i > nv + 1 && in_sorted(KEY_QUALIFIERS, word(i - 1)))
        });
        if !strong_after {
            return false;
        }
        first = nv + 1;
    }
    let env_style =
        raw.iter().any(u8::is_ascii_uppercase) && !raw.iter().any(u8::is_ascii_lowercase);
    (first..n).any(|i| {
        let w = word(i);
        if in_sorted(CREDENTIAL_WORDS, w) || CREDENTIAL_SUFFIXES.iter().any(|s| w.ends_with(s)) {
            return true;
        }
        if i + 1 != n {
            return false;
        }
        if in_sorted(CREDENTIAL_LAST_WORDS, w) || w.ends_with("auth") {
            return true;
        }
        // A personal access token in an env-style name (`AZURE_DEVOPS_PAT`, `GH_PAT`); in code
        // `pat` is as often a pattern.
        if w == "pat" && env_style && i > first {
            return true;
        }
        if w == "key" && i > first {
            let q = word(i - 1);
            return in_sorted(KEY_QUALIFIERS, q)
                || (env_style && !in_sorted(PUBLIC_KEY_QUALIFIERS, q));
        }
        false
    })
}

/// Calls `f(start, end)` for each word of an ASCII identifier: words are split on
/// non-alphanumerics and camelCase boundaries (`APIKey` → `API`, `Key`; `dbPass2` → `db`,
/// `Pass2`).
pub(super) fn split_name_words(raw: &[u8], mut f: impl FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    for (i, &c) in raw.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if let Some(s) = start.take() {
                f(s, i);
            }
            continue;
        }
        let boundary = c.is_ascii_uppercase()
            && i > 0
            && (raw[i - 1].is_ascii_lowercase()
                || raw[i - 1].is_ascii_digit()
                || (raw[i - 1].is_ascii_uppercase()
                    && raw.get(i + 1).is_some_and(u8::is_ascii_lowercase)));
        match start {
            Some(s) if boundary => {
                f(s, i);
                start = Some(i);
            }
            None => start = Some(i),
            Some(_) => {}
        }
    }
    if let Some(s) = start {
        f(s, raw.len());
    }
}

/// Membership in one of the sorted word lists (a unit test keeps them sorted).
pub(super) fn in_sorted(list: &[&str], word: &str) -> bool {
    list.binary_search(&word).is_ok()
}

pub(super) struct Parsed {
    /// The byte ranges of a secret value: one if the value is a secret, one for each secret
    /// literal piece of an interpolated value (`hunter2-${SUFFIX}`), none otherwise.
    pub(super) secret: Vec<(usize, usize)>,
    /// Where parsing stopped: the end of the value.
    pub(super) consumed: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Assign,
    Colon,
    Compare,
}

pub(super) fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && matches!(b[p], b' ' | b'\t') {
        p += 1;
    }
    p
}

/// Parses `name <op> value` for the identifier at `line[s..e]`.
pub(super) fn parse_assignment(line: &str, s: usize, e: usize, decl_line: bool) -> Option<Parsed> {
    let b = line.as_bytes();
    let mut p = e;
    // A quoted key: `"api_key": …`, `headers['x-api-key'] = …`.
    if s > 0 && matches!(b[s - 1], b'"' | b'\'' | b'`') && b.get(p) == Some(&b[s - 1]) {
        p += 1;
        if b.get(p) == Some(&b']') {
            p += 1;
        }
    }
    let after_name = p;
    p = skip_ws(b, p);
    let rest = &line[p..];
    let (op, op_len) = if rest.starts_with(":=") || rest.starts_with("=>") {
        (Op::Assign, 2)
    } else if rest.starts_with("===") || rest.starts_with("!==") {
        (Op::Compare, 3)
    } else if rest.starts_with("==") || rest.starts_with("!=") {
        (Op::Compare, 2)
    } else if rest.starts_with('=') {
        (Op::Assign, 1)
    } else if rest.starts_with(':') && !rest.starts_with("::") {
        (Op::Colon, 1)
    } else {
        return None;
    };
    let op_at = p;
    p += op_len;
    let value_at = skip_ws(b, p);
    // `NAME=value` at the start of a line (optionally after `export`): a .env or properties
    // line, whose unquoted value runs to the end of the line.
    let env_form = op == Op::Assign
        && op_len == 1
        && op_at == after_name
        && value_at == p
        && b[s].is_ascii_alphabetic()
        && matches!(
            line[..s].trim().trim_start_matches(COMMENT_MARKS).trim(),
            "" | "export" | "set"
        );
    let mut p = value_at;

    // A type annotation, `password: string = "…"`: the value follows the ` = `.
    if op == Op::Colon
        && b.get(p)
            .is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
    {
        let mut t = p;
        while t < b.len() && (b[t].is_ascii_alphanumeric() || b"_<>[]|.,? ".contains(&b[t])) {
            t += 1;
        }
        if t > p
            && b.get(t) == Some(&b'=')
            && b[t - 1] == b' '
            && !matches!(b.get(t + 1), Some(b'=' | b'>'))
        {
            p = skip_ws(b, t + 1);
        }
    }

    if p >= b.len() {
        return None;
    }
    // Python string prefixes: r"…", b'…', f"…".
    if b"rRbBuUfF".contains(&b[p]) && matches!(b.get(p + 1), Some(b'"' | b'\'')) {
        p += 1;
    }

    let q = b[p];
    if matches!(q, b'"' | b'\'' | b'`') {
        let start = p + 1;
        let mut i = start;
        while i < b.len() && b[i] != q {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        let close = i.min(b.len());
        let consumed = (close + 1).min(b.len());
        let secret = literal_secrets(line, start, close, true, env_form);
        return Some(Parsed { secret, consumed });
    }

    if env_form {
        let mut end = b.len();
        for pat in [" #", "\t#"] {
            if let Some(i) = line[p..].find(pat) {
                end = end.min(p + i);
            }
        }
        let secret = literal_secrets(line, p, end, false, true);
        return Some(Parsed {
            secret,
            consumed: end,
        });
    }

    // An unquoted value in code, YAML, a header or a query string: one token.
    let is_delim = |c: u8| {
        c.is_ascii_whitespace()
            || matches!(
                c,
                b',' | b';'
                    | b'&'
                    | b')'
                    | b'}'
                    | b']'
                    | b'['
                    | b'('
                    | b'"'
                    | b'\''
                    | b'`'
                    | b'<'
                    | b'>'
            )
    };
    let mut end = p;
    while end < b.len() && !is_delim(b[end]) {
        end += 1;
    }
    let consumed = end;
    let value = &line[p..end];
    // On a declaration line an unquoted value is a name (`const password = userInput`),
    // unless it looks like a credential itself (`fn login password=Pw7MrgVhm7luF`).
    let is_expression = (decl_line && !token_like(value))
        || matches!(b.get(end), Some(b'(' | b'['))
        || looks_like_member_access(value)
        || looks_like_code_value(value, b.get(end).copied());
    if is_expression || value.is_empty() {
        return Some(Parsed {
            secret: Vec::new(),
            consumed,
        });
    }
    if is_auth_scheme(value) {
        // `Authorization: Bearer abc…`: the credential is the next token.
        let ts = skip_ws(b, end);
        let mut te = ts;
        while te < b.len() && !is_delim(b[te]) {
            te += 1;
        }
        let token = &line[ts..te];
        let secret = (te > ts && token_like(token))
            .then_some((ts, te))
            .into_iter()
            .collect();
        return Some(Parsed {
            secret,
            consumed: te,
        });
    }
    let secret = literal_secrets(line, p, end, false, false);
    Some(Parsed { secret, consumed })
}

/// Unquoted values that are types, paths, pointers or variables rather than literals:
/// `token::Paren`, `*mut passwd`, `&self.key`, YAML aliases and tags (`*base`, `!Secret`), and
/// an identifier directly followed by `,` or `;` (`token_start: __u32,`, `secret: Uint8Array;`),
/// since a YAML or log value is not followed by code punctuation.
pub(super) fn looks_like_code_value(value: &str, next: Option<u8>) -> bool {
    let first = value.as_bytes().first().copied();
    value.contains("::")
        || matches!(
            first,
            Some(b'*' | b'&' | b'!' | b':' | b'@' | b'?' | b'|' | b'\\')
        )
        || (matches!(next, Some(b',' | b';'))
            && value
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
            && !random_piece(value))
}

/// `config.token`, `process.env.X`, `this.auth` …: a reference, not a literal.
pub(super) fn looks_like_member_access(value: &str) -> bool {
    let Some((head, tail)) = value.split_once('.') else {
        return false;
    };
    let ident = |s: &str| {
        s.bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b'$')
            && s.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
    };
    // Every piece an identifier, none of them random (`f2hR8O.KTP-HLDn…` and
    // `X8FA_Re73RFeXfqscs….r87` are tokens with a dot in them).
    ident(head)
        && tail
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && tail.split('.').all(|p| p.is_empty() || ident(p))
        && !value
            .split(['.', '_'])
            .any(|p| random_piece(p) || random_letters(p))
}

/// A piece of six or more characters mixing upper case, lower case and two or more digits, or
/// of eight or more with three or more digits among letters, and at most 60 % words: a token's, not an
/// identifier's (`Uint8Array`, `Base64Encoder` stay identifiers).
pub(super) fn random_piece(p: &str) -> bool {
    let digits = p.bytes().filter(u8::is_ascii_digit).count();
    let upper = p.bytes().any(|b| b.is_ascii_uppercase());
    let lower = p.bytes().any(|b| b.is_ascii_lowercase());
    // Digits inside letters (`da90a7`), not a number ending a name (`sha256`, `utf16le`).
    let inner_digit = p
        .as_bytes()
        .windows(2)
        .any(|w| w[0].is_ascii_digit() && w[1].is_ascii_alphabetic())
        && p.bytes().filter(u8::is_ascii_alphabetic).count() >= 2;
    let long_random = ((p.len() >= 6 && upper && lower && digits >= 2)
        || (p.len() >= 8 && digits >= 3))
        && word_coverage(p) * 5 < p.len() * 3;
    // The kind of character (upper, lower, digit) changing at every other one: `CO3btIkWs`.
    let class = |b: u8| {
        (
            b.is_ascii_uppercase(),
            b.is_ascii_lowercase(),
            b.is_ascii_digit(),
        )
    };
    let changes = p
        .as_bytes()
        .windows(2)
        .filter(|w| class(w[0]) != class(w[1]))
        .count();
    let jumpy = p.len() >= 8 && digits > 0 && upper && lower && changes * 2 >= p.len();
    long_random || jumpy || (p.len() >= 6 && digits >= 3 && inner_digit)
}

/// A package or client name with its version (`okta-python/2.9.1`, `curl/8.5.0`): a
/// user-agent, not a secret.
pub(super) fn is_version_spec(v: &str) -> bool {
    let Some((name, version)) = v.rsplit_once('/') else {
        return false;
    };
    let version = version.trim_start_matches('v');
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./@".contains(&b))
        && version.contains('.')
        && version
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-' || b.is_ascii_lowercase())
        && version.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// A base64 blob that starts with `/` (`/bio6jv…+69…=`, `/cJr5w+cx…`): not a path.
pub(super) fn slash_blob(v: &str) -> bool {
    v.len() >= 20
        && (v.contains('+') || v.contains('=') || v.split('/').any(random_piece))
        && !v.contains("//")
}

/// Letters only, yet a token: eight or more letters that are not words, by case changing at
/// least every third letter (`nyoZlaQmJal`; camelCase changes once a word) or, in one case,
/// at most 30 % vowels and a run of four consonants (`gxkydfwb`, `OVHSXMBXSCFDXPUIVCQA`) that
/// identifiers and words rarely have.
pub(super) fn random_letters(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 8 || !b.iter().all(u8::is_ascii_alphabetic) {
        return false;
    }
    let upper = b.iter().any(u8::is_ascii_uppercase);
    let lower = b.iter().any(u8::is_ascii_lowercase);
    if upper && lower {
        let changes = b
            .windows(2)
            .filter(|w| w[0].is_ascii_uppercase() != w[1].is_ascii_uppercase())
            .count();
        return changes * 3 >= b.len() || (b.len() >= 12 && changes * 4 >= b.len());
    }
    let vowel = |c: &u8| b"aeiouAEIOU".contains(c);
    let vowels = b.iter().filter(|c| vowel(c)).count();
    let mut run = 0;
    let mut longest = 0;
    for c in b {
        run = if vowel(c) || matches!(c, b'y' | b'Y') {
            0
        } else {
            run + 1
        };
        longest = longest.max(run);
    }
    vowels * 10 <= b.len() * 3 && longest >= 4
}

pub(super) fn is_auth_scheme(word: &str) -> bool {
    ["bearer", "basic", "token", "digest"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// The secret ranges of `line[start..end]`, a literal assigned to a credential name. A value
/// with `${…}` interpolations (`password=hunter2-${SUFFIX}`, `` `pw${n}` ``) is judged piece by
/// piece: the interpolations stay, each literal piece that is a secret on its own goes. A value
/// that is only interpolations (`${PASSWORD}`) has no secret.
pub(super) fn literal_secrets(
    line: &str,
    start: usize,
    end: usize,
    quoted: bool,
    env_form: bool,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    while at < end {
        let piece_end = line[at..end].find("${").map_or(end, |i| at + i);
        if piece_end > at
            && let Some(range) = secret_in_literal(line, at, piece_end, quoted, env_form)
        {
            out.push(range);
        }
        if piece_end == end {
            break;
        }
        // Skip the interpolation; an unclosed one runs to the end of the value.
        at = line[piece_end..end]
            .find('}')
            .map_or(end, |i| piece_end + i + 1);
    }
    out
}

/// Decides whether `line[start..end]`, a literal assigned to a credential name, is a secret.
/// Returns the trimmed byte range to redact.
pub(super) fn secret_in_literal(
    line: &str,
    start: usize,
    end: usize,
    quoted: bool,
    env_form: bool,
) -> Option<(usize, usize)> {
    let raw = &line[start..end];
    let trimmed_start = start + (raw.len() - raw.trim_start().len());
    let value = raw.trim();
    let vs = trimmed_start;
    let ve = vs + value.len();
    if value.bytes().any(|c| c.is_ascii_whitespace()) && !env_form {
        // A message, unless it is `Bearer <token>` written as one string.
        let (scheme, token) = value.split_once(' ')?;
        if quoted && is_auth_scheme(scheme) {
            let token_trimmed = token.trim_start();
            let ts = ve - token.len() + (token.len() - token_trimmed.len());
            if !token_trimmed.bytes().any(|c| c.is_ascii_whitespace()) && token_like(token_trimmed)
            {
                return Some((ts, ve));
            }
        }
        return None;
    }
    is_secret_value(value, env_form).then_some((vs, ve))
}

pub(super) fn is_secret_value(v: &str, env_form: bool) -> bool {
    if v.chars().count() < 4 || is_placeholder(v) || v.contains("://") {
        return false;
    }
    // Paths, including resource names made of words (`projects/my-project/secrets/db/…`).
    if is_version_spec(v) {
        return false;
    }
    if slash_blob(v) {
        return true;
    }
    if v.starts_with('/')
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || is_path_like(v)
    {
        return false;
    }
    if env_form {
        return true;
    }
    // A long run of digits is a numeric token, not a count or a port; letters that are not
    // words are a token too.
    if (v.len() >= 16 && v.bytes().all(|b| b.is_ascii_digit()))
        || v.split(['_', '-']).any(random_letters)
        || (v.len() <= 64 && random_letters(&v.replace(['_', '-'], "")))
    {
        return true;
    }
    // A trailing colon makes a label (`"Password:"`), not a password.
    !word_like(v) && !numeric_like(v) && !v.ends_with(':')
}

/// Letters and identifier separators only: a word or an identifier, not a password.
pub(super) fn word_like(v: &str) -> bool {
    v.bytes()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, b'_' | b'-' | b'.' | b'/'))
}

/// Numbers, versions, dates and times.
pub(super) fn numeric_like(v: &str) -> bool {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit() || c == b'_');
    }
    v.bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'_' | b':' | b',' | b'-' | b'+'))
}

/// A bearer/basic token: long enough, not a placeholder, not a plain word.
pub(super) fn token_like(t: &str) -> bool {
    t.len() >= 8 && !is_placeholder(t) && !word_like(t) && !numeric_like(t)
}

/// Values that stand for a secret without being one.
pub(super) fn is_placeholder(v: &str) -> bool {
    let l = v.to_ascii_lowercase();
    let l = l.as_str();
    const INFIXES: &[&str] = &[
        "redacted",
        "placeholder",
        "${",
        "{{",
        "xxxx",
        "****",
        "…",
        "...",
        "•••",
    ];
    if INFIXES.iter().any(|p| l.contains(p)) {
        return true;
    }
    const PREFIXES: &[&str] = &[
        "$",
        "<",
        "{",
        "#{",
        "process.env",
        "import.meta.env",
        "os.environ",
        "os.getenv",
        "getenv",
        "env.",
        "env[",
        "env(",
        "deno.env",
        "bun.env",
        "secrets.",
        "vars.",
        "vault:",
        "op://",
        "arn:",
        "ref+",
        "enc[",
        "your",
        "insert",
        "replace",
        "enter-",
        "enter_",
        "put-your",
        "put_your",
        "example",
        "sample",
        "dummy",
        "placeholder",
        "changeme",
        "change-me",
        "change_me",
    ];
    if PREFIXES.iter().any(|p| l.starts_with(p)) {
        return true;
    }
    if l.len() > 1 && l.starts_with('%') && l.ends_with('%') {
        return true;
    }
    if l.ends_with("_here") || l.ends_with("-here") {
        return true;
    }
    const WORDS: &[&str] = &[
        "changeit",
        "password",
        "passwd",
        "secret",
        "token",
        "null",
        "nil",
        "none",
        "undefined",
        "true",
        "false",
        "hidden",
        "masked",
        "empty",
        "string",
        "required",
        "optional",
        "include",
        "omit",
        "same-origin",
        "bearer",
        "basic",
        "default",
        "value",
        "unknown",
        "notset",
        "not-set",
        "unset",
        "test",
        "testing",
        "todo",
        "tbd",
        "fixme",
        "n/a",
    ];
    if WORDS.contains(&l) {
        return true;
    }
    if l.chars().all(|c| "*x.•#-_?0 ".contains(c)) {
        return true;
    }
    let mut distinct: Vec<char> = Vec::with_capacity(3);
    for c in l.chars() {
        if !distinct.contains(&c) {
            distinct.push(c);
            if distinct.len() > 2 {
                return false;
            }
        }
    }
    true
}

/// Passwords in URLs are often short (`https://user:pw@host`), so only marker-like values are
/// placeholders here.
pub(super) fn is_url_placeholder(pw: &str) -> bool {
    let l = pw.to_ascii_lowercase();
    l.contains("redacted")
        || l.starts_with('$')
        || l.starts_with('{')
        || l.starts_with('<')
        || (l.len() > 1 && l.starts_with('%') && l.ends_with('%'))
        || l.chars().all(|c| "*x.•#".contains(c))
        || ["password", "pass", "passwd", "pwd", "secret"].contains(&l.as_str())
}

#[cfg(test)]
mod declaration_line_values {
    use crate::secrets::Scrubber;

    #[test]
    fn a_credential_shaped_value_on_a_declaration_line_is_redacted_and_a_name_is_not() {
        let scrubber = Scrubber::new(&[]);
        let caught = scrubber.scrub("fn login password=Pw7MrgVhm7luF");
        assert_eq!(caught.text, "fn login password=[redacted]");
        for code in [
            "const password = userPassword;",
            "let token = accessToken",
            "fn login(password = default_password)",
            "const secret = process.env.SECRET",
            "def connect(api_key=API_KEY):",
        ] {
            assert_eq!(scrubber.scrub(code).text, code, "{code}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secrets::Scrubber;

    #[test]
    fn word_lists_are_sorted_for_binary_search() {
        for list in [
            NOT_A_VALUE_WORDS,
            CREDENTIAL_WORDS,
            CREDENTIAL_LAST_WORDS,
            KEY_QUALIFIERS,
            PUBLIC_KEY_QUALIFIERS,
            VENDOR_NOT_A_SECRET,
        ] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "unsorted: {list:?}");
        }
    }

    #[test]
    fn a_vendor_keyword_name_holds_a_token_only_when_the_value_is_random() {
        let scrubber = Scrubber::new(&[]);
        let caught = scrubber.scrub("  Meraki=6e2F08C2ddEedF9E1b09AC2d7764B5a8006Ece78");
        assert_eq!(caught.text, "  Meraki=[redacted]");
        for kept in [
            r#"okta: "okta-python/2.9.1""#,
            "sentry_org_id = 4504812345678901",
            r#"cloudflare_zone_id = "023e105f4ecef8ad9ca31a8372d0c353""#,
            "twitter: acme_support",
            r#"heroku_region = "eu-west-1""#,
        ] {
            assert_eq!(scrubber.scrub(kept).text, kept);
        }
    }

    #[test]
    fn random_letters_digits_and_slash_blobs_under_credential_names_are_tokens() {
        let scrubber = Scrubber::new(&[]);
        for (text, value) in [
            (
                r#""plivo_token": "OVHSXMBXSCFDXPUIVCQA","#,
                "OVHSXMBXSCFDXPUIVCQA",
            ),
            (r#""zipbooks_token": "KlTkBCARPQnX","#, "KlTkBCARPQnX"),
            (
                r#""salesforce_token": "9443139892735096772","#,
                "9443139892735096772",
            ),
            (
                "KRAKEN_API_KEY=/bio6jvwsvlciyyp+6938r5=+dy2a/bogq",
                "/bio6jvwsvlciyyp",
            ),
            ("access_secret: f2hR8O.KTP-HLDnriCy8aK0SAd", "f2hR8O"),
            (
                r#""Server=tcp:db,1433;Password=JjSDYB_wdZZE86;""#,
                "JjSDYB_wdZZE86",
            ),
        ] {
            let out = scrubber.scrub(text);
            assert!(!out.text.contains(value), "{text:?} -> {:?}", out.text);
        }
        for kept in [
            "secret: Uint8Array;",
            "const encoder = Base64Encoder;",
            r#"token: "accessToken""#,
            r#"password_strength: "strong""#,
            "token: config.sha256",
            r#"token_type = "BearerAccessToken""#,
            "max_tokens: 4096",
            r#"user_agent_token = "okta-python/2.9.1""#,
        ] {
            assert_eq!(scrubber.scrub(kept).text, kept);
        }
    }
}
