//! The pre-parse scanner: what a line holds before brush-parser sees it (open quotes,
//! substitutions, heredocs, nesting), and the checks that refuse a line it would misread.

use super::{
    MAX_ARITHMETIC_PLACES, MAX_PAREN_NESTING, MAX_RAW_PAREN_NESTING, arithmetic_places,
    raw_paren_depth,
};

/// An open construct while scanning shell code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Frame {
    /// `(` in code, closed by `)`.
    Paren,
    /// `$(`, closed by `)`.
    Subst,
    /// `$((`, closed by `))`.
    Arith,
    /// `((` in code (an arithmetic command), closed by `))`.
    DParen,
    /// `${`, closed by `}`.
    DollarBrace,
    /// `"`.
    DQuote,
    /// A backquoted command substitution.
    Backtick,
    /// A `{` group.
    Brace,
    /// `case … esac`, whose pattern `)`s close nothing.
    Case,
    /// `[[ … ]]`, whose `!`, `&&` and `||` each add a level in brush-parser's precedence parser.
    ExtTest,
}

/// What [`scan`] found.
#[derive(Debug, Default)]
pub(super) struct ScanOutcome {
    /// When scanning an opened construct: the index just past its closing delimiter.
    pub(super) end: Option<usize>,
    pub(super) max_depth: usize,
    /// The deepest nesting of parentheses the parser itself will see (those inside words,
    /// such as `$(…)`, are left to the tokenizer and parsed separately).
    pub(super) max_parens: usize,
    /// Parentheses still open at the end of the text.
    pub(super) unclosed_paren: bool,
    /// A `<<` inside arithmetic (see [`Scanner::shift_in_arith`]).
    pub(super) shift_in_arith: bool,
    /// See [`Scanner::placed_shifts`].
    pub(super) placed_shifts: Vec<usize>,
    /// Blanks between two opening parentheses, to be replaced by newlines (see
    /// [`Scanner::paren`]).
    pub(super) paren_gaps: Vec<usize>,
    /// The heredocs, to be cut out of the text (see [`precheck`]).
    pub(super) heredocs: Vec<ScannedHeredoc>,
}

/// A heredoc found by the scanner.
#[derive(Debug, Clone)]
pub(super) struct ScannedHeredoc {
    /// The span of the operator: `<<`, an optional `-`, blanks and the delimiter word.
    pub(super) operator: (usize, usize),
    pub(super) delimiter: Vec<u8>,
    pub(super) strip_tabs: bool,
    /// Whether the body is expanded (the delimiter was not quoted).
    pub(super) expand: bool,
    /// The body text.
    pub(super) body: (usize, usize),
    /// What follows the line of the operator and belongs to the heredoc: the body and the
    /// delimiter line.
    pub(super) removed: (usize, usize),
}

#[derive(Default)]
pub(super) struct Scanner {
    pub(super) stack: Vec<Frame>,
    /// Per open `(` or `((`: whether the parser sees it (it is not inside a word).
    pub(super) paren_counted: Vec<bool>,
    /// Open arithmetic constructs, inside which `<<` is a shift and `#` no comment.
    pub(super) arith_level: usize,
    pub(super) ext_ops: Vec<usize>,
    pub(super) ext_total: usize,
    pub(super) parens: usize,
    /// Open constructs that are part of a word (quotes, substitutions, expansions).
    pub(super) word_level: usize,
    pub(super) keywords: usize,
    pub(super) max_depth: usize,
    pub(super) max_parens: usize,
    pub(super) heredocs: Vec<ScannedHeredoc>,
    /// Heredocs whose body starts after the next newline.
    pub(super) pending: Vec<usize>,
    pub(super) paren_gaps: Vec<usize>,
    /// A `<<` inside an arithmetic expansion `$((…))`: a shift for the shell, but brush-parser
    /// 0.4's tokenizer takes it for a heredoc there (not in an arithmetic command `((…))`), and fuzzing found 16 bytes (`$(($(())<<`, a tab-separated
    /// control character and trailing tabs) on which it then pushes tokens for seconds on end.
    pub(super) shift_in_arith: bool,
    /// Where a `<<` is a shift in an arithmetic command `((…))`, which brush-parser reads as
    /// one (see [`unplaced_heredoc_operator`]).
    pub(super) placed_shifts: Vec<usize>,
}

