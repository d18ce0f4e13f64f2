//! The family's skills, versions, uses and snippets as recorded: what the CLI, the turn report
//! and the wrap-up read of them, and when a snippet group was last suggested.

use crate::{
    AgentId, FailedRun, Millis, OwnerId, Result, RunTotals, Skill, SkillEntry, SkillId, Snippet,
    SnippetRuns, UnmeasuredScope, Version, VersionId,
};

/// The skills, versions, uses and snippets a family recorded.
pub trait SkillRecords {
    fn skill(&self, owner: OwnerId, skill: SkillId) -> Result<Skill>;
    fn version(&self, owner: OwnerId, version: VersionId) -> Result<Version>;
    fn snippets(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<Snippet>>;
    /// Every snippet the agent ran at or after `since`, with its runs in that window, most
    /// recently run first: the input of the near-repeat suggestions.
    fn snippet_runs_since(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<Vec<SnippetRuns>>;
    /// One entry per skill, optionally for one agent, best score first.
    fn skills(&self, owner: OwnerId, agent: Option<AgentId>) -> Result<Vec<SkillEntry>>;
    /// How many uses the owner's family has recorded (all versions).
    fn use_count(&self, owner: OwnerId) -> Result<i64>;
    /// A skill's latest failed runs (any version), newest first, at most `limit`.
    fn recent_failures(
        &self,
        owner: OwnerId,
        skill: SkillId,
        limit: usize,
    ) -> Result<Vec<FailedRun>>;
    /// At which successful-run count each snippet group was last suggested to the agent as a
    /// file (group key → runs), for suggestions made at or after `since` (an older suggestion
    /// has left the window its count was taken over, so the cadence starts over).
    fn snippet_suggestions(
        &self,
        owner: OwnerId,
        agent: AgentId,
        since: Millis,
    ) -> Result<std::collections::HashMap<String, i64>>;
    /// Remembers that a snippet group was suggested at this run count.
    fn note_snippet_suggestion(
        &self,
        owner: OwnerId,
        agent: AgentId,
        group_key: &str,
        runs: i64,
        at: Millis,
    ) -> Result<()>;
    /// How many script runs were recorded without their gains measured, by reason
    /// (`uses.unmeasured`: "output cut by tail", "no state printed before it"), most first:
    /// the runs of one avatar since a time (the wrap-up), or all runs of one skill (its page).
    fn unmeasured_runs(&self, owner: OwnerId, scope: UnmeasuredScope)
    -> Result<Vec<(String, i64)>>;
    /// A family's recorded script runs, ok and failed, all time (from its versions' counts:
    /// one read, cheap enough for every scrape of `/metrics`).
    fn run_totals(&self, owner: OwnerId) -> Result<RunTotals>;
    /// The outputs of an agent's latest runs (scripts and inline code alike) and looks
    /// (unrecorded calls of reason `look`) that happened before `before`, newest first, at most
    /// `limit`: the next run is measured against the state they show (items, skill totals, the
    /// game messages already seen).
    fn recent_outputs(
        &self,
        owner: OwnerId,
        agent: AgentId,
        before: Millis,
        limit: usize,
    ) -> Result<Vec<String>>;
}
