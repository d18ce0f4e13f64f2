//! Where a shell line writes, as far as its words tell, without running it.
//!
//! The host guard (`mindrune_engine::host_guard`) asks this before Claude Code runs a `Bash`
//! call: does the line write into a place MindRune keeps behind its one door? The line's
//! structure, its `cd`s, `sh -c` strings, `eval`s and substitutions are followed by the same
//! walker that finds the scripts a line runs ([`crate::shell_line::shell_line_writes`] is the
//! way in, and the walker depends on this module, not the other way); this module knows the
//! programs: which of their words a program writes (`tee`'s files, `cp`'s destination, `sed
//! -i`'s files, `tar x`'s folder), which only read (`cat`, `grep`), and that of a program it
//! does not know, every path it is given might be written.
//!
//! Nothing here decides: each write is reported with how far it reaches ([`Reach`]) and the
//! guard compares it with the places it keeps. A word whose value only the running shell knows
//! (a variable, a substitution) is reported as [`Target::Computed`], and program text handed to
//! an interpreter (`python3 -c …`, `awk '…'`) as [`Target::Code`], so the guard can refuse the
//! line when it names a kept place at all: a line it cannot read is refused on those places
//! only, never everywhere.

/// What a shell line writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellWrites {
    /// Every write the words show, in the order the line does them.
    pub writes: Vec<Write>,
    /// Why the line (or a part of it) could not be read: then `writes` may miss some.
    pub unreadable: Option<String>,
}

/// One write a command of the line would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The program (or `>` for a redirection), for the guard's reason.
    pub command: String,
    pub target: Target,
    pub reach: Reach,
}

/// Where a write lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An absolute, lexically normalised path.
    Path(String),
    /// An absolute path whose last component is a shell pattern (`skills/*`): it writes what
    /// the pattern matches in that folder.
    Glob(String),
    /// A word only the running shell can spell out (a variable, a substitution, a folder the
    /// line `cd`s to by variable), as written.
    Computed(String),
    /// Program text an interpreter runs (`python3 -c`, `awk`, `sed`'s script): whatever it
    /// names, it may write.
    Code(String),
}

/// How far a write reaches from its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Exactly that file (or folder entry): a redirection, `tee`, `touch`, `cp`'s destination.
    File,
    /// Everything under it too, and the folder itself: `rm -r`, `mv` (moving a folder moves
    /// what it holds), `cp -r`'s destination, `tar x`'s folder.
    Tree,
    /// A path handed to a program the guard does not know, or the folder such a program runs
    /// in: it may or may not write there.
    Maybe,
}

// ---------------------------------------------------------------------------------------
// The programs
// ---------------------------------------------------------------------------------------

/// One argument word of a simple command, as the walker lexed it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg<'a> {
    /// As written.
    pub(crate) raw: &'a str,
    /// After quote removal, when the shell would pass it on unchanged (no variable,
    /// substitution or `~`); it may still hold glob characters.
    pub(crate) literal: Option<&'a str>,
    /// Whether unquoted glob characters make it a pattern.
    pub(crate) glob: bool,
}

impl Arg<'_> {
    fn option(&self) -> Option<&str> {
        self.literal
            .filter(|word| word.len() > 1 && word.starts_with('-'))
    }
}

/// One operand a program writes, before the walker resolves it against the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operand {
    /// A word of the command (`value` is its literal, or the part of it after `=` in
    /// `--out=FILE` / `of=FILE`); `None` when the shell computes it.
    Word {
        raw: String,
        value: Option<String>,
        glob: bool,
        reach: Reach,
    },
    /// `dest` with a source's last component appended: where `cp a b/` puts `b/a`.
    Into {
        dest: String,
        name: String,
        reach: Reach,
    },
    /// The folder the command runs in.
    Cwd(Reach),
    /// Program text run by an interpreter.
    Code(String),
}

