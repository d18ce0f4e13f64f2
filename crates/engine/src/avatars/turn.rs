//! Turn boundaries: what happens when an agent's turn ends (or its agent starts again).
//!
//! The agent's `bots/<bot>/` is scanned: scripts whose header is new or changed, or that just
//! qualified, become (or update) personal skills; scripts without a header, with `@private`, or
//! gone (deleted, renamed, unreadable) are un-shared, history kept. The lab log's `Share:`
//! lines become the agent's lessons. Then the family mirror is refreshed.
//!
//! A scan is idempotent: a file whose bytes are unchanged since the library last read it is not
//! matched again and changes nothing (its header's problems are still reported), so a restart
//! re-checks every header but leaves what is shared as it is.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use mindrune_core::SharingBar;
use mindrune_core::sha256;
use mindrune_core::{is_valid_name, parse_header};
use mindrune_core::{leading_tags_end, share_lines};
use mindrune_store::{
    Agent, HeaderState, LessonsChange, Millis, NewLesson, SharingChange, SharingKind, SkillEntry,
    Store, UnrecordedReason,
};

use crate::avatars::family::{self, MirrorOutcome};
use crate::avatars::ingest::{IngestError, Recorder, now_millis};
use crate::avatars::tags;
use crate::workspace::{self, AgentFiles, LocalFiles, MAX_SCRIPT_BYTES, ReadError};

/// The largest lab log read. Larger than a script: a log grows all day.
pub const MAX_LAB_LOG_BYTES: u64 = 16 * 1024 * 1024;
/// The mirror is refreshed at most this often at turn boundaries.
pub const MIRROR_REFRESH_INTERVAL_MS: Millis = 60_000;

/// Why the turn boundary is being marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// The agent's turn ended.
    TurnEnd,
    /// The agent is starting (again): every header is re-checked and the check is logged, and
    /// the mirror is written before the agent reads it.
    Start,
}

/// What a turn boundary found and changed, for the agent's owner and the runner's log.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TurnReport {
    pub agent: String,
    /// Script files looked at in `bots/<bot>/`.
    pub checked: usize,
    /// What the family sees that changed since the previous turn boundary (including shares
    /// made right after a run), oldest first.
    pub sharing: Vec<SharingChange>,
    /// Headed scripts seen for the first time as skills (`<name>.ts`).
    pub new_skills: Vec<String>,
    /// `<name>.ts vN`: a changed file became a new version.
    pub new_versions: Vec<String>,
    /// Headed scripts not shared yet, with their way to the bar, closest first.
    pub progress: Vec<String>,
    /// Scripts without a header that cleared the bar: offered, with the header to paste.
    pub offers: Vec<Offer>,
    /// Unchanged copies of a sibling's skill, which share nothing new.
    pub sibling_copies: Vec<String>,
    /// On a start: every header checked, and what the check found.
    pub checked_headers: Vec<String>,
    /// Files skipped or read with a problem, each naming the file (and line).
    pub diagnostics: Vec<String>,
    /// Calls since the previous boundary that were seen but not recorded as runs, each saying
    /// why (sent to the background; a `bun` line that named no script of the bot).
    pub unrecorded: Vec<String>,
    pub lessons: LessonsChange,
    pub mirror: MirrorOutcome,
}

/// A script that proved itself but has no header: the agent decides whether to share it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Offer {
    pub file: String,
    pub runs: i64,
    pub score: f64,
    /// The header to paste at the top of the file.
    pub header: String,
}

#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error(transparent)]
    Store(#[from] mindrune_store::StoreError),
    #[error(
        "the workspace of `{agent}` ({path}) does not exist; nothing was changed (fix it with `mindrune agent add` or mount the workspace)"
    )]
    NoWorkspace { agent: String, path: String },
    #[error("cannot scan bots/{bot}/: {source}; nothing was changed")]
    BotDir { bot: String, source: ReadError },
    #[error(transparent)]
    Mirror(#[from] family::FamilyError),
}

impl TurnError {
    /// Whether the boundary failed because a disk is full (the library's or the mirror's), and
    /// not because of the agent's files or the library's contents.
    pub fn is_disk_full(&self) -> bool {
        match self {
            TurnError::Store(err) | TurnError::Ingest(IngestError::Store(err)) => {
                err.is_disk_full()
            }
            TurnError::Mirror(err) => err.is_disk_full(),
            TurnError::Ingest(_) | TurnError::NoWorkspace { .. } | TurnError::BotDir { .. } => {
                false
            }
        }
    }
}

