//! `mindrune setup rs-sdk PATH --owner NAME [--dry-run]`: wires a real rs-sdk checkout in one
//! command. Every bot of its `bots/` becomes an agent of the owner (the checkout is each one's
//! workspace), MindRune's Claude Code hooks are merged into its `.claude/settings.json`, the
//! topic-tag vocabulary is built from its `wiki/`, and the commands that start the server and
//! one runner per bot are printed.
//!
//! Everything is checked before anything is written: a name clash or a settings file that is
//! not JSON changes nothing. Running it again changes nothing either: agents already
//! registered, hooks already installed and an unchanged wiki are left as they are.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use mindrune_core::header::is_valid_name;
use mindrune_core::vocabulary::{Entry, Vocabulary};
use mindrune_engine::now_millis;
use mindrune_engine::tags::{self, TagsError, WikiRead};
use mindrune_store::Store;

use crate::commands::thousands;
use crate::library;

/// The start of the command every hook runs. One settings file serves every bot of the
/// checkout: whoever starts the bot's Claude Code sets `MINDRUNE_AGENT` to the bot's name (the
/// hook reads it from its environment).
const HOOK_COMMAND_START: &str = "mindrune hook claude-code";

/// The command the hooks run for the library in `library` (absolute). Claude Code runs a hook
/// in its current folder, which moves with the agent's `cd`, so the library is named from the
/// project's folder (`$CLAUDE_PROJECT_DIR`, which Claude Code sets) when it lies inside the
/// checkout, and absolutely otherwise; never relative to wherever the hook happens to run.
fn hook_command(checkout: &Path, library: &Path) -> String {
    let home = match library.strip_prefix(checkout) {
        Ok(inside) if inside.as_os_str().is_empty() => "\"$CLAUDE_PROJECT_DIR\"".to_string(),
        Ok(inside) => format!(
            "\"$CLAUDE_PROJECT_DIR\"/{}",
            shell_word(&inside.display().to_string())
        ),
        Err(_) => shell_word(&library.display().to_string()),
    };
    format!("{HOOK_COMMAND_START} --home {home}")
}

/// The tool calls the hooks watch: shell commands and rs-sdk's MCP `execute_code`.
const TOOL_MATCHER: &str = "Bash|mcp__.*__execute_code";

/// The Claude Code hook events MindRune listens to, and each one's matcher: the three tool
/// events watch runs; `Stop` and `StopFailure` (a turn an API error ended) are the turn
/// boundary; `SessionStart` re-checks the headers, writes family-skills/ and hands the agent
/// its instructions (a `SessionStart` hook's output becomes the agent's context).
const HOOK_EVENTS: [(&str, Option<&str>); 6] = [
    ("PreToolUse", Some(TOOL_MATCHER)),
    ("PostToolUse", Some(TOOL_MATCHER)),
    ("PostToolUseFailure", Some(TOOL_MATCHER)),
    ("Stop", None),
    ("StopFailure", None),
    ("SessionStart", None),
];

/// Where a bot of a checkout finds its family's skills, relative to the checkout. Every bot of
/// one rs-sdk checkout shares the checkout as its workspace, so a single `family-skills/` at its
/// root would hold whichever bot's view was written last; each bot gets its own, in its own
/// folder, where its agent already works (the scan of `bots/<bot>/` reads only the files
/// directly in it, so the mirror is never taken for the bot's scripts).
fn bot_mirror(bot: &str) -> String {
    format!("bots/{bot}/{}", mindrune_engine::family::MIRROR_DIR)
}

/// Lines of the checkout's `.git/info/exclude` that keep what MindRune writes out of the user's
/// `git status`: the bots' mirrors and, when it is inside the checkout, the library.
struct ExcludePlan {
    path: PathBuf,
    old: String,
    missing: Vec<String>,
}

impl ExcludePlan {
    fn make(checkout: &Path, library: &Path) -> anyhow::Result<Option<ExcludePlan>> {
        let git = checkout.join(".git");
        // A worktree's `.git` is a file pointing elsewhere, and a checkout may be no git
        // repository at all: then there is no exclude file to keep.
        if !std::fs::symlink_metadata(&git).is_ok_and(|m| m.is_dir()) {
            return Ok(None);
        }
        let path = git.join("info").join("exclude");
        let old = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
        };
        let mut wanted = vec![format!("/bots/*/{}/", mindrune_engine::family::MIRROR_DIR)];
        if let Ok(inside) = library.strip_prefix(checkout)
            && !inside.as_os_str().is_empty()
        {
            wanted.push(format!("/{}/", inside.display()));
        }
        let missing: Vec<String> = wanted
            .into_iter()
            .filter(|line| !old.lines().any(|have| have.trim() == line))
            .collect();
        Ok((!missing.is_empty()).then_some(ExcludePlan { path, old, missing }))
    }

    fn apply(&self) -> anyhow::Result<()> {
        let mut text = self.old.clone();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("# MindRune: each bot's family-skills/ and the library\n");
        for line in &self.missing {
            text.push_str(line);
            text.push('\n');
        }
        if let Some(folder) = self.path.parent() {
            std::fs::create_dir_all(folder)
                .with_context(|| format!("cannot create {}", folder.display()))?;
        }
        write_atomically(&self.path, text.as_bytes())
    }
}

/// Where `mindrune serve` listens by default.
const SERVER_URL: &str = "http://127.0.0.1:7878";

/// `mindrune setup rs-sdk PATH --owner NAME [--dry-run]`.
pub fn rs_sdk(home: &Path, path: &Path, owner: &str, dry_run: bool) -> anyhow::Result<ExitCode> {
    let plan = Plan::make(home, path, owner)?;
    let mut out = std::io::stdout().lock();
    if dry_run {
        writeln!(out, "Dry run: nothing is changed.\n")?;
        plan.report(&mut out, None, true)?;
        return Ok(ExitCode::SUCCESS);
    }
    let done = plan.apply()?;
    plan.report(&mut out, Some(&done), false)?;
    Ok(ExitCode::SUCCESS)
}

/// Everything the setup will do, found out before anything is written.
struct Plan {
    home: PathBuf,
    /// The library's folder, absolute.
    library: PathBuf,
    /// The checkout, absolute and canonical: every bot's workspace.
    checkout: PathBuf,
    workspace: String,
    /// The library, when it exists already.
    store: Option<Box<dyn Store>>,
    owner: String,
    owner_exists: bool,
    /// Bots by name, and whether each is registered already.
    bots: Vec<(String, bool)>,
    /// Entries of `bots/` that are no bot, each naming why.
    skipped: Vec<String>,
    settings: SettingsPlan,
    /// What `.git/info/exclude` lacks (`None`: nothing, or no git folder).
    exclude: Option<ExcludePlan>,
    vocabulary: VocabularyPlan,
}

