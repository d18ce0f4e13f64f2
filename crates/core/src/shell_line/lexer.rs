//! The word lexer: one shell word unquoted into its literal, its path and the substitutions
//! it holds.

use super::MAX_NESTING;
use super::precheck::{Frame, scan};

/// One shell word, unquoted.
#[derive(Debug, Clone, Default)]
pub(super) struct WordInfo {
    /// The word as written.
    pub(super) raw: String,
    /// The word after quote removal, or None if the shell would expand part of it
    /// (a variable, `~`, a command substitution, arithmetic, an unusual `$'…'` escape).
    pub(super) literal: Option<String>,
    /// Unquoted glob or brace-expansion characters, so the word may become other words.
    pub(super) glob: bool,
    /// The code of each command substitution in the word, in order.
    pub(super) subs: Vec<String>,
    /// Substitutions nested too deeply to follow.
    pub(super) too_deep: bool,
}

impl WordInfo {
    /// The word as a path, if the shell would pass it on unchanged.
    pub(super) fn path(&self) -> Option<&str> {
        if self.glob {
            None
        } else {
            self.literal.as_deref()
        }
    }

    /// Whether the word reads as an environment assignment (`NAME=value`).
    pub(super) fn is_assignment(&self) -> bool {
        let Some((name, _)) = self.raw.split_once('=') else {
            return false;
        };
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    }
}

/// Lexes one word as the shell's quote removal would see it.
pub(super) fn lex_word(raw: &str) -> WordInfo {
    let mut lexer = Lexer::new(raw.as_bytes());
    lexer.unquoted(0, raw.len(), 0);
    lexer.finish(raw)
}

/// Lexes the body of a heredoc whose delimiter was unquoted: quotes are plain text there,
/// but `$(…)` and backquotes still run.
pub(super) fn lex_heredoc(body: &str) -> WordInfo {
    let b = body.as_bytes();
    let mut lexer = Lexer::new(b);
    let mut i = 0;
    while i < b.len() {
        i = match b[i] {
            b'\\' => i + 2,
            b'`' => lexer.backquoted(i + 1, b.len(), false),
            b'$' => lexer.dollar(i, b.len(), true, 0),
            _ => i + 1,
        };
    }
    lexer.finish(body)
}

