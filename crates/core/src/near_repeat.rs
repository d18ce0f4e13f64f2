//! Near-repeats: inline `execute_code` code an agent keeps running, and the file it should
//! become.
//!
//! Inline code is measured but never becomes a skill, so when the same snippet keeps
//! succeeding, or the same code with other numbers, strings or comments (a near-repeat), the
//! wrap-up suggests saving it as `bots/<bot>/<slug>.ts`. Two snippets are near-repeats when they
//! have one [`Shape`]: their token streams are equal once numbers, string and template literal
//! contents and regular expressions are replaced by placeholders and comments are dropped. The
//! tokens come from a real JavaScript tokenizer (ress), because only a tokenizer knows where a
//! string, a template's `${…}`, a comment or a regular expression starts and ends; TypeScript's
//! type syntax lexes as ordinary identifiers and punctuators, so it needs nothing more.
//!
//! Architecture invariant: everything here is pure and never panics on any input; code that
//! does not tokenize has no shape and is matched only exactly (by its digest).

use std::collections::{BTreeMap, HashMap};

use ress::prelude::{Punct, Scanner, StringLit, Template, Token};
use serde::Serialize;

use crate::digest;

/// The window the runs are counted over: the last 7 days, in milliseconds.
pub const WINDOW_MS: i64 = 7 * 24 * 60 * 60 * 1000;

/// Successful runs at which a group is first suggested.
pub(crate) const FIRST_SUGGESTION_AT: i64 = 3;

/// How many lines of the code a suggestion quotes.
pub(crate) const QUOTE_LINES: usize = 20;

/// How many characters of one quoted line are kept, so one minified line cannot fill a
/// wrap-up.
const QUOTE_LINE_CHARS: usize = 160;

/// How many varying literals the quoted file reads from its command line at most; the rest
/// stay as written, so the quote stays short.
pub(crate) const MAX_QUOTED_ARGS: usize = 8;

/// The longest literal made an arg, in characters (a default longer than that would not fit
/// its declaration's line).
const MAX_ARG_CHARS: usize = 60;

/// The most lines a suggestion's quote has: the code's [`QUOTE_LINES`] and its "more lines"
/// note, inside `runScript`'s wrapper (the import, the run line, one declaration per arg, the
/// wrapper's first and last lines and two blank lines).
pub const MAX_QUOTE_LINES: usize = QUOTE_LINES + 1 + 6 + MAX_QUOTED_ARGS;

/// How many called methods a suggested slug is made of.
const SLUG_METHODS: usize = 2;

/// The slug when the code names no game action to build one from.
const FALLBACK_SLUG: &str = "snippet";

/// How many significant tokens a member call spans at most (`bot ?. [ 'name' ]`).
const RECENT_TOKENS: usize = 6;

/// The normalised token stream of a snippet: what near-repeats have in common.
///
/// Two shapes are equal exactly when the snippets differ only in their numbers, the contents of
/// their string and template literals, their regular expressions, their comments and their
/// white space.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    text: String,
}

impl Shape {
    /// The normalised tokens, one space apart (`await bot . walkTo ( <num> , <num> ) ;`).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The key a group of near-repeats is remembered by: `shape:sha256:<hex>`, which cannot be
    /// mistaken for a snippet's own digest (`sha256:<hex>`).
    pub(crate) fn key(&self) -> String {
        format!("shape:{}", digest::sha256(self.text.as_bytes()))
    }
}

/// What kind of literal a placeholder stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LiteralKind {
    Number,
    /// A string literal or one text part of a template literal.
    String,
    Regex,
}

/// One literal value of a snippet, as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Literal {
    pub(crate) kind: LiteralKind,
    /// The literal as written: `3_200`, `'oak'`, `/^oak$/i`; a template's text part between
    /// backticks (`` `Pos ` ``).
    pub(crate) value: String,
    /// Where it is in the code, in bytes (the whole token; a template's whole part).
    #[serde(skip)]
    pub(crate) span: std::ops::Range<usize>,
}

/// The object a method was called on: the two globals `execute_code` gives a snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Receiver {
    /// `bot`: rs-sdk's high-level actions (`BotActions`).
    Bot,
    /// `sdk`: rs-sdk's low-level state access and raw actions (`BotSDK`).
    Sdk,
}

/// One use of a method of `bot` or `sdk` (`bot.walkTo`, `sdk.getState`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(crate) struct Call {
    pub(crate) receiver: Receiver,
    pub(crate) method: String,
}

impl Call {
    /// Whether the call does something in the game, as opposed to looking at its state or
    /// waiting.
    ///
    /// `bot.*` methods are actions except the few that read equipment or wait
    /// (`getEquipment`, `findEquippedItem`, `waitFor…`), so a new action rs-sdk adds counts as
    /// one. `sdk.*` methods read state except the raw `send…` dispatches (less `sendWait`,
    /// which waits, and `sendScreenshot`/`sendFindPath`, which only look) and the few helpers
    /// that click or talk (`say`, `dm`, `clickDialogByText`, `clickInterfaceOption`).
    pub(crate) fn acts_in_game(&self) -> bool {
        let method = self.method.as_str();
        match self.receiver {
            Receiver::Bot => !["get", "find", "is", "has", "count", "waitFor"]
                .iter()
                .any(|prefix| method.starts_with(prefix)),
            Receiver::Sdk => {
                (method.starts_with("send")
                    && !["sendWait", "sendScreenshot", "sendFindPath"].contains(&method))
                    || ["say", "dm", "clickDialogByText", "clickInterfaceOption"].contains(&method)
            }
        }
    }
}

/// A tokenized snippet: its shape, its literals in order and the methods of `bot` and `sdk` it
/// uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analysis {
    pub shape: Shape,
    /// Every literal in source order; near-repeats have the same number and kinds of literals,
    /// so the values line up position by position.
    pub literals: Vec<Literal>,
    pub(crate) calls: Vec<Call>,
}

