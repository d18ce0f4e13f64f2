//! A tokenizer that follows libyaml's scanner (`scanner.c`), the one `yaml_serde` runs on, so
//! that it sees exactly the anchors, aliases, tags and document markers libyaml would, and
//! nothing inside a quoted, plain or block scalar or a comment. It does not check everything
//! libyaml checks: where the text is not YAML it stops (or goes on where libyaml would stop),
//! and `yaml_serde` names the error.

/// The deepest nesting read. A skill file needs three levels; the bound keeps deep
/// nesting, which no skill needs, away from libyaml's per-level work.
pub(super) const MAX_DEPTH: usize = 64;
/// libyaml's limit on how far before its `:` a simple key may start, in bytes.
const MAX_SIMPLE_KEY_BYTES: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    BlockSequenceStart,
    BlockMappingStart,
    BlockEnd,
    FlowSequenceStart,
    FlowSequenceEnd,
    FlowMappingStart,
    FlowMappingEnd,
    BlockEntry,
    FlowEntry,
    Key,
    Value,
    Scalar,
}

#[derive(Debug, Clone)]
pub(super) struct Token {
    pub(crate) kind: Kind,
    /// 1-based line within the fragment.
    pub(crate) line: usize,
    /// A scalar's text when it fits on one line (only keys need it).
    pub(crate) text: Option<String>,
    pub(crate) plain: bool,
}

impl Token {
    fn new(kind: Kind, line: usize) -> Token {
        Token {
            kind,
            line,
            text: None,
            plain: false,
        }
    }
}

/// Why the scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stop {
    /// It read to the end.
    End,
    /// It met something libyaml refuses as well; `yaml_serde` says what.
    Invalid,
    AnchorOrAlias {
        line: usize,
    },
    Tag {
        line: usize,
    },
    Document {
        line: usize,
        marker: &'static str,
    },
    TooDeep {
        line: usize,
    },
}

pub(super) fn scan(fragment: &str) -> (Vec<Token>, Stop) {
    let mut scanner = Scanner {
        chars: fragment.chars().collect(),
        pos: 0,
        line: 1,
        column: 0,
        index: 0,
        flow_level: 0,
        indent: -1,
        indents: Vec::new(),
        simple_key_allowed: true,
        simple_keys: vec![None],
        tokens: Vec::new(),
    };
    let stop = loop {
        if let Err(stop) = scanner.fetch_next_token() {
            break stop;
        }
    };
    (scanner.tokens, stop)
}

#[derive(Debug, Clone, Copy)]
struct SimpleKey {
    token_number: usize,
    line: usize,
    column: usize,
    index: usize,
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
    line: usize,
    column: usize,
    /// Byte offset, for the simple-key length limit.
    index: usize,
    flow_level: usize,
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    /// One possible simple key per flow level, the block context's first.
    simple_keys: Vec<Option<SimpleKey>>,
    tokens: Vec<Token>,
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// libyaml's `IS_BLANKZ`: a blank, a break or the end (a NUL byte counts as the end).
fn is_blankz(c: Option<char>) -> bool {
    c.is_none_or(|c| is_blank(c) || is_break(c) || c == '\0')
}

fn is_breakz(c: Option<char>) -> bool {
    c.is_none_or(|c| is_break(c) || c == '\0')
}

impl Scanner {
    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    fn peek(&self) -> Option<char> {
        self.peek_at(0)
    }

    fn at_end(&self) -> bool {
        self.peek().is_none_or(|c| c == '\0')
    }

