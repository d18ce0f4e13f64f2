//! The secret scrubber.
//!
//! Secrets must never leave a saved script, run record, mirror file, lesson, card or package
//! (DESIGN.md, "Reliability and security"). [`Scrubber::scrub`] replaces only the secret VALUE
//! with [`REDACTED`], so the surrounding code stays readable:
//!
//! | input | output |
//! |---|---|
//! | `const password = "hunter22"` | `const password = "[redacted]"` |
//! | `PASSWORD=abc123xyz` | `PASSWORD=[redacted]` |
//! | `https://user:pw@host` | `https://user:[redacted]@host` |
//! | a PEM `-----BEGIN … PRIVATE KEY-----` block | markers kept, every body line `[redacted]` |
//!
//! What is detected, in order of precedence when two detections overlap:
//!
//! 1. **Known secrets** passed to [`Scrubber::new`] (the bot's password, the owner's key), exact
//!    and case-sensitive, plus their JSON-escaped and percent-encoded spellings, anywhere in the
//!    text. Values shorter than [`MIN_KNOWN_SECRET_CHARS`] characters are ignored (a three-letter
//!    "secret" would redact half of every script), and so are values that occur inside the
//!    `[redacted]` marker itself (such as `dact`), because no output could ever be free of them.
//!    A value spanning lines is split into its lines, each one a known secret.
//! 2. **Private keys**: PEM `-----BEGIN [RSA |EC |OPENSSH |ENCRYPTED |PGP ]PRIVATE KEY[ BLOCK]-----`
//!    blocks, on one line (JSON `\n` escapes) or over several. The markers stay; every body line
//!    becomes `[redacted]`. A body ends at the END marker or at the first line that is not
//!    base64 (or a `Name: value` PEM header), so a key mentioned in prose never swallows the rest
//!    of a file.
//! 3. **Key shapes**: AWS access key ids (`AKIA`/`ASIA`/`ABIA`/`ACCA` + 16), GitHub (`ghp_`,
//!    `gho_`, `ghu_`, `ghs_`, `ghr_` + 36, `github_pat_…`), GitLab `glpat-…`, Slack `xox[abposr]-…`,
//!    Slack and Discord webhook URLs, OpenAI `sk-…`/`sk-proj-…`, Anthropic `sk-ant-…`, Stripe
//!    `sk_/rk_` + `live_/test_`, Google `AIza…` (35), npm `npm_…`, Hugging Face `hf_…`, SendGrid
//!    `SG.….…`, Telegram bot tokens `<digits>:AA…` (also in `/bot…/` URLs), MindRune's own
//!    `mrk_` + 48 hex owner keys and `mr_runner_`/`mr_operator_`/`mr_session_` + 64 hex tokens,
//!    and JWTs `eyJ….eyJ….…`; and the vendor-prefixed tokens of gitleaks' rules, trufflehog's
//!    detectors and GitHub's secret-scanning patterns whose prefix marks them (every GitLab
//!    token type, Slack app and config tokens, DigitalOcean, Pulumi, RubyGems, Sentry, Shippo,
//!    LangSmith, Postman, Brevo, Doppler, Duffel, Dynatrace, Facebook and Square, Flutterwave,
//!    Frame.io, Hugging Face orgs, Linear, Octopus, Shopify, Sourcegraph, SettleMint,
//!    Cloudflare origin CA, Harness, Terraform Cloud, 42, Groq, Replicate, xAI, Google OAuth
//!    secrets and access tokens, Pinecone, Supabase, Docker Hub, Heroku, Stripe client secrets,
//!    Twitter bearer tokens, Vault, Fly.io, Grafana, Notion, PlanetScale, Databricks, Azure AD
//!    client secrets, Twilio API keys, DeepSeek's hex `sk-` keys), key files beyond PEM (age
//!    secret keys `AGE-SECRET-KEY-1…`, 1Password secret keys `A3-…` and service-account tokens),
//!    and the secret of Microsoft Teams, Zapier and IFTTT webhook URLs. Obvious placeholders
//!    (`EXAMPLE`, `xxxx`, `****`, `placeholder`, or too few distinct characters) are skipped.
//! 4. **Credentials in URLs** (`scheme://user:PASSWORD@host`), **`Bearer <token>`**,
//!    **`Authorization: Basic <base64>`**, **passwords handed to a command** (`curl -u
//!    user:PW`, `mysql -p'PW'`, `sshpass -p PW`, `docker login -p PW`, `redis-cli -a PW`,
//!    `sqlcmd -P PW`, `htpasswd -b FILE USER PW`; a `$VAR` or a bare `-p` prompt stays), the
//!    password of a **`.netrc`** (`machine H login U password PW`) or **`.pgpass`** line
//!    (`host:port:db:user:PW`), and a wallet's **seed phrase** (12 to 24 lower-case words after
//!    `mnemonic`, `seed` or `recovery phrase` and `:` or `=`).
//! 5. **Credential-looking assignments**: a name whose words include password, passwd, pwd,
//!    pass, passphrase, secret, token, credential(s), creds, auth, authorization, a last word
//!    `sig`/`signature` (`?sig=…` of a SAS URL), an env-style `…_PAT`, or an
//!    api/access/private/secret/client/… `key` (case-insensitive, camelCase, snake_case,
//!    kebab-case and env-style `X_KEY` all understood; a service account's `private_key_id`
//!    too), assigned in `=`, `:`, `:=`, `=>`,
//!    `==`/`!=` (a literal compared with a password is the password), JSON `"key": "value"`,
//!    TS `const x: string = '…'`, env `X=…` (also commented out or listed: `// KEY=…`,
//!    `# KEY=…`, `- KEY=…`), CLI `--password=…` or query `?token=…` form. Names
//!    that describe a credential rather than hold one are skipped (`tokenCount`, `maxTokens`,
//!    `passwordField`, `secretName`, `authUrl`, `author` …).
//! 6. **High-entropy tokens**: runs of ≥ 32 base64/base64url characters that mix letters and
//!    digits and carry ≥ 4.0 bits of Shannon entropy per character.
//!
//! False-positive trade-offs (each one chosen so code and logs stay readable):
//!
//! * A value with `${…}` interpolations is judged piece by piece: each literal piece that is a
//!   secret on its own goes, the interpolations stay (`password=[redacted]${SUFFIX}`); a value
//!   made only of interpolations is a placeholder.
//! * An assignment value counts only when it is a literal of ≥ 4 characters that is not a
//!   placeholder: empty, `process.env.X`, `os.environ[…]`, `$VAR`, `${VAR}`, `{{VAR}}`,
//!   `%VAR%`, `<your-token>`, `your_token_here`, `xxx`, `***`, `…`, `[redacted]`, `changeme`,
//!   `password`, `secret`, `token`, `true`, `null`, `undefined`, `include` (fetch's
//!   `credentials: 'include'`) and similar words, or a value of at most two distinct characters.
//! * In code forms (everything but an env line `NAME=value` at the start of a line) the value
//!   must also look like a secret rather than a word or identifier: it needs a digit or symbol
//!   (`"hunter22"` counts, `"hunter"` and `"accessToken"` do not), may not contain whitespace
//!   (that is a message, not a password), may not be only digits (ports, counts), a path or a
//!   URL, may not be a path of words (`projects/my-project/secrets/db/versions/1`) and may not
//!   end in `:` (a label). An unquoted value that is code rather than a literal is skipped: a
//!   call or member access (`getToken()`, `config.token`, `args[0]`), a type or path
//!   (`token::Paren`, `*mut passwd`), an identifier directly followed by `,` or `;`
//!   (`secret: Uint8Array;`), or anything on a `const`/`let`/`var`/`pub`/`type`/`fn` line. Weak
//!   all-letter passwords in code, and unquoted variables in JS object literals
//!   (`{ password: hunter22 }`, flagged), are the price; the bot's real password is still caught
//!   as a known secret.
//! * High-entropy runs are NOT flagged when they are pure hex (sha256 and md5 digests, git
//!   commit hashes, UUIDs: hex secrets are only caught by name), a word plus hex
//!   (`crash-7dc27920…`), contain `example`, follow `sha256:`, `sha1:`, `sha512:`, `md5:`, `h1:`
//!   or `base64,` (data URIs), decode as base64 to prose (printable ASCII with a space, mostly
//!   letters: `VGhlIHF1aWNr…`), are SRI hashes (`sha512-…`), sit inside a URL (URL tokens are
//!   caught by the URL, webhook and query-string rules), are one-case identifiers with two or
//!   more `_`/`-` (`TR31_V1_IBM3624_PIN_KEY`), are more than 60% words (`Renderer`, `inventory`,
//!   `VERIFICATION`: camelCase identifiers and paths; about 2% of random 32-character tokens
//!   also look that wordy and are missed), are four or more short separated segments, or
//!   contain no digit. Paths (two or more `/`-separated pieces that are words) are judged piece
//!   by piece. Opaque random identifiers (upload ids, etags, base64 digests without a `sha256:`
//!   label, public keys) cannot be told from secrets by shape and are redacted: harmless to
//!   lose in a script or log, and the safe side of the trade.
//! * Public values that look random stay: an SSH public key after its type
//!   (`ssh-ed25519 AAAA…`), the body of a certificate, public key or PGP public key block, an
//!   age recipient (`age1…`), publishable keys (`pk_live_`, `pk_test_`, Mapbox `pk.`, a
//!   reCAPTCHA `data-sitekey`), whatever name they are assigned to.
//! * Passwords passed to a command other than those above (`-p hunter22` of some other tool)
//!   are not recognised by shape; pass them as known secrets.
//!
//! Guarantees: the output has exactly the input's line breaks (every replacement stays within its
//! line), scrubbing is idempotent (scrubbing scrubbed text changes nothing and finds nothing:
//! each changed line is re-scanned until clean, and a line that will not settle is replaced by
//! `[redacted]` whole), a known secret never survives, the text is borrowed when nothing is found,
//! nothing panics, and the work is linear in the input: one Aho-Corasick pass over trigger
//! substrings and one byte loop for long token runs select the few lines the regexes and parsers
//! ever see.

use std::borrow::Cow;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind, packed};
use regex::Regex;

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Known secrets shorter than this many characters are ignored: too many false hits.
pub const MIN_KNOWN_SECRET_CHARS: usize = 4;

/// The shortest run of token characters the entropy rule looks at.
const MIN_ENTROPY_RUN: usize = 32;
/// Bits per character a run needs to count as random.
const MIN_ENTROPY_BITS: f64 = 4.0;
/// How often a changed line is re-scanned before it is replaced whole; real text settles in one
/// re-scan, the bound only guards against adversarial overlaps with the marker.
const MAX_RESCANS: usize = 4;

/// The kind of a detected secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecretKind {
    /// One of the exact values given to [`Scrubber::new`].
    KnownSecret,
    /// A literal assigned to a credential-looking name.
    Assignment,
    /// The body of a PEM private key block.
    PrivateKey,
    /// An AWS access key id.
    AwsKey,
    /// A GitHub personal, OAuth, app or fine-grained token.
    GithubToken,
    /// A GitLab personal access token.
    GitlabToken,
    /// A Slack bot, user, app or refresh token.
    SlackToken,
    /// A Slack or Discord webhook URL's secret path.
    WebhookUrl,
    /// An OpenAI API key.
    OpenAiKey,
    /// An Anthropic API key.
    AnthropicKey,
    /// A Stripe secret or restricted key.
    StripeKey,
    /// A Google API key.
    GoogleApiKey,
    /// An npm access token.
    NpmToken,
    /// A Hugging Face access token.
    HuggingFaceToken,
    /// A SendGrid API key.
    SendGridKey,
    /// A Telegram bot token (`123456789:AA…`).
    TelegramToken,
    /// A MindRune owner's key (`mrk_` + 48 hex) or token (`mr_runner_`, `mr_operator_`,
    /// `mr_session_` + 64 hex).
    MindRuneKey,
    /// A JSON Web Token.
    Jwt,
    /// The password part of `scheme://user:password@host`.
    UrlPassword,
    /// The token after `Bearer`.
    BearerToken,
    /// The credentials after `Authorization: Basic`.
    BasicAuth,
    /// A long random-looking token.
    HighEntropy,
}

impl SecretKind {
    /// Which kind names a merged redaction when detections overlap: the most specific wins.
    fn rank(self) -> u8 {
        use SecretKind::*;
        match self {
            KnownSecret => 0,
            PrivateKey => 1,
            AwsKey | GithubToken | GitlabToken | SlackToken | WebhookUrl | OpenAiKey
            | AnthropicKey | StripeKey | GoogleApiKey | NpmToken | HuggingFaceToken
            | SendGridKey | TelegramToken | MindRuneKey => 2,
            Jwt => 3,
            UrlPassword => 4,
            BearerToken | BasicAuth => 5,
            Assignment => 6,
            HighEntropy => 7,
        }
    }
}