impl Analysis {
    /// Whether the snippet calls at least one method that acts in the game.
    pub(crate) fn acts_in_game(&self) -> bool {
        self.calls.iter().any(Call::acts_in_game)
    }

    #[cfg(test)]
    /// The literal values in order, as written.
    pub(crate) fn literal_values(&self) -> Vec<String> {
        self.literals.iter().map(|l| l.value.clone()).collect()
    }

    /// A file name for the snippet, made of the first game actions it calls (`walk-to`,
    /// `chop-tree`, `walk-to-chop-tree`): only `[a-z0-9-]`, never empty. A raw `sdk.send…`
    /// call is named without its `send`.
    pub(crate) fn slug(&self) -> String {
        let mut methods: Vec<&str> = Vec::new();
        for call in self.calls.iter().filter(|c| c.acts_in_game()) {
            let name = match call.receiver {
                Receiver::Sdk => call.method.strip_prefix("send").unwrap_or(&call.method),
                Receiver::Bot => &call.method,
            };
            if !methods.contains(&name) {
                methods.push(name);
            }
            if methods.len() == SLUG_METHODS {
                break;
            }
        }
        let slug = methods
            .iter()
            .map(|m| kebab(m))
            .filter(|k| !k.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        if slug.is_empty() {
            FALLBACK_SLUG.to_string()
        } else {
            slug
        }
    }
}

/// Tokenizes a snippet. `None` when it does not tokenize (an unterminated string or comment, a
/// stray `}`, a character JavaScript does not allow): such a snippet is matched only exactly.
pub fn analyze(code: &str) -> Option<Analysis> {
    if trips_the_tokenizer(code) {
        return None;
    }
    let mut shape = String::with_capacity(code.len());
    let mut literals = Vec::new();
    let mut calls = Vec::new();
    // The last few significant tokens (comments left out), just enough of them to recognise
    // `bot . name`, `bot ?. name` and `bot [ 'name' ]`.
    let mut recent: Vec<Significant> = Vec::with_capacity(RECENT_TOKENS * 2);
    for item in Scanner::new(code) {
        let item = item.ok()?;
        // ress spans are byte offsets into the text; a span off a char boundary would be a
        // tokenizer bug, and is taken as code that does not tokenize rather than trusted.
        let raw = code.get(item.span.start..item.span.end)?;
        let (piece, significant) = match &item.token {
            Token::EoF => break,
            // Comments are dropped rather than replaced by a placeholder, so adding or removing
            // one keeps the shape.
            Token::Comment(_) => continue,
            Token::Number(_) => {
                literals.push(Literal {
                    kind: LiteralKind::Number,
                    value: raw.to_string(),
                    span: item.span.start..item.span.end,
                });
                ("<num>", Significant::Other)
            }
            Token::String(string) => {
                literals.push(Literal {
                    kind: LiteralKind::String,
                    value: raw.to_string(),
                    span: item.span.start..item.span.end,
                });
                let content = match string {
                    StringLit::Single(inner) | StringLit::Double(inner) => inner.content,
                };
                ("<str>", Significant::String(content.to_string()))
            }
            Token::RegEx(_) => {
                literals.push(Literal {
                    kind: LiteralKind::Regex,
                    value: raw.to_string(),
                    span: item.span.start..item.span.end,
                });
                ("<re>", Significant::Other)
            }
            Token::Template(template) => {
                // Each text part of a template is a literal of its own; the expressions between
                // them are code and stay in the shape.
                let (content, piece) = match template {
                    Template::NoSub(t) => (t.content, "`<str>`"),
                    Template::Head(t) => (t.content, "`<str>${"),
                    Template::Middle(t) => (t.content, "}<str>${"),
                    Template::Tail(t) => (t.content, "}<str>`"),
                };
                literals.push(Literal {
                    kind: LiteralKind::String,
                    value: format!("`{content}`"),
                    span: item.span.start..item.span.end,
                });
                (piece, Significant::Other)
            }
            Token::Ident(_) | Token::Keyword(_) => (raw, Significant::Word(raw.to_string())),
            Token::Punct(punct) => (raw, Significant::Punct(*punct)),
            Token::Boolean(_) | Token::Null => (raw, Significant::Other),
        };
        if !shape.is_empty() {
            shape.push(' ');
        }
        shape.push_str(piece);
        recent.push(significant);
        if let Some(call) = member_call(&recent) {
            calls.push(call);
        }
        if recent.len() >= RECENT_TOKENS * 2 {
            recent.drain(..RECENT_TOKENS);
        }
    }
    Some(Analysis {
        shape: Shape { text: shape },
        literals,
        calls,
    })
}

/// The snippet's shape; `None` when it does not tokenize.
pub fn shape(code: &str) -> Option<Shape> {
    analyze(code).map(|a| a.shape)
}

/// Whether the snippet does something in the game. Code that only looks at the game state
/// (`sdk.getState`, `sdk.getInventory`, `sdk.findNearbyLoc`), only waits (`sdk.waitForTicks`,
/// `setTimeout`, `sleep`) or does not tokenize (nothing is known about it) does not.
#[cfg(test)]
pub(crate) fn acts_in_game(code: &str) -> bool {
    analyze(code).is_some_and(|a| a.acts_in_game())
}

/// The literal values in order, as written (empty when the code does not tokenize).
#[cfg(test)]
pub(crate) fn literal_values(code: &str) -> Vec<String> {
    analyze(code)
        .map(|a| a.literal_values())
        .unwrap_or_default()
}

/// A suggested file name for the snippet, from the game actions it calls (`chop-tree`).
#[cfg(test)]
pub(crate) fn suggested_slug(code: &str) -> String {
    analyze(code).map_or_else(|| FALLBACK_SLUG.to_string(), |a| a.slug())
}

/// Whether the code holds one of the inputs ress 0.11.7 cannot take, found by the
/// `near_repeat` fuzz target. Such code is taken as not tokenizing before ress sees it, since
/// a panic or an endless loop in a wrap-up is worse than a snippet matched only exactly.
///
/// - A `\u{…}` escape that is not 1 to 6 hex digits and a `}`: ress loops forever on a
///   template literal's `\u{` that is never closed, and overflows a `u32` (a panic in debug
///   builds) on more than 8 hex digits. JavaScript allows only a code point up to `10FFFF`.
/// - `<!--`: ress slices an HTML-like comment `<!-->` backwards and panics. Such comments exist
///   only in classic scripts, never in the module code `execute_code` runs.
///
/// Both checks look at the raw text, in comments, strings and after an escaped backslash too:
/// at worst a snippet that ress could have read is matched only exactly.
fn trips_the_tokenizer(code: &str) -> bool {
    code.contains("<!--")
        || code.match_indices("\\u{").any(|(at, escape)| {
            let rest = code.as_bytes().get(at + escape.len()..).unwrap_or_default();
            let digits = rest.iter().take_while(|b| b.is_ascii_hexdigit()).count();
            !(1..=6).contains(&digits) || rest.get(digits) != Some(&b'}')
        })
}

/// One snippet of an agent's recent history: the store's `SnippetRuns`, counted over
/// [`WINDOW_MS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentSnippet {
    /// The snippet's exact digest ([`digest::snippet_digest`]), which whitespace-identical
    /// snippets share.
    pub digest: String,
    pub code: String,
    /// Successful runs in the window.
    pub ok_runs: i64,
    /// When it last ran in the window (Unix milliseconds), to quote the newest code.
    pub last_run_at: i64,
}