/// How the mirror is treated at this boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MirrorPolicy {
    /// Refresh it unless it was refreshed less than a minute ago.
    WhenDue,
    /// Refresh it now.
    Now,
    /// Leave it alone (a caller that refreshes it itself).
    Skip,
}

/// Marks a turn boundary for an agent whose workspace is on this machine: scan, share,
/// un-share, lessons, mirror.
pub fn turn_boundary(
    store: &dyn Store,
    agent_name: &str,
    boundary: Boundary,
    mirror: MirrorPolicy,
    mirror_dir: Option<&Path>,
) -> Result<TurnReport, TurnError> {
    let recorder = Recorder::new(store);
    let agent = recorder.agent(agent_name)?;
    let workspace = PathBuf::from(&agent.workspace);
    turn_boundary_with(
        &recorder,
        agent_name,
        &LocalFiles(&workspace),
        boundary,
        mirror,
        mirror_dir,
    )
}

/// [`turn_boundary`] over any view of the agent's files (a runner's snapshot on the server).
///
/// In order: the bot's scripts are scanned ([`scan_scripts`]), files gone are un-shared, what
/// now clears the family's bar is shared, the lab log's lessons synced, the unshared skills'
/// progress and offers listed, the mirror refreshed when due, and the turn's end noted.
pub fn turn_boundary_with(
    recorder: &Recorder<'_>,
    agent_name: &str,
    files: &dyn AgentFiles,
    boundary: Boundary,
    mirror: MirrorPolicy,
    mirror_dir: Option<&Path>,
) -> Result<TurnReport, TurnError> {
    let store = recorder.store();
    let agent = recorder.agent(agent_name)?;
    let owner = agent.owner;
    if !files.exists() {
        return Err(TurnError::NoWorkspace {
            agent: agent.name.clone(),
            path: agent.workspace.clone(),
        });
    }
    let started = now_millis();
    let since = agent.last_turn_at.unwrap_or(agent.created_at);
    let mut report = TurnReport {
        agent: agent.name.clone(),
        ..TurnReport::default()
    };
    let scrubber = recorder.scrubber(&agent, files)?;
    let known: HashMap<String, SkillEntry> = store
        .skills(owner, Some(agent.id))?
        .into_iter()
        .map(|entry| (entry.skill.path.clone(), entry))
        .collect();
    let scan = Scan {
        recorder,
        agent: &agent,
        files,
        scrubber: &scrubber,
        boundary,
        known: &known,
    };
    let present = scan_scripts(&scan, &mut report)?;
    // Files gone (deleted, renamed, unreadable) are un-shared; their history stays.
    for (path, entry) in &known {
        if !present.contains(path) {
            store.mark_file_gone(owner, entry.skill.id, started)?;
        }
    }
    // The family's bar may have been lowered since the last run.
    store.share_qualified(owner, agent.id, started)?;

    report.lessons = sync_lessons(store, &agent, files, &scrubber, started, &mut report)?;
    progress_and_offers(store, &agent, &mut report)?;
    report.sharing = store.sharing_changes(owner, agent.id, since)?;
    report.mirror = mirror_when_due(store, &agent, mirror, mirror_dir, started)?;
    report.unrecorded = unrecorded_calls(store, &agent, since)?;
    let ended = now_millis();
    store.note_turn_end(owner, agent.id, ended)?;
    // The recorder measures the next run only against states printed after this: it must
    // know the turn ended, not the time it read the agent at.
    recorder.know_agent(&mindrune_store::Agent {
        last_turn_at: Some(ended),
        ..(*agent).clone()
    });
    Ok(report)
}

/// What a scan of the bot's scripts reads.
struct Scan<'a, 'r> {
    recorder: &'a Recorder<'r>,
    agent: &'a Agent,
    files: &'a dyn AgentFiles,
    scrubber: &'a mindrune_core::Scrubber,
    boundary: Boundary,
    /// The agent's skills by path, as the library knew them before the scan.
    known: &'a HashMap<String, SkillEntry>,
}