/// One redaction: the 1-based line it was on and what it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// 1-based line number in the scrubbed text.
    pub line: usize,
    /// What was redacted.
    pub kind: SecretKind,
}

/// The scrubbed text and what was removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scrubbed<'a> {
    /// Borrowed from the input when nothing was found.
    pub text: Cow<'a, str>,
    /// One finding per redacted span (one per PEM block), in text order.
    pub findings: Vec<Finding>,
}

/// Scrubs secrets out of text. Compile it once and reuse it: the shape rules are shared
/// statics, the scrubber itself only holds the automaton for its known secrets.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    known: Option<KnownMatcher>,
}

/// Finds the known secrets, leftmost-longest, so that when one secret contains another the whole
/// longer one goes.
#[derive(Debug, Clone)]
enum KnownMatcher {
    /// The usual case (up to 64 needles on a CPU with SSSE3 or NEON): a packed SIMD searcher
    /// (Teddy). The automaton below would pick a one-byte prefilter for a handful of needles,
    /// and when that byte is common in the text (a digit of the password, say) it verifies at
    /// almost every position: that made the known secrets most of the scrubber's time.
    Packed(packed::Searcher),
    /// Otherwise an automaton with the same leftmost-longest semantics.
    Automaton(AhoCorasick),
    /// Only if the automaton cannot be built (it has internal size limits): plain substring
    /// search, slower but still never letting a known secret through.
    Plain(Vec<String>),
}

impl KnownMatcher {
    /// Byte ranges of known secrets in `hay`, sorted by start; ranges may overlap (the caller
    /// merges them).
    fn spans(&self, hay: &str) -> Vec<(usize, usize)> {
        match self {
            KnownMatcher::Packed(searcher) => searcher
                .find_iter(hay)
                .map(|m| (m.start(), m.end()))
                .collect(),
            KnownMatcher::Automaton(ac) => {
                ac.find_iter(hay).map(|m| (m.start(), m.end())).collect()
            }
            KnownMatcher::Plain(needles) => {
                let mut spans: Vec<(usize, usize)> = needles
                    .iter()
                    .flat_map(|n| hay.match_indices(n.as_str()).map(|(i, m)| (i, i + m.len())))
                    .collect();
                spans.sort_unstable();
                spans
            }
        }
    }
}

// Rule bits: a line is only examined by the rules whose trigger substrings occur in it.
const R_ASSIGN: u32 = 1 << 0;
const R_AWS: u32 = 1 << 1;
const R_GITHUB: u32 = 1 << 2;
const R_GITLAB: u32 = 1 << 3;
const R_SLACK: u32 = 1 << 4;
const R_WEBHOOK: u32 = 1 << 5;
const R_SK: u32 = 1 << 6;
const R_STRIPE: u32 = 1 << 7;
const R_GOOGLE: u32 = 1 << 8;
const R_NPM: u32 = 1 << 9;
const R_HF: u32 = 1 << 10;
const R_SENDGRID: u32 = 1 << 11;
const R_JWT: u32 = 1 << 12;
const R_URL: u32 = 1 << 13;
const R_BEARER: u32 = 1 << 14;
const R_BASIC: u32 = 1 << 15;
const R_PEM: u32 = 1 << 16;
const R_KNOWN: u32 = 1 << 17;
const R_ENTROPY: u32 = 1 << 18;
const R_TELEGRAM: u32 = 1 << 19;
const R_MINDRUNE: u32 = 1 << 20;
const R_VENDOR: u32 = 1 << 21;
const R_COMMAND: u32 = 1 << 22;
const R_SEED: u32 = 1 << 23;
const R_TWILIO: u32 = 1 << 24;
const R_ALL: u32 = u32::MAX;

/// Trigger substrings (matched ASCII-case-insensitively) and the rules they wake up. Every rule
/// needs at least one of its triggers to be able to match at all, so skipping lines without
/// triggers never hides a secret.
const TRIGGERS: &[(&str, u32)] = &[
    ("pass", R_ASSIGN),
    ("pwd", R_ASSIGN),
    ("pw", R_ASSIGN),
    ("psk", R_ASSIGN),
    ("secret", R_ASSIGN),
    ("token", R_ASSIGN),
    ("key", R_ASSIGN),
    ("auth", R_ASSIGN | R_BASIC),
    ("cred", R_ASSIGN),
    ("akia", R_AWS),
    ("asia", R_AWS),
    ("abia", R_AWS),
    ("acca", R_AWS),
    ("ghp_", R_GITHUB),
    ("gho_", R_GITHUB),
    ("ghu_", R_GITHUB),
    ("ghs_", R_GITHUB),
    ("ghr_", R_GITHUB),
    ("github_pat_", R_GITHUB),
    ("glpat-", R_GITLAB),
    ("xox", R_SLACK),
    ("hooks.slack.com", R_WEBHOOK),
    ("/api/webhooks/", R_WEBHOOK),
    ("sk-", R_SK),
    ("k_live_", R_STRIPE),
    ("k_test_", R_STRIPE),
    ("aiza", R_GOOGLE),
    ("npm_", R_NPM),
    ("hf_", R_HF),
    ("sg.", R_SENDGRID),
    ("eyj", R_JWT),
    ("://", R_URL),
    ("bearer", R_BEARER),
    ("-----begin", R_PEM),
    (":aa", R_TELEGRAM),
    ("mrk_", R_MINDRUNE),
    ("mr_", R_MINDRUNE),
    ("sig=", R_ASSIGN),
    ("signature=", R_ASSIGN),
    // An env-style `…_PAT` is only a trigger where a value follows it: a bare `_pat` is in
    // every `file_path`, and made most lines of code go through the assignment parser.
    ("_pat=", R_ASSIGN),
    ("_pat\"", R_ASSIGN),
    ("_pat'", R_ASSIGN),
    ("_pat:", R_ASSIGN),
    ("_pat ", R_ASSIGN),
    // Vendor prefixes (gitleaks' rules, trufflehog's detectors, GitHub's secret-scanning
    // patterns): each one names the start of a token, so only lines holding one see the rule.
    ("a3-", R_VENDOR),
    ("a3t", R_AWS),
    ("age-secret-key-1", R_VENDOR),
    ("p8e-", R_VENDOR),
    ("dapi", R_VENDOR),
    ("q~", R_VENDOR),
    ("ops_eyj", R_VENDOR),
    ("doo_v1_", R_VENDOR),
    ("dop_v1_", R_VENDOR),
    ("dor_v1_", R_VENDOR),
    ("pul-", R_VENDOR),
    ("rubygems_", R_VENDOR),
    ("sntry", R_VENDOR),
    ("shippo_", R_VENDOR),
    ("lsv2_", R_VENDOR),
    ("pmak-", R_VENDOR),
    ("glptt-", R_GITLAB),
    ("glcbt-", R_GITLAB),
    ("gldt-", R_GITLAB),
    ("glffct-", R_GITLAB),
    ("glft-", R_GITLAB),
    ("glimt-", R_GITLAB),
    ("glrt-", R_GITLAB),
    ("glsoat-", R_GITLAB),
    ("gloas-", R_GITLAB),
    ("glagent-", R_GITLAB),
    ("gr1348941", R_GITLAB),
    ("xkeysib-", R_VENDOR),
    ("xsmtpsib-", R_VENDOR),
    ("dp.", R_VENDOR),
    ("duffel_", R_VENDOR),
    ("dt0c01.", R_VENDOR),
    ("eaa", R_VENDOR),
    ("sq0", R_VENDOR),
    // Twilio's API keys are `SK` and 32 hex digits. `sk` also starts `sk_live_`, whose own
    // trigger it hides, so it wakes the Stripe rule too.
    ("sk", R_TWILIO | R_STRIPE),
    ("flwseck", R_VENDOR),
    ("fio-u-", R_VENDOR),
    ("api_org_", R_VENDOR),
    ("lin_api_", R_VENDOR),
    ("api-", R_VENDOR),
    ("shp", R_VENDOR),
    ("xapp-", R_SLACK),
    ("xoxe", R_SLACK),
    ("sgp_", R_VENDOR),
    ("sm_", R_VENDOR),
    ("v1.0-", R_VENDOR),
    ("pat.", R_VENDOR),
    ("atlasv1", R_VENDOR),
    ("s-s4t2", R_VENDOR),
    ("_gitlab_session", R_VENDOR),
    ("gsk_", R_VENDOR),
    ("r8_", R_VENDOR),
    ("xai-", R_VENDOR),
    ("gocspx-", R_VENDOR),
    ("ya29.", R_VENDOR),
    ("pcsk_", R_VENDOR),
    ("sb_secret_", R_VENDOR),
    ("dckr_pat_", R_VENDOR),
    ("hrku-", R_VENDOR),
    ("_secret_", R_VENDOR),
    ("aaaaaaaaaaaaaaaaaaaaa", R_VENDOR),
    ("hvs.", R_VENDOR),
    ("hvb.", R_VENDOR),
    ("fo1_", R_VENDOR),
    ("fm2_", R_VENDOR),
    ("glc_", R_VENDOR),
    ("glsa_", R_VENDOR),
    ("ntn_", R_VENDOR),
    ("pscale_", R_VENDOR),
    ("webhookb2/", R_WEBHOOK),
    ("hooks.zapier.com", R_WEBHOOK),
    ("maker.ifttt.com", R_WEBHOOK),
    // Passwords given to a command on its line.
    ("-u", R_COMMAND),
    ("--user", R_COMMAND),
    ("mysql", R_COMMAND),
    ("mariadb", R_COMMAND),
    ("sshpass", R_COMMAND),
    ("login", R_COMMAND),
    ("redis-cli", R_COMMAND),
    ("sqlcmd", R_COMMAND),
    ("htpasswd", R_COMMAND),
    ("machine", R_COMMAND),
    (":5432:", R_COMMAND),
    (":3306:", R_COMMAND),
    (":*:", R_COMMAND),
    // A wallet's seed phrase.
    ("mnemonic", R_SEED),
    ("seed", R_SEED),
    ("recovery", R_SEED),
];

/// The literals the prescan looks for (ASCII case ignored): what a plain scan, the benchmark's
/// baseline, would look for too.
pub fn trigger_literals() -> impl Iterator<Item = &'static str> {
    TRIGGERS.iter().map(|(literal, _)| *literal)
}

/// Non-overlapping leftmost-first search is markedly faster than overlapping search, and losing
/// a trigger hidden inside another costs nothing: the only overlaps are within one identifier
/// (which the assignment parser expands anyway) or put a word character before a shape that
/// must start at a word boundary (`keyJ…` hides `eyJ`, `psk-` hides `sk-`).
static TRIGGER_AC: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        .build(TRIGGERS.iter().map(|(p, _)| p))
        .expect("trigger automaton builds")
});

/// A key-shape rule: a regex, the capture group holding the secret, and a check that rejects
/// placeholders and picks the kind.
struct Shape {
    bits: u32,
    re: Regex,
    group: usize,
    classify: fn(&str) -> Option<SecretKind>,
}