/// A suggestion to save inline code as a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suggestion {
    /// What the suggestion is remembered by (`Store::note_snippet_suggestion`): the snippet's
    /// digest for an exact repeat, the [`Shape::key`] for near-repeats.
    pub group_key: String,
    /// Successful runs of the group in the window.
    pub count: i64,
    /// The runs were of two or more different snippets of one shape.
    pub near_repeat: bool,
    /// The newest code of the group, cut to [`QUOTE_LINES`] lines.
    pub quote: String,
    /// The suggested file name, without `.ts`.
    pub slug: String,
    /// The newest code's literal values where the group's snippets differ: the args the file
    /// should take. Empty for an exact repeat.
    pub args: Vec<String>,
    /// What the wrap-up says, in the spec's words.
    pub message: String,
}

/// The run count at which a group is suggested next: [`FIRST_SUGGESTION_AT`] when it never
/// was, else twice the count it was last suggested at (3, 6, 12, 24, …).
pub(crate) fn next_suggestion_at(last_suggested_at: Option<i64>) -> i64 {
    match last_suggested_at {
        None => FIRST_SUGGESTION_AT,
        Some(runs) => runs.saturating_mul(2).max(FIRST_SUGGESTION_AT),
    }
}

/// The files to suggest to the agent whose bot folder is `bots/<bot>/`, from its snippet
/// history of the last 7 days and the run counts each group was last suggested at (group key →
/// runs, as `Store::snippet_suggestions` gives them).
///
/// A snippet is grouped with the others of its shape when it tokenizes, and stays alone (by its
/// digest) when it does not. A group is suggested when it succeeded at least
/// [`FIRST_SUGGESTION_AT`] times, and again when its count reaches twice the count it was last
/// suggested at. Code that tokenizes but does nothing in the game (it only looks or waits) is
/// never suggested; code that does not tokenize may be, as an exact repeat, since nothing says
/// it only looks. Suggestions come most-run first.
pub fn suggestions(
    bot: &str,
    recent: &[RecentSnippet],
    last_suggested: &HashMap<String, i64>,
) -> Vec<Suggestion> {
    // BTreeMap keeps the order of groups (and so of equal-count suggestions) stable.
    let mut groups: BTreeMap<String, Group<'_>> = BTreeMap::new();
    for snippet in recent.iter().filter(|s| s.ok_runs > 0) {
        let analysis = analyze(&snippet.code);
        let (key, shape_key) = match &analysis {
            Some(a) if !a.acts_in_game() => continue,
            Some(a) => {
                let key = a.shape.key();
                (key.clone(), Some(key))
            }
            None => (snippet.digest.clone(), None),
        };
        groups
            .entry(key)
            .or_insert_with(|| Group {
                shape_key,
                members: Vec::new(),
            })
            .members
            .push(Member { snippet, analysis });
    }
    let mut out: Vec<Suggestion> = groups
        .into_values()
        .filter_map(|group| group.suggestion(bot, last_suggested))
        .collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.group_key.cmp(&b.group_key))
    });
    out
}

/// The snippets of one shape (or one snippet that does not tokenize).
struct Group<'a> {
    shape_key: Option<String>,
    members: Vec<Member<'a>>,
}

struct Member<'a> {
    snippet: &'a RecentSnippet,
    analysis: Option<Analysis>,
}

/// Which kinds of literal differ between the snippets of a group.
#[derive(Debug, Clone, Copy, Default)]
struct Differences {
    numbers: bool,
    strings: bool,
}

