//! The shapes of known credentials: which trigger substrings wake which rule, the rules'
//! regular expressions, and the checks a match of one must pass.

use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::Regex;

use super::SecretKind;
use super::assignments::{VENDOR_KEYWORDS, is_url_placeholder, random_piece, token_like};

// Rule bits: a line is only examined by the rules whose trigger substrings occur in it.
pub(super) const R_ASSIGN: u32 = 1 << 0;
pub(super) const R_AWS: u32 = 1 << 1;
pub(super) const R_GITHUB: u32 = 1 << 2;
pub(super) const R_GITLAB: u32 = 1 << 3;
pub(super) const R_SLACK: u32 = 1 << 4;
pub(super) const R_WEBHOOK: u32 = 1 << 5;
pub(super) const R_SK: u32 = 1 << 6;
pub(super) const R_STRIPE: u32 = 1 << 7;
pub(super) const R_GOOGLE: u32 = 1 << 8;
pub(super) const R_NPM: u32 = 1 << 9;
pub(super) const R_HF: u32 = 1 << 10;
pub(super) const R_SENDGRID: u32 = 1 << 11;
pub(super) const R_JWT: u32 = 1 << 12;
pub(super) const R_URL: u32 = 1 << 13;
pub(super) const R_BEARER: u32 = 1 << 14;
pub(super) const R_BASIC: u32 = 1 << 15;
pub(super) const R_PEM: u32 = 1 << 16;
pub(super) const R_KNOWN: u32 = 1 << 17;
pub(super) const R_ENTROPY: u32 = 1 << 18;
pub(super) const R_TELEGRAM: u32 = 1 << 19;
pub(super) const R_MINDRUNE: u32 = 1 << 20;
pub(super) const R_VENDOR: u32 = 1 << 21;
pub(super) const R_COMMAND: u32 = 1 << 22;
pub(super) const R_SEED: u32 = 1 << 23;
pub(super) const R_TWILIO: u32 = 1 << 24;
pub(super) const R_VENDOR_NAME: u32 = 1 << 25;
pub(super) const R_VAULT: u32 = 1 << 26;
pub(super) const R_ALL: u32 = u32::MAX;