static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {
    // `(?-u:\b)` is an ASCII word boundary: it keeps the regexes on the fast DFA path even when
    // the line holds non-ASCII text.
    let shape = |bits, pattern: &str, group, classify| Shape {
        bits,
        re: Regex::new(pattern).expect("shape regex is valid"),
        group,
        classify,
    };
    vec![
        shape(
            R_AWS,
            r"(?-u:\b)(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)",
            0,
            |m| shaped(m, SecretKind::AwsKey),
        ),
        shape(
            R_GITHUB,
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
            0,
            |m| shaped(m, SecretKind::GithubToken),
        ),
        // Every GitLab token type (personal, pipeline trigger, CI job, deploy, feature flag,
        // feed, incoming mail, runner, SCIM, OAuth app, agent) and runner registration tokens.
        shape(
            R_GITLAB,
            r"(?-u:\b)(?:gl(?:pat|ptt|cbt|dt|ffct|ft|imt|rt|soat|oas|agent|rtr)-[A-Za-z0-9_\-.]{20,}|GR1348941[A-Za-z0-9_\-]{20,})",
            0,
            |m| shaped(m, SecretKind::GitlabToken),
        ),
        shape(
            R_SLACK,
            r"(?-u:\b)(?:xox[abposr]-[A-Za-z0-9\-]{8,}|xoxe\.xox[bp]-[0-9]-[A-Za-z0-9]{20,}|xoxe-[0-9]-[A-Za-z0-9]{20,}|xapp-[0-9]-[A-Za-z0-9\-]{10,})",
            0,
            |m| shaped(m, SecretKind::SlackToken),
        ),
        shape(
            R_WEBHOOK,
            r"hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9_/\-]{16,})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
        ),
        shape(
            R_WEBHOOK,
            r"/api/webhooks/[0-9]{5,}/([A-Za-z0-9_\-]{30,})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
        ),
        shape(R_SK, r"(?-u:\b)sk-[A-Za-z0-9_\-]{20,}", 0, classify_sk),
        shape(
            R_STRIPE,
            r"(?-u:\b)[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",
            0,
            |m| shaped(m, SecretKind::StripeKey),
        ),
        shape(R_GOOGLE, r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}", 0, |m| {
            shaped(m, SecretKind::GoogleApiKey)
        }),
        shape(R_NPM, r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)", 0, |m| {
            shaped(m, SecretKind::NpmToken)
        }),
        shape(R_HF, r"(?-u:\b)hf_[A-Za-z0-9]{30,}(?-u:\b)", 0, |m| {
            let tail = &m[3..];
            let mixed = tail.bytes().any(|b| b.is_ascii_uppercase())
                && tail.bytes().any(|b| b.is_ascii_lowercase());
            if mixed {
                shaped(m, SecretKind::HuggingFaceToken)
            } else {
                None
            }
        }),
        shape(
            R_SENDGRID,
            r"(?-u:\b)SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
            0,
            |m| shaped(m, SecretKind::SendGridKey),
        ),
        // Telegram bot tokens, also inside the Bot API's URLs (`/bot123456789:AA…/sendMessage`).
        shape(
            R_TELEGRAM,
            r"(?:(?-u:\b)|bot)([0-9]{8,10}:AA[A-Za-z0-9_\-]{33})",
            1,
            |m| shaped(m, SecretKind::TelegramToken),
        ),
        // MindRune's own credentials: hex only, so the entropy rule never sees them.
        shape(
            R_MINDRUNE,
            r"(?-u:\b)(?:mrk_[0-9a-f]{48}|mr_(?:runner|operator|session)_[0-9a-f]{64})(?-u:\b)",
            0,
            |m| shaped(m, SecretKind::MindRuneKey),
        ),
        // Vendor-prefixed tokens, each from gitleaks' rule of the same vendor (and trufflehog's
        // or GitHub's pattern where they have one); the prefix is what makes them certain, so
        // a hex tail counts too.
        shape(
            R_VENDOR,
            concat!(
                r"(?-u:\b)(?:",
                r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
                r"|AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
                r"|p8e-[A-Za-z0-9]{32}",
                r"|dapi[a-f0-9]{32}(?:-[0-9])?",
                r"|[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
                r"|ops_eyJ[A-Za-z0-9+/]{40,}={0,3}",
                r"|do[opr]_v1_[a-f0-9]{64}",
                r"|pul-[a-f0-9]{40}",
                r"|rubygems_[a-f0-9]{48}",
                r"|sntry[su]_[A-Za-z0-9+/=_]{40,}",
                r"|shippo_(?:live|test)_[a-fA-F0-9]{40}",
                r"|lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}",
                r"|PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}",
                r"|xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}",
                r"|xsmtpsib-[a-f0-9]{64}-[A-Za-z0-9]{16}",
                r"|dp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}",
                r"|duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}",
                r"|dt0c01\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{64}",
                r"|EAA[A-Za-z0-9]{100,}",
                r"|EAAA[A-Za-z0-9_\-]{22,60}|sq0(?:atp|csp)-[A-Za-z0-9_\-]{22,60}",
                r"|FLWSECK(?:_TEST)?-[A-Za-z0-9]{12,32}(?:-X)?",
                r"|fio-u-[A-Za-z0-9_\-=]{64}",
                r"|api_org_[A-Za-z]{34}",
                r"|lin_api_[A-Za-z0-9]{40}",
                r"|API-[A-Z0-9]{26}",
                r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
                r"|sgp_(?:[a-fA-F0-9]{16}|local)_[a-fA-F0-9]{40}|sgp_[a-fA-F0-9]{40}",
                r"|sm_(?:aat|pat|sat)_[A-Za-z0-9]{16}",
                r"|v1\.0-[a-f0-9]{24}-[a-f0-9]{146}",
                r"|pat\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
                r"|[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,70}",
                r"|s-s4t2(?:ud|af)-[a-f0-9]{64}",
                r"|gsk_[A-Za-z0-9]{52}",
                r"|r8_[A-Za-z0-9]{37}",
                r"|xai-[A-Za-z0-9]{80}",
                r"|GOCSPX-[A-Za-z0-9_\-]{28}",
                r"|ya29\.[A-Za-z0-9_\-]{30,}",
                r"|pcsk_[A-Za-z0-9]{5}_[A-Za-z0-9]{30,}",
                r"|sb_secret_[A-Za-z0-9_\-]{31}",
                r"|dckr_pat_[A-Za-z0-9_\-]{27}",
                r"|HRKU-AA[A-Za-z0-9_\-]{58}",
                r"|(?:pi|seti)_[A-Za-z0-9]{24}_secret_[A-Za-z0-9]{25}",
                r"|A{21}[A-Za-z0-9%]{30,}",
                r"|hv[sb]\.[A-Za-z0-9_\-]{90,}",
                r"|fo1_[A-Za-z0-9_\-]{43}",
                r"|fm2_[A-Za-z0-9+/=_\-]{40,}",
                r"|glc_[A-Za-z0-9+/]{32,400}={0,2}",
                r"|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}",
                r"|ntn_[0-9]{11}[A-Za-z0-9]{32,35}",
                r"|pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}",
                r")",
            ),
            0,
            |m| shaped(m, SecretKind::HighEntropy),
        ),
        shape(R_TWILIO, r"(?-u:\b)SK[0-9a-fA-F]{32}(?-u:\b)", 0, |m| {
            shaped(m, SecretKind::HighEntropy)
        }),
        shape(R_VENDOR, r"_gitlab_session=([A-Za-z0-9]{32})", 1, |m| {
            shaped(m, SecretKind::HighEntropy)
        }),
        // Webhooks whose URL is the secret: Microsoft Teams, Zapier, IFTTT.
        shape(
            R_WEBHOOK,
            r"webhookb2/[^\s]*?/IncomingWebhook/([a-f0-9]{32})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
        ),
        shape(
            R_WEBHOOK,
            r"hooks\.zapier\.com/hooks/catch/[0-9]+/([a-z0-9]{5,})",
            1,
            |m| (m.len() >= 5).then_some(SecretKind::WebhookUrl),
        ),
        shape(
            R_WEBHOOK,
            r"maker\.ifttt\.com/trigger/[^/\s]+/with/key/([A-Za-z0-9_\-]{20,})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
        ),
        // Passwords handed to a command on its line: `curl -u user:pw`, `mysql -p'pw'`,
        // `sshpass -p pw`, `docker login -p pw`, `redis-cli -a pw`, `sqlcmd -P pw`,
        // `htpasswd -b file user pw`. A value that is a variable or a prompt is left alone.
        shape(
            R_COMMAND,
            r#"(?:^|\s)(?:-u|--user)[ =]['"]?[^\s:'"$]+:([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)(?-u:\b)[^\n]*?\s-p['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)sshpass\s+-p\s*['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)login(?-u:\b)[^\n]*?\s(?:-p|--password)[ =]['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)redis-cli(?-u:\b)[^\n]*?\s-a\s+['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)sqlcmd(?-u:\b)[^\n]*?\s-P\s+['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r#"(?-u:\b)htpasswd\s+-[a-zA-Z]*b[a-zA-Z]*(?:\s+-[a-zA-Z]+)*\s+\S+\s+\S+\s+['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        // `.netrc`: `machine HOST login USER password PW`; `.pgpass`: `host:port:db:user:pw`.
        shape(
            R_COMMAND,
            r#"(?-u:\b)machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+['"]?([^\s'"]+)"#,
            1,
            command_password,
        ),
        shape(
            R_COMMAND,
            r"^\s*[A-Za-z0-9_.\-*]+:(?:[0-9]+|\*):[^:\s]+:[^:\s]+:(\S+)\s*$",
            1,
            command_password,
        ),
        // A wallet's seed phrase: 12 to 24 lower-case words after a name that says so.
        shape(
            R_SEED,
            r#"(?i:mnemonic|seed|recovery[ _-]?phrase)[A-Za-z_ ]{0,12}["']?\s*[:=]\s*["'`]?([a-z]{3,8}(?: [a-z]{3,8}){11,23})(?-u:\b)"#,
            1,
            |_| Some(SecretKind::Assignment),
        ),
        shape(
            R_JWT,
            r"(?-u:\b)eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*",
            0,
            |_| Some(SecretKind::Jwt),
        ),
        shape(
            R_URL,
            r#"(?i)[a-z][a-z0-9+.\-]*://[^\s/:@'"`<>]*:([^\s/@'"`<>]+)@"#,
            1,
            |pw| (!is_url_placeholder(pw)).then_some(SecretKind::UrlPassword),
        ),
        shape(
            R_BEARER,
            r"(?-u:\b)(?i:bearer)\s+([A-Za-z0-9._~+/=\-]{8,})",
            1,
            |t| token_like(t).then_some(SecretKind::BearerToken),
        ),
        shape(
            R_BASIC,
            r#"(?i:authorization)["'`]?\s*[:=,]\s*["'`]?(?i:basic)\s+([A-Za-z0-9+/]{8,}={0,2})"#,
            1,
            |t| token_like(t).then_some(SecretKind::BasicAuth),
        ),
    ]
});

/// A password given on a command line, unless it is a variable, a placeholder or a prompt.
fn command_password(pw: &str) -> Option<SecretKind> {
    let placeholder = pw.len() < 4
        || pw.starts_with(['$', '%', '{', '<', '*', '-'])
        || pw.bytes().all(|b| b == b'*' || b == b'x' || b == b'X')
        || is_url_placeholder(pw);
    (!placeholder).then_some(SecretKind::Assignment)
}

/// Accepts a key shape unless it is an obvious placeholder.
fn shaped(m: &str, kind: SecretKind) -> Option<SecretKind> {
    let lower = m.to_ascii_lowercase();
    let fake = [
        "example",
        "xxxx",
        "****",
        "redacted",
        "0000000",
        "placeholder",
    ]
    .iter()
    .any(|p| lower.contains(p))
        || distinct_alnum(m) < 8;
    (!fake).then_some(kind)
}

/// `sk-ant-…` is Anthropic; other `sk-…` keys are OpenAI's, which always mix upper case, lower
/// case and digits. Requiring that mix keeps kebab-case slugs like `sk-learn-tutorial-notes`
/// out.
fn classify_sk(m: &str) -> Option<SecretKind> {
    if m.starts_with("sk-ant-") {
        return shaped(m, SecretKind::AnthropicKey);
    }
    let tail = &m[3..];
    // DeepSeek's keys are `sk-` and 32 hex digits, all lower case.
    if tail.len() == 32 && tail.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return shaped(m, SecretKind::OpenAiKey);
    }
    let upper = tail.bytes().any(|b| b.is_ascii_uppercase());
    let lower = tail.bytes().any(|b| b.is_ascii_lowercase());
    let digit = tail.bytes().any(|b| b.is_ascii_digit());
    if upper && lower && digit {
        shaped(m, SecretKind::OpenAiKey)
    } else {
        None
    }
}

fn distinct_alnum(s: &str) -> usize {
    let mut seen = [false; 128];
    let mut n = 0;
    for b in s.bytes().filter(u8::is_ascii_alphanumeric) {
        if !seen[b as usize] {
            seen[b as usize] = true;
            n += 1;
        }
    }
    n
}

impl Scrubber {
    /// Builds a scrubber that also removes the given exact secrets (the bot's password, the
    /// owner's key) wherever they appear. Each value is trimmed; values shorter than
    /// [`MIN_KNOWN_SECRET_CHARS`] characters or occurring inside [`REDACTED`] are ignored (see
    /// the module docs). JSON-escaped and percent-encoded spellings are added automatically.
    pub fn new(known: &[&str]) -> Scrubber {
        let mut needles: Vec<String> = Vec::new();
        for value in known {
            for part in value.split('\n') {
                let part = part.trim();
                if part.chars().count() < MIN_KNOWN_SECRET_CHARS || REDACTED.contains(part) {
                    continue;
                }
                for variant in [part.to_owned(), json_escape(part), percent_encode(part)] {
                    if !needles.contains(&variant) {
                        needles.push(variant);
                    }
                }
            }
        }
        let known = if needles.is_empty() {
            None
        } else {
            Some(known_matcher(needles))
        };
        Scrubber { known }
    }

