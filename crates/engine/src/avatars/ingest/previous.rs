//! The avatar's previous state, which a run is measured against: the newest earlier output of
//! its turn, and, inside a write group, what the group itself stored (known without a read).

use std::sync::{Arc, OnceLock};

use mindrune_core::{RunOutput, parse_run_output};
use mindrune_store::{Agent, Millis, UnrecordedReason};

use super::{Ingest, IngestError};

/// An avatar's newest stored output, inside a write group: when it happened, and the output
/// when this group stored it and no other stored output has the same time. No other writer can
/// add an output while the group holds the family, so this stays true for the group's length.
#[derive(Debug, Clone)]
pub(super) struct NewestOutput {
    at: Option<Millis>,
    output: Option<Arc<GroupOutput>>,
}

/// An output a write group stored: its text, and its parse, made at most once (the run that
/// printed it was measured with it; the avatar's next run is measured against it).
#[derive(Debug)]
struct GroupOutput {
    text: String,
    parsed: OnceLock<Arc<RunOutput>>,
}

impl GroupOutput {
    fn parsed(&self) -> Arc<RunOutput> {
        self.parsed
            .get_or_init(|| Arc::new(parse_run_output(&self.text)))
            .clone()
    }
}

impl Ingest<'_> {
    /// What the avatar's state was before this call, to measure the call against: the output of
    /// the avatar's newest earlier call (run or inline code) in this turn, when it shows a
    /// readable state. Nothing spans a call without one (an output cut by `| tail`: its gains
    /// are not measured, and must not move to the next call), a run of unknown outcome, or the
    /// avatar's last turn end (the operator may have changed the avatar in between: `::give`,
    /// `::setstat`; late XP lands there too).
    pub(super) fn previous_state(
        &self,
        agent: &Agent,
        at: Millis,
    ) -> Result<Option<Arc<RunOutput>>, IngestError> {
        let mut since = agent.last_turn_at.filter(|turn| *turn < at);
        // A run of unknown outcome stored no output; the time it was noted is a break.
        let turn_or_created = since.unwrap_or(agent.created_at);
        if let Some(newest_break) = self
            .store
            .unrecorded_since(agent.owner, agent.id, turn_or_created)?
            .iter()
            // A break at this very millisecond (calls stamped on arrival) may have come
            // before this call: unknown is safer than measuring across it.
            .filter(|call| call.reason == UnrecordedReason::OutcomeUnknown && call.at <= at)
            .map(|call| call.at)
            .max()
        {
            since = Some(since.map_or(newest_break, |s| s.max(newest_break)));
        }
        // Inside a write group the output this group stored last is often the one wanted: the
        // newest of all, and older than this run (and parsed once, often already).
        if let Some((stored_at, stored)) = self.group_output_before(agent, at) {
            if since.is_some_and(|since| stored_at <= since) {
                return Ok(None);
            }
            let newest = stored.parsed();
            return Ok(newest.state_readable().then_some(newest));
        }
        let newest = self
            .store
            .recent_outputs_since(agent.owner, agent.id, since, at, 1)?;
        let Some(first) = newest.first() else {
            return Ok(None);
        };
        let first = parse_run_output(first);
        Ok(first.state_readable().then(|| Arc::new(first)))
    }

    /// Inside a write group, learns when the avatar's newest stored output happened, once per
    /// group, before the group stores one of its own.
    pub(super) fn know_newest_output(&self, agent: &Agent) -> Result<(), IngestError> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        if group.borrow().contains_key(&agent.id.0) {
            return Ok(());
        }
        let at = self.store.newest_output_at(agent.owner, agent.id)?;
        group
            .borrow_mut()
            .entry(agent.id.0)
            .or_insert(NewestOutput { at, output: None });
        Ok(())
    }

    /// Notes an output this write group just stored for the avatar at `at`, with its
    /// parse when one was made.
    pub(super) fn note_output(
        &self,
        agent: &Agent,
        at: Millis,
        text: &str,
        parsed: Option<Arc<RunOutput>>,
    ) {
        let Some(group) = &self.group else {
            return;
        };
        let mut group = group.borrow_mut();
        let Some(newest) = group.get_mut(&agent.id.0) else {
            return;
        };
        match newest.at {
            Some(known) if at < known => {}
            // Two outputs of the same time: which one a reader gets is the store's order, so
            // the group stops answering for them (unless they are the same text, as the runs
            // of one call that ran several scripts are).
            Some(known) if at == known => {
                if newest.output.as_ref().map(|o| o.text.as_str()) != Some(text) {
                    newest.output = None;
                }
            }
            _ => {
                *newest = NewestOutput {
                    at: Some(at),
                    output: Some(Arc::new(GroupOutput {
                        text: text.to_string(),
                        parsed: parsed.map(OnceLock::from).unwrap_or_default(),
                    })),
                }
            }
        }
    }

    /// The avatar's newest stored output, when this write group stored it and it
    /// happened before `at`.
    fn group_output_before(&self, agent: &Agent, at: Millis) -> Option<(Millis, Arc<GroupOutput>)> {
        let group = self.group.as_ref()?.borrow();
        let newest = group.get(&agent.id.0)?;
        match (newest.at, &newest.output) {
            (Some(known), Some(output)) if known < at => Some((known, output.clone())),
            _ => None,
        }
    }
}
