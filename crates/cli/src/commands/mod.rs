//! The subcommands. Each reads its input, calls the engine or the store, and renders.

use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_core::SharingBar;
use mindrune_core::is_valid_name;
use mindrune_core::secret_digest;
use mindrune_engine::now_millis;
use mindrune_engine::{Boundary, MirrorPolicy, TurnError};
use mindrune_engine::{FamilyError, default_dir, empty_mirror, refresh_mirror};
use mindrune_store::Store;

use crate::library::{self, resolve_owner};
use crate::render;

/// Exit status for input that was (partly) rejected: the rest was still recorded.
const EXIT_BAD_INPUT: u8 = 2;

mod hook_commands;
pub(crate) mod hook_failures;
mod record;
mod tags;

use hook_commands::session_instructions;
pub(crate) use hook_commands::{hook_claude_code, hook_claude_code_workspace};
pub(crate) use record::record;
pub(crate) use tags::{tags_build, tags_map};

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

/// A fresh owner key: `mrk_` and 24 random bytes from the operating system, hex-encoded (48
/// digits: the shape the scrubber knows, so the key is scrubbed wherever it appears).
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
    let key = new_owner_key()?;
    let owner = store.create_owner(name, &secret_digest(&key), now_millis())?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Added owner `{}`.", owner.name)?;
    print_new_key(&mut out, &owner.name, &key)?;
    Ok(ExitCode::SUCCESS)
}

/// Issues a new key for an owner whose key is lost: only its digest is stored, so the old key
/// cannot be shown, only replaced; it stops opening the dashboard at once.
pub(crate) fn owner_key(home: &Path, name: &str) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let owner = resolve_owner(&*store, Some(name))?;
    let key = new_owner_key()?;
    store.replace_owner_key(owner.id, &secret_digest(&key))?;
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Issued a new key for owner `{}`; the old key no longer works.",
        owner.name
    )?;
    print_new_key(&mut out, &owner.name, &key)?;
    Ok(ExitCode::SUCCESS)
}