    fn advance(&mut self) {
        let Some(c) = self.peek() else {
            return;
        };
        self.pos += 1;
        self.index += c.len_utf8();
        if is_break(c) {
            if c == '\r' && self.peek() == Some('\n') {
                self.pos += 1;
                self.index += 1;
            }
            self.line += 1;
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    fn push(&mut self, kind: Kind, line: usize) {
        self.tokens.push(Token::new(kind, line));
    }

    /// `---` or `...` at the start of a line, followed by a blank or the end.
    fn document_indicator(&self) -> Option<&'static str> {
        if self.column != 0 || !is_blankz(self.peek_at(3)) {
            return None;
        }
        let three = |c: char| (0..3).all(|n| self.peek_at(n) == Some(c));
        if three('-') {
            Some("---")
        } else if three('.') {
            Some("...")
        } else {
            None
        }
    }

    fn fetch_next_token(&mut self) -> Result<(), Stop> {
        self.scan_to_next_token();
        self.unroll_indent(self.column as isize);
        if self.at_end() {
            self.unroll_indent(-1);
            return Err(Stop::End);
        }
        let line = self.line;
        let c = self.peek().unwrap_or('\0');
        let next = self.peek_at(1);
        if self.column == 0 && c == '%' {
            return Err(Stop::Document { line, marker: "%" });
        }
        if let Some(marker) = self.document_indicator() {
            return Err(Stop::Document { line, marker });
        }
        match c {
            '[' => self.flow_collection_start(Kind::FlowSequenceStart),
            '{' => self.flow_collection_start(Kind::FlowMappingStart),
            ']' => self.flow_collection_end(Kind::FlowSequenceEnd),
            '}' => self.flow_collection_end(Kind::FlowMappingEnd),
            ',' => {
                self.remove_simple_key();
                self.simple_key_allowed = true;
                self.advance();
                self.push(Kind::FlowEntry, line);
            }
            '-' if is_blankz(next) => self.block_entry()?,
            '?' if self.flow_level > 0 || is_blankz(next) => self.key()?,
            ':' if self.flow_level > 0 || is_blankz(next) => self.value()?,
            '*' | '&' => return Err(Stop::AnchorOrAlias { line }),
            '!' => return Err(Stop::Tag { line }),
            '|' | '>' if self.flow_level == 0 => self.block_scalar()?,
            '\'' | '"' => self.flow_scalar(c == '\'')?,
            _ if self.plain_can_start(c, next) => self.plain_scalar()?,
            _ => return Err(Stop::Invalid),
        }
        if self.flow_level + self.indents.len() > MAX_DEPTH {
            return Err(Stop::TooDeep { line: self.line });
        }
        Ok(())
    }

    fn plain_can_start(&self, c: char, next: Option<char>) -> bool {
        let indicator = is_blankz(Some(c)) || "-?:,[]{}#&*!|>'\"%@`".contains(c);
        !indicator
            || (c == '-' && !next.is_some_and(is_blank))
            || (self.flow_level == 0 && (c == '?' || c == ':') && !is_blankz(next))
    }

    fn scan_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.peek() == Some('\u{feff}') {
                self.advance();
            }
            while self.peek() == Some(' ')
                || ((self.flow_level > 0 || !self.simple_key_allowed) && self.peek() == Some('\t'))
            {
                self.advance();
            }
            if self.peek() == Some('#') {
                while !is_breakz(self.peek()) {
                    self.advance();
                }
            }
            if !self.peek().is_some_and(is_break) {
                break;
            }
            self.advance();
            if self.flow_level == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    fn save_simple_key(&mut self) {
        if self.simple_key_allowed {
            let key = SimpleKey {
                token_number: self.tokens.len(),
                line: self.line,
                column: self.column,
                index: self.index,
            };
            if let Some(slot) = self.simple_keys.last_mut() {
                *slot = Some(key);
            }
        }
    }

    fn remove_simple_key(&mut self) {
        if let Some(slot) = self.simple_keys.last_mut() {
            *slot = None;
        }
    }

    fn roll_indent(&mut self, column: isize, number: Option<usize>, kind: Kind, line: usize) {
        if self.flow_level > 0 || self.indent >= column {
            return;
        }
        self.indents.push(self.indent);
        self.indent = column;
        let token = Token::new(kind, line);
        match number {
            Some(n) => self.tokens.insert(n.min(self.tokens.len()), token),
            None => self.tokens.push(token),
        }
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow_level > 0 {
            return;
        }
        while self.indent > column {
            self.push(Kind::BlockEnd, self.line);
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn flow_collection_start(&mut self, kind: Kind) {
        let line = self.line;
        self.save_simple_key();
        self.simple_keys.push(None);
        self.flow_level += 1;
        self.simple_key_allowed = true;
        self.advance();
        self.push(kind, line);
    }

    fn flow_collection_end(&mut self, kind: Kind) {
        let line = self.line;
        self.remove_simple_key();
        if self.flow_level > 0 {
            self.flow_level -= 1;
            self.simple_keys.pop();
        }
        self.simple_key_allowed = false;
        self.advance();
        self.push(kind, line);
    }

    fn block_entry(&mut self) -> Result<(), Stop> {
        let line = self.line;
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return Err(Stop::Invalid);
            }
            self.roll_indent(self.column as isize, None, Kind::BlockSequenceStart, line);
        }
        self.remove_simple_key();
        self.simple_key_allowed = true;
        self.advance();
        self.push(Kind::BlockEntry, line);
        Ok(())
    }

    fn key(&mut self) -> Result<(), Stop> {
        let line = self.line;
        if self.flow_level == 0 {
            if !self.simple_key_allowed {
                return Err(Stop::Invalid);
            }
            self.roll_indent(self.column as isize, None, Kind::BlockMappingStart, line);
        }
        self.remove_simple_key();
        self.simple_key_allowed = self.flow_level == 0;
        self.advance();
        self.push(Kind::Key, line);
        Ok(())
    }

    fn value(&mut self) -> Result<(), Stop> {
        let line = self.line;
        // A simple key is possible only on the same line, at most 1024 bytes back.
        let key =
            self.simple_keys.last().copied().flatten().filter(|key| {
                key.line == self.line && key.index + MAX_SIMPLE_KEY_BYTES >= self.index
            });
        if let Some(key) = key {
            let at = key.token_number.min(self.tokens.len());
            self.tokens.insert(at, Token::new(Kind::Key, key.line));
            self.roll_indent(
                key.column as isize,
                Some(at),
                Kind::BlockMappingStart,
                key.line,
            );
            self.remove_simple_key();
            self.simple_key_allowed = false;
        } else {
            if self.flow_level == 0 {
                if !self.simple_key_allowed {
                    return Err(Stop::Invalid);
                }
                self.roll_indent(self.column as isize, None, Kind::BlockMappingStart, line);
            }
            self.simple_key_allowed = self.flow_level == 0;
        }
        self.advance();
        self.push(Kind::Value, line);
        Ok(())
    }

    fn block_scalar(&mut self) -> Result<(), Stop> {
        let line = self.line;
        self.remove_simple_key();
        self.simple_key_allowed = true;
        self.advance();
        let mut increment: isize = 0;
        let mut read_digit = |scanner: &mut Scanner| -> Result<(), Stop> {
            if let Some(d) = scanner.peek().and_then(|c| c.to_digit(10)) {
                if d == 0 {
                    return Err(Stop::Invalid);
                }
                increment = d as isize;
                scanner.advance();
            }
            Ok(())
        };
        if matches!(self.peek(), Some('+' | '-')) {
            self.advance();
            read_digit(self)?;
        } else if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            read_digit(self)?;
            if matches!(self.peek(), Some('+' | '-')) {
                self.advance();
            }
        }
        while self.peek().is_some_and(is_blank) {
            self.advance();
        }
        if self.peek() == Some('#') {
            while !is_breakz(self.peek()) {
                self.advance();
            }
        }
        if !is_breakz(self.peek()) {
            return Err(Stop::Invalid);
        }
        if self.peek().is_some_and(is_break) {
            self.advance();
        }
        let mut indent: isize = match increment {
            0 => 0,
            n if self.indent >= 0 => self.indent + n,
            n => n,
        };
        self.block_scalar_breaks(&mut indent)?;
        while self.column as isize == indent && !self.at_end() {
            while !is_breakz(self.peek()) {
                self.advance();
            }
            if self.at_end() {
                break;
            }
            self.advance();
            self.block_scalar_breaks(&mut indent)?;
        }
        self.push(Kind::Scalar, line);
        Ok(())
    }