struct SettingsPlan {
    path: PathBuf,
    /// The file's text now (`None`: there is no file).
    old: Option<String>,
    /// The text with MindRune's hooks (`None`: they are all there already).
    new: Option<String>,
    /// The events a hook is added to.
    added: Vec<&'static str>,
    /// The events whose MindRune hook ran an older command, rewritten.
    updated: Vec<&'static str>,
}

enum VocabularyPlan {
    /// The checkout has no `wiki/`.
    NoWiki,
    /// It has one, but nothing to build from; the note says why.
    Unusable(String),
    /// The wiki gives exactly the vocabulary the library has.
    Unchanged { read: WikiRead, tags: usize },
    /// Writing it changes the library's vocabulary.
    Write {
        read: WikiRead,
        tags: usize,
        added: usize,
        removed: usize,
    },
}

/// What applying the plan did, for the report.
struct Done {
    owner_key: Option<String>,
    vocabulary: Option<tags::Written>,
}

impl Plan {
    fn make(home: &Path, path: &Path, owner: &str) -> anyhow::Result<Plan> {
        if !is_valid_name(owner) {
            bail!(
                "`{owner}` is not a valid owner name: use letters, digits, `-`, `_` and `.`, at most 64"
            );
        }
        let checkout = path.canonicalize().with_context(|| {
            format!(
                "{} does not exist\n\nhint: give the folder of an rs-sdk checkout (the one with bots/ and claude.md)",
                path.display()
            )
        })?;
        if !checkout.is_dir() {
            bail!(
                "{} is not a folder\n\nhint: give the folder of an rs-sdk checkout (the one with bots/ and claude.md)",
                checkout.display()
            );
        }
        let workspace = checkout
            .to_str()
            .with_context(|| format!("the path {} is not UTF-8", checkout.display()))?
            .to_string();
        let (names, skipped) = scan_bots(&checkout)?;

        let store = if library::exists(home) {
            Some(library::open(home)?)
        } else {
            None
        };
        let existing_owner = match &store {
            Some(store) => store.owner_by_name(owner)?,
            None => None,
        };
        let mut bots = Vec::new();
        let mut clashes = Vec::new();
        for name in names {
            let registered = match &store {
                Some(store) => store
                    .agent_by_name(&name)?
                    .map(|agent| Ok::<_, anyhow::Error>((store.owner(agent.owner)?, agent)))
                    .transpose()?,
                None => None,
            };
            match registered {
                None => bots.push((name, false)),
                Some((of, agent)) if existing_owner.as_ref().map(|o| o.id) != Some(of.id) => {
                    clashes.push(format!(
                        "`{name}` is an agent of `{}` already (workspace {})",
                        of.name, agent.workspace
                    ));
                }
                Some((_, agent)) if agent.workspace != workspace => {
                    clashes.push(format!(
                        "`{name}` is an agent of `{owner}` already, with another workspace: {}",
                        agent.workspace
                    ));
                }
                Some(_) => bots.push((name, true)),
            }
        }
        if !clashes.is_empty() {
            bail!(
                "{} of {}/bots/ {} registered elsewhere, so nothing was changed:\n  {}\n\nhint: agent names are unique in the library; rename the bot's folder, or, if it is the same bot moved here, `mindrune agent remove NAME` first (its private scripts' history goes with it)",
                if clashes.len() == 1 { "a bot" } else { "bots" },
                checkout.display(),
                if clashes.len() == 1 { "is" } else { "are" },
                clashes.join("\n  ")
            );
        }

        // The library as every printed command and hook names it: absolute, so it is the same
        // library from whatever folder they run in.
        let library = home
            .canonicalize()
            .or_else(|_| std::path::absolute(home))
            .unwrap_or_else(|_| home.to_path_buf());
        let settings = plan_settings(&checkout, &library)?;
        let exclude = ExcludePlan::make(&checkout, &library)?;
        let vocabulary = plan_vocabulary(&checkout, store.as_deref())?;
        Ok(Plan {
            home: home.to_path_buf(),
            library,
            checkout,
            workspace,
            owner_exists: existing_owner.is_some(),
            store,
            owner: owner.to_string(),
            bots,
            skipped,
            settings,
            exclude,
            vocabulary,
        })
    }

    /// Writes what the plan found missing: the library, the owner, the agents, the settings
    /// file and the vocabulary, in that order.
    fn apply(&self) -> anyhow::Result<Done> {
        let created;
        let store: &dyn Store = match &self.store {
            Some(store) => &**store,
            None => {
                std::fs::create_dir_all(&self.home)
                    .with_context(|| format!("cannot create {}", self.home.display()))?;
                created = library::database(&self.home).open()?;
                &*created
            }
        };
        let mut done = Done {
            owner_key: None,
            vocabulary: None,
        };
        let owner = match store.owner_by_name(&self.owner)? {
            Some(owner) => owner,
            None => {
                let owner = store.create_owner(
                    &self.owner,
                    &crate::commands::new_owner_key()?,
                    now_millis(),
                )?;
                done.owner_key = Some(owner.api_key.clone());
                owner
            }
        };
        for (name, registered) in &self.bots {
            let agent = if *registered {
                store
                    .agent_by_name(name)?
                    .with_context(|| format!("agent `{name}` vanished during the setup"))?
            } else {
                store
                    .create_agent(owner.id, name, &self.workspace, now_millis())
                    .with_context(|| format!("cannot register agent `{name}`"))?
            };
            let mirror = bot_mirror(name);
            if agent.mirror.as_deref() != Some(mirror.as_str()) {
                store.set_agent_mirror(owner.id, agent.id, Some(&mirror))?;
            }
        }
        if let Some(exclude) = &self.exclude {
            exclude.apply()?;
        }
        if let Some(text) = &self.settings.new {
            write_atomically(&self.settings.path, text.as_bytes())?;
        }
        if let VocabularyPlan::Write { read, .. } = &self.vocabulary {
            done.vocabulary = Some(tags::write_vocabulary(store, read, now_millis())?);
        }
        Ok(done)
    }

