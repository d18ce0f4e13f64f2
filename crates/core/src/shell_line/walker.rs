//! The walker over brush-parser's tree: scopes, jobs and the cwd it follows, and how each
//! compound command, word and redirection is walked.

use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use brush_parser::ast;

use super::lexer::{WordInfo, lex_heredoc, lex_word};
use super::precheck::{Heredoc, PrecheckError, heredoc_index, precheck};
use super::{Cwd, FUEL, MAX_DIAGNOSTICS, MAX_NESTING, ShellRuns, join_path, normalize_abs};
use crate::shell_writes::{Reach, Target, Write};

/// Where a piece of shell code came from, for diagnostics.
#[derive(Debug, Clone, Copy)]
pub(super) enum Origin {
    Line,
    ShellString,
    Eval,
    Substitution,
}

impl Origin {
    pub(super) fn describe(self) -> &'static str {
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
pub(super) struct Scope {
    pub(super) cwd: Cwd,
    pub(super) dir_stack: Vec<Cwd>,
    pub(super) functions: HashMap<String, Rc<ast::FunctionBody>>,
    /// Background jobs this shell started, in order (for `%N` and `$!`).
    pub(super) started: Vec<usize>,
    /// Background jobs a `wait` would still wait for.
    pub(super) pending: Vec<usize>,
    /// The background jobs this shell itself runs inside: its scripts are foreground runs
    /// only if every one of them was waited for.
    pub(super) chain: Vec<usize>,
    /// Functions being called, to stop recursion.
    pub(super) calls: Vec<String>,
}

impl Scope {
    pub(super) fn new(cwd: Cwd) -> Self {
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
    pub(super) fn subshell(&self) -> Self {
        Scope {
            started: Vec::new(),
            pending: Vec::new(),
            ..self.clone()
        }
    }

    /// A new shell process (`sh -c`): it inherits only the working directory.
    pub(super) fn new_shell(&self, cwd: Cwd) -> Self {
        Scope {
            chain: self.chain.clone(),
            ..Scope::new(cwd)
        }
    }
}

/// A script the line starts.
pub(super) struct Occurrence {
    pub(super) path: String,
    pub(super) chain: Vec<usize>,
    pub(super) detached: bool,
}

/// A shell builtin that changes what later commands mean.
#[derive(Debug, Clone, Copy)]
pub(super) enum Builtin {
    Cd,
    Pushd,
    Popd,
    Wait,
    Disown,
}

/// What a simple command does, as far as scripts are concerned. `at` is the index of the
/// argument word after whose expansion it happens.
#[derive(Debug)]
pub(super) enum Action {
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
    pub(super) fn at(&self) -> usize {
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
pub(super) struct Mods {
    /// The command is run by another program (`env`, `timeout`, …), so shell functions and
    /// builtins such as `cd` do not apply.
    pub(super) external: bool,
    /// `command`/`builtin` skip shell functions.
    pub(super) no_functions: bool,
    pub(super) detached: bool,
    pub(super) cwd: Cwd,
    pub(super) xargs: bool,
}

/// How a script runner (`bun`, `node`, `tsx`) reads its arguments.
pub(super) struct Runner {
    pub(super) name: &'static str,
    /// Options followed by a separate value.
    pub(super) value_flags: &'static [&'static str],
    /// Options that mean no script file runs (inline code, version, help, test runners).
    pub(super) no_file_flags: &'static [&'static str],
    pub(super) no_file_prefixes: &'static [&'static str],
    /// A subcommand word that may precede the file (`bun run`, `tsx watch`).
    pub(super) run_word: Option<&'static str>,
    /// Subcommands that do not run a file.
    pub(super) other_subcommands: &'static [&'static str],
    /// Whether `--cwd <dir>` changes where the file is looked up.
    pub(super) cwd_flag: bool,
}

