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

use crate::shell_writes::ShellWrites;

mod commands;
mod lexer;
mod precheck;
mod walker;
use lexer::WordInfo;
use walker::{Origin, Scope, Walker};

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
pub(crate) const SCRIPT_EXTENSIONS: [&str; 4] = [".ts", ".js", ".mjs", ".tsx"];

/// How deeply constructs may nest, counting subshells, groups, compound commands, command
/// substitutions, `sh -c` strings and function calls together. brush-parser spends roughly
/// 16 KiB of stack per nesting level in a debug build; at this limit the worst case measured
/// about 1.3 MiB of stack in a debug build and under 512 KiB in a release build, inside the
/// 2 MiB stack of a spawned thread.
pub(crate) const MAX_NESTING: usize = 64;

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

/// rs-sdk's look (`bun sdk/cli.ts NAME`), workspace-relative as [`ShellRuns::runs`] has it.
pub(crate) const LOOK_SCRIPT: &str = "sdk/cli.ts";

/// The bot a look looks at: the line (already classified into `runs`) runs rs-sdk's
/// `sdk/cli.ts` and nothing else, and the word after it is the bot's name. A look prints the
/// bot's whole state and changes nothing in the game, so it is no run of a script; the state
/// it prints is what the bot's next run starts from. `None` for any other line, and for a line
/// that also runs a script (its output is that run's).
pub fn look_target<'l>(line: &'l str, runs: &ShellRuns) -> Option<&'l str> {
    if runs.runs.len() != 1 || runs.runs[0] != LOOK_SCRIPT {
        return None;
    }
    let mut words = line
        .split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        .map(|word| word.trim_matches(|c| c == '"' || c == '\''))
        .skip_while(|word| !word.ends_with(LOOK_SCRIPT));
    words.next()?;
    let name = words.find(|word| !word.is_empty())?;
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain.then_some(name)
}

/// At most this many writes are kept for one line; a line with more is unreadable.
const MAX_WRITES: usize = 1_000;

/// Where `line` writes ([`crate::shell_writes`] knows the programs; this walks the line's
/// structure to them). Never fails: what it cannot read is said in
/// [`ShellWrites::unreadable`].
pub fn shell_line_writes(line: &str, ctx: &ShellContext<'_>) -> ShellWrites {
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
// ---------------------------------------------------------------------------------------
// Word lexer
// ---------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------
// Walker
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::lexer::lex_word;
    use super::precheck::{PrecheckError, precheck};
    use super::*;

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

    #[test]
    fn a_look_names_its_bot_and_a_line_that_also_runs_a_script_is_no_look() {
        let look = |line: &str| {
            let runs = classify(line, Some("/w"), &["/w"]);
            look_target(line, &runs).map(str::to_owned)
        };
        assert_eq!(look("bun sdk/cli.ts woody").as_deref(), Some("woody"));
        assert_eq!(
            look("cd /w && bun ./sdk/cli.ts 'ash' 2>&1").as_deref(),
            Some("ash")
        );
        assert_eq!(
            look("bun /w/sdk/cli.ts woody | tail -40").as_deref(),
            Some("woody")
        );
        assert_eq!(look("bun sdk/cli.ts"), None, "no bot named");
        assert_eq!(look("bun sdk/cli.ts woody && bun bots/woody/chop.ts"), None);
        assert_eq!(look("bun bots/woody/chop.ts woody"), None);
        assert_eq!(look("cat sdk/cli.ts woody"), None, "not run");
    }

    const X: &str = "bots/a/x.ts";
    const Y: &str = "bots/a/y.ts";

    #[expect(
        clippy::too_many_lines,
        reason = "a table of shell lines and their expected runs"
    )]
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
