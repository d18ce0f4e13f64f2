//! The path check: every path-like token in the text must be shown to lie inside the home tree.

use std::collections::HashSet;

use super::{Blocker, BlockerKind, CheckContext, Layout, echo};

/// Why a path cannot be shown to be inside the home tree.
enum Verdict {
    /// It resolves (lexically) outside the home tree; `resolved` when that differs from
    /// the token.
    Outside {
        resolved: Option<String>,
    },
    /// A Windows absolute path, which a unix home tree cannot hold.
    Windows,
    NetworkShare,
    Variable,
    Tilde,
    DriveRelative,
}

pub(super) fn blockers(text: &str, ctx: &CheckContext, layout: &Layout) -> Vec<Blocker> {
    let home = components(ctx.home, &[]);
    let workspace = components(ctx.workspace, &[]);
    let mut seen = HashSet::new();
    let mut blockers = Vec::new();
    for (index, line) in text.split('\n').enumerate() {
        // A double-quoted YAML value is judged as it reads, not as it is escaped: the door
        // writes `\d` as `"\\d"`, which is not the start of a network share.
        let in_frontmatter = layout.closing != 0 && index < layout.closing;
        let decoded;
        let line = if in_frontmatter && line.contains('"') {
            decoded = unescape_double_quoted(line);
            decoded.as_str()
        } else {
            line
        };
        for token in tokens(line) {
            let Some(verdict) = judge(&token, &home, &workspace) else {
                continue;
            };
            if !seen.insert(token.clone()) {
                continue;
            }
            let shown = echo(&ctx.scrubber.scrub(&token).text);
            let home_shown = echo(ctx.home);
            let (kind, message) = match verdict {
                Verdict::Outside { resolved } => (
                    BlockerKind::PathOutsideHome,
                    match resolved {
                        Some(resolved) => format!(
                            "`{shown}` resolves to {}, outside the home tree {home_shown}: \
                             a skill may only name paths inside it",
                            echo(&ctx.scrubber.scrub(&resolved).text)
                        ),
                        None => format!(
                            "`{shown}` is outside the home tree {home_shown}: a skill may \
                             only name paths inside it"
                        ),
                    },
                ),
                Verdict::Windows => (
                    BlockerKind::PathOutsideHome,
                    format!(
                        "`{shown}` is a Windows path, which cannot lie inside the home tree \
                         {home_shown}: name the file by its path under {home_shown}"
                    ),
                ),
                Verdict::NetworkShare => unprovable(&shown, "is a network share", &home_shown),
                Verdict::Variable => unprovable(&shown, "depends on a variable", &home_shown),
                Verdict::Tilde => unprovable(&shown, "starts with a tilde", &home_shown),
                Verdict::DriveRelative => {
                    unprovable(&shown, "is a drive-relative Windows path", &home_shown)
                }
            };
            let number = index + 1;
            blockers.push(Blocker {
                kind,
                line: number,
                field: layout.field_of(number),
                message,
            });
        }
    }
    blockers
}

/// A line with its double-quoted YAML scalars decoded: `\\` is one backslash and `\"` a
/// quote; any other escape stands for a character no path holds (a tab, a control
/// character), so it becomes a space. Text outside the quotes is left as it is.
fn unescape_double_quoted(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quoted = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                out.push(c);
            }
            '\\' if quoted => match chars.next() {
                Some('\\') => out.push('\\'),
                Some('"') => out.push('"'),
                Some('/') => out.push('/'),
                Some(_) | None => out.push(' '),
            },
            c => out.push(c),
        }
    }
    out
}

fn unprovable(shown: &str, what: &str, home: &str) -> (BlockerKind, String) {
    (
        BlockerKind::PathUnprovable,
        format!(
            "`{shown}` {what}, so it cannot be shown to be inside the home tree {home}: write \
             the path out in full under {home}, or relative to the workspace"
        ),
    )
}

/// The path-like pieces of a line: split on white space, quotes, backticks, brackets and
/// the punctuation that ends a path in prose, with sentence punctuation trimmed off. A
/// shell's braces are expanded (`{/etc/passwd,/etc/shadow}`, `{notes,reports}/week.md`), so
/// a comma inside them does not split; a token holding a `${…}` variable is left whole for
/// the variable rule.
fn tokens(line: &str) -> Vec<String> {
    const SPLITS: &str = "'\"`‘’“”()[]<>,;=";
    let mut raw = Vec::new();
    let (mut start, mut depth) = (0, 0usize);
    for (index, c) in line.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth > 0 => {}
            c if c.is_whitespace() || SPLITS.contains(c) => {
                raw.push(&line[start..index]);
                start = index + c.len_utf8();
                depth = 0;
            }
            _ => {}
        }
    }
    raw.push(&line[start..]);
    let mut out = Vec::new();
    for token in raw {
        if token.contains("${") {
            out.push(token.to_string());
        } else {
            let mut words = Vec::new();
            expand_braces(token, &mut words, MAX_EXPANSIONS);
            out.extend(words);
        }
    }
    out.into_iter()
        .map(|token| trim_token(&token).to_string())
        .filter(|token| !token.is_empty())
        .collect()
}

