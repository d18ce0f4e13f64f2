//! The human's `permissions.yaml`: which changes to a skill happen on their own, and which wait.
//!
//! Every act that changes the skill library (creating a skill, reporting that one went wrong,
//! revising, reverting and retiring one) is a line of this file, and each line holds one of
//! three words:
//!
//! - `ask`: the assistant asks its human before the act happens, and then the card, if the act
//!   files one, waits for the human's answer.
//! - `card`: nothing is asked first, and the card waits for the human's answer.
//! - `auto`: the act happens on its own, and the card is filed already answered so the human can
//!   see that it happened.
//!
//! Two acts are narrower. A report files no card, so `report` takes only `ask` or `auto`.
//! Retiring a skill is always the human's call in every mode, so `retire` takes `ask` or `card`
//! and never `auto`: an assistant free to retire its own procedures would be grading its own
//! homework.
//!
//! The spec's table "Who can do what" has one more row, writing a skill file directly. That row
//! is a path rule: `workspace/skills/` refuses `file_write`, `file_copy` and `file_move` in every
//! mode, so it is deliberately not a line of this file, and a line that tries to set it is an
//! error that says so.
//!
//! The shipped default asks before every act ([`Permissions::shipped_default`]); the mode built
//! for unattended work lets everything apply itself except retiring, which still waits on the
//! card ([`Permissions::unattended`]). An act the file leaves out takes the shipped default's
//! policy, the safe one.
//!
//! Architecture invariant: everything here is pure and never panics on any input.

/// An act on the skill library that `permissions.yaml` governs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Act {
    /// Create a skill (`skill_create`).
    Create,
    /// Report that a skill went wrong (`skill_refine report`); files no card.
    Report,
    /// Revise a skill (`skill_refine revise`), filed by the fixer.
    Revise,
    /// Revert a revision (`skill_refine revert`).
    Revert,
    /// Retire a skill (`skill_refine retire`); always the human's call.
    Retire,
}

impl Act {
    /// Every act, in the order of the spec's table and of the rendered file.
    pub(crate) const ALL: [Act; 5] = [
        Act::Create,
        Act::Report,
        Act::Revise,
        Act::Revert,
        Act::Retire,
    ];

    /// The act's key in `permissions.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Act::Create => "create",
            Act::Report => "report",
            Act::Revise => "revise",
            Act::Revert => "revert",
            Act::Retire => "retire",
        }
    }

    /// The act whose key is exactly `name` (lowercase), if there is one.
    pub(crate) fn from_name(name: &str) -> Option<Act> {
        Act::ALL.into_iter().find(|act| act.as_str() == name)
    }

    #[cfg(test)]
    /// Whether `policy` is one this act accepts: `report` files no card, so it cannot wait on
    /// one, and `retire` is always the human's call, so it never applies itself.
    pub(crate) fn allows(self, policy: Policy) -> bool {
        !matches!(
            (self, policy),
            (Act::Report, Policy::Card) | (Act::Retire, Policy::Auto)
        )
    }

    fn index(self) -> usize {
        match self {
            Act::Create => 0,
            Act::Report => 1,
            Act::Revise => 2,
            Act::Revert => 3,
            Act::Retire => 4,
        }
    }
}

/// What happens when the assistant (or the fixer) sets out to perform an act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The assistant asks its human first; then the card, if the act files one, waits for the
    /// human's answer.
    Ask,
    /// Nothing is asked first; the card waits for the human's answer.
    Card,
    /// The act happens on its own; the card is filed already answered.
    Auto,
}

impl Policy {
    /// Every policy, in the order the file's header explains them.
    pub(crate) const ALL: [Policy; 3] = [Policy::Ask, Policy::Card, Policy::Auto];

    /// The policy's word in `permissions.yaml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Ask => "ask",
            Policy::Card => "card",
            Policy::Auto => "auto",
        }
    }

    /// The policy whose word is exactly `word` (lowercase), if there is one.
    pub(crate) fn from_name(word: &str) -> Option<Policy> {
        Policy::ALL
            .into_iter()
            .find(|policy| policy.as_str() == word)
    }
}

