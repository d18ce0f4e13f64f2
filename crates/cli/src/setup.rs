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
use mindrune_core::is_valid_name;
use mindrune_core::secret_digest;
use mindrune_core::{Entry, Vocabulary};
use mindrune_engine::now_millis;
use mindrune_engine::{
    HOOK_EVENTS, HookEvents, fresh_settings, hook_command_start, merge_settings, shell_word,
};
use mindrune_engine::{TagsError, WikiRead, Written, build_from_wiki, write_vocabulary};
use mindrune_store::Store;

use crate::commands::thousands;
use crate::library;

/// The command the hooks run for the library in `library` (absolute). Claude Code runs a hook
/// in its current folder, which moves with the agent's `cd`, so the library is named from the
/// project's folder (`$CLAUDE_PROJECT_DIR`, which Claude Code sets) when it lies inside the
/// checkout, and absolutely otherwise; never relative to wherever the hook happens to run.
fn hook_command(binary: &str, checkout: &Path, library: &Path) -> String {
    let home = match library.strip_prefix(checkout) {
        Ok(inside) if inside.as_os_str().is_empty() => "\"$CLAUDE_PROJECT_DIR\"".to_string(),
        Ok(inside) => format!(
            "\"$CLAUDE_PROJECT_DIR\"/{}",
            shell_word(&inside.display().to_string())
        ),
        Err(_) => shell_word(&library.display().to_string()),
    };
    match library::chosen_flag(shell_word) {
        // The hook keeps its pairing of started calls in the home folder, and records into the
        // database chosen with it.
        Some(database) => format!("{} --home {home} {database}", hook_command_start(binary)),
        None => format!("{} --home {home}", hook_command_start(binary)),
    }
}

