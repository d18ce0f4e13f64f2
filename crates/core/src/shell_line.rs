//! Which scripts a shell line runs (owned by the shell-line helper; see issue 2 §4).
//!
//! One tool call is one run per script, so MindRune needs to know, for a single shell line,
//! which workspace scripts it runs in the foreground. [`classify_shell_line`] answers that
//! without executing anything and without touching the filesystem:
//!
//! * The structure of the line (lists, `&&`/`||`, pipelines, subshells, brace groups,
//!   `if`/`case`/loops, function definitions, `&` background jobs, heredocs, comments) comes
//!   from `brush-parser`'s AST, so quoting and comments follow the real shell rules.
//! * Words are unquoted by a small linear lexer in this module rather than by
//!   `brush_parser::word::parse`, because that PEG word parser backtracks exponentially on
//!   unbalanced parentheses inside arithmetic (for example `$(( \(\(\(…` or a heredoc body
//!   full of `$((`), and a classifier must answer in bounded time for any input.
//! * Before anything is handed to the parser, [`precheck`] bounds the nesting depth (the
//!   parser recurses once per nesting level and would overflow the stack), bounds the depth
//!   of nested parentheses (the parser backtracks exponentially on them: 20 nested `(`
//!   already take seconds), also counted with no regard to quoting, bounds the places it
//!   parses arithmetic in words (subscripts and `$((`, on which it backtracks as badly), cuts
//!   heredocs
//!   out of the text (brush-parser 0.4's tokenizer can
//!   loop until memory runs out, or panic, on unusual heredocs; the walker finds the bodies
//!   again through marker words), and refuses the remaining inputs known to make it panic
//!   (a redirection file-descriptor number that does not fit in an `i32`, `99999999999>x`).
//! * A walker then follows the commands in execution order, tracking the working directory
//!   through `cd`, subshell scopes, function definitions and calls, background jobs and the
//!   `wait`s that turn them back into foreground runs, and recursing into `sh -c '…'`,
//!   `eval '…'`, `$(…)` and `<(…)`. A fuel budget bounds the total work.
//!
//! Anything it cannot be sure about becomes a diagnostic, never a guess.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use brush_parser::ast;

use crate::shell_writes::{Arg, Operand, Reach, ShellWrites, Target, Write};

/// Where the line ran.
#[derive(Debug, Clone, Copy)]
pub struct ShellContext<'a> {
    /// The working directory of the call as reported by the host (absolute like "/work" or "/work/bots/buzz", or relative to the workspace root like "bots/buzz"; None = the workspace root).
    pub cwd: Option<&'a str>,
    /// Absolute paths under which the agent's workspace is visible (e.g. ["/work", "/home/me/avatars/buzz"]). The first one is the canonical one. A path resolved inside any of them is made workspace-relative.
    pub workspace_roots: &'a [&'a str],
}

/// What one shell line runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellRuns {
    /// Each distinct script the line runs in the foreground, once, in order of first appearance: workspace-relative, lexically normalised path with '/' separators, e.g. "bots/buzz/chop.ts".
    pub runs: Vec<String>,
    /// Scripts the line starts detached (sent to the background and never waited for); these are NOT runs, but the caller logs them.
    pub detached: Vec<String>,
    /// Problems worth telling the user (unparseable line, script path outside the workspace, …). Never fail: always return a value.
    pub diagnostics: Vec<String>,
}

/// The file extensions of scripts whose runs count.
pub const SCRIPT_EXTENSIONS: [&str; 4] = [".ts", ".js", ".mjs", ".tsx"];

/// How deeply constructs may nest, counting subshells, groups, compound commands, command
/// substitutions, `sh -c` strings and function calls together. brush-parser spends roughly
/// 16 KiB of stack per nesting level in a debug build; at this limit the worst case measured
/// about 1.3 MiB of stack in a debug build and under 512 KiB in a release build, inside the
/// 2 MiB stack of a spawned thread.
pub const MAX_NESTING: usize = 64;

/// How deeply parentheses may nest in one piece of shell code. brush-parser tries an
/// arithmetic `((…))` reading before a subshell reading at every level and has no
/// memoisation, so its time grows exponentially with this depth; 12 levels parse in about a
/// millisecond, and no real command line comes close.
const MAX_PAREN_NESTING: usize = 12;

/// How deeply parentheses may nest when quotes are not taken into account. The scanner's count
/// above follows quoting, but where it reads quoting differently from brush-parser (odd mixes
/// of `$'…'`, backquotes and `"`), brush may see parentheses the scanner took for quoted text;
/// fuzzing found a 197-byte line that took brush minutes that way. This cap holds whatever
/// either of them thinks is quoted, and real command lines stay far below it.
const MAX_RAW_PAREN_NESTING: usize = 16;

/// How many places a line may hold where brush-parser parses arithmetic inside a word: a `[`
/// that does not start a word (an array subscript `name[…]`, `${name[…]}`, an index or a
/// bracket expression in arithmetic) and a `$((`. Arithmetic may hold `$((…))`, `${x[…]}` or
/// another index, and brush-parser tries several readings at every level without
/// memoisation: fuzzing found lines of 27 to 484 bytes that took from a second to minutes. The
/// count takes no notice of quoting or nesting (neither can be told reliably where the scanner
/// and brush-parser read quotes differently), so it bounds every reading; real command lines
/// hold one or two (`${arr[@]}`, `a[0]=x`, `$((i + 1))`, a `grep 'lvl[0-9]'`), and a line
/// with more gets a diagnostic instead of runs.
const MAX_ARITHMETIC_PLACES: usize = 4;

/// Counts the places of [`MAX_ARITHMETIC_PLACES`] in `b`.
fn arithmetic_places(b: &[u8]) -> usize {
    (0..b.len())
        .filter(|&i| match b[i] {
            b'[' => {
                i > 0
                    && !matches!(
                        b[i - 1],
                        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b'[' | b'!'
                    )
            }
            b'$' => b[i + 1..].starts_with(b"(("),
            _ => false,
        })
        .count()
}

/// The deepest nesting of parentheses in `b`, counting every `(` and `)` byte (a `)` with
/// nothing open is ignored).
fn raw_paren_depth(b: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    for &c in b {
        match c {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The total work allowed for one line, in units of one command visited or 64 bytes lexed or
/// parsed. Function calls and loops re-walk code, so without a budget a short line of
/// functions that each call the next one twice could take exponential time.
const FUEL: usize = 1_000_000;

/// At most this many diagnostics are returned, so that a huge line cannot produce a huge
/// answer.
const MAX_DIAGNOSTICS: usize = 20;

/// Classifies one tool call's shell line into the scripts it runs (see the module docs).
pub fn classify_shell_line(line: &str, ctx: &ShellContext<'_>) -> ShellRuns {
    let mut walker = Walker::new(ctx.workspace_roots);
    let cwd = walker.initial_cwd(ctx.cwd);
    let mut scope = Scope::new(cwd);
    let parsed = walker.walk_text(line, &mut scope, 0, Origin::Line);
    walker.finish(parsed)
}

/// At most this many writes are kept for one line; a line with more is unreadable.
const MAX_WRITES: usize = 1_000;

/// Walks one line for where it writes ([`crate::shell_writes::shell_line_writes`]).
pub(crate) fn walk_for_writes(line: &str, ctx: &ShellContext<'_>) -> ShellWrites {
    let mut walker = Walker::new(ctx.workspace_roots);
    walker.writes = Some(Vec::new());
    let cwd = walker.initial_cwd(ctx.cwd);
    let mut scope = Scope::new(cwd);
    let parsed = walker.walk_text(line, &mut scope, 0, Origin::Line);
    let writes = walker.writes.take().unwrap_or_default();
    let mut unreadable = walker.unreadable.take();
    if !parsed && unreadable.is_none() {
        unreadable = Some("could not parse the shell line".to_owned());
    }
    if writes.len() >= MAX_WRITES {
        unreadable.get_or_insert_with(|| format!("it writes in more than {MAX_WRITES} places"));
    }
    ShellWrites { writes, unreadable }
}

// ---------------------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------------------

/// Lexically normalises an absolute path: drops empty and `.` segments and resolves `..`
/// (which stops at `/`, as the kernel does), without looking at the filesystem.
fn normalize_abs(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return "/".to_owned();
    }
    let mut out = String::with_capacity(path.len());
    for part in parts {
        out.push('/');
        out.push_str(part);
    }
    out
}

/// Resolves `rel` against the absolute directory `base`.
fn join_path(base: &str, rel: &str) -> String {
    normalize_abs(&format!("{base}/{rel}"))
}

/// Whether the last path component has a counted script extension (and more than it).
fn has_script_ext(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    SCRIPT_EXTENSIONS
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext))
}

/// The working directory as far as the walker knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cwd {
    /// A normalised absolute path.
    Known(String),
    /// Unknown; the text says why, phrased to follow "the working directory is unknown".
    Unknown(String),
}

impl Cwd {
    /// The directory after `cd target` from this one. An empty target leaves it unchanged, as
    /// in bash.
    fn change_to(&self, target: &str) -> Cwd {
        if target.is_empty() {
            self.clone()
        } else if target.starts_with('/') {
            Cwd::Known(normalize_abs(target))
        } else {
            match self {
                Cwd::Known(dir) => Cwd::Known(join_path(dir, target)),
                Cwd::Unknown(why) => Cwd::Unknown(why.clone()),
            }
        }
    }

    /// The directory after `cd` to the given word: literal words are followed, anything the
    /// shell would expand makes the directory unknown, since guessing could attribute a run
    /// to the wrong script.
    fn change_to_word(&self, word: &WordInfo, command: &str) -> Cwd {
        match word.path() {
            Some("-") => Cwd::Unknown(format!("after `{command} -`")),
            Some(target) => self.change_to(target),
            None => Cwd::Unknown(format!("after `{command} {}`", word.raw)),
        }
    }