impl Scanner {
    pub(super) fn top(&self) -> Option<Frame> {
        self.stack.last().copied()
    }

    pub(super) fn note(&mut self) {
        self.max_depth = self
            .max_depth
            .max(self.stack.len() + self.keywords + self.ext_total);
        self.max_parens = self.max_parens.max(self.parens);
    }

    pub(super) fn push(&mut self, frame: Frame) {
        self.stack.push(frame);
        match frame {
            Frame::Paren | Frame::DParen => {
                let counted = self.word_level == 0;
                self.paren_counted.push(counted);
                let width = if frame == Frame::DParen { 2 } else { 1 };
                self.parens += usize::from(counted) * width;
                self.arith_level += usize::from(frame == Frame::DParen);
            }
            Frame::Arith => {
                self.word_level += 1;
                self.arith_level += 1;
            }
            Frame::Subst | Frame::DollarBrace | Frame::DQuote | Frame::Backtick => {
                self.word_level += 1;
            }
            Frame::ExtTest => self.ext_ops.push(0),
            Frame::Brace | Frame::Case => {}
        }
        self.note();
    }

    pub(super) fn pop(&mut self) {
        match self.stack.pop() {
            Some(frame @ (Frame::Paren | Frame::DParen)) => {
                if self.paren_counted.pop().unwrap_or(false) {
                    let width = if frame == Frame::DParen { 2 } else { 1 };
                    self.parens = self.parens.saturating_sub(width);
                }
                if frame == Frame::DParen {
                    self.arith_level = self.arith_level.saturating_sub(1);
                }
            }
            Some(Frame::Arith) => {
                self.word_level = self.word_level.saturating_sub(1);
                self.arith_level = self.arith_level.saturating_sub(1);
            }
            Some(Frame::Subst | Frame::DollarBrace | Frame::DQuote | Frame::Backtick) => {
                self.word_level = self.word_level.saturating_sub(1);
            }
            Some(Frame::ExtTest) => {
                let ops = self.ext_ops.pop().unwrap_or(0);
                self.ext_total = self.ext_total.saturating_sub(ops);
            }
            Some(Frame::Brace | Frame::Case) | None => {}
        }
    }

    /// Opens a `(` at `i`. brush-parser reads two `(` tokens in a row as the start of an
    /// arithmetic command even when blanks separate them, whereas bash only does so for a
    /// literal `((`; so `( (cd a; bun x.ts) )` would come back as arithmetic and its runs
    /// would be lost. A newline between the two is equivalent for bash and stops the
    /// parser's arithmetic reading, so the first blank of such a gap is marked to become
    /// one (same length, so positions do not move).
    pub(super) fn paren(&mut self, b: &[u8], i: usize) -> usize {
        if b.get(i + 1) == Some(&b'(') {
            // A literal `((` starts an arithmetic command for bash and for brush-parser's
            // tokenizer alike.
            self.push(Frame::DParen);
            return i + 2;
        }
        let in_code = self.word_level == 0
            && self.arith_level == 0
            && self.ext_ops.is_empty()
            && self.pending.is_empty();
        self.push(Frame::Paren);
        let mut j = i + 1;
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        if in_code && j > i + 1 && b.get(j) == Some(&b'(') {
            self.paren_gaps.push(i + 1);
        }
        i + 1
    }

    pub(super) fn ext_op(&mut self) {
        if let Some(ops) = self.ext_ops.last_mut() {
            *ops += 1;
            self.ext_total += 1;
            self.note();
        }
    }

