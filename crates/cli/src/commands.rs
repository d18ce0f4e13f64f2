//! The subcommands. Each reads its input, calls the engine or the store, and renders.

use std::io::{BufRead as _, Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_core::header::is_valid_name;
use mindrune_core::sharing::SharingBar;
use mindrune_engine::family;
use mindrune_engine::hook::{self, HookAction};
use mindrune_engine::turn::{self, Boundary, MirrorPolicy};
use mindrune_engine::{IngestError, Recorder, now_millis};
use mindrune_store::{SqliteStore, Store};

use crate::library::{self, resolve_owner};
use crate::render;

/// Exit status for input that was (partly) rejected: the rest was still recorded.
const EXIT_BAD_INPUT: u8 = 2;

pub fn init(home: &Path) -> anyhow::Result<ExitCode> {
    let database = library::database(home);
    let mut out = std::io::stdout().lock();
    if let library::Database::Postgres(_) = database {
        let store = database.open()?;
        let owners = store.owners()?.len();
        writeln!(
            out,
            "The MindRune library in PostgreSQL at {database} is ready ({owners} owner{}).",
            if owners == 1 { "" } else { "s" }
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let path = library::database_path(home);
    let existed = path.exists();
    std::fs::create_dir_all(home).with_context(|| format!("cannot create {}", home.display()))?;
    SqliteStore::open(&path)
        .with_context(|| format!("cannot create the library at {}", path.display()))?;
    if existed {
        writeln!(
            out,
            "The MindRune library in {} is ready (it existed already; nothing was changed).",
            home.display()
        )?;
    } else {
        writeln!(out, "Made an empty MindRune library in {}.", home.display())?;
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

pub fn owner_add(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
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

pub fn owner_list(home: &Path) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let mut out = std::io::stdout().lock();
    for owner in store.owners()? {
        let agents = store.agents(owner.id)?;
        writeln!(out, "{}  ({} agents)", owner.name, agents.len())?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn agent_add(
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

pub fn agent_list(home: &Path, owner: Option<&str>) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let owner = resolve_owner(&*store, owner)?;
    let mut out = std::io::stdout().lock();
    for agent in store.agents(owner.id)? {
        writeln!(out, "{}  {}", agent.name, agent.workspace)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn record(home: &Path, file: Option<&Path>, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let recorder = Recorder::new(&*store);
    let (label, reader): (String, Box<dyn std::io::BufRead>) = match file {
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
    let mut summary = render::RecordSummary::default();
    let mut out = std::io::stdout().lock();
    let mut err = std::io::stderr().lock();
    for (index, line) in reader.split(b'\n').enumerate() {
        let line_no = index + 1;
        let bytes = line.with_context(|| format!("cannot read {label}"))?;
        let result = match std::str::from_utf8(&bytes) {
            Err(_) => Err(IngestError::Invalid {
                field: None,
                message: "the line is not UTF-8 text".into(),
            }),
            Ok(text) if text.trim().is_empty() => continue,
            Ok(text) => recorder.record_line(text),
        };
        match result {
            Ok(recorded) => {
                for warning in &recorded.warnings {
                    writeln!(err, "{label}:{line_no}: warning: {warning}")?;
                }
                if json {
                    serde_json::to_writer(
                        &mut out,
                        &serde_json::json!({"line": line_no, "recorded": recorded}),
                    )?;
                    writeln!(out)?;
                }
                summary.add(&recorded);
            }
            Err(IngestError::Store(store_error)) => {
                // The store failing is not the line's fault: stop, so nothing is silently lost.
                return Err(anyhow::Error::new(store_error).context(format!(
                    "{label}:{line_no}: cannot record into the library at {}",
                    library::database(home)
                )));
            }
            Err(error) => {
                summary.rejected += 1;
                writeln!(
                    err,
                    "{label}:{line_no}: error: {error}; nothing of this line was recorded"
                )?;
                if json {
                    serde_json::to_writer(
                        &mut out,
                        &serde_json::json!({"line": line_no, "error": error.to_string()}),
                    )?;
                    writeln!(out)?;
                }
            }
        }
    }
    if !json {
        render::record_summary(&mut out, &summary)?;
    }
    Ok(if summary.rejected > 0 {
        ExitCode::from(EXIT_BAD_INPUT)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn hook_claude_code(
    home: &Path,
    agent: &str,
    relay: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    // A hook must never block the agent: bad input or a missing library is reported on
    // stderr with exit status 1 (Claude Code shows it and carries on), never 2 (which blocks).
    let outcome = (|| -> anyhow::Result<()> {
        let mut input = String::new();
        std::io::stdin()
            .read_to_string(&mut input)
            .context("cannot read the hook input")?;
        if let Some(relay) = relay {
            // Relay mode: the runner beside the sandbox delivers to the server, so the hook
            // only writes a file and never waits for the network or needs a library. Its notes
            // of started calls live in the relay folder too.
            let spool = relay.join(mindrune_server::runner::spool::PENDING);
            match hook::handle(&input, agent, &spool)? {
                HookAction::Record(event) => {
                    mindrune_server::runner::spool::relay_event(relay, &event)?;
                }
                HookAction::TurnEnded { .. } => {
                    mindrune_server::runner::spool::relay_turn_end(relay)?;
                }
                HookAction::Started | HookAction::Ignored(_) => {}
            }
            return Ok(());
        }
        let spool = home.join("hooks").join("claude-code");
        match hook::handle(&input, agent, &spool)? {
            HookAction::Record(event) => {
                let store = library::open(home)?;
                let recorded = Recorder::new(&*store).record(&event)?;
                for warning in recorded.warnings {
                    eprintln!("mindrune: {warning}");
                }
            }
            HookAction::TurnEnded { .. } => {
                // Claude Code's Stop is the agent's turn boundary: scan, share, un-share,
                // lessons, and the mirror when it is due. The report goes to stderr, which
                // Claude Code shows only in its verbose mode.
                let store = library::open(home)?;
                let report = turn::turn_boundary(
                    &*store,
                    agent,
                    Boundary::TurnEnd,
                    MirrorPolicy::WhenDue,
                    None,
                )?;
                let mut text = Vec::new();
                render::turn_report(&mut text, &report, false)?;
                eprint!("{}", String::from_utf8_lossy(&text));
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

pub fn skills(
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

pub fn skill_show(home: &Path, skill: &str, json: bool) -> anyhow::Result<ExitCode> {
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

pub fn owner_eager(home: &Path, owner: &str, on: bool) -> anyhow::Result<ExitCode> {
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

pub fn agent_remove(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
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
pub fn turn_boundary(
    home: &Path,
    agent: &str,
    boundary: Boundary,
    out_dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let store = match library::open(home) {
        Ok(store) => store,
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

pub fn mirror(
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

pub fn instructions(home: &Path, agent: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let agent = find_agent(&*store, agent)?;
    let eager = store.owner(agent.owner)?.eager_sharing;
    let text = mindrune_core::instructions::text(&agent.name, SharingBar::for_family(eager), eager);
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

pub fn wrapup(home: &Path, agent: &str, json: bool) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let wrap = mindrune_engine::wrapup::wrap_up(&*store, agent)?;
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
pub fn tags_build(home: &Path, wiki: &Path, json: bool) -> anyhow::Result<ExitCode> {
    use mindrune_engine::tags;

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
        for kind in mindrune_core::topics::TOPIC_KINDS {
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
pub fn tags_map(home: &Path, text: &[String]) -> anyhow::Result<ExitCode> {
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
        mindrune_engine::tags::vocabulary(&*library::open(home)?)?
    } else {
        eprintln!(
            "note: no MindRune library at {}; mapping with the built-in places and LostHQ pages only",
            home.display()
        );
        mindrune_core::vocabulary::Vocabulary::builtin()
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