impl Group<'_> {
    fn suggestion(&self, bot: &str, last_suggested: &HashMap<String, i64>) -> Option<Suggestion> {
        let mut digests: Vec<&str> = self
            .members
            .iter()
            .map(|m| m.snippet.digest.as_str())
            .collect();
        digests.sort_unstable();
        digests.dedup();
        let count = self
            .members
            .iter()
            .fold(0i64, |sum, m| sum.saturating_add(m.snippet.ok_runs));
        let near_repeat = digests.len() >= 2;
        let group_key = match (&self.shape_key, near_repeat) {
            (Some(shape_key), true) => shape_key.clone(),
            _ => digests.first()?.to_string(),
        };
        // A group that was suggested under one of its snippets' digests before a second
        // version joined it keeps its cadence under the shape's key, and the other way round.
        let last = self
            .shape_key
            .iter()
            .map(String::as_str)
            .chain(digests.iter().copied())
            .filter_map(|key| last_suggested.get(key).copied())
            .max();
        if count < next_suggestion_at(last) {
            return None;
        }
        let newest = self.members.iter().max_by(|a, b| {
            (a.snippet.last_run_at, a.snippet.ok_runs)
                .cmp(&(b.snippet.last_run_at, b.snippet.ok_runs))
                .then_with(|| b.snippet.digest.cmp(&a.snippet.digest))
        })?;
        let (varying, differences) = if near_repeat {
            self.varying_literals(newest)
        } else {
            (Vec::new(), Differences::default())
        };
        let args: Vec<String> = varying.iter().map(|l| l.value.clone()).collect();
        let slug = newest
            .analysis
            .as_ref()
            .map_or_else(|| FALLBACK_SLUG.to_string(), Analysis::slug);
        let file = format!("bots/{bot}/{slug}.ts");
        let message = match (differences.numbers, differences.strings) {
            (true, false) => format!(
                "You've run this {count}× with different numbers; save it as {file} and pass the numbers as args."
            ),
            (false, true) => format!(
                "You've run this {count}× with different strings; save it as {file} and pass the strings as args."
            ),
            (true, true) => format!(
                "You've run this {count}× with different numbers and strings; save it as {file} and pass them as args."
            ),
            // Snippets that differ only in comments or white space have nothing to pass.
            (false, false) => format!(
                "You've run this {count}×; save it as {file} and run the file from then on."
            ),
        };
        Some(Suggestion {
            group_key,
            count,
            near_repeat,
            quote: as_script(&newest.snippet.code, &varying, &file),
            slug,
            args,
            message,
        })
    }

    /// The newest snippet's literals at the positions where the group's snippets differ.
    fn varying_literals<'m>(&self, newest: &'m Member<'_>) -> (Vec<&'m Literal>, Differences) {
        let mut args = Vec::new();
        let mut differences = Differences::default();
        let Some(newest) = &newest.analysis else {
            return (args, differences);
        };
        for (position, literal) in newest.literals.iter().enumerate() {
            let differs = self.members.iter().any(|m| {
                m.analysis
                    .as_ref()
                    .and_then(|a| a.literals.get(position))
                    .is_some_and(|other| other.value != literal.value)
            });
            if differs {
                match literal.kind {
                    LiteralKind::Number => differences.numbers = true,
                    LiteralKind::String | LiteralKind::Regex => differences.strings = true,
                }
                args.push(literal);
            }
        }
        (args, differences)
    }
}