    /// The directory after one of several branches ran: known only if all agree.
    fn merge(&self, other: &Cwd) -> Cwd {
        match (self, other) {
            (a, b) if a == b => a.clone(),
            (Cwd::Unknown(why), _) | (_, Cwd::Unknown(why)) => Cwd::Unknown(why.clone()),
            _ => Cwd::Unknown("because it depends on which branch of an `if` or `case` ran".into()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pre-parse scanner
// ---------------------------------------------------------------------------------------

/// An open construct while scanning shell code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
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
struct ScanOutcome {
    /// When scanning an opened construct: the index just past its closing delimiter.
    end: Option<usize>,
    max_depth: usize,
    /// The deepest nesting of parentheses the parser itself will see (those inside words,
    /// such as `$(…)`, are left to the tokenizer and parsed separately).
    max_parens: usize,
    /// Parentheses still open at the end of the text.
    unclosed_paren: bool,
    /// A `<<` inside arithmetic (see [`Scanner::shift_in_arith`]).
    shift_in_arith: bool,
    /// See [`Scanner::placed_shifts`].
    placed_shifts: Vec<usize>,
    /// Blanks between two opening parentheses, to be replaced by newlines (see
    /// [`Scanner::paren`]).
    paren_gaps: Vec<usize>,
    /// The heredocs, to be cut out of the text (see [`precheck`]).
    heredocs: Vec<ScannedHeredoc>,
}

/// A heredoc found by the scanner.
#[derive(Debug, Clone)]
struct ScannedHeredoc {
    /// The span of the operator: `<<`, an optional `-`, blanks and the delimiter word.
    operator: (usize, usize),
    delimiter: Vec<u8>,
    strip_tabs: bool,
    /// Whether the body is expanded (the delimiter was not quoted).
    expand: bool,
    /// The body text.
    body: (usize, usize),
    /// What follows the line of the operator and belongs to the heredoc: the body and the
    /// delimiter line.
    removed: (usize, usize),
}

#[derive(Default)]
struct Scanner {
    stack: Vec<Frame>,
    /// Per open `(` or `((`: whether the parser sees it (it is not inside a word).
    paren_counted: Vec<bool>,
    /// Open arithmetic constructs, inside which `<<` is a shift and `#` no comment.
    arith_level: usize,
    ext_ops: Vec<usize>,
    ext_total: usize,
    parens: usize,
    /// Open constructs that are part of a word (quotes, substitutions, expansions).
    word_level: usize,
    keywords: usize,
    max_depth: usize,
    max_parens: usize,
    heredocs: Vec<ScannedHeredoc>,
    /// Heredocs whose body starts after the next newline.
    pending: Vec<usize>,
    paren_gaps: Vec<usize>,
    /// A `<<` inside an arithmetic expansion `$((…))`: a shift for the shell, but brush-parser
    /// 0.4's tokenizer takes it for a heredoc there (not in an arithmetic command `((…))`), and fuzzing found 16 bytes (`$(($(())<<`, a tab-separated
    /// control character and trailing tabs) on which it then pushes tokens for seconds on end.
    shift_in_arith: bool,
    /// Where a `<<` is a shift in an arithmetic command `((…))`, which brush-parser reads as
    /// one (see [`unplaced_heredoc_operator`]).
    placed_shifts: Vec<usize>,
}

impl Scanner {
    fn top(&self) -> Option<Frame> {
        self.stack.last().copied()
    }

    fn note(&mut self) {
        self.max_depth = self
            .max_depth
            .max(self.stack.len() + self.keywords + self.ext_total);
        self.max_parens = self.max_parens.max(self.parens);
    }

    fn push(&mut self, frame: Frame) {
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

    fn pop(&mut self) {
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
    fn paren(&mut self, b: &[u8], i: usize) -> usize {
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

    fn ext_op(&mut self) {
        if let Some(ops) = self.ext_ops.last_mut() {
            *ops += 1;
            self.ext_total += 1;
            self.note();
        }
    }

    /// Handles one byte of shell code (outside quotes) at `i`; returns the next index.
    fn code_byte(&mut self, b: &[u8], i: usize, top: Option<Frame>) -> usize {
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
    fn keyword(&mut self, b: &[u8], i: usize, top: Option<Frame>) -> usize {
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
    fn heredoc_operator(&mut self, b: &[u8], start: usize) -> usize {
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
    fn skip_heredoc_bodies(&mut self, b: &[u8], mut i: usize) -> usize {
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
fn is_delimiter(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b'\r' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// Bytes that can form a reserved word this scanner cares about.
fn is_keyword_byte(c: u8) -> bool {
    c.is_ascii_alphabetic() || matches!(c, b'_' | b'{' | b'}' | b'[' | b']' | b'!')
}

fn at_word_start(b: &[u8], i: usize) -> bool {
    i == 0 || is_delimiter(b[i - 1])
}

/// The index just past the `'` closing a single-quoted string that starts at `j`.
fn skip_single_quoted(b: &[u8], j: usize) -> usize {
    b.get(j..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\''))
        .map_or(b.len(), |p| j + p + 1)
}

/// The index just past the `'` closing an ANSI-C string (`$'…'`) whose body starts at `j`.
fn skip_ansi_c(b: &[u8], mut j: usize) -> usize {
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
fn skip_to_newline(b: &[u8], i: usize) -> usize {
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
fn scan(b: &[u8], start: usize, initial: Option<Frame>) -> ScanOutcome {
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
enum PrecheckError {
    /// Nested too deeply to parse safely; the shell itself might well run it.
    TooDeep,
    /// The shell would reject it too.
    Unparseable(String),
}

/// A heredoc cut out of the text before parsing.
#[derive(Debug, Clone)]
struct Heredoc {
    body: String,
    /// Whether substitutions in the body run (the delimiter was not quoted).
    expand: bool,
}

/// The text handed to the parser, and the heredocs cut out of it.
struct Prepared<'t> {
    text: std::borrow::Cow<'t, str>,
    heredocs: Vec<Heredoc>,
}

/// The word that stands in for heredoc `index` in the text given to the parser.
fn heredoc_marker(index: usize) -> String {
    format!("__mindrune_heredoc_{index}__")
}

/// The heredoc a marker word stands for.
fn heredoc_index(word: &str) -> Option<usize> {
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
fn precheck(
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
fn unplaced_heredoc_operator(b: &[u8], outcome: &ScanOutcome) -> bool {
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
fn dangerous_heredoc_delimiter(b: &[u8]) -> bool {
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
fn ends_brush_word(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// The length of the white-space character at `b[j]` if it is one brush-parser trims from a
/// heredoc tag (`str::trim`: any Unicode white space, form feeds and no-break spaces included),
/// else 0. A tag of nothing but such characters is empty.
fn trimmed_len(b: &[u8], j: usize) -> usize {
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

const MAX_DELIMITER_SCAN: usize = 4096;

/// Finds a word of digits directly followed by `<` or `>` whose value does not fit in an
/// `i32`: brush-parser 0.4 reads such a word as a redirection's file descriptor with
/// `parse().unwrap()` and panics. It looks at the raw text (after removing line
/// continuations, as the tokenizer does), so it can also reject such digits inside quotes;
/// no real command line has them.
fn oversized_fd_number(b: &[u8]) -> Option<String> {
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

// ---------------------------------------------------------------------------------------
// Word lexer
// ---------------------------------------------------------------------------------------

/// One shell word, unquoted.
#[derive(Debug, Clone, Default)]
struct WordInfo {
    /// The word as written.
    raw: String,
    /// The word after quote removal, or None if the shell would expand part of it
    /// (a variable, `~`, a command substitution, arithmetic, an unusual `$'…'` escape).
    literal: Option<String>,
    /// Unquoted glob or brace-expansion characters, so the word may become other words.
    glob: bool,
    /// The code of each command substitution in the word, in order.
    subs: Vec<String>,
    /// Substitutions nested too deeply to follow.
    too_deep: bool,
}

impl WordInfo {
    /// The word as a path, if the shell would pass it on unchanged.
    fn path(&self) -> Option<&str> {
        if self.glob {
            None
        } else {
            self.literal.as_deref()
        }
    }

    /// Whether the word reads as an environment assignment (`NAME=value`).
    fn is_assignment(&self) -> bool {
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
fn lex_word(raw: &str) -> WordInfo {
    let mut lexer = Lexer::new(raw.as_bytes());
    lexer.unquoted(0, raw.len(), 0);
    lexer.finish(raw)
}

/// Lexes the body of a heredoc whose delimiter was unquoted: quotes are plain text there,
/// but `$(…)` and backquotes still run.
fn lex_heredoc(body: &str) -> WordInfo {
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

struct Lexer<'a> {
    b: &'a [u8],
    lit: Vec<u8>,
    expanded: bool,
    glob: bool,
    brace: bool,
    subs: Vec<String>,
    too_deep: bool,
}

impl<'a> Lexer<'a> {
    fn new(b: &'a [u8]) -> Self {
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

    fn finish(self, raw: &str) -> WordInfo {
        WordInfo {
            raw: raw.to_owned(),
            literal: (!self.expanded).then(|| String::from_utf8_lossy(&self.lit).into_owned()),
            glob: self.glob,
            subs: self.subs,
            too_deep: self.too_deep,
        }
    }

    fn text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(self.b.get(start..end).unwrap_or_default()).into_owned()
    }

    /// Lexes `b[i..end]` outside quotes.
    fn unquoted(&mut self, mut i: usize, end: usize, depth: usize) {
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
    fn double_quoted(&mut self, mut i: usize, end: usize, depth: usize) -> usize {
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
    fn backquoted(&mut self, mut i: usize, end: usize, in_double_quotes: bool) -> usize {
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
    fn dollar(&mut self, i: usize, end: usize, in_double_quotes: bool, depth: usize) -> usize {
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
    fn inner_subs(&mut self, start: usize, end: usize, depth: usize) {
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
    fn ansi_c(&mut self, mut i: usize, end: usize) -> usize {
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

// ---------------------------------------------------------------------------------------
// Walker
// ---------------------------------------------------------------------------------------

/// Where a piece of shell code came from, for diagnostics.
#[derive(Debug, Clone, Copy)]
enum Origin {
    Line,
    ShellString,
    Eval,
    Substitution,
}

impl Origin {
    fn describe(self) -> &'static str {
        match self {
            Origin::Line => "the shell line",
            Origin::ShellString => "a `sh -c` command string",
            Origin::Eval => "an `eval` string",
            Origin::Substitution => "a command substitution",
        }
    }
}

/// One shell process's state as far as running scripts is concerned.
#[derive(Clone)]
struct Scope {
    cwd: Cwd,
    dir_stack: Vec<Cwd>,
    functions: HashMap<String, Rc<ast::FunctionBody>>,
    /// Background jobs this shell started, in order (for `%N` and `$!`).
    started: Vec<usize>,
    /// Background jobs a `wait` would still wait for.
    pending: Vec<usize>,
    /// The background jobs this shell itself runs inside: its scripts are foreground runs
    /// only if every one of them was waited for.
    chain: Vec<usize>,
    /// Functions being called, to stop recursion.
    calls: Vec<String>,
}

impl Scope {
    fn new(cwd: Cwd) -> Self {
        Scope {
            cwd,
            dir_stack: Vec::new(),
            functions: HashMap::new(),
            started: Vec::new(),
            pending: Vec::new(),
            chain: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// A subshell: a copy of this shell whose changes do not come back, and which cannot wait
    /// for its parent's jobs.
    fn subshell(&self) -> Self {
        Scope {
            started: Vec::new(),
            pending: Vec::new(),
            ..self.clone()
        }
    }

    /// A new shell process (`sh -c`): it inherits only the working directory.
    fn new_shell(&self, cwd: Cwd) -> Self {
        Scope {
            chain: self.chain.clone(),
            ..Scope::new(cwd)
        }
    }
}

/// A script the line starts.
struct Occurrence {
    path: String,
    chain: Vec<usize>,
    detached: bool,
}

/// A shell builtin that changes what later commands mean.
#[derive(Debug, Clone, Copy)]
enum Builtin {
    Cd,
    Pushd,
    Popd,
    Wait,
    Disown,
}

/// What a simple command does, as far as scripts are concerned. `at` is the index of the
/// argument word after whose expansion it happens.
#[derive(Debug)]
enum Action {
    Script {
        at: usize,
        cwd: Cwd,
        detached: bool,
    },
    Shell {
        at: usize,
        code: String,
        cwd: Cwd,
        detached: bool,
    },
    /// A shell that reads its script from standard input (`bash <<'EOF'`, `sh -s`).
    Stdin {
        at: usize,
        cwd: Cwd,
        detached: bool,
    },
    Eval {
        at: usize,
        code: String,
    },
    Builtin {
        at: usize,
        kind: Builtin,
        from: usize,
    },
    Call {
        at: usize,
        name: String,
    },
    Diag {
        at: usize,
        message: String,
    },
}

impl Action {
    fn at(&self) -> usize {
        match self {
            Action::Script { at, .. }
            | Action::Shell { at, .. }
            | Action::Stdin { at, .. }
            | Action::Eval { at, .. }
            | Action::Builtin { at, .. }
            | Action::Call { at, .. }
            | Action::Diag { at, .. } => *at,
        }
    }
}

/// What the wrappers in front of a command changed.
struct Mods {
    /// The command is run by another program (`env`, `timeout`, …), so shell functions and
    /// builtins such as `cd` do not apply.
    external: bool,
    /// `command`/`builtin` skip shell functions.
    no_functions: bool,
    detached: bool,
    cwd: Cwd,
    xargs: bool,
}

/// How a script runner (`bun`, `node`, `tsx`) reads its arguments.
struct Runner {
    name: &'static str,
    /// Options followed by a separate value.
    value_flags: &'static [&'static str],
    /// Options that mean no script file runs (inline code, version, help, test runners).
    no_file_flags: &'static [&'static str],
    no_file_prefixes: &'static [&'static str],
    /// A subcommand word that may precede the file (`bun run`, `tsx watch`).
    run_word: Option<&'static str>,
    /// Subcommands that do not run a file.
    other_subcommands: &'static [&'static str],
    /// Whether `--cwd <dir>` changes where the file is looked up.
    cwd_flag: bool,
}

const BUN: Runner = Runner {
    name: "bun",
    value_flags: &[
        "-r",
        "--preload",
        "--require",
        "--import",
        "--env-file",
        "-c",
        "--config",
        "--tsconfig-override",
        "-d",
        "--define",
        "-l",
        "--loader",
        "--main-fields",
        "--extension-order",
        "--jsx-factory",
        "--jsx-fragment",
        "--jsx-import-source",
        "--jsx-runtime",
        "--port",
        "--conditions",
        "--fetch-preconnect",
        "--max-http-header-size",
        "--dns-result-order",
        "--title",
        "--console-depth",
        "--shell",
        "--elide-lines",
        "-F",
        "--filter",
        "--origin",
        "--unhandled-rejections",
        "--user-agent",
    ],
    no_file_flags: &[
        "-e",
        "--eval",
        "-p",
        "--print",
        "-v",
        "--version",
        "-h",
        "--help",
        "--revision",
    ],
    no_file_prefixes: &["--eval=", "--print="],
    run_word: Some("run"),
    other_subcommands: &[
        "test",
        "build",
        "install",
        "i",
        "add",
        "a",
        "remove",
        "rm",
        "update",
        "outdated",
        "link",
        "unlink",
        "pm",
        "init",
        "create",
        "c",
        "x",
        "upgrade",
        "publish",
        "patch",
        "patch-commit",
        "audit",
        "info",
        "why",
        "repl",
        "exec",
        "completions",
        "discord",
        "help",
        "feedback",
    ],
    cwd_flag: true,
};

const NODE: Runner = Runner {
    name: "node",
    value_flags: &[
        "-r",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "-C",
        "--conditions",
        "--env-file",
        "--input-type",
        "--inspect-port",
        "--title",
        "--watch-path",
    ],
    no_file_flags: &[
        "-e",
        "--eval",
        "-p",
        "--print",
        "-c",
        "--check",
        "--test",
        "--run",
        "-v",
        "--version",
        "-h",
        "--help",
        "-i",
        "--interactive",
    ],
    no_file_prefixes: &["--eval=", "--print=", "--run=", "--test="],
    run_word: None,
    other_subcommands: &[],
    cwd_flag: false,
};

const TSX: Runner = Runner {
    name: "tsx",
    value_flags: &["--tsconfig", "--env-file", "--import", "--require", "-r"],
    no_file_flags: &[
        "-e",
        "--eval",
        "-p",
        "--print",
        "--test",
        "-v",
        "--version",
        "-h",
        "--help",
    ],
    no_file_prefixes: &["--eval=", "--print="],
    run_word: Some("watch"),
    other_subcommands: &[],
    cwd_flag: false,
};

/// Options of `xargs` followed by a separate value.
const XARGS_VALUE_FLAGS: &[&str] = &[
    "-a",
    "--arg-file",
    "-d",
    "--delimiter",
    "-E",
    "-I",
    "-L",
    "-n",
    "--max-args",
    "-P",
    "--max-procs",
    "-s",
    "--max-chars",
    "--process-slot-var",
];

/// An item of a simple command, in source order.
enum Item<'x> {
    Word(WordInfo),
    Assignment(WordInfo),
    Redirect(&'x ast::IoRedirect),
    ProcessSubstitution(&'x ast::SubshellCommand),
}

impl<'x> Item<'x> {
    fn from_ast(item: &'x ast::CommandPrefixOrSuffixItem, is_suffix: bool) -> Self {
        match item {
            ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => Item::Redirect(redirect),
            ast::CommandPrefixOrSuffixItem::Word(word) => Item::Word(lex_word(&word.value)),
            // After the command name an assignment is just an argument (`export A=1`).
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) if is_suffix => {
                Item::Word(lex_word(&word.value))
            }
            ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                Item::Assignment(lex_word(&word.value))
            }
            ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                Item::ProcessSubstitution(subshell)
            }
        }
    }
}

struct Walker {
    /// Normalised roots, the canonical one first.
    roots: Vec<String>,
    /// The same, longest first, so the most specific root wins.
    roots_by_len: Vec<String>,
    occurrences: Vec<Occurrence>,
    /// The heredocs cut out of every text parsed so far (see [`precheck`]).
    heredocs: Vec<Heredoc>,
    /// Per background job: whether the line waits for it.
    waited: Vec<bool>,
    diagnostics: Vec<String>,
    seen_diagnostics: HashSet<String>,
    suppressed_diagnostics: usize,
    fuel: usize,
    gave_up: bool,
    /// Where the line writes, when it is walked for that ([`walk_for_writes`]).
    writes: Option<Vec<Write>>,
    /// Why a part of the line could not be read (for [`walk_for_writes`]).
    unreadable: Option<String>,
}

impl Walker {
    fn new(roots: &[&str]) -> Self {
        let mut walker = Walker {
            roots: Vec::new(),
            roots_by_len: Vec::new(),
            occurrences: Vec::new(),
            heredocs: Vec::new(),
            waited: Vec::new(),
            diagnostics: Vec::new(),
            seen_diagnostics: HashSet::new(),
            suppressed_diagnostics: 0,
            fuel: FUEL,
            gave_up: false,
            writes: None,
            unreadable: None,
        };
        for root in roots {
            if root.starts_with('/') {
                let root = normalize_abs(root);
                if !walker.roots.contains(&root) {
                    walker.roots.push(root);
                }
            } else {
                walker.diag(format!(
                    "ignoring the workspace root `{root}`: it is not an absolute path"
                ));
            }
        }
        walker.roots_by_len = walker.roots.clone();
        walker
            .roots_by_len
            .sort_by_key(|root| std::cmp::Reverse(root.len()));
        walker
    }

    fn initial_cwd(&mut self, cwd: Option<&str>) -> Cwd {
        let canonical = self.roots.first().cloned();
        let relative_to_root = |rel: &str| match &canonical {
            Some(root) => Cwd::Known(join_path(root, rel)),
            None => Cwd::Unknown("because no workspace root was given".to_owned()),
        };
        match cwd {
            None => relative_to_root(""),
            Some(dir) if dir.starts_with('/') => Cwd::Known(normalize_abs(dir)),
            Some(dir) if dir.starts_with('~') || dir.starts_with('$') => Cwd::Unknown(format!(
                "because the reported directory `{dir}` is not a plain path"
            )),
            Some(dir) => relative_to_root(dir),
        }
    }

    fn diag(&mut self, message: String) {
        if self.seen_diagnostics.contains(&message) {
            return;
        }
        if self.diagnostics.len() >= MAX_DIAGNOSTICS {
            self.suppressed_diagnostics += 1;
            return;
        }
        self.seen_diagnostics.insert(message.clone());
        self.diagnostics.push(message);
    }

    /// Stops the analysis: the result will hold no runs, because a partial answer could
    /// miss a run or attribute one wrongly.
    fn give_up(&mut self, why: &str) {
        self.unreadable.get_or_insert_with(|| why.to_owned());
        if !self.gave_up {
            self.gave_up = true;
            self.diag(format!(
                "gave up analysing the line: {why}; no runs recorded"
            ));
        }
    }

    /// Spends `units` of the work budget; false once it is exhausted.
    fn burn(&mut self, units: usize) -> bool {
        if self.gave_up {
            return false;
        }
        if self.fuel < units {
            self.give_up("it is too complex to analyse");
            return false;
        }
        self.fuel -= units;
        true
    }

    fn new_job(&mut self) -> usize {
        self.waited.push(false);
        self.waited.len() - 1
    }

    fn finish(mut self, parsed: bool) -> ShellRuns {
        if self.suppressed_diagnostics > 0 {
            let more = self.suppressed_diagnostics;
            self.diagnostics
                .push(format!("… and {more} more diagnostics"));
        }
        if !parsed || self.gave_up {
            return ShellRuns {
                runs: Vec::new(),
                detached: Vec::new(),
                diagnostics: self.diagnostics,
            };
        }
        let mut runs = Vec::new();
        let mut detached = Vec::new();
        let mut seen_runs = HashSet::new();
        let mut seen_detached = HashSet::new();
        for occurrence in &self.occurrences {
            let foreground =
                !occurrence.detached && occurrence.chain.iter().all(|&job| self.waited[job]);
            let (list, seen) = if foreground {
                (&mut runs, &mut seen_runs)
            } else {
                (&mut detached, &mut seen_detached)
            };
            if seen.insert(occurrence.path.clone()) {
                list.push(occurrence.path.clone());
            }
        }
        ShellRuns {
            runs,
            detached,
            diagnostics: self.diagnostics,
        }
    }

    /// Parses and walks a piece of shell code. Returns false if it could not be parsed.
    fn walk_text(&mut self, text: &str, scope: &mut Scope, depth: usize, origin: Origin) -> bool {
        if !self.burn(1 + text.len() / 64) {
            return false;
        }
        if depth >= MAX_NESTING {
            self.give_up("it nests more than 64 levels deep");
            return false;
        }
        let what = origin.describe();
        let consequence = match origin {
            Origin::Line => "; no runs recorded",
            _ => "",
        };
        let prepared = match precheck(text, MAX_NESTING - depth, self.heredocs.len()) {
            Ok(prepared) => prepared,
            Err(PrecheckError::TooDeep) => {
                self.give_up(&format!("{what} nests too deeply"));
                return false;
            }
            Err(PrecheckError::Unparseable(why)) => {
                self.unreadable
                    .get_or_insert_with(|| format!("could not parse {what} ({why})"));
                self.diag(format!("could not parse {what} ({why}){consequence}"));
                return false;
            }
        };
        self.heredocs.extend(prepared.heredocs);
        let options = brush_parser::ParserOptions::default();
        let mut parser = brush_parser::Parser::new(prepared.text.as_bytes(), &options);
        let program = match parser.parse_program() {
            Ok(program) => program,
            Err(error) => {
                self.unreadable
                    .get_or_insert_with(|| format!("could not parse {what} ({error})"));
                self.diag(format!("could not parse {what} ({error}){consequence}"));
                return false;
            }
        };
        for list in &program.complete_commands {
            self.walk_list(list, scope, depth + 1);
        }
        true
    }

    fn walk_list(&mut self, list: &ast::CompoundList, scope: &mut Scope, depth: usize) {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if self.gave_up {
                return;
            }
            match separator {
                ast::SeparatorOperator::Sequence => self.walk_and_or(and_or, scope, depth),
                ast::SeparatorOperator::Async => {
                    // `… &` runs the whole and-or list in a background subshell.
                    let job = self.new_job();
                    scope.started.push(job);
                    scope.pending.push(job);
                    let mut background = scope.subshell();
                    background.chain.push(job);
                    self.walk_and_or(and_or, &mut background, depth + 1);
                }
            }
        }
    }

    fn walk_and_or(&mut self, and_or: &ast::AndOrList, scope: &mut Scope, depth: usize) {
        // Both sides of `&&` and `||` are assumed to run: the classifier cannot know exit
        // statuses, and a `cd dir || exit` should still move later commands into `dir`.
        self.walk_pipeline(&and_or.first, scope, depth);
        for next in &and_or.additional {
            let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
            self.walk_pipeline(pipeline, scope, depth);
        }
    }

    fn walk_pipeline(&mut self, pipeline: &ast::Pipeline, scope: &mut Scope, depth: usize) {
        if let [command] = pipeline.seq.as_slice() {
            self.walk_command(command, scope, depth);
        } else {
            // Every command of a multi-command pipeline runs in its own subshell.
            for command in &pipeline.seq {
                let mut sub = scope.subshell();
                self.walk_command(command, &mut sub, depth + 1);
            }
        }
    }

    fn walk_command(&mut self, command: &ast::Command, scope: &mut Scope, depth: usize) {
        if !self.burn(1) {
            return;
        }
        match command {
            ast::Command::Simple(simple) => self.walk_simple(simple, scope, depth),
            ast::Command::Compound(compound, redirects) => {
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.walk_redirect(redirect, scope, depth);
                    }
                }
                self.walk_compound(compound, scope, depth);
            }
            ast::Command::Function(definition) => {
                // A definition runs nothing; its body counts only when the name is called.
                if let Some(name) = lex_word(&definition.fname.value).literal {
                    scope
                        .functions
                        .insert(name, Rc::new(definition.body.clone()));
                }
            }
            ast::Command::ExtendedTest(test, redirects) => {
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.walk_redirect(redirect, scope, depth);
                    }
                }
                self.walk_extended_test(&test.expr, scope, depth);
            }
        }
    }

    fn walk_extended_test(
        &mut self,
        expr: &ast::ExtendedTestExpr,
        scope: &mut Scope,
        depth: usize,
    ) {
        // Iterative, because a long `&&` chain inside `[[ ]]` is a deep left-leaning tree.
        let mut stack = vec![expr];
        while let Some(expr) = stack.pop() {
            match expr {
                ast::ExtendedTestExpr::And(left, right)
                | ast::ExtendedTestExpr::Or(left, right) => {
                    stack.push(right);
                    stack.push(left);
                }
                ast::ExtendedTestExpr::Not(inner) | ast::ExtendedTestExpr::Parenthesized(inner) => {
                    stack.push(inner);
                }
                ast::ExtendedTestExpr::UnaryTest(_, word) => self.walk_word(word, scope, depth),
                ast::ExtendedTestExpr::BinaryTest(_, left, right) => {
                    self.walk_word(left, scope, depth);
                    self.walk_word(right, scope, depth);
                }
            }
        }
    }

    fn walk_compound(&mut self, compound: &ast::CompoundCommand, scope: &mut Scope, depth: usize) {
        let depth = depth + 1;
        if depth >= MAX_NESTING {
            self.give_up("it nests more than 64 levels deep");
            return;
        }
        match compound {
            ast::CompoundCommand::Arithmetic(arithmetic) => {
                self.walk_arithmetic(&arithmetic.expr, scope, depth);
            }
            ast::CompoundCommand::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.walk_arithmetic(expr, scope, depth);
                }
                self.walk_loop(None, &clause.body.list, scope, depth);
            }
            ast::CompoundCommand::BraceGroup(group) => self.walk_list(&group.list, scope, depth),
            ast::CompoundCommand::Subshell(subshell) => self.walk_subshell(subshell, scope, depth),
            ast::CompoundCommand::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.walk_word(value, scope, depth);
                }
                self.walk_loop(None, &clause.body.list, scope, depth);
            }
            ast::CompoundCommand::CaseClause(clause) => {
                self.walk_word(&clause.value, scope, depth);
                let start = scope.cwd.clone();
                let mut end: Option<Cwd> = None;
                let mut has_default = false;
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        has_default |= pattern.value == "*";
                        self.walk_word(pattern, scope, depth);
                    }
                    scope.cwd = start.clone();
                    if let Some(list) = &item.cmd {
                        self.walk_list(list, scope, depth);
                    }
                    end = Some(end.map_or_else(|| scope.cwd.clone(), |e| e.merge(&scope.cwd)));
                }
                if !has_default {
                    end = Some(end.map_or_else(|| start.clone(), |e| e.merge(&start)));
                }
                scope.cwd = end.unwrap_or(start);
            }
            ast::CompoundCommand::IfClause(clause) => {
                self.walk_list(&clause.condition, scope, depth);
                let start = scope.cwd.clone();
                self.walk_list(&clause.then, scope, depth);
                let mut end = scope.cwd.clone();
                let mut has_else = false;
                for branch in clause.elses.iter().flatten() {
                    scope.cwd = start.clone();
                    match &branch.condition {
                        Some(condition) => self.walk_list(condition, scope, depth),
                        None => has_else = true,
                    }
                    self.walk_list(&branch.body, scope, depth);
                    end = end.merge(&scope.cwd);
                }
                if !has_else {
                    end = end.merge(&start);
                }
                scope.cwd = end;
            }
            ast::CompoundCommand::WhileClause(clause)
            | ast::CompoundCommand::UntilClause(clause) => {
                self.walk_loop(Some(&clause.0), &clause.1.list, scope, depth);
            }
            ast::CompoundCommand::Coprocess(coprocess) => {
                // A coprocess runs in the background like `&`.
                let job = self.new_job();
                scope.started.push(job);
                scope.pending.push(job);
                let mut background = scope.subshell();
                background.chain.push(job);
                self.walk_command(&coprocess.body, &mut background, depth);
            }
        }
    }

    /// Walks a loop once: a script run four times by one line is still one run. If the body
    /// changes directory, later iterations start elsewhere, so the body is walked a second
    /// time with an unknown directory to flag relative scripts it would then run.
    fn walk_loop(
        &mut self,
        condition: Option<&ast::CompoundList>,
        body: &ast::CompoundList,
        scope: &mut Scope,
        depth: usize,
    ) {
        let start = scope.cwd.clone();
        if let Some(condition) = condition {
            self.walk_list(condition, scope, depth);
        }
        self.walk_list(body, scope, depth);
        if scope.cwd != start {
            let unknown = Cwd::Unknown("because it changes inside a loop".to_owned());
            scope.cwd = unknown.clone();
            if let Some(condition) = condition {
                self.walk_list(condition, scope, depth);
            }
            self.walk_list(body, scope, depth);
            scope.cwd = unknown;
        }
    }

    fn walk_subshell(&mut self, subshell: &ast::SubshellCommand, scope: &Scope, depth: usize) {
        let mut sub = scope.subshell();
        self.walk_list(&subshell.list, &mut sub, depth + 1);
    }

    fn walk_arithmetic(
        &mut self,
        expr: &ast::UnexpandedArithmeticExpr,
        scope: &Scope,
        depth: usize,
    ) {
        let info = lex_word(&expr.value);
        self.walk_subs(&info, scope, depth);
    }

    fn walk_word(&mut self, word: &ast::Word, scope: &Scope, depth: usize) {
        let info = lex_word(&word.value);
        self.walk_subs(&info, scope, depth);
    }

    /// Walks the command substitutions of a word; each runs in a subshell.
    fn walk_subs(&mut self, info: &WordInfo, scope: &Scope, depth: usize) {
        if !self.burn(info.raw.len() / 64) {
            return;
        }
        if info.too_deep {
            self.give_up("a word nests substitutions too deeply");
            return;
        }
        for code in &info.subs {
            let mut sub = scope.subshell();
            self.walk_text(code, &mut sub, depth + 1, Origin::Substitution);
        }
    }

    fn walk_redirect(&mut self, redirect: &ast::IoRedirect, scope: &Scope, depth: usize) {
        if self.writes.is_some() {
            self.note_redirect_write(redirect, scope);
        }
        match redirect {
            ast::IoRedirect::File(_, _, target) => match target {
                ast::IoFileRedirectTarget::Filename(word) => {
                    match heredoc_index(&word.value).and_then(|i| self.heredocs.get(i)) {
                        // A heredoc body is data; only the substitutions in an unquoted one
                        // run.
                        Some(heredoc) => {
                            if heredoc.expand {
                                let info = lex_heredoc(&heredoc.body);
                                self.walk_subs(&info, scope, depth);
                            }
                        }
                        None => self.walk_word(word, scope, depth),
                    }
                }
                ast::IoFileRedirectTarget::Duplicate(word) => self.walk_word(word, scope, depth),
                ast::IoFileRedirectTarget::Fd(_) => {}
                ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                    self.walk_subshell(subshell, scope, depth);
                }
            },
            ast::IoRedirect::HereDocument(_, heredoc) => {
                // Heredocs are normally cut out before parsing; this handles any the scanner
                // did not recognise.
                if heredoc.requires_expansion {
                    let info = lex_heredoc(&heredoc.doc.value);
                    self.walk_subs(&info, scope, depth);
                }
            }
            ast::IoRedirect::HereString(_, word) | ast::IoRedirect::OutputAndError(word, _) => {
                self.walk_word(word, scope, depth);
            }
        }
    }

    fn walk_simple(&mut self, simple: &ast::SimpleCommand, scope: &mut Scope, depth: usize) {
        let mut items: Vec<Item<'_>> = Vec::new();
        if let Some(prefix) = &simple.prefix {
            items.extend(prefix.0.iter().map(|item| Item::from_ast(item, false)));
        }
        if let Some(name) = &simple.word_or_name {
            items.push(Item::Word(lex_word(&name.value)));
        }
        if let Some(suffix) = &simple.suffix {
            items.extend(suffix.0.iter().map(|item| Item::from_ast(item, true)));
        }

        let args: Vec<&WordInfo> = items
            .iter()
            .filter_map(|item| match item {
                Item::Word(word) => Some(word),
                _ => None,
            })
            .collect();
        let mut action = self.classify(&args, scope);
        if let Some(Action::Stdin { at, cwd, detached }) = action {
            action = self.stdin_script(&items).map(|code| Action::Shell {
                at,
                code,
                cwd,
                detached,
            });
            if action.is_none() {
                self.note_write(
                    "a shell",
                    Target::Computed(
                        "the commands a shell reads from its input, which the line does not show"
                            .to_owned(),
                    ),
                    Reach::Tree,
                );
            }
        }
        if self.writes.is_some() {
            self.note_command_writes(&args, scope);
        }

        // Substitutions run in source order, and the command's own action after the word that
        // triggers it, so runs come out in order of appearance.
        let mut arg_index = 0;
        for item in &items {
            match item {
                Item::Word(word) => {
                    self.walk_subs(word, scope, depth);
                    if action.as_ref().is_some_and(|a| a.at() == arg_index)
                        && let Some(action) = action.take()
                    {
                        self.perform(action, &args, scope, depth);
                    }
                    arg_index += 1;
                }
                Item::Assignment(word) => self.walk_subs(word, scope, depth),
                Item::Redirect(redirect) => self.walk_redirect(redirect, scope, depth),
                Item::ProcessSubstitution(subshell) => self.walk_subshell(subshell, scope, depth),
            }
        }
    }

    /// The script a shell reading standard input gets from this command's own redirections:
    /// a heredoc or a here-string. Piped input cannot be known.
    fn stdin_script(&self, items: &[Item<'_>]) -> Option<String> {
        let reads_stdin = |fd: &Option<ast::IoFd>| fd.is_none_or(|fd| fd == 0);
        items.iter().rev().find_map(|item| match item {
            Item::Redirect(ast::IoRedirect::File(
                fd,
                ast::IoFileRedirectKind::Read,
                ast::IoFileRedirectTarget::Filename(word),
            )) if reads_stdin(fd) => Some(
                heredoc_index(&word.value)
                    .and_then(|i| self.heredocs.get(i))
                    .map(|heredoc| heredoc.body.clone()),
            ),
            Item::Redirect(ast::IoRedirect::HereDocument(fd, heredoc)) if reads_stdin(fd) => {
                Some(Some(heredoc.doc.value.clone()))
            }
            Item::Redirect(ast::IoRedirect::HereString(fd, word)) if reads_stdin(fd) => {
                Some(lex_word(&word.value).path().map(str::to_owned))
            }
            _ => None,
        })?
    }

    /// Decides what a simple command with these argument words does.
    fn classify(&self, args: &[&WordInfo], scope: &Scope) -> Option<Action> {
        let last = args.len().checked_sub(1)?;
        let mut mods = Mods {
            external: false,
            no_functions: false,
            detached: false,
            cwd: scope.cwd.clone(),
            xargs: false,
        };
        let mut i = 0;
        loop {
            let word = args.get(i)?;
            let name = command_name(word)?;
            let base = name.rsplit('/').next().unwrap_or(&name).to_owned();
            if !mods.external
                && !mods.no_functions
                && word.literal.is_some()
                && scope.functions.contains_key(&name)
            {
                return Some(Action::Call { at: last, name });
            }
            match base.as_str() {
                "env" => {
                    i = skip_env(args, i + 1, &mut mods);
                    mods.external = true;
                }
                "timeout" => {
                    let options = &["-s", "--signal", "-k", "--kill-after"];
                    // The duration follows the options.
                    i = skip_options(args, i + 1, options) + 1;
                    mods.external = true;
                }
                "nice" => {
                    i = skip_options(args, i + 1, &["-n", "--adjustment"]);
                    mods.external = true;
                }
                "nohup" => {
                    // nohup only ignores hangups; without `&` the command runs in the
                    // foreground.
                    i = skip_options(args, i + 1, &[]);
                    mods.external = true;
                }
                "stdbuf" => {
                    let options = &["-i", "-o", "-e", "--input", "--output", "--error"];
                    i = skip_options(args, i + 1, options);
                    mods.external = true;
                }
                "time" => {
                    let options = &["-f", "--format", "-o", "--output"];
                    i = skip_options(args, i + 1, options);
                    mods.external = true;
                }
                "setsid" => {
                    let j = skip_options(args, i + 1, &[]);
                    // `setsid -f` forks and returns at once; plain setsid runs the command in
                    // the foreground when the shell does not make it a group leader.
                    mods.detached |= args[i + 1..j].iter().any(|w| {
                        w.literal.as_deref().is_some_and(|o| {
                            o == "--fork"
                                || (o.starts_with('-') && !o.starts_with("--") && o.contains('f'))
                        })
                    });
                    i = j;
                    mods.external = true;
                }
                "xargs" => {
                    i = skip_options(args, i + 1, XARGS_VALUE_FLAGS);
                    mods.xargs = true;
                    mods.external = true;
                }
                "exec" => {
                    i = skip_options(args, i + 1, &["-a"]);
                    mods.external = true;
                }
                "command" => {
                    let j = skip_options(args, i + 1, &[]);
                    let lookup_only = args[i + 1..j].iter().any(|w| {
                        w.literal.as_deref().is_some_and(|o| {
                            o.starts_with('-') && (o.contains('v') || o.contains('V'))
                        })
                    });
                    if lookup_only {
                        return None;
                    }
                    i = j;
                    mods.no_functions = true;
                }
                "builtin" => {
                    i += 1;
                    mods.no_functions = true;
                }
                "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "mksh" => {
                    return shell_string(args, i, &base, &mods);
                }
                "eval" if !mods.external => return eval_string(args, i, last),
                "bun" => return run_script(args, i + 1, &mods, &BUN),
                "node" | "nodejs" => return run_script(args, i + 1, &mods, &NODE),
                "tsx" => return run_script(args, i + 1, &mods, &TSX),
                "cd" | "pushd" | "popd" | "wait" | "disown" if !mods.external => {
                    let kind = match base.as_str() {
                        "cd" => Builtin::Cd,
                        "pushd" => Builtin::Pushd,
                        "popd" => Builtin::Popd,
                        "wait" => Builtin::Wait,
                        _ => Builtin::Disown,
                    };
                    return Some(Action::Builtin {
                        at: last,
                        kind,
                        from: i + 1,
                    });
                }
                _ => {
                    // A script executed directly through its shebang (`./bots/a/x.ts`).
                    // Without a slash the name is looked up in PATH instead.
                    return (name.contains('/') && word.path().is_some() && has_script_ext(&name))
                        .then_some(Action::Script {
                            at: i,
                            cwd: mods.cwd,
                            detached: mods.detached,
                        });
                }
            }
        }
    }

    fn perform(&mut self, action: Action, args: &[&WordInfo], scope: &mut Scope, depth: usize) {
        match action {
            Action::Script { at, cwd, detached } => self.record(args[at], &cwd, scope, detached),
            Action::Shell {
                code,
                cwd,
                detached,
                ..
            } => {
                let mut shell = scope.new_shell(cwd);
                if detached {
                    let job = self.new_job();
                    shell.chain.push(job);
                }
                self.walk_text(&code, &mut shell, depth + 1, Origin::ShellString);
            }
            // Resolved into `Shell` by `walk_simple` when the script is known.
            Action::Stdin { .. } => {}
            Action::Eval { code, .. } => {
                self.walk_text(&code, scope, depth + 1, Origin::Eval);
            }
            Action::Builtin { kind, from, .. } => {
                self.builtin(kind, args.get(from..).unwrap_or_default(), scope);
            }
            Action::Call { name, .. } => self.call(&name, scope, depth),
            Action::Diag { message, .. } => {
                // A `sh -c` or `eval` of a computed string: code the line does not show.
                if message.starts_with("cannot analyse") {
                    self.note_write("a shell", Target::Computed(message.clone()), Reach::Tree);
                }
                self.diag(message);
            }
        }
    }

    /// Notes a write, when the line is walked for its writes.
    fn note_write(&mut self, command: &str, target: Target, reach: Reach) {
        if let Some(writes) = &mut self.writes
            && writes.len() < MAX_WRITES
        {
            writes.push(Write {
                command: command.to_owned(),
                target,
                reach,
            });
        }
    }

    /// A word's path against the folder, or why it cannot be known.
    fn resolve_target(path: Option<&str>, raw: &str, glob: bool, cwd: &Cwd) -> Target {
        let Some(path) = path else {
            return Target::Computed(raw.to_owned());
        };
        let absolute = if path.starts_with('/') {
            normalize_abs(path)
        } else {
            match cwd {
                Cwd::Known(dir) => join_path(dir, path),
                Cwd::Unknown(why) => {
                    return Target::Computed(format!("{raw} (the folder is unknown {why})"));
                }
            }
        };
        if glob {
            Target::Glob(absolute)
        } else {
            Target::Path(absolute)
        }
    }

    /// The file an output redirection (`>`, `>>`, `>|`, `<>`, `&>`, `>& file`) writes.
    fn note_redirect_write(&mut self, redirect: &ast::IoRedirect, scope: &Scope) {
        let word = match redirect {
            ast::IoRedirect::File(
                _,
                ast::IoFileRedirectKind::Write
                | ast::IoFileRedirectKind::Append
                | ast::IoFileRedirectKind::Clobber
                | ast::IoFileRedirectKind::ReadAndWrite,
                ast::IoFileRedirectTarget::Filename(word),
            ) => word,
            ast::IoRedirect::File(
                _,
                ast::IoFileRedirectKind::DuplicateOutput,
                ast::IoFileRedirectTarget::Duplicate(word)
                | ast::IoFileRedirectTarget::Filename(word),
            ) if !word.value.bytes().all(|b| b.is_ascii_digit() || b == b'-') => word,
            ast::IoRedirect::OutputAndError(word, _) => word,
            _ => return,
        };
        if heredoc_index(&word.value).is_some() {
            return;
        }
        let info = lex_word(&word.value);
        if info.literal.as_deref() == Some("/dev/null") {
            return;
        }
        let target =
            Self::resolve_target(info.literal.as_deref(), &info.raw, info.glob, &scope.cwd);
        self.note_write(">", target, Reach::File);
    }

    /// What a simple command's own words write (see [`crate::shell_writes`]).
    fn note_command_writes(&mut self, args: &[&WordInfo], scope: &Scope) {
        let words: Vec<Arg<'_>> = args
            .iter()
            .map(|word| Arg {
                raw: &word.raw,
                literal: word.literal.as_deref(),
                glob: word.glob,
            })
            .collect();
        let Some(first) = words.first() else {
            return;
        };
        let command = first.literal.unwrap_or(first.raw).to_owned();
        for operand in crate::shell_writes::command_writes(&words) {
            let (target, reach) = match operand {
                Operand::Word {
                    raw,
                    value,
                    glob,
                    reach,
                } => (
                    Self::resolve_target(value.as_deref(), &raw, glob, &scope.cwd),
                    reach,
                ),
                Operand::Into { dest, name, reach } => {
                    match Self::resolve_target(Some(&dest), &dest, false, &scope.cwd) {
                        Target::Path(dir) => (Target::Path(join_path(&dir, &name)), reach),
                        other => (other, reach),
                    }
                }
                Operand::Cwd(reach) => match &scope.cwd {
                    Cwd::Known(dir) => (Target::Path(dir.clone()), reach),
                    Cwd::Unknown(why) => (
                        Target::Computed(format!("the folder it runs in, unknown {why}")),
                        reach,
                    ),
                },
                Operand::Code(code) => (Target::Code(code), Reach::Maybe),
            };
            self.note_write(&command, target, reach);
        }
    }

    /// Records the script named by `word`, run from `cwd`.
    fn record(&mut self, word: &WordInfo, cwd: &Cwd, scope: &Scope, detached: bool) {
        let Some(path) = word.path() else {
            self.diag(format!(
                "cannot resolve the script `{}`: it contains a variable, glob or substitution",
                word.raw
            ));
            return;
        };
        let absolute = if path.starts_with('/') {
            normalize_abs(path)
        } else {
            match cwd {
                Cwd::Known(dir) => join_path(dir, path),
                Cwd::Unknown(why) => {
                    self.diag(format!(
                        "cannot resolve the script `{path}`: the working directory is unknown {why}"
                    ));
                    return;
                }
            }
        };
        if !has_script_ext(&absolute) {
            return;
        }
        match self.workspace_relative(&absolute) {
            Some(relative) => self.occurrences.push(Occurrence {
                path: relative,
                chain: scope.chain.clone(),
                detached,
            }),
            None => self.diag(format!(
                "not counted: the script `{path}` resolves to `{absolute}`, outside the workspace"
            )),
        }
    }

    fn workspace_relative(&self, absolute: &str) -> Option<String> {
        for root in &self.roots_by_len {
            let rest = if root == "/" {
                Some(absolute)
            } else {
                absolute.strip_prefix(root.as_str())
            };
            if let Some(relative) = rest.and_then(|rest| rest.strip_prefix('/'))
                && !relative.is_empty()
            {
                return Some(relative.to_owned());
            }
        }
        None
    }

    fn builtin(&mut self, kind: Builtin, args: &[&WordInfo], scope: &mut Scope) {
        match kind {
            Builtin::Cd | Builtin::Pushd => {
                let command = if matches!(kind, Builtin::Cd) {
                    "cd"
                } else {
                    "pushd"
                };
                let target = args.iter().copied().find(|w| {
                    !w.literal.as_deref().is_some_and(|o| {
                        o == "--"
                            || (o.len() > 1
                                && o.starts_with('-')
                                && o[1..]
                                    .chars()
                                    .all(|c| matches!(c, 'L' | 'P' | 'e' | '@' | 'n')))
                    })
                });
                let next = match target {
                    None if matches!(kind, Builtin::Cd) => {
                        Cwd::Unknown("after `cd` without a directory (it goes to $HOME)".to_owned())
                    }
                    None => Cwd::Unknown("after `pushd` without a directory".to_owned()),
                    Some(word)
                        if matches!(kind, Builtin::Pushd)
                            && word.literal.as_deref().is_some_and(|t| {
                                t.len() > 1 && (t.starts_with('+') || t.starts_with('-'))
                            }) =>
                    {
                        Cwd::Unknown(format!("after `pushd {}`", word.raw))
                    }
                    Some(word) => scope.cwd.change_to_word(word, command),
                };
                if matches!(kind, Builtin::Pushd) {
                    scope.dir_stack.push(scope.cwd.clone());
                }
                scope.cwd = next;
            }
            Builtin::Popd => {
                if args.iter().any(|w| w.literal.as_deref() != Some("-n")) {
                    scope.cwd = Cwd::Unknown("after `popd` with arguments".to_owned());
                } else if let Some(previous) = scope.dir_stack.pop() {
                    scope.cwd = previous;
                }
                // `popd` with an empty stack fails and leaves the directory alone.
            }
            Builtin::Wait => self.wait(args, scope),
            Builtin::Disown => disown(args, scope),
        }
    }

    /// `wait` turns the background jobs it waits for into foreground runs.
    fn wait(&mut self, args: &[&WordInfo], scope: &mut Scope) {
        let mut operands = Vec::new();
        let mut skip_value = false;
        for word in args {
            if skip_value {
                skip_value = false;
                continue;
            }
            match word.literal.as_deref() {
                Some("-n") => {
                    self.diag(
                        "`wait -n` waits for only one of the background jobs, so they count as detached"
                            .to_owned(),
                    );
                    return;
                }
                Some("-p") => skip_value = true,
                Some("-f" | "--") => {}
                _ => operands.push(*word),
            }
        }
        if operands.is_empty() {
            for job in std::mem::take(&mut scope.pending) {
                self.waited[job] = true;
            }
            return;
        }
        for word in operands {
            match job_reference(word, scope) {
                Some(job) => {
                    if let Some(position) = scope.pending.iter().position(|&j| j == job) {
                        scope.pending.remove(position);
                        self.waited[job] = true;
                    }
                }
                // A PID in a variable cannot be traced to one job; the line waits for
                // something it started, so its jobs count as waited for.
                None => {
                    for job in std::mem::take(&mut scope.pending) {
                        self.waited[job] = true;
                    }
                }
            }
        }
    }

    fn call(&mut self, name: &str, scope: &mut Scope, depth: usize) {
        let Some(body) = scope.functions.get(name).cloned() else {
            return;
        };
        if scope.calls.iter().any(|called| called == name) {
            // A recursive call runs nothing the first call did not.
            return;
        }
        scope.calls.push(name.to_owned());
        let ast::FunctionBody(compound, redirects) = &*body;
        if let Some(redirects) = redirects {
            for redirect in &redirects.0 {
                self.walk_redirect(redirect, scope, depth + 1);
            }
        }
        self.walk_compound(compound, scope, depth + 1);
        scope.calls.pop();
    }
}

/// The name a command word invokes. A word the shell would expand still names the program if
/// its last path component is plain (`$HOME/.bun/bin/bun`, `~/.bun/bin/bun`).
fn command_name(word: &WordInfo) -> Option<String> {
    if let Some(literal) = &word.literal {
        return Some(literal.clone());
    }
    let last = word.raw.rsplit('/').next()?;
    (!last.is_empty()
        && word.raw.contains('/')
        && last
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'+')))
    .then(|| last.to_owned())
}

/// Skips a wrapper's options; returns the index of the first word after them.
fn skip_options(args: &[&WordInfo], mut j: usize, with_value: &[&str]) -> usize {
    while let Some(word) = args.get(j) {
        let Some(option) = word.literal.as_deref() else {
            break;
        };
        if option == "--" {
            return j + 1;
        }
        if option.len() > 1 && option.starts_with('-') {
            j += if with_value.contains(&option) { 2 } else { 1 };
            continue;
        }
        break;
    }
    j
}

/// Skips `env`'s options and assignments, following `-C dir`.
fn skip_env(args: &[&WordInfo], mut j: usize, mods: &mut Mods) -> usize {
    while let Some(word) = args.get(j) {
        let Some(option) = word.literal.as_deref() else {
            break;
        };
        match option {
            "--" => {
                j += 1;
                break;
            }
            "-C" | "--chdir" => {
                mods.cwd = match args.get(j + 1) {
                    Some(dir) => mods.cwd.change_to_word(dir, "env -C"),
                    None => mods.cwd.clone(),
                };
                j += 2;
            }
            "-u" | "--unset" | "-S" | "--split-string" => j += 2,
            _ if option.starts_with("--chdir=") => {
                mods.cwd = mods.cwd.change_to(&option["--chdir=".len()..]);
                j += 1;
            }
            _ if option.starts_with("-C") && option.len() > 2 => {
                mods.cwd = mods.cwd.change_to(&option[2..]);
                j += 1;
            }
            _ if option.starts_with('-') => j += 1,
            _ => break,
        }
    }
    while args.get(j).is_some_and(|w| w.is_assignment()) {
        j += 1;
    }
    j
}

/// `sh -c '…'` and friends: the string is parsed as a new shell's code.
fn shell_string(args: &[&WordInfo], i: usize, name: &str, mods: &Mods) -> Option<Action> {
    let mut j = i + 1;
    let mut has_c = false;
    while let Some(word) = args.get(j) {
        let Some(option) = word.literal.as_deref() else {
            break;
        };
        if option == "--" || option == "-" {
            j += 1;
            break;
        }
        if let Some(long) = option.strip_prefix("--") {
            j += if matches!(long, "rcfile" | "init-file") {
                2
            } else {
                1
            };
            continue;
        }
        if option.len() > 1 && (option.starts_with('-') || option.starts_with('+')) {
            has_c |= option.starts_with('-') && option.contains('c');
            j += if matches!(&option[1..], "o" | "O") {
                2
            } else {
                1
            };
            continue;
        }
        break;
    }
    if !has_c {
        // `bash script.sh` runs a shell script, which is not one of ours; without a script
        // (or with `-s`) the shell reads its commands from standard input.
        let reads_stdin = args.get(j).is_none()
            || args[i + 1..j].iter().any(|w| {
                w.literal
                    .as_deref()
                    .is_some_and(|o| o.starts_with('-') && !o.starts_with("--") && o.contains('s'))
            });
        return reads_stdin.then(|| Action::Stdin {
            at: args.len() - 1,
            cwd: mods.cwd.clone(),
            detached: mods.detached,
        });
    }
    let word = args.get(j)?;
    Some(match word.path() {
        Some(code) => Action::Shell {
            at: j,
            code: code.to_owned(),
            cwd: mods.cwd.clone(),
            detached: mods.detached,
        },
        None => Action::Diag {
            at: j,
            message: format!(
                "cannot analyse `{name} -c` with a command string that is not literal: `{}`",
                word.raw
            ),
        },
    })
}

/// `eval word…`: the words joined by spaces are parsed as code of the current shell.
fn eval_string(args: &[&WordInfo], i: usize, last: usize) -> Option<Action> {
    let words = args.get(i + 1..).filter(|w| !w.is_empty())?;
    let mut code = Vec::with_capacity(words.len());
    for word in words {
        match word.literal.as_deref() {
            Some(text) if !word.glob => code.push(text),
            _ => {
                return Some(Action::Diag {
                    at: last,
                    message: format!(
                        "cannot analyse `eval` of a string that is not literal: `{}`",
                        word.raw
                    ),
                });
            }
        }
    }
    Some(Action::Eval {
        at: last,
        code: code.join(" "),
    })
}

/// Finds the script file a runner (`bun`, `node`, `tsx`) runs.
fn run_script(args: &[&WordInfo], mut j: usize, mods: &Mods, runner: &Runner) -> Option<Action> {
    let mut cwd = mods.cwd.clone();
    let mut subcommand_seen = false;
    let mut options_done = false;
    while let Some(word) = args.get(j) {
        let looks_like_option = word.raw.len() > 1 && word.raw.starts_with('-');
        if !options_done && looks_like_option {
            let Some(option) = word.literal.as_deref() else {
                // An option with an expanded value such as `--port=$PORT`.
                j += 1;
                continue;
            };
            if option == "--" {
                options_done = true;
                j += 1;
                continue;
            }
            if runner.no_file_flags.contains(&option)
                || runner
                    .no_file_prefixes
                    .iter()
                    .any(|p| option.starts_with(p))
            {
                return None;
            }
            if runner.cwd_flag && option == "--cwd" {
                if let Some(dir) = args.get(j + 1) {
                    cwd = cwd.change_to_word(dir, "bun --cwd");
                }
                j += 2;
                continue;
            }
            if runner.cwd_flag && option.starts_with("--cwd=") {
                cwd = cwd.change_to(&option["--cwd=".len()..]);
                j += 1;
                continue;
            }
            j += if runner.value_flags.contains(&option) {
                2
            } else {
                1
            };
            continue;
        }
        let Some(file) = word.path() else {
            return Some(Action::Diag {
                at: j,
                message: format!(
                    "cannot resolve the script `{}` that `{}` runs: it contains a variable, glob or substitution",
                    word.raw, runner.name
                ),
            });
        };
        if !subcommand_seen && runner.run_word == Some(file) {
            subcommand_seen = true;
            j += 1;
            continue;
        }
        if !subcommand_seen && runner.other_subcommands.contains(&file) {
            return None;
        }
        return has_script_ext(file).then_some(Action::Script {
            at: j,
            cwd,
            detached: mods.detached,
        });
    }
    mods.xargs.then(|| Action::Diag {
        at: args.len().saturating_sub(1),
        message: format!(
            "cannot resolve the script that `{}` runs under `xargs`: it comes from xargs' input",
            runner.name
        ),
    })
}

/// The background job a `wait` or `disown` operand names, if it names exactly one.
fn job_reference(word: &WordInfo, scope: &Scope) -> Option<usize> {
    if matches!(word.raw.as_str(), "$!" | "\"$!\"" | "${!}" | "\"${!}\"") {
        return scope.started.last().copied();
    }
    let spec = word.literal.as_deref()?.strip_prefix('%')?;
    match spec {
        "" | "%" | "+" => scope.started.last().copied(),
        "-" => scope.started.iter().rev().nth(1).copied(),
        number => {
            let n: usize = number.parse().ok()?;
            scope.started.get(n.checked_sub(1)?).copied()
        }
    }
}

/// `disown` removes jobs from the shell's table, so a later `wait` no longer waits for them.
fn disown(args: &[&WordInfo], scope: &mut Scope) {
    let options: Vec<&str> = args.iter().filter_map(|w| w.literal.as_deref()).collect();
    if options.contains(&"-h") {
        // `disown -h` only stops SIGHUP from reaching the job; it stays waitable.
        return;
    }
    if options.iter().any(|o| matches!(*o, "-a" | "-r")) {
        scope.pending.clear();
        return;
    }
    if args.is_empty() {
        // Without operands, disown removes the current job.
        if let Some(&current) = scope.started.last() {
            scope.pending.retain(|&j| j != current);
        }
        return;
    }
    for word in args {
        match job_reference(word, scope) {
            Some(job) => scope.pending.retain(|&j| j != job),
            // A PID in a variable cannot be traced to one job, so none stays waitable.
            None => scope.pending.clear(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ROOT: &[&str] = &["/work"];
    const TWO_ROOTS: &[&str] = &["/work", "/home/me/avatars/buzz"];

    /// What the diagnostics of a case must look like.
    #[derive(Debug, Clone, Copy)]
    enum Diag {
        /// No diagnostics at all.
        Clean,
        /// At least one diagnostic containing this text.
        Mentions(&'static str),
    }

    /// One row of the table: a real-looking line and what it must classify as.
    struct Case {
        behaviour: &'static str,
        line: &'static str,
        cwd: Option<&'static str>,
        roots: &'static [&'static str],
        runs: &'static [&'static str],
        detached: &'static [&'static str],
        diag: Diag,
    }

    fn case(behaviour: &'static str, line: &'static str, runs: &'static [&'static str]) -> Case {
        Case {
            behaviour,
            line,
            cwd: None,
            roots: ROOT,
            runs,
            detached: &[],
            diag: Diag::Clean,
        }
    }

    impl Case {
        fn cwd(mut self, cwd: &'static str) -> Self {
            self.cwd = Some(cwd);
            self
        }
        fn roots(mut self, roots: &'static [&'static str]) -> Self {
            self.roots = roots;
            self
        }
        fn detached(mut self, detached: &'static [&'static str]) -> Self {
            self.detached = detached;
            self
        }
        fn diag(mut self, text: &'static str) -> Self {
            self.diag = Diag::Mentions(text);
            self
        }
    }

    fn classify(line: &str, cwd: Option<&str>, roots: &[&str]) -> ShellRuns {
        classify_shell_line(
            line,
            &ShellContext {
                cwd,
                workspace_roots: roots,
            },
        )
    }

    const X: &str = "bots/a/x.ts";
    const Y: &str = "bots/a/y.ts";

    fn table() -> Vec<Case> {
        vec![
            // How a run can be written.
            case("a_plain_bun_call_is_a_run", "bun bots/a/x.ts", &[X]),
            case("bun_run_is_a_run", "bun run bots/a/x.ts", &[X]),
            case("a_dot_slash_path_is_a_run", "bun ./bots/a/x.ts", &[X]),
            case(
                "bun_flags_before_the_file_are_skipped",
                "bun --smol bots/a/x.ts",
                &[X],
            ),
            case(
                "a_bun_flag_value_is_not_taken_for_the_script",
                "bun --preload ./setup.ts bots/a/x.ts",
                &[X],
            ),
            case(
                "bun_run_flags_are_skipped",
                "bun run --watch bots/a/x.ts",
                &[X],
            ),
            case(
                "arguments_after_the_script_do_not_matter",
                "bun bots/a/x.ts 3 oak",
                &[X],
            ),
            case(
                "a_trailing_comment_still_runs_the_script",
                "bun bots/a/x.ts  # chop oaks",
                &[X],
            ),
            case(
                "output_redirection_is_still_a_run",
                "bun bots/a/x.ts > out.log",
                &[X],
            ),
            case(
                "a_pipe_into_tail_is_still_a_run",
                "bun bots/a/x.ts 2>&1 | tail -20",
                &[X],
            ),
            case(
                "a_line_continuation_joins_the_words",
                "bun \\\n  bots/a/x.ts \\\n  3",
                &[X],
            ),
            case("double_quotes_are_removed", "bun \"bots/a/x.ts\"", &[X]),
            case(
                "single_quotes_keep_spaces_in_the_path",
                "bun 'bots/a/my script.ts'",
                &["bots/a/my script.ts"],
            ),
            case(
                "an_escaped_space_is_part_of_the_path",
                "bun bots/a/my\\ script.ts",
                &["bots/a/my script.ts"],
            ),
            case(
                "js_mjs_and_tsx_scripts_count_too",
                "bun bots/a/x.js; bun bots/a/y.mjs; bun bots/a/z.tsx",
                &["bots/a/x.js", "bots/a/y.mjs", "bots/a/z.tsx"],
            ),
            case(
                "other_extensions_are_not_scripts",
                "bun bots/a/data.json",
                &[],
            ),
            case(
                "scripts_outside_bots_are_returned_too",
                "bun scripts/tool.ts",
                &["scripts/tool.ts"],
            ),
            case(
                "node_runs_a_script_too",
                "node bots/a/x.js",
                &["bots/a/x.js"],
            ),
            case("tsx_runs_a_script_too", "tsx bots/a/x.ts", &[X]),
            case(
                "a_script_executed_through_its_shebang_is_a_run",
                "./bots/a/x.ts",
                &[X],
            ),
            case(
                "non_ascii_paths_are_kept",
                "bun bots/ä/λ.ts",
                &["bots/ä/λ.ts"],
            ),
            // Working directory.
            case(
                "cd_to_the_workspace_root_then_run",
                "cd /work && bun bots/a/x.ts",
                &[X],
            )
            .cwd("/work/bots/a"),
            case(
                "cd_into_the_bot_then_run_by_name",
                "cd bots/a && bun x.ts",
                &[X],
            ),
            case("cd_then_semicolon_then_run", "cd bots/a; bun x.ts", &[X]),
            case(
                "cd_or_exit_still_moves_later_commands",
                "cd bots/a || exit 1; bun x.ts",
                &[X],
            ),
            case(
                "cd_then_bun_run_piped_into_tail",
                "cd /work && bun run bots/a/x.ts 2>&1 | tail -40",
                &[X],
            ),
            case(
                "a_multi_line_script_tracks_cd",
                "cd bots/a\nbun x.ts\n",
                &[X],
            ),
            case(
                "a_relative_host_cwd_is_under_the_first_root",
                "bun x.ts",
                &[X],
            )
            .cwd("bots/a"),
            case("an_absolute_host_cwd_is_used", "bun x.ts", &[X]).cwd("/work/bots/a"),
            case("the_host_cwd_work_is_the_root", "bun bots/a/x.ts", &[X]).cwd("/work"),
            case(
                "cd_dot_dot_from_a_bot_directory",
                "cd .. && bun a/x.ts",
                &[X],
            )
            .cwd("bots/a"),
            case(
                "a_cd_inside_a_subshell_does_not_leak",
                "(cd bots/a && bun x.ts); bun bots/b/y.ts",
                &[X, "bots/b/y.ts"],
            ),
            case(
                "after_a_subshell_cd_relative_paths_use_the_old_directory",
                "(cd bots/a); bun x.ts",
                &["x.ts"],
            ),
            case(
                "a_cd_in_a_pipeline_stage_does_not_leak",
                "cd bots/a | cat; bun x.ts",
                &["x.ts"],
            ),
            case(
                "cd_dash_makes_the_directory_unknown",
                "cd - && bun x.ts",
                &[],
            )
            .diag("the working directory is unknown after `cd -`"),
            case(
                "cd_to_a_variable_makes_the_directory_unknown",
                "cd \"$BOT_DIR\" && bun x.ts",
                &[],
            )
            .diag("the working directory is unknown"),
            case("cd_without_a_directory_goes_home", "cd && bun x.ts", &[]).diag("$HOME"),
            case(
                "absolute_paths_resolve_even_when_the_directory_is_unknown",
                "cd $X && bun /work/bots/a/x.ts",
                &[X],
            ),
            case(
                "a_cd_in_only_one_branch_makes_the_directory_unknown",
                "if [ -d bots/a ]; then cd bots/a; fi; bun x.ts",
                &[],
            )
            .diag("which branch"),
            case(
                "a_cd_to_a_loop_variable_makes_the_directory_unknown",
                "for d in a b; do cd bots/$d; done; bun x.ts",
                &[],
            )
            .diag("the working directory is unknown"),
            case(
                "pushd_and_popd_are_followed",
                "pushd bots/a > /dev/null && bun x.ts && popd && bun bots/b/y.ts",
                &[X, "bots/b/y.ts"],
            ),
            case(
                "bun_cwd_flag_moves_the_lookup",
                "bun --cwd bots/a x.ts",
                &[X],
            ),
            case("env_chdir_moves_the_lookup", "env -C bots/a bun x.ts", &[X]),
            // Wrappers and environment.
            case(
                "environment_assignments_before_bun",
                "BOT=a FOO=1 bun bots/a/x.ts",
                &[X],
            ),
            case("env_with_assignments", "env BOT=a bun bots/a/x.ts", &[X]),
            case("timeout_wraps_a_run", "timeout 60 bun bots/a/x.ts", &[X]),
            case(
                "timeout_with_a_signal_option",
                "timeout -s KILL 5m bun bots/a/x.ts",
                &[X],
            ),
            case(
                "timeout_with_long_options",
                "timeout --kill-after=10 --signal=INT 300 bun bots/a/x.ts",
                &[X],
            ),
            case("nice_wraps_a_run", "nice -n 10 bun bots/a/x.ts", &[X]),
            case(
                "nohup_without_ampersand_is_a_foreground_run",
                "nohup bun bots/a/x.ts > out.log 2>&1",
                &[X],
            ),
            case("the_time_keyword_wraps_a_run", "time bun bots/a/x.ts", &[X]),
            case("command_wraps_a_run", "command bun bots/a/x.ts", &[X]),
            case("exec_wraps_a_run", "exec bun bots/a/x.ts", &[X]),
            case(
                "stdbuf_wraps_a_run",
                "stdbuf -oL bun bots/a/x.ts | tee run.log",
                &[X],
            ),
            case(
                "stacked_wrappers_are_all_skipped",
                "cd bots/a && FOO=1 timeout 600 nice -n 5 stdbuf -oL bun run --smol x.ts 3 oak 2>&1 | tail -20",
                &[X],
            ),
            case(
                "sourcing_an_env_file_then_running",
                "source bots/a/bot.env && bun bots/a/x.ts",
                &[X],
            ),
            case(
                "shell_options_then_a_run",
                "set -euo pipefail; export BOT=a; bun bots/a/x.ts",
                &[X],
            ),
            case(
                "an_exit_status_echo_after_the_run",
                "cd /work && timeout 300 bun run bots/a/x.ts 2>&1 | tail -40; echo \"exit: $?\"",
                &[X],
            ),
            // Paths and roots.
            case(
                "an_absolute_path_under_the_root",
                "bun /work/bots/a/x.ts",
                &[X],
            )
            .cwd("/tmp"),
            case(
                "an_absolute_path_under_a_second_root",
                "bun /home/me/avatars/buzz/bots/a/x.ts",
                &[X],
            )
            .roots(TWO_ROOTS),
            case("a_host_cwd_under_a_second_root", "bun x.ts", &[X])
                .roots(TWO_ROOTS)
                .cwd("/home/me/avatars/buzz/bots/a"),
            case(
                "dot_and_dot_dot_inside_the_workspace_are_normalised",
                "bun bots/b/../a/./x.ts",
                &[X],
            ),
            case(
                "duplicate_slashes_are_normalised",
                "bun bots//a///x.ts",
                &[X],
            ),
            case(
                "a_script_outside_the_workspace_is_not_a_run",
                "bun /tmp/x.ts",
                &[],
            )
            .diag("`/tmp/x.ts` resolves to `/tmp/x.ts`, outside the workspace"),
            case("a_dot_dot_escape_is_not_a_run", "bun ../../etc/x.ts", &[])
                .diag("outside the workspace"),
            case(
                "a_dot_dot_escape_from_a_bot_directory_is_not_a_run",
                "bun ../../../x.ts",
                &[],
            )
            .cwd("bots/a")
            .diag("outside the workspace"),
            case(
                "a_variable_in_the_path_cannot_be_resolved",
                "bun bots/$BOT/x.ts",
                &[],
            )
            .diag("cannot resolve the script `bots/$BOT/x.ts`"),
            case("a_glob_cannot_be_resolved", "bun bots/a/*.ts", &[])
                .diag("cannot resolve the script `bots/a/*.ts`"),
            case("a_tilde_path_cannot_be_resolved", "bun ~/bots/a/x.ts", &[])
                .diag("cannot resolve"),
            // Several scripts, loops, compound commands.
            case(
                "two_different_scripts_are_one_run_each",
                "bun bots/a/x.ts; bun bots/a/y.ts",
                &[X, Y],
            ),
            case(
                "an_and_or_chain_runs_both",
                "bun bots/a/x.ts && bun bots/a/y.ts || echo failed",
                &[X, Y],
            ),
            case(
                "the_same_script_twice_is_one_run",
                "bun bots/a/x.ts; bun bots/a/x.ts",
                &[X],
            ),
            case(
                "a_loop_running_the_same_script_four_times_is_one_run",
                "for i in 1 2 3 4; do bun bots/a/x.ts; done",
                &[X],
            ),
            case(
                "a_loop_after_cd_runs_the_script_once",
                "cd bots/a && for i in 1 2 3; do bun x.ts $i || break; done",
                &[X],
            ),
            case(
                "a_while_loop_body",
                "while ! bun bots/a/x.ts; do sleep 5; done",
                &[X],
            ),
            case(
                "an_until_loop_body",
                "until bun bots/a/x.ts; do sleep 1; done",
                &[X],
            ),
            case(
                "an_arithmetic_for_loop_body",
                "for ((i=0; i<3; i++)); do bun bots/a/x.ts \"$i\"; done",
                &[X],
            ),
            case(
                "both_branches_of_an_if_count",
                "if [ -f bots/a/x.ts ]; then bun bots/a/x.ts; else bun bots/a/y.ts; fi",
                &[X, Y],
            ),
            case(
                "an_if_condition_runs",
                "if bun bots/a/x.ts; then echo ok; fi",
                &[X],
            ),
            case(
                "a_case_body_runs",
                "case \"$1\" in chop) bun bots/a/x.ts ;; *) echo no ;; esac",
                &[X],
            ),
            case(
                "a_brace_group_with_a_redirect",
                "{ bun bots/a/x.ts; echo done; } 2>&1 | tee log.txt",
                &[X],
            ),
            case(
                "a_subshell_runs_in_the_foreground",
                "(bun bots/a/x.ts)",
                &[X],
            ),
            case(
                "spaced_double_parentheses_are_nested_subshells",
                "( (cd bots/a && bun x.ts) )",
                &[X],
            ),
            case("an_arithmetic_command_runs_nothing", "(( count++ ))", &[]),
            case(
                "an_extended_test_then_a_run",
                "[[ -f bots/a/x.ts && -n $BOT ]] && bun bots/a/x.ts",
                &[X],
            ),
            // Functions.
            case(
                "a_called_function_runs_its_body",
                "run() { bun bots/a/x.ts \"$@\"; }; run 3",
                &[X],
            ),
            case(
                "a_function_that_is_never_called_runs_nothing",
                "run() { bun bots/a/x.ts; }",
                &[],
            ),
            case(
                "a_function_keyword_definition_called_later",
                "function go { cd bots/a && bun x.ts; }; go",
                &[X],
            ),
            case(
                "a_cd_inside_a_called_function_persists",
                "go() { cd bots/a; }; go; bun x.ts",
                &[X],
            ),
            case(
                "a_recursive_function_is_walked_once",
                "f() { bun bots/a/x.ts; f; }; f",
                &[X],
            ),
            // Nested shells and substitutions.
            case("sh_dash_c_is_parsed", "sh -c 'bun bots/a/x.ts'", &[X]),
            case(
                "bash_dash_c_with_cd",
                "bash -c \"cd bots/a && bun x.ts\"",
                &[X],
            ),
            case(
                "bash_dash_lc_is_parsed",
                "bash -lc 'bun run bots/a/x.ts 2>&1'",
                &[X],
            ),
            case(
                "a_dash_c_string_inherits_the_directory",
                "cd bots/a && sh -c 'bun x.ts'",
                &[X],
            ),
            case(
                "timeout_around_bash_dash_c",
                "timeout 60 bash -c 'cd bots/a && bun x.ts'",
                &[X],
            ),
            case(
                "a_non_literal_dash_c_string_is_reported",
                "sh -c \"$CMD\"",
                &[],
            )
            .diag("not literal"),
            case("eval_of_a_literal_string", "eval \"bun bots/a/x.ts\"", &[X]),
            case(
                "xargs_with_the_script_named",
                "echo 3 | xargs bun bots/a/x.ts",
                &[X],
            ),
            case(
                "xargs_with_options",
                "seq 4 | xargs -n1 -P2 bun bots/a/x.ts",
                &[X],
            ),
            case(
                "xargs_supplying_the_script_cannot_be_resolved",
                "ls bots/a/*.ts | xargs -n1 bun",
                &[],
            )
            .diag("xargs"),
            case(
                "a_command_substitution_runs",
                "echo \"result: $(bun bots/a/x.ts)\"",
                &[X],
            ),
            case(
                "a_backquote_substitution_runs",
                "out=`bun bots/a/x.ts`",
                &[X],
            ),
            case(
                "an_assignment_substitution_runs_before_the_command",
                "X=$(bun bots/a/x.ts) bun bots/a/y.ts",
                &[X, Y],
            ),
            case(
                "a_process_substitution_runs",
                "diff <(bun bots/a/x.ts) expected.txt",
                &[X],
            ),
            // Not runs.
            case(
                "bun_build_is_not_a_run",
                "bun build bots/a/x.ts --outdir dist",
                &[],
            ),
            case(
                "bun_build_with_flags_is_not_a_run",
                "bun build --target=bun --minify bots/a/x.ts",
                &[],
            ),
            case("bun_test_is_not_a_run", "bun test bots/a/x.ts", &[]),
            case(
                "bun_test_with_flags_is_not_a_run",
                "bun test --timeout 5000 bots/a/x.ts",
                &[],
            ),
            case(
                "bun_install_is_not_a_run",
                "bun install && bun add zod",
                &[],
            ),
            case("bunx_is_not_a_run", "bunx tsx bots/a/x.ts", &[]),
            case("bun_x_is_not_a_run", "bun x tsc --noEmit bots/a/x.ts", &[]),
            case("a_package_script_is_not_a_file_run", "bun run dev", &[]),
            case(
                "inline_bun_code_is_not_a_file_run",
                "bun -e 'await import(\"./bots/a/x.ts\")'",
                &[],
            ),
            case(
                "node_test_is_not_a_run",
                "node --test bots/a/x.test.ts",
                &[],
            ),
            case(
                "a_heredoc_body_is_data",
                "cat <<EOF\nbun bots/a/x.ts\nEOF",
                &[],
            ),
            case(
                "writing_a_script_with_a_heredoc_then_running_it",
                "cat > bots/a/x.ts <<'EOF'\nimport { runScript } from '../../sdk/runner';\nawait runScript(async (ctx) => { await ctx.bot.chop((1 + (2 * 3))); });\nEOF\nbun bots/a/x.ts",
                &[X],
            ),
            case(
                "notes_in_a_heredoc_are_data",
                "cat >> bots/a/lab_log.md <<'EOF'\n## Run 3\nRan `bun bots/a/x.ts` twice (it's slow).\nEOF",
                &[],
            ),
            case(
                "a_tab_stripping_heredoc_with_a_quoted_delimiter",
                "cat <<-\"EOF\" > notes.txt\n\tbun bots/a/x.ts\n\tEOF\nbun bots/a/y.ts",
                &[Y],
            ),
            case(
                "two_heredocs_on_one_line",
                "paste - /dev/fd/3 <<A 3<<'B'\nbun bots/a/x.ts\nA\n$(bun bots/a/x.ts)\nB\nbun bots/a/y.ts",
                &[Y],
            ),
            case(
                "a_heredoc_inside_a_command_substitution",
                "x=$(cat <<EOF\nbun bots/a/x.ts\nEOF\n); bun bots/a/y.ts",
                &[Y],
            ),
            case(
                "a_shell_reading_a_heredoc_runs_its_commands",
                "bash <<'EOF'\ncd bots/a\nbun x.ts\nEOF\nbun bots/a/y.ts",
                &[X, Y],
            ),
            case(
                "a_shell_reading_a_here_string_runs_it",
                "sh -s <<< 'bun bots/a/x.ts'",
                &[X],
            ),
            case(
                "a_shell_reading_a_pipe_runs_nothing_the_classifier_can_see",
                "echo 'bun bots/a/x.ts' | bash",
                &[],
            ),
            case(
                "a_shell_reading_a_file_is_not_analysed",
                "bash < setup.sh",
                &[],
            ),
            case(
                "an_unterminated_heredoc_runs_to_the_end_as_in_bash",
                "cat <<EOF\nbun bots/a/x.ts",
                &[],
            ),
            case(
                "an_empty_heredoc_delimiter_ends_at_an_empty_line",
                "cat <<''\nbun bots/a/x.ts\n\nbun bots/a/y.ts",
                &[Y],
            ),
            case(
                "a_shift_inside_an_arithmetic_command_is_not_a_heredoc",
                "(( x = 1 << 2 ))\nbun bots/a/x.ts",
                &[X],
            ),
            case(
                "a_substitution_in_an_unquoted_heredoc_runs",
                "cat <<EOF\n$(bun bots/a/x.ts)\nEOF",
                &[X],
            ),
            case("echo_of_a_command_is_data", "echo \"bun bots/a/x.ts\"", &[]),
            case(
                "a_quoted_and_and_is_data",
                "echo \"a && bun bots/a/x.ts\"",
                &[],
            ),
            case(
                "grep_for_the_path_is_data",
                "grep -r \"bots/a/x.ts\" .",
                &[],
            ),
            case(
                "a_commit_message_is_data",
                "git commit -m \"bun bots/a/x.ts works now\"",
                &[],
            ),
            case(
                "appending_to_notes_is_data",
                "echo 'bun bots/a/x.ts' >> bots/a/lab_log.md",
                &[],
            ),
            case("cat_of_the_script_is_not_a_run", "cat bots/a/x.ts", &[]),
            case("less_of_the_script_is_not_a_run", "less bots/a/x.ts", &[]),
            case("ls_of_the_script_is_not_a_run", "ls -la bots/a/x.ts", &[]),
            case("vim_of_the_script_is_not_a_run", "vim bots/a/x.ts", &[]),
            case(
                "sed_of_the_script_is_not_a_run",
                "sed -n 1,20p bots/a/x.ts",
                &[],
            ),
            case("a_commented_out_run_is_not_a_run", "# bun bots/a/x.ts", &[]),
            case("npx_is_not_a_runner", "npx tsx bots/a/x.ts", &[]),
            // Background jobs.
            case(
                "a_run_sent_to_the_background_is_detached",
                "bun bots/a/x.ts &",
                &[],
            )
            .detached(&[X]),
            case(
                "nohup_with_ampersand_is_detached",
                "nohup bun bots/a/x.ts > log 2>&1 &",
                &[],
            )
            .detached(&[X]),
            case(
                "a_backgrounded_run_inside_a_subshell_is_detached",
                "(bun bots/a/x.ts &)",
                &[],
            )
            .detached(&[X]),
            case(
                "setsid_with_ampersand_is_detached",
                "setsid bun bots/a/x.ts > /dev/null 2>&1 &",
                &[],
            )
            .detached(&[X]),
            case("setsid_fork_is_detached", "setsid -f bun bots/a/x.ts", &[]).detached(&[X]),
            case(
                "a_disowned_run_is_detached",
                "bun bots/a/x.ts & disown",
                &[],
            )
            .detached(&[X]),
            case(
                "wait_does_not_reach_a_disowned_job",
                "bun bots/a/x.ts & disown; wait",
                &[],
            )
            .detached(&[X]),
            case(
                "a_background_run_then_wait_is_a_run",
                "bun bots/a/x.ts & wait",
                &[X],
            ),
            case(
                "wait_for_the_last_job_is_a_run",
                "bun bots/a/x.ts & wait $!",
                &[X],
            ),
            case(
                "wait_for_job_one_is_a_run",
                "bun bots/a/x.ts & wait %1",
                &[X],
            ),
            case(
                "wait_for_a_saved_pid_is_a_run",
                "bun bots/a/x.ts & PID=$!; sleep 5; wait $PID",
                &[X],
            ),
            case(
                "and_and_wait_is_simply_a_run",
                "bun bots/a/x.ts && wait",
                &[X],
            ),
            case(
                "a_background_run_that_is_killed_unwaited_is_detached",
                "bun bots/a/x.ts > log 2>&1 & sleep 30; kill %1; tail log",
                &[],
            )
            .detached(&[X]),
            case(
                "waiting_for_the_second_job_only",
                "bun bots/a/x.ts & bun bots/a/y.ts & wait %2",
                &[Y],
            )
            .detached(&[X]),
            case(
                "an_outer_wait_does_not_reach_a_dash_c_job",
                "sh -c 'bun bots/a/x.ts &'; wait",
                &[],
            )
            .detached(&[X]),
            case(
                "a_wait_inside_the_subshell_makes_it_a_run",
                "(bun bots/a/x.ts & wait)",
                &[X],
            ),
            case(
                "an_outer_wait_does_not_reach_a_subshell_job",
                "(bun bots/a/x.ts &); wait",
                &[],
            )
            .detached(&[X]),
            case(
                "background_runs_in_a_loop_then_wait",
                "for i in 1 2; do bun bots/a/x.ts & done; wait",
                &[X],
            ),
            case(
                "wait_dash_n_does_not_make_runs",
                "bun bots/a/x.ts & bun bots/a/y.ts & wait -n",
                &[],
            )
            .detached(&[X, Y])
            .diag("wait -n"),
            case("a_coprocess_is_detached", "coproc bun bots/a/x.ts", &[]).detached(&[X]),
            case(
                "nohup_sh_dash_c_in_the_background_is_detached",
                "nohup sh -c 'bun bots/a/x.ts' &",
                &[],
            )
            .detached(&[X]),
            case(
                "a_foreground_and_a_background_run_of_the_same_script",
                "bun bots/a/x.ts & bun bots/a/x.ts",
                &[X],
            )
            .detached(&[X]),
            // Lines that cannot be analysed.
            case(
                "an_unterminated_quote_yields_nothing",
                "bun bots/a/x.ts \"unterminated",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "an_unclosed_parenthesis_yields_nothing",
                "(bun bots/a/x.ts",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "a_dangling_and_and_yields_nothing",
                "bun bots/a/x.ts &&",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "an_unparseable_dash_c_string_is_skipped",
                "bun bots/a/x.ts; sh -c 'bun bots/a/y.ts \"'",
                &[X],
            )
            .diag("could not parse a `sh -c` command string"),
            case(
                "a_huge_file_descriptor_number_yields_nothing",
                "bun bots/a/x.ts 99999999999>x",
                &[],
            )
            .diag("file descriptor"),
            case(
                "a_substitution_in_a_heredoc_delimiter_yields_nothing",
                "bun bots/a/x.ts; cat <<$( &$(",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "an_empty_heredoc_delimiter_before_an_open_substitution_yields_nothing",
                "bun bots/a/x.ts; cat <<\"\" ${",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "a_missing_heredoc_delimiter_inside_a_substitution_yields_nothing",
                "bun bots/a/x.ts $(<< )$[",
                &[],
            )
            .diag("could not parse the shell line"),
            case(
                "a_substitution_spanning_a_heredoc_body_yields_nothing",
                "bun bots/a/x.ts <<E<$[$(E)\nE",
                &[],
            )
            .diag("could not parse the shell line"),
            case("an_empty_line_runs_nothing", "", &[]),
            case("a_blank_line_runs_nothing", "  \n\t\n", &[]),
        ]
    }

    #[test]
    fn every_table_case_classifies_as_expected() {
        let table = table();
        assert!(table.len() >= 70, "the table must keep at least 70 lines");
        let mut names = HashSet::new();
        let mut failures = Vec::new();
        for case in &table {
            assert!(
                names.insert(case.behaviour),
                "duplicate case {}",
                case.behaviour
            );
            let got = classify(case.line, case.cwd, case.roots);
            let diag_ok = match case.diag {
                Diag::Clean => got.diagnostics.is_empty(),
                Diag::Mentions(text) => got.diagnostics.iter().any(|d| d.contains(text)),
            };
            if got.runs != case.runs || got.detached != case.detached || !diag_ok {
                failures.push(format!(
                    "{}: {:?} (cwd {:?})\n    expected runs {:?}, detached {:?}, diagnostics {:?}\n    got {:?}",
                    case.behaviour, case.line, case.cwd, case.runs, case.detached, case.diag, got
                ));
            }
        }
        assert!(
            failures.is_empty(),
            "{} failing cases:\n{}",
            failures.len(),
            failures.join("\n")
        );
    }

    /// Runs the classifier on a thread with a 2 MiB stack (the default for spawned threads,
    /// and smaller than a main thread), returning how long it took.
    fn classify_on_small_stack(line: String) -> (ShellRuns, std::time::Duration) {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let start = std::time::Instant::now();
                let result = classify(&line, None, ROOT);
                (result, start.elapsed())
            })
            .expect("spawn a test thread")
            .join()
            .expect("the classifier must not panic")
    }

    #[test]
    fn pathological_lines_are_refused_quickly_without_overflowing_the_stack() {
        let lines = [
            "(".repeat(10_000),
            "( ".repeat(10_000),
            "((".repeat(5_000),
            format!("{}bun bots/a/x.ts{}", "( ".repeat(13), " )".repeat(13)),
            format!(
                "{}bun bots/a/x.ts{}",
                "{ ".repeat(50_000),
                "; }".repeat(50_000)
            ),
            format!(
                "{}bun bots/a/x.ts{}",
                "echo $(".repeat(5_000),
                ")".repeat(5_000)
            ),
            format!("echo {}x{}", "${a:-".repeat(5_000), "}".repeat(5_000)),
            format!("[[ {}x ]]", "! ".repeat(5_000)),
            format!("[[ {}x ]]", "a && ".repeat(25_000)),
            format!("{}x", "coproc ".repeat(5_000)),
            format!(
                "cat <<EOF\n{}bun bots/a/x.ts{}\nEOF",
                "$(echo ".repeat(500),
                ")".repeat(500)
            ),
        ];
        for line in lines {
            let preview: String = line.chars().take(40).collect();
            let (result, took) = classify_on_small_stack(line);
            assert!(result.runs.is_empty(), "{preview}: {result:?}");
            assert!(!result.diagnostics.is_empty(), "{preview}: {result:?}");
            assert!(took.as_secs() < 10, "{preview} took {took:?}");
        }
    }

    #[test]
    fn inputs_that_make_brush_parser_backtrack_exponentially_finish_quickly() {
        let lines = [
            // Escaped parentheses inside arithmetic defeat brush's word parser; this module
            // lexes words itself.
            format!("echo $(( {} ))", "\\(".repeat(5_000)),
            format!("cat <<EOF\n{}\nEOF\nbun bots/a/x.ts", "$((".repeat(20_000)),
            format!("cat <<EOF\n{}\nEOF\nbun bots/a/x.ts", "$(".repeat(20_000)),
            format!("{}bun bots/a/x.ts{}", "( ".repeat(12), " )".repeat(12)),
            format!("{}bun bots/a/x.ts{}", "(".repeat(12), ")".repeat(12)),
            format!("echo {}", "`".repeat(5_000)),
        ];
        for line in lines {
            let preview: String = line.chars().take(40).collect();
            let (_, took) = classify_on_small_stack(line);
            assert!(took.as_secs() < 10, "{preview} took {took:?}");
        }
    }

    #[test]
    fn nesting_just_under_the_limit_fits_a_small_stack() {
        let lines = [
            format!("{}bun bots/a/x.ts{}", "{ ".repeat(60), "; }".repeat(60)),
            format!(
                "{}bun bots/a/x.ts{}",
                "if true; then ".repeat(60),
                "; fi".repeat(60)
            ),
            format!(
                "{}bun bots/a/x.ts{}",
                "while true; do ".repeat(60),
                "; done".repeat(60)
            ),
            format!("{}bun bots/a/x.ts{}", "( ".repeat(12), " )".repeat(12)),
            format!("{}bun bots/a/x.ts{}", "{ ( ".repeat(12), " ) }".repeat(12)),
        ];
        for line in lines {
            let preview: String = line.chars().take(40).collect();
            let (result, _) = classify_on_small_stack(line);
            assert_eq!(result.runs, [X], "{preview}: {result:?}");
        }
    }

    #[test]
    fn deeply_nested_dash_c_and_eval_strings_are_refused() {
        let mut line = "bun bots/a/x.ts".to_owned();
        for _ in 0..70 {
            line = format!("eval {line}");
        }
        let (result, _) = classify_on_small_stack(line);
        assert!(result.runs.is_empty(), "{result:?}");
        assert!(result.diagnostics.iter().any(|d| d.contains("gave up")));

        let mut line = "bun bots/a/x.ts".to_owned();
        for _ in 0..8 {
            line = format!("sh -c '{}'", line.replace('\'', "'\\''"));
        }
        let (result, _) = classify_on_small_stack(line);
        assert_eq!(result.runs, [X], "{result:?}");
    }

    #[test]
    fn a_function_fan_out_exhausts_the_budget_instead_of_taking_forever() {
        let mut line = String::from("f0() { bun bots/a/x.ts; }; ");
        for i in 1..26 {
            line += &format!("f{i}() {{ f{p}; f{p}; }}; ", p = i - 1);
        }
        line += "f25";
        let (result, took) = classify_on_small_stack(line);
        assert!(result.runs.is_empty(), "{result:?}");
        assert!(result.diagnostics.iter().any(|d| d.contains("too complex")));
        assert!(took.as_secs() < 30, "took {took:?}");
    }

    #[test]
    fn a_hundred_kilobyte_line_is_classified() {
        let line = "bun bots/a/x.ts; ".repeat(6_000);
        assert!(line.len() > 100_000);
        let (result, _) = classify_on_small_stack(line);
        assert_eq!(result.runs, [X]);

        let line: String = (0..6_000)
            .map(|i| format!("bun bots/a/x{i}.ts; "))
            .collect();
        let (result, _) = classify_on_small_stack(line);
        assert_eq!(result.runs.len(), 6_000);
        assert_eq!(result.runs[0], "bots/a/x0.ts");
    }

    #[test]
    fn nul_bytes_and_control_characters_do_not_panic() {
        for line in [
            "bun bots/a/x.ts\0",
            "\0",
            "bun \u{1b}[31m bots/a/x.ts",
            "bun bots/a/x.ts\r",
        ] {
            let _ = classify(line, None, ROOT);
        }
        assert_eq!(classify("echo \0; bun bots/a/x.ts", None, ROOT).runs, [X]);
    }

    #[test]
    fn diagnostics_are_capped() {
        let line: String = (0..100).map(|i| format!("bun /tmp/x{i}.ts; ")).collect();
        let result = classify(&line, None, ROOT);
        assert!(result.diagnostics.len() <= MAX_DIAGNOSTICS + 1);
        assert!(
            result
                .diagnostics
                .last()
                .is_some_and(|d| d.contains("more diagnostics"))
        );
    }

    #[test]
    fn without_workspace_roots_nothing_is_a_run() {
        let result = classify("bun /work/bots/a/x.ts; bun x.ts", None, &[]);
        assert!(result.runs.is_empty());
        assert!(!result.diagnostics.is_empty());
    }

    #[test]
    fn a_relative_workspace_root_is_ignored_with_a_diagnostic() {
        let result = classify("bun bots/a/x.ts", None, &["work", "/work"]);
        assert!(
            result
                .diagnostics
                .iter()
                .any(|d| d.contains("not an absolute path"))
        );
        assert_eq!(result.runs, [X]);
    }

    #[test]
    fn the_most_specific_root_wins_when_roots_nest() {
        let result = classify(
            "bun /work/inner/bots/a/x.ts",
            None,
            &["/work", "/work/inner"],
        );
        assert_eq!(result.runs, [X]);
    }

    #[test]
    fn precheck_cuts_heredocs_out_and_separates_spaced_parentheses() {
        let prepared = precheck(
            "cat <<-'EOF' > x\n\tbun a.ts\n\tEOF\n( (bun b.ts) ) <<E\n$(c)\nE\n",
            MAX_NESTING,
            3,
        )
        .expect("a plain line passes");
        assert_eq!(
            prepared.text,
            "cat <__mindrune_heredoc_3__ > x\n(\n(bun b.ts) ) <__mindrune_heredoc_4__\n"
        );
        assert_eq!(prepared.heredocs.len(), 2);
        assert_eq!(prepared.heredocs[0].body, "\tbun a.ts\n");
        assert!(!prepared.heredocs[0].expand);
        assert_eq!(prepared.heredocs[1].body, "$(c)\n");
        assert!(prepared.heredocs[1].expand);
        assert!(matches!(
            precheck(&"( ".repeat(13), MAX_NESTING, 0),
            Err(PrecheckError::TooDeep)
        ));
        assert!(matches!(
            precheck("echo ((1", MAX_NESTING, 0),
            Err(PrecheckError::Unparseable(_))
        ));
    }

    #[test]
    fn path_normalisation_is_lexical() {
        assert_eq!(
            normalize_abs("/work/./bots//a/../a/x.ts"),
            "/work/bots/a/x.ts"
        );
        assert_eq!(normalize_abs("/../../x.ts"), "/x.ts");
        assert_eq!(normalize_abs("/"), "/");
        assert_eq!(join_path("/work/bots/a", "../../x.ts"), "/work/x.ts");
    }

    #[test]
    fn words_are_unquoted_like_the_shell_does() {
        let word = lex_word(r#"'a b'"c\"d"e\ f$'\t'"#);
        assert_eq!(word.literal.as_deref(), Some("a bc\"de f\t"));
        assert!(!word.glob);
        let word = lex_word(r#""$(bun "x.ts")"-`bun y.ts`"#);
        assert_eq!(word.literal, None);
        assert_eq!(word.subs, ["bun \"x.ts\"", "bun y.ts"]);
        assert!(lex_word("bots/a/*.ts").glob);
        assert!(lex_word("{a,b}.ts").glob);
        assert!(lex_word("~/x.ts").literal.is_none());
        assert_eq!(lex_word("${X:-$(bun z.ts)}").subs, ["bun z.ts"]);
        assert_eq!(lex_word("$(( $(bun z.ts) + 1 ))").subs, ["bun z.ts"]);
    }

    /// Shell-looking text built from tokens that exercise quoting, nesting and jobs.
    fn shellish() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("bun bots/a/x.ts"),
            Just("bun ../x.ts"),
            Just("bun /tmp/y.ts"),
            Just("bun bots/$B/z.ts"),
            Just("cd bots/a"),
            Just("cd .."),
            Just("cd -"),
            Just("x.ts"),
            Just(" "),
            Just(";"),
            Just("&"),
            Just("&&"),
            Just("|"),
            Just("\n"),
            Just("("),
            Just(")"),
            Just("{"),
            Just("}"),
            Just("$("),
            Just("$(("),
            Just("${"),
            Just("`"),
            Just("\""),
            Just("'"),
            Just("\\"),
            Just("#"),
            Just("<<E"),
            Just("E"),
            Just("wait"),
            Just("f()"),
            Just("f"),
            Just("sh -c"),
            Just("eval"),
            Just("[["),
            Just("]]"),
            Just("!"),
            Just("if"),
            Just("then"),
            Just("fi"),
            Just("case"),
            Just("esac"),
            Just("99999999999>"),
        ];
        prop::collection::vec(token, 0..40).prop_map(|tokens| tokens.concat())
    }

    /// A command line made of runs and cds separated by shell operators.
    fn command_line() -> impl Strategy<Value = String> {
        let command = prop_oneof![
            Just("bun bots/a/x.ts"),
            Just("bun run ./bots/a/x.ts"),
            Just("bun /work/bots/a/x.ts"),
            Just("bun x.ts"),
            Just("bun bots/a/y.ts"),
            Just("cd bots/a"),
            Just("cd /work"),
            Just("(bun bots/a/x.ts)"),
            Just("bun bots/a/x.ts &"),
            Just("wait"),
            Just("for i in 1 2; do bun bots/a/y.ts; done"),
        ];
        let separator = prop_oneof![
            Just("; "),
            Just(" && "),
            Just(" || "),
            Just("\n"),
            Just(" | ")
        ];
        prop::collection::vec((command, separator), 1..12).prop_map(|parts| {
            let mut line = String::new();
            for (command, separator) in parts {
                line.push_str(command);
                if !command.ends_with('&') {
                    line.push_str(separator);
                } else {
                    line.push(' ');
                }
            }
            line.trim_end_matches(['|', ';', '&', ' ', '\n']).to_owned()
        })
    }

    /// A path made of segments that like to escape.
    fn path() -> impl Strategy<Value = String> {
        let segment = prop_oneof![
            Just(".."),
            Just("."),
            Just(""),
            Just("bots"),
            Just("a"),
            Just("work"),
            Just("tmp"),
        ];
        (any::<bool>(), prop::collection::vec(segment, 0..8)).prop_map(|(absolute, segments)| {
            let mut path = segments.join("/");
            if absolute {
                path.insert(0, '/');
            }
            path
        })
    }

    fn assert_inside_workspace(run: &str) {
        assert!(!run.is_empty());
        assert!(!run.starts_with('/'), "{run}");
        assert!(
            run.split('/').all(|s| !matches!(s, "" | "." | "..")),
            "{run} is not normalised"
        );
    }

    proptest! {
        #[test]
        fn never_panics_on_arbitrary_strings(line in any::<String>()) {
            let _ = classify(&line, Some("bots/a"), TWO_ROOTS);
        }

        #[test]
        fn never_panics_on_shell_looking_strings(line in shellish()) {
            let result = classify(&line, Some("bots/a"), ROOT);
            for run in &result.runs {
                assert_inside_workspace(run);
            }
        }

        #[test]
        fn runs_never_escape_the_workspace(
            cwd in prop_oneof![
                Just(None),
                Just(Some("bots/a")),
                Just(Some("/work/bots/a")),
                Just(Some("/tmp")),
                Just(Some("../..")),
                Just(Some("/")),
            ],
            dir in path(),
            script in path(),
        ) {
            let line = format!("cd {dir} && bun {script}/x.ts; bun {script}.ts");
            let result = classify(&line, cwd, TWO_ROOTS);
            for run in result.runs.iter().chain(&result.detached) {
                assert_inside_workspace(run);
            }
        }

        #[test]
        fn runs_and_detached_scripts_are_listed_once(line in command_line()) {
            let result = classify(&line, None, ROOT);
            let unique: HashSet<&String> = result.runs.iter().collect();
            prop_assert_eq!(unique.len(), result.runs.len(), "{:?}", result);
            let unique: HashSet<&String> = result.detached.iter().collect();
            prop_assert_eq!(unique.len(), result.detached.len(), "{:?}", result);
            for run in result.runs.iter().chain(&result.detached) {
                assert_inside_workspace(run);
            }
        }
    }
}