    /// What was done (or, in a dry run, would be), then the commands that start it all.
    fn report(
        &self,
        out: &mut impl std::io::Write,
        done: Option<&Done>,
        dry: bool,
    ) -> anyhow::Result<()> {
        let mut changed = false;
        let home = self.home.display();
        if self.store.is_some() {
            writeln!(out, "Using the MindRune library in {home}.")?;
        } else {
            changed = true;
            let verb = if dry { "Would make" } else { "Made" };
            writeln!(out, "{verb} an empty MindRune library in {home}.")?;
        }

        let owner = &self.owner;
        match done {
            None if !self.owner_exists => {
                changed = true;
                writeln!(out, "Would add owner `{owner}`.")?;
            }
            Some(Done {
                owner_key: Some(key),
                ..
            }) => {
                changed = true;
                writeln!(
                    out,
                    "Added owner `{owner}`. Its key (keep it secret; MindRune scrubs it from everything it saves): {key}"
                )?;
            }
            _ => writeln!(out, "Owner `{owner}` exists already.")?,
        }

        let workspace = &self.workspace;
        for (name, registered) in &self.bots {
            if *registered {
                writeln!(
                    out,
                    "Agent `{name}` is registered already (workspace {workspace})."
                )?;
            } else {
                changed = true;
                let verb = if dry { "Would register" } else { "Registered" };
                writeln!(out, "{verb} agent `{name}` (workspace {workspace}).")?;
            }
        }
        for note in &self.skipped {
            writeln!(out, "Skipped {note}.")?;
        }
        let create = create_bot_command(&self.checkout);
        for (name, _) in &self.bots {
            if !self
                .checkout
                .join("bots")
                .join(name)
                .join("bot.env")
                .exists()
            {
                writeln!(
                    out,
                    "Bot `{name}` has no bots/{name}/bot.env, so MindRune cannot scrub its password from what it saves until it has one (`{create} {name}` makes a bot with it)."
                )?;
            }
        }

        let settings = &self.settings;
        let shown = settings.path.display();
        if !settings.updated.is_empty() {
            changed = true;
            let verb = if dry { "Would update" } else { "Updated" };
            writeln!(
                out,
                "{verb} MindRune's hook command for {} in {shown}{}",
                settings.updated.join(", "),
                if dry && settings.added.is_empty() {
                    ":"
                } else {
                    "."
                }
            )?;
        }
        if settings.added.is_empty() && settings.updated.is_empty() {
            writeln!(out, "MindRune's hooks are installed already in {shown}.")?;
        } else if settings.added.is_empty() {
            if dry {
                settings_diff(out, settings)?;
            }
        } else {
            changed = true;
            let verb = if dry { "Would add" } else { "Added" };
            writeln!(
                out,
                "{verb} MindRune's hooks for {} to {shown}{}",
                settings.added.join(", "),
                if dry { ":" } else { "." }
            )?;
            if dry {
                settings_diff(out, settings)?;
            }
        }
        match &self.vocabulary {
            VocabularyPlan::NoWiki => writeln!(
                out,
                "{} has no wiki/ folder, so no topic-tag vocabulary was built (later: `mindrune tags build --wiki DIR`).",
                self.checkout.display()
            )?,
            VocabularyPlan::Unusable(note) => writeln!(out, "Vocabulary not built: {note}.")?,
            VocabularyPlan::Unchanged { read, tags } => {
                writeln!(
                    out,
                    "The topic-tag vocabulary is up to date with {}: {} tags.",
                    read.folder,
                    thousands(*tags)
                )?;
                wiki_notes(out, read)?;
            }
            VocabularyPlan::Write {
                read,
                tags,
                added,
                removed,
            } => {
                changed = true;
                // After a write, the store's own count of what changed.
                let (added, removed) = match done.and_then(|d| d.vocabulary.as_ref()) {
                    Some(written) => (written.change.added.len(), written.change.removed.len()),
                    None => (*added, *removed),
                };
                let verb = if dry { "Would write" } else { "Wrote" };
                writeln!(
                    out,
                    "{verb} the topic-tag vocabulary from {}: {} tags ({} added, {} removed).",
                    read.folder,
                    thousands(*tags),
                    thousands(added),
                    thousands(removed)
                )?;
                wiki_notes(out, read)?;
            }
        }
        writeln!(
            out,
            "Each bot sees its family's skills in its own folder, bots/<bot>/{}/ (the bots share this checkout, so one folder at its root would hold whichever bot's view was written last).",
            mindrune_engine::family::MIRROR_DIR
        )?;
        if let Some(exclude) = &self.exclude {
            changed = true;
            let verb = if dry { "Would add" } else { "Added" };
            writeln!(
                out,
                "{verb} {} to {}, so git status does not show them.",
                exclude.missing.join(" and "),
                exclude.path.display()
            )?;
        }
        if !changed {
            let nothing = if dry {
                "Nothing would change."
            } else {
                "Nothing was changed."
            };
            writeln!(out, "{nothing}")?;
        }

        writeln!(
            out,
            "\n{} the server, then one runner per bot (each in its own terminal):",
            if dry {
                "After the setup, start"
            } else {
                "Next, start"
            }
        )?;
        // Every command names the library absolutely, so it works from any folder.
        let library = &self.library;
        let home = shell_word(&library.display().to_string());
        writeln!(out, "  mindrune --home {home} serve")?;
        let workspace = shell_word(&self.workspace);
        // The hooks hand each call to the bot's runner through its spool (relay mode), so they
        // need no library at all: only which bot they run for and where its runner reads.
        for (name, _) in &self.bots {
            let spool = mindrune_server::runner::default_spool(library, name);
            let mirror = shell_word(&self.checkout.join(bot_mirror(name)).display().to_string());
            writeln!(
                out,
                "  mindrune runner --server {SERVER_URL} --agent {name} --workspace {workspace} --mirror {mirror} --spool {} --token \"$(mindrune --home {home} token issue {name})\"",
                shell_word(&spool.display().to_string())
            )?;
        }
        writeln!(
            out,
            "\nStart each bot's Claude Code with its name and its runner's spool, so the hooks relay its tool calls:"
        )?;
        for (name, _) in &self.bots {
            let spool = mindrune_server::runner::default_spool(library, name);
            writeln!(
                out,
                "  MINDRUNE_AGENT={name} MINDRUNE_RELAY={} claude",
                shell_word(&spool.display().to_string())
            )?;
        }
        let first = self.bots.first().map_or("NAME", |(name, _)| name.as_str());
        writeln!(
            out,
            "\nOr, with no server, let the hooks record into the library directly: `MINDRUNE_AGENT={first} claude` in {workspace}. Check it works with `mindrune --home {home} skills` after one run."
        )?;
        Ok(())
    }
}