    /// Handles one byte of shell code (outside quotes) at `i`; returns the next index.
    pub(super) fn code_byte(&mut self, b: &[u8], i: usize, top: Option<Frame>) -> usize {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match c {
            b'\\' => i + 2,
            b'\'' => skip_single_quoted(b, i + 1),
            b'"' => {
                self.push(Frame::DQuote);
                i + 1
            }
            b'`' => {
                if top == Some(Frame::Backtick) {
                    self.pop();
                } else {
                    self.push(Frame::Backtick);
                }
                i + 1
            }
            b'$' => match next {
                Some(b'\'') => skip_ansi_c(b, i + 2),
                Some(b'(') if b.get(i + 2) == Some(&b'(') => {
                    self.push(Frame::Arith);
                    i + 3
                }
                Some(b'(') => {
                    self.push(Frame::Subst);
                    i + 2
                }
                Some(b'{') => {
                    self.push(Frame::DollarBrace);
                    i + 2
                }
                Some(b'"') => {
                    self.push(Frame::DQuote);
                    i + 2
                }
                _ => i + 1,
            },
            b'(' => self.paren(b, i),
            b')' => match top {
                Some(Frame::Arith | Frame::DParen) if next == Some(b')') => {
                    self.pop();
                    i + 2
                }
                Some(Frame::DParen) => {
                    // `((a) …`: one of the two parentheses is closed.
                    self.pop();
                    self.push(Frame::Paren);
                    i + 1
                }
                Some(Frame::Paren | Frame::Subst) => {
                    self.pop();
                    i + 1
                }
                // A `)` that closes nothing is a case pattern's (or a syntax error the parser
                // will report).
                _ => i + 1,
            },
            b'#' if self.arith_level == 0 && at_word_start(b, i) => skip_to_newline(b, i),
            b'<' if next == Some(b'<') && self.stack.contains(&Frame::Arith) => {
                self.shift_in_arith = true;
                i + 2
            }
            b'<' if next == Some(b'<') && self.arith_level > 0 => {
                self.placed_shifts.push(i);
                i + 2
            }
            b'<' if next == Some(b'<') && self.arith_level == 0 => {
                if b.get(i + 2) == Some(&b'<') {
                    i + 3
                } else {
                    self.heredoc_operator(b, i)
                }
            }
            b'\n' if !self.pending.is_empty() => self.skip_heredoc_bodies(b, i + 1),
            b'&' | b'|' if top == Some(Frame::ExtTest) && next == Some(c) => {
                self.ext_op();
                i + 2
            }
            _ if is_keyword_byte(c) && at_word_start(b, i) => self.keyword(b, i, top),
            _ => i + 1,
        }
    }

    /// Handles a run of word bytes at a word start, counting reserved words that nest.
    pub(super) fn keyword(&mut self, b: &[u8], i: usize, top: Option<Frame>) -> usize {
        let mut end = i;
        while end < b.len() && is_keyword_byte(b[end]) {
            end += 1;
        }
        if end < b.len() && !is_delimiter(b[end]) {
            // Not a whole word, so not a reserved word; the run holds no byte with a special
            // meaning, so it can be skipped.
            return end;
        }
        match &b[i..end] {
            b"if" | b"while" | b"until" | b"for" | b"select" | b"coproc" => {
                self.keywords += 1;
                self.note();
            }
            b"fi" | b"done" => self.keywords = self.keywords.saturating_sub(1),
            b"case" => self.push(Frame::Case),
            b"esac" if top == Some(Frame::Case) => self.pop(),
            b"{" => self.push(Frame::Brace),
            b"}" if top == Some(Frame::Brace) => self.pop(),
            b"[[" => self.push(Frame::ExtTest),
            b"]]" if top == Some(Frame::ExtTest) => self.pop(),
            b"!" if top == Some(Frame::ExtTest) => self.ext_op(),
            _ => {}
        }
        end
    }

    /// Records the heredoc whose `<<` is at `start`.
    pub(super) fn heredoc_operator(&mut self, b: &[u8], start: usize) -> usize {
        let mut j = start + 2;
        let mut strip_tabs = false;
        if b.get(j) == Some(&b'-') {
            strip_tabs = true;
            j += 1;
        }
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        let word_start = j;
        let mut delimiter = Vec::new();
        let mut quoted = false;
        while let Some(&c) = b.get(j) {
            match c {
                b'\'' | b'"' => {
                    quoted = true;
                    let close = b
                        .get(j + 1..)
                        .and_then(|rest| rest.iter().position(|&x| x == c))
                        .map_or(b.len(), |p| j + 1 + p);
                    delimiter.extend_from_slice(b.get(j + 1..close).unwrap_or_default());
                    j = close + 1;
                }
                b'\\' => {
                    quoted = true;
                    if let Some(&escaped) = b.get(j + 1) {
                        delimiter.push(escaped);
                    }
                    j += 2;
                }
                _ if is_delimiter(c) => break,
                _ => {
                    delimiter.push(c);
                    j += 1;
                }
            }
        }
        let j = j.min(b.len());
        // Without a delimiter word it is a syntax error, left for the parser to report.
        if j > word_start {
            self.pending.push(self.heredocs.len());
            self.heredocs.push(ScannedHeredoc {
                operator: (start, j),
                delimiter,
                strip_tabs,
                expand: !quoted,
                body: (b.len(), b.len()),
                removed: (b.len(), b.len()),
            });
        }
        j
    }