/// One policy per act: the contents of the human's `permissions.yaml`.
///
/// Every value of this type is valid: `report` never holds `card` and `retire` never holds
/// `auto`, because the only ways to build one are the two modes and [`Permissions::parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permissions {
    /// Indexed by [`Act::index`].
    policies: [Policy; 5],
}

/// Why a `permissions.yaml` could not be read: the line it is on and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permissions.yaml line {line}: {message}")]
pub struct PermissionsError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with the line and how to fix it.
    pub message: String,
}

/// How wide the `act: policy` part of a rendered line is padded, so the comments line up.
const RENDER_COLUMN: usize = 17;

/// How many characters of a key or value an error message quotes, so a pasted paragraph cannot
/// fill the message.
const QUOTE_CHARS: usize = 40;

/// The comment at the top of the rendered file.
const HEADER: &str = "\
# permissions.yaml: which changes to your skills happen on their own, and which wait for you.
#
# One line per act, each set to one of three words:
#   ask   the assistant asks you before it happens; then the card, if the act files one,
#         waits for your answer. No yes (no way to ask you, nobody answering): nothing happens.
#   card  nothing is asked first; the card waits for your answer.
#   auto  it happens on its own; the card is filed already answered, so you can see it happened.
#
# report files no card, so it takes ask or auto. retire is always your call, in every mode,
# so it takes ask or card, never auto. An act left out of this file takes the shipped
# default, ask.
#
# Writing a skill file into workspace/skills/ directly (file_write, file_copy, file_move) is
# not a line here: it is a path rule, refused in every mode.
";

impl Permissions {
    /// The shipped default: the assistant asks before every act, and every card waits for the
    /// human.
    pub fn shipped_default() -> Self {
        Permissions {
            policies: [Policy::Ask; 5],
        }
    }

    /// The mode built for unattended work: everything applies itself, except retiring a skill,
    /// whose card still waits for the human.
    pub fn unattended() -> Self {
        let mut permissions = Permissions {
            policies: [Policy::Auto; 5],
        };
        permissions.policies[Act::Retire.index()] = Policy::Card;
        permissions
    }

    /// The policy for one act.
    pub fn policy(&self, act: Act) -> Policy {
        self.policies[act.index()]
    }

    #[cfg(test)]
    /// Whether these are exactly the permissions of the mode built for unattended work.
    pub(crate) fn is_unattended_mode(&self) -> bool {
        *self == Self::unattended()
    }

    /// Reads a `permissions.yaml`.
    ///
    /// The format is written by hand rather than handed to a YAML deserializer on purpose: the
    /// file is a flat list of five `key: word` lines, and every error has to name its line,
    /// which a general YAML deserializer does not do for semantic errors such as `retire: auto`
    /// or a line set twice. So the format is deliberately tiny: blank lines and `#` comments
    /// (whole lines, or after the value) are ignored, the value may be quoted (`'ask'` or
    /// `"ask"`), and the words are lowercase. Indented lines and the rest of YAML's structure
    /// (lists, nested mappings, flow collections, anchors, tags, block scalars, document
    /// markers) are refused with a line number rather than half understood.
    ///
    /// An act the file leaves out takes the shipped default's policy, which is the safe one, so
    /// an empty file is the shipped default.
    pub fn parse(text: &str) -> Result<Permissions, PermissionsError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut permissions = Self::shipped_default();
        let mut set_on: [Option<usize>; 5] = [None; 5];
        for (index, raw) in text.split('\n').enumerate() {
            let number = index + 1;
            let Some((act, policy)) = parse_line(raw).map_err(|message| PermissionsError {
                line: number,
                message,
            })?
            else {
                continue;
            };
            if let Some(first) = set_on[act.index()] {
                return Err(PermissionsError {
                    line: number,
                    message: format!(
                        "{act} is already set on line {first}; keep one of the two lines",
                        act = act.as_str()
                    ),
                });
            }
            set_on[act.index()] = Some(number);
            permissions.policies[act.index()] = policy;
        }
        Ok(permissions)
    }

    /// The file text: a header explaining the three words, then one `act: policy` line per
    /// act, each followed by the spec's words for what that policy means for that act.
    pub fn render(&self) -> String {
        let mut text = String::from(HEADER);
        text.push('\n');
        for act in Act::ALL {
            let policy = self.policy(act);
            let setting = format!("{}: {}", act.as_str(), policy.as_str());
            text.push_str(&format!(
                "{setting:<RENDER_COLUMN$}# {}\n",
                meaning(act, policy)
            ));
        }
        text
    }
}