/// A dry run's view of the settings change: a unified diff of `.claude/settings.json`.
fn settings_diff(out: &mut impl std::io::Write, settings: &SettingsPlan) -> std::io::Result<()> {
    let old = settings.old.as_deref().unwrap_or("");
    let new = settings.new.as_deref().unwrap_or(old);
    let relative = Path::new(".claude").join("settings.json");
    let (from, to) = if settings.old.is_some() {
        (
            format!("a/{}", relative.display()),
            format!("b/{}", relative.display()),
        )
    } else {
        ("/dev/null".to_string(), format!("b/{}", relative.display()))
    };
    let diff = similar::TextDiff::from_lines(old, new);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header(&from, &to)
        .to_string();
    write!(out, "{text}")?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(())
}

/// The wiki's folders missing and files skipped, one a line.
fn wiki_notes(out: &mut impl std::io::Write, read: &WikiRead) -> std::io::Result<()> {
    for name in &read.missing {
        writeln!(out, "  The wiki has no {name}/ folder.")?;
    }
    if !read.skipped.is_empty() {
        writeln!(
            out,
            "  Skipped {} wiki files:",
            thousands(read.skipped.len())
        )?;
        for note in &read.skipped {
            writeln!(out, "    {note}")?;
        }
    }
    Ok(())
}

/// The bots of `checkout/bots/`, sorted, and a note for every entry that is not one. Hidden
/// entries are passed over; rs-sdk's own `_template/` and `_shared/` are no bots.
/// How this checkout makes a bot: rs-sdk's `bots/create-bot.ts`, or `scripts/create-bot.ts` in
/// older checkouts.
fn create_bot_command(checkout: &Path) -> &'static str {
    if !checkout.join("bots/create-bot.ts").exists()
        && checkout.join("scripts/create-bot.ts").exists()
    {
        "bun scripts/create-bot.ts"
    } else {
        "bun bots/create-bot.ts"
    }
}

fn scan_bots(checkout: &Path) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let bots = checkout.join("bots");
    let create = create_bot_command(checkout);
    let hint = format!(
        "hint: give the folder of an rs-sdk checkout; its bots are bots/<name>/ (rs-sdk makes one with `{create} NAME`)"
    );
    match std::fs::symlink_metadata(&bots) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => bail!(
            "{} is not a plain folder (a symlink or a file); nothing was changed\n\n{hint}",
            bots.display()
        ),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            bail!(
                "{} has no bots/ folder, so it is no rs-sdk checkout; nothing was changed\n\n{hint}",
                checkout.display()
            )
        }
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", bots.display())),
    }
    let mut names = Vec::new();
    let mut skipped = Vec::new();
    let listing =
        std::fs::read_dir(&bots).with_context(|| format!("cannot list {}", bots.display()))?;
    let mut entries = Vec::new();
    for entry in listing {
        let entry = entry.with_context(|| format!("cannot list {}", bots.display()))?;
        let file_type = entry
            .file_type()
            .with_context(|| format!("cannot read {}", entry.path().display()))?;
        entries.push((entry.file_name(), file_type));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in entries {
        let Some(name) = name.to_str() else {
            skipped.push(format!(
                "bots/{}: a name that is not UTF-8",
                name.to_string_lossy()
            ));
            continue;
        };
        let why = if name.starts_with('.') {
            continue;
        } else if file_type.is_symlink() {
            Some("a symlink; a bot is a plain folder")
        } else if !file_type.is_dir() {
            Some("not a folder")
        } else if name.starts_with('_') {
            Some("rs-sdk's shared code, not a bot")
        } else if !is_valid_name(name) {
            Some("not a valid agent name (letters, digits, `-`, `_` and `.`, at most 64)")
        } else {
            None
        };
        match why {
            Some(why) => skipped.push(format!("bots/{name}: {why}")),
            None => names.push(name.to_string()),
        }
    }
    if names.is_empty() {
        bail!(
            "{} holds no bot, so there is nothing to set up; nothing was changed\n\nhint: make one in the checkout with `{create} NAME`, then run this again",
            bots.display()
        );
    }
    Ok((names, skipped))
}

// ---------------------------------------------------------------------------------------------
// Claude Code's settings
// ---------------------------------------------------------------------------------------------

fn plan_settings(checkout: &Path, library: &Path) -> anyhow::Result<SettingsPlan> {
    let command = hook_command(checkout, library);
    let folder = checkout.join(".claude");
    let path = folder.join("settings.json");
    if let Ok(meta) = std::fs::metadata(&folder)
        && !meta.is_dir()
    {
        bail!(
            "{} is not a folder, so Claude Code's settings cannot go in it; nothing was changed\n\nhint: move it away and run this again",
            folder.display()
        );
    }
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!(
                "{} is not UTF-8 text, so MindRune's hooks cannot be added to it; nothing was changed\n\nhint: save it as UTF-8 (Claude Code reads it as such), then run this again",
                path.display()
            )
        })?),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let merged = match old.as_deref() {
        // An empty file is no settings yet.
        Some(text) if !text.trim().is_empty() => {
            claude_settings::merge(text, &command).map_err(|err| settings_error(&path, &err))?
        }
        _ => claude_settings::fresh(&command),
    };
    Ok(SettingsPlan {
        path,
        old,
        new: merged.text,
        added: merged.added,
        updated: merged.updated,
    })
}

/// A settings file MindRune cannot merge into: where and why, and what to do.
fn settings_error(path: &Path, err: &serde_json::Error) -> anyhow::Error {
    let (line, column) = (err.line(), err.column());
    // serde_json counts a value it refused before reading any of it as column 0.
    let shown_column = column.max(1);
    let message = err.to_string();
    let message = message
        .strip_suffix(&format!(" at line {line} column {column}"))
        .unwrap_or(&message)
        // serde's names for JSON's arrays and objects.
        .replacen("invalid type: sequence", "invalid type: an array", 1)
        .replacen("invalid type: map", "invalid type: an object", 1);
    let hint = if err.is_data() {
        "hint: Claude Code's settings are an object, its hooks {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"…\", \"hooks\": [{\"type\": \"command\", \"command\": \"…\"}]}]}}; fix that value, then run this again"
    } else {
        "hint: fix the JSON there (Claude Code cannot read the file either), or move the file away to start a new one, then run this again"
    };
    anyhow::anyhow!(
        "{}: line {line}, column {shown_column}: {message}; MindRune's hooks cannot be added, and nothing was changed\n\n{hint}",
        path.display()
    )
}