fn print_new_key(out: &mut impl std::io::Write, owner: &str, key: &str) -> anyhow::Result<()> {
    writeln!(
        out,
        "Its key (keep it secret; MindRune keeps only its digest, so it cannot be shown again — \
         if it is lost, `mindrune owner key {owner}` issues a new one): {key}"
    )?;
    Ok(())
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
    if let Some(why) = mindrune_engine::system_folder(&workspace) {
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
                    "mirror": default_dir(agent),
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

/// The clock a view reads scores at: `--as-of TIME` (RFC 3339), else now.
pub(crate) fn clock(as_of: Option<&str>) -> anyhow::Result<i64> {
    let Some(text) = as_of else {
        return Ok(now_millis());
    };
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .with_context(|| {
            format!(
                "`--as-of {text}` is not a time: write it as RFC 3339, like 2026-12-01T12:00:00Z"
            )
        })?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000)
        .with_context(|| format!("`--as-of {text}` is out of range"))
}

/// The family a view covers, and the one agent it is narrowed to: `--agent` names both (and
/// must be in `--owner`'s family when both are given), else `--owner` or the library's only
/// owner.
fn family_scope(
    store: &dyn Store,
    agent: Option<&str>,
    owner: Option<&str>,
) -> anyhow::Result<(mindrune_store::Owner, Option<mindrune_store::Agent>)> {
    match agent {
        Some(name) => {
            let agent = store.agent_by_name(name)?.with_context(|| {
                format!("no agent named `{name}`\n\nhint: `mindrune agent list` shows the agents")
            })?;
            if let Some(owner_name) = owner
                && store.owner(agent.owner)?.name != owner_name
            {
                bail!("agent `{name}` is not in `{owner_name}`'s family");
            }
            Ok((store.owner(agent.owner)?, Some(agent)))
        }
        None => Ok((resolve_owner(store, owner)?, None)),
    }
}

pub(crate) fn skills(
    home: &Path,
    agent: Option<&str>,
    owner: Option<&str>,
    json: bool,
    now: i64,
) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let (owner, agent) = family_scope(&*store, agent, owner)?;
    let entries =
        mindrune_engine::skills_as_of(&*store, owner.id, agent.as_ref().map(|a| a.id), now)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &render::skills_json(&entries))?;
        writeln!(out)?;
    } else {
        render::skills_table(&mut out, &entries)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mindrune attention`: what needs the owner's attention, most harmful first.
pub(crate) fn attention(
    home: &Path,
    agent: Option<&str>,
    owner: Option<&str>,
    json: bool,
    now: i64,
) -> anyhow::Result<ExitCode> {
    let store = library::open(home)?;
    let (owner, agent) = family_scope(&*store, agent, owner)?;
    // The runners' last requests as a server on this library saved them, if one ran.
    let runners = match store.server_health()? {
        Some((_, body)) => {
            let seen = mindrune_server::Health::new(now);
            match seen.restore(&body) {
                Ok(()) => seen.runners_seen(owner.id),
                Err(err) => {
                    eprintln!(
                        "note: the runners' last requests the server saved cannot be read \
                         ({err}); stopped runners are left out. `mindrune serve` saves them \
                         again within 5 s of running."
                    );
                    Vec::new()
                }
            }
        }
        None => Vec::new(),
    };
    let items = mindrune_engine::needs_attention(
        &*store,
        owner.id,
        agent.as_ref().map(|a| a.id),
        now,
        &runners,
    )?;
    let mut out = std::io::stdout().lock();
    if json {
        let items: Vec<serde_json::Value> = items
            .iter()
            .map(|item| {
                let mut value = serde_json::to_value(item).unwrap_or_default();
                value["next_step"] = item.next_step().into();
                value
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &items)?;
        writeln!(out)?;
    } else {
        render::attention(&mut out, &items, now)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn skill_show(
    home: &Path,
    skill: &str,
    json: bool,
    now: i64,
) -> anyhow::Result<ExitCode> {
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
    let versions: Vec<_> = store
        .versions(agent.owner, found.id)?
        .into_iter()
        .map(|v| v.as_of(now))
        .collect();
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
    // Runs whose gains are unknown (not zero), as the script page says them.
    let unmeasured: Vec<mindrune_engine::UnmeasuredRuns> = store
        .unmeasured_runs(
            agent.owner,
            mindrune_store::UnmeasuredScope::Skill(found.id),
        )?
        .into_iter()
        .map(|(reason, runs)| mindrune_engine::UnmeasuredRuns { reason, runs })
        .collect();
    let mut out = std::io::stdout().lock();
    if json {
        let mut shown = render::skill_json(&found, &versions, &parents, &failures, bar);
        shown["unmeasured"] = serde_json::to_value(&unmeasured)?;
        serde_json::to_writer_pretty(&mut out, &shown)?;
        writeln!(out)?;
    } else {
        render::skill_detail(&mut out, &found, &versions, &parents, &failures, bar)?;
        for line in &unmeasured {
            writeln!(
                out,
                "  {}: what they gained is unknown, not zero",
                line.summary()
            )?;
        }
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
            empty_mirror(dir)?;
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
    let report = match mindrune_engine::turn_boundary(&*store, agent, boundary, policy, out_dir) {
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
                    .map(|a| default_dir(&a)),
            };
            let kept = dir.map_or_else(
                || "family-skills/".to_string(),
                |dir| dir.display().to_string(),
            );
            let disk = if matches!(&err, TurnError::Mirror(FamilyError::Mirror(_))) {
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
                    .map(|a| default_dir(&a)),
            };
            let err = anyhow::Error::new(err);
            return Err(match dir {
                Some(dir) => match empty_mirror(&dir) {
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
    let outcome = refresh_mirror(&*store, &agent, out_dir)?;
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
    let wrap = mindrune_engine::wrap_up(&*store, agent)?;
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(&mut out, &wrap)?;
        writeln!(out)?;
    } else {
        render::wrap_up(&mut out, &wrap)?;
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