/// Trigger substrings (matched ASCII-case-insensitively) and the rules they wake up. Every rule
/// needs at least one of its triggers to be able to match at all, so skipping lines without
/// triggers never hides a secret.
pub(super) const TRIGGERS: &[(&str, u32)] = &[
    ("pass", R_ASSIGN),
    ("pwd", R_ASSIGN),
    ("pw", R_ASSIGN),
    ("psk", R_ASSIGN),
    ("secret", R_ASSIGN),
    ("token", R_ASSIGN),
    // `key` also starts Mailgun's `key-` + 32 keys, whose own trigger it hides.
    ("key", R_ASSIGN | R_VENDOR),
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
    ("k_prod_", R_STRIPE),
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
    (".tines.com/webhook/", R_WEBHOOK),
    // Vault's `s.` tokens; the shape's check keeps member accesses out. A trigger that starts
    // with `.` would be hidden behind `s.` when an `s` comes before it (the search is
    // leftmost-first), so each such one also has an `s` form that wakes both.
    ("s.acc", R_VENDOR | R_VAULT),
    ("s.ey", R_JWT | R_VAULT),
    ("s.tines.com/webhook/", R_WEBHOOK | R_VAULT),
    ("s.", R_VAULT),
    ("cleartextpassword", R_VENDOR | R_ASSIGN),
    // The second part of a JWT-like `ey….ey….…` whose header is not `eyJ`.
    (".ey", R_JWT),
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

/// Vendor-prefixed tokens of gitleaks' rules and trufflehog's detectors, one row per vendor:
/// the trigger substring (ASCII case ignored) that must occur for the pattern to match, and the
/// pattern. The prefix is what makes each certain, so the tail may be hex or one case. All rows
/// form one regex, run only on lines holding one of the triggers; a row starts at a word
/// boundary and ends where its pattern does (a token may end in `-`).
pub(super) const VENDOR_TOKENS: &[(&str, &str)] = &[
    ("ltai", r"LTAI[A-Za-z0-9]{20}"),
    ("key-", r"key-[a-z0-9]{32}(?-u:\b)"),
    ("clojars_", r"(?i:CLOJARS_)[A-Za-z0-9]{60}"),
    ("ezak", r"EZAK[A-Za-z0-9]{54}"),
    ("eztk", r"EZTK[A-Za-z0-9]{54}"),
    ("rdme_", r"rdme_[a-z0-9]{70}"),
    ("pat", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    (
        ".acc",
        r"(?i:sc|ext|scauth|authress)_[A-Za-z0-9]{5,30}\.[A-Za-z0-9]{4,6}\.acc[_-][A-Za-z0-9-]{10,32}\.[A-Za-z0-9+/_=-]{30,120}",
    ),
    ("endr+", r"endr\+[A-Za-z0-9-]{16}"),
    ("flb_live_", r"flb_live_[A-Za-z0-9]{20}"),
    ("nrak-", r"NRAK-[A-Za-z0-9]{27}"),
    ("nrbr-", r"NRBR-[A-Fa-f0-9]{19}"),
    ("nrjs-", r"NRJS-[A-Fa-f0-9]{19}"),
    ("nrii-", r"NRII-[A-Za-z0-9_-]{25,32}"),
    ("nriq-", r"NRIQ-[A-Za-z0-9_-]{25,32}"),
    ("nraa-", r"NRAA-[A-Za-z0-9]{27}"),
    (
        "pub-c-",
        r"pub-c-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}",
    ),
    (
        "sub-c-",
        r"sub-c-[0-9a-z]{8}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{4}-[0-9a-z]{12}",
    ),
    (
        "rh-api-",
        r"rh-api-[A-Za-z0-9]{8}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{4}-[A-Za-z0-9]{12}",
    ),
    ("rootly_", r"rootly_[a-f0-9]{64}"),
    ("rubygems_", r"rubygems_[A-Za-z0-9]{48}"),
    ("slk_", r"slk_[a-f0-9]{64}"),
    ("sbp_", r"sbp_(?:v0_)?[a-z0-9]{40}"),
    ("thog-", r"thog-(?:key|secret)-[a-f0-9]{16,32}"),
    (
        "vf.",
        r"VF\.(?:(?:DM|WS)\.)?[A-Za-z0-9]{24}\.[A-Za-z0-9]{16}",
    ),
    ("tskey-", r"tskey-[a-z]+-[0-9A-Za-z_]+-[0-9A-Za-z_]+"),
    ("pul-", r"pul-[a-z0-9]{40}"),
    ("1000.", r"1000\.[a-f0-9]{32}\.[a-f0-9]{32}"),
    (
        "sat.",
        r"sat\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9]{24}\.[A-Za-z0-9]{20}",
    ),
    ("spu-", r"spu-[A-Za-z0-9]{32}"),
    ("ak_live_", r"ak_live_[A-Za-z0-9]{30}"),
    ("ak_test_", r"ak_test_[A-Za-z0-9]{30}"),
    (
        "salad_cloud_",
        r"salad_cloud_[0-9A-Za-z]{1,7}_[0-9A-Za-z]{7,}",
    ),
    ("pk_", r"pk_(?:[A-Za-z0-9]{6}_)?[A-Za-z0-9]{34}(?-u:\b)"),
    ("sk.eyj", r"sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}"),
    ("t3blbkfj", r"sk-[A-Za-z0-9_-]*T3BlbkFJ[A-Za-z0-9_-]+"),
];

/// Every trigger: the fixed ones, then each vendor row's (waking [`R_VENDOR`]), then the
/// vendor keywords of gitleaks' keyword rules (waking the assignment parser for names that hold
/// only a vendor's keyword).
pub(super) static ALL_TRIGGERS: LazyLock<Vec<(&'static str, u32)>> = LazyLock::new(|| {
    TRIGGERS
        .iter()
        .copied()
        .chain(VENDOR_TOKENS.iter().map(|(t, _)| (*t, R_VENDOR)))
        .chain(VENDOR_KEYWORDS.iter().map(|k| (*k, R_VENDOR_NAME)))
        .collect()
});

/// The literals the prescan looks for (ASCII case ignored): what a plain scan, the benchmark's
/// baseline, would look for too.
pub fn trigger_literals() -> impl Iterator<Item = &'static str> {
    ALL_TRIGGERS.iter().map(|(literal, _)| *literal)
}

/// Non-overlapping leftmost-first search is markedly faster than overlapping search, and losing
/// a trigger hidden inside another costs nothing: the only overlaps are within one identifier
/// (which the assignment parser expands anyway) or put a word character before a shape that
/// must start at a word boundary (`keyJ…` hides `eyJ`, `psk-` hides `sk-`).
pub(super) static TRIGGER_AC: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasickBuilder::new()
        .ascii_case_insensitive(true)
        .match_kind(MatchKind::LeftmostFirst)
        // A full DFA: a few hundred short literals make a small one, and it is the fastest
        // search once the literals are too many for the packed (SIMD) searcher.
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(ALL_TRIGGERS.iter().map(|(p, _)| p))
        .expect("trigger automaton builds")
});