/// Programs that only read their operands (their output goes where the line's redirections,
/// which the walker sees, send it).
const READERS: &[&str] = &[
    "[",
    "alias",
    "awk-version",
    "b2sum",
    "basename",
    "bat",
    "cat",
    "cksum",
    "cmp",
    "column",
    "comm",
    "cut",
    "date",
    "declare",
    "df",
    "diff",
    "dirname",
    "du",
    "echo",
    "egrep",
    "exit",
    "export",
    "expr",
    "false",
    "fd",
    "fgrep",
    "file",
    "fmt",
    "fold",
    "grep",
    "hash",
    "head",
    "hexdump",
    "hostname",
    "id",
    "jobs",
    "jq",
    "kill",
    "less",
    "local",
    "ls",
    "md5sum",
    "more",
    "nl",
    "od",
    "paste",
    "printenv",
    "printf",
    "ps",
    "pwd",
    "read",
    "readlink",
    "realpath",
    "return",
    "rev",
    "rg",
    "set",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "shift",
    "sleep",
    "source",
    ".",
    "stat",
    "strings",
    "sum",
    "tac",
    "tail",
    "test",
    "tr",
    "trap",
    "tree",
    "true",
    "type",
    "uname",
    "unset",
    "wc",
    "whereis",
    "which",
    "whoami",
];

