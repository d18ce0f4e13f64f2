//! Credentials as people write them, for the door's credential check.
//!
//! The shared scrubber (`crate::secrets`) finds secrets by their shape: a known prefix, a
//! `NAME=value` line, a long random token. People writing a procedure down put a credential in a
//! sentence instead: "log in as ada with the password Tr0ub4dor&3", "my password is hunter2",
//! "curl -u ada:Tr0ub4dor&3 …", "the API key 9f86d0…". Each is a word naming a secret next to a
//! value, or a command's user:password argument, and neither shape is one the scrubber can flag
//! without flagging prose everywhere else it runs (the lab, the mirror). A skill is different: it
//! must never carry a credential, so the door reads the words too. These rules live here, beside
//! the door's other checks, and not in the scrubber, so what the door refuses never changes what
//! the scrubber redacts elsewhere.
//!
//! A value is what a secret looks like written in prose: at least [`MIN_VALUE_CHARS`] characters
//! with a digit or a symbol among them (pure hex included), and not a placeholder (`$VAR`,
//! `<key>`, `{{token}}`, `***`), a path, a URL or an e-mail address. A bare word after "password"
//! ("the password field", "password manager") is prose, not a credential.

/// The shortest value taken for a secret: "1234" after "PIN" is prose far more often than a
/// credential in a skill, "hunter2" is not.
const MIN_VALUE_CHARS: usize = 5;

/// How many small words may stand between the word naming a secret and its value ("password
/// is now set to X").
const MAX_FILLERS: usize = 4;

/// What was found on a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phrasing {
    /// A word naming a secret, then its value.
    Named,
    /// A command's `-u user:password` (curl, wget and the like).
    UserPassword,
}

impl Phrasing {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Phrasing::Named => "a password, key or token written next to the word naming it",
            Phrasing::UserPassword => "a user:password given to a command",
        }
    }
}

/// Words that name a secret on their own.
const SECRET_WORDS: [&str; 14] = [
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "access_key",
    "secret_key",
    "client_secret",
    "credentials",
];

/// Words that name a secret only when written with `:` or `=` right after them (`pass: x`),
/// since as words they are everyday English ("pass the file on").
const ATTACHED_ONLY_WORDS: [&str; 3] = ["pass", "pw", "key"];

/// The first word of two that name a secret together with the second: "API key", "access
/// token", "secret key".
const PAIR_FIRSTS: [&str; 6] = ["api", "access", "secret", "auth", "private", "app"];
const PAIR_SECONDS: [&str; 4] = ["key", "token", "secret", "password"];

/// Small words that may stand between the word naming a secret and its value.
const FILLERS: [&str; 14] = [
    "is", "was", "are", "be", "=", ":", "-", "–", "—", "set", "to", "now", "still", "equals",
];

/// Every credential phrasing on `line`, at most one of each kind.
pub(super) fn find(line: &str) -> Vec<Phrasing> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut found = Vec::new();
    if named(&words) {
        found.push(Phrasing::Named);
    }
    if user_password(&words) {
        found.push(Phrasing::UserPassword);
    }
    found
}

/// The word with what surrounds a word in prose and markup taken off: quotes, backticks,
/// brackets, markdown emphasis, a YAML list dash.
fn bare(word: &str) -> &str {
    word.trim_matches(|c: char| "\"'`‘’“”()[]*_".contains(c))
}

/// A word as a keyword: bare, lowercase, leading dashes of an option (`--password`) off.
fn keyword(word: &str) -> String {
    bare(word).trim_start_matches('-').to_ascii_lowercase()
}

fn named(words: &[&str]) -> bool {
    let mut index = 0;
    while index < words.len() {
        if let Some(after) = secret_named_at(words, index) {
            match after {
                After::Attached(value) if is_value(value) => return true,
                After::Attached(_) => {}
                After::Words(next) if value_follows(&words[next..]) => return true,
                After::Words(_) => {}
            }
        }
        index += 1;
    }
    false
}

/// Where the value may be after a word naming a secret.
enum After<'a> {
    /// In the same word, after `:` or `=` (`password=hunter2`).
    Attached(&'a str),
    /// From this word on.
    Words(usize),
}