/// A key-shape rule: a regex, the capture group holding the secret, and a check that rejects
/// placeholders and picks the kind.
pub(super) struct Shape {
    pub(super) bits: u32,
    pub(super) re: Regex,
    pub(super) group: usize,
    pub(super) classify: fn(&str) -> Option<SecretKind>,
}

pub(super) static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {
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
            r"hooks\.slack\.com/(?:services|workflows)/([A-Za-z0-9_/+\-]{16,})",
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
            // Stripe's keys, and Recharge's (`sk_1x1_` + 64 hex), which share the `sk` trigger.
            r"(?-u:\b)(?:[sr]k_(?:live|test|prod)_[A-Za-z0-9]{10,}|sk_(?:test_)?(?:1|2|3|5|10)x[123]_[0-9a-fA-F]{64}(?-u:\b))",
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
            // gitleaks' shape: `hf_` and 34 letters of one case.
            let letters34 = tail.len() == 34 && tail.bytes().all(|b| b.is_ascii_alphabetic());
            if mixed || letters34 {
                shaped(m, SecretKind::HuggingFaceToken)
            } else {
                None
            }
        }),
        shape(
            R_SENDGRID,
            r"(?-u:\b)SG\.(?:[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}|[A-Za-z0-9_\-=.]{60,})",
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
                r"|ya29\.[A-Za-z0-9_\-]{10,}",
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
        shape(
            R_VENDOR,
            &format!(
                r"(?-u:\b)(?:{})",
                VENDOR_TOKENS
                    .iter()
                    .map(|(_, p)| *p)
                    .collect::<Vec<_>>()
                    .join("|")
            ),
            0,
            // Klaviyo's private keys are `pk_`; Stripe's publishable `pk_live_`/`pk_test_` stay.
            |m| {
                if m.starts_with("pk_live_") || m.starts_with("pk_test_") {
                    None
                } else {
                    shaped(m, SecretKind::HighEntropy)
                }
            },
        ),
        // HashiCorp Vault's older service tokens: `s.` and 24 letters and digits, taken only
        // when the 24 are random (a `this.someLongPropertyName` is not).
        shape(R_VAULT, r"(?-u:\b)s\.([A-Za-z0-9]{24})(?-u:\b)", 1, |m| {
            random_piece(m)
                .then(|| shaped(m, SecretKind::HighEntropy))
                .flatten()
        }),
        // NuGet's `<add key="ClearTextPassword" value="…" />`.
        shape(
            R_VENDOR,
            r#"(?i:ClearTextPassword)["']?\s+value=["']([^"'\s]+)["']"#,
            1,
            command_password,
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
            r"webhookb2/[^\s]*?/IncomingWebhook/([A-Za-z0-9_-]{32})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
        ),
        shape(
            R_WEBHOOK,
            r"hooks\.zapier\.com/hooks/catch/([A-Za-z0-9/]{8,})",
            1,
            |m| {
                // `<account digits>/<hook id>`, or one opaque run of letters and digits.
                let tail = m.trim_end_matches('/').rsplit('/').next().unwrap_or(m);
                let alnum = m.bytes().filter(u8::is_ascii_alphanumeric).count();
                (tail.len() >= 5 || alnum >= 12).then_some(SecretKind::WebhookUrl)
            },
        ),
        shape(
            R_WEBHOOK,
            r"\.tines\.com/webhook/([a-z0-9]{32}/[a-z0-9]{32})",
            1,
            |m| shaped(m, SecretKind::WebhookUrl),
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
            r"(?-u:\b)(?:eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*|ey[A-Za-z0-9_\-]{15,}\.ey[A-Za-z0-9/_\-]{15,}\.[A-Za-z0-9/_\-]*={0,2})",
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
pub(super) fn command_password(pw: &str) -> Option<SecretKind> {
    let placeholder = pw.len() < 4
        || pw.starts_with(['$', '%', '{', '<', '*', '-'])
        || pw.bytes().all(|b| b == b'*' || b == b'x' || b == b'X')
        || is_url_placeholder(pw);
    (!placeholder).then_some(SecretKind::Assignment)
}

/// Accepts a key shape unless it is an obvious placeholder.
pub(super) fn shaped(m: &str, kind: SecretKind) -> Option<SecretKind> {
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
pub(super) fn classify_sk(m: &str) -> Option<SecretKind> {
    if m.starts_with("sk-ant-") {
        return shaped(m, SecretKind::AnthropicKey);
    }
    // OpenRouter's keys: `sk-or-v1-` and 64 hex digits.
    if m.starts_with("sk-or-v1-") && m.len() >= 9 + 64 {
        return shaped(m, SecretKind::OpenAiKey);
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

pub(super) fn distinct_alnum(s: &str) -> usize {
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