/// How many words one token's braces may expand to: enough for any real command line, and
/// a bound on what a file of nested braces can cost.
const MAX_EXPANSIONS: usize = 64;

/// A shell's brace expansion of `token` into `out` (at most `budget` words): `a{b,c}d` is
/// `abd` and `acd`. A brace without its partner is dropped, as a separator.
fn expand_braces(token: &str, out: &mut Vec<String>, budget: usize) {
    if out.len() >= budget {
        return;
    }
    let Some(open) = token.find('{') else {
        out.extend(token.split('}').map(str::to_string));
        return;
    };
    let mut depth = 0usize;
    let mut close = None;
    let mut commas = Vec::new();
    for (index, c) in token[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + index);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(open + index),
            _ => {}
        }
    }
    let Some(close) = close else {
        // No partner: the `{` splits the token.
        out.push(token[..open].replace('}', ""));
        expand_braces(&token[open + 1..], out, budget);
        return;
    };
    let (prefix, suffix) = (&token[..open], &token[close + 1..]);
    let mut bounds = vec![open];
    bounds.extend(commas);
    bounds.push(close);
    for pair in bounds.windows(2) {
        let alternative = &token[pair[0] + 1..pair[1]];
        expand_braces(&format!("{prefix}{alternative}{suffix}"), out, budget);
    }
}

fn trim_token(token: &str) -> &str {
    let mut token = token
        .trim_start_matches('*')
        .trim_end_matches(['*', ':', '!', '?']);
    // One sentence-ending dot goes; `..` and a dot after a separator are part of the path.
    if let Some(rest) = token.strip_suffix('.')
        && !rest.ends_with(['.', '/', '\\'])
    {
        token = rest.trim_end_matches(['*', ':', '!', '?']);
    }
    token
}

fn judge(token: &str, home: &[&str], workspace: &[&str]) -> Option<Verdict> {
    let lower = token.to_ascii_lowercase();
    if let Some(rest) = lower.strip_prefix("file:") {
        let rest = &token[token.len() - rest.len()..];
        return match rest.strip_prefix("//") {
            Some(after) if after.starts_with('/') => absolute(after, home),
            Some(after) => match after.strip_prefix("localhost") {
                Some(path) if path.starts_with('/') => absolute(path, home),
                _ => Some(Verdict::NetworkShare),
            },
            None if rest.starts_with('/') => absolute(rest, home),
            None => relative(rest, home, workspace),
        };
    }
    if let Some((scheme, _)) = token.split_once("://") {
        let is_scheme = scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
        if is_scheme {
            let network = ["smb", "cifs", "nfs", "afp"];
            return network
                .contains(&scheme.to_ascii_lowercase().as_str())
                .then_some(Verdict::NetworkShare);
        }
    }
    if token.starts_with("\\\\") {
        return Some(Verdict::NetworkShare);
    }
    if let Some(rest) = token.strip_prefix("//") {
        return match rest.chars().next() {
            Some(c) if c != '/' => Some(Verdict::NetworkShare),
            _ => absolute(token, home),
        };
    }
    let mut chars = token.chars();
    if let (Some(letter), Some(':'), Some(third)) = (chars.next(), chars.next(), chars.next())
        && letter.is_ascii_alphabetic()
    {
        return Some(if third == '\\' || third == '/' {
            Verdict::Windows
        } else {
            Verdict::DriveRelative
        });
    }
    if let Some(rest) = token.strip_prefix('~') {
        let is_tilde_path = match rest.chars().next() {
            // A bare `~` is YAML's null (`steps: ~`) far more often than the home folder.
            None => false,
            Some(c) => c == '/' || c == '\\' || c.is_ascii_alphabetic() || c == '_',
        };
        if is_tilde_path {
            return Some(Verdict::Tilde);
        }
    }
    if reads_as_escapes(token) {
        return None;
    }
    // `path:/etc/passwd`, `scp host:/etc/passwd .`: a word or a host, a colon, then a
    // path. The path is what the line names; judged on its own.
    if let Some(colon) = token.find(":/").or_else(|| token.find(":~"))
        && colon > 0
        && !token[colon..].starts_with("://")
    {
        let path = &token[colon + 1..];
        if let Some(verdict) = judge(path, home, workspace) {
            return Some(verdict);
        }
    }
    let has_separator = token.contains(['/', '\\']);
    if (has_separator || is_only_variable(token)) && has_variable(token) {
        return Some(Verdict::Variable);
    }
    if token.starts_with('/') {
        return absolute(token, home);
    }
    if has_separator {
        return relative(token, home, workspace);
    }
    None
}