/// The code as the file the wrap-up suggests: inside rs-sdk's `runScript` wrapper, as a
/// standalone `bots/<bot>/<name>.ts` must be, with the literals the near-repeats differ in
/// (`varying`) read from the command line (`bun bots/<bot>/<slug>.ts 3222 3220`), the newest
/// run's values as defaults. Numbers and plain strings become args; a template's text part
/// or a regular expression stays as written, since it cannot be swapped for a name alone.
fn as_script(code: &str, varying: &[&Literal], file: &str) -> String {
    let mut body = String::with_capacity(code.len() + 16);
    let mut declarations = Vec::new();
    let mut values = Vec::new();
    let mut at = 0;
    for literal in varying {
        let swappable = match literal.kind {
            LiteralKind::Number => true,
            LiteralKind::String => {
                literal.value.starts_with(['\'', '"'])
                    && code.get(literal.span.clone()) == Some(&literal.value)
            }
            LiteralKind::Regex => false,
        };
        let fits = literal.value.chars().count() <= MAX_ARG_CHARS
            && !literal.value.contains(['\n', '\r', '\u{2028}', '\u{2029}']);
        if !swappable
            || !fits
            || declarations.len() >= MAX_QUOTED_ARGS
            || literal.span.start < at
            || code.get(at..literal.span.start).is_none()
        {
            continue;
        }
        let name = format!("arg{}", declarations.len() + 1);
        let index = declarations.len() + 2;
        declarations.push(match literal.kind {
            LiteralKind::Number => format!(
                "const {name} = Number(process.argv[{index}] ?? {});",
                literal.value
            ),
            _ => format!("const {name} = process.argv[{index}] ?? {};", literal.value),
        });
        values.push(match literal.kind {
            LiteralKind::Number => literal.value.replace('_', ""),
            _ => literal.value.clone(),
        });
        body.push_str(&code[at..literal.span.start]);
        body.push_str(&name);
        at = literal.span.end;
    }
    body.push_str(code.get(at..).unwrap_or(""));
    let mut out = String::from("import { runScript } from '../../sdk/runner';\n\n");
    if !declarations.is_empty() {
        out.push_str(&format!("// bun {file} {}\n", values.join(" ")));
        for declaration in &declarations {
            out.push_str(declaration);
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str("await runScript(async ({ bot, sdk }) => {\n");
    for line in quote(&body).lines() {
        if line.is_empty() {
            out.push('\n');
        } else {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("}, { timeout: 60_000 });\n");
    out
}

/// The code as a wrap-up quotes it: blank lines at either end dropped, at most
/// [`QUOTE_LINES`] lines of at most [`QUOTE_LINE_CHARS`] characters, and a last line saying how
/// many more there are.
fn quote(code: &str) -> String {
    let lines: Vec<&str> = code.lines().map(str::trim_end).collect();
    let start = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(start, |e| e + 1);
    let body = &lines[start..end];
    let mut out = String::new();
    for line in body.iter().take(QUOTE_LINES) {
        if line.chars().count() > QUOTE_LINE_CHARS {
            out.extend(line.chars().take(QUOTE_LINE_CHARS));
            out.push('…');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if body.len() > QUOTE_LINES {
        let more = body.len() - QUOTE_LINES;
        out.push_str(&format!(
            "// … {more} more line{}\n",
            if more == 1 { "" } else { "s" }
        ));
    }
    out
}

/// A significant token, as [`member_call`] needs it.
#[derive(Debug, Clone, PartialEq)]
enum Significant {
    /// An identifier or keyword, with its text.
    Word(String),
    Punct(Punct),
    /// A string literal, with its content (a method named by `bot['walkTo']`).
    String(String),
    Other,
}

/// The call the last tokens complete, if they are `bot . name`, `bot ?. name`, `bot [ 'name' ]`
/// or `bot ?. [ 'name' ]` (or the same on `sdk`). `ctx.bot.walkTo` counts too: in a
/// `runScript` body `ctx.bot` is rs-sdk's bot.
fn member_call(recent: &[Significant]) -> Option<Call> {
    use Significant::{Punct as P, String as S, Word as W};
    let (receiver, method) = match recent {
        [.., W(r), P(Punct::Period), W(m)] => (r, m),
        [.., W(r), P(Punct::QuestionMark), P(Punct::Period), W(m)] => (r, m),
        [
            ..,
            W(r),
            P(Punct::OpenBracket),
            S(m),
            P(Punct::CloseBracket),
        ] => (r, m),
        [
            ..,
            W(r),
            P(Punct::QuestionMark),
            P(Punct::Period),
            P(Punct::OpenBracket),
            S(m),
            P(Punct::CloseBracket),
        ] => (r, m),
        _ => return None,
    };
    let receiver = match receiver.as_str() {
        "bot" => Receiver::Bot,
        "sdk" => Receiver::Sdk,
        _ => return None,
    };
    Some(Call {
        receiver,
        method: method.clone(),
    })
}

/// `chopTree` → `chop-tree`, `useItemOnLoc` → `use-item-on-loc`, `XPDrop` → `xp-drop`: only
/// `[a-z0-9-]`, with no leading, trailing or double dash.
fn kebab(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 4);
    let push_dash = |out: &mut String| {
        if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    };
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let previous = i.checked_sub(1).and_then(|p| chars.get(p)).copied();
            let next = chars.get(i + 1).copied();
            let starts_word = previous
                .is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
                || (previous.is_some_and(|p| p.is_ascii_uppercase())
                    && next.is_some_and(|n| n.is_ascii_lowercase()));
            if starts_word {
                push_dash(&mut out);
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else {
            push_dash(&mut out);
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snippet(code: &str, ok_runs: i64, last_run_at: i64) -> RecentSnippet {
        RecentSnippet {
            digest: digest::snippet_digest(code),
            code: code.to_string(),
            ok_runs,
            last_run_at,
        }
    }

    fn suggest(recent: &[RecentSnippet]) -> Vec<Suggestion> {
        suggestions("buzz", recent, &HashMap::new())
    }

    #[test]
    fn same_code_with_other_numbers_strings_or_comments_has_one_shape() {
        let base = shape("await bot.walkTo(3200, 3210);\nawait bot.chopTree('oak');").unwrap();
        for variant in [
            "await bot.walkTo(3105, 3411);\nawait bot.chopTree('oak');",
            "await bot.walkTo(3_105, 0xC0);\nawait bot.chopTree(\"willow\");",
            "// west of Draynor\nawait bot.walkTo(3105, 3411); /* then chop */\nawait bot.chopTree('yew');",
            "await   bot.walkTo( 1,2 )\n;   await bot.chopTree( '' )  ;",
        ] {
            assert_eq!(shape(variant).as_ref(), Some(&base), "{variant}");
        }
    }

    #[test]
    fn template_text_is_a_literal_and_its_expressions_are_code() {
        let base = shape("console.log(`at ${x} and ${y}`)").unwrap();
        assert_eq!(
            shape("console.log(`now ${x} then ${y}!`)").as_ref(),
            Some(&base)
        );
        assert_ne!(
            shape("console.log(`at ${y} and ${x}`)").as_ref(),
            Some(&base)
        );
        // Nested templates are tokenized, not cut at the first backtick.
        assert_eq!(shape("f(`a ${`b ${x}`} c`)"), shape("f(`d ${`e ${x}`} f`)"));
        assert_ne!(shape("f(`a ${`b ${x}`} c`)"), shape("f(`a ${`b ${y}`} c`)"));
    }

    #[test]
    fn a_changed_call_has_another_shape() {
        let base = shape("await bot.walkTo(3200, 3210)").unwrap();
        for changed in [
            "await bot.walkTo(3200, 3210, 2)",
            "await bot.walkTo(x, 3210)",
            "bot.walkTo(3200, 3210)",
            "await bot.walkTo('3200', 3210)",
        ] {
            assert_ne!(shape(changed).as_ref(), Some(&base), "{changed}");
        }
    }

    #[test]
    fn a_different_method_has_another_shape() {
        assert_ne!(
            shape("await bot.chopTree('oak')"),
            shape("await bot.pickupItem('oak')")
        );
        assert_ne!(
            shape("await sdk.sendWalk(1, 2)"),
            shape("await bot.walkTo(1, 2)")
        );
    }

    #[test]
    fn regular_expressions_are_told_from_division() {
        let regex = analyze("if (ok) /oak/i.test(name); await bot.chopTree(/^oak$/i)").unwrap();
        assert_eq!(
            regex.literal_values(),
            vec!["/oak/i".to_string(), "/^oak$/i".to_string()]
        );
        let division = analyze("const half = total / 2 / scale;").unwrap();
        assert_eq!(division.literal_values(), vec!["2".to_string()]);
        assert_eq!(
            division.shape.text(),
            "const half = total / <num> / scale ;"
        );
    }

    #[test]
    fn numbers_of_every_notation_are_numbers_kept_as_written() {
        let analysis = analyze("f(1_000, 0xff, 0b101, 0o17, 10n, .5, 1e-7)").unwrap();
        assert_eq!(
            analysis.literal_values(),
            ["1_000", "0xff", "0b101", "0o17", "10n", ".5", "1e-7"]
        );
        assert!(
            analysis
                .literals
                .iter()
                .all(|l| l.kind == LiteralKind::Number)
        );
        assert_eq!(
            shape("f(1_000, 0xff, 0b101, 0o17, 10n, .5, 1e-7)"),
            shape("f(1, 2, 3, 4, 5, 6, 7)")
        );
    }

    #[test]
    fn literal_values_come_in_source_order() {
        assert_eq!(
            literal_values(
                "await bot.walkTo(3200, 3210); await bot.chopTree('oak'); log(`n=${n}`)"
            ),
            ["3200", "3210", "'oak'", "`n=`", "``"]
        );
    }

    #[test]
    fn typescript_types_tokenize() {
        let analysis =
            analyze("const trees: Array<NearbyLoc> = []; const t = sdk.findNearbyLoc(/tree/i)!; await bot.chopTree(t as NearbyLoc);")
                .unwrap();
        assert!(analysis.acts_in_game());
    }

    #[test]
    fn code_that_does_not_tokenize_has_no_shape() {
        for broken in [
            "await bot.chopTree('oak",
            "/* never closed",
            "}",
            "a = \"\\",
        ] {
            assert_eq!(shape(broken), None, "{broken}");
            assert!(!acts_in_game(broken));
            assert_eq!(suggested_slug(broken), "snippet");
        }
    }

    #[test]
    fn a_code_point_escape_ress_cannot_read_is_code_that_does_not_tokenize() {
        for escape in [
            "`\\u{a",
            "`\\u{123456789}`",
            "x = \\u{1234567}",
            "'\\u{zz}'",
        ] {
            assert_eq!(shape(escape), None, "{escape}");
        }
        assert!(shape("log(`\\u{1F600} \\u{41}`); await bot.say('\\u{10FFFF}')").is_some());
    }

    #[test]
    fn look_only_and_wait_only_code_does_not_act() {
        for passive in [
            "return sdk.getState()",
            "const inv = sdk.getInventory(); return inv.length",
            "return sdk.findNearbyLoc(/tree/i)",
            "return [sdk.getSkill('woodcutting'), sdk.getSkillXp('mining')]",
            "await sdk.waitForTicks(5)",
            "await new Promise(r => setTimeout(r, 2000))",
            "await sleep(500)",
            "await bot.waitForIdle(); return bot.getEquipment()",
            "await sdk.sendWait(3); await sdk.scanNearbyLocs(20)",
            // Naming an action in a comment or a string does not do it.
            "// await bot.walkTo(1, 2)\nconsole.log('bot.walkTo'); return sdk.getState()",
            "return 6 * 7",
        ] {
            assert!(!acts_in_game(passive), "{passive}");
        }
    }

    #[test]
    fn code_that_calls_an_action_acts() {
        for active in [
            "await bot.walkTo(3200, 3200)",
            "await bot.chopTree()",
            "await bot.attackNpc('goblin')",
            "await bot.openBank()",
            "await sdk.sendClickDialog(1)",
            "await sdk.clickDialogByText(/yes/i)",
            "await sdk.say('hi')",
            "await ctx.bot.chopTree()",
            "await bot?.walkTo(1, 2)",
            "await bot['walkTo'](1, 2)",
        ] {
            assert!(acts_in_game(active), "{active}");
        }
    }

    #[test]
    fn slugs_come_from_the_actions_called() {
        assert_eq!(
            suggested_slug("const t = sdk.findNearbyLoc(/oak/i); await bot.chopTree(t)"),
            "chop-tree"
        );
        assert_eq!(suggested_slug("await bot.walkTo(1, 2)"), "walk-to");
        assert_eq!(
            suggested_slug(
                "await bot.walkTo(1, 2); await bot.chopTree(); await bot.walkTo(3, 4); await bot.openBank()"
            ),
            "walk-to-chop-tree"
        );
        assert_eq!(
            suggested_slug("await sdk.sendClickDialog(0)"),
            "click-dialog"
        );
        assert_eq!(
            suggested_slug("await bot.useItemOnLoc('fish', 'range')"),
            "use-item-on-loc"
        );
        assert_eq!(suggested_slug("return sdk.getState()"), "snippet");
        assert_eq!(kebab("XPDrop"), "xp-drop");
        assert_eq!(kebab("été_2"), "t-2");
        assert_eq!(kebab("__"), "");
    }

    #[test]
    fn an_exact_repeat_is_suggested_at_three_successful_runs() {
        let code = "await bot.chopTree('oak');\nawait bot.dropItem(/logs/i);";
        assert!(suggest(&[snippet(code, 2, 10)]).is_empty());
        let suggested = suggest(&[snippet(code, 3, 10)]);
        assert_eq!(suggested.len(), 1);
        let s = &suggested[0];
        assert_eq!(s.group_key, digest::snippet_digest(code));
        assert_eq!((s.count, s.near_repeat), (3, false));
        assert_eq!(s.slug, "chop-tree-drop-item");
        assert!(s.args.is_empty());
        assert_eq!(
            s.message,
            "You've run this 3×; save it as bots/buzz/chop-tree-drop-item.ts and run the file from then on."
        );
        // The file to save, in rs-sdk's wrapper; an exact repeat has nothing to pass.
        assert_eq!(
            s.quote,
            "import { runScript } from '../../sdk/runner';\n\n\
             await runScript(async ({ bot, sdk }) => {\n    \
             await bot.chopTree('oak');\n    \
             await bot.dropItem(/logs/i);\n\
             }, { timeout: 60_000 });\n"
        );
    }

    #[test]
    fn failed_runs_do_not_count() {
        let code = "await bot.chopTree('oak')";
        assert!(suggest(&[snippet(code, 2, 10)]).is_empty());
        // A version that never succeeded in the window does not make a near-repeat either.
        assert!(
            suggest(&[
                snippet(code, 2, 10),
                snippet("await bot.chopTree('yew')", 0, 11)
            ])
            .is_empty()
        );
    }

    #[test]
    fn near_repeats_with_other_numbers_are_one_group_suggested_with_args() {
        let recent = [
            snippet(
                "await bot.walkTo(3200, 3210);\nawait bot.chopTree('oak');",
                2,
                10,
            ),
            snippet(
                "await bot.walkTo(3105, 3210);\nawait bot.chopTree('oak');",
                2,
                30,
            ),
            snippet(
                "// again\nawait bot.walkTo(3090, 3210);\nawait bot.chopTree('oak');",
                1,
                20,
            ),
        ];
        let suggested = suggest(&recent);
        assert_eq!(suggested.len(), 1, "{suggested:?}");
        let s = &suggested[0];
        assert!(s.near_repeat);
        assert_eq!(s.count, 5);
        assert_eq!(s.group_key, shape(&recent[0].code).unwrap().key());
        assert_eq!(s.args, ["3105"], "only the values that differ are args");
        assert_eq!(s.slug, "walk-to-chop-tree");
        assert_eq!(
            s.message,
            "You've run this 5× with different numbers; save it as bots/buzz/walk-to-chop-tree.ts and pass the numbers as args."
        );
        // The newest code, inside rs-sdk's wrapper, with the number that varies as an arg.
        assert_eq!(
            s.quote,
            "import { runScript } from '../../sdk/runner';\n\n\
             // bun bots/buzz/walk-to-chop-tree.ts 3105\n\
             const arg1 = Number(process.argv[2] ?? 3105);\n\n\
             await runScript(async ({ bot, sdk }) => {\n    \
             await bot.walkTo(arg1, 3210);\n    \
             await bot.chopTree('oak');\n\
             }, { timeout: 60_000 });\n"
        );
    }

    #[test]
    fn varying_strings_become_args_and_templates_and_regexes_stay_as_written() {
        let recent = [
            snippet(
                "await bot.chopTree('oak', /^Oak$/, `at ${1}`, 1_000)",
                2,
                10,
            ),
            snippet(
                "await bot.chopTree('willow', /^Willow$/, `by ${1}`, 2_000)",
                1,
                20,
            ),
        ];
        let s = &suggest(&recent)[0];
        assert!(
            s.quote.contains(
                "const arg1 = process.argv[2] ?? 'willow';\nconst arg2 = Number(process.argv[3] ?? 2_000);"
            ),
            "{}",
            s.quote
        );
        assert!(
            s.quote
                .contains("// bun bots/buzz/chop-tree.ts 'willow' 2000"),
            "{}",
            s.quote
        );
        assert!(
            s.quote
                .contains("await bot.chopTree(arg1, /^Willow$/, `by ${1}`, arg2)"),
            "{}",
            s.quote
        );
    }

    #[test]
    fn near_repeats_with_other_strings_are_named_so() {
        let recent = [
            snippet("await bot.chopTree('oak')", 2, 10),
            snippet("await bot.chopTree('willow')", 1, 20),
        ];
        let s = &suggest(&recent)[0];
        assert_eq!(s.args, ["'willow'"]);
        assert_eq!(
            s.message,
            "You've run this 3× with different strings; save it as bots/buzz/chop-tree.ts and pass the strings as args."
        );
        let both = [
            snippet("await bot.walkTo(1, 2); await bot.chopTree('oak')", 2, 10),
            snippet("await bot.walkTo(5, 2); await bot.chopTree('yew')", 1, 20),
        ];
        let s = &suggest(&both)[0];
        assert_eq!(s.args, ["5", "'yew'"]);
        assert!(
            s.message.contains("with different numbers and strings"),
            "{}",
            s.message
        );
    }

    #[test]
    fn a_changed_call_or_another_method_is_another_group() {
        let recent = [
            snippet("await bot.chopTree('oak')", 2, 10),
            snippet("await bot.chopTree(tree)", 2, 20),
            snippet("await bot.pickupItem('oak')", 2, 30),
        ];
        assert!(suggest(&recent).is_empty(), "three groups of two runs each");
    }

    #[test]
    fn look_only_and_wait_only_code_is_never_suggested() {
        let recent = [
            snippet("return sdk.getState()", 40, 10),
            snippet("await sdk.waitForTicks(5)", 12, 20),
            snippet("await sdk.waitForTicks(9)", 12, 21),
            snippet("return sdk.getInventory()", 7, 30),
        ];
        assert!(suggest(&recent).is_empty());
    }

    #[test]
    fn a_snippet_that_does_not_tokenize_is_matched_only_exactly() {
        let broken = |n: i64| format!("await bot.walkTo({n}, 3200); }}");
        let recent = [snippet(&broken(1), 2, 10), snippet(&broken(2), 2, 20)];
        assert!(
            suggest(&recent).is_empty(),
            "no near-repeat without a shape"
        );
        let suggested = suggest(&[snippet(&broken(1), 3, 10)]);
        assert_eq!(suggested.len(), 1);
        assert_eq!(suggested[0].group_key, digest::snippet_digest(&broken(1)));
        assert!(!suggested[0].near_repeat);
        assert_eq!(suggested[0].slug, "snippet");
    }

    #[test]
    fn the_suggestion_comes_again_at_6_12_and_24_runs() {
        let code = "await bot.chopTree()";
        let mut last = HashMap::new();
        let mut suggested_at = Vec::new();
        for runs in 1..=30 {
            if let Some(s) = suggestions("buzz", &[snippet(code, runs, runs)], &last).pop() {
                suggested_at.push(runs);
                last.insert(s.group_key, s.count);
            }
        }
        assert_eq!(suggested_at, [3, 6, 12, 24]);
        assert_eq!(next_suggestion_at(None), 3);
        assert_eq!(next_suggestion_at(Some(5)), 10);
    }

    #[test]
    fn a_second_version_keeps_the_cadence_of_the_first() {
        let first = snippet("await bot.walkTo(1, 2)", 3, 10);
        let last = HashMap::from([(first.digest.clone(), 3)]);
        let mut recent = vec![first, snippet("await bot.walkTo(7, 2)", 1, 20)];
        assert!(
            suggestions("buzz", &recent, &last).is_empty(),
            "4 runs: the next suggestion is due at 6"
        );
        recent[1].ok_runs = 3;
        let suggested = suggestions("buzz", &recent, &last);
        assert_eq!(suggested.len(), 1);
        assert!(suggested[0].near_repeat);
        assert_eq!(suggested[0].count, 6);
    }

    #[test]
    fn snippets_that_differ_only_in_comments_have_nothing_to_pass() {
        let recent = [
            snippet("// oaks\nawait bot.chopTree()", 2, 10),
            snippet("await bot.chopTree() // again", 2, 20),
        ];
        let s = &suggest(&recent)[0];
        assert!(s.near_repeat && s.args.is_empty());
        assert_eq!(
            s.message,
            "You've run this 4×; save it as bots/buzz/chop-tree.ts and run the file from then on."
        );
    }

    #[test]
    fn the_quote_is_the_code_cut_to_twenty_lines() {
        let long: String = (0..30)
            .map(|i| format!("await bot.walkTo({i}, 1);\n"))
            .collect();
        let quoted = quote(&format!("\n\n{long}\n"));
        let lines: Vec<&str> = quoted.lines().collect();
        assert_eq!(lines.len(), QUOTE_LINES + 1);
        assert_eq!(lines[0], "await bot.walkTo(0, 1);");
        assert_eq!(lines[QUOTE_LINES], "// … 10 more lines");
        let wide = quote(&"x".repeat(500));
        assert_eq!(wide.chars().count(), QUOTE_LINE_CHARS + 2);
    }

    #[test]
    fn a_long_near_repeat_is_quoted_with_at_most_eight_args_within_the_line_cap() {
        let version = |base: i32| -> String {
            (0..30)
                .map(|i| format!("await bot.walkTo({}, 1);\n", base + i))
                .collect()
        };
        let recent = [snippet(&version(0), 2, 10), snippet(&version(100), 2, 20)];
        let s = &suggest(&recent)[0];
        assert_eq!(s.args.len(), 30, "every varying value is still named");
        let declarations = s
            .quote
            .lines()
            .filter(|l| l.starts_with("const arg"))
            .count();
        assert_eq!(declarations, MAX_QUOTED_ARGS);
        assert!(s.quote.lines().count() <= MAX_QUOTE_LINES, "{}", s.quote);
        assert!(
            s.quote.contains("    await bot.walkTo(arg8, 1);"),
            "{}",
            s.quote
        );
        assert!(
            s.quote.contains("    await bot.walkTo(108, 1);"),
            "{}",
            s.quote
        );
        assert!(
            s.quote.ends_with("}, { timeout: 60_000 });\n"),
            "{}",
            s.quote
        );
    }

    #[test]
    fn suggestions_come_most_run_first() {
        let recent = [
            snippet("await bot.chopTree()", 3, 10),
            snippet("await bot.openBank()", 5, 20),
        ];
        let counts: Vec<i64> = suggest(&recent).iter().map(|s| s.count).collect();
        assert_eq!(counts, [5, 3]);
    }

    mod properties {
        use proptest::prelude::*;

        use super::super::*;

        /// A number in one of JavaScript's notations.
        fn number() -> impl Strategy<Value = String> {
            prop_oneof![
                (0u32..100_000).prop_map(|n| n.to_string()),
                (0u32..100_000).prop_map(|n| format!("0x{n:x}")),
                (1u32..1_000).prop_map(|n| format!("{n}_000")),
                (0u32..1_000).prop_map(|n| format!("{n}n")),
                (0u32..1_000, 1u32..99).prop_map(|(a, b)| format!("{a}.{b}")),
            ]
        }

        /// Snippet-like code with `#` where a number goes.
        fn template() -> impl Strategy<Value = Vec<&'static str>> {
            proptest::collection::vec(
                prop_oneof![
                    Just("await bot.walkTo(#, #);\n"),
                    Just("await sdk.waitForTicks(#);\n"),
                    Just("for (let i = #; i < #; i++) { await bot.chopTree(); }\n"),
                    Just("const x = sdk.getState()!.player.x - #;\n"),
                    Just("if (x > #) /oak/i.test(s) ? a / # : b;\n"),
                    Just("log(`at ${#} of ${n * #}`);\n"),
                    Just("// step #\n"),
                    Just("const t: Array<number> = [#, -#];\n"),
                ],
                1..8,
            )
        }

        fn fill(template: &[&str], numbers: &[String]) -> String {
            let mut out = String::new();
            let mut next = numbers.iter().cycle();
            for piece in template {
                for (i, part) in piece.split('#').enumerate() {
                    if i > 0 {
                        out.push_str(next.next().map_or("0", String::as_str));
                    }
                    out.push_str(part);
                }
            }
            out
        }

        proptest! {
            #[test]
            fn shape_never_panics_on_any_input(code in any::<String>()) {
                let _ = analyze(&code);
                let slug = suggested_slug(&code);
                prop_assert!(!slug.is_empty());
                prop_assert!(slug.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
            }

            #[test]
            fn shape_never_panics_on_code_like_input(
                code in "[a-z.()\\[\\]{}`$'\"/*\\\\ \n0-9_xn?!=<>;:,#@-]{0,64}"
            ) {
                let _ = analyze(&code);
                let _ = suggestions("b", &[RecentSnippet {
                    digest: digest::snippet_digest(&code),
                    code: code.clone(),
                    ok_runs: 3,
                    last_run_at: 0,
                }], &HashMap::new());
            }

            #[test]
            fn shape_is_stable_under_renumbering(
                template in template(),
                first in proptest::collection::vec(number(), 1..6),
                second in proptest::collection::vec(number(), 1..6),
            ) {
                let a = fill(&template, &first);
                let b = fill(&template, &second);
                let shape_a = shape(&a);
                prop_assert!(shape_a.is_some(), "{a}");
                prop_assert_eq!(shape_a, shape(&b), "{} / {}", a, b);
            }
        }
    }
}