/// Where a bot of a checkout finds its family's skills, relative to the checkout. Every bot of
/// one rs-sdk checkout shares the checkout as its workspace, so a single `family-skills/` at its
/// root would hold whichever bot's view was written last; each bot gets its own, in its own
/// folder, where its agent already works (the scan of `bots/<bot>/` reads only the files
/// directly in it, so the mirror is never taken for the bot's scripts).
fn bot_mirror(bot: &str) -> String {
    format!("bots/{bot}/{}", mindrune_engine::MIRROR_DIR)
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
        let mut wanted = vec![format!("/bots/*/{}/", mindrune_engine::MIRROR_DIR)];
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
pub(crate) fn rs_sdk(
    home: &Path,
    home_given: bool,
    path: &Path,
    owner: &str,
    dry_run: bool,
) -> anyhow::Result<ExitCode> {
    let plan = Plan::make(home, home_given, path, owner)?;
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
    /// A library found inside the checkout (an earlier setup's default), kept where it is: the
    /// report says how to move it out.
    inside: bool,
    /// This binary, absolute and canonical: what the hooks and the printed commands run.
    binary: String,
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
    /// The binaries the rewritten hooks ran before, where another than this one.
    moved_from: Vec<String>,
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
    vocabulary: Option<Written>,
}

impl Plan {
    fn make(home: &Path, home_given: bool, path: &Path, owner: &str) -> anyhow::Result<Plan> {
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
        let (home, inside) = choose_home(home, home_given, &checkout);
        let home = home.as_path();

        let store = library::open_if_made(home)?;
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
        let binary = this_binary()?;
        let settings = plan_settings(&binary, &checkout, &library)?;
        let exclude = ExcludePlan::make(&checkout, &library)?;
        let vocabulary = plan_vocabulary(&checkout, store.as_deref())?;
        Ok(Plan {
            home: home.to_path_buf(),
            inside,
            binary,
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
                // `Database::open` makes the file's folder (MINDRUNE_HOME, or sqlite:PATH's).
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
                // The key is shown once, in the setup's report; the library keeps its digest.
                let key = crate::commands::new_owner_key()?;
                let owner = store.create_owner(&self.owner, &secret_digest(&key), now_millis())?;
                done.owner_key = Some(key);
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
            done.vocabulary = Some(write_vocabulary(store, read, now_millis())?);
        }
        Ok(done)
    }

    /// What was done (or, in a dry run, would be), then the commands that start it all.
    #[expect(
        clippy::too_many_lines,
        reason = "the setup report, printed line by line in the order the user reads it"
    )]
    fn report(
        &self,
        out: &mut impl std::io::Write,
        done: Option<&Done>,
        dry: bool,
    ) -> anyhow::Result<()> {
        let mut changed = false;
        let home = library::database(&self.home);
        if self.store.is_some() {
            writeln!(out, "Using the MindRune library at {home}.")?;
            if self.inside {
                writeln!(
                    out,
                    "It is inside the checkout, where the agents' own tools can read it. Move it out: stop `mindrune serve` and the runners, `mv {} {}`, then run this setup again (it rewrites the hooks).",
                    shell_word(&self.library.display().to_string()),
                    default_library_home().map_or_else(
                        || "~/.local/share/mindrune".to_string(),
                        |dir| shell_word(&dir.display().to_string())
                    )
                )?;
            }
        } else {
            changed = true;
            let verb = if dry { "Would make" } else { "Made" };
            writeln!(out, "{verb} an empty MindRune library at {home}.")?;
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
                    "Added owner `{owner}`. Its key (keep it secret; MindRune keeps only its digest, so it cannot be shown again — if it is lost, `mindrune owner key {owner}` issues a new one): {key}"
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
            moved_note(out, settings, &self.binary, dry)?;
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
            mindrune_engine::MIRROR_DIR
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
        let home = match library::chosen_flag(shell_word) {
            Some(database) => format!("{} {database}", shell_word(&library.display().to_string())),
            None => shell_word(&library.display().to_string()),
        };
        let bin = shell_word(&self.binary);
        writeln!(out, "  {bin} --home {home} serve")?;
        let workspace = shell_word(&self.workspace);
        // The hooks hand each call to the bot's runner through its spool (relay mode), so they
        // need no library at all: only which bot they run for and where its runner reads.
        for (name, _) in &self.bots {
            let spool = mindrune_server::runner::default_spool(library, name);
            let mirror = shell_word(&self.checkout.join(bot_mirror(name)).display().to_string());
            writeln!(
                out,
                "  {bin} runner --server {SERVER_URL} --agent {name} --workspace {workspace} --mirror {mirror} --spool {} --token \"$({bin} --home {home} token issue {name})\"",
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
        if library::chosen_flag(shell_word).is_none() {
            let shown = shell_word(&library.display().to_string());
            writeln!(
                out,
                "\nOther mindrune commands find this library with `--home {shown}`, or after `export MINDRUNE_HOME={shown}` in your shell."
            )?;
        }
        let first = self.bots.first().map_or("NAME", |(name, _)| name.as_str());
        writeln!(
            out,
            "\nOr, with no server, let the hooks record into the library directly: `MINDRUNE_AGENT={first} claude` in {workspace}. Check it works with `{bin} --home {home} skills` after one run, and that every hook resolves with `{bin} doctor {}`.",
            shell_word(&self.checkout.display().to_string())
        )?;
        Ok(())
    }
}

/// A dry run's view of the settings change: a unified diff of `.claude/settings.json`.
/// Where the rewritten hooks ran another binary than this one: which, and which they run now.
fn moved_note(
    out: &mut impl std::io::Write,
    settings: &SettingsPlan,
    binary: &str,
    dry: bool,
) -> std::io::Result<()> {
    if settings.moved_from.is_empty() {
        return Ok(());
    }
    let was: Vec<String> = settings
        .moved_from
        .iter()
        .map(|program| format!("`{program}`"))
        .collect();
    writeln!(
        out,
        "  They ran {}; they {} this binary, `{binary}`.",
        was.join(" and "),
        if dry { "would run" } else { "now run" }
    )
}

fn settings_diff(out: &mut impl std::io::Write, settings: &SettingsPlan) -> std::io::Result<()> {
    file_diff(
        out,
        &Path::new(".claude").join("settings.json"),
        settings.old.as_deref(),
        settings.new.as_deref(),
    )
}

/// A dry run's view of one file's change: a unified diff (from /dev/null for a new file).
fn file_diff(
    out: &mut impl std::io::Write,
    relative: &Path,
    old_text: Option<&str>,
    new_text: Option<&str>,
) -> std::io::Result<()> {
    let old = old_text.unwrap_or("");
    let new = new_text.unwrap_or(old);
    let (from, to) = if old_text.is_some() {
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

fn plan_settings(binary: &str, checkout: &Path, library: &Path) -> anyhow::Result<SettingsPlan> {
    plan_hooks(
        checkout,
        &HOOK_EVENTS,
        &hook_command(binary, checkout, library),
    )
}

/// The settings of `project` with MindRune's hook `command` on `events`.
fn plan_hooks(project: &Path, events: &HookEvents, command: &str) -> anyhow::Result<SettingsPlan> {
    let folder = project.join(".claude");
    let path = folder.join("settings.json");
    if let Ok(meta) = std::fs::metadata(&folder)
        && !meta.is_dir()
    {
        bail!(
            "{} is not a folder, so Claude Code's settings cannot go in it; nothing was changed\n\nhint: move it away and run this again",
            folder.display()
        );
    }
    let old = read_text(&path, "MindRune's hooks")?;
    let merged = match old.as_deref() {
        // An empty file is no settings yet.
        Some(text) if !text.trim().is_empty() => {
            merge_settings(text, events, command).map_err(|err| settings_error(&path, &err))?
        }
        _ => fresh_settings(events, command),
    };
    Ok(SettingsPlan {
        path,
        old,
        new: merged.text,
        added: merged.added,
        updated: merged.updated,
        moved_from: merged.moved_from,
    })
}

/// A file's text (`None`: there is none); not UTF-8 is an error that says what cannot be added.
fn read_text(path: &Path, what: &str) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8(bytes).map_err(|_| {
            anyhow::anyhow!(
                "{} is not UTF-8 text, so {what} cannot be added to it; nothing was changed\n\nhint: save it as UTF-8 (Claude Code reads it as such), then run this again",
                path.display()
            )
        })?)),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
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

mod claude_code;

pub(crate) use claude_code::claude_code;

/// Replaces a file so that it is always either old or new (the engine's atomic writer), creating
/// its folder first. A file that was there keeps its permissions. A symlink is followed: its
/// target is replaced.
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
    mindrune_engine::write_atomic(&target, bytes, mode)
        .with_context(|| format!("cannot write {}", target.display()))
}

// ---------------------------------------------------------------------------------------------
// The vocabulary
// ---------------------------------------------------------------------------------------------

fn plan_vocabulary(checkout: &Path, store: Option<&dyn Store>) -> anyhow::Result<VocabularyPlan> {
    let wiki = checkout.join("wiki");
    if !wiki.is_dir() {
        return Ok(VocabularyPlan::NoWiki);
    }
    let mut read = match build_from_wiki(&wiki) {
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

/// Where `setup rs-sdk` keeps the library when none was chosen (`--home`, `MINDRUNE_HOME`,
/// `--database`): outside the checkout, since the agents' own tools read everything in it
/// (a live agent read the owner key's prefix with `grep -a`): `$XDG_DATA_HOME/mindrune`, else
/// `~/.local/share/mindrune`, as the XDG base directories say.
fn default_library_home() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty() && Path::new(dir).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| Path::new(&home).join(".local").join("share"))
        })?;
    Some(data.join("mindrune"))
}