/// Scans `bots/<bot>/`: each script with a valid name is checked ([`check_script`]). Returns
/// the paths of the files still there as skills; the others are gone.
fn scan_scripts(
    scan: &Scan<'_, '_>,
    report: &mut TurnReport,
) -> Result<HashSet<String>, TurnError> {
    let agent = scan.agent;
    let bot_dir = format!("bots/{}", agent.name);
    let names = scan
        .files
        .list(&bot_dir)
        .map_err(|source| TurnError::BotDir {
            bot: agent.name.clone(),
            source,
        })?
        .unwrap_or_default();
    for name in scan.files.names_not_utf8(&bot_dir) {
        report.diagnostics.push(format!(
            "{bot_dir}/{name}: its name is not UTF-8, so MindRune cannot record or share it; rename it (e.g. `mv` it to a name in UTF-8)"
        ));
    }
    let mut present: HashSet<String> = HashSet::new();
    let mut vocabulary = None;
    for name in names.iter().filter(|n| n.ends_with(".ts")) {
        let relative = format!("{bot_dir}/{name}");
        if workspace::script_of_bot(&relative).is_none_or(|(_, stem)| !is_valid_name(stem)) {
            continue;
        }
        report.checked += 1;
        if check_script(scan, name, &relative, &mut vocabulary, report)? {
            present.insert(relative);
        }
    }
    Ok(present)
}

/// Checks one script: its header's problems are reported, and a changed file is matched again
/// (a new skill, a new version, a changed header). Returns whether the file is still there as a
/// skill: not when it cannot be read, is a headless script never run, or is an unchanged copy
/// of a sibling's skill.
fn check_script(
    scan: &Scan<'_, '_>,
    name: &str,
    relative: &str,
    vocabulary: &mut Option<std::sync::Arc<mindrune_core::Vocabulary>>,
    report: &mut TurnReport,
) -> Result<bool, TurnError> {
    let Scan {
        recorder,
        agent,
        files,
        scrubber,
        boundary,
        known,
    } = *scan;
    let store = recorder.store();
    let owner = agent.owner;
    let source = match files.read(relative, MAX_SCRIPT_BYTES) {
        Ok(Some(source)) => source,
        Ok(None) => return Ok(false),
        Err(err) => {
            report.diagnostics.push(describe_skip(&err));
            return Ok(false);
        }
    };
    let (parsed, diagnostics) = parse_header(&source);
    let file_digest = sha256(source.as_bytes());
    let skill = known.get(relative);
    let unchanged = skill.is_some_and(|s| s.skill.file_digest.as_deref() == Some(&file_digest));
    // Reported at every boundary while the problem lasts, even when a run read the file
    // first (recording a run does not report a header's problems).
    for diagnostic in &diagnostics {
        report.diagnostics.push(format!(
            "{relative}:{}: {}",
            diagnostic.line, diagnostic.message
        ));
    }
    if let Some(parsed) = parsed.as_ref().filter(|h| !h.tags.is_empty()) {
        let vocabulary = match &vocabulary {
            Some(v) => v,
            None => vocabulary.insert(tags::vocabulary(store)?),
        };
        for (tag, meant) in tags::unknown_tags(store, vocabulary, &parsed.tags)? {
            report
                .diagnostics
                .push(tags::describe_unknown_tag(relative, &tag, meant.as_deref()));
        }
    }
    if unchanged {
        if boundary == Boundary::Start {
            report
                .checked_headers
                .push(describe_check(name, skill, "unchanged"));
        }
        return Ok(true);
    }
    // A script without a header that the library never ran is not a skill yet: its
    // first run makes it one.
    if parsed.is_none() && skill.is_none() {
        return Ok(false);
    }
    recorder.forget_file(agent, relative);
    let matched = recorder.match_file(agent, scrubber, relative, &source, file_digest)?;
    if matched.sibling_copy {
        report.sibling_copies.push(format!(
            "{name}: an unchanged copy of {}, already a family skill; its header shares nothing new",
            matched.skill_label
        ));
        return Ok(false);
    }
    if matched.new_skill {
        report.new_skills.push(name.to_string());
    } else if matched.new_version {
        let version = store.version(owner, matched.version)?;
        report
            .new_versions
            .push(format!("{name} v{}", version.number));
    }
    if boundary == Boundary::Start {
        // What the file says now, not what the library knew before it was read again: a
        // header removed while the agent was stopped has just un-shared the skill.
        let now_state = match &parsed {
            None => HeaderState::None,
            Some(h) if h.private => HeaderState::Private,
            Some(_) => HeaderState::Skill,
        };
        let family_now = now_state == HeaderState::Skill
            && match &matched.sharing {
                Some(change) => change.kind == SharingKind::Shared,
                None => skill.is_some_and(|s| s.family),
            };
        report
            .checked_headers
            .push(describe_changed(name, skill, now_state, family_now));
    }
    Ok(true)
}

