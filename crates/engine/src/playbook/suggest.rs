//! Suggestions for a skill. Neither the observer nor the "what carries over" rule can write a
//! skill: each leaves a suggestion the assistant reads (attached to its next playbook tool
//! result), and the assistant decides whether to take it to the door, `skill_create`.

use super::ledger;
use super::{PlaybookError, Playbooks, Rule};

/// A task its project's checks closed as done.
#[derive(Debug, Clone)]
pub struct DoneTask {
    pub task: String,
    pub tool_calls: u32,
    /// Whether the project's own checks closed it as done (tests passed, the build is green).
    pub checks_passed: bool,
}

impl Playbooks {
    /// The observer noticed the same multi-step work being redone.
    pub fn observer_suggests(&self, text: &str) -> Result<i64, PlaybookError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(PlaybookError::refused(
                Rule::Invalid,
                "the suggestion is empty; say what work keeps being redone",
            ));
        }
        self.add_suggestion(
            "observer",
            &format!(
                "The observer noticed: {text}. If it is worth keeping, write it down with skill_create (suggested_by: observer)."
            ),
        )
    }

    /// "What carries over": a task its checks closed as done that took at least
    /// `carry_over_tool_calls` tool calls suggests a skill. `None` when it does not qualify.
    pub fn task_done(&self, done: &DoneTask) -> Result<Option<i64>, PlaybookError> {
        if !done.checks_passed || done.tool_calls < self.config.carry_over_tool_calls {
            return Ok(None);
        }
        self.add_suggestion(
            "carry-over",
            &format!(
                "\"{}\" took {} tool calls and its checks closed it as done: worth writing down as a skill with skill_create (suggested_by: carry-over, accepted_as_done: true)",
                done.task.trim(),
                done.tool_calls
            ),
        )
        .map(Some)
    }

    fn add_suggestion(&self, source: &str, text: &str) -> Result<i64, PlaybookError> {
        self.ledger
            .locked(|tx| Ok(ledger::add_suggestion(tx, source, text)?))
    }

    /// The suggestions the assistant has not been shown yet, marked shown.
    pub fn take_suggestions(&self) -> Result<Vec<String>, PlaybookError> {
        // Asked after every tool call: a read first, so the usual answer (none) takes no lock.
        let waiting = self.ledger.read(ledger::unshown_suggestions)?;
        if waiting == 0 {
            return Ok(Vec::new());
        }
        self.ledger
            .locked(|tx| Ok(ledger::take_unshown_suggestions(tx)?))
    }

    /// The carried skills, one line each with when to use it: what the assistant is shown on
    /// every turn. Other skills arrive as names alone, to be looked up with playbook_search.
    pub fn carried_lines(&self) -> Result<Vec<String>, PlaybookError> {
        let carried = super::layout::carried(&self.workspace)?;
        let mut lines = Vec::new();
        for name in carried {
            // A name on the list that is not a skill name (a hand edit) or a skill that cannot
            // be read is shown as such; it never keeps the others (or the server) from starting.
            if super::layout::check_name(&name).is_err() {
                continue;
            }
            let dir = super::layout::live_dir(&self.workspace, &name);
            let when = match super::layout::load(&dir, &name) {
                Ok(Some(skill)) => skill
                    .parsed
                    .ok()
                    .and_then(|parsed| parsed.use_when.or(parsed.trigger))
                    .unwrap_or_else(|| "(no use_when yet)".to_string()),
                Ok(None) => continue,
                Err(err) => format!("(cannot be read: {err})"),
            };
            lines.push(format!(
                "{name}: {}",
                when.lines().next().unwrap_or_default()
            ));
        }
        Ok(lines)
    }

    /// The names of the live, active skills that are not carried.
    pub fn other_skill_names(&self) -> Result<Vec<String>, PlaybookError> {
        let carried = super::layout::carried(&self.workspace)?;
        Ok(
            super::layout::list(&super::layout::skills_dir(&self.workspace))?
                .into_iter()
                .filter(|skill| skill.status() == Some(mindrune_core::Status::Active))
                .map(|skill| skill.name)
                .filter(|name| !carried.contains(name))
                .collect(),
        )
    }
}