/// What a policy means for one act, in the words of the spec's table where the table has a
/// cell for it.
fn meaning(act: Act, policy: Policy) -> &'static str {
    match (act, policy) {
        (Act::Create, Policy::Ask) => "asks before drafting, then waits on the card",
        (Act::Create, Policy::Card) => "drafted without asking, then waits on the card",
        (Act::Create, Policy::Auto) => "goes live on its own",
        (Act::Report, Policy::Ask) => "asks before reporting",
        // A report files no card, so parsing refuses `report: card` and no value holds it.
        (Act::Report, Policy::Card) | (Act::Report, Policy::Auto) => {
            "recorded, and the fixer starts"
        }
        (Act::Revise | Act::Revert | Act::Retire, Policy::Ask) => {
            "asks before filing, then waits on the card"
        }
        (Act::Revise | Act::Revert, Policy::Card) => "filed without asking, then waits on the card",
        (Act::Revise | Act::Revert, Policy::Auto) => "applied on its own",
        // Retiring never applies itself, so parsing refuses `retire: auto` and no value holds it.
        (Act::Retire, Policy::Card) | (Act::Retire, Policy::Auto) => "waits on the card",
    }
}

/// Reads one line: `Ok(None)` for a blank or comment line, the act and its policy for a
/// setting, and the message for anything else.
fn parse_line(raw: &str) -> Result<Option<(Act, Policy)>, String> {
    let line = raw.strip_suffix('\r').unwrap_or(raw);
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return Ok(None);
    }
    if line.starts_with(char::is_whitespace) {
        return Err(
            "indented lines are YAML structure this file does not have; every line is \
             `act: policy` at the start of the line, so remove the indentation"
                .to_owned(),
        );
    }
    let content = strip_comment(line).trim_end();
    if content == "---" || content == "..." {
        return Err(format!(
            "`{content}` is a YAML document marker, which this file does not use; delete the line"
        ));
    }
    if let Some(what) = structure(content) {
        return Err(format!(
            "{what} are not part of permissions.yaml, which is a flat list of `act: policy` \
             lines; write one line per act, such as `create: ask`"
        ));
    }
    let Some((key_raw, rest)) = content.split_once(':') else {
        return Err(format!(
            "`{}` is not an `act: policy` line; write it as, for example, `create: ask`",
            quoted(content)
        ));
    };
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return Err(format!(
            "put a space after the colon, as in `{}: ask`",
            quoted(key_raw.trim_end())
        ));
    }
    let key = unquote(key_raw.trim_end())?;
    let value_raw = rest.trim();
    let act = act_for_key(key)?;
    if value_raw.is_empty() {
        return Err(format!(
            "`{act}:` has no policy; write `{act}: ` followed by {words}",
            act = act.as_str(),
            words = words_for(act)
        ));
    }
    if let Some(what) = structure(value_raw) {
        return Err(format!(
            "{what} are not part of permissions.yaml; set {act} to {words}",
            act = act.as_str(),
            words = words_for(act)
        ));
    }
    let word = unquote(value_raw)?;
    let Some(policy) = Policy::from_name(word) else {
        let hint = match Policy::from_name(&word.to_ascii_lowercase()) {
            Some(policy) => format!(" (the words are lowercase: `{}`)", policy.as_str()),
            None => String::new(),
        };
        let narrower = match act {
            Act::Report | Act::Retire => format!(", and {} takes {}", act.as_str(), words_for(act)),
            _ => String::new(),
        };
        return Err(format!(
            "unknown policy `{}` for {}{hint}; the three words are ask, card and auto{narrower}",
            quoted(word),
            act.as_str()
        ));
    };
    match (act, policy) {
        (Act::Report, Policy::Card) => Err("report files no card, so it cannot wait on one; \
             write `report: ask` or `report: auto`"
            .to_owned()),
        (Act::Retire, Policy::Auto) => Err("retire cannot be auto: retiring a skill is always \
             the human's call, in every mode, because an assistant free to retire its own \
             procedures would be grading its own homework; write `retire: ask` or `retire: card`"
            .to_owned()),
        _ => Ok(Some((act, policy))),
    }
}

