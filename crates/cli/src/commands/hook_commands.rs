//! `mindrune hook claude-code` and its workspace form: what Claude Code's hooks run.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use mindrune_core::SharingBar;
use mindrune_engine::mirror_relative;
use mindrune_engine::{
    AvatarHook, HookAction, Payload, WorkspaceAction, agent_name, handle_hook, handle_workspace,
};
use mindrune_engine::{Boundary, MirrorPolicy, turn_boundary};
use mindrune_engine::{Recorder, now_millis};
use mindrune_engine::{deny_answer, prompt_context, session_context, session_context_warned};
use mindrune_store::Store;

use super::{find_agent, hook_failures};
use crate::library;
use crate::render;

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

pub(crate) fn hook_claude_code(
    home: &Path,
    agent: Option<&str>,
    relay: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    // A hook must never block the agent: bad input or a missing library is reported on
    // stderr with exit status 1 (Claude Code shows it and carries on), never 2 (which blocks).
    // Nothing goes to stdout but a `SessionStart`'s context: Claude Code reads a hook's stdout.
    let mut input = String::new();
    let outcome = (|| -> anyhow::Result<()> {
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the hook input")?;
        let agent = agent_name(agent)?;
        let payload = Payload::parse(&input)?;
        let project = claude_project_dir();
        // The guard keeps the library and the relay folder out of every host call's reach, as
        // well as family-skills/ and the siblings' folders.
        let mut kept: Vec<PathBuf> = vec![from_project_dir(home)];
        if let Some(relay) = relay {
            kept.push(from_project_dir(relay));
        }
        let kept: Vec<&Path> = kept.iter().map(PathBuf::as_path).collect();
        // The notes of started calls: in the relay folder in relay mode, beside the library
        // otherwise.
        let home = from_project_dir(home);
        let spool = match relay {
            Some(relay) => from_project_dir(relay).join(mindrune_server::runner::spool::PENDING),
            None => hook_failures::notes_dir(&home),
        };
        let action = handle_hook(
            &payload,
            &AvatarHook {
                agent,
                spool: &spool,
                project: project.as_deref(),
                kept: &kept,
            },
        )?;
        if let Some(relay) = relay {
            // Relay mode: the runner beside the sandbox delivers to the server, so the hook
            // only writes a file and never waits for the network or needs a library.
            let relay = from_project_dir(relay);
            match action {
                HookAction::Deny(reason) => return print_hook_answer(&deny_answer(&reason)),
                HookAction::Record(event) => {
                    // The spool is on disk: the bot's own secrets (its bot.env) are scrubbed
                    // before the event touches it, as the runner scrubs what it sends.
                    let event = scrubbed_for_relay(*event, agent)?;
                    mindrune_server::runner::spool::relay_event(&relay, &event)?;
                }
                HookAction::TurnEnded { .. } => {
                    mindrune_server::runner::spool::relay_turn_end(&relay)?;
                }
                HookAction::SessionStarted => {
                    // The agent reads family-skills/ first: the runner brings it up to date from
                    // the server before the session goes on (a sibling may have shared or
                    // un-shared since the runner last wrote it).
                    let fresh = wait_for_fresh_mirror(&relay)?;
                    let kept = relay.join(mindrune_server::runner::spool::INSTRUCTIONS);
                    let mut text = std::fs::read_to_string(&kept).unwrap_or_else(|_| {
                        format!(
                            "MindRune's runner for `{agent}` has not started yet (no {}), so its instructions are not here; start it (`mindrune runner --agent {agent} …`), then start this session again.",
                            kept.display()
                        )
                    });
                    if !fresh {
                        let stale = format!(
                            "MindRune's runner for `{agent}` did not bring family-skills/ up to date within {} s, so it may show what siblings shared earlier; is `mindrune runner --agent {agent}` running?",
                            FRESH_MIRROR_WAIT.as_secs()
                        );
                        eprintln!("mindrune hook: {stale}");
                        text = format!("{text}\n\n{stale}");
                        return print_hook_answer(&session_context_warned(&text, &stale));
                    }
                    print_hook_answer(&session_context(&text))?;
                }
                HookAction::Started | HookAction::Ignored(_) => {}
            }
            return Ok(());
        }
        match action {
            HookAction::Deny(reason) => print_hook_answer(&deny_answer(&reason))?,
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
                let report = turn_boundary(
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
                    turn_boundary(&*store, agent, Boundary::Start, MirrorPolicy::Now, None)?;
                let mut text = Vec::new();
                render::turn_report(&mut text, &report, true)?;
                eprint!("{}", String::from_utf8_lossy(&text));
                print_hook_answer(&session_context(&session_instructions(&*store, agent)?))?;
            }
            HookAction::Started | HookAction::Ignored(_) => {}
        }
        Ok(())
    })();
    Ok(match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let notes = match relay {
                Some(relay) => from_project_dir(relay),
                None => hook_failures::notes_dir(&from_project_dir(home)),
            };
            hook_failures::hook_failed(&input, &err, &notes)
        }
    })
}

