//! What a simple command does: the runners that start a script (bun, node, tsx, xargs,
//! shells with a string), the builtins that change the scope, and the writes a command makes.

use brush_parser::ast;

use super::lexer::{WordInfo, lex_word};
use super::precheck::heredoc_index;
use super::walker::{
    Action, BUN, Builtin, Mods, NODE, Occurrence, Origin, Runner, Scope, TSX, Walker,
    XARGS_VALUE_FLAGS,
};
use super::{Cwd, MAX_WRITES, has_script_ext, join_path, normalize_abs};
use crate::shell_writes::{Arg, Operand, Reach, Target, Write};

impl Walker {
    /// Decides what a simple command with these argument words does.
    pub(super) fn classify(&self, args: &[&WordInfo], scope: &Scope) -> Option<Action> {
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

    pub(super) fn perform(
        &mut self,
        action: Action,
        args: &[&WordInfo],
        scope: &mut Scope,
        depth: usize,
    ) {
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
    pub(super) fn note_write(&mut self, command: &str, target: Target, reach: Reach) {
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
    pub(super) fn resolve_target(path: Option<&str>, raw: &str, glob: bool, cwd: &Cwd) -> Target {
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
    pub(super) fn note_redirect_write(&mut self, redirect: &ast::IoRedirect, scope: &Scope) {
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
    pub(super) fn note_command_writes(&mut self, args: &[&WordInfo], scope: &Scope) {
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
    pub(super) fn record(&mut self, word: &WordInfo, cwd: &Cwd, scope: &Scope, detached: bool) {
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

    pub(super) fn workspace_relative(&self, absolute: &str) -> Option<String> {
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

    pub(super) fn builtin(&mut self, kind: Builtin, args: &[&WordInfo], scope: &mut Scope) {
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
    pub(super) fn wait(&mut self, args: &[&WordInfo], scope: &mut Scope) {
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

    pub(super) fn call(&mut self, name: &str, scope: &mut Scope, depth: usize) {
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
pub(super) fn command_name(word: &WordInfo) -> Option<String> {
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
pub(super) fn skip_options(args: &[&WordInfo], mut j: usize, with_value: &[&str]) -> usize {
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
pub(super) fn skip_env(args: &[&WordInfo], mut j: usize, mods: &mut Mods) -> usize {
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
pub(super) fn shell_string(
    args: &[&WordInfo],
    i: usize,
    name: &str,
    mods: &Mods,
) -> Option<Action> {
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
pub(super) fn eval_string(args: &[&WordInfo], i: usize, last: usize) -> Option<Action> {
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
pub(super) fn run_script(
    args: &[&WordInfo],
    mut j: usize,
    mods: &Mods,
    runner: &Runner,
) -> Option<Action> {
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
pub(super) fn job_reference(word: &WordInfo, scope: &Scope) -> Option<usize> {
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
pub(super) fn disown(args: &[&WordInfo], scope: &mut Scope) {
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