/// Programs that run a script file and then its arguments: the script is read, the
/// arguments and the folder they run in may be written. With the flag of `code_flags`, the
/// next word is program text.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python3", &["-c"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("bun", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("tsx", &["-e", "--eval"]),
    ("ruby", &["-e"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("Rscript", &["-e"]),
    // Shells: `-c` strings are walked as shell code by the walker itself.
    ("sh", &[]),
    ("bash", &[]),
    ("dash", &[]),
    ("zsh", &[]),
    ("ksh", &[]),
    ("ash", &[]),
    ("mksh", &[]),
];

/// Programs that run another command after their own options; each entry's options that take
/// a value. `None`: it takes one leading operand too (`timeout 60 …`, `flock FILE …`).
const WRAPPERS: &[(&str, &[&str], bool)] = &[
    (
        "env",
        &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        false,
    ),
    (
        "sudo",
        &["-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"],
        false,
    ),
    ("doas", &["-u", "-C"], false),
    ("timeout", &["-s", "--signal", "-k", "--kill-after"], true),
    ("nice", &["-n", "--adjustment"], false),
    ("ionice", &["-c", "-n", "-p"], false),
    ("nohup", &[], false),
    ("stdbuf", &["-i", "-o", "-e"], false),
    ("time", &["-f", "--format", "-o", "--output"], false),
    ("setsid", &[], false),
    ("exec", &["-a"], false),
    ("builtin", &[], false),
    ("command", &[], false),
    (
        "flock",
        &["-w", "--timeout", "-E", "--conflict-exit-code"],
        true,
    ),
];

/// The operands `args` (a whole simple command, its name first) writes.
#[expect(
    clippy::too_many_lines,
    reason = "wrappers peeled, then one match arm per command that writes files"
)]
pub(crate) fn command_writes(args: &[Arg<'_>]) -> Vec<Operand> {
    let mut start = 0;
    // Wrappers first: what they run is what writes.
    loop {
        let Some(name) = args.get(start).map(program_name) else {
            return Vec::new();
        };
        if name == "command"
            && args
                .get(start + 1)
                .and_then(Arg::option)
                .is_some_and(|o| o.contains('v') || o.contains('V'))
        {
            return Vec::new();
        }
        if name == "xargs" {
            // xargs adds operands read from its input, which the line does not show.
            let rest = skip_options(
                args,
                start + 1,
                &["-a", "-d", "-E", "-I", "-L", "-n", "-P", "-s"],
            );
            let Some(program) = args.get(rest).map(program_name) else {
                return Vec::new();
            };
            let mut writes = command_writes(&args[rest..]);
            if !READERS.contains(&program.as_str()) {
                writes.push(Operand::Word {
                    raw: format!("the paths xargs hands `{program}`"),
                    value: None,
                    glob: false,
                    reach: Reach::Tree,
                });
            }
            return writes;
        }
        let Some((_, with_value, operand)) = WRAPPERS.iter().find(|(w, ..)| *w == name) else {
            break;
        };
        let mut next = skip_options(args, start + 1, with_value);
        if name == "env" || name == "sudo" {
            while args.get(next).is_some_and(|a| is_assignment(a.raw)) {
                next += 1;
            }
        }
        if *operand {
            next += 1;
        }
        start = next;
    }
    let args = &args[start..];
    let name = program_name(&args[0]);
    let rest = &args[1..];
    match name.as_str() {
        _ if READERS.contains(&name.as_str()) => Vec::new(),
        // The walker follows these itself (the folder change, the string run as code).
        "cd" | "pushd" | "popd" | "eval" | "wait" | "disown" => Vec::new(),
        "tee" => operands(rest, &[]).map(|a| word(a, Reach::File)).collect(),
        "touch" => operands(rest, &["-r", "-d", "-t", "--reference", "--date"])
            .map(|a| word(a, Reach::File))
            .collect(),
        "truncate" => operands(rest, &["-s", "--size", "-r", "--reference"])
            .map(|a| word(a, Reach::File))
            .collect(),
        "mkdir" | "mkfifo" | "mknod" => operands(rest, &["-m", "--mode", "-Z"])
            .map(|a| word(a, Reach::File))
            .collect(),
        "rm" | "unlink" | "shred" | "rmdir" => {
            let reach = if has_flag(rest, &['r', 'R'], &["--recursive"]) {
                Reach::Tree
            } else {
                Reach::File
            };
            operands(rest, &["-n", "--iterations", "-s", "--size"])
                .map(|a| word(a, reach))
                .collect()
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => {
            let reach = if has_flag(rest, &['R'], &["--recursive"]) {
                Reach::Tree
            } else {
                Reach::File
            };
            let by_reference = rest
                .iter()
                .any(|a| a.literal.is_some_and(|l| l.starts_with("--reference")));
            operands(rest, &["-m", "-M", "-x", "-X"])
                .skip(usize::from(!by_reference))
                .map(|a| word(a, reach))
                .collect()
        }
        "cp" | "mv" | "ln" | "install" | "rsync" | "scp" => copy_like(&name, rest),
        "dd" => rest
            .iter()
            .filter_map(|a| {
                let value = a.literal?.strip_prefix("of=")?;
                Some(Operand::Word {
                    raw: a.raw.to_string(),
                    value: Some(value.to_string()),
                    glob: a.glob,
                    reach: Reach::File,
                })
            })
            .collect(),
        "sed" => sed(rest),
        "perl" => perl(rest),
        "awk" | "gawk" | "mawk" | "nawk" => awk(rest),
        "sort" => value_of(rest, &["-o", "--output"], Reach::File),
        "uniq" => operands(
            rest,
            &[
                "-f",
                "-s",
                "-w",
                "--skip-fields",
                "--skip-chars",
                "--check-chars",
            ],
        )
        .nth(1)
        .map(|a| word(a, Reach::File))
        .into_iter()
        .collect(),
        "xxd" => operands(rest, &["-c", "-g", "-l", "-o", "-s", "-n", "-C"])
            .nth(1)
            .map(|a| word(a, Reach::File))
            .into_iter()
            .collect(),
        "find" => find(rest),
        "tar" | "bsdtar" => tar(rest),
        "unzip" => match value_of(rest, &["-d"], Reach::Tree) {
            found if found.is_empty() => vec![Operand::Cwd(Reach::Tree)],
            found => found,
        },
        "patch" => {
            let mut found = value_of(rest, &["-o", "--output"], Reach::File);
            let dir = value_of(rest, &["-d", "--directory"], Reach::Tree);
            if dir.is_empty() {
                found.push(Operand::Cwd(Reach::Tree));
            }
            found.extend(dir);
            found.extend(
                operands(
                    rest,
                    &[
                        "-p",
                        "-i",
                        "--input",
                        "-o",
                        "--output",
                        "-d",
                        "--directory",
                        "-F",
                        "-V",
                        "-z",
                        "-B",
                        "-D",
                        "-r",
                    ],
                )
                .take(1)
                .map(|a| word(a, Reach::File)),
            );
            found
        }
        "git" => git(rest),
        _ => {
            if let Some((_, code_flags)) = INTERPRETERS.iter().find(|(i, _)| *i == name) {
                interpreter(rest, code_flags)
            } else {
                unknown(rest)
            }
        }
    }
}

/// The program a command word names: its last path component (`/usr/bin/rm` is `rm`), or the
/// word itself when the shell computes it.
fn program_name(arg: &Arg<'_>) -> String {
    let word = arg.literal.unwrap_or(arg.raw);
    word.rsplit('/').next().unwrap_or(word).to_string()
}

fn is_assignment(raw: &str) -> bool {
    raw.split_once('=').is_some_and(|(name, _)| {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// The index of the first word at or after `from` that is not an option (or an option's value).
fn skip_options(args: &[Arg<'_>], mut from: usize, with_value: &[&str]) -> usize {
    while let Some(arg) = args.get(from) {
        match arg.literal {
            Some("--") => return from + 1,
            Some(option) if option.len() > 1 && option.starts_with('-') => {
                from += if with_value.contains(&option) { 2 } else { 1 };
            }
            _ => break,
        }
    }
    from
}

/// A command's operands: every word that is not an option or an option's value (`--` ends the
/// options).
fn operands<'s, 'a>(
    args: &'s [Arg<'a>],
    with_value: &'s [&'s str],
) -> impl Iterator<Item = &'s Arg<'a>> + 's {
    let mut options_done = false;
    let mut skip_next = false;
    args.iter().filter(move |arg| {
        if skip_next {
            skip_next = false;
            return false;
        }
        if options_done {
            return true;
        }
        match arg.literal {
            Some("--") => {
                options_done = true;
                false
            }
            Some(option) if option.len() > 1 && option.starts_with('-') => {
                skip_next = with_value.contains(&option);
                false
            }
            _ => true,
        }
    })
}

/// Whether a short flag (alone or bundled, `-rf`) or a long one is given.
fn has_flag(args: &[Arg<'_>], short: &[char], long: &[&str]) -> bool {
    args.iter().filter_map(|a| a.literal).any(|word| {
        if word.starts_with("--") {
            long.contains(&word)
        } else {
            word.len() > 1 && word.starts_with('-') && word[1..].chars().any(|c| short.contains(&c))
        }
    })
}

fn word(arg: &Arg<'_>, reach: Reach) -> Operand {
    Operand::Word {
        raw: arg.raw.to_string(),
        value: arg.literal.map(str::to_string),
        glob: arg.glob,
        reach,
    }
}

/// The values of an option, given as `-o FILE`, `--output FILE`, `--output=FILE` or `-oFILE`.
fn value_of(args: &[Arg<'_>], names: &[&str], reach: Reach) -> Vec<Operand> {
    let mut found = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let Some(literal) = arg.literal else {
            continue;
        };
        for name in names {
            if literal == *name {
                if let Some(value) = args.get(i + 1) {
                    found.push(word(value, reach));
                }
            } else if let Some(value) = literal
                .strip_prefix(name)
                .and_then(|v| {
                    if name.starts_with("--") {
                        v.strip_prefix('=')
                    } else {
                        Some(v)
                    }
                })
                .filter(|v| !v.is_empty())
            {
                found.push(Operand::Word {
                    raw: arg.raw.to_string(),
                    value: Some(value.to_string()),
                    glob: arg.glob,
                    reach,
                });
            }
        }
    }
    found
}

/// `cp`, `mv`, `ln`, `install`, `rsync`, `scp`: the destination (and what lands in it), and
/// for `mv` (and `rsync --remove-source-files`) the sources, which it takes away; for a hard
/// `ln`, the sources too, since writing the link later writes them.
fn copy_like(name: &str, rest: &[Arg<'_>]) -> Vec<Operand> {
    let with_value: &[&str] = match name {
        "install" => &[
            "-m",
            "--mode",
            "-o",
            "--owner",
            "-g",
            "--group",
            "-S",
            "--suffix",
            "-t",
            "--target-directory",
        ],
        "rsync" => &[
            "-e",
            "--rsh",
            "--exclude",
            "--include",
            "--filter",
            "-f",
            "--files-from",
            "--exclude-from",
            "--include-from",
        ],
        "scp" => &["-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"],
        _ => &["-S", "--suffix", "-t", "--target-directory"],
    };
    let recursive = name == "mv"
        || name == "rsync"
        || has_flag(rest, &['r', 'R', 'a'], &["--recursive", "--archive"]);
    let reach = if recursive { Reach::Tree } else { Reach::File };
    let mut target_dir = value_of(rest, &["-t", "--target-directory"], reach);
    let mut sources: Vec<&Arg<'_>> = operands(rest, with_value).collect();
    let dest = match target_dir.pop() {
        Some(dir) => Some(dir),
        // `ln TARGET` alone makes the link in the current folder.
        None if name == "ln" && sources.len() == 1 => None,
        None => sources.pop().map(|a| word(a, reach)),
    };
    // The destination first: it is what the guard names when it denies.
    let mut found: Vec<Operand> = dest.iter().cloned().collect();
    if let Some(Operand::Word {
        value: Some(dest), ..
    }) = &dest
    {
        for source in &sources {
            if let Some(source) = source.literal.filter(|_| !source.glob) {
                let name = source
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(source);
                if !name.is_empty() && name != "." && name != ".." {
                    found.push(Operand::Into {
                        dest: dest.clone(),
                        name: name.to_string(),
                        reach,
                    });
                }
            }
        }
    }
    if dest.is_none() {
        found.push(Operand::Cwd(Reach::File));
    }
    let symbolic = has_flag(rest, &['s'], &["--symbolic"]);
    let takes_sources = name == "mv"
        || (name == "ln" && !symbolic)
        || (name == "rsync"
            && rest
                .iter()
                .any(|a| a.literal == Some("--remove-source-files")));
    if takes_sources {
        let reach = if name == "ln" {
            Reach::File
        } else {
            Reach::Tree
        };
        found.extend(sources.iter().map(|a| word(a, reach)));
    }
    found
}

/// `sed`: with `-i` every file operand is rewritten; its script (which `w FILE` can make
/// write) is program text.
fn sed(rest: &[Arg<'_>]) -> Vec<Operand> {
    let in_place = rest.iter().filter_map(|a| a.literal).any(|w| {
        w.starts_with("--in-place")
            || (w.starts_with('-') && !w.starts_with("--") && w[1..].contains('i'))
    });
    let mut found = Vec::new();
    let mut script_given = false;
    let mut files = Vec::new();
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        match arg.literal {
            Some("-e" | "--expression" | "-f" | "--file") => {
                if let Some(script) = rest.get(i + 1) {
                    found.push(Operand::Code(
                        script.literal.unwrap_or(script.raw).to_string(),
                    ));
                }
                script_given = true;
                i += 2;
                continue;
            }
            Some(option) if option.starts_with("--expression=") => {
                found.push(Operand::Code(option["--expression=".len()..].to_string()));
                script_given = true;
            }
            Some("-l" | "--line-length") => i += 1,
            Some(option) if option.len() > 1 && option.starts_with('-') => {}
            _ if !script_given => {
                found.push(Operand::Code(arg.literal.unwrap_or(arg.raw).to_string()));
                script_given = true;
            }
            _ => files.push(arg),
        }
        i += 1;
    }
    if in_place {
        found.extend(files.into_iter().map(|a| word(a, Reach::File)));
    }
    found
}

/// `perl`: `-i` rewrites its file operands; `-e` code is program text; otherwise a script.
fn perl(rest: &[Arg<'_>]) -> Vec<Operand> {
    let in_place = rest
        .iter()
        .filter_map(|a| a.literal)
        .any(|w| w.starts_with('-') && !w.starts_with("--") && w[1..].contains('i'));
    let mut found = Vec::new();
    let mut code_given = false;
    let mut operands_seen = Vec::new();
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        match arg.literal {
            Some(option) if option.starts_with('-') && option.len() > 1 => {
                if option.ends_with('e') || option.ends_with('E') {
                    if let Some(code) = rest.get(i + 1) {
                        found.push(Operand::Code(code.literal.unwrap_or(code.raw).to_string()));
                    }
                    code_given = true;
                    i += 1;
                }
            }
            _ => operands_seen.push(arg),
        }
        i += 1;
    }
    // Without -e the first operand is the script, which is read.
    let files = if code_given {
        &operands_seen[..]
    } else {
        operands_seen.get(1..).unwrap_or_default()
    };
    let reach = if in_place { Reach::File } else { Reach::Maybe };
    found.extend(files.iter().map(|a| word(a, reach)));
    if !in_place {
        found.push(Operand::Cwd(Reach::Maybe));
    }
    found
}

/// `awk`: its program can print into files (`print > "f"`), so it is program text; `-i
/// inplace` (gawk) rewrites the file operands.
fn awk(rest: &[Arg<'_>]) -> Vec<Operand> {
    let mut found = Vec::new();
    let mut program_given = false;
    let mut in_place = false;
    let mut files = Vec::new();
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        match arg.literal {
            Some("-f" | "--file") => {
                program_given = true;
                i += 1;
            }
            Some("-i" | "--include") => {
                in_place |= rest.get(i + 1).and_then(|a| a.literal) == Some("inplace");
                i += 1;
            }
            Some("-v" | "--assign" | "-F" | "--field-separator") => i += 1,
            Some(option) if option.len() > 1 && option.starts_with('-') => {}
            _ if !program_given => {
                found.push(Operand::Code(arg.literal.unwrap_or(arg.raw).to_string()));
                program_given = true;
            }
            _ => files.push(arg),
        }
        i += 1;
    }
    if in_place {
        found.extend(files.into_iter().map(|a| word(a, Reach::File)));
    }
    found
}

/// `find`: `-delete` and `-exec` of anything but a reader reach everything under its starting
/// folders; `-fprint FILE` writes FILE.
fn find(rest: &[Arg<'_>]) -> Vec<Operand> {
    let is_expression = |arg: &Arg<'_>| {
        arg.literal
            .is_some_and(|w| w.starts_with('-') || w == "(" || w == "!" || w == ")")
    };
    let roots: Vec<&Arg<'_>> = rest.iter().take_while(|a| !is_expression(a)).collect();
    let mut found = Vec::new();
    let mut reaches_roots = false;
    let mut i = roots.len();
    while let Some(arg) = rest.get(i) {
        match arg.literal {
            Some("-delete") => reaches_roots = true,
            Some("-exec" | "-execdir" | "-ok" | "-okdir") => {
                let program = rest.get(i + 1).map(program_name).unwrap_or_default();
                if !READERS.contains(&program.as_str()) {
                    reaches_roots = true;
                }
            }
            Some("-fprint" | "-fprint0" | "-fprintf" | "-fls") => {
                if let Some(file) = rest.get(i + 1) {
                    found.push(word(file, Reach::File));
                }
            }
            _ => {}
        }
        i += 1;
    }
    if reaches_roots {
        if roots.is_empty() {
            found.push(Operand::Cwd(Reach::Tree));
        }
        found.extend(roots.into_iter().map(|a| word(a, Reach::Tree)));
    }
    found
}

/// `tar`: extracting writes under `-C DIR` (else the current folder); creating writes the
/// archive `-f` names.
fn tar(rest: &[Arg<'_>]) -> Vec<Operand> {
    if rest.is_empty() {
        return Vec::new();
    }
    // `tar xzf a.tgz` (old style, no dash) or `tar -xzf a.tgz` / `--extract`.
    let bundled = |w: &str| {
        let letters = w.strip_prefix('-').unwrap_or(w);
        !w.starts_with("--") && letters.chars().all(|c| c.is_ascii_alphabetic())
    };
    let mode_letters: String = rest
        .iter()
        .filter_map(|a| a.literal)
        .enumerate()
        .filter(|(i, w)| (*i == 0 && bundled(w)) || (w.starts_with('-') && bundled(w)))
        .map(|(_, w)| w.trim_start_matches('-').to_string())
        .collect();
    let long = |name: &str| rest.iter().any(|a| a.literal == Some(name));
    let extract = mode_letters.contains('x') || long("--extract") || long("--get");
    let mut found = Vec::new();
    if extract {
        let dir = value_of(rest, &["-C", "--directory"], Reach::Tree);
        if dir.is_empty() {
            found.push(Operand::Cwd(Reach::Tree));
        }
        found.extend(dir);
    } else if mode_letters.contains('f') {
        // The archive is the word after the bundle that holds `f`.
        let at = rest
            .iter()
            .position(|a| a.literal.is_some_and(|w| bundled(w) && w.contains('f')));
        if let Some(archive) = at.and_then(|at| rest.get(at + 1)) {
            found.push(word(archive, Reach::File));
        }
    }
    found.extend(value_of(rest, &["--file"], Reach::File));
    found
}

/// `git`: the subcommands that rewrite the work tree reach the paths they name, and those that
/// rewrite all of it (`stash`, `pull`, `clean`, …) the folder they run in.
fn git(rest: &[Arg<'_>]) -> Vec<Operand> {
    let at = skip_options(
        rest,
        0,
        &["-C", "-c", "--git-dir", "--work-tree", "--namespace"],
    );
    let Some(subcommand) = rest.get(at).and_then(|a| a.literal) else {
        return Vec::new();
    };
    let args = &rest[at + 1..];
    let named: Vec<Operand> = operands(
        args,
        &[
            "-m", "-b", "-B", "-c", "-C", "-s", "--source", "-X", "-e", "-o", "-p",
        ],
    )
    .map(|a| word(a, Reach::Tree))
    .collect();
    match subcommand {
        "checkout" | "restore" | "rm" | "mv" | "switch" => named,
        "reset" if has_flag(args, &[], &["--hard", "--merge", "--keep"]) || !named.is_empty() => {
            let mut found = named;
            found.push(Operand::Cwd(Reach::Tree));
            found
        }
        "clean" | "stash" | "pull" | "merge" | "rebase" | "am" | "apply" | "cherry-pick"
        | "revert" => {
            let mut found = named;
            found.push(Operand::Cwd(Reach::Tree));
            found
        }
        _ => Vec::new(),
    }
}

/// An interpreter: its script is read; program text given with a code flag is program text;
/// the script's arguments, and the folder it runs in, may be written.
fn interpreter(rest: &[Arg<'_>], code_flags: &[&str]) -> Vec<Operand> {
    let mut found = Vec::new();
    let mut script_seen = false;
    let mut i = 0;
    while let Some(arg) = rest.get(i) {
        match arg.literal {
            Some(flag) if code_flags.contains(&flag) && !script_seen => {
                if let Some(code) = rest.get(i + 1) {
                    found.push(Operand::Code(code.literal.unwrap_or(code.raw).to_string()));
                }
                script_seen = true;
                i += 1;
            }
            Some(option) if option.starts_with('-') && !script_seen => {}
            _ if !script_seen => script_seen = true,
            _ => found.push(maybe(arg)),
        }
        i += 1;
    }
    found.push(Operand::Cwd(Reach::Maybe));
    found
}

/// A program MindRune does not know: every word it is given may be a path it writes, and so
/// may the folder it runs in.
fn unknown(rest: &[Arg<'_>]) -> Vec<Operand> {
    let mut found: Vec<Operand> = rest.iter().map(maybe).collect();
    found.push(Operand::Cwd(Reach::Maybe));
    found
}

/// A word as a path a program may write; `--out=FILE` as FILE. A word that cannot be a plain
/// path (quotes, brackets, spaces: a JSON argument, a snippet of code) is program text.
fn maybe(arg: &Arg<'_>) -> Operand {
    let value = arg.literal.map(|literal| {
        match literal.split_once('=') {
            Some((option, value)) if option.starts_with('-') => value,
            _ => literal,
        }
        .to_string()
    });
    if let Some(text) = &value
        && !text.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'.' | b'_' | b'-' | b'/' | b'~' | b'+' | b'@' | b'%' | b':' | b',' | b'='
                )
        })
    {
        return Operand::Code(text.clone());
    }
    Operand::Word {
        raw: arg.raw.to_string(),
        value,
        glob: arg.glob,
        reach: Reach::Maybe,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell_line::{ShellContext, shell_line_writes};

    /// The writes of `line` run in /ws, each as `reach target` (`F`ile, `T`ree, `M`aybe;
    /// `path`, `glob:…`, `computed:…`, `code:…`).
    fn writes(line: &str) -> Vec<String> {
        writes_in(line, "/ws")
    }

    fn writes_in(line: &str, cwd: &str) -> Vec<String> {
        let found = shell_line_writes(
            line,
            &ShellContext {
                cwd: Some(cwd),
                workspace_roots: &["/ws"],
            },
        );
        assert_eq!(found.unreadable, None, "{line}");
        found
            .writes
            .iter()
            .map(|w| {
                let reach = match w.reach {
                    Reach::File => "F",
                    Reach::Tree => "T",
                    Reach::Maybe => "M",
                };
                let target = match &w.target {
                    Target::Path(p) => p.clone(),
                    Target::Glob(p) => format!("glob:{p}"),
                    Target::Computed(c) => format!("computed:{c}"),
                    Target::Code(c) => format!("code:{c}"),
                };
                format!("{reach} {target}")
            })
            .collect()
    }

    #[test]
    fn redirections_write_their_file_resolved_after_the_line_s_cds() {
        assert_eq!(
            writes("echo hi > skills/x/SKILL.md"),
            ["F /ws/skills/x/SKILL.md"]
        );
        assert_eq!(
            writes("cd skills/x && echo hi >> SKILL.md"),
            ["F /ws/skills/x/SKILL.md"]
        );
        assert_eq!(writes("cd notes; cat a &> ../skills/b"), ["F /ws/skills/b"]);
        assert_eq!(
            writes("(cd skills && echo > a); echo > b"),
            ["F /ws/skills/a", "F /ws/b"]
        );
        assert_eq!(writes("ls 2>/dev/null >| out.txt"), ["F /ws/out.txt"]);
        assert_eq!(writes("cat a 2>&1"), Vec::<String>::new());
    }

    #[test]
    fn readers_write_nothing_but_their_redirections() {
        for line in [
            "cat skills/x/SKILL.md",
            "grep -r step skills/",
            "ls -la skills",
            "head -5 skills/a/SKILL.md | wc -l",
        ] {
            assert_eq!(writes(line), Vec::<String>::new(), "{line}");
        }
    }

    #[test]
    fn known_writers_name_what_they_write() {
        assert_eq!(
            writes("tee -a skills/x/SKILL.md < a"),
            ["F /ws/skills/x/SKILL.md"]
        );
        assert_eq!(
            writes("cp notes/a.md skills/x/"),
            ["F /ws/skills/x", "F /ws/skills/x/a.md"]
        );
        assert_eq!(
            writes("mv skills/x /tmp/x"),
            ["T /tmp/x", "T /tmp/x/x", "T /ws/skills/x"]
        );
        assert_eq!(
            writes("cp -t skills a.md"),
            ["F /ws/skills", "F /ws/skills/a.md"]
        );
        assert_eq!(writes("rm -rf skills"), ["T /ws/skills"]);
        assert_eq!(writes("rm skills/x/SKILL.md"), ["F /ws/skills/x/SKILL.md"]);
        assert_eq!(
            writes("sed -i 's/a/b/' skills/x/SKILL.md"),
            ["M code:s/a/b/", "F /ws/skills/x/SKILL.md"]
        );
        assert_eq!(writes("sed 's/a/b/' skills/x/SKILL.md"), ["M code:s/a/b/"]);
        assert_eq!(writes("dd if=a of=skills/b"), ["F /ws/skills/b"]);
        assert_eq!(
            writes("ln notes/a skills/b"),
            ["F /ws/skills/b", "F /ws/skills/b/a", "F /ws/notes/a"]
        );
        assert_eq!(
            writes("ln -s /ws/skills/x link"),
            ["F /ws/link", "F /ws/link/x"]
        );
        assert_eq!(writes("touch skills/x"), ["F /ws/skills/x"]);
        assert_eq!(writes("sort -o skills/x a"), ["F /ws/skills/x"]);
        assert_eq!(writes("tar xzf a.tgz -C skills"), ["T /ws/skills"]);
        assert_eq!(writes("tar czf out.tgz skills"), ["F /ws/out.tgz"]);
        assert_eq!(
            writes("find skills -name '*.bak' -delete"),
            ["T /ws/skills"]
        );
        assert_eq!(
            writes("find skills -name x -exec cat {} ;"),
            Vec::<String>::new()
        );
        assert_eq!(writes("git checkout -- skills/x"), ["T /ws/skills/x"]);
        assert_eq!(writes("git stash"), ["T /ws"]);
        assert_eq!(
            writes("git status && git diff skills"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn wrappers_are_seen_through() {
        assert_eq!(writes("sudo -u me rm skills/x"), ["F /ws/skills/x"]);
        assert_eq!(writes("timeout 5 env A=1 tee skills/x"), ["F /ws/skills/x"]);
        assert_eq!(
            writes("bash -c 'cd skills && touch y'"),
            ["M /ws", "F /ws/skills/y"]
        );
    }

    #[test]
    fn computed_targets_and_program_text_are_reported_for_the_guard_to_judge() {
        assert_eq!(writes("echo hi > $F"), ["F computed:$F"]);
        assert_eq!(writes("rm skills/*"), ["F glob:/ws/skills/*"]);
        assert_eq!(
            writes("python3 -c \"open('skills/x','w')\""),
            ["M code:open('skills/x','w')", "M /ws"]
        );
        assert_eq!(
            writes("awk '{print > \"skills/x\"}' a"),
            ["M code:{print > \"skills/x\"}"]
        );
        assert_eq!(
            writes("ls | xargs rm"),
            ["T computed:the paths xargs hands `rm`"]
        );
        assert!(
            writes("curl x | sh")
                .iter()
                .any(|w| w.contains("computed:the commands a shell reads")),
        );
        assert!(
            writes("sh -c \"$CMD\"")
                .iter()
                .any(|w| w.starts_with("T computed:cannot analyse")),
        );
    }

    #[test]
    fn an_unknown_program_may_write_every_path_it_is_given_and_its_folder() {
        assert_eq!(
            writes_in("./gen --out=../skills/x data", "/ws/notes"),
            ["M /ws/skills/x", "M /ws/notes/data", "M /ws/notes"]
        );
        assert_eq!(
            writes("bun bots/buzz/chop.ts --to bots/rex/x"),
            ["M /ws/--to", "M /ws/bots/rex/x", "M /ws"]
        );
    }

    #[test]
    fn a_line_it_cannot_parse_is_unreadable() {
        let found = shell_line_writes(
            "echo 'unterminated > skills/x",
            &ShellContext {
                cwd: Some("/ws"),
                workspace_roots: &["/ws"],
            },
        );
        assert!(found.unreadable.is_some(), "{found:?}");
    }
}