    /// Skips the bodies of the pending heredocs, which start at `i` (after a newline).
    pub(super) fn skip_heredoc_bodies(&mut self, b: &[u8], mut i: usize) -> usize {
        for index in std::mem::take(&mut self.pending) {
            let heredoc = &mut self.heredocs[index];
            let body_start = i;
            let mut body_end = b.len();
            while i < b.len() {
                let line_end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |p| i + p);
                let mut line = &b[i..line_end];
                if heredoc.strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                let line_start = i;
                i = (line_end + 1).min(b.len());
                if line == heredoc.delimiter.as_slice() {
                    body_end = line_start;
                    break;
                }
            }
            // A body that runs to the end of the text ends there, as in bash.
            heredoc.body = (body_start, body_end.min(i));
            heredoc.removed = (body_start, i);
        }
        i
    }
}

/// Bytes that end a shell word.
pub(super) fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// Bytes that can form a reserved word this scanner cares about.
pub(super) fn is_keyword_byte(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'{' | b'}' | b'[' | b']' | b'!')
}

pub(super) fn at_word_start(b: &[u8], i: usize) -> bool {
    i == 0 || is_delimiter(b[i - 1])
}

/// The index just past the `'` closing a single-quoted string that starts at `j`.
pub(super) fn skip_single_quoted(b: &[u8], j: usize) -> usize {
    b.get(j..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\''))
        .map_or(b.len(), |p| j + p + 1)
}

/// The index just past the `'` closing an ANSI-C string (`$'…'`) whose body starts at `j`.
pub(super) fn skip_ansi_c(b: &[u8], mut j: usize) -> usize {
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'\'' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The index of the newline ending the comment at `i` (the newline itself still matters).
pub(super) fn skip_to_newline(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p)
}

/// Scans shell code from `start`. With `initial`, the code is the inside of that construct
/// and the scan stops just past its closing delimiter; without, it runs to the end of the
/// text. Either way it measures nesting. It is iterative and linear, so it is safe on any
/// input; it follows the shell's quoting closely enough to find the ends of `$(…)` and
/// `${…}` inside words and to bound what the parser will meet.
pub(super) fn scan(b: &[u8], start: usize, initial: Option<Frame>) -> ScanOutcome {
    let mut s = Scanner::default();
    let stop_when_closed = initial.is_some();
    if let Some(frame) = initial {
        s.push(frame);
    }
    let mut i = start;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        match s.top() {
            Some(Frame::DQuote) => match c {
                b'\\' => i += 2,
                b'"' => {
                    s.pop();
                    i += 1;
                }
                b'`' => {
                    s.push(Frame::Backtick);
                    i += 1;
                }
                b'$' if next == Some(b'(') => {
                    s.push(Frame::Subst);
                    i += 2;
                }
                b'$' if next == Some(b'{') => {
                    s.push(Frame::DollarBrace);
                    i += 2;
                }
                _ => i += 1,
            },
            Some(Frame::DollarBrace) => match c {
                b'\\' => i += 2,
                b'\'' => i = skip_single_quoted(b, i + 1),
                b'"' => {
                    s.push(Frame::DQuote);
                    i += 1;
                }
                b'`' => {
                    s.push(Frame::Backtick);
                    i += 1;
                }
                b'$' if next == Some(b'(') => {
                    s.push(Frame::Subst);
                    i += 2;
                }
                b'$' if next == Some(b'{') => {
                    s.push(Frame::DollarBrace);
                    i += 2;
                }
                b'}' => {
                    s.pop();
                    i += 1;
                }
                _ => i += 1,
            },
            top => i = s.code_byte(b, i, top),
        }
        if stop_when_closed && s.stack.is_empty() {
            return ScanOutcome {
                end: Some(i.min(b.len())),
                max_depth: s.max_depth,
                max_parens: s.max_parens,
                unclosed_paren: false,
                shift_in_arith: s.shift_in_arith,
                placed_shifts: s.placed_shifts,
                paren_gaps: s.paren_gaps,
                heredocs: s.heredocs,
            };
        }
    }
    ScanOutcome {
        end: None,
        max_depth: s.max_depth,
        max_parens: s.max_parens,
        unclosed_paren: s
            .stack
            .iter()
            .any(|f| matches!(f, Frame::Paren | Frame::DParen | Frame::Subst)),
        shift_in_arith: s.shift_in_arith,
        placed_shifts: s.placed_shifts,
        paren_gaps: s.paren_gaps,
        heredocs: s.heredocs,
    }
}