/// The act a key names, or the message for a key that names none.
fn act_for_key(key: &str) -> Result<Act, String> {
    if let Some(act) = Act::from_name(key) {
        return Ok(act);
    }
    let lower = key.to_ascii_lowercase();
    if lower.contains("write") || lower == "file_copy" || lower == "file_move" {
        return Err(format!(
            "`{}`: writing a skill file directly is a path rule, refused in every mode; it is \
             not a line of permissions.yaml, so delete this line",
            quoted(key)
        ));
    }
    let hint = match Act::from_name(&lower) {
        Some(act) => format!(" (the acts are lowercase: `{}`)", act.as_str()),
        None => String::new(),
    };
    Err(format!(
        "unknown act `{}`{hint}; the five acts are create, report, revise, revert and retire",
        quoted(key)
    ))
}

/// The words an act accepts, for messages.
fn words_for(act: Act) -> &'static str {
    match act {
        Act::Report => "ask or auto",
        Act::Retire => "ask or card",
        _ => "ask, card or auto",
    }
}

/// The line without a trailing `# comment`. As in YAML, a `#` starts a comment only at the
/// start of the line or after white space, so `ask#1` stays one (unknown) word.
fn strip_comment(line: &str) -> &str {
    let mut previous_is_space = true;
    for (at, ch) in line.char_indices() {
        if ch == '#' && previous_is_space {
            return &line[..at];
        }
        previous_is_space = ch.is_whitespace();
    }
    line
}

/// The kind of YAML structure a key or value starts with, if it starts with any.
fn structure(text: &str) -> Option<&'static str> {
    match text.chars().next()? {
        '-' => Some("lists (lines starting with `-`)"),
        '?' => Some("complex mapping keys (lines starting with `?`)"),
        '{' => Some("flow mappings (`{ ... }`)"),
        '[' => Some("flow lists (`[ ... ]`)"),
        '&' | '*' => Some("anchors and aliases (`&name`, `*name`)"),
        '!' => Some("tags (`!tag`)"),
        '|' | '>' => Some("block scalars (`|` and `>`)"),
        '%' => Some("directives (`%YAML`)"),
        '@' | '`' => Some("reserved characters (`@` and a backtick)"),
        _ => None,
    }
}

/// A key or value without the single or double quotes around it, if it has them.
fn unquote(text: &str) -> Result<&str, String> {
    for quote in ['\'', '"'] {
        if let Some(inner) = text.strip_prefix(quote) {
            return inner.strip_suffix(quote).ok_or_else(|| {
                format!(
                    "`{}` opens a quote it does not close; write the word bare or between two \
                     matching quotes",
                    quoted(text)
                )
            });
        }
    }
    Ok(text)
}