    /// Empty lines and indentation inside a block scalar; settles the indentation when the
    /// header did not give it.
    fn block_scalar_breaks(&mut self, indent: &mut isize) -> Result<(), Stop> {
        let mut max_indent: isize = 0;
        loop {
            while (*indent == 0 || (self.column as isize) < *indent) && self.peek() == Some(' ') {
                self.advance();
            }
            max_indent = max_indent.max(self.column as isize);
            if (*indent == 0 || (self.column as isize) < *indent) && self.peek() == Some('\t') {
                return Err(Stop::Invalid);
            }
            if !self.peek().is_some_and(is_break) {
                break;
            }
            self.advance();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        Ok(())
    }

    fn flow_scalar(&mut self, single: bool) -> Result<(), Stop> {
        let line = self.line;
        self.save_simple_key();
        self.simple_key_allowed = false;
        let quote = if single { '\'' } else { '"' };
        self.advance();
        let mut text = String::new();
        let mut one_line = true;
        loop {
            if self.document_indicator().is_some() || self.at_end() {
                return Err(Stop::Invalid);
            }
            while let Some(c) = self.peek().filter(|&c| !is_blankz(Some(c))) {
                if single && c == '\'' && self.peek_at(1) == Some('\'') {
                    text.push('\'');
                    self.advance();
                    self.advance();
                } else if c == quote {
                    break;
                } else if !single && c == '\\' && self.peek_at(1).is_some_and(is_break) {
                    self.advance();
                    self.advance();
                    one_line = false;
                    break;
                } else if !single && c == '\\' {
                    self.escape(&mut text)?;
                } else {
                    text.push(c);
                    self.advance();
                }
            }
            if self.peek() == Some(quote) {
                self.advance();
                break;
            }
            while let Some(c) = self.peek().filter(|&c| is_blank(c) || is_break(c)) {
                if is_break(c) {
                    one_line = false;
                } else {
                    text.push(c);
                }
                self.advance();
            }
        }
        self.tokens.push(Token {
            kind: Kind::Scalar,
            line,
            text: one_line.then_some(text),
            plain: false,
        });
        Ok(())
    }

    /// One escape in a double-quoted scalar, the backslash included.
    fn escape(&mut self, text: &mut String) -> Result<(), Stop> {
        let simple = match self.peek_at(1) {
            Some('0') => Some('\0'),
            Some('a') => Some('\u{7}'),
            Some('b') => Some('\u{8}'),
            Some('t' | '\t') => Some('\t'),
            Some('n') => Some('\n'),
            Some('v') => Some('\u{b}'),
            Some('f') => Some('\u{c}'),
            Some('r') => Some('\r'),
            Some('e') => Some('\u{1b}'),
            Some(' ') => Some(' '),
            Some('"') => Some('"'),
            Some('/') => Some('/'),
            Some('\\') => Some('\\'),
            Some('N') => Some('\u{85}'),
            Some('_') => Some('\u{a0}'),
            Some('L') => Some('\u{2028}'),
            Some('P') => Some('\u{2029}'),
            _ => None,
        };
        let width = match self.peek_at(1) {
            _ if simple.is_some() => 0,
            Some('x') => 2,
            Some('u') => 4,
            Some('U') => 8,
            _ => return Err(Stop::Invalid),
        };
        self.advance();
        self.advance();
        if let Some(c) = simple {
            text.push(c);
            return Ok(());
        }
        let mut value: u32 = 0;
        for _ in 0..width {
            let digit = self
                .peek()
                .and_then(|c| c.to_digit(16))
                .ok_or(Stop::Invalid)?;
            value = value * 16 + digit;
            self.advance();
        }
        text.push(char::from_u32(value).ok_or(Stop::Invalid)?);
        Ok(())
    }

    fn plain_scalar(&mut self) -> Result<(), Stop> {
        let line = self.line;
        self.save_simple_key();
        self.simple_key_allowed = false;
        let indent = self.indent + 1;
        let mut text = String::new();
        let mut whitespace = String::new();
        let mut leading_blanks = false;
        let mut one_line = true;
        loop {
            if self.document_indicator().is_some() || self.peek() == Some('#') {
                break;
            }
            while let Some(c) = self.peek().filter(|&c| !is_blankz(Some(c))) {
                let next = self.peek_at(1);
                if self.flow_level > 0 && c == ':' && next.is_some_and(|n| ",?[]{}".contains(n)) {
                    return Err(Stop::Invalid);
                }
                if (c == ':' && is_blankz(next)) || (self.flow_level > 0 && ",[]{}".contains(c)) {
                    break;
                }
                if leading_blanks {
                    one_line = false;
                    leading_blanks = false;
                    text.push(' ');
                } else {
                    text.push_str(&whitespace);
                }
                whitespace.clear();
                text.push(c);
                self.advance();
            }
            if !self.peek().is_some_and(|c| is_blank(c) || is_break(c)) {
                break;
            }
            while let Some(c) = self.peek().filter(|&c| is_blank(c) || is_break(c)) {
                if is_blank(c) {
                    if leading_blanks && (self.column as isize) < indent && c == '\t' {
                        return Err(Stop::Invalid);
                    }
                    if !leading_blanks {
                        whitespace.push(c);
                    }
                } else {
                    leading_blanks = true;
                    whitespace.clear();
                }
                self.advance();
            }
            if self.flow_level == 0 && (self.column as isize) < indent {
                break;
            }
        }
        if leading_blanks {
            self.simple_key_allowed = true;
        }
        self.tokens.push(Token {
            kind: Kind::Scalar,
            line,
            text: one_line.then_some(text),
            plain: true,
        });
        Ok(())
    }
}