/// How long a relaying `SessionStart` waits for the runner to bring `family-skills/` up to
/// date: its poll is 200 ms and one mirror request a few more, so a runner that is there
/// answers well within it; a runner that is not costs the session this once, and is said.
const FRESH_MIRROR_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Asks the runner of the relay folder for a fresh `family-skills/` and waits for it; whether it
/// came in time.
fn wait_for_fresh_mirror(relay: &Path) -> anyhow::Result<bool> {
    use mindrune_server::runner::spool;
    let stamp = spool::ask_fresh_mirror(relay, now_millis()).with_context(|| {
        format!(
            "cannot ask the runner for a fresh family-skills/ in {}",
            relay.display()
        )
    })?;
    let deadline = std::time::Instant::now() + FRESH_MIRROR_WAIT;
    while std::time::Instant::now() < deadline {
        if spool::fresh_mirror_done(relay, &stamp) {
            return Ok(true);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(spool::fresh_mirror_done(relay, &stamp))
}

/// Claude Code's project folder, which it gives every hook.
fn claude_project_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_PROJECT_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
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
    let mut input = String::new();
    let outcome = (|| -> anyhow::Result<()> {
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the hook input")?;
        let workspace = from_project_dir(workspace);
        let project = claude_project_dir();
        let payload = Payload::parse(&input)?;
        match handle_workspace(&payload, &workspace, project.as_deref())? {
            WorkspaceAction::Deny(reason) => {
                print_hook_answer(&deny_answer(&reason))?;
            }
            WorkspaceAction::Context(text) => {
                print_hook_answer(&prompt_context(&text))?;
            }
            WorkspaceAction::Observed(Some(id)) => {
                // stderr: Claude Code shows it in its verbose mode; stdout would be context.
                eprintln!("mindrune: the observer left suggestion #{id} for the assistant");
            }
            WorkspaceAction::Observed(None)
            | WorkspaceAction::ReadNoted(_)
            | WorkspaceAction::Allow
            | WorkspaceAction::Ignored(_) => {}
        }
        Ok(())
    })();
    Ok(match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let notes = from_project_dir(workspace).join(".mindrune").join("hooks");
            hook_failures::hook_failed(&input, &err, &notes)
        }
    })
}

/// An event with the bot's secrets (`bots/<agent>/bot.env` of the checkout Claude Code names in
/// `CLAUDE_PROJECT_DIR`, else of the folder the call started in) and credential shapes scrubbed
/// from its command, code and output. A bot.env that is there but cannot be read is an error:
/// the call is not written to the spool, since its password could not be scrubbed.
fn scrubbed_for_relay(
    mut event: mindrune_core::Event,
    agent: &str,
) -> anyhow::Result<mindrune_core::Event> {
    use mindrune_core::Call;
    let workspace = claude_project_dir().or_else(|| match &event.call {
        Call::Shell { cwd: Some(cwd), .. } => Some(PathBuf::from(cwd)),
        _ => None,
    });
    let scrubber = match &workspace {
        Some(workspace) => mindrune_server::runner::AgentFolder { workspace, agent }.scrubber()?,
        None => mindrune_core::Scrubber::new(&[]),
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
    for code in event.code_at_start.values_mut() {
        scrub(code);
    }
    Ok(event)
}

/// What an agent is told at its start: `mindrune instructions`' text.
pub(super) fn session_instructions(store: &dyn Store, agent: &str) -> anyhow::Result<String> {
    let agent = find_agent(store, agent)?;
    let owner = store.owner(agent.owner)?;
    Ok(mindrune_core::instructions_text(
        &agent.name,
        SharingBar::for_family(owner.eager_sharing),
        owner.eager_sharing,
        mirror_relative(&agent),
    ))
}