pub(super) const BUN: Runner = Runner {
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

pub(super) const NODE: Runner = Runner {
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

pub(super) const TSX: Runner = Runner {
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
pub(super) const XARGS_VALUE_FLAGS: &[&str] = &[
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
pub(super) enum Item<'x> {
    Word(WordInfo),
    Assignment(WordInfo),
    Redirect(&'x ast::IoRedirect),
    ProcessSubstitution(&'x ast::SubshellCommand),
}

impl<'x> Item<'x> {
    pub(super) fn from_ast(item: &'x ast::CommandPrefixOrSuffixItem, is_suffix: bool) -> Self {
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

pub(super) struct Walker {
    /// Normalised roots, the canonical one first.
    pub(super) roots: Vec<String>,
    /// The same, longest first, so the most specific root wins.
    pub(super) roots_by_len: Vec<String>,
    pub(super) occurrences: Vec<Occurrence>,
    /// The heredocs cut out of every text parsed so far (see [`precheck`]).
    pub(super) heredocs: Vec<Heredoc>,
    /// Per background job: whether the line waits for it.
    pub(super) waited: Vec<bool>,
    pub(super) diagnostics: Vec<String>,
    pub(super) seen_diagnostics: HashSet<String>,
    pub(super) suppressed_diagnostics: usize,
    pub(super) fuel: usize,
    pub(super) gave_up: bool,
    /// Where the line writes, when it is walked for that ([`super::shell_line_writes`]).
    pub(super) writes: Option<Vec<Write>>,
    /// Why a part of the line could not be read (for [`super::shell_line_writes`]).
    pub(super) unreadable: Option<String>,
}

impl Walker {
    pub(super) fn new(roots: &[&str]) -> Self {
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

    pub(super) fn initial_cwd(&mut self, cwd: Option<&str>) -> Cwd {
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

    pub(super) fn diag(&mut self, message: String) {
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
    pub(super) fn give_up(&mut self, why: &str) {
        self.unreadable.get_or_insert_with(|| why.to_owned());
        if !self.gave_up {
            self.gave_up = true;
            self.diag(format!(
                "gave up analysing the line: {why}; no runs recorded"
            ));
        }
    }

    /// Spends `units` of the work budget; false once it is exhausted.
    pub(super) fn burn(&mut self, units: usize) -> bool {
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

    pub(super) fn new_job(&mut self) -> usize {
        self.waited.push(false);
        self.waited.len() - 1
    }

    pub(super) fn finish(mut self, parsed: bool) -> ShellRuns {
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
    pub(super) fn walk_text(
        &mut self,
        text: &str,
        scope: &mut Scope,
        depth: usize,
        origin: Origin,
    ) -> bool {
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

    pub(super) fn walk_list(&mut self, list: &ast::CompoundList, scope: &mut Scope, depth: usize) {
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

    pub(super) fn walk_and_or(&mut self, and_or: &ast::AndOrList, scope: &mut Scope, depth: usize) {
        // Both sides of `&&` and `||` are assumed to run: the classifier cannot know exit
        // statuses, and a `cd dir || exit` should still move later commands into `dir`.
        self.walk_pipeline(&and_or.first, scope, depth);
        for next in &and_or.additional {
            let (ast::AndOr::And(pipeline) | ast::AndOr::Or(pipeline)) = next;
            self.walk_pipeline(pipeline, scope, depth);
        }
    }

    pub(super) fn walk_pipeline(
        &mut self,
        pipeline: &ast::Pipeline,
        scope: &mut Scope,
        depth: usize,
    ) {
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

    pub(super) fn walk_command(&mut self, command: &ast::Command, scope: &mut Scope, depth: usize) {
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

    pub(super) fn walk_extended_test(
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

    pub(super) fn walk_compound(
        &mut self,
        compound: &ast::CompoundCommand,
        scope: &mut Scope,
        depth: usize,
    ) {
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
    pub(super) fn walk_loop(
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

    pub(super) fn walk_subshell(
        &mut self,
        subshell: &ast::SubshellCommand,
        scope: &Scope,
        depth: usize,
    ) {
        let mut sub = scope.subshell();
        self.walk_list(&subshell.list, &mut sub, depth + 1);
    }

    pub(super) fn walk_arithmetic(
        &mut self,
        expr: &ast::UnexpandedArithmeticExpr,
        scope: &Scope,
        depth: usize,
    ) {
        let info = lex_word(&expr.value);
        self.walk_subs(&info, scope, depth);
    }

    pub(super) fn walk_word(&mut self, word: &ast::Word, scope: &Scope, depth: usize) {
        let info = lex_word(&word.value);
        self.walk_subs(&info, scope, depth);
    }

    /// Walks the command substitutions of a word; each runs in a subshell.
    pub(super) fn walk_subs(&mut self, info: &WordInfo, scope: &Scope, depth: usize) {
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

    pub(super) fn walk_redirect(
        &mut self,
        redirect: &ast::IoRedirect,
        scope: &Scope,
        depth: usize,
    ) {
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

    pub(super) fn walk_simple(
        &mut self,
        simple: &ast::SimpleCommand,
        scope: &mut Scope,
        depth: usize,
    ) {
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
    pub(super) fn stdin_script(&self, items: &[Item<'_>]) -> Option<String> {
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
}