/// Why a piece of shell code was not handed to the parser.
#[derive(Debug)]
pub(super) enum PrecheckError {
    /// Nested too deeply to parse safely; the shell itself might well run it.
    TooDeep,
    /// The shell would reject it too.
    Unparseable(String),
}

/// A heredoc cut out of the text before parsing.
#[derive(Debug, Clone)]
pub(super) struct Heredoc {
    pub(super) body: String,
    /// Whether substitutions in the body run (the delimiter was not quoted).
    pub(super) expand: bool,
}

/// The text handed to the parser, and the heredocs cut out of it.
pub(super) struct Prepared<'t> {
    pub(super) text: std::borrow::Cow<'t, str>,
    pub(super) heredocs: Vec<Heredoc>,
}

/// The word that stands in for heredoc `index` in the text given to the parser.
pub(super) fn heredoc_marker(index: usize) -> String {
    format!("__mindrune_heredoc_{index}__")
}

/// The heredoc a marker word stands for.
pub(super) fn heredoc_index(word: &str) -> Option<usize> {
    word.strip_prefix("__mindrune_heredoc_")?
        .strip_suffix("__")?
        .parse()
        .ok()
}

/// Decides whether `text` is safe to hand to brush-parser (see the module docs) and returns
/// the text to parse.
///
/// Heredocs are cut out here: each `<<DELIM` becomes a `<marker` redirection and its body
/// and delimiter line are removed. brush-parser's tokenizer has several failure modes around
/// heredocs (infinite loops that eat all memory, panics), all of which involve the heredoc
/// machinery, so it is simplest never to show it one; the walker finds the bodies again
/// through the markers, numbered from `first_heredoc`.
pub(super) fn precheck(
    text: &str,
    max_depth: usize,
    first_heredoc: usize,
) -> Result<Prepared<'_>, PrecheckError> {
    let b = text.as_bytes();
    if raw_paren_depth(b) > MAX_RAW_PAREN_NESTING || arithmetic_places(b) > MAX_ARITHMETIC_PLACES {
        return Err(PrecheckError::TooDeep);
    }
    let outcome = scan(b, 0, None);
    if outcome.max_parens > MAX_PAREN_NESTING || outcome.max_depth > max_depth {
        return Err(PrecheckError::TooDeep);
    }
    if outcome.shift_in_arith {
        return Err(PrecheckError::Unparseable(
            "it shifts with `<<` inside `$((…))`, which the parser would read as a heredoc"
                .to_owned(),
        ));
    }
    if unplaced_heredoc_operator(b, &outcome) {
        return Err(PrecheckError::Unparseable(
            "it has a `<<` that is neither a heredoc nor a shift where it stands (inside quotes?)"
                .to_owned(),
        ));
    }
    if outcome.unclosed_paren {
        // Checked here rather than left to the parser because unbalanced parentheses are
        // where its backtracking is at its worst.
        return Err(PrecheckError::Unparseable(
            "a parenthesis is never closed".to_owned(),
        ));
    }

    let mut edits: Vec<(usize, usize, Vec<u8>)> = Vec::new();
    for &gap in &outcome.paren_gaps {
        edits.push((gap, gap + 1, b"\n".to_vec()));
    }
    let mut heredocs = Vec::with_capacity(outcome.heredocs.len());
    for (offset, heredoc) in outcome.heredocs.iter().enumerate() {
        let marker = format!("<{}", heredoc_marker(first_heredoc + offset));
        edits.push((heredoc.operator.0, heredoc.operator.1, marker.into_bytes()));
        if heredoc.removed.0 < heredoc.removed.1 {
            edits.push((heredoc.removed.0, heredoc.removed.1, Vec::new()));
        }
        heredocs.push(Heredoc {
            body: String::from_utf8_lossy(
                b.get(heredoc.body.0..heredoc.body.1).unwrap_or_default(),
            )
            .into_owned(),
            expand: heredoc.expand,
        });
    }
    let text = if edits.is_empty() {
        std::borrow::Cow::Borrowed(text)
    } else {
        edits.sort_by_key(|edit| edit.0);
        let mut out = Vec::with_capacity(b.len());
        let mut at = 0;
        for (start, end, replacement) in edits {
            if start < at {
                continue;
            }
            out.extend_from_slice(&b[at..start]);
            out.extend_from_slice(&replacement);
            at = end;
        }
        out.extend_from_slice(&b[at.min(b.len())..]);
        // Every edit starts and ends at an ASCII byte, so the text stays valid UTF-8.
        std::borrow::Cow::Owned(String::from_utf8_lossy(&out).into_owned())
    };

    // Whatever the scanner did not recognise as a heredoc reaches the parser as it is, so the
    // inputs known to break brush-parser are refused outright.
    if dangerous_heredoc_delimiter(text.as_bytes()) {
        return Err(PrecheckError::Unparseable(
            "its heredoc delimiter is empty or contains a substitution".to_owned(),
        ));
    }
    if let Some(number) = oversized_fd_number(text.as_bytes()) {
        return Err(PrecheckError::Unparseable(format!(
            "the redirection file descriptor {number} is out of range"
        )));
    }
    Ok(Prepared { text, heredocs })
}