    /// Replaces every secret in `text` with [`REDACTED`]. Borrows the text when nothing is found.
    pub fn scrub<'a>(&self, text: &'a str) -> Scrubbed<'a> {
        let hits = self.prescan(text);
        let bytes = text.as_bytes();
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut findings = Vec::new();
        let mut pem = PemState::default();
        let mut hi = 0;
        let mut line_no = 1;
        let mut counted = 0;
        // The start of the first line not yet looked at.
        let mut floor = 0;
        loop {
            let start = if pem.active || pem.public {
                floor
            } else if let Some(hit) = hits.get(hi) {
                text[floor..hit.start]
                    .rfind('\n')
                    .map_or(floor, |i| floor + i + 1)
            } else {
                break;
            };
            let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
            let first = hi;
            while hi < hits.len() && hits[hi].start <= end {
                hi += 1;
            }
            line_no += count_newlines(&bytes[counted..start]);
            counted = start;

            let line = &text[start..end];
            let local = LineHits {
                hits: &hits[first..hi],
                base: start,
            };
            let bits = local.hits.iter().fold(0, |acc, h| acc | h.bits);
            let (replacement, next) =
                self.scrub_line(line, bits, local, pem, line_no, &mut findings);
            if let Some(new_line) = replacement {
                edits.push((start, end, new_line));
            }
            pem = next;
            floor = end + 1;
            if floor > text.len() {
                break;
            }
        }

        if edits.is_empty() {
            return Scrubbed {
                text: Cow::Borrowed(text),
                findings,
            };
        }
        let mut out = String::with_capacity(text.len() + edits.len() * REDACTED.len());
        let mut last = 0;
        for (s, e, line) in &edits {
            out.push_str(&text[last..*s]);
            out.push_str(line);
            last = *e;
        }
        out.push_str(&text[last..]);
        Scrubbed {
            text: Cow::Owned(out),
            findings,
        }
    }

    /// Whether `text` holds anything [`Scrubber::scrub`] would redact.
    pub fn contains_secret(&self, text: &str) -> bool {
        !self.scrub(text).findings.is_empty()
    }

    /// Finds every position that could start a secret: trigger substrings, known secrets and
    /// long token runs. Everything else in the text is never looked at again.
    fn prescan(&self, text: &str) -> Vec<Hit> {
        let mut hits: Vec<Hit> = TRIGGER_AC
            .find_iter(text)
            .map(|m| Hit {
                start: m.start(),
                end: m.end(),
                bits: TRIGGERS[m.pattern().as_usize()].1,
            })
            .collect();
        if let Some(known) = &self.known {
            hits.extend(known.spans(text).into_iter().map(|(start, end)| Hit {
                start,
                end,
                bits: R_KNOWN,
            }));
        }
        for_each_candidate_run(text.as_bytes(), |s, e| {
            hits.push(Hit {
                start: s,
                end: e,
                bits: R_ENTROPY,
            });
        });
        hits.sort_unstable_by_key(|h| h.start);
        hits
    }

    /// Scrubs one line. Returns the new line if anything changed, and the PEM state after it.
    fn scrub_line(
        &self,
        line: &str,
        bits: u32,
        hits: LineHits<'_>,
        pem: PemState,
        line_no: usize,
        findings: &mut Vec<Finding>,
    ) -> (Option<String>, PemState) {
        let mut spans = Vec::new();
        let first = self.detect(line, bits, hits, pem, &mut spans);
        if spans.is_empty() {
            return (None, first);
        }
        let mut next;
        let mut current = line.to_owned();
        let mut rescans = 0;
        loop {
            let merged = merge_spans(spans);
            findings.extend(merged.iter().filter(|s| s.report).map(|s| Finding {
                line: line_no,
                kind: s.kind,
            }));
            current = apply_spans(&current, &merged);
            // Re-scan the result with every rule: the output must be a fixed point, so that
            // scrubbing it again finds nothing (idempotence) and no known secret can have been
            // re-formed at a seam next to a marker.
            let hits = line_hits(&current);
            spans = Vec::new();
            next = self.detect(&current, R_ALL, LineHits::own(&hits), pem, &mut spans);
            if spans.is_empty() {
                // The re-scan sees `[redacted]` body lines, which do not mark the block as
                // reported; keep the first scan's knowledge so one key stays one finding.
                if next.active && first.active {
                    next.reported |= first.reported;
                }
                return (Some(current), next);
            }
            rescans += 1;
            if rescans >= MAX_RESCANS {
                // Give up on precision and redact the whole line; keep a CR so CRLF text stays
                // CRLF.
                let mut whole = REDACTED.to_owned();
                if line.ends_with('\r') {
                    whole.push('\r');
                }
                let mut ignored = Vec::new();
                let hits = line_hits(&whole);
                let next = self.detect(&whole, R_ALL, LineHits::own(&hits), pem, &mut ignored);
                return (Some(whole), next);
            }
        }
    }

    /// Runs the rules selected by `bits` over one line, pushing the spans to redact.
    fn detect(
        &self,
        line: &str,
        bits: u32,
        hits: LineHits<'_>,
        pem: PemState,
        spans: &mut Vec<Span>,
    ) -> PemState {
        let mut pem = pem;
        if pem.active {
            if let Some((end_marker, _)) = find_pem_marker(line, 0, "-----END ") {
                let (cs, ce) = pem_core(line, 0, end_marker);
                if is_pem_body(&line[cs..ce]) {
                    spans.push(Span::new(cs, ce, SecretKind::PrivateKey, !pem.reported));
                }
                pem = PemState::default();
            } else {
                match pem_body_line(line) {
                    BodyLine::Secret(cs, ce) => {
                        spans.push(Span::new(cs, ce, SecretKind::PrivateKey, !pem.reported));
                        pem.reported = true;
                        return pem;
                    }
                    BodyLine::Clean => return pem,
                    BodyLine::NotBody => pem = PemState::default(),
                }
            }
        }

        if bits & R_KNOWN != 0
            && let Some(known) = &self.known
        {
            for (start, end) in known.spans(line) {
                spans.push(Span::new(start, end, SecretKind::KnownSecret, true));
            }
        }
        // A public block's body lines only look random: the entropy rule skips them, but a
        // token with a shape of its own is still caught there.
        let mut public_body = false;
        if pem.public {
            if line.contains("-----END ") {
                pem.public = false;
                public_body = true;
            } else if is_public_body_line(line) {
                public_body = true;
            } else {
                pem.public = false;
            }
        }
        for shape in SHAPES.iter().filter(|s| s.bits & bits != 0) {
            if shape.group == 0 {
                for m in shape.re.find_iter(line) {
                    if let Some(kind) = (shape.classify)(m.as_str()) {
                        spans.push(Span::new(m.start(), m.end(), kind, true));
                    }
                }
            } else {
                for caps in shape.re.captures_iter(line) {
                    if let Some(m) = caps.get(shape.group)
                        && let Some(kind) = (shape.classify)(m.as_str())
                    {
                        spans.push(Span::new(m.start(), m.end(), kind, true));
                    }
                }
            }
        }
        if bits & R_ASSIGN != 0 {
            assignment_spans(line, hits, spans);
        }
        if bits & R_ENTROPY != 0 && !public_body {
            entropy_spans(line, spans);
        }
        if bits & R_PEM != 0 {
            pem = pem_begin_spans(line, pem, spans);
            if !pem.active && opens_public_block(line) {
                pem.public = true;
            }
        }
        pem
    }
}

/// The fastest matcher that can be built for the known secrets' needles, all with the same
/// leftmost-longest matches.
fn known_matcher(needles: Vec<String>) -> KnownMatcher {
    if let Some(searcher) = packed::Config::new()
        .match_kind(packed::MatchKind::LeftmostLongest)
        .builder()
        .extend(&needles)
        .build()
    {
        return KnownMatcher::Packed(searcher);
    }
    // Building only fails past the automaton's size limits; the plain fallback keeps the
    // scrubber failing closed even then.
    match AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .build(&needles)
    {
        Ok(ac) => KnownMatcher::Automaton(ac),
        Err(_) => KnownMatcher::Plain(needles),
    }
}

/// The values `rs-sdk` keeps in a bot's `bot.env` that must never be written anywhere:
/// `PASSWORD=…` and any other variable whose name contains PASSWORD, PASSWD, TOKEN or SECRET or
/// ends in KEY or PWD. Values are trimmed and unquoted; empty values and unfilled template
/// placeholders (`{{PASSWORD}}`) are skipped; duplicates are dropped. Short values are returned
/// too; [`Scrubber::new`] decides what it can use.
pub fn secrets_in_bot_env(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim().to_ascii_uppercase();
        let secret_name = ["PASSWORD", "PASSWD", "TOKEN", "SECRET"]
            .iter()
            .any(|w| name.contains(w))
            || name.ends_with("KEY")
            || name.ends_with("PWD");
        if !secret_name {
            continue;
        }
        let value = unquote(value.trim());
        if value.is_empty() || (value.starts_with("{{") && value.ends_with("}}")) {
            continue;
        }
        if !out.iter().any(|v| v == value) {
            out.push(value.to_owned());
        }
    }
    out
}

fn unquote(v: &str) -> &str {
    for q in ['"', '\''] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return &v[1..v.len() - 1];
        }
    }
    v
}

fn json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Counts in blocks whose tallies fit a `u8`, which the compiler turns into wide compares and
/// adds; a plain `filter().count()` became a loop of a few bytes a step, and this count runs
/// over every byte before a text's last hit.
fn count_newlines(bytes: &[u8]) -> usize {
    let mut blocks = bytes.chunks_exact(128);
    let mut n = 0;
    for block in &mut blocks {
        n += usize::from(
            block
                .iter()
                .fold(0u8, |tally, &b| tally + u8::from(b == b'\n')),
        );
    }
    n + blocks.remainder().iter().filter(|&&b| b == b'\n').count()
}

#[derive(Debug, Clone, Copy)]
struct Hit {
    start: usize,
    end: usize,
    bits: u32,
}

/// The trigger hits of one line: a slice of the text's hits and the line's offset in the text.
#[derive(Clone, Copy)]
struct LineHits<'h> {
    hits: &'h [Hit],
    base: usize,
}

impl<'h> LineHits<'h> {
    /// Hits computed for the line itself.
    fn own(hits: &'h [Hit]) -> LineHits<'h> {
        LineHits { hits, base: 0 }
    }
}

fn line_hits(line: &str) -> Vec<Hit> {
    let mut hits: Vec<Hit> = TRIGGER_AC
        .find_iter(line)
        .map(|m| Hit {
            start: m.start(),
            end: m.end(),
            bits: TRIGGERS[m.pattern().as_usize()].1,
        })
        .collect();
    hits.sort_unstable_by_key(|h| h.start);
    hits
}

#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    kind: SecretKind,
    /// False for the 2nd and later lines of a PEM block, so one key is one finding.
    report: bool,
}

impl Span {
    fn new(start: usize, end: usize, kind: SecretKind, report: bool) -> Span {
        Span {
            start,
            end,
            kind,
            report,
        }
    }
}

/// Sorts spans and merges overlapping or touching ones, so each redaction is one marker named
/// after its most specific detection.
fn merge_spans(mut spans: Vec<Span>) -> Vec<Span> {
    spans.retain(|s| s.start < s.end);
    spans.sort_unstable_by_key(|s| (s.start, s.end));
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for s in spans {
        match merged.last_mut() {
            Some(last) if s.start <= last.end => {
                last.end = last.end.max(s.end);
                if s.kind.rank() < last.kind.rank() {
                    last.kind = s.kind;
                }
                last.report |= s.report;
            }
            _ => merged.push(s),
        }
    }
    merged
}

fn apply_spans(line: &str, spans: &[Span]) -> String {
    let mut out = String::with_capacity(line.len() + spans.len() * REDACTED.len());
    let mut last = 0;
    for s in spans {
        out.push_str(&line[last..s.start]);
        out.push_str(REDACTED);
        last = s.end;
    }
    out.push_str(&line[last..]);
    out
}

// ---------------------------------------------------------------------------------------------
// PEM private keys.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PemState {
    /// Inside a private key body that started on an earlier line.
    active: bool,
    /// This block already produced its finding.
    reported: bool,
    /// Inside a certificate or public key block (`-----BEGIN CERTIFICATE-----`): its body lines
    /// are public and only look random, so the shape and entropy rules skip them.
    public: bool,
}