/// The agent's headed scripts not shared yet, with their way to the family's bar, and the
/// headless ones that cleared it, offered with a header to paste.
fn progress_and_offers(
    store: &dyn Store,
    agent: &Agent,
    report: &mut TurnReport,
) -> Result<(), TurnError> {
    let owner = agent.owner;
    let eager = store.owner(owner)?.eager_sharing;
    let bar = SharingBar::for_family(eager);
    // The headed scripts closest to being shared come first: most runs, then best score.
    let mut entries = crate::display::skills_as_of(store, owner, Some(agent.id), now_millis())?;
    entries.sort_by(|a, b| {
        b.version
            .uses
            .cmp(&a.version.uses)
            .then(b.version.score.total_cmp(&a.version.score))
            .then(a.skill.name.cmp(&b.skill.name))
    });
    for entry in entries {
        let file = format!("{}.ts", entry.skill.name);
        if entry.family {
            continue;
        }
        match entry.skill.header.state {
            HeaderState::Skill => {
                report
                    .progress
                    .push(bar.progress(&file, entry.version.uses, entry.version.score))
            }
            // A version that was shared and whose header the agent removed since is not offered
            // back: un-sharing was its choice. Its next version (an edit) may be offered again.
            HeaderState::None
                if entry.version.shared_at.is_none()
                    && bar.cleared_by(entry.version.uses, entry.version.score) =>
            {
                report.offers.push(Offer {
                    header: offer_header(&entry),
                    file,
                    runs: entry.version.uses,
                    score: entry.version.score,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// The family mirror, refreshed as `mirror` asks: when due, at most once a minute.
fn mirror_when_due(
    store: &dyn Store,
    agent: &Agent,
    mirror: MirrorPolicy,
    mirror_dir: Option<&Path>,
    started: Millis,
) -> Result<MirrorOutcome, TurnError> {
    let due = agent
        .mirror_refreshed_at
        .is_none_or(|at| started - at >= MIRROR_REFRESH_INTERVAL_MS);
    Ok(match mirror {
        MirrorPolicy::Skip => MirrorOutcome::Skipped {
            reason: "not asked to".into(),
        },
        MirrorPolicy::WhenDue if !due => MirrorOutcome::Skipped {
            reason: format!(
                "refreshed {} s ago; family-skills/ is refreshed at most once a minute",
                (started - agent.mirror_refreshed_at.unwrap_or(started)) / 1000
            ),
        },
        _ => family::refresh_mirror(store, agent, mirror_dir)?,
    })
}

/// The calls since the previous boundary that were seen but not counted as runs, each saying
/// why. A look was never a run: nothing went uncounted.
fn unrecorded_calls(
    store: &dyn Store,
    agent: &Agent,
    since: Millis,
) -> Result<Vec<String>, TurnError> {
    Ok(store
        .unrecorded_since(agent.owner, agent.id, since)?
        .into_iter()
        .filter_map(|call| match call.reason {
            UnrecordedReason::Background => Some(format!(
                "`{}`: ran in the background, so not recorded (MindRune cannot see how a detached run ends)",
                call.detail
            )),
            UnrecordedReason::NoScript | UnrecordedReason::OutcomeUnknown => Some(call.detail),
            // A look was never a run: nothing went uncounted.
            UnrecordedReason::Look => None,
        })
        .collect())
}

/// Reads the lab log's `Share:` lines into the agent's lessons. A log that cannot be read
/// shares nothing (its lessons are un-shared) and says why.
fn sync_lessons(
    store: &dyn Store,
    agent: &Agent,
    files: &dyn AgentFiles,
    scrubber: &mindrune_core::Scrubber,
    now: Millis,
    report: &mut TurnReport,
) -> Result<LessonsChange, TurnError> {
    let relative = format!("bots/{}/lab_log.md", agent.name);
    let text = match files.read(&relative, MAX_LAB_LOG_BYTES) {
        Ok(text) => text.unwrap_or_default(),
        Err(err) => {
            report.diagnostics.push(format!(
                "{}; its Share: lines are not shared until it can be read",
                describe_skip(&err).trim_end_matches("; skipped")
            ));
            String::new()
        }
    };
    let (lines, diagnostics) = share_lines(&text);
    for diagnostic in diagnostics {
        report.diagnostics.push(format!(
            "{relative}:{}: {}",
            diagnostic.line, diagnostic.message
        ));
    }
    // Each lesson carries its topic tags first, as `[tag]`s: the ones the vocabulary finds in
    // its words join the ones its author wrote, so `grep -r 'place:lumbridge'` finds it.
    let vocabulary = if lines.is_empty() {
        None
    } else {
        Some(tags::vocabulary(store)?)
    };
    if let Some(vocabulary) = &vocabulary {
        for line in &lines {
            let written = mindrune_core::exact_tags(&line.text);
            for (tag, meant) in tags::unknown_tags(store, vocabulary, &written)? {
                report.diagnostics.push(tags::describe_unknown_tag(
                    &format!("{relative}:{}", line.line),
                    &tag,
                    meant.as_deref(),
                ));
            }
        }
    }
    let lessons: Vec<NewLesson> = lines
        .into_iter()
        .map(|line| {
            let text = scrub_lesson(scrubber, &line.text);
            NewLesson {
                line: line.line,
                text: match &vocabulary {
                    Some(vocabulary) => vocabulary.tag_lesson(&text),
                    None => text,
                },
            }
        })
        .collect();
    Ok(store.replace_lessons(agent.owner, agent.id, &lessons, now)?)
}

/// A lesson scrubbed in two parts: its leading tags, and its text after them as a line of its
/// own, so that `Share: [tag] PASSWORD="…"` is caught as the .env line it is after its tags
/// (an assignment like that is a credential only where a line starts).
fn scrub_lesson(scrubber: &mindrune_core::Scrubber, text: &str) -> String {
    let (tags, rest) = text.split_at(leading_tags_end(text));
    format!("{}{}", scrubber.scrub(tags).text, scrubber.scrub(rest).text)
}

fn describe_skip(err: &ReadError) -> String {
    match err {
        ReadError::TooLarge { path, size, .. } => format!(
            "{path}: {size} bytes, over the {} MiB a script may have; skipped",
            MAX_SCRIPT_BYTES / (1024 * 1024)
        ),
        ReadError::NotText(path) => {
            format!("{path}: not UTF-8 text (a binary file?); skipped")
        }
        ReadError::Symlink(path) => {
            format!("{path}: a symlink; scripts must be plain files in bots/<bot>/; skipped")
        }
        ReadError::NotAFile(path) => format!("{path}: not a regular file; skipped"),
        other => format!("{other}; skipped"),
    }
}

fn describe_check(name: &str, entry: Option<&SkillEntry>, how: &str) -> String {
    let Some(entry) = entry else {
        return format!("{name}: new, {how}");
    };
    let state = match (entry.skill.header.state, entry.family) {
        (HeaderState::Skill, true) => "@skill header, shared as it is",
        (HeaderState::Skill, false) => "@skill header, not shared yet",
        (HeaderState::Private, _) => "@private, not shared",
        (HeaderState::None, _) => "no header, private",
    };
    format!("{name}: {state} ({how})")
}

/// A file changed while the agent was stopped, described as it stands after the check.
fn describe_changed(
    name: &str,
    before: Option<&SkillEntry>,
    now: HeaderState,
    family_now: bool,
) -> String {
    let how = "changed while stopped";
    let Some(before) = before else {
        return format!("{name}: new, {how}");
    };
    if before.family && !family_now {
        let state = match now {
            HeaderState::None => "header removed while stopped, un-shared",
            HeaderState::Private => "@private written while stopped, un-shared",
            HeaderState::Skill => "changed while stopped, no longer shared",
        };
        return format!("{name}: {state}");
    }
    let state = match (now, family_now) {
        (HeaderState::Skill, true) => "@skill header, shared",
        (HeaderState::Skill, false) => "@skill header, not shared yet",
        (HeaderState::Private, _) => "@private, not shared",
        (HeaderState::None, _) => "no header, private",
    };
    format!("{name}: {state} ({how})")
}

/// The header an agent can paste to share a proven script.
fn offer_header(entry: &SkillEntry) -> String {
    format!(
        "/** @skill {}\n * Goal: <what it does>\n * Preconditions: <what it needs>\n */",
        entry.skill.name
    )
}