/// A key or value as an error message quotes it: at most [`QUOTE_CHARS`] characters.
fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The line and message of the error `text` fails with.
    fn error(text: &str) -> (usize, String) {
        let err = Permissions::parse(text).expect_err("the text should be refused");
        (err.line, err.message)
    }

    /// Every valid combination of policies, one per act.
    fn every_valid_permissions() -> Vec<Permissions> {
        let mut all = vec![Permissions::shipped_default()];
        for act in Act::ALL {
            all = all
                .into_iter()
                .flat_map(|base| {
                    Policy::ALL
                        .into_iter()
                        .filter(move |policy| act.allows(*policy))
                        .map(move |policy| {
                            let mut next = base.clone();
                            next.policies[act.index()] = policy;
                            next
                        })
                })
                .collect();
        }
        all
    }

    // The shipped default, one test per row of the spec's table.

    #[test]
    fn create_asks_before_drafting_then_waits_on_the_card_by_default() {
        assert_eq!(
            Permissions::shipped_default().policy(Act::Create),
            Policy::Ask
        );
    }

    #[test]
    fn report_asks_before_reporting_by_default() {
        assert_eq!(
            Permissions::shipped_default().policy(Act::Report),
            Policy::Ask
        );
    }

    #[test]
    fn revise_asks_before_filing_then_waits_on_the_card_by_default() {
        assert_eq!(
            Permissions::shipped_default().policy(Act::Revise),
            Policy::Ask
        );
    }

    #[test]
    fn revert_asks_before_filing_then_waits_on_the_card_by_default() {
        assert_eq!(
            Permissions::shipped_default().policy(Act::Revert),
            Policy::Ask
        );
    }

    #[test]
    fn retire_asks_before_filing_then_waits_on_the_card_by_default() {
        assert_eq!(
            Permissions::shipped_default().policy(Act::Retire),
            Policy::Ask
        );
    }

    // The mode built for unattended work, one test per row of the spec's table.

    #[test]
    fn create_goes_live_on_its_own_in_unattended_mode() {
        assert_eq!(Permissions::unattended().policy(Act::Create), Policy::Auto);
    }

    #[test]
    fn report_is_recorded_and_the_fixer_starts_in_unattended_mode() {
        assert_eq!(Permissions::unattended().policy(Act::Report), Policy::Auto);
    }

    #[test]
    fn revise_is_applied_on_its_own_in_unattended_mode() {
        assert_eq!(Permissions::unattended().policy(Act::Revise), Policy::Auto);
    }

    #[test]
    fn revert_is_applied_on_its_own_in_unattended_mode() {
        assert_eq!(Permissions::unattended().policy(Act::Revert), Policy::Auto);
    }

    #[test]
    fn retire_waits_on_the_card_in_unattended_mode() {
        assert_eq!(Permissions::unattended().policy(Act::Retire), Policy::Card);
    }

    #[test]
    fn writing_a_skill_file_directly_is_not_a_line_in_either_mode() {
        for permissions in [Permissions::shipped_default(), Permissions::unattended()] {
            let text = permissions.render();
            let settings: Vec<&str> = text
                .lines()
                .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
                .collect();
            assert_eq!(settings.len(), Act::ALL.len(), "{text}");
            assert!(
                settings.iter().all(|line| !line.contains("write")),
                "{text}"
            );
        }
        for key in ["write", "write_skill_file", "file_write", "file_copy"] {
            let (line, message) = error(&format!("create: ask\n{key}: auto\n"));
            assert_eq!(line, 2);
            assert!(
                message.contains(
                    "writing a skill file directly is a path rule, refused in every mode; it \
                     is not a line of permissions.yaml"
                ),
                "{message}"
            );
        }
    }

    #[test]
    fn the_act_rules_match_the_table() {
        let allowed: Vec<(Act, Vec<Policy>)> = Act::ALL
            .into_iter()
            .map(|act| {
                let policies = Policy::ALL
                    .into_iter()
                    .filter(|policy| act.allows(*policy))
                    .collect();
                (act, policies)
            })
            .collect();
        assert_eq!(
            allowed,
            [
                (Act::Create, vec![Policy::Ask, Policy::Card, Policy::Auto]),
                (Act::Report, vec![Policy::Ask, Policy::Auto]),
                (Act::Revise, vec![Policy::Ask, Policy::Card, Policy::Auto]),
                (Act::Revert, vec![Policy::Ask, Policy::Card, Policy::Auto]),
                (Act::Retire, vec![Policy::Ask, Policy::Card]),
            ]
        );
    }

    #[test]
    fn only_the_unattended_permissions_are_the_unattended_mode() {
        assert!(Permissions::unattended().is_unattended_mode());
        assert!(!Permissions::shipped_default().is_unattended_mode());
        let almost = Permissions::parse("create: auto\nreport: auto\nrevise: auto\nrevert: auto\n")
            .expect("valid");
        assert!(!almost.is_unattended_mode(), "retire is still ask");
        let unattended = Permissions::parse(
            "create: auto\nreport: auto\nrevise: auto\nrevert: auto\nretire: card\n",
        )
        .expect("valid");
        assert!(unattended.is_unattended_mode());
    }

    #[test]
    fn an_empty_file_is_the_shipped_default() {
        for text in ["", "\n\n", "# nothing set yet\n", "\u{feff}", "  \n\t\n"] {
            assert_eq!(
                Permissions::parse(text),
                Ok(Permissions::shipped_default()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_missing_act_takes_the_shipped_default() {
        let permissions = Permissions::parse("create: auto\nrevise: card\n").expect("valid");
        assert_eq!(permissions.policy(Act::Create), Policy::Auto);
        assert_eq!(permissions.policy(Act::Revise), Policy::Card);
        for act in [Act::Report, Act::Revert, Act::Retire] {
            assert_eq!(permissions.policy(act), Policy::Ask, "{act:?}");
        }
    }

    #[test]
    fn comments_quotes_and_crlf_are_accepted() {
        let text = concat!(
            "# mine\r\n",
            "create: 'auto'   # go\r\n",
            "report: \"auto\"\r\n",
            "  # an indented comment\r\n",
            "revise:\tcard\r\n",
            "retire: card#\r\n",
        );
        let permissions = Permissions::parse(text);
        // `card#` has no space before the `#`, so it is one unknown word, as in YAML.
        assert_eq!(
            permissions.map_err(|err| err.line),
            Err(6),
            "card# is one word"
        );
        let text = text.replace("card#", "card #");
        let permissions = Permissions::parse(&text).expect("valid");
        assert_eq!(permissions.policy(Act::Create), Policy::Auto);
        assert_eq!(permissions.policy(Act::Report), Policy::Auto);
        assert_eq!(permissions.policy(Act::Revise), Policy::Card);
        assert_eq!(permissions.policy(Act::Revert), Policy::Ask);
        assert_eq!(permissions.policy(Act::Retire), Policy::Card);
    }

    #[test]
    fn render_quotes_the_table_cell_for_each_line() {
        let default = Permissions::shipped_default().render();
        assert!(
            default.contains("create: ask      # asks before drafting, then waits on the card\n"),
            "{default}"
        );
        assert!(
            default.contains("report: ask      # asks before reporting\n"),
            "{default}"
        );
        assert!(
            default.contains("retire: ask      # asks before filing, then waits on the card\n"),
            "{default}"
        );
        let unattended = Permissions::unattended().render();
        for line in [
            "create: auto     # goes live on its own\n",
            "report: auto     # recorded, and the fixer starts\n",
            "revise: auto     # applied on its own\n",
            "revert: auto     # applied on its own\n",
            "retire: card     # waits on the card\n",
        ] {
            assert!(unattended.contains(line), "{line:?} in\n{unattended}");
        }
        assert!(
            unattended.contains("workspace/skills/")
                && unattended.contains("refused in every mode"),
            "{unattended}"
        );
    }

    #[test]
    fn every_valid_combination_round_trips() {
        let all = every_valid_permissions();
        assert_eq!(all.len(), 3 * 2 * 3 * 3 * 2);
        for permissions in all {
            let text = permissions.render();
            assert_eq!(Permissions::parse(&text), Ok(permissions), "{text}");
        }
    }

    #[test]
    fn an_unknown_act_names_its_line_and_the_five_acts() {
        let (line, message) = error("create: ask\n\nretrie: ask\n");
        assert_eq!(line, 3);
        assert!(message.contains("unknown act `retrie`"), "{message}");
        assert!(
            message.contains("create, report, revise, revert and retire"),
            "{message}"
        );
        let (_, message) = error("Create: ask\n");
        assert!(
            message.contains("the acts are lowercase: `create`"),
            "{message}"
        );
    }

    #[test]
    fn an_unknown_policy_names_its_line_and_the_three_words() {
        let (line, message) = error("# header\ncreate: yes\n");
        assert_eq!(line, 2);
        assert!(
            message.contains("unknown policy `yes` for create"),
            "{message}"
        );
        assert!(message.contains("ask, card and auto"), "{message}");
        let (_, message) = error("revise: Auto\n");
        assert!(message.contains("lowercase: `auto`"), "{message}");
        let (_, message) = error("report: 'card\n");
        assert!(message.contains("opens a quote"), "{message}");
    }

    #[test]
    fn report_cannot_wait_on_a_card() {
        let (line, message) = error("create: ask\nreport: card\n");
        assert_eq!(line, 2);
        assert!(message.contains("report files no card"), "{message}");
        assert!(
            message.contains("`report: ask` or `report: auto`"),
            "{message}"
        );
    }

    #[test]
    fn retire_is_never_auto() {
        let (line, message) = error("create: auto\nreport: auto\n# unattended\nretire: auto\n");
        assert_eq!(line, 4);
        assert!(
            message.contains("always the human's call, in every mode"),
            "{message}"
        );
        assert!(message.contains("grading its own homework"), "{message}");
        assert!(
            message.contains("`retire: ask` or `retire: card`"),
            "{message}"
        );
    }

    #[test]
    fn a_duplicate_line_names_the_first_one() {
        let (line, message) = error("create: ask\nrevise: auto\n\ncreate: auto\n");
        assert_eq!(line, 4);
        assert!(
            message.contains("create is already set on line 1"),
            "{message}"
        );
    }

    #[test]
    fn a_line_that_is_not_key_value_is_refused() {
        let (line, message) = error("create: ask\nrevise auto\n");
        assert_eq!(line, 2);
        assert!(
            message.contains("is not an `act: policy` line"),
            "{message}"
        );
        let (line, message) = error("create:auto\n");
        assert_eq!(line, 1);
        assert!(message.contains("space after the colon"), "{message}");
        let (line, message) = error("report: ask\nrevise:\n");
        assert_eq!(line, 2);
        assert!(message.contains("`revise:` has no policy"), "{message}");
    }

    #[test]
    fn yaml_structure_is_refused_with_its_line() {
        let cases = [
            (
                "permissions:\n  create: ask\n",
                1,
                "unknown act `permissions`",
            ),
            ("create: ask\n  report: ask\n", 2, "indented lines"),
            ("create: ask\n- report: ask\n", 2, "lists"),
            ("create: [ask, card]\n", 1, "flow lists"),
            ("create: {policy: ask}\n", 1, "flow mappings"),
            ("create: &mine ask\n", 1, "anchors and aliases"),
            ("revise: *mine\n", 1, "anchors and aliases"),
            ("create: !!str ask\n", 1, "tags"),
            ("create: |\n", 1, "block scalars"),
            ("---\ncreate: ask\n", 1, "document marker"),
            ("? create\n: ask\n", 1, "complex mapping keys"),
            ("\tcreate: ask\n", 1, "indented lines"),
        ];
        for (text, want_line, want) in cases {
            let (line, message) = error(text);
            assert_eq!(line, want_line, "{text:?}: {message}");
            assert!(message.contains(want), "{text:?}: {message}");
        }
    }

    #[test]
    fn every_error_displays_its_line() {
        let err = Permissions::parse("\n\nretire: auto\n").expect_err("refused");
        assert!(
            err.to_string().starts_with("permissions.yaml line 3: "),
            "{err}"
        );
    }

    #[test]
    fn long_keys_are_shortened_in_messages() {
        let key = "x".repeat(500);
        let (_, message) = error(&format!("{key}: ask\n"));
        assert!(message.len() < 200, "{message}");
        assert!(message.contains('…'), "{message}");
    }

    /// Lines made of the pieces a real file is made of, so random files are often valid.
    fn file_line() -> impl Strategy<Value = String> {
        let key = prop::sample::select(vec![
            "create", "report", "revise", "revert", "retire", "write", "Create", "", "- create",
        ]);
        let value = prop::sample::select(vec![
            "ask", "card", "auto", "'ask'", "\"auto\"", "Ask", "", "[ask]", "&a ask", "'card",
        ]);
        let tail = prop::sample::select(vec!["", "  # why", "#x", " ", "\r"]);
        let indent = prop::sample::select(vec!["", "", "", " "]);
        (
            indent,
            key,
            prop::sample::select(vec![": ", ":", " "]),
            value,
            tail,
        )
            .prop_map(|(indent, key, colon, value, tail)| {
                format!("{indent}{key}{colon}{value}{tail}")
            })
    }

    proptest! {
        #[test]
        fn any_file_parses_to_something_that_round_trips_or_to_a_real_line(
            lines in prop::collection::vec(file_line(), 0..8)
        ) {
            let text = lines.join("\n");
            match Permissions::parse(&text) {
                Ok(permissions) => {
                    prop_assert_eq!(Permissions::parse(&permissions.render()), Ok(permissions));
                }
                Err(err) => {
                    prop_assert!(err.line >= 1 && err.line <= lines.len().max(1), "{err}");
                }
            }
        }

        #[test]
        fn arbitrary_text_never_panics(text in ".{0,200}") {
            if let Ok(permissions) = Permissions::parse(&text) {
                prop_assert_eq!(Permissions::parse(&permissions.render()), Ok(permissions));
            }
        }
    }
}