/// Whether a token starting with one backslash is a regex or an escape (`\d{4}-\d{2}`,
/// `\x07`, `\t`, `\s+`, `\bword\b`) rather than a Windows path from the drive's root
/// (`\Users\ada`): its first piece is one letter and no more letters, a `\x`/`\u` with hex
/// digits, a non-letter (`\.`, `\(`), or a word boundary `\b`. A root path whose first folder
/// starts with `b` is missed by this; a regex is far more common in a procedure.
fn reads_as_escapes(token: &str) -> bool {
    let Some(rest) = token.strip_prefix('\\') else {
        return false;
    };
    if rest.starts_with('\\') || token.contains('/') {
        return false;
    }
    let first = rest.split('\\').next().unwrap_or_default();
    let mut chars = first.chars();
    match chars.next() {
        None => true,
        Some('b' | 'B') => true,
        Some(hex @ ('x' | 'u')) => {
            let digits: String = chars.take(if hex == 'x' { 2 } else { 4 }).collect();
            !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit())
                || digits
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_ascii_alphabetic())
        }
        Some(c) if !c.is_ascii_alphabetic() => true,
        Some(_) => chars.next().is_none_or(|next| !next.is_ascii_alphabetic()),
    }
}

/// A token that is one variable and nothing else (`$TMPDIR`, `${HOME}`, `%APPDATA%`): a
/// path as soon as a step `cd`s into it or writes to it, and one that cannot be shown.
fn is_only_variable(token: &str) -> bool {
    let name = |text: &str| {
        let mut chars = text.chars();
        chars
            .next()
            .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if let Some(inner) = token
        .strip_prefix("${")
        .and_then(|rest| rest.strip_suffix('}'))
    {
        return !inner.is_empty() && !inner.contains('}');
    }
    if let Some(rest) = token.strip_prefix('$') {
        return name(rest);
    }
    token
        .strip_prefix('%')
        .and_then(|rest| rest.strip_suffix('%'))
        .is_some_and(name)
}

/// `$NAME`, `${…}` (a variable starts with a letter, `_` or `{`, so `$5` is money) or
/// `%NAME%`.
fn has_variable(token: &str) -> bool {
    let bytes = token.as_bytes();
    let dollar = bytes.windows(2).any(|pair| {
        pair[0] == b'$' && (pair[1].is_ascii_alphabetic() || pair[1] == b'_' || pair[1] == b'{')
    });
    if dollar {
        return true;
    }
    let mut parts = token.split('%');
    parts.next();
    let inner: Vec<&str> = parts.collect();
    // `inner` holds what follows each `%`; a name closed by another `%` is a variable.
    inner.len() >= 2
        && inner[..inner.len() - 1].iter().any(|name| {
            name.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_()".contains(c))
        })
}

/// An absolute unix path: blocked when it resolves outside the home tree. A token of
/// nothing but slashes is a divider in prose, not a path.
fn absolute(token: &str, home: &[&str]) -> Option<Verdict> {
    if token.chars().all(|c| c == '/') {
        return None;
    }
    verdict(token, components(token, &[]), home)
}

fn relative(token: &str, home: &[&str], workspace: &[&str]) -> Option<Verdict> {
    verdict(token, components(token, workspace), home)
}

fn verdict(token: &str, path: Vec<&str>, home: &[&str]) -> Option<Verdict> {
    if path.starts_with(home) {
        return None;
    }
    let resolved = format!("/{}", path.join("/"));
    Some(Verdict::Outside {
        resolved: (resolved != token).then_some(resolved),
    })
}

/// The components of `path` resolved lexically (`.`, `..`, repeated separators) on top of
/// `base`; both `/` and `\` separate.
fn components<'a>(path: &'a str, base: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = if path.starts_with(['/', '\\']) {
        Vec::new()
    } else {
        base.to_vec()
    };
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            part => out.push(part),
        }
    }
    out
}