enum BodyLine {
    /// Key material to redact, at this byte range.
    Secret(usize, usize),
    /// Blank or already `[redacted]`: still inside the body, nothing to do.
    Clean,
    /// Not key material: the block is over (or never was a key).
    NotBody,
}

/// Finds `-----BEGIN …PRIVATE KEY…-----` or `-----END …-----` at or after `from`. Returns the
/// marker's start and the end of its closing dashes.
fn find_pem_marker(line: &str, from: usize, opener: &str) -> Option<(usize, usize)> {
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
fn opens_public_block(line: &str) -> bool {
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
fn is_public_body_line(line: &str) -> bool {
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
fn pem_core(line: &str, from: usize, to: usize) -> (usize, usize) {
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
fn is_pem_body(core: &str) -> bool {
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
fn is_pem_header(core: &str) -> bool {
    core.split_once(": ").is_some_and(|(name, _)| {
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    })
}

fn pem_body_line(line: &str) -> BodyLine {
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
fn pem_begin_spans(line: &str, mut pem: PemState, spans: &mut Vec<Span>) -> PemState {
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

// ---------------------------------------------------------------------------------------------
// High-entropy runs.

const F_TOKEN: u8 = 1;
const F_DIGIT: u8 = 2;
const F_LETTER: u8 = 4;
const F_HEXISH: u8 = 8;

/// Character classes for the run scanner: base64 and base64url characters (without `=`, which
/// is only allowed as trailing padding), and whether each is a digit, a letter, or could belong
/// to a hex digest or UUID.
static CLASSES: [u8; 256] = {
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
fn for_each_candidate_run(b: &[u8], mut f: impl FnMut(usize, usize)) {
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
fn candidate_bytes(run: &[u8]) -> bool {
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

fn entropy_spans(line: &str, spans: &mut Vec<Span>) {
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
fn is_path_like(run: &str) -> bool {
    run.split('/')
        .filter(|p| p.len() >= 3 && p.bytes().all(|c| c.is_ascii_alphabetic()))
        .nth(1)
        .is_some()
}

/// Byte ranges of the whitespace/quote-delimited words that contain `://`.
fn url_word_ranges(line: &str) -> Vec<(usize, usize)> {
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

fn is_random_token(line: &str, s: usize, e: usize) -> bool {
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
fn is_public_value(line: &str, s: usize, run: &str) -> bool {
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
fn is_base64_of_prose(run: &str) -> bool {
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
/// (`VERIFICATION`). Identifiers and paths are mostly words (65–98% in samples), while in
/// random base62 text more than 60% is rare (about 2% of 32-character tokens), which is where
/// the threshold sits.
fn word_coverage(run: &str) -> usize {
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
            } else if caps >= 4 {
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

fn shannon_entropy(b: &[u8]) -> f64 {
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

// ---------------------------------------------------------------------------------------------
// Credential-looking assignments.

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'-' | b'.')
}

/// Walks the trigger hits of a line, expands each to the identifier around it, and if that
/// identifier names a credential, parses the value assigned to it.
fn assignment_spans(line: &str, hits: LineHits<'_>, spans: &mut Vec<Span>) {
    let b = line.as_bytes();
    let decl_line = is_declaration_line(line);
    // Nothing before this byte is looked at again: a later hit inside an identifier or value
    // already handled would only repeat work (and could make a long line quadratic).
    let mut skip_until = 0;
    for hit in hits.hits.iter().filter(|h| h.bits & R_ASSIGN != 0) {
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
        if !is_credential_name(name) {
            continue;
        }
        let parsed = parse_assignment(line, s, s + ident.len(), decl_line);
        if let Some(parsed) = parsed {
            skip_until = skip_until.max(parsed.consumed);
            for (vs, ve) in parsed.secret {
                // A publishable key is meant to be shipped to browsers, whatever its name.
                let value = &line[vs..ve];
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

/// What may stand before a `NAME=value` line that was commented out or listed (`// KEY=…`,
/// `# KEY=…`, `-- KEY=…`, `* KEY=…`, `- KEY=…`, `> KEY=…`, `; KEY=…`): the value is as real.
const COMMENT_MARKS: &[char] = &['/', '#', '-', '*', '>', ';', ' ', '\t'];

fn is_declaration_line(line: &str) -> bool {
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
const NOT_A_VALUE_WORDS: &[&str] = &[
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
const CREDENTIAL_WORDS: &[&str] = &[
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
const CREDENTIAL_SUFFIXES: &[&str] = &[
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
const CREDENTIAL_LAST_WORDS: &[&str] = &[
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
const KEY_QUALIFIERS: &[&str] = &[
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
const PUBLIC_KEY_QUALIFIERS: &[&str] = &[
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

fn is_credential_name(name: &str) -> bool {
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
    if (0..n).any(|i| in_sorted(NOT_A_VALUE_WORDS, word(i))) {
        return false;
    }
    let env_style =
        raw.iter().any(u8::is_ascii_uppercase) && !raw.iter().any(u8::is_ascii_lowercase);
    (0..n).any(|i| {
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
        if w == "pat" && env_style && i > 0 {
            return true;
        }
        if w == "key" && i > 0 {
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
fn split_name_words(raw: &[u8], mut f: impl FnMut(usize, usize)) {
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
fn in_sorted(list: &[&str], word: &str) -> bool {
    list.binary_search(&word).is_ok()
}

struct Parsed {
    /// The byte ranges of a secret value: one if the value is a secret, one for each secret
    /// literal piece of an interpolated value (`hunter2-${SUFFIX}`), none otherwise.
    secret: Vec<(usize, usize)>,
    /// Where parsing stopped: the end of the value.
    consumed: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Assign,
    Colon,
    Compare,
}

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && matches!(b[p], b' ' | b'\t') {
        p += 1;
    }
    p
}

/// Parses `name <op> value` for the identifier at `line[s..e]`.
fn parse_assignment(line: &str, s: usize, e: usize, decl_line: bool) -> Option<Parsed> {
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
fn looks_like_code_value(value: &str, next: Option<u8>) -> bool {
    let first = value.as_bytes().first().copied();
    value.contains("::")
        || matches!(
            first,
            Some(b'*' | b'&' | b'!' | b':' | b'@' | b'?' | b'|' | b'\\')
        )
        || (matches!(next, Some(b',' | b';'))
            && value
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$'))
}

/// `config.token`, `process.env.X`, `this.auth` …: a reference, not a literal.
fn looks_like_member_access(value: &str) -> bool {
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
    ident(head)
        && tail
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
}

fn is_auth_scheme(word: &str) -> bool {
    ["bearer", "basic", "token", "digest"]
        .iter()
        .any(|s| word.eq_ignore_ascii_case(s))
}

/// The secret ranges of `line[start..end]`, a literal assigned to a credential name. A value
/// with `${…}` interpolations (`password=hunter2-${SUFFIX}`, `` `pw${n}` ``) is judged piece by
/// piece: the interpolations stay, each literal piece that is a secret on its own goes. A value
/// that is only interpolations (`${PASSWORD}`) has no secret.
fn literal_secrets(
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
fn secret_in_literal(
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

fn is_secret_value(v: &str, env_form: bool) -> bool {
    if v.chars().count() < 4 || is_placeholder(v) || v.contains("://") {
        return false;
    }
    // Paths, including resource names made of words (`projects/my-project/secrets/db/…`).
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
    // A trailing colon makes a label (`"Password:"`), not a password.
    !word_like(v) && !numeric_like(v) && !v.ends_with(':')
}

/// Letters and identifier separators only: a word or an identifier, not a password.
fn word_like(v: &str) -> bool {
    v.bytes()
        .all(|c| c.is_ascii_alphabetic() || matches!(c, b'_' | b'-' | b'.' | b'/'))
}

/// Numbers, versions, dates and times.
fn numeric_like(v: &str) -> bool {
    if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        return !hex.is_empty() && hex.bytes().all(|c| c.is_ascii_hexdigit() || c == b'_');
    }
    v.bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'_' | b':' | b',' | b'-' | b'+'))
}

/// A bearer/basic token: long enough, not a placeholder, not a plain word.
fn token_like(t: &str) -> bool {
    t.len() >= 8 && !is_placeholder(t) && !word_like(t) && !numeric_like(t)
}

/// Values that stand for a secret without being one.
fn is_placeholder(v: &str) -> bool {
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
fn is_url_placeholder(pw: &str) -> bool {
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
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Deterministic pseudo-random tokens, so fixtures look like real keys without being any.
    fn token(seed: u64, len: usize, alphabet: &str) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                chars[((x >> 33) % chars.len() as u64) as usize]
            })
            .collect()
    }

    const B62: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const UPPER36: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    fn scrub(text: &str) -> Scrubbed<'_> {
        static PLAIN: LazyLock<Scrubber> = LazyLock::new(|| Scrubber::new(&[]));
        PLAIN.scrub(text)
    }

    /// Checks one positive case: `secret` is gone, a marker is present, `kind` was reported,
    /// the line count is unchanged and scrubbing again changes nothing.
    fn assert_caught(sc: &Scrubber, text: &str, secret: &str, kind: SecretKind) {
        let out = sc.scrub(text);
        assert!(
            !out.text.contains(secret),
            "secret survived in {text:?} -> {:?}",
            out.text
        );
        assert!(out.text.contains(REDACTED), "no marker in {:?}", out.text);
        assert!(
            out.findings.iter().any(|f| f.kind == kind),
            "expected {kind:?} for {text:?}, got {:?}",
            out.findings
        );
        assert_eq!(out.text.matches('\n').count(), text.matches('\n').count());
        let again = sc.scrub(&out.text);
        assert_eq!(again.text, out.text, "not idempotent for {text:?}");
        assert!(
            again.findings.is_empty(),
            "second pass found {:?}",
            again.findings
        );
        assert!(sc.contains_secret(text));
        assert!(!sc.contains_secret(&out.text));
    }

    fn assert_clean(text: &str) {
        let out = scrub(text);
        assert!(
            out.findings.is_empty(),
            "false positive in {text:?}: {:?} -> {:?}",
            out.findings,
            out.text
        );
        assert!(matches!(out.text, Cow::Borrowed(_)));
        assert_eq!(out.text, text);
    }

    #[test]
    fn passwords_handed_to_a_command_are_redacted_and_prompts_and_variables_stay() {
        let sc = Scrubber::new(&[]);
        for (line, pw) in [
            (
                "curl -u deploy:Maple!4824K https://ci.example.net",
                "Maple!4824K",
            ),
            ("mysql -h db -u root -p'Trout%3992K' shop", "Trout%3992K"),
            (
                "mysqldump -uroot -pRiver@2702x --all-databases",
                "River@2702x",
            ),
            ("sshpass -p Harbor*8352z ssh pi@10.0.0.2", "Harbor*8352z"),
            (
                "docker login -u ada -p Ember@814K registry.example.net",
                "Ember@814K",
            ),
            ("redis-cli -h cache -a Willow#5775z ping", "Willow#5775z"),
            (
                "sqlcmd -S db01 -U sa -P Quartz@8558Q -Q \"SELECT 1\"",
                "Quartz@8558Q",
            ),
            (
                "htpasswd -b -c /etc/nginx/.htpasswd admin Falcon*6712Q",
                "Falcon*6712Q",
            ),
            (
                "machine api.heroku.com login ada password Copper*3470x",
                "Copper*3470x",
            ),
            ("db1.internal:5432:shop:app:Lumber@4297z", "Lumber@4297z"),
        ] {
            assert_caught(&sc, line, pw, SecretKind::Assignment);
        }
        for line in [
            "mysql -u root -p shop",
            "curl -u \"$USER:$PASS\" https://ci.example.net",
            "docker login -u ada --password-stdin < token.txt",
            "redis-cli -a \"$REDIS_PASSWORD\" ping",
            "*:*:*:app:*",
            "# hostname:port:database:username:password",
        ] {
            assert_clean(line);
        }
    }

    #[test]
    fn a_seed_phrase_after_its_name_is_redacted_and_prose_about_one_stays() {
        let sc = Scrubber::new(&[]);
        let phrase =
            "awake arrive alarm adjust almost atom attract action accident absurd annual author";
        for line in [
            format!("MNEMONIC=\"{phrase}\""),
            format!("seed phrase: {phrase}"),
            format!("\"mnemonic\": \"{phrase}\""),
        ] {
            assert_caught(&sc, &line, phrase, SecretKind::Assignment);
        }
        assert_clean("the seed phrase is twelve words you write on paper");
        assert_clean("remember: never paste your mnemonic into a chat");
    }

    #[test]
    fn a_credential_assignment_commented_out_or_listed_is_still_redacted() {
        let sc = Scrubber::new(&[]);
        let key = "4f1aa23a3f867080333b7a122ab46eafccb742c83f721f79259fb28bec306717";
        assert_caught(
            &sc,
            &format!("// PRIVATE_KEY=0x{key}"),
            key,
            SecretKind::Assignment,
        );
        assert_caught(
            &sc,
            &format!("  * PRIVATE_KEY={key}"),
            key,
            SecretKind::Assignment,
        );
        assert_caught(
            &sc,
            "  \"private_key_id\": \"429a223680ed5c7154df527d8d9a23ad224f855e\",",
            "429a223680ed5c7154df527d8d9a23ad224f855e",
            SecretKind::Assignment,
        );
        assert_clean("# PRIVATE_KEY is read from the vault at start");
        assert_clean("  \"client_id\": \"117383048473882922912\",");
    }

    #[test]
    fn vendor_prefixed_tokens_and_key_files_beyond_pem_are_redacted() {
        let sc = Scrubber::new(&[]);
        for token in [
            "dop_v1_cb3e4232ace6285b9353efe2f26c8240163ace7854beb957462c5299b4f33916",
            "glptt-166afc5819331d120a6995e3440809f0253a4f66",
            "AGE-SECRET-KEY-1FEULS9R4UUZGSZVXP5RX8L6S37YKWAJMWHMQU70WFLXF9Y34QTA85HFZVK",
            "A3-ROE4IY-FNXG7O-COMUO-DFY7J-CBF53-N20Y7-I059Q",
            "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",
            "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",
            "sk-f2c993cb59bbe5364ebd5b31aeb3eafc",
            "SKBDa0f727679D05CCaC257d9f68DC9ca7",
        ] {
            let line = format!("value: \"{token}\"");
            let out = sc.scrub(&line);
            assert!(!out.text.contains(token), "{token} -> {}", out.text);
        }
    }

    #[test]
    fn public_keys_certificates_and_publishable_keys_stay() {
        for text in [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIrkn/THW241x/ZukfOc7JIpK1ijC3fdPhQWM/uq/YJXI ada@laptop",
            "-----BEGIN CERTIFICATE-----\nMIIDE8cociVYlrDl96D4jfsXMea1+XUYg25SiUUvobUe81NZWgBLoamNJ6PxbKsR\n3eJf1z/7N3Xxv3Rsw/s1ylXkItrigvAQHCz8ImcDIy00KPrLzpNBfMnYflYV3abc\n-----END CERTIFICATE-----",
            "STRIPE_PUBLISHABLE_KEY=pk_live_v4YWrlMMDaQ7NHV1JWvb8qugU1uh4WsFP5lRqmvhb9duBYYo",
            "mapboxgl.accessToken = 'pk.eyJ1IjoiYWRhfEXV6eBx7r72IzkJGkriIn0.1d5VZDDW6CwnSSB_T04_kV';",
            "age1lhtag07a4u6n5sln67hltrrnjck253ls0nrtga406udls064hv2r3wfl6y",
        ] {
            assert_clean(text);
        }
        // A certificate's block ends at its END marker: a token after it is caught again, and a
        // token with a shape of its own is caught inside it too.
        let sc = Scrubber::new(&[]);
        let token = "ghp_h1cuRY55RKSHm09vp4vB98iCt8i5QDJSb0RK";
        let text = format!(
            "-----BEGIN CERTIFICATE-----\nMIIDE8cociVYlrDl96D4jfsXMea1+XUYg25SiUUvobUe81NZWgBLoamNJ6PxbKsR\n-----END CERTIFICATE-----\nGITHUB_TOKEN={token}"
        );
        assert!(!sc.scrub(&text).text.contains(token));
        let inside = "-----BEGIN CERTIFICATE-----\nAKIA1B5F7PVVO9SHC9Y2\n-----END CERTIFICATE-----";
        assert!(!sc.scrub(inside).text.contains("AKIA1B5F7PVVO9SHC9Y2"));
    }

    #[test]
    fn brief_examples_exactly() {
        let sc = Scrubber::new(&[]);
        let cases = [
            (
                "const password = \"hunter22\"",
                "const password = \"[redacted]\"",
            ),
            ("PASSWORD=abc123xyz", "PASSWORD=[redacted]"),
            ("https://user:pw@host", "https://user:[redacted]@host"),
            (
                "fetch(url, { headers: { Authorization: `Bearer ${token}` } })",
                "fetch(url, { headers: { Authorization: `Bearer ${token}` } })",
            ),
            (
                "  \"api_key\": \"q9w8e7r6t5y4\",",
                "  \"api_key\": \"[redacted]\",",
            ),
            (
                "const password: string = 'hunter22';",
                "const password: string = '[redacted]';",
            ),
            (
                "GET /v1/items?token=abc123def456&page=2",
                "GET /v1/items?token=[redacted]&page=2",
            ),
            (
                "Authorization: Bearer 8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c",
                "Authorization: Bearer [redacted]",
            ),
            (
                "PASSWORD=hunter 22 # set by create-bot",
                "PASSWORD=[redacted] # set by create-bot",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(sc.scrub(input).text, expected, "for {input:?}");
        }
    }

    #[test]
    fn pem_blocks() {
        let sc = Scrubber::new(&[]);
        let body1 = token(1, 64, B64);
        let body2 = token(2, 64, B64);
        let body3 = format!("{}==", token(3, 22, B64));
        let text = format!(
            "const key = `\n-----BEGIN RSA PRIVATE KEY-----\n{body1}\n{body2}\n\n{body3}\n-----END RSA PRIVATE KEY-----`;\nconsole.log('done');\n"
        );
        let out = sc.scrub(&text);
        assert_eq!(
            out.text,
            "const key = `\n-----BEGIN RSA PRIVATE KEY-----\n[redacted]\n[redacted]\n\n[redacted]\n-----END RSA PRIVATE KEY-----`;\nconsole.log('done');\n"
        );
        assert_eq!(
            out.findings,
            vec![Finding {
                line: 3,
                kind: SecretKind::PrivateKey
            }]
        );
        assert!(sc.scrub(&out.text).findings.is_empty());

        // One line of JSON with `\n` escapes, as in a service-account file.
        let json = format!(
            "  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body1}\\n{body2}\\n-----END PRIVATE KEY-----\\n\","
        );
        let out = sc.scrub(&json);
        assert_eq!(
            out.text,
            "  \"private_key\": \"-----BEGIN PRIVATE KEY-----\\n[redacted]\\n-----END PRIVATE KEY-----\\n\","
        );
        assert!(sc.scrub(&out.text).findings.is_empty());

        // Encrypted keys carry headers; JS concatenation wraps each line in quotes.
        let text = format!(
            "const k =\n  \"-----BEGIN ENCRYPTED PRIVATE KEY-----\\n\" +\n  \"Proc-Type: 4,ENCRYPTED\\n\" +\n  \"{body1}\\n\" +\n  \"-----END ENCRYPTED PRIVATE KEY-----\";\n"
        );
        let out = sc.scrub(&text);
        assert_eq!(
            out.text,
            "const k =\n  \"-----BEGIN ENCRYPTED PRIVATE KEY-----\\n\" +\n  \"[redacted]\\n\" +\n  \"[redacted]\\n\" +\n  \"-----END ENCRYPTED PRIVATE KEY-----\";\n"
        );
        assert_eq!(out.findings.len(), 1);
        assert!(sc.scrub(&out.text).findings.is_empty());

        // An unterminated block (truncated file) is redacted to the end of its base64.
        let text = format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{body1}\n{body2}");
        let out = sc.scrub(&text);
        assert_eq!(
            out.text,
            "-----BEGIN OPENSSH PRIVATE KEY-----\n[redacted]\n[redacted]"
        );

        // A marker quoted in prose does not swallow the lines after it.
        let text = "// the file starts with -----BEGIN PRIVATE KEY----- and is PEM\nconst x = 1;\n";
        assert_clean(text);
        // Public material is not secret.
        assert_clean(&format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            token(9, 20, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        ));
    }

    #[test]
    fn positive_cases() {
        use SecretKind::*;
        let sc = Scrubber::new(&[]);
        let gh = format!("ghp_{}", token(10, 36, B62));
        let gho = format!("gho_{}", token(11, 36, B62));
        let pat = format!(
            "github_pat_11{}_{}",
            token(12, 20, UPPER36),
            token(13, 59, B62)
        );
        let aws = format!("AKIA{}", token(14, 16, UPPER36));
        let asia = format!("ASIA{}", token(15, 16, UPPER36));
        let aws_secret = token(16, 40, B64);
        let slack = format!("xoxb-2837465019-1928374650192-{}", token(17, 24, B62));
        let slack_user = format!("xoxp-{}", token(18, 40, B62));
        let hook = format!(
            "https://hooks.slack.com/services/T0A1B2C3D/B0E1F2G3H/{}",
            token(19, 24, B62)
        );
        let discord = format!(
            "https://discord.com/api/webhooks/123456789012345678/{}",
            token(20, 68, B64URL)
        );
        let openai = format!("sk-{}", token(21, 48, B62));
        let openai_proj = format!("sk-proj-{}", token(22, 100, B64URL));
        let anthropic = format!("sk-ant-api03-{}AA", token(23, 93, B64URL));
        let stripe = format!("sk_live_{}", token(24, 24, B62));
        let stripe_rk = format!("rk_live_{}", token(25, 24, B62));
        let stripe_test = format!("sk_test_{}", token(26, 24, B62));
        let google = format!("AIza{}", token(27, 35, B64URL));
        let npm = format!("npm_{}", token(28, 36, B62));
        let hf = format!("hf_{}", token(29, 34, LETTERS));
        let sendgrid = format!("SG.{}.{}", token(30, 22, B64URL), token(31, 43, B64URL));
        let gitlab = format!("glpat-{}", token(32, 20, B64URL));
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
        let entropy = token(33, 40, B62);
        let entropy64 = format!("{}==", token(34, 42, B64));
        let bearer = token(35, 40, B64URL);

        let cases: Vec<(String, String, SecretKind)> = vec![
            (
                "const password = \"hunter22\";".into(),
                "hunter22".into(),
                Assignment,
            ),
            ("PASSWORD=abc123xyz".into(), "abc123xyz".into(), Assignment),
            ("https://user:pw@host".into(), ":pw@".into(), UrlPassword),
            (
                "let apiKey = 'a8f9Kd02mZx';".into(),
                "a8f9Kd02mZx".into(),
                Assignment,
            ),
            (
                "  \"api_key\": \"q9w8e7r6t5y4\",".into(),
                "q9w8e7r6t5y4".into(),
                Assignment,
            ),
            (
                format!("export GITHUB_TOKEN=\"{gh}\""),
                gh.clone(),
                GithubToken,
            ),
            (format!("token: {gho}"), gho.clone(), GithubToken),
            (
                format!("git clone https://{pat}@github.com/o/r.git"),
                pat.clone(),
                GithubToken,
            ),
            (format!("aws_access_key_id = {aws}"), aws.clone(), AwsKey),
            (
                format!("const creds = {{ accessKeyId: '{asia}' }}"),
                asia.clone(),
                AwsKey,
            ),
            (
                format!("aws_secret_access_key = {aws_secret}"),
                aws_secret.clone(),
                Assignment,
            ),
            (
                format!("SLACK_BOT_TOKEN={slack}"),
                slack.clone(),
                SlackToken,
            ),
            (
                format!("await fetch('https://slack.com/api', {{ token: '{slack_user}' }})"),
                slack_user.clone(),
                SlackToken,
            ),
            (
                format!("const hook = \"{hook}\";"),
                hook[34..].to_owned(),
                WebhookUrl,
            ),
            (
                format!("post({discord})"),
                discord[52..].to_owned(),
                WebhookUrl,
            ),
            (
                format!("OPENAI_API_KEY={openai}"),
                openai.clone(),
                OpenAiKey,
            ),
            (
                format!("new OpenAI({{ apiKey: \"{openai_proj}\" }})"),
                openai_proj.clone(),
                OpenAiKey,
            ),
            (
                format!("ANTHROPIC_API_KEY={anthropic}"),
                anthropic.clone(),
                AnthropicKey,
            ),
            (
                format!("stripe = Stripe('{stripe}')"),
                stripe.clone(),
                StripeKey,
            ),
            (
                format!("restricted: {stripe_rk}"),
                stripe_rk.clone(),
                StripeKey,
            ),
            (
                format!("const s = new Stripe(\"{stripe_test}\");"),
                stripe_test.clone(),
                StripeKey,
            ),
            (
                format!("https://maps.googleapis.com/maps/api/js?key={google}"),
                google.clone(),
                GoogleApiKey,
            ),
            (
                format!("//registry.npmjs.org/:_authToken={npm}"),
                npm.clone(),
                NpmToken,
            ),
            (format!("HF_TOKEN={hf}"), hf.clone(), HuggingFaceToken),
            (
                format!("sgMail.setApiKey('{sendgrid}');"),
                sendgrid.clone(),
                SendGridKey,
            ),
            (
                format!("git remote add origin https://oauth2:{gitlab}@gitlab.com/x/y.git"),
                gitlab.clone(),
                GitlabToken,
            ),
            (format!("const session = '{jwt}';"), jwt.into(), Jwt),
            (
                format!("curl -H 'Authorization: Bearer {bearer}' https://api.x.io"),
                bearer.clone(),
                BearerToken,
            ),
            (
                "headers: { Authorization: \"Basic dXNlcjpwYXNzd29yZDEyMw==\" }".into(),
                "dXNlcjpwYXNzd29yZDEyMw==".into(),
                BasicAuth,
            ),
            (
                "DATABASE_URL=postgres://admin:s3cr3tP4ss@db.internal:5432/app".into(),
                "s3cr3tP4ss".into(),
                UrlPassword,
            ),
            (
                "const r = createClient({ url: 'redis://:Zx81kq9@localhost:6379' });".into(),
                "Zx81kq9".into(),
                UrlPassword,
            ),
            (
                "client_secret: \"Q2xpZW50U2VjcmV0MTIz\"".into(),
                "Q2xpZW50U2VjcmV0MTIz".into(),
                Assignment,
            ),
            ("DB_PASS=hunter".into(), "hunter".into(), Assignment),
            (
                "bun bots/woody1/login.ts --password=hunter22".into(),
                "hunter22".into(),
                Assignment,
            ),
            (
                "x-api-key: 9a8b7c6d5e4f".into(),
                "9a8b7c6d5e4f".into(),
                Assignment,
            ),
            (
                "const password: string = \"hunter22\";".into(),
                "hunter22".into(),
                Assignment,
            ),
            (
                "login(user=\"bob\", password='p@ssw0rd!')".into(),
                "p@ssw0rd!".into(),
                Assignment,
            ),
            (
                "if (password === \"letmein1\") {".into(),
                "letmein1".into(),
                Assignment,
            ),
            (
                "secret := \"g0-s3cr3t-value\"".into(),
                "g0-s3cr3t-value".into(),
                Assignment,
            ),
            (
                "    'password' => 'hunter22',".into(),
                "hunter22".into(),
                Assignment,
            ),
            (
                "SESSION_SECRET=keyboardcat".into(),
                "keyboardcat".into(),
                Assignment,
            ),
            (
                format!("const blob = \"{entropy}\";"),
                entropy.clone(),
                HighEntropy,
            ),
            (
                format!("seed {entropy64} end"),
                entropy64.clone(),
                HighEntropy,
            ),
            (
                "OWNER_KEY=mr_live_8s7d6f5g4h3j".into(),
                "mr_live_8s7d6f5g4h3j".into(),
                Assignment,
            ),
            (
                "dbPassword: \"Sup3rS3cret!\"".into(),
                "Sup3rS3cret!".into(),
                Assignment,
            ),
            (
                "auth: { user: 'me', pass: 'n0tT3lling' }".into(),
                "n0tT3lling".into(),
                Assignment,
            ),
            (
                "  \"refresh_token\": \"1//0gAbCdEf-GhIjKl9\",".into(),
                "1//0gAbCdEf-GhIjKl9".into(),
                Assignment,
            ),
            ("password: hunter22".into(), "hunter22".into(), Assignment),
            (
                "Using token: abc123def456 for the bank run".into(),
                "abc123def456".into(),
                Assignment,
            ),
            (
                "\"Authorization\": \"Token 9f8e7d6c5b4a3\"".into(),
                "9f8e7d6c5b4a3".into(),
                Assignment,
            ),
            (
                "export MINDRUNE_OWNER_KEY='own3r-k3y-778'".into(),
                "own3r-k3y-778".into(),
                Assignment,
            ),
            (
                "app.use(session({ secret: 's3ss10n-s3cr3t' }))".into(),
                "s3ss10n-s3cr3t".into(),
                Assignment,
            ),
            ("db.password=hunter22".into(), "hunter22".into(), Assignment),
            (
                "self.api_token = r\"tok_9x8y7z\"".into(),
                "tok_9x8y7z".into(),
                Assignment,
            ),
            (
                "PRIVATE_KEY=0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
                    .into(),
                "4c0883a69102937d".into(),
                Assignment,
            ),
        ];
        assert!(cases.len() >= 40, "only {} positive cases", cases.len());
        for (text, secret, kind) in &cases {
            assert_caught(&sc, text, secret, *kind);
        }
    }

    #[test]
    fn known_secrets() {
        let sc = Scrubber::new(&[
            "Tr0ub4dor&3",
            "ab",
            "",
            "dact",
            "  0wn3r-k3y  ",
            "pa\"ss\\word9",
            "p@ss w0rd",
        ]);
        assert_caught(
            &sc,
            "console.log(\"logging in with Tr0ub4dor&3\")",
            "Tr0ub4dor&3",
            SecretKind::KnownSecret,
        );
        // Split across the line by other text, repeated, glued to other text.
        let out = sc.scrub("Tr0ub4dor&3 and 0wn3r-k3y then xTr0ub4dor&3Tr0ub4dor&3y 0wn3r-k3y");
        assert_eq!(
            out.text,
            "[redacted] and [redacted] then x[redacted]y [redacted]"
        );
        assert_eq!(
            out.findings.len(),
            4,
            "touching redactions merge: {:?}",
            out.findings
        );
        // JSON-escaped and percent-encoded spellings.
        assert_caught(
            &sc,
            r#"{"pw": "pa\"ss\\word9"}"#,
            r#"pa\"ss\\word9"#,
            SecretKind::KnownSecret,
        );
        assert_caught(
            &sc,
            "https://me:p%40ss%20w0rd@host/",
            "p%40ss%20w0rd",
            SecretKind::KnownSecret,
        );
        // Too short, empty, or inside the marker: ignored.
        assert!(sc.scrub("ab cd").findings.is_empty());
        assert!(sc.scrub("redacted dact").findings.is_empty());
        // Line numbers are 1-based and follow CRLF text.
        let out = sc.scrub("a\r\nb\r\nTr0ub4dor&3\r\n");
        assert_eq!(out.text, "a\r\nb\r\n[redacted]\r\n");
        assert_eq!(
            out.findings,
            vec![Finding {
                line: 3,
                kind: SecretKind::KnownSecret
            }]
        );
        // A multi-line value is split into lines.
        let sc = Scrubber::new(&["line0ne\nl1ne-two"]);
        assert_eq!(
            sc.scrub("x line0ne y l1ne-two").text,
            "x [redacted] y [redacted]"
        );
    }

    #[test]
    fn plain_known_matcher_behaves_like_the_automaton() {
        // The fallback is never built in practice; exercise it directly.
        let sc = Scrubber {
            known: Some(KnownMatcher::Plain(vec![
                "Tr0ub4dor&3".to_owned(),
                "Tr0ub4dor".to_owned(),
                "aaaa".to_owned(),
            ])),
        };
        let out = sc.scrub("x Tr0ub4dor&3 y aaaaaaa Tr0ub4dor z\n");
        assert_eq!(out.text, "x [redacted] y [redacted]aaa [redacted] z\n");
        assert!(sc.scrub(&out.text).findings.is_empty());
    }

    #[test]
    fn known_secrets_use_the_packed_searcher() {
        // The automaton is only the fallback; on a CPU the packed searcher supports (every
        // x86_64 with SSSE3) a few known secrets must get the fast path.
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("ssse3") {
            let sc = Scrubber::new(&["benchpass123", "mrk_0123456789abcdef"]);
            assert!(matches!(sc.known, Some(KnownMatcher::Packed(_))));
        }
        // Past the packed searcher's pattern limit the automaton takes over.
        let many: Vec<String> = (0..200).map(|i| format!("secret-{i:04}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let sc = Scrubber::new(&refs);
        assert!(matches!(sc.known, Some(KnownMatcher::Automaton(_))));
        assert_eq!(
            sc.scrub("a secret-0199 b secret-0007c").text,
            "a [redacted] b [redacted]c"
        );
    }

    #[test]
    fn negative_cases() {
        let cases = [
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "const id = \"123e4567-e89b-12d3-a456-426614174000\";",
            "  password: process.env.PASSWORD,",
            "const tokenCount = 5;",
            "// set your API key in bot.env",
            "await bot.walkTo(3222, 3218);",
            "const coords = [[3222, 3218], [3200, 3201], [3185, 3449]];",
            "img.src = \"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\";",
            "const tile = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAA1AAAAAAAAAA==';",
            "The passage north of the keyboard shop leads to Draynor.",
            "Tokens of Thanks",
            "const passwordField = document.querySelector('#password');",
            "  password: \"\",",
            "PASSWORD={{PASSWORD}}",
            "token: ${TOKEN}",
            "api_key: \"<your-api-key>\"",
            "\"password\": \"changeme\"",
            "password: \"***\"",
            "secret: \"xxxxxxxx\"",
            "PASSWORD=[redacted]",
            "const token = await getToken();",
            "const authorName = \"Bob\";",
            "const res = await fetch(url, { credentials: 'include' });",
            "max_tokens: 4096",
            "const sortKey = \"name\";",
            "integrity: \"sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==\"",
            "const inventoryPanelV2ItemSlotRendererComponent3 = null;",
            "get_inventory_item_count_for_slot_number_2(bot, 'Logs');",
            "import { chop } from '/home/agent/bots/woody1/scripts/chop_trees_v2/lumbridge_east.ts';",
            "see https://cdn.discordapp.com/attachments/1234567890123/9876543210987/image2x.png",
            "const api = 'http://localhost:8080/api';",
            "git@github.com:MaxBittker/rs-sdk.git",
            "\"Bearer authentication is required\"",
            "headers.Authorization = `Bearer ${token}`;",
            "const password = getPassword();",
            "if (!token) throw new Error(\"token missing\");",
            "pip install sk-learn-tutorial-notes-and-more",
            "task-abcdefghijklmnopqrstu1234567",
            "KEYBOARD_LAYOUT=qwerty",
            "  auth: true,",
            "\"version\": \"1.2.3\"",
            "const DIALOG_KEY = 'Escape';",
            "tokenizer = Tokenizer()",
            "password_min_length = 12",
            "Object.keys(state).forEach(key => console.log(key));",
            "// passwords are stored in bot.env, never in scripts",
            "> I can't reach that!",
            "const bankKey = 'Bank booth';",
            "etag d41d8cd98f00b204e9800998ecf8427e",
            "PWD=/home/agent/bots",
            "export const SECRET_NAME = \"mindrune-owner\";",
            "https://user@host.com/path",
            "\"auth\": \"none\",",
            "const pw = prompt(\"Password?\");",
            "password = input(\"Password: \")",
            "const { token } = await res.json();",
            "Secret: Tokens of Thanks",
            "const passwordRequired = true;",
            "let keys = Object.keys(bank.items);",
            "Pos (3222, 3218) lvl 0 | HP 10/10 | fighting Cow",
            "XP: Woodcutting +1,250, Firemaking +40",
            "github.com/MaxBittker/rs-sdk/commit/1ea0edff1f14ec2d835af9ed4c9add269d61cba2",
            "const AUTH_HEADER = 'x-mindrune-auth';",
            "user.password = hashed;",
            "\"checksum\": \"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"",
            "const WALK_PATH_LUMBRIDGE_TO_DRAYNOR_VIA_FARM_ROAD_V2 = [];",
            "password: string;",
            "  token?: string | null;",
            "setToken(token: string): void {",
            "    pub paren_token: token::Paren,",
            "    pwd: *mut passwd,",
            "    pub token_start: __u32,",
            "  secret: Uint8Array;",
            "pub const IFLA_INET6_TOKEN: _bindgen_ty_7 = _bindgen_ty_7::IFLA_INET6_TOKEN;",
            "pub const SCM_CREDS: c_int = 0x03;",
            "  xToken: ::core::option::Option<unsafe extern \"C\" fn()>,",
            "password: *default_password",
            "        \"testdata/deserialize_sparse_crash-a1b839d899ced76d5d7d0f78f9edb7a421505838\",",
            "  label: \"Password:\",",
            "password: \"Password:\"",
            "  \"$ref\": \"#/definitions/EC2TagSetListObject\"",
            "  \"path\": \"/properties/DataLakeS3Uri/minLength\",",
            "    \"TR31_V1_IBM3624_PIN_VERIFICATION_KEY\",",
            "  \"SpotFleetRequestId\": \"sfr-73fbd2ce-aa30-494c-8788-1cee4EXAMPLE\",",
            "  --secret=projects/my-project/secrets/my-secret/versions/1 \\",
            "  name: organizations/256/gcpUserAccessBindings/b3-BhcX_Ud5N",
            "const HTTPServerConfigurationForLumbridge2 = {};",
        ];
        assert!(cases.len() >= 40, "only {} negative cases", cases.len());
        for text in cases {
            assert_clean(text);
        }
    }

    #[test]
    fn entropy_rule_catches_random_tokens() {
        let sc = Scrubber::new(&[]);
        for (alphabet, len) in [(B62, 32), (B62, 40), (B64, 40), (B64URL, 64)] {
            let caught = (0..500)
                .filter(|&i| {
                    let t = token(1000 + i, len, alphabet);
                    sc.contains_secret(&format!("value = {t}\n"))
                })
                .count();
            assert!(
                caught >= 475,
                "{caught}/500 caught for len {len} of {alphabet}"
            );
        }
        // Hex never counts by shape alone, whatever its length.
        for i in 0..100 {
            let hex = token(i, 64, "0123456789abcdef");
            assert!(!sc.contains_secret(&format!("digest {hex}")));
        }
    }

    #[test]
    fn escapes_stay_outside_redactions() {
        let random = token(41, 36, B62);
        for escape in ["\\n", "\\r", "\\t", "\\xff", "\\u00e9"] {
            let text = format!("const INPUT = \"{escape}{random}\";");
            assert_eq!(
                scrub(&text).text,
                format!("const INPUT = \"{escape}[redacted]\";")
            );
        }
    }

    #[test]
    fn long_lines_with_many_candidates_stay_linear() {
        // One 700 kB line holding 20,000 tokens and credential names. A quadratic step (say, a
        // per-token look back over the whole line) would make this take minutes in a debug
        // build; the assertions only check the result.
        let mut line = String::new();
        for i in 0..10_000 {
            line.push_str(&token(i, 32, B62));
            line.push_str(" token=");
            line.push_str(&format!("abc{i}def "));
        }
        let text = format!("{line}\nnext line\n");
        let out = scrub(&text);
        assert_eq!(out.text.matches('\n').count(), 2);
        assert!(
            out.findings.len() >= 19_000,
            "{} findings",
            out.findings.len()
        );
        assert!(out.text.ends_with("\nnext line\n"));
        assert!(scrub(&out.text).findings.is_empty());
    }

    #[test]
    fn merged_overlaps_keep_the_most_specific_kind() {
        let gh = format!("ghp_{}", token(40, 36, B62));
        let text = format!("token = \"{gh}\"");
        let out = scrub(&text);
        assert_eq!(out.text, "token = \"[redacted]\"");
        assert_eq!(
            out.findings,
            vec![Finding {
                line: 1,
                kind: SecretKind::GithubToken
            }]
        );
    }

    #[test]
    fn placeholders_in_shapes() {
        assert_clean("aws_access_key_id = AKIAIOSFODNN7EXAMPLE");
        assert_clean("GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
        assert_clean("OPENAI_API_KEY=sk-...");
        assert_clean("https://user:${PASSWORD}@host");
        assert_clean("https://user:[redacted]@host");
        assert_clean("postgres://user:password@localhost/db");
    }

    #[test]
    fn bot_env() {
        let env = "BOT_USERNAME=woody1\nPASSWORD=k2j3h4g5f6d7\nSERVER=rs-sdk-demo.fly.dev\n\
                   SHOW_CHAT=false\n# OWNER_KEY=commented\nexport OWNER_KEY=\"own3r\"\n\
                   GH_TOKEN='ghp_abc'\nCLIENT_SECRET=\nTEMPLATE_PASSWORD={{PASSWORD}}\n\
                   SSH_KEY=k2j3h4g5f6d7\nnot a line\r\nAPI_PWD=x1\r\n";
        assert_eq!(
            secrets_in_bot_env(env),
            vec!["k2j3h4g5f6d7", "own3r", "ghp_abc", "x1"]
        );
        assert!(secrets_in_bot_env("").is_empty());
        let from_env = secrets_in_bot_env(env);
        let refs: Vec<&str> = from_env.iter().map(String::as_str).collect();
        let sc = Scrubber::new(&refs);
        let out = sc.scrub("await login('woody1', 'k2j3h4g5f6d7'); // own3r");
        assert_eq!(
            out.text,
            "await login('woody1', '[redacted]'); // [redacted]"
        );
    }

    #[test]
    fn word_lists_are_sorted_for_binary_search() {
        for list in [
            NOT_A_VALUE_WORDS,
            CREDENTIAL_WORDS,
            CREDENTIAL_LAST_WORDS,
            KEY_QUALIFIERS,
            PUBLIC_KEY_QUALIFIERS,
        ] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "unsorted: {list:?}");
        }
    }

    #[test]
    fn names() {
        for yes in [
            "password",
            "PASSWORD",
            "dbPassword",
            "db_password",
            "passwd",
            "pwd",
            "DB_PASS",
            "pass",
            "secret",
            "clientSecret",
            "CLIENT_SECRET",
            "token",
            "accessToken",
            "authToken",
            "GITHUB_TOKEN",
            "apiKey",
            "api_key",
            "API_KEY",
            "x-api-key",
            "APIKey",
            "accessKey",
            "privateKey",
            "private_key",
            "OWNER_KEY",
            "credentials",
            "creds",
            "auth",
            "basicAuth",
            "oauth",
            "Authorization",
            "passphrase",
            "--password",
            "aws_secret_access_key",
            "apikey",
            "SSH_KEY",
            "secretKey",
        ] {
            assert!(is_credential_name(yes), "{yes} should be a credential name");
        }
        for no in [
            "passage",
            "bypass",
            "compass",
            "keyboard",
            "monkey",
            "key",
            "KEY",
            "keys",
            "author",
            "authority",
            "authorName",
            "tokenCount",
            "maxTokens",
            "tokens",
            "tokenizer",
            "passwordField",
            "secretName",
            "authUrl",
            "sortKey",
            "primaryKey",
            "PUBLIC_KEY",
            "publicKey",
            "passThrough",
            "secretary",
            "token_type",
            "authMode",
            "cwd",
            "access_key_id",
            "",
        ] {
            assert!(
                !is_credential_name(no),
                "{no} should not be a credential name"
            );
        }
    }

    #[test]
    fn five_megabytes_of_script_text() {
        // A sanity check that a realistic 5 MB corpus goes through and every planted secret
        // goes; speed is measured by the benchmarks, not here.
        let sc = Scrubber::new(&["k2j3h4g5f6d7"]);
        let chunk = format!(
            "import {{ runScript }} from '../../sdk/runner';\n\
             // Chop trees east of Lumbridge and burn the logs.\n\
             await runScript(async ({{ bot, sdk }}) => {{\n\
             \x20   const start = sdk.getState()?.player;\n\
             \x20   for (let i = 0; i < 20; i++) {{\n\
             \x20       const tree = sdk.findNearbyLoc(/^Tree$/);\n\
             \x20       if (!tree) {{ await bot.walkTo(3222, 3218); continue; }}\n\
             \x20       const r = await bot.chopTree(tree);\n\
             \x20       console.log(`chop ${{i}}: ${{r.message}} (xp ${{r.xpGained ?? 0}})`);\n\
             \x20       const keys = Object.keys(sdk.getState()?.inventory ?? {{}});\n\
             \x20   }}\n\
             \x20   const password = \"k2j3h4g5f6d7\"; const apiKey = 'a8f9Kd02mZx';\n\
             }}, {{ timeout: 60_000 }});\n\
             // sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n\
             // token {}\n",
            token(77, 40, B62)
        );
        let reps = 5 * 1024 * 1024 / chunk.len() + 1;
        let text = chunk.repeat(reps);
        let out = sc.scrub(&text);
        assert!(!out.text.contains("k2j3h4g5f6d7"));
        assert!(!out.text.contains("a8f9Kd02mZx"));
        assert_eq!(out.findings.len(), reps * 3);
        assert_eq!(out.text.matches('\n').count(), text.matches('\n').count());
    }

    fn fragment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("password = ".to_owned()),
            Just("PASSWORD=".to_owned()),
            Just("\"api_key\": ".to_owned()),
            Just("token: ".to_owned()),
            Just("Authorization: Bearer ".to_owned()),
            Just("Authorization: Basic ".to_owned()),
            Just("https://user:".to_owned()),
            Just("@host".to_owned()),
            Just("-----BEGIN PRIVATE KEY-----".to_owned()),
            Just("-----END PRIVATE KEY-----".to_owned()),
            Just(REDACTED.to_owned()),
            Just("[".to_owned()),
            Just("]".to_owned()),
            Just("ghp_".to_owned()),
            Just("sk-".to_owned()),
            Just("AKIA".to_owned()),
            Just("eyJ".to_owned()),
            Just("sha256:".to_owned()),
            Just("\\n".to_owned()),
            prop_oneof![
                Just("\n"),
                Just("\r\n"),
                Just(" "),
                Just("\""),
                Just("'"),
                Just("`"),
                Just("="),
                Just(":"),
                Just("."),
                Just("${"),
                Just("}"),
                Just(","),
                Just("&"),
                Just("?"),
                Just("#"),
                Just("+"),
                Just("/")
            ]
            .prop_map(str::to_owned),
            "[A-Za-z0-9+/=_-]{1,48}",
            "[a-z]{1,8}",
            "\\PC{0,6}",
        ]
    }

    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(fragment(), 0..40).prop_map(|v| v.concat())
    }

    /// Known secrets for the property tests: no whitespace (trimming would change them) and not
    /// inside the marker (those are documented as ignored).
    fn known_secret() -> impl Strategy<Value = String> {
        "[A-Za-z0-9!#%&*+=?@^_~\\[\\]:/.-]{4,14}"
            .prop_filter("inside the marker", |s| !REDACTED.contains(s.as_str()))
    }

    proptest! {
        // No regression files: this crate's tests must not write into the source tree.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(512)
        })]

        #[test]
        fn packed_known_matcher_agrees_with_the_automaton(
            needles in proptest::collection::vec("[ab]{1,3}[abc]{3,6}", 1..8),
            hay in "[abc ]{0,300}",
        ) {
            let packed = packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostLongest)
                .builder()
                .extend(&needles)
                .build();
            let automaton = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&needles)
                .expect("small automaton builds");
            if let Some(packed) = packed {
                prop_assert_eq!(
                    KnownMatcher::Packed(packed).spans(&hay),
                    KnownMatcher::Automaton(automaton).spans(&hay)
                );
            }
        }

        #[test]
        fn never_panics(s in any::<String>(), k in any::<String>()) {
            let sc = Scrubber::new(&[k.as_str()]);
            let out = sc.scrub(&s);
            prop_assert_eq!(out.text.matches('\n').count(), s.matches('\n').count());
            let _ = sc.contains_secret(&s);
            let _ = secrets_in_bot_env(&s);
        }

        #[test]
        fn idempotent_and_line_preserving(s in text(), k in known_secret()) {
            let sc = Scrubber::new(&[k.as_str()]);
            let once = sc.scrub(&s);
            prop_assert_eq!(once.text.matches('\n').count(), s.matches('\n').count());
            let twice = sc.scrub(&once.text);
            prop_assert_eq!(&twice.text, &once.text);
            prop_assert!(twice.findings.is_empty(), "second pass found {:?}", twice.findings);
            if once.findings.is_empty() {
                prop_assert!(matches!(once.text, Cow::Borrowed(_)));
            }
        }

        #[test]
        fn planted_known_secret_never_survives(
            parts in proptest::collection::vec(text(), 1..6),
            k in known_secret(),
            other in known_secret(),
        ) {
            let sc = Scrubber::new(&[k.as_str(), other.as_str()]);
            let planted = format!("{}{k}", parts.join(&k));
            let doubled = format!("{k}{k}{planted}{k}");
            for text in [planted, doubled] {
                let out = sc.scrub(&text);
                prop_assert!(!out.text.contains(&k), "{:?} survived in {:?}", k, out.text);
                prop_assert!(!out.text.contains(&other));
                prop_assert_eq!(out.text.matches('\n').count(), text.matches('\n').count());
                prop_assert!(!out.findings.is_empty());
            }
        }
    }
}

#[cfg(test)]
mod declaration_line_values {
    use super::*;

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