/// The library's home for the setup of `checkout`, and whether it is an existing library left
/// inside the checkout. A home that was chosen stays; the default (`.mindrune` in the current
/// folder) is taken when it is outside the checkout or holds a library already (that one is
/// never switched for another silently: the report says how to move it), and otherwise the
/// library goes to [`default_library_home`].
fn choose_home(home: &Path, home_given: bool, checkout: &Path) -> (PathBuf, bool) {
    if home_given || library::chosen_flag(shell_word).is_some() {
        return (home.to_path_buf(), false);
    }
    let absolute = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
    let resolved = absolute
        .parent()
        .and_then(|parent| parent.canonicalize().ok())
        .zip(absolute.file_name())
        .map_or(absolute.clone(), |(parent, name)| parent.join(name));
    if !resolved.starts_with(checkout) {
        return (home.to_path_buf(), false);
    }
    if library::exists(home) {
        return (home.to_path_buf(), true);
    }
    match default_library_home() {
        Some(outside) => (outside, false),
        None => (home.to_path_buf(), false),
    }
}

/// This binary, as everything setup writes or prints names it: by its absolute, canonical path
/// (the running executable), so a hook, `.mcp.json` or a command pasted from the next steps
/// runs this MindRune whatever `PATH` says, and a second setup after the binary moved finds the
/// old entries by their program and rewrites them.
pub(crate) fn this_binary() -> anyhow::Result<String> {
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context(
            "cannot tell where this mindrune binary is, so setup cannot name it in the hooks",
        )?;
    exe.to_str().map(str::to_string).with_context(|| {
        format!(
            "this mindrune binary's path {} is not UTF-8, and Claude Code's settings are JSON text\n\nhint: install it under a UTF-8 path (`cargo install --locked --path crates/cli --root DIR`)",
            exe.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_command_names_the_library_from_the_project_folder_or_absolutely() {
        let checkout = Path::new("/home/ada/rs-sdk");
        assert_eq!(
            hook_command(
                "/usr/local/bin/mindrune",
                checkout,
                Path::new("/home/ada/rs-sdk/.mindrune")
            ),
            r#"/usr/local/bin/mindrune hook claude-code --home "$CLAUDE_PROJECT_DIR"/.mindrune"#
        );
        assert_eq!(
            hook_command(
                "/usr/local/bin/mindrune",
                checkout,
                Path::new("/home/ada/rs-sdk")
            ),
            r#"/usr/local/bin/mindrune hook claude-code --home "$CLAUDE_PROJECT_DIR""#
        );
        assert_eq!(
            hook_command(
                "/usr/local/bin/mindrune",
                checkout,
                Path::new("/srv/my library")
            ),
            "/usr/local/bin/mindrune hook claude-code --home '/srv/my library'"
        );
    }

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/home/ada/rs-sdk"), "/home/ada/rs-sdk");
        assert_eq!(shell_word("/home/ada/my sdk"), "'/home/ada/my sdk'");
        assert_eq!(shell_word("/it's"), r"'/it'\''s'");
    }
}
