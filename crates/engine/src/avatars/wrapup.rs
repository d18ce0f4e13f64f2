//! The wrap-up: what an agent is told when a goal or a step ends.
//!
//! A wrap-up is a turn boundary (the scan keeps the library's view of the agent's files
//! current) plus what the agent should do next with its work: write one short lesson, see how
//! far its headed scripts are from the family's bar, which of them became family skills since
//! the last wrap-up, which files are unchanged copies of a sibling's skill, which proven
//! scripts could be shared with a header, and which inline code it keeps running and should
//! save as a file.

use mindrune_core::SharingBar;
use mindrune_store::{
    SharingChange, SharingKind, SkillEntry, Store, UnmeasuredScope, UnrecordedReason,
};

use mindrune_store::Agent;

use crate::avatars::ingest::{Recorder, now_millis};
use crate::avatars::turn::{self, Boundary, MirrorPolicy, Offer, TurnError};
use crate::workspace::{AgentFiles, LocalFiles};

/// How many headed scripts not shared yet a wrap-up lists.
pub(crate) const MAX_PROGRESS_LINES: usize = 3;

/// What a wrap-up tells an agent.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WrapUp {
    pub agent: String,
    /// The family's bar, so the progress lines can be read.
    pub bar: SharingBar,
    /// The one-lesson prompt for the lab log.
    pub lesson_prompt: String,
    /// Up to three headed scripts not shared yet: `fight.ts: 3/5 runs, score 540/600 — not
    /// shared yet`.
    pub not_shared_yet: Vec<String>,
    /// Headed scripts that became family skills since the last wrap-up.
    pub became_family: Vec<SharingChange>,
    /// Unchanged copies of a sibling's skill.
    pub sibling_copies: Vec<String>,
    /// Proven scripts without a header, with the header to add.
    pub offers: Vec<Offer>,
    /// Inline code run again and again, with the file it should become.
    pub suggestions: Vec<mindrune_core::Suggestion>,
    /// Files skipped or read with a problem.
    pub diagnostics: Vec<String>,
    /// The agent's runs since the last wrap-up that went unrecorded because they ran in the
    /// background (`… &`, Claude Code's `run_in_background`, or moved there past the Bash
    /// timeout).
    pub unrecorded_background: usize,
    /// The agent's runs since the last wrap-up whose gains were not measured, by reason
    /// ("output cut by tail", "no state printed before it"), most first.
    pub unmeasured: Vec<UnmeasuredRuns>,
    /// The agent's runs since the last wrap-up whose outcome the output could not tell (cut by
    /// `| tail` before the runner's Result or Error): kept out of the score.
    pub outcome_unknown: usize,
}

/// How many runs were not measured for one reason.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct UnmeasuredRuns {
    pub reason: String,
    pub runs: i64,
}

impl UnmeasuredRuns {
    /// `3 runs not measured: output cut by tail`, as the wrap-up and the script page say it.
    pub fn summary(&self) -> String {
        format!("{} not measured: {}", runs_text(self.runs), self.reason)
    }
}

/// `1 run`, `3 runs`.
pub(crate) fn runs_text(runs: i64) -> String {
    if runs == 1 {
        "1 run".to_owned()
    } else {
        format!("{runs} runs")
    }
}

/// What an agent or owner is told of runs whose outcome the output could not tell.
pub fn outcome_unknown_summary(runs: i64) -> String {
    format!(
        "{} of unknown outcome, kept out of the score: the output was cut before the runner's Result or Error (it exits 0 even on a throw); run the file without `| tail` to see how it ends",
        runs_text(runs)
    )
}

/// The wrap-up of an agent, now. Marks a turn boundary (the mirror is refreshed when due) and
/// remembers the time, so the next wrap-up lists only what is new since.
pub fn wrap_up(store: &dyn Store, agent_name: &str) -> Result<WrapUp, TurnError> {
    let agent = store
        .agent_by_name(agent_name)?
        .ok_or_else(|| crate::IngestError::Invalid {
            field: None,
            message: format!(
                "no agent named `{agent_name}`; `mindrune agent list` shows the agents"
            ),
        })?;
    let recorder = Recorder::new(store);
    let workspace = std::path::PathBuf::from(&agent.workspace);
    wrap_up_with(
        &recorder,
        agent,
        &LocalFiles(&workspace),
        MirrorPolicy::WhenDue,
    )
}

/// [`wrap_up`] over any view of the agent's files (a runner's snapshot on the server, which
/// writes no mirror itself: `MirrorPolicy::Skip`).
pub fn wrap_up_with(
    recorder: &Recorder<'_>,
    agent: Agent,
    files: &dyn AgentFiles,
    mirror: MirrorPolicy,
) -> Result<WrapUp, TurnError> {
    let store = recorder.store();
    let since = agent.last_wrapup_at.unwrap_or(agent.created_at);
    let report = turn::turn_boundary_with(
        recorder,
        &agent.name,
        files,
        Boundary::TurnEnd,
        mirror,
        None,
    )?;
    let owner = store.owner(agent.owner)?;
    let bar = SharingBar::for_family(owner.eager_sharing);
    let became_family = became_family(
        store.sharing_changes(agent.owner, agent.id, since)?,
        &store.skills(agent.owner, Some(agent.id))?,
    );
    let now = now_millis();
    let suggestions = crate::avatars::snippets::advice(store, &agent, now)?;
    let unrecorded = store.unrecorded_since(agent.owner, agent.id, since)?;
    let unrecorded_background = unrecorded
        .iter()
        .filter(|call| call.reason == UnrecordedReason::Background)
        .count();
    let outcome_unknown = unrecorded
        .iter()
        .filter(|call| call.reason == UnrecordedReason::OutcomeUnknown)
        .count();
    let unmeasured = store
        .unmeasured_runs(agent.owner, UnmeasuredScope::AgentSince(agent.id, since))?
        .into_iter()
        .map(|(reason, runs)| UnmeasuredRuns { reason, runs })
        .collect();
    store.note_wrapup(agent.owner, agent.id, now)?;
    Ok(WrapUp {
        lesson_prompt: format!(
            "Write one short lesson in bots/{}/lab_log.md: what worked, what did not, and why. To share it with your family, write it as a line `Share: …` (tag it, e.g. [quest:restless-ghost]).",
            agent.name
        ),
        agent: agent.name,
        bar,
        not_shared_yet: report
            .progress
            .into_iter()
            .take(MAX_PROGRESS_LINES)
            .collect(),
        became_family,
        sibling_copies: report.sibling_copies,
        offers: report.offers,
        suggestions,
        diagnostics: report.diagnostics,
        unrecorded_background,
        unmeasured,
        outcome_unknown,
    })
}

/// The skills that became family skills since the last wrap-up: each once (at its newest
/// share), and only while it is still shared. A skill shared, un-shared and shared again is one
/// line; one shared and then un-shared is none, since the family no longer has it.
fn became_family(changes: Vec<SharingChange>, skills: &[SkillEntry]) -> Vec<SharingChange> {
    let mut newest: Vec<SharingChange> = Vec::new();
    for change in changes
        .into_iter()
        .filter(|change| change.kind == SharingKind::Shared)
    {
        match newest.iter_mut().find(|c| c.skill == change.skill) {
            Some(seen) if change.at >= seen.at => *seen = change,
            Some(_) => {}
            None => newest.push(change),
        }
    }
    newest.retain(|change| {
        skills
            .iter()
            .any(|entry| entry.skill.id == change.skill && entry.family)
    });
    newest.sort_by_key(|change| change.at);
    newest
}
