//! Inline code the agent keeps running: which of it should become a file.
//!
//! The decision is pure (`core::near_repeat`); this module feeds it the agent's snippet
//! history of the last 7 days and remembers at which run count each group was suggested, so a
//! suggestion comes again only when the code was run inline twice as often since.

use mindrune_core::{NEAR_REPEAT_WINDOW_MS, RecentSnippet, Suggestion, suggestions};
use mindrune_store::{Agent, Millis, Store, StoreError};

/// The suggestions due for an agent now, remembered as made.
pub fn advice(
    store: &dyn Store,
    agent: &Agent,
    now: Millis,
) -> Result<Vec<Suggestion>, StoreError> {
    let since = now - NEAR_REPEAT_WINDOW_MS;
    let recent: Vec<RecentSnippet> = store
        .snippet_runs_since(agent.owner, agent.id, since)?
        .into_iter()
        .map(RecentSnippet::from)
        .collect();
    let last = store.snippet_suggestions(agent.owner, agent.id, since)?;
    let due = suggestions(&agent.name, &recent, &last);
    for suggestion in &due {
        store.note_snippet_suggestion(
            agent.owner,
            agent.id,
            &suggestion.group_key,
            suggestion.count,
            now,
        )?;
    }
    Ok(due)
}