mod claude_settings {
    //! Merging MindRune's hooks into Claude Code's `settings.json`. The file is the user's: it
    //! is checked with serde_json (so an error names its line and column), and then only
    //! edited in place, by inserting text at the end of the `hooks` object or of an event's
    //! array, indented as the file is. Every other byte stays as it was.
    //!
    //! Claude Code's hooks: `{"hooks": {"PreToolUse": [{"matcher": "…", "hooks": [{"type":
    //! "command", "command": "…"}]}], …}}`.

    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::ser::{Serialize, SerializeMap as _, SerializeSeq as _, Serializer};

    use super::{HOOK_COMMAND_START, HOOK_EVENTS};

    /// What merging gives: the new text (`None` when every hook is there already), the events
    /// a hook was added to, and those whose MindRune hook ran an older command (rewritten in
    /// place), in [`HOOK_EVENTS`] order.
    pub struct Merged {
        pub text: Option<String>,
        pub added: Vec<&'static str>,
        pub updated: Vec<&'static str>,
    }

    /// The settings of a checkout that has none: MindRune's hooks alone.
    pub fn fresh(command: &str) -> Merged {
        let settings = Json::Object(vec![("hooks".into(), all_hooks(command))]);
        let mut text = pretty(&settings, "  ");
        text.push('\n');
        Merged {
            text: Some(text),
            added: HOOK_EVENTS.iter().map(|(event, _)| *event).collect(),
            updated: Vec::new(),
        }
    }

    /// Whether a hook command is MindRune's, whichever version of it setup wrote.
    fn is_ours(command: &str) -> bool {
        command.trim_start().starts_with(HOOK_COMMAND_START)
    }