pub(super) struct Lexer<'a> {
    pub(super) b: &'a [u8],
    pub(super) lit: Vec<u8>,
    pub(super) expanded: bool,
    pub(super) glob: bool,
    pub(super) brace: bool,
    pub(super) subs: Vec<String>,
    pub(super) too_deep: bool,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
        Lexer {
            b,
            lit: Vec::new(),
            expanded: false,
            glob: false,
            brace: false,
            subs: Vec::new(),
            too_deep: false,
        }
    }

    pub(super) fn finish(self, raw: &str) -> WordInfo {
        WordInfo {
            raw: raw.to_owned(),
            literal: (!self.expanded).then(|| String::from_utf8_lossy(&self.lit).into_owned()),
            glob: self.glob,
            subs: self.subs,
            too_deep: self.too_deep,
        }
    }

    pub(super) fn text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(self.b.get(start..end).unwrap_or_default()).into_owned()
    }

    /// Lexes `b[i..end]` outside quotes.
    pub(super) fn unquoted(&mut self, mut i: usize, end: usize, depth: usize) {
        while i < end {
            let c = self.b[i];
            i = match c {
                b'\\' if i + 1 < end => {
                    // A backslash-newline is a line continuation and disappears.
                    if self.b[i + 1] != b'\n' {
                        self.lit.push(self.b[i + 1]);
                    }
                    i + 2
                }
                b'\'' => {
                    let close = self.b[i + 1..end]
                        .iter()
                        .position(|&x| x == b'\'')
                        .map_or(end, |p| i + 1 + p);
                    self.lit.extend_from_slice(&self.b[i + 1..close]);
                    close + 1
                }
                b'"' => self.double_quoted(i + 1, end, depth),
                b'`' => self.backquoted(i + 1, end, false),
                b'$' => self.dollar(i, end, false, depth),
                b'~' if i == 0 => {
                    self.expanded = true;
                    i + 1
                }
                b'*' | b'?' | b'[' | b'(' | b')' => {
                    // `(` and `)` only reach a word inside extglob patterns like `@(a|b)`.
                    self.glob = true;
                    self.lit.push(c);
                    i + 1
                }
                b'{' => {
                    self.brace = true;
                    self.lit.push(c);
                    i + 1
                }
                b'}' => {
                    self.glob |= self.brace;
                    self.lit.push(c);
                    i + 1
                }
                _ => {
                    self.lit.push(c);
                    i + 1
                }
            };
        }
    }

    /// Lexes a double-quoted string whose body starts at `i`; returns the index past it.
    pub(super) fn double_quoted(&mut self, mut i: usize, end: usize, depth: usize) -> usize {
        while i < end {
            let c = self.b[i];
            match c {
                b'"' => return i + 1,
                b'\\' => match self.b.get(i + 1).filter(|_| i + 1 < end) {
                    Some(b'\n') => i += 2,
                    Some(&n) if matches!(n, b'$' | b'`' | b'"' | b'\\') => {
                        self.lit.push(n);
                        i += 2;
                    }
                    _ => {
                        self.lit.push(c);
                        i += 1;
                    }
                },
                b'`' => i = self.backquoted(i + 1, end, true),
                b'$' => i = self.dollar(i, end, true, depth),
                _ => {
                    self.lit.push(c);
                    i += 1;
                }
            }
        }
        end
    }

    /// Lexes a backquoted command substitution whose body starts at `i`.
    pub(super) fn backquoted(&mut self, mut i: usize, end: usize, in_double_quotes: bool) -> usize {
        self.expanded = true;
        let mut code = Vec::new();
        while i < end {
            match self.b[i] {
                b'`' => {
                    self.subs.push(String::from_utf8_lossy(&code).into_owned());
                    return i + 1;
                }
                b'\\'
                    if i + 1 < end
                        && (matches!(self.b[i + 1], b'`' | b'$' | b'\\')
                            || (in_double_quotes && self.b[i + 1] == b'"')) =>
                {
                    code.push(self.b[i + 1]);
                    i += 2;
                }
                c => {
                    code.push(c);
                    i += 1;
                }
            }
        }
        end
    }

    /// Lexes the expansion starting with the `$` at `i`.
    pub(super) fn dollar(
        &mut self,
        i: usize,
        end: usize,
        in_double_quotes: bool,
        depth: usize,
    ) -> usize {
        let next = (i + 1 < end).then(|| self.b[i + 1]);
        match next {
            Some(b'\'') if !in_double_quotes => self.ansi_c(i + 2, end),
            Some(b'"') if !in_double_quotes => self.double_quoted(i + 2, end, depth),
            Some(b'(') => {
                self.expanded = true;
                let arithmetic = i + 2 < end && self.b[i + 2] == b'(';
                let Some(close) = scan(&self.b[..end], i + 2, Some(Frame::Subst)).end else {
                    return end;
                };
                if arithmetic {
                    let inner_end = close.saturating_sub(2).max(i + 3);
                    self.inner_subs(i + 3, inner_end, depth);
                } else {
                    let code = self.text(i + 2, close.saturating_sub(1).max(i + 2));
                    self.subs.push(code);
                }
                close
            }
            Some(b'{') => {
                self.expanded = true;
                let Some(close) = scan(&self.b[..end], i + 2, Some(Frame::DollarBrace)).end else {
                    return end;
                };
                self.inner_subs(i + 2, close.saturating_sub(1).max(i + 2), depth);
                close
            }
            Some(b'[') => {
                self.expanded = true;
                let close = self.b[i + 2..end]
                    .iter()
                    .position(|&c| c == b']')
                    .map_or(end, |p| i + 2 + p);
                self.inner_subs(i + 2, close, depth);
                (close + 1).min(end)
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                self.expanded = true;
                let mut j = i + 1;
                while j < end && (self.b[j].is_ascii_alphanumeric() || self.b[j] == b'_') {
                    j += 1;
                }
                j
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                self.expanded = true;
                i + 2
            }
            _ => {
                self.lit.push(b'$');
                i + 1
            }
        }
    }

    /// Collects the command substitutions inside an arithmetic or parameter expansion, whose
    /// text is `b[start..end]`.
    pub(super) fn inner_subs(&mut self, start: usize, end: usize, depth: usize) {
        if depth + 1 >= MAX_NESTING {
            self.too_deep = true;
            return;
        }
        let mut inner = Lexer::new(self.b);
        inner.unquoted(start, end.min(self.b.len()), depth + 1);
        self.subs.append(&mut inner.subs);
        self.too_deep |= inner.too_deep;
    }

    /// Lexes an ANSI-C quoted string (`$'…'`) whose body starts at `i`.
    pub(super) fn ansi_c(&mut self, mut i: usize, end: usize) -> usize {
        while i < end {
            match self.b[i] {
                b'\'' => return i + 1,
                b'\\' if i + 1 < end => {
                    let decoded = match self.b[i + 1] {
                        b'n' => Some(b'\n'),
                        b't' => Some(b'\t'),
                        b'r' => Some(b'\r'),
                        b'a' => Some(7),
                        b'b' => Some(8),
                        b'e' | b'E' => Some(27),
                        b'f' => Some(12),
                        b'v' => Some(11),
                        c @ (b'\\' | b'\'' | b'"' | b'?') => Some(c),
                        _ => None,
                    };
                    match decoded {
                        Some(c) => self.lit.push(c),
                        // Octal, hex and Unicode escapes are not decoded, so the word is not
                        // trusted as a path.
                        None => self.expanded = true,
                    }
                    i += 2;
                }
                c => {
                    self.lit.push(c);
                    i += 1;
                }
            }
        }
        end
    }
}
