//! The owner's views of runs over time: a script's runs and one run, runs per day and per
//! period, the skills whose file is gone, and how large the library is.

use crate::{AgentId, DayRuns, Millis, OwnerId, PeriodRuns, Result, RunFilter, ScriptRun, SkillId};

/// The runs as the dashboard and the console show them.
pub trait RunViews {
    /// A skill's latest runs (any version), newest first, at most `limit`, with their
    /// outcomes and outputs.
    fn script_runs(&self, owner: OwnerId, skill: SkillId, limit: usize) -> Result<Vec<ScriptRun>> {
        self.script_runs_where(owner, skill, &RunFilter::default(), limit, 0)
    }
    /// A skill's runs that pass `filter`, newest first: `limit` of them after skipping the
    /// newest `offset` (a page of the runs list).
    fn script_runs_where(
        &self,
        owner: OwnerId,
        skill: SkillId,
        filter: &RunFilter,
        limit: usize,
        offset: usize,
    ) -> Result<Vec<ScriptRun>>;
    /// One run of one of the family's scripts by its use's id, with the skill it ran; `None`
    /// when the family has no such run (another family's id included).
    fn script_run(&self, owner: OwnerId, use_id: i64) -> Result<Option<(SkillId, ScriptRun)>>;
    /// An agent's skills whose file is gone (deleted or renamed), the latest gone first: they
    /// are private now and keep their history.
    fn gone_skills(&self, owner: OwnerId, agent: AgentId) -> Result<Vec<SkillId>>;
    /// The family's script runs at or after `since`, counted per UTC day and avatar, oldest
    /// day first.
    fn runs_per_day(&self, owner: OwnerId, since: Millis) -> Result<Vec<DayRuns>>;
    /// The family's runs with `from <= at < to`, one row per avatar (`None`: avatars deleted
    /// since), for a period and the one before it ("since your last visit").
    fn runs_between(&self, owner: OwnerId, from: Millis, to: Millis) -> Result<Vec<PeriodRuns>>;
    /// How many bytes the library takes: SQLite's file with its write-ahead log, the
    /// PostgreSQL database's size. `None` when it cannot be told (an in-memory library).
    fn database_size(&self) -> Result<Option<u64>>;
}