/// Whether `b` holds a `<<` that the scanner did not place: neither a heredoc it cuts out nor a
/// shift in an arithmetic command. brush-parser's tokenizer may still take such a `<<` for a
/// heredoc (inside backquotes in double quotes, for one: fuzzing found `"`'`"<<'"' ` looping for
/// seconds), and its heredoc machinery is where it loops and panics, so the line is refused; a
/// false alarm (a `<<` in a quoted message) only costs a diagnostic. `<<<` is a here-string.
pub(super) fn unplaced_heredoc_operator(b: &[u8], outcome: &ScanOutcome) -> bool {
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'<').count();
        let placed = run == 2
            && (outcome.placed_shifts.contains(&i)
                || outcome.heredocs.iter().any(|h| h.operator.0 == i));
        if run >= 2 && run != 3 && !placed {
            return true;
        }
        i += run;
    }
    false
}

/// Whether a heredoc delimiter is one that brush-parser 0.4 cannot survive. When a
/// substitution is left open at the end of the input, it loops forever, pushing empty tokens
/// until memory runs out, for a delimiter containing `$(`, `${`, `$[` or a backquote (the
/// tokenizer reads it as a nested construct while still collecting the tag, e.g.
/// `<<$( &$(`) and for a delimiter that is empty once unquoted (`<<"" ${`), which matches
/// every line; and it panics on a missing delimiter inside `$(…)`. The check looks at every
/// `<<` in the raw text, whatever the quoting, because a miss would be fatal and a false
/// alarm (such characters inside a quoted string) only costs a diagnostic on a line nobody
/// writes.
pub(super) fn dangerous_heredoc_delimiter(b: &[u8]) -> bool {
    let opens_construct = |j: usize| {
        b[j] == b'`' || (b[j] == b'$' && matches!(b.get(j + 1), Some(b'(' | b'{' | b'[')))
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            // An escaped `<` is a literal character, not part of an operator.
            i += 2;
            continue;
        }
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let run = b[i..].iter().take_while(|&&c| c == b'<').count();
        i += run;
        // The tokenizer splits a run of `<` greedily into `<<<` here-strings, so only a lone
        // `<<<` is sure to be one; any other run of two or more may end in a heredoc `<<`.
        if run < 2 || run == 3 {
            continue;
        }
        let mut j = i;
        if b.get(j) == Some(&b'-') {
            j += 1;
        }
        // Only blanks separate the operator from its tag for brush-parser; other white space
        // (a carriage return, a form feed) is part of the tag's word, but the tag is trimmed
        // afterwards, so such characters never count as the tag's.
        while matches!(b.get(j), Some(b' ' | b'\t')) {
            j += 1;
        }
        // Walk the delimiter word as the tokenizer would, through quotes, until it ends,
        // counting the bytes that survive quote removal. Inside `${…}` or `$[…]` the word
        // already ends at `}` or `]`, so the count that decides emptiness stops there, while
        // the search for substitutions goes on to the end of the word.
        let start = j;
        let mut literal_bytes = 0;
        let mut bytes_before_closer: Option<usize> = None;
        while j < b.len() {
            if j - start > MAX_DELIMITER_SCAN {
                return true;
            }
            match b[j] {
                _ if opens_construct(j) => return true,
                b'}' | b']' => {
                    bytes_before_closer.get_or_insert(literal_bytes);
                    literal_bytes += 1;
                    j += 1;
                }
                b'\\' => {
                    literal_bytes += usize::from(j + 1 < b.len());
                    j += 2;
                }
                quote @ (b'\'' | b'"') => {
                    j += 1;
                    while j < b.len() && b[j] != quote {
                        if j - start > MAX_DELIMITER_SCAN {
                            return true;
                        }
                        if opens_construct(j) {
                            return true;
                        }
                        let escaped = quote == b'"' && b[j] == b'\\' && j + 1 < b.len();
                        let trimmed = trimmed_len(b, j);
                        literal_bytes += usize::from(trimmed == 0);
                        j += if escaped { 2 } else { trimmed.max(1) };
                    }
                    j += 1;
                }
                c if ends_brush_word(c) => break,
                _ => {
                    let trimmed = trimmed_len(b, j);
                    literal_bytes += usize::from(trimmed == 0);
                    j += trimmed.max(1);
                }
            }
        }
        // A missing delimiter is a syntax error for bash too, but inside `$(…)` (as in
        // `$(<< )$[`) it makes the tokenizer unwrap a character that is not there.
        if bytes_before_closer.unwrap_or(literal_bytes) == 0 {
            return true;
        }
        // The next `<<` is checked even if it lies inside this word: without tracking quotes
        // from the start of the text, this walk may be misaligned, and skipping ahead could
        // step over a real operator.
    }
    false
}