/// Whether a secret is named at `words[index]`, and where its value would be.
fn secret_named_at<'a>(words: &[&'a str], index: usize) -> Option<After<'a>> {
    let word = bare(words[index]);
    let word = word.trim_start_matches('-');
    // `password=hunter2`, `api_key:abc…`: the name and the value in one word.
    if let Some(split) = word.find([':', '=']) {
        let (name, rest) = (&word[..split], &word[split + 1..]);
        let name = name.to_ascii_lowercase();
        if is_secret_word(&name) || ATTACHED_ONLY_WORDS.contains(&name.as_str()) {
            return Some(if rest.is_empty() {
                After::Words(index + 1)
            } else {
                After::Attached(rest)
            });
        }
        return None;
    }
    let lower = word.to_ascii_lowercase();
    // A word ending a clause ("the password, then …") has no value after it.
    let ends_clause = bare(words[index]).ends_with([',', '.', ';', '!', '?']);
    // Two words naming a secret together ("secret key", "API key") are read as a pair first.
    if PAIR_FIRSTS.contains(&lower.as_str())
        && let Some(second) = words.get(index + 1)
    {
        let second_bare = bare(second);
        let second_word = second_bare
            .trim_end_matches([':', '='])
            .to_ascii_lowercase();
        if PAIR_SECONDS.contains(&second_word.as_str())
            && !second_bare.ends_with([',', '.', ';', '!', '?'])
        {
            return Some(After::Words(index + 2));
        }
    }
    if is_secret_word(&lower) {
        return (!ends_clause).then_some(After::Words(index + 1));
    }
    None
}

fn is_secret_word(word: &str) -> bool {
    let word = word.trim_end_matches([':', '=']);
    SECRET_WORDS.contains(&word)
}

/// Whether a value stands within [`MAX_FILLERS`] small words of the start of `rest`.
fn value_follows(rest: &[&str]) -> bool {
    for word in rest.iter().take(MAX_FILLERS + 1) {
        let lower = keyword(word);
        if FILLERS.contains(&lower.as_str()) || lower.is_empty() {
            continue;
        }
        return is_value(word);
    }
    false
}

/// Whether a word reads like a secret's value (see the module's comment).
fn is_value(word: &str) -> bool {
    let value = bare(word).trim_end_matches([',', '.', ';', ':', '!', '?', ')', ']', '}']);
    let value = bare(value);
    if value.chars().count() < MIN_VALUE_CHARS {
        return false;
    }
    if value.starts_with(['$', '%', '<', '{', '[', '/', '~', '*', '.', '#', '@'])
        || value.contains("://")
        || value.contains("{{")
    {
        return false;
    }
    let mut chars = value.chars();
    let first = chars.next().unwrap_or_default();
    if chars.all(|c| c == first) {
        return false;
    }
    // An e-mail address names who, not a secret.
    if let Some((user, domain)) = value.split_once('@')
        && !user.is_empty()
        && domain.contains('.')
        && !domain.contains('@')
    {
        return false;
    }
    let placeholders = [
        "redacted",
        "changeme",
        "example",
        "placeholder",
        "xxxxxxxx",
        "your-token",
        "your_token",
        "your-key",
        "your_key",
    ];
    if placeholders.contains(&value.to_ascii_lowercase().as_str()) {
        return false;
    }
    let has_letter_or_digit = value.chars().any(|c| c.is_ascii_alphanumeric());
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    let has_symbol = value
        .chars()
        .any(|c| c.is_ascii_punctuation() && c != '-' && c != '_' && c != '\'');
    has_letter_or_digit && (has_digit || has_symbol)
}

