//! A fanout group: contiguous `mode: fanout` steps naming one `fanout_group`, run and then
//! judged by the graph's `fanout.groups.<id>` policy as Runx judges them
//! (`runx-core/src/state_machine/sequential_graph/fanout_group.rs`, `state_machine/fanout.rs`
//! with its `threshold.rs` and `conflict.rs`, `runx-parser/src/graph/fanout.rs` for the
//! defaults, `runx-runtime/src/execution/runner/graph_engine.rs` for what each decision does):
//! * every branch whose `when` holds runs, in order, a failed one not stopping the others; a
//!   failed branch with retry budget left runs again once the round is over (`b1,b2,b1`), until
//!   no branch is left to run;
//! * then the group's decision: `on_branch_failure: halt` (the default for `strategy: all`,
//!   `continue` for `any` and `quorum`) with a failed branch fails the run itself (`graph step
//!   '<first branch>' failed planning: 1/3 branches failed and on_branch_failure is halt`, no
//!   receipt); then each threshold gate (a succeeded branch's numeric field above `above`:
//!   `<step>.<field>=<value> exceeded <above>`; a missing or non-numeric field fails planning),
//!   then each conflict gate (succeeded branches disagreeing on a field: `fanout branches
//!   disagreed on structured field <field>`); then the successes against the strategy's
//!   requirement (all branches; one; `min_success`), short of it failing planning (`1/3
//!   branches succeeded; required 2`). A skipped branch counts as neither;
//! * a gate's `pause` or `escalate` seals a failed run, not an escalated one: Runx records one
//!   more failed attempt of the group's first branch (the trace reads `b1,b2,b1`) and the
//!   run's error is `graph step '<first branch>' paused: <reason>` (`escalated: …`).

use serde_json::{Map, Value};

use super::super::{CaseStatus, CaseStop};
use super::graph::{Halt, Walk, attempt, max_attempts, should_skip, step_id};
use super::{Env, resolve_path, text};

/// The fanout group a step belongs to.
pub(super) fn group_of(step: &Value) -> Option<&str> {
    text(step, "fanout_group").filter(|group| !group.is_empty())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    All,
    Any,
    Quorum,
}

#[derive(Debug, Clone, PartialEq)]
struct Threshold {
    step: String,
    field: String,
    above: f64,
    escalate: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Conflict {
    field: String,
    steps: Vec<String>,
    escalate: bool,
}

/// A group's `fanout.groups.<id>` policy, Runx's defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Policy {
    strategy: Strategy,
    min_success: Option<usize>,
    halt_on_failure: bool,
    thresholds: Vec<Threshold>,
    conflicts: Vec<Conflict>,
}

fn escalates(gate: &Value) -> bool {
    text(gate, "action") == Some("escalate")
}