/// How far [`dangerous_heredoc_delimiter`] follows one delimiter word. Real delimiters are
/// short; the cap keeps the check linear, and a word that long is treated as dangerous.
/// Bytes that end a word for brush-parser's tokenizer: only space and tab are blanks there (a
/// carriage return is a word character), plus newlines and the operator characters.
pub(super) fn ends_brush_word(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// The length of the white-space character at `b[j]` if it is one brush-parser trims from a
/// heredoc tag (`str::trim`: any Unicode white space, form feeds and no-break spaces included),
/// else 0. A tag of nothing but such characters is empty.
pub(super) fn trimmed_len(b: &[u8], j: usize) -> usize {
    let len = match b[j] {
        0x00..0x80 => 1,
        0xc0..0xe0 => 2,
        0xe0..0xf0 => 3,
        _ => 4,
    };
    // `b` is the bytes of a `str`, so a whole character starts here unless `j` is inside one.
    match b.get(j..j + len).and_then(|c| std::str::from_utf8(c).ok()) {
        Some(c) if c.chars().next().is_some_and(char::is_whitespace) => len,
        _ => 0,
    }
}

pub(super) const MAX_DELIMITER_SCAN: usize = 4096;

/// Finds a word of digits directly followed by `<` or `>` whose value does not fit in an
/// `i32`: brush-parser 0.4 reads such a word as a redirection's file descriptor with
/// `parse().unwrap()` and panics. It looks at the raw text (after removing line
/// continuations, as the tokenizer does), so it can also reject such digits inside quotes;
/// no real command line has them.
pub(super) fn oversized_fd_number(b: &[u8]) -> Option<String> {
    let joined: Vec<u8>;
    let b = if b.windows(2).any(|w| w == b"\\\n") {
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' && b.get(i + 1) == Some(&b'\n') {
                i += 2;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        joined = out;
        &joined[..]
    } else {
        b
    };
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && at_word_start(b, i) {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if matches!(b.get(i), Some(b'<' | b'>')) {
                let digits = &b[start..i];
                let fits = digits.len() <= 10
                    && std::str::from_utf8(digits)
                        .ok()
                        .and_then(|d| d.parse::<i32>().ok())
                        .is_some();
                if !fits {
                    return Some(String::from_utf8_lossy(digits).into_owned());
                }
            }
        } else {
            i += 1;
        }
    }
    None
}
