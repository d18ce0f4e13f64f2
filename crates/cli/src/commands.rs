//! The subcommands. Each reads its input, calls the engine or the store, and renders.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_core::header::is_valid_name;
use mindrune_engine::avatars::family;
use mindrune_engine::avatars::turn::{self, Boundary, MirrorPolicy};
use mindrune_engine::hook::{self, HookAction};
use mindrune_engine::{IngestError, Recorder, now_millis};
use mindrune_store::Store;

use crate::library::{self, resolve_owner};
use crate::render;

/// Exit status for input that was (partly) rejected: the rest was still recorded.
const EXIT_BAD_INPUT: u8 = 2;

pub(crate) fn init(home: &Path) -> anyhow::Result<ExitCode> {
    let database = library::database(home);
    let mut out = std::io::stdout().lock();
    let path = match &database {
        library::Database::Postgres(_) => {
            let store = database.open()?;
            let owners = store.owners()?.len();
            writeln!(
                out,
                "The MindRune library in PostgreSQL at {database} is ready ({}).",
                render::count(owners, "owner", "owners")
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        library::Database::Sqlite(path) => path,
    };
    let existed = path.exists();
    // `Database::open` makes the file's folder (MINDRUNE_HOME, or the one `sqlite:PATH` names).
    database
        .open()
        .with_context(|| format!("cannot create the library at {}", path.display()))?;
    if existed {
        writeln!(
            out,
            "The MindRune library at {} is ready (it existed already; nothing was changed).",
            path.display()
        )?;
    } else {
        writeln!(out, "Made an empty MindRune library at {}.", path.display())?;
        writeln!(
            out,
            "\nNext: `mindrune owner add NAME`, then `mindrune agent add AGENT --owner NAME --workspace DIR`."
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A fresh owner key: 32 random bytes from the operating system, hex-encoded.
pub(crate) fn new_owner_key() -> anyhow::Result<String> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .context("cannot read random bytes for the owner's key")?;
    Ok(format!(
        "mrk_{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

pub(crate) fn owner_add(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
    if !is_valid_name(name) {
        bail!(
            "`{name}` is not a valid owner name: use letters, digits, `-`, `_` and `.`, at most 64"
        );
    }
    let store = library::open(home)?;
    let owner = store.create_owner(name, &new_owner_key()?, now_millis())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Added owner `{}`.", owner.name)?;
    writeln!(
        out,
        "Its key (keep it secret; MindRune scrubs it from everything it saves): {}",
        owner.api_key
    )?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn owner_list(home: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let mut out = std::io::stdout().lock();
    let mut rows = Vec::new();
    for owner in store.owners()? {
        let agents = store.agents(owner.id)?.len();
        if json {
            // The owner's key is a secret: never in a listing.
            rows.push(serde_json::json!({
                "name": owner.name,
                "agents": agents,
                "eager_sharing": owner.eager_sharing,
                "created_at": owner.created_at,
            }));
        } else {
            writeln!(
                out,
                "{}  ({})",
                owner.name,
                render::count(agents, "agent", "agents")
            )?;
        }
    }
    if json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn agent_add(
    home: &Path,
    name: &str,
    owner: &str,
    workspace: &Path,
) -> anyhow::Result<ExitCode> {
    if !is_valid_name(name) {
        bail!(
            "`{name}` is not a valid agent name: use letters, digits, `-`, `_` and `.`, at most 64"
        );
    }
    let store = library::open(home)?;
    let owner = resolve_owner(&*store, Some(owner))?;
    let workspace = workspace.canonicalize().with_context(|| {
        format!(
            "the workspace {} does not exist; make it first",
            workspace.display()
        )
    })?;
    if !workspace.is_dir() {
        bail!("the workspace {} is not a folder", workspace.display());
    }
    if let Some(why) = mindrune_engine::workspace::system_folder(&workspace) {
        bail!("the workspace {why}; nothing was added");
    }
    let workspace_text = workspace
        .to_str()
        .with_context(|| format!("the workspace path {} is not UTF-8", workspace.display()))?;
    let agent = store.create_agent(owner.id, name, workspace_text, now_millis())?;
    let scripts = workspace.join("bots").join(name);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Added agent `{}` to `{}`'s family; its scripts are {}/*.ts.",
        agent.name,
        owner.name,
        scripts.display()
    )?;
    if !scripts.is_dir() {
        writeln!(
            out,
            "\nnote: {} does not exist yet; runs are recorded once scripts appear there.",
            scripts.display()
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn agent_list(home: &Path, owner: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let owner = resolve_owner(&*store, owner)?;
    let mut out = std::io::stdout().lock();
    let agents = store.agents(owner.id)?;
    if json {
        let rows: Vec<serde_json::Value> = agents
            .iter()
            .map(|agent| {
                serde_json::json!({
                    "name": agent.name,
                    "owner": owner.name,
                    "workspace": agent.workspace,
                    "mirror": family::default_dir(agent),
                    "created_at": agent.created_at,
                    "last_turn_at": agent.last_turn_at,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    for agent in agents {
        writeln!(out, "{}  {}", agent.name, agent.workspace)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn record(home: &Path, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let recorder = Recorder::new(&*store);
    let (label, mut reader): (String, Box<dyn std::io::BufRead>) = match file {
        None => ("<stdin>".into(), Box::new(std::io::stdin().lock())),
        Some(path) if path == Path::new("-") => {
            ("<stdin>".into(), Box::new(std::io::stdin().lock()))
        }
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            (
                path.display().to_string(),
                Box::new(std::io::BufReader::new(file)),
            )
        }
    };
    let mut report = RecordReport {
        label: &label,
        json,
        summary: render::RecordSummary::default(),
        out: std::io::stdout().lock(),
        err: std::io::stderr().lock(),
    };
    let mut bytes = Vec::new();
    let mut line_no = 0usize;
    // Lines are recorded RECORD_CHUNK_LINES at a time in one write transaction (one commit for
    // the lot), and each line's answer is printed once its chunk committed.
    let mut chunk: Vec<(usize, String)> = Vec::new();
    loop {
        line_no += 1;
        let read = read_capped_line(&mut reader, &mut bytes, MAX_EVENT_LINE_BYTES)
            .with_context(|| format!("cannot read {label}"))?;
        let refused = match read {
            LineRead::End => break,
            LineRead::TooLong => IngestError::Invalid {
                field: None,
                message: format!(
                    "the line is longer than {MAX_EVENT_LINE_BYTES} bytes (the server's limit for a request of events); split it or save long code as a script"
                ),
            },
            LineRead::Line => match std::str::from_utf8(&bytes) {
                Err(_) => IngestError::Invalid {
                    field: None,
                    message: "the line is not UTF-8 text".into(),
                },
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => {
                    chunk.push((line_no, text.to_string()));
                    if chunk.len() >= RECORD_CHUNK_LINES {
                        record_chunk(&recorder, home, &mut chunk, &mut report)?;
                    }
                    continue;
                }
            },
        };
        // A refused line is answered in its place: what came before it is recorded and
        // printed first. A line too long is named at once, before the rest of it is skipped,
        // so a line that never ends (`record /dev/zero`) is named now, not never.
        record_chunk(&recorder, home, &mut chunk, &mut report)?;
        report.answer(line_no, Err(refused))?;
        if read == LineRead::TooLong {
            report.out.flush()?;
            skip_line(&mut reader).with_context(|| format!("cannot read {label}"))?;
        }
    }
    record_chunk(&recorder, home, &mut chunk, &mut report)?;
    let RecordReport {
        summary, mut out, ..
    } = report;
    if !json {
        render::record_summary(&mut out, &summary)?;
    }
    Ok(if summary.rejected > 0 {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

/// Event lines recorded in one write transaction by `mindrune record`.
const RECORD_CHUNK_LINES: usize = 500;

/// Where `mindrune record` says what each line did, and the running summary.
struct RecordReport<'a> {
    label: &'a str,
    json: bool,
    summary: render::RecordSummary,
    out: std::io::StdoutLock<'static>,
    err: std::io::StderrLock<'static>,
}

impl RecordReport<'_> {
    /// Prints one line's answer; the library failing stops the whole run (not the line's fault:
    /// stop, so nothing is silently lost).
    fn answer(
        &mut self,
        line_no: usize,
        result: Result<mindrune_engine::Recorded, IngestError>,
    ) -> anyhow::Result<()> {
        let label = self.label;
        match result {
            Ok(recorded) => {
                for warning in &recorded.warnings {
                    writeln!(self.err, "{label}:{line_no}: warning: {warning}")?;
                }
                if self.json {
                    serde_json::to_writer(
                        &mut self.out,
                        &serde_json::json!({"line": line_no, "recorded": recorded}),
                    )?;
                    writeln!(self.out)?;
                }
                self.summary.add(&recorded);
            }
            Err(IngestError::Store(store_error)) => return Err(store_error.into()),
            Err(error) => {
                self.summary.lines += 1;
                self.summary.rejected += 1;
                writeln!(
                    self.err,
                    "{label}:{line_no}: error: {error}; nothing of this line was recorded"
                )?;
                if self.json {
                    serde_json::to_writer(
                        &mut self.out,
                        &serde_json::json!({"line": line_no, "error": error.to_string()}),
                    )?;
                    writeln!(self.out)?;
                }
            }
        }
        Ok(())
    }
}

/// Records the chunk's lines in one write transaction and prints each line's answer after the
/// commit; empties the chunk.
fn record_chunk(
    recorder: &Recorder<'_>,
    home: &Path,
    chunk: &mut Vec<(usize, String)>,
    report: &mut RecordReport<'_>,
) -> anyhow::Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let lines: Vec<&str> = chunk.iter().map(|(_, text)| text.as_str()).collect();
    let label = report.label;
    let cannot_record = |line_no: usize| {
        format!(
            "{label}:{line_no}: cannot record into the library at {}",
            library::database(home)
        )
    };
    let results = recorder.record_lines_together(&lines);
    for ((line_no, _), result) in chunk.iter().zip(results) {
        report
            .answer(*line_no, result)
            .map_err(|err| err.context(cannot_record(*line_no)))?;
    }
    chunk.clear();
    Ok(())
}

/// Claude Code runs hook processes in its current folder, which moves with the agent's `cd`: a
/// relative library or relay location is taken from the project's folder, which Claude Code
/// names in `CLAUDE_PROJECT_DIR`, so a hook finds it from anywhere.
fn from_project_dir(path: &Path) -> PathBuf {
    match std::env::var_os("CLAUDE_PROJECT_DIR") {
        Some(project) if path.is_relative() && !project.is_empty() => {
            Path::new(&project).join(path)
        }
        _ => path.to_path_buf(),
    }
}

/// The longest event line `record` reads: the server's limit for one request of events, so a
/// line refused here would be refused there too, and `record /dev/zero` cannot fill the memory.
pub(crate) const MAX_EVENT_LINE_BYTES: usize = mindrune_server::wire::MAX_EVENTS_BODY;

/// What [`read_capped_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum LineRead {
    /// A whole line is in the buffer, without its `\n`.
    Line,
    /// The line is longer than the cap: what was read of it is dropped, and the caller skips
    /// the rest with [`skip_line`] after saying so (at once, even if the line never ends).
    TooLong,
    /// The input has ended.
    End,
}

/// Reads one `\n`-terminated line into `line`, keeping at most `cap` bytes of it.
/// `BufRead::split` would hold the whole line, however long.
fn read_capped_line(
    reader: &mut dyn std::io::BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<LineRead> {
    line.clear();
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(if line.is_empty() {
                LineRead::End
            } else {
                LineRead::Line
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let chunk = &available[..newline.unwrap_or(available.len())];
        if line.len() + chunk.len() > cap {
            line.clear();
            return Ok(LineRead::TooLong);
        }
        line.extend_from_slice(chunk);
        let used = newline.map_or(available.len(), |end| end + 1);
        reader.consume(used);
        if newline.is_some() {
            return Ok(LineRead::Line);
        }
    }
}

/// Consumes the input up to and including the next `\n` (or to its end), keeping nothing.
fn skip_line(reader: &mut dyn std::io::BufRead) -> std::io::Result<()> {
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                return Ok(());
            }
            None => {
                let all = available.len();
                reader.consume(all);
            }
        }
    }
}

pub(crate) fn hook_claude_code(
    home: &Path,
    agent: Option<&str>,
    relay: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    // A hook must never block the agent: bad input or a missing library is reported on
    // stderr with exit status 1 (Claude Code shows it and carries on), never 2 (which blocks).
    // Nothing goes to stdout but a `SessionStart`'s context: Claude Code reads a hook's stdout.
    let outcome = (|| -> anyhow::Result<()> {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the hook input")?;
        let agent = hook::agent_name(agent)?;
        // Before anything else, the guard: a host call that would write where MindRune keeps
        // its rules (family-skills/, a sibling's folder, the library) is denied, and runs not.
        if let Some(reason) = avatar_guard(&input, agent, home, relay)? {
            return print_hook_answer(&pre_tool_use_denial(&reason));
        }
        if let Some(relay) = relay {
            // Relay mode: the runner beside the sandbox delivers to the server, so the hook
            // only writes a file and never waits for the network or needs a library. Its notes
            // of started calls live in the relay folder too.
            let relay = from_project_dir(relay);
            let spool = relay.join(mindrune_server::runner::spool::PENDING);
            match hook::handle(&input, agent, &spool)? {
                HookAction::Record(event) => {
                    // The spool is on disk: the bot's own secrets (its bot.env) are scrubbed
                    // before the event touches it, as the runner scrubs what it sends.
                    let event = scrubbed_for_relay(*event, agent);
                    mindrune_server::runner::spool::relay_event(&relay, &event)?;
                }
                HookAction::TurnEnded { .. } => {
                    mindrune_server::runner::spool::relay_turn_end(&relay)?;
                }
                HookAction::SessionStarted => {
                    let kept = relay.join(mindrune_server::runner::spool::INSTRUCTIONS);
                    let text = std::fs::read_to_string(&kept).unwrap_or_else(|_| {
                        format!(
                            "MindRune's runner for `{agent}` has not started yet (no {}), so its instructions are not here; start it (`mindrune runner --agent {agent} …`), then start this session again.",
                            kept.display()
                        )
                    });
                    print_session_context(&text)?;
                }
                HookAction::Started | HookAction::Ignored(_) => {}
            }
            return Ok(());
        }
        let home = from_project_dir(home);
        let spool = home.join("hooks").join("claude-code");
        match hook::handle(&input, agent, &spool)? {
            HookAction::Record(event) => {
                let store = library::open(&home)?;
                let recorded = Recorder::new(&*store).record(&event)?;
                for warning in recorded.warnings {
                    eprintln!("mindrune: {warning}");
                }
            }
            HookAction::TurnEnded { failure, .. } => {
                // Claude Code's Stop (or StopFailure, a turn an API error ended) is the agent's
                // turn boundary: scan, share, un-share, lessons, and the mirror when it is due.
                // The report goes to stderr, which Claude Code shows only in its verbose mode.
                let store = library::open(&home)?;
                let report = turn::turn_boundary(
                    &*store,
                    agent,
                    Boundary::TurnEnd,
                    MirrorPolicy::WhenDue,
                    None,
                )?;
                let mut text = Vec::new();
                if let Some(failure) = failure {
                    writeln!(text, "{agent}: the turn ended on an API error ({failure}).")?;
                }
                render::turn_report(&mut text, &report, false)?;
                eprint!("{}", String::from_utf8_lossy(&text));
            }
            HookAction::SessionStarted => {
                // The agent's start: every header re-checked and family-skills/ written before
                // the agent reads it, then what it is told becomes its context.
                let store = library::open(&home)?;
                let report =
                    turn::turn_boundary(&*store, agent, Boundary::Start, MirrorPolicy::Now, None)?;
                let mut text = Vec::new();
                render::turn_report(&mut text, &report, true)?;
                eprint!("{}", String::from_utf8_lossy(&text));
                print_session_context(&session_instructions(&*store, agent)?)?;
            }
            HookAction::Started | HookAction::Ignored(_) => {}
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            eprintln!("mindrune hook: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The guard's reason to deny an avatar's `PreToolUse`, if it has one.
fn avatar_guard(
    input: &str,
    agent: &str,
    home: &Path,
    relay: Option<&Path>,
) -> anyhow::Result<Option<String>> {
    let payload: serde_json::Value = match serde_json::from_str(input) {
        Ok(payload) => payload,
        // `hook::handle` says what is wrong with it.
        Err(_) => return Ok(None),
    };
    if payload.get("hook_event_name").and_then(|v| v.as_str()) != Some("PreToolUse") {
        return Ok(None);
    }
    let project = claude_project_dir()
        .or_else(|| {
            payload
                .get("cwd")
                .and_then(|v| v.as_str())
                .map(PathBuf::from)
        })
        .context("neither CLAUDE_PROJECT_DIR nor the hook's `cwd` says which checkout this is, so the guard cannot tell its bots/ and family-skills/ apart")?;
    let mut kept: Vec<PathBuf> = vec![from_project_dir(home)];
    if let Some(relay) = relay {
        kept.push(from_project_dir(relay));
    }
    let kept: Vec<&Path> = kept.iter().map(PathBuf::as_path).collect();
    let guard = mindrune_engine::host_guard::HostGuard::for_avatar(&project, agent, &kept);
    Ok(match guard.check(&payload) {
        mindrune_engine::host_guard::Verdict::Deny(reason) => Some(reason),
        mindrune_engine::host_guard::Verdict::Allow => None,
    })
}

/// Claude Code's project folder, which it gives every hook.
fn claude_project_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
}

/// A `PreToolUse` hook's answer that denies the call: Claude Code does not run it and tells
/// the model the reason.
fn pre_tool_use_denial(reason: &str) -> serde_json::Value {
    serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    })
}

/// Prints a hook's JSON answer on stdout, where Claude Code reads it.
fn print_hook_answer(answer: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, answer)?;
    writeln!(out)?;
    Ok(())
}

/// `mindrune hook claude-code --workspace DIR`: one hook call of an assistant working in its
/// playbook workspace. As for an avatar's hooks, nothing but the guard's denial and the turn's
/// context goes to stdout, and a problem is said on stderr with status 1, which never blocks.
pub(crate) fn hook_claude_code_workspace(workspace: &Path) -> anyhow::Result<ExitCode> {
    let outcome = (|| -> anyhow::Result<()> {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the hook input")?;
        let workspace = from_project_dir(workspace);
        let project = claude_project_dir();
        match hook::handle_workspace(&input, &workspace, project.as_deref())? {
            hook::WorkspaceAction::Deny(reason) => {
                print_hook_answer(&pre_tool_use_denial(&reason))?;
            }
            hook::WorkspaceAction::Context(text) => {
                print_hook_answer(&serde_json::json!({
                    "hookSpecificOutput": {
                        "hookEventName": "UserPromptSubmit",
                        "additionalContext": text,
                    }
                }))?;
            }
            hook::WorkspaceAction::Observed(Some(id)) => {
                // stderr: Claude Code shows it in its verbose mode; stdout would be context.
                eprintln!("mindrune: the observer left suggestion #{id} for the assistant");
            }
            hook::WorkspaceAction::Observed(None)
            | hook::WorkspaceAction::ReadNoted(_)
            | hook::WorkspaceAction::Allow
            | hook::WorkspaceAction::Ignored(_) => {}
        }
        Ok(())
    })();
    match outcome {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            eprintln!("mindrune hook: {err:#}");
            Ok(ExitCode::FAILURE)
        }
    }
}

/// An event with the bot's secrets (`bots/<agent>/bot.env` of the checkout Claude Code names in
/// `CLAUDE_PROJECT_DIR`, else of the folder the call started in) and credential shapes scrubbed
/// from its command, code and output.
fn scrubbed_for_relay(
    mut event: mindrune_core::avatars::event::Event,
    agent: &str,
) -> mindrune_core::avatars::event::Event {
    use mindrune_core::avatars::event::Call;
    let workspace = claude_project_dir().or_else(|| match &event.call {
        Call::Shell { cwd: Some(cwd), .. } => Some(PathBuf::from(cwd)),
        _ => None,
    });
    let scrubber = match &workspace {
        Some(workspace) => {
            mindrune_server::runner::files::AgentFolder { workspace, agent }.scrubber()
        }
        None => mindrune_core::secrets::Scrubber::new(&[]),
    };
    let scrub = |text: &mut String| *text = scrubber.scrub(text).text.into_owned();
    match &mut event.call {
        Call::Shell { command, .. } => scrub(command),
        Call::ExecuteCode { code } => scrub(code),
        Call::ExecuteScript { .. } => {}
    }
    if let Some(output) = &mut event.output {
        scrub(output);
    }
    event
}

/// What an agent is told at its start: `mindrune instructions`' text.
fn session_instructions(store: &dyn Store, agent: &str) -> anyhow::Result<String> {
    let agent = find_agent(store, agent)?;
    let owner = store.owner(agent.owner)?;
    Ok(mindrune_core::avatars::instructions::text(
        &agent.name,
        SharingBar::for_family(owner.eager_sharing),
        owner.eager_sharing,
        family::mirror_relative(&agent),
    ))
}

/// A `SessionStart` hook's answer: Claude Code adds `additionalContext` to the agent's
/// context (the JSON form, so nothing else on stdout can be mistaken for it).
fn print_session_context(text: &str) -> anyhow::Result<()> {
    let answer = serde_json::json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": text,
        }
    });
    print_hook_answer(&answer)
}

pub(crate) fn skills(
    home: &Path,
    agent: Option<&str>,
    owner: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let (owner, agent) = match agent {
        Some(name) => {
            let agent = store.agent_by_name(name)?.with_context(|| {
                format!("no agent named `{name}`\n\nhint: `mindrune agent list` shows the agents")
            })?;
            if let Some(owner_name) = owner
                && store.owner(agent.owner)?.name != owner_name
            {
                bail!("agent `{name}` is not in `{owner_name}`'s family");
            }
            (store.owner(agent.owner)?, Some(agent))
        }
        None => (resolve_owner(&*store, owner)?, None),
    };
    let entries = store.skills(owner.id, agent.as_ref().map(|a| a.id))?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &render::skills_json(&entries))?;
        writeln!(out)?;
    } else {
        render::skills_table(&mut out, &entries)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn skill_show(home: &Path, skill: &str, json: bool) -> anyhow::Result<ExitCode> {
    let Some((agent_name, name)) = skill.split_once('/') else {
        bail!("`{skill}` is not AGENT/NAME (for example buzz/chop-oaks)");
    };
    let name = name.trim_end_matches(".ts");
    let store = library::open(home)?;
    let agent = store.agent_by_name(agent_name)?.with_context(|| {
        format!("no agent named `{agent_name}`\n\nhint: `mindrune agent list` shows the agents")
    })?;
    let found = store.skill_by_name(agent.owner, agent_name, name)?.with_context(|| {
        format!("`{agent_name}` has no skill `{name}`\n\nhint: `mindrune skills --agent {agent_name}` lists its skills")
    })?;
    let versions = store.versions(agent.owner, found.id)?;
    // Each parent named the way people say it: `v2` within the skill, `buzz/chop v3` across.
    let mut parents = std::collections::HashMap::new();
    for parent in versions.iter().filter_map(|v| v.parent) {
        let version = store.version(agent.owner, parent)?;
        let label = if version.skill == found.id {
            format!("v{}", version.number)
        } else {
            let skill = store.skill(agent.owner, version.skill)?;
            format!("{}/{} v{}", skill.agent_name, skill.name, version.number)
        };
        parents.insert(parent, label);
    }
    let bar = SharingBar::for_family(store.owner(agent.owner)?.eager_sharing);
    let failures = store.recent_failures(agent.owner, found.id, render::FAILURES_SHOWN)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &render::skill_json(&found, &versions, &parents, &failures, bar),
        )?;
        writeln!(out)?;
    } else {
        render::skill_detail(&mut out, &found, &versions, &parents, &failures, bar)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn owner_eager(home: &Path, owner: &str, on: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let owner = resolve_owner(&*store, Some(owner))?;
    store.set_eager_sharing(owner.id, on)?;
    let mut out = std::io::stdout().lock();
    if on {
        writeln!(
            out,
            "Eager family sharing is on for `{}`: a headed script is shared after 3 runs with a score of 500 (it applies at the next run or turn end).",
            owner.name
        )?;
    } else {
        writeln!(
            out,
            "Eager family sharing is off for `{}`: a headed script is shared after 5 runs with a score of 600. Skills already shared stay shared.",
            owner.name
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn agent_remove(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let agent = find_agent(&*store, name)?;
    let deleted = store.delete_agent(agent.owner, agent.id)?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Removed agent `{name}`: {} removed with their history; {} stay with the family, no longer linked to it.",
        render::count(deleted.scripts_removed, "private script", "private scripts"),
        render::count(deleted.skills_kept, "shared skill", "shared skills"),
    )?;
    Ok(ExitCode::SUCCESS)
}

fn find_agent(store: &dyn Store, name: &str) -> anyhow::Result<mindrune_store::Agent> {
    store.agent_by_name(name)?.with_context(|| {
        format!("no agent named `{name}`\n\nhint: `mindrune agent list` shows the agents")
    })
}

/// `mindrune turn-end` and `mindrune start`: a turn boundary, printed.
pub(crate) fn turn_boundary(
    home: &Path,
    agent: &str,
    boundary: Boundary,
    out_dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = match library::open(home) {
        Ok(store) => store,
        Err(err) if boundary == Boundary::Start && anyhow_disk_full(&err) => {
            // A full disk is no reason to doubt what the library last said: the mirror stays.
            let kept = out_dir.map_or_else(
                || "the agent's family-skills/".to_string(),
                |dir| dir.display().to_string(),
            );
            return Err(err.context(format!(
                "the disk holding the library at {} is full, so {kept} was kept as it was; free space on that disk and start `{agent}` again",
                library::database(home)
            )));
        }
        Err(err) if let (Boundary::Start, Some(dir)) = (boundary, out_dir) => {
            // Better an empty family-skills/ than a stale one: the agent must not act on
            // skills the library may have un-shared.
            family::empty_mirror(dir)?;
            return Err(err.context(format!(
                "the library cannot answer, so {} was emptied",
                dir.display()
            )));
        }
        Err(err) => return Err(err),
    };
    let policy = match boundary {
        Boundary::Start => MirrorPolicy::Now,
        Boundary::TurnEnd => MirrorPolicy::WhenDue,
    };
    let report = match turn::turn_boundary(&*store, agent, boundary, policy, out_dir) {
        Ok(report) => report,
        Err(err) if boundary == Boundary::Start && err.is_disk_full() => {
            // The library answered, or would have: only a disk is short. Emptying the mirror
            // would cost the agent its family's skills for nothing, so it stays as it was.
            let dir = match out_dir {
                Some(dir) => Some(dir.to_path_buf()),
                None => store
                    .agent_by_name(agent)
                    .ok()
                    .flatten()
                    .map(|a| family::default_dir(&a)),
            };
            let kept = dir.map_or_else(
                || "family-skills/".to_string(),
                |dir| dir.display().to_string(),
            );
            let disk = if matches!(
                &err,
                turn::TurnError::Mirror(family::FamilyError::Mirror(_))
            ) {
                format!("the disk holding {kept}")
            } else {
                format!(
                    "the disk holding the library at {}",
                    library::database(home)
                )
            };
            return Err(anyhow::Error::new(err).context(format!(
                "{disk} is full, so {kept} was kept as it was; free space on that disk and start `{agent}` again"
            )));
        }
        Err(err) if boundary == Boundary::Start => {
            // The library opened but could not answer: the same rule as above, for the
            // agent's own mirror when no other directory was named.
            let dir = match out_dir {
                Some(dir) => Some(dir.to_path_buf()),
                None => store
                    .agent_by_name(agent)
                    .ok()
                    .flatten()
                    .map(|a| family::default_dir(&a)),
            };
            let err = anyhow::Error::new(err);
            return Err(match dir {
                Some(dir) => match family::empty_mirror(&dir) {
                    Ok(_) => err.context(format!(
                        "the library at {} cannot answer for `{agent}`, so {} was emptied",
                        library::database(home),
                        dir.display()
                    )),
                    Err(empty_err) => err.context(format!(
                        "the library at {} cannot answer for `{agent}`, and {} could not be emptied either ({empty_err})",
                        library::database(home),
                        dir.display()
                    )),
                },
                None => err.context(format!("cannot start `{agent}`")),
            });
        }
        Err(err) => return Err(err.into()),
    };
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        render::turn_report(&mut out, &report, boundary == Boundary::Start)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether a failure somewhere down `err`'s chain is a full disk.
fn anyhow_disk_full(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<mindrune_store::StoreError>()
            .is_some_and(mindrune_store::StoreError::is_disk_full)
            || cause
                .downcast_ref::<std::io::Error>()
                .is_some_and(mindrune_engine::io_disk_full)
    })
}

pub(crate) fn mirror(
    home: &Path,
    agent: &str,
    out_dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let agent = find_agent(&*store, agent)?;
    let outcome = family::refresh_mirror(&*store, &agent, out_dir)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &outcome)?;
        writeln!(out)?;
    } else {
        render::mirror_outcome(&mut out, &outcome)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn instructions(home: &Path, agent: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let text = session_instructions(&*store, agent)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn wrapup(home: &Path, agent: &str, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let wrap = mindrune_engine::avatars::wrapup::wrap_up(&*store, agent)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &wrap)?;
        writeln!(out)?;
    } else {
        render::wrap_up(&mut out, &wrap)?;
    }
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------------------------
// Topic tags
// ---------------------------------------------------------------------------------------------

/// How many changed tags `tags build` lists by name before it only counts the rest.
const TAGS_LISTED: usize = 20;

/// `mindrune tags build --wiki DIR`.
pub(crate) fn tags_build(home: &Path, wiki: &Path, json: bool) -> anyhow::Result<ExitCode> {
    use mindrune_engine::avatars::tags;

    let store = library::open(home)?;
    let read = tags::build_from_wiki(wiki)?;
    let written = tags::write_vocabulary(&*store, &read, now_millis())?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "wiki": read.folder,
                "pages": read.entries.len(),
                "tags": written.counts.values().sum::<usize>(),
                "kinds": written.counts,
                "sources": written.sources,
                "added": written.change.added,
                "removed": written.change.removed,
                "kept": written.change.kept,
                "missing_folders": read.missing,
                "skipped": read.skipped.iter().chain(&written.skipped).collect::<Vec<_>>(),
            }),
        )?;
        writeln!(out)?;
    } else {
        let total: usize = written.counts.values().sum();
        let source = |name: &str| written.sources.get(name).copied().unwrap_or(0);
        writeln!(
            out,
            "Read {} pages from {}.",
            thousands(read.entries.len()),
            read.folder
        )?;
        writeln!(
            out,
            "The vocabulary has {} tags ({} wiki pages, {} LostHQ pages, {} places):",
            thousands(total),
            thousands(source("wiki")),
            source("losthq"),
            source("places")
        )?;
        for kind in mindrune_core::avatars::topics::TOPIC_KINDS {
            let count = written.counts.get(kind).copied().unwrap_or(0);
            writeln!(out, "  {kind:<6}{:>7}", thousands(count))?;
        }
        for (verb, tags) in [
            ("Added", &written.change.added),
            ("Removed", &written.change.removed),
        ] {
            if tags.is_empty() {
                writeln!(out, "{verb} no tags.")?;
                continue;
            }
            let shown: Vec<&str> = tags.iter().take(TAGS_LISTED).map(String::as_str).collect();
            let more = tags.len() - shown.len();
            writeln!(
                out,
                "{verb} {} {}: {}{}",
                thousands(tags.len()),
                if tags.len() == 1 { "tag" } else { "tags" },
                shown.join(", "),
                if more > 0 {
                    format!(", and {} more", thousands(more))
                } else {
                    String::new()
                }
            )?;
        }
        if written.change.kept > 0 {
            writeln!(out, "Kept {} tags.", thousands(written.change.kept))?;
        }
        for name in &read.missing {
            let kind = tags::WIKI_FOLDERS
                .iter()
                .find(|(folder, _)| folder == name)
                .map_or("its", |(_, kind)| kind);
            writeln!(
                out,
                "The wiki has no {name}/ folder, so no {kind}: tags come from it."
            )?;
        }
        let skipped: Vec<&String> = read.skipped.iter().chain(&written.skipped).collect();
        if !skipped.is_empty() {
            writeln!(out, "\nSkipped {}:", thousands(skipped.len()))?;
            for note in &skipped {
                writeln!(out, "  {note}")?;
            }
        }
    }
    // Files skipped are input partly rejected: the rest was still written.
    let partly = !read.skipped.is_empty() || !written.skipped.is_empty();
    Ok(if partly {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

/// `mindrune tags map [TEXT|-]`: the tags a text carries, one a line. Without a library the
/// built-in vocabulary (exact tags, places, LostHQ pages) maps it, and stderr says so.
pub(crate) fn tags_map(home: &Path, text: &[String]) -> anyhow::Result<ExitCode> {
    let text = match text {
        [] => None,
        [only] if only == "-" => None,
        words => Some(words.join(" ")),
    };
    let text = match text {
        Some(text) => text,
        None => {
            let mut input = String::new();
            std::io::stdin()
                .lock()
                .read_to_string(&mut input)
                .context("cannot read the text from standard input (is it UTF-8?)")?;
            input
        }
    };
    let vocabulary = if library::exists(home) {
        mindrune_engine::avatars::tags::vocabulary(&*library::open(home)?)?
    } else {
        eprintln!(
            "note: no MindRune library at {}; mapping with the built-in places and LostHQ pages only",
            library::database(home)
        );
        mindrune_core::avatars::vocabulary::Vocabulary::builtin()
    };
    let mut out = std::io::stdout().lock();
    for tag in vocabulary.map(&text) {
        writeln!(out, "{tag}")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `1350` → `1,350`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize) -> Vec<Result<Vec<u8>, ()>> {
        let mut reader = std::io::BufReader::with_capacity(7, input);
        let mut line = Vec::new();
        let mut found = Vec::new();
        loop {
            match read_capped_line(&mut reader, &mut line, cap).unwrap() {
                LineRead::End => return found,
                LineRead::Line => found.push(Ok(line.clone())),
                LineRead::TooLong => {
                    found.push(Err(()));
                    skip_line(&mut reader).unwrap();
                }
            }
        }
    }

    #[test]
    fn a_line_over_the_cap_is_refused_and_the_next_line_is_read_whole() {
        let input = b"short\nthis one is far too long\nok\nlast";
        assert_eq!(
            lines(input, 10),
            vec![
                Ok(b"short".to_vec()),
                Err(()),
                Ok(b"ok".to_vec()),
                Ok(b"last".to_vec())
            ]
        );
    }

    #[test]
    fn a_line_of_exactly_the_cap_is_kept() {
        assert_eq!(lines(b"0123456789\n", 10), vec![Ok(b"0123456789".to_vec())]);
        assert_eq!(lines(b"0123456789a\n", 10), vec![Err(())]);
    }

    #[test]
    fn a_never_ending_line_is_refused_after_reading_only_the_cap() {
        // `record /dev/zero`: the refusal comes after the cap, not at the line's end.
        let mut zeros = std::io::BufReader::new(std::io::repeat(0));
        let mut line = Vec::new();
        assert_eq!(
            read_capped_line(&mut zeros, &mut line, 1 << 16).unwrap(),
            LineRead::TooLong
        );
        assert!(line.capacity() <= 1 << 17, "{}", line.capacity());
    }

    proptest::proptest! {
        #[test]
        fn under_the_cap_the_lines_are_what_split_finds(
            input in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'\n']), 0..200),
            cap in 1usize..40,
        ) {
            let expected: Vec<Result<Vec<u8>, ()>> = input
                .split(|&b| b == b'\n')
                .enumerate()
                // split gives an empty last piece after a final newline, which is no line.
                .filter(|(i, piece)| !(piece.is_empty() && *i == input.split(|&b| b == b'\n').count() - 1))
                .map(|(_, piece)| if piece.len() > cap { Err(()) } else { Ok(piece.to_vec()) })
                .collect();
            proptest::prop_assert_eq!(lines(&input, cap), expected);
        }
    }
}