impl Policy {
    /// The policy `graph` declares for `group` (a group it does not declare is Runx's default:
    /// all branches, halting on a failure).
    pub(super) fn of(graph: &Value, group: &str) -> Self {
        let declared = graph
            .get("fanout")
            .and_then(|fanout| fanout.get("groups"))
            .and_then(|groups| groups.get(group))
            .cloned()
            .unwrap_or(Value::Null);
        let strategy = match text(&declared, "strategy") {
            Some("any") => Strategy::Any,
            Some("quorum") => Strategy::Quorum,
            _ => Strategy::All,
        };
        let halt_on_failure = match text(&declared, "on_branch_failure") {
            Some("halt") => true,
            Some("continue") => false,
            _ => strategy == Strategy::All,
        };
        let gates = |key: &str| {
            declared
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Self {
            strategy,
            min_success: declared
                .get("min_success")
                .and_then(Value::as_u64)
                .and_then(|value| usize::try_from(value).ok()),
            halt_on_failure,
            thresholds: gates("threshold_gates")
                .iter()
                .filter_map(|gate| {
                    Some(Threshold {
                        step: text(gate, "step")?.to_owned(),
                        field: text(gate, "field")?.to_owned(),
                        above: gate.get("above")?.as_f64()?,
                        escalate: escalates(gate),
                    })
                })
                .collect(),
            conflicts: gates("conflict_gates")
                .iter()
                .filter_map(|gate| {
                    Some(Conflict {
                        field: text(gate, "field")?.to_owned(),
                        steps: gate
                            .get("steps")
                            .and_then(Value::as_array)
                            .map(|steps| {
                                steps
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        escalate: escalates(gate),
                    })
                })
                .collect(),
        }
    }

    fn required(&self, branches: usize) -> usize {
        match self.strategy {
            Strategy::All => branches,
            Strategy::Any => 1,
            Strategy::Quorum => self.min_success.unwrap_or(branches),
        }
    }
}

/// Where a branch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Branch {
    Pending,
    Succeeded,
    Failed,
    Skipped,
}

/// What the group's sync point decides.
#[derive(Debug, Clone, PartialEq)]
enum Decision {
    Proceed,
    Halt(String),
    Pause(String),
    Escalate(String),
}

fn gate(escalate: bool, reason: String) -> Decision {
    if escalate {
        Decision::Escalate(reason)
    } else {
        Decision::Pause(reason)
    }
}

/// One branch as the sync point sees it: its id, state and outputs.
type BranchResult<'a> = (&'a str, Branch, Option<&'a Map<String, Value>>);

/// Runx's `evaluate_fanout_sync` over each branch's result.
fn decide(policy: &Policy, results: &[BranchResult<'_>]) -> Decision {
    let branches = results.len();
    let count = |state: Branch| results.iter().filter(|(_, s, _)| *s == state).count();
    let (successes, failures) = (count(Branch::Succeeded), count(Branch::Failed));
    if policy.halt_on_failure && failures > 0 {
        return Decision::Halt(format!(
            "{failures}/{branches} branches failed and on_branch_failure is halt"
        ));
    }
    let succeeded = |step: &str| {
        results
            .iter()
            .find(|(id, state, _)| *id == step && *state == Branch::Succeeded)
    };
    let field = |outputs: Option<&Map<String, Value>>, path: &str| {
        outputs
            .and_then(|outputs| resolve_path(outputs, path))
            .cloned()
    };
    for threshold in &policy.thresholds {
        let Some((_, _, outputs)) = succeeded(&threshold.step) else {
            continue;
        };
        let at = format!("{}.{}", threshold.step, threshold.field);
        let Some(value) = field(*outputs, &threshold.field) else {
            return Decision::Halt(format!("threshold field {at} was not produced"));
        };
        let Some(number) = value.as_f64() else {
            return Decision::Halt(format!("threshold field {at} must be numeric"));
        };
        if number > threshold.above {
            let reason = format!("{at}={number} exceeded {}", threshold.above);
            return gate(threshold.escalate, reason);
        }
    }
    for conflict in &policy.conflicts {
        let distinct: std::collections::BTreeSet<String> = results
            .iter()
            .filter(|(id, state, _)| {
                *state == Branch::Succeeded
                    && (conflict.steps.is_empty() || conflict.steps.iter().any(|s| s == id))
            })
            .map(|(_, _, outputs)| {
                field(*outputs, &conflict.field)
                    .map_or_else(|| "undefined".to_owned(), |value| value.to_string())
            })
            .collect();
        if distinct.len() > 1 {
            let reason = format!(
                "fanout branches disagreed on structured field {}",
                conflict.field
            );
            return gate(conflict.escalate, reason);
        }
    }
    let required = policy.required(branches);
    if successes >= required {
        Decision::Proceed
    } else {
        Decision::Halt(format!(
            "{successes}/{branches} branches succeeded; required {required}"
        ))
    }
}

/// Run the group's `branches` and judge them by `policy`.
pub(super) fn run_group(
    policy: &Policy,
    branches: &[Value],
    inputs: &Map<String, Value>,
    walk: &mut Walk,
    env: &mut Env<'_>,
) -> Result<(), Halt> {
    let ids = branches
        .iter()
        .map(step_id)
        .collect::<Result<Vec<_>, _>>()?;
    let mut states = Vec::with_capacity(branches.len());
    for (branch, id) in branches.iter().zip(&ids) {
        let skipped = branch
            .get("when")
            .is_some_and(|when| should_skip(when, &walk.outputs, &walk.skipped));
        if skipped {
            walk.skipped.push(id.clone());
            walk.trace(id, "skipped");
        }
        states.push((
            if skipped {
                Branch::Skipped
            } else {
                Branch::Pending
            },
            0u64,
        ));
    }
    loop {
        let round: Vec<usize> = (0..branches.len())
            .filter(|&index| {
                let (state, attempts) = states[index];
                state == Branch::Pending
                    || (state == Branch::Failed && attempts < max_attempts(&branches[index]))
            })
            .collect();
        if round.is_empty() {
            break;
        }
        for index in round {
            let ran = attempt(&branches[index], &ids[index], inputs, walk, env);
            states[index].1 += 1;
            states[index].0 = match (ran.stop, ran.status) {
                (None, _) => Branch::Succeeded,
                (Some(_), CaseStatus::Failure) => {
                    // Runx's checkpoint holds a failed step's contract as `{}`: that is what
                    // its `expect.step_outputs` reads once the group has proceeded past it.
                    walk.outputs
                        .insert(ids[index].clone(), Value::Object(Map::new()));
                    Branch::Failed
                }
                // A branch waiting on an agent or denied by policy ends the run as a step does.
                (Some(message), status) => {
                    return Err(Halt {
                        status,
                        error: format!("step {}: {message}", ids[index]),
                        stop: None,
                        result: None,
                    });
                }
            };
        }
    }
    let results: Vec<_> = ids
        .iter()
        .zip(&states)
        .map(|(id, (state, _))| {
            let outputs = walk.outputs.get(id).and_then(Value::as_object);
            (id.as_str(), *state, outputs)
        })
        .collect();
    let first = &ids[0];
    let (word, reason) = match decide(policy, &results) {
        Decision::Proceed => return Ok(()),
        Decision::Halt(reason) => {
            return Err(Halt {
                status: CaseStatus::Failure,
                error: format!("graph step '{first}' failed planning: {reason}"),
                stop: Some(CaseStop::Failed),
                result: None,
            });
        }
        Decision::Pause(reason) => ("paused", reason),
        Decision::Escalate(reason) => ("escalated", reason),
    };
    walk.trace(first, "failed");
    let error = format!("graph step '{first}' {word}: {reason}");
    Err(Halt {
        status: CaseStatus::Failure,
        result: Some(error.clone()),
        error,
        stop: None,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(group: Value) -> Policy {
        Policy::of(&json!({"fanout": {"groups": {"g": group}}}), "g")
    }

    fn states(states: &[Branch]) -> Vec<(String, Branch)> {
        states
            .iter()
            .enumerate()
            .map(|(index, state)| (format!("b{}", index + 1), *state))
            .collect()
    }

    fn decide_on(policy: &Policy, branches: &[Branch]) -> Decision {
        let named = states(branches);
        let results: Vec<_> = named
            .iter()
            .map(|(id, s)| (id.as_str(), *s, None))
            .collect();
        decide(policy, &results)
    }

    use Branch::{Failed as F, Skipped as K, Succeeded as S};

    #[test]
    fn defaults_follow_the_strategy() {
        let all = policy(json!({}));
        assert!(all.halt_on_failure);
        assert_eq!(all.strategy, Strategy::All);
        assert!(!policy(json!({"strategy": "any"})).halt_on_failure);
        assert!(!policy(json!({"strategy": "quorum", "min_success": 1})).halt_on_failure);
        assert!(policy(json!({"strategy": "any", "on_branch_failure": "halt"})).halt_on_failure);
        assert_eq!(Policy::of(&json!({}), "g"), all);
    }

    #[test]
    fn counts_decide_as_runx_words_them() {
        assert_eq!(
            decide_on(&policy(json!({})), &[S, F, S]),
            Decision::Halt("1/3 branches failed and on_branch_failure is halt".into())
        );
        let cont = policy(json!({"on_branch_failure": "continue"}));
        assert_eq!(
            decide_on(&cont, &[S, F]),
            Decision::Halt("1/2 branches succeeded; required 2".into())
        );
        assert_eq!(decide_on(&cont, &[S, S]), Decision::Proceed);
        assert_eq!(
            decide_on(&policy(json!({"strategy": "any"})), &[S, F]),
            Decision::Proceed
        );
        let quorum = policy(json!({"strategy": "quorum", "min_success": 2}));
        assert_eq!(decide_on(&quorum, &[S, F, S]), Decision::Proceed);
        assert_eq!(
            decide_on(&quorum, &[F, F, S]),
            Decision::Halt("1/3 branches succeeded; required 2".into())
        );
        // A skipped branch is neither a success nor a failure, but still a branch.
        assert_eq!(
            decide_on(&policy(json!({})), &[S, K]),
            Decision::Halt("1/2 branches succeeded; required 2".into())
        );
    }

    #[test]
    fn gates_read_the_succeeded_branches_outputs() {
        let threshold = policy(json!({"threshold_gates": [
            {"step": "b1", "field": "score", "above": 5, "action": "escalate"}]}));
        let high = json!({"score": 9}).as_object().cloned().unwrap();
        let low = json!({"score": 3}).as_object().cloned().unwrap();
        let text = json!({"score": "x"}).as_object().cloned().unwrap();
        let with = |outputs: &Map<String, Value>| {
            decide(&threshold, &[("b1", S, Some(outputs)), ("b2", S, None)])
        };
        assert_eq!(
            with(&high),
            Decision::Escalate("b1.score=9 exceeded 5".into())
        );
        assert_eq!(with(&low), Decision::Proceed);
        assert_eq!(
            with(&text),
            Decision::Halt("threshold field b1.score must be numeric".into())
        );
        assert_eq!(
            with(&Map::new()),
            Decision::Halt("threshold field b1.score was not produced".into())
        );
        let conflict = policy(json!({"conflict_gates": [{"field": "score", "action": "pause"}]}));
        assert_eq!(
            decide(&conflict, &[("b1", S, Some(&high)), ("b2", S, Some(&low))]),
            Decision::Pause("fanout branches disagreed on structured field score".into())
        );
        assert_eq!(
            decide(&conflict, &[("b1", S, Some(&high)), ("b2", S, Some(&high))]),
            Decision::Proceed
        );
    }
}