    /// Where an event's matcher groups run one of MindRune's commands: the command string's
    /// node and its text.
    fn our_commands<'n>(text: &str, groups: &'n Node) -> Vec<(&'n Node, String)> {
        let mut found = Vec::new();
        for group in &groups.elements {
            let Some(hooks) = group.last_member("hooks") else {
                continue;
            };
            for hook in &hooks.elements {
                if let Some(node) = hook.last_member("command")
                    && let Ok(command) = serde_json::from_str::<String>(&text[node.start..node.end])
                    && is_ours(&command)
                {
                    found.push((node, command));
                }
            }
        }
        found
    }

    /// Adds MindRune's hook to every event that does not run its command yet, and rewrites an
    /// older MindRune command in place (so an upgrade never leaves two hooks recording one
    /// call). With a repeated key the last one counts, as when Claude Code reads the file.
    pub fn merge(text: &str, command: &str) -> Result<Merged, serde_json::Error> {
        serde_json::from_str::<SettingsCheck>(text)?;
        let top = Scanner { text, at: 0 }.value();
        let style = Style::of(text);
        let mut edits = Vec::new();
        let mut added = Vec::new();
        let mut updated = Vec::new();
        match top.last_member("hooks") {
            None => {
                edits.push(style.append(text, &top, &[Item::Member("hooks", all_hooks(command))]));
                added.extend(HOOK_EVENTS.iter().map(|(event, _)| *event));
            }
            Some(hooks) => {
                let mut missing = Vec::new();
                for (event, matcher) in HOOK_EVENTS {
                    match hooks.last_member(event) {
                        None => {
                            missing.push(Item::Member(
                                event,
                                Json::Array(vec![group(matcher, command)]),
                            ));
                            added.push(event);
                        }
                        Some(groups) => {
                            let ours = our_commands(text, groups);
                            if ours.is_empty() {
                                edits.push(style.append(
                                    text,
                                    groups,
                                    &[Item::Element(group(matcher, command))],
                                ));
                                added.push(event);
                            } else if !ours.iter().any(|(_, present)| present == command) {
                                for (node, _) in ours {
                                    edits.push(Edit {
                                        from: node.start,
                                        to: node.end,
                                        text: quoted(command),
                                    });
                                }
                                updated.push(event);
                            }
                        }
                    }
                }
                if !missing.is_empty() {
                    edits.push(style.append(text, hooks, &missing));
                }
            }
        }
        if edits.is_empty() {
            return Ok(Merged {
                text: None,
                added,
                updated,
            });
        }
        // From the end backwards, so each edit's offsets still hold. Edits never overlap: an
        // event's array ends before the end of the hooks object it is in.
        edits.sort_by_key(|edit| std::cmp::Reverse(edit.from));
        let mut merged = text.to_string();
        for edit in edits {
            merged.replace_range(edit.from..edit.to, &edit.text);
        }
        Ok(Merged {
            text: Some(merged),
            added,
            updated,
        })
    }

    /// The `hooks` object with MindRune's hook on every event.
    fn all_hooks(command: &str) -> Json {
        Json::Object(
            HOOK_EVENTS
                .iter()
                .map(|(event, matcher)| {
                    (
                        event.to_string(),
                        Json::Array(vec![group(*matcher, command)]),
                    )
                })
                .collect(),
        )
    }

    /// One matcher group running MindRune's hook command.
    fn group(matcher: Option<&str>, command: &str) -> Json {
        let command = Json::Object(vec![
            ("type".into(), Json::String("command".into())),
            ("command".into(), Json::String(command.into())),
        ]);
        let mut group = Vec::new();
        if let Some(matcher) = matcher {
            group.push(("matcher".into(), Json::String(matcher.into())));
        }
        group.push(("hooks".into(), Json::Array(vec![command])));
        Json::Object(group)
    }

    // -- Where things are in the text ------------------------------------------------------

    /// A value's place in the text (`end` is past its last byte) and, for an object or an
    /// array, its children's.
    struct Node {
        start: usize,
        end: usize,
        /// Members: where each starts (its key), its key, its value.
        members: Vec<(usize, String, Node)>,
        elements: Vec<Node>,
    }

    impl Node {
        fn last_member(&self, key: &str) -> Option<&Node> {
            self.members
                .iter()
                .rev()
                .find(|(_, name, _)| name == key)
                .map(|(_, _, value)| value)
        }

        /// Where the first and the last child start, and where the last one ends.
        fn children(&self) -> Option<(usize, usize, usize)> {
            if let (Some(first), Some(last)) = (self.members.first(), self.members.last()) {
                return Some((first.0, last.0, last.2.end));
            }
            match (self.elements.first(), self.elements.last()) {
                (Some(first), Some(last)) => Some((first.start, last.start, last.end)),
                _ => None,
            }
        }
    }

    /// Finds where the values of a text serde_json has accepted are (so it needs no error
    /// handling: on any other text it still ends, with nonsense places).
    struct Scanner<'a> {
        text: &'a str,
        at: usize,
    }

    impl Scanner<'_> {
        fn peek(&self) -> Option<u8> {
            self.text.as_bytes().get(self.at).copied()
        }

        fn skip_space(&mut self) {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                self.at += 1;
            }
        }

        fn string(&mut self) {
            self.at += 1;
            while let Some(byte) = self.peek() {
                self.at += if byte == b'\\' { 2 } else { 1 };
                if byte == b'"' {
                    break;
                }
            }
            self.at = self.at.min(self.text.len());
        }

        fn value(&mut self) -> Node {
            self.skip_space();
            let start = self.at;
            let mut node = Node {
                start,
                end: start,
                members: Vec::new(),
                elements: Vec::new(),
            };
            match self.peek() {
                Some(b'{') => {
                    self.at += 1;
                    loop {
                        self.skip_space();
                        match self.peek() {
                            None => break,
                            Some(b'}') => {
                                self.at += 1;
                                break;
                            }
                            Some(b'"') => {
                                let key_start = self.at;
                                self.string();
                                let key = serde_json::from_str(&self.text[key_start..self.at])
                                    .unwrap_or_default();
                                self.skip_space();
                                if self.peek() == Some(b':') {
                                    self.at += 1;
                                }
                                let value = self.value();
                                node.members.push((key_start, key, value));
                            }
                            Some(_) => self.at += 1,
                        }
                    }
                }
                Some(b'[') => {
                    self.at += 1;
                    loop {
                        self.skip_space();
                        match self.peek() {
                            None => break,
                            Some(b']') => {
                                self.at += 1;
                                break;
                            }
                            Some(b',') => self.at += 1,
                            Some(_) => {
                                let before = self.at;
                                node.elements.push(self.value());
                                if self.at == before {
                                    self.at += 1;
                                }
                            }
                        }
                    }
                }
                Some(b'"') => self.string(),
                _ => {
                    while !matches!(
                        self.peek(),
                        None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                    ) {
                        self.at += 1;
                    }
                }
            }
            node.end = self.at;
            node
        }
    }

    // -- Writing text the way the file is written ------------------------------------------

    /// A replacement of `from..to` by `text`.
    struct Edit {
        from: usize,
        to: usize,
        text: String,
    }

    enum Item {
        Member(&'static str, Json),
        Element(Json),
    }

    /// How the file indents: its first indented line's indentation, else two spaces.
    struct Style {
        unit: String,
    }

    impl Style {
        fn of(text: &str) -> Style {
            let unit = text
                .lines()
                .find_map(|line| {
                    let rest = line.trim_start_matches([' ', '\t']);
                    (rest.len() < line.len() && !rest.is_empty())
                        .then(|| line[..line.len() - rest.len()].to_string())
                })
                .unwrap_or_else(|| "  ".into());
            Style { unit }
        }

        /// Adds `items` at the end of the object or array `node`: each on a line of its own
        /// indented as its siblings (a one-line container stays on one line).
        fn append(&self, text: &str, node: &Node, items: &[Item]) -> Edit {
            let one_line = |item: &Item| match item {
                Item::Member(key, value) => format!("{}: {}", quoted(key), compact(value)),
                Item::Element(value) => compact(value),
            };
            let on_lines = |item: &Item, indent: &str| {
                let (key, value) = match item {
                    Item::Member(key, value) => (format!("{}: ", quoted(key)), value),
                    Item::Element(value) => (String::new(), value),
                };
                let value = pretty(value, &self.unit).replace('\n', &format!("\n{indent}"));
                format!("{indent}{key}{value}")
            };
            match node.children() {
                Some((first, last, last_end)) => {
                    let text = if text[node.start..first].contains('\n') {
                        let indent = indentation(text, last);
                        items
                            .iter()
                            .map(|item| format!(",\n{}", on_lines(item, indent)))
                            .collect()
                    } else {
                        items
                            .iter()
                            .map(|item| format!(", {}", one_line(item)))
                            .collect()
                    };
                    Edit {
                        from: last_end,
                        to: last_end,
                        text,
                    }
                }
                None => {
                    let close = node.end.saturating_sub(1);
                    let text = if text.trim().contains('\n') {
                        let outer = indentation(text, node.start);
                        let inner = format!("{outer}{}", self.unit);
                        let lines: Vec<String> =
                            items.iter().map(|item| on_lines(item, &inner)).collect();
                        format!("\n{}\n{outer}", lines.join(",\n"))
                    } else {
                        items.iter().map(one_line).collect::<Vec<_>>().join(", ")
                    };
                    Edit {
                        from: node.start + 1,
                        to: close,
                        text,
                    }
                }
            }
        }
    }

    /// The indentation of the line `at` is on.
    fn indentation(text: &str, at: usize) -> &str {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line = &text[line_start..];
        &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
    }

    fn quoted(key: &str) -> String {
        serde_json::to_string(key).unwrap_or_default()
    }

    /// A value on one line, spaced as people write it: `{"type": "command", "command": "…"}`.
    fn compact(value: &Json) -> String {
        struct OneLine;
        impl serde_json::ser::Formatter for OneLine {
            fn begin_array_value<W: ?Sized + std::io::Write>(
                &mut self,
                writer: &mut W,
                first: bool,
            ) -> std::io::Result<()> {
                if first {
                    Ok(())
                } else {
                    writer.write_all(b", ")
                }
            }
            fn begin_object_key<W: ?Sized + std::io::Write>(
                &mut self,
                writer: &mut W,
                first: bool,
            ) -> std::io::Result<()> {
                if first {
                    Ok(())
                } else {
                    writer.write_all(b", ")
                }
            }
            fn begin_object_value<W: ?Sized + std::io::Write>(
                &mut self,
                writer: &mut W,
            ) -> std::io::Result<()> {
                writer.write_all(b": ")
            }
        }
        let mut bytes = Vec::new();
        let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, OneLine);
        // Writing to memory; a `Json` holds nothing serde_json cannot write.
        let _ = value.serialize(&mut serializer);
        String::from_utf8(bytes).unwrap_or_default()
    }

    fn pretty(value: &Json, unit: &str) -> String {
        let mut bytes = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
        let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, formatter);
        // Writing to memory; a `Json` holds nothing serde_json cannot write.
        let _ = value.serialize(&mut serializer);
        String::from_utf8(bytes).unwrap_or_default()
    }

    // -- Checking the file with serde_json --------------------------------------------------

    /// Claude Code's settings as far as MindRune edits them: an object whose `hooks` is an
    /// object whose MindRune events are arrays. Reading it tells where it is not (serde_json
    /// names the line and column).
    struct SettingsCheck;
    struct HooksCheck;
    struct GroupsCheck;

    impl<'de> Deserialize<'de> for SettingsCheck {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SettingsCheck, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = SettingsCheck;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("an object (Claude Code's settings)")
                }
                fn visit_map<A: MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<SettingsCheck, A::Error> {
                    while let Some(key) = map.next_key::<String>()? {
                        if key == "hooks" {
                            map.next_value::<HooksCheck>()?;
                        } else {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(SettingsCheck)
                }
            }
            deserializer.deserialize_map(V)
        }
    }

    impl<'de> Deserialize<'de> for HooksCheck {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HooksCheck, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = HooksCheck;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("\"hooks\" to be an object of hook events")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HooksCheck, A::Error> {
                    while let Some(key) = map.next_key::<String>()? {
                        if HOOK_EVENTS.iter().any(|(event, _)| *event == key) {
                            map.next_value::<GroupsCheck>()?;
                        } else {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                    Ok(HooksCheck)
                }
            }
            deserializer.deserialize_map(V)
        }
    }

    impl<'de> Deserialize<'de> for GroupsCheck {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<GroupsCheck, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = GroupsCheck;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a hook event to be an array of matcher groups")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GroupsCheck, A::Error> {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(GroupsCheck)
                }
            }
            deserializer.deserialize_seq(V)
        }
    }

    // -- A JSON value with its keys in order -----------------------------------------------

    /// A JSON value whose objects keep their keys in the order written, for reading an
    /// event's groups and writing MindRune's.
    #[derive(Debug, Clone, PartialEq)]
    enum Json {
        Null,
        Bool(bool),
        Number(serde_json::Number),
        String(String),
        Array(Vec<Json>),
        Object(Vec<(String, Json)>),
    }

    impl<'de> Deserialize<'de> for Json {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Json;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
                    Ok(Json::Null)
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
                    Ok(Json::Bool(v))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
                    Ok(Json::Number(v.into()))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
                    Ok(Json::Number(v.into()))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                    serde_json::Number::from_f64(v)
                        .map(Json::Number)
                        .ok_or_else(|| E::custom("a number that is not finite"))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
                    Ok(Json::String(v.to_string()))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
                    Ok(Json::String(v))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                    let mut items = Vec::new();
                    while let Some(item) = seq.next_element()? {
                        items.push(item);
                    }
                    Ok(Json::Array(items))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                    let mut members = Vec::new();
                    while let Some(key) = map.next_key::<String>()? {
                        members.push((key, map.next_value()?));
                    }
                    Ok(Json::Object(members))
                }
            }
            deserializer.deserialize_any(V)
        }
    }

    impl Serialize for Json {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            match self {
                Json::Null => serializer.serialize_unit(),
                Json::Bool(v) => serializer.serialize_bool(*v),
                Json::Number(v) => v.serialize(serializer),
                Json::String(v) => serializer.serialize_str(v),
                Json::Array(items) => {
                    let mut seq = serializer.serialize_seq(Some(items.len()))?;
                    for item in items {
                        seq.serialize_element(item)?;
                    }
                    seq.end()
                }
                Json::Object(members) => {
                    let mut map = serializer.serialize_map(Some(members.len()))?;
                    for (key, value) in members {
                        map.serialize_entry(key, value)?;
                    }
                    map.end()
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The command the tests install (what setup writes for a library outside the checkout).
        const HOOK_COMMAND: &str = "mindrune hook claude-code --home /lib";

        fn merged(text: &str) -> Merged {
            merge(text, HOOK_COMMAND).unwrap()
        }

        #[test]
        fn hooks_go_in_at_the_end_of_each_array_and_every_other_byte_stays() {
            let text = "{\n    \"zeta\": 1.50,\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}],\n        \"Notification\": {\"odd\": true}\n    },\n    \"alpha\": [null, \"x\"]\n}\n";
            let once = merged(text);
            assert_eq!(
                once.added,
                [
                    "PreToolUse",
                    "PostToolUse",
                    "PostToolUseFailure",
                    "Stop",
                    "StopFailure",
                    "SessionStart"
                ]
            );
            let new = once.text.unwrap();
            // What was there is still there, byte for byte, around the insertions.
            assert!(new.starts_with("{\n    \"zeta\": 1.50,\n    \"hooks\": {\n        \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}, {\"hooks\": [{\"type\": \"command\", \"command\": \"mindrune hook claude-code --home /lib\"}]}],\n        \"Notification\": {\"odd\": true},\n        \"PreToolUse\": [\n            {\n                \"matcher\": \"Bash|mcp__.*__execute_code\",\n"), "{new}");
            assert!(
                new.ends_with("\n    },\n    \"alpha\": [null, \"x\"]\n}\n"),
                "{new}"
            );
            let value: serde_json::Value = serde_json::from_str(&new).unwrap();
            assert_eq!(value["hooks"]["Stop"].as_array().unwrap().len(), 2);
            assert_eq!(
                value["hooks"]["PostToolUseFailure"][0]["hooks"][0]["command"],
                HOOK_COMMAND
            );
            let twice = merged(&new);
            assert!(twice.added.is_empty());
            assert!(twice.text.is_none());
        }

        #[test]
        fn empty_objects_and_arrays_are_filled_in_the_file_s_style() {
            let one_line = merged("{\"model\": \"opus\"}").text.unwrap();
            assert!(
                one_line.starts_with("{\"model\": \"opus\", \"hooks\": {\"PreToolUse\": [{"),
                "{one_line}"
            );
            assert!(!one_line.contains('\n'), "{one_line}");
            let tabs = merged("{\n\t\"hooks\": {\n\t\t\"PreToolUse\": []\n\t}\n}")
                .text
                .unwrap();
            assert!(
                tabs.starts_with(
                    "{\n\t\"hooks\": {\n\t\t\"PreToolUse\": [\n\t\t\t{\n\t\t\t\t\"matcher\""
                ),
                "{tabs}"
            );
            let spaces = merged("{\n  \"hooks\": {}\n}\n").text.unwrap();
            assert!(
                spaces.starts_with("{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n"),
                "{spaces}"
            );
            assert!(spaces.ends_with("\n    ]\n  }\n}\n"), "{spaces}");
            for text in [&one_line, &tabs, &spaces] {
                serde_json::from_str::<serde_json::Value>(text).unwrap();
                assert!(merged(text).text.is_none(), "{text}");
            }
        }

        #[test]
        fn a_hooks_value_that_is_no_object_is_an_error_with_its_position() {
            let err = merge("{\n  \"hooks\": [1]\n}", HOOK_COMMAND).err().unwrap();
            assert_eq!((err.line(), err.column()), (2, 11));
            assert!(err.is_data());
            let err = merge("{\"hooks\": {\"Stop\": {}}}", HOOK_COMMAND)
                .err()
                .unwrap();
            assert!(
                err.to_string().contains("an array of matcher groups"),
                "{err}"
            );
            assert!(merge("[]", HOOK_COMMAND).is_err());
            let err = merge("{\n  \"a\": 1,\n}", HOOK_COMMAND).err().unwrap();
            assert_eq!((err.line(), err.column()), (3, 1));
        }
    }
}

/// Replaces a file so that it is always either old or new: a hidden temp file in the same
/// folder (created first if missing), fsync, rename, then an fsync of the folder. A file that
/// was there keeps its permissions. A symlink is followed: its target is replaced.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;

    let target = match std::fs::canonicalize(path) {
        Ok(target) => target,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(err) => return Err(err).with_context(|| format!("cannot read {}", path.display())),
    };
    let folder = target
        .parent()
        .with_context(|| format!("{} has no folder", target.display()))?;
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let mode = std::fs::metadata(&target).map_or(0o644, |meta| meta.permissions().mode() & 0o7777);
    let mut temp = tempfile::Builder::new()
        .prefix(".settings.json.")
        .tempfile_in(folder)
        .with_context(|| format!("cannot write in {}", folder.display()))?;
    temp.write_all(bytes)
        .and_then(|()| {
            temp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
        })
        .and_then(|()| temp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", target.display()))?;
    temp.persist(&target)
        .map_err(|err| err.error)
        .with_context(|| format!("cannot replace {}", target.display()))?;
    std::fs::File::open(folder)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("cannot sync {}", folder.display()))?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The vocabulary
// ---------------------------------------------------------------------------------------------

fn plan_vocabulary(checkout: &Path, store: Option<&dyn Store>) -> anyhow::Result<VocabularyPlan> {
    let wiki = checkout.join("wiki");
    if !wiki.is_dir() {
        return Ok(VocabularyPlan::NoWiki);
    }
    let mut read = match tags::build_from_wiki(&wiki) {
        Ok(read) => read,
        Err(err @ TagsError::NotAWiki(_)) => {
            // Not a reason to leave the bots and hooks unset: say so and go on.
            let text = err.to_string();
            let text = text.strip_suffix("; nothing was changed").unwrap_or(&text);
            return Ok(VocabularyPlan::Unusable(text.to_string()));
        }
        Err(err) => return Err(err.into()),
    };
    if read.entries.is_empty() {
        return Ok(VocabularyPlan::Unusable(format!(
            "{}: not a single page could be read (the library's vocabulary is left as it is)",
            read.folder
        )));
    }
    let (vocabulary, notes) = Vocabulary::from_entries(read.entries.iter().cloned());
    // Entries the vocabulary cannot take are noted with the wiki's skipped files.
    read.skipped.extend(notes.iter().map(ToString::to_string));
    let wanted = by_tag(vocabulary.entries().iter().cloned());
    let existing = match store {
        Some(store) => by_tag(store.vocabulary()?),
        None => BTreeMap::new(),
    };
    let tags = wanted.len();
    if wanted == existing {
        return Ok(VocabularyPlan::Unchanged { read, tags });
    }
    let wanted_tags: BTreeSet<&(String, String)> = wanted.keys().collect();
    let existing_tags: BTreeSet<&(String, String)> = existing.keys().collect();
    Ok(VocabularyPlan::Write {
        added: wanted_tags.difference(&existing_tags).count(),
        removed: existing_tags.difference(&wanted_tags).count(),
        read,
        tags,
    })
}

/// Vocabulary entries by tag (the first of a tag wins, as the store keeps them), each as the
/// store gives it back: aliases on one line each, none empty.
fn by_tag(entries: impl IntoIterator<Item = Entry>) -> BTreeMap<(String, String), Entry> {
    let mut map = BTreeMap::new();
    for mut entry in entries {
        entry.aliases = entry
            .aliases
            .iter()
            .map(|alias| alias.replace(['\n', '\r'], " "))
            .filter(|alias| !alias.is_empty())
            .collect();
        map.entry((entry.kind.clone(), entry.slug.clone()))
            .or_insert(entry);
    }
    map
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/// A word a POSIX shell reads back as `text`: as it is when that is safe, else single-quoted.
fn shell_word(text: &str) -> String {
    let safe = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if safe {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_command_names_the_library_from_the_project_folder_or_absolutely() {
        let checkout = Path::new("/home/ada/rs-sdk");
        assert_eq!(
            hook_command(checkout, Path::new("/home/ada/rs-sdk/.mindrune")),
            r#"mindrune hook claude-code --home "$CLAUDE_PROJECT_DIR"/.mindrune"#
        );
        assert_eq!(
            hook_command(checkout, Path::new("/home/ada/rs-sdk")),
            r#"mindrune hook claude-code --home "$CLAUDE_PROJECT_DIR""#
        );
        assert_eq!(
            hook_command(checkout, Path::new("/srv/my library")),
            "mindrune hook claude-code --home '/srv/my library'"
        );
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/home/ada/rs-sdk"), "/home/ada/rs-sdk");
        assert_eq!(shell_word("/home/ada/my sdk"), "'/home/ada/my sdk'");
        assert_eq!(shell_word("/it's"), r"'/it'\''s'");
    }
}