/// `-u user:password`, `--user user:password`, `--user=user:password`: the option curl, wget and
/// many other commands take credentials with. A password that is a variable or a placeholder,
/// or none at all (curl then asks for it), is not a credential in the text.
fn user_password(words: &[&str]) -> bool {
    let credential = |pair: &str| {
        let pair = bare(pair);
        let Some((user, password)) = pair.split_once(':') else {
            return false;
        };
        !user.is_empty()
            && !password.is_empty()
            && !password.starts_with(['$', '<', '{', '%', '*'])
            && !password.chars().all(|c| c == '*' || c == 'x' || c == 'X')
    };
    words.iter().enumerate().any(|(index, word)| {
        let word = bare(word);
        if let Some(pair) = word.strip_prefix("--user=") {
            return credential(pair);
        }
        (word == "-u" || word == "--user")
            && words.get(index + 1).is_some_and(|pair| credential(pair))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Real-world phrasings: how credentials are written in procedures, and the prose around
    /// secrets that is not one. `true` when the door must refuse the line.
    const PHRASINGS: &[(&str, bool)] = &[
        ("log in as ada with the password Tr0ub4dor&3", true),
        ("my password is hunter2", true),
        ("My password is hunter2.", true),
        (
            "curl -u ada:Tr0ub4dor&3 https://api.example.com/v1/reports",
            true,
        ),
        (
            "the API key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            true,
        ),
        ("api_key 0123456789abcdef0123456789abcdef", true),
        ("api_key: 0123456789abcdef0123456789abcdef", true),
        ("password=hunter2", true),
        ("--password S3cret! for the backup job", true),
        ("the wifi password is now set to correct-horse-9", true),
        ("Use token ghx_8f7d6e5c4b3a", true),
        ("`pass: 7hunter7` for the staging box", true),
        ("access token: a1b2c3d4e5f6", true),
        ("wget --user=ada:hunter22 https://files.example.com/x", true),
        ("the secret is 4815162342", true),
        ("Ask the human for the password, never write it down", false),
        ("the password field on the login page", false),
        ("store it in the password manager", false),
        ("the password is in 1Password under Work", false),
        ("rotate the password every 90 days", false),
        ("the token expires after 30 days", false),
        ("read the API key from the vault", false),
        ("api_key: $API_KEY", false),
        ("password=${DB_PASSWORD}", false),
        ("token: <your token>", false),
        ("curl -u \"$USER:$PASS\" https://api.example.com", false),
        (
            "curl -u ada https://api.example.com (curl asks for the password)",
            false,
        ),
        ("send the token to ada@example.com", false),
        ("the password must be at least 12 characters", false),
        ("pass the report to the team", false),
        ("press the key 5 times", false),
        ("the key is in notes/keys.md", false),
        ("password: ********", false),
        ("Match dates with \\d{4}-\\d{2}-\\d{2}", false),
        ("strip the bell character \\x07 from the log", false),
        ("count the tokens in the prompt, about 12000", false),
    ];

    #[test]
    fn real_world_phrasings_are_refused_and_the_prose_around_secrets_is_not() {
        let wrong: Vec<String> = PHRASINGS
            .iter()
            .filter(|(line, blocked)| find(line).is_empty() == *blocked)
            .map(|(line, blocked)| {
                format!(
                    "{line:?}: {}",
                    if *blocked { "missed" } else { "false alarm" }
                )
            })
            .collect();
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    #[test]
    fn curl_user_password_is_its_own_finding() {
        assert_eq!(
            find("curl -u ada:Tr0ub4dor&3 https://x"),
            [Phrasing::UserPassword]
        );
        assert_eq!(find("my password is hunter2"), [Phrasing::Named]);
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            // A word with digits and a symbol, as people choose them.
            "[A-Za-z]{4,8}[0-9]{1,4}[!&#%+]?",
            // Pure hex, as API keys are handed out.
            "[0-9a-f]{32}",
            "[0-9a-f]{64}",
        ]
    }

    fn naming() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "my password is {}",
            "log in as ada with the password {}",
            "the API key {}",
            "api_key {}",
            "api_key: {}",
            "the api key is {}",
            "token={}",
            "Password: {}",
            "passphrase `{}`",
            "the secret key is now {}.",
        ])
    }

    proptest! {
        #[test]
        fn a_word_naming_a_secret_next_to_a_value_is_a_credential(
            template in naming(),
            value in value(),
            before in "[a-z ]{0,20}",
        ) {
            let line = format!("{before} {}", template.replace("{}", &value));
            prop_assert!(find(&line).contains(&Phrasing::Named), "{line}");
        }

        #[test]
        fn a_command_user_password_is_a_credential(
            user in "[a-z]{2,8}",
            password in value(),
            option in prop::sample::select(vec!["-u ", "--user ", "--user="]),
        ) {
            let line = format!("curl {option}{user}:{password} https://example.com/x");
            prop_assert!(find(&line).contains(&Phrasing::UserPassword), "{line}");
        }

        #[test]
        fn words_naming_a_secret_followed_by_prose_are_not_a_credential(
            word in prop::sample::select(SECRET_WORDS.to_vec()),
            prose in prop::collection::vec("[a-z]{1,12}", 0..8),
        ) {
            let line = format!("the {word} {}", prose.join(" "));
            prop_assert!(find(&line).is_empty(), "{line}");
        }

        #[test]
        fn prose_without_a_word_naming_a_secret_is_never_a_credential(
            words in prop::collection::vec("[A-Za-z0-9&!#%+./:-]{1,16}", 0..12),
        ) {
            let words: Vec<String> = words
                .into_iter()
                .filter(|word| {
                    let lower = keyword(word);
                    !SECRET_WORDS.iter().chain(&ATTACHED_ONLY_WORDS).chain(&PAIR_FIRSTS).any(|secret| lower.contains(secret))
                        && word != "-u"
                        && !word.starts_with("--user")
                })
                .collect();
            let line = words.join(" ");
            prop_assert!(find(&line).is_empty(), "{line}");
        }

        #[test]
        fn finding_never_panics(line in "\\PC{0,200}") {
            let _ = find(&line);
        }
    }
}
