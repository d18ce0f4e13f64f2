//! A `skill_refine` call: its action's arguments, and the answers to what it filed.

use mindrune_engine::Answered;
use mindrune_engine::CardState;
use mindrune_engine::Filed;
use mindrune_engine::Report;

use super::args::{RefineAction, RefineArgs};
use super::asking::Answer;

/// A `skill_refine` call with the arguments its action needs.
pub(super) enum Refine {
    Report(Report),
    Revise {
        report: i64,
        content: String,
        fingerprint: String,
        token: String,
    },
    Revert {
        skill: String,
        version: u32,
    },
    Retire {
        skill: String,
        why: Option<String>,
    },
}

impl Refine {
    pub(super) fn from_args(args: RefineArgs) -> Result<Refine, String> {
        let action = args.action;
        let name = action.as_str();
        let given: [(&str, bool); 10] = [
            ("skill", args.skill.is_some()),
            ("revision", args.revision.is_some()),
            ("step", args.step.is_some()),
            ("turn", args.turn.is_some()),
            ("report", args.report.is_some()),
            ("content", args.content.is_some()),
            ("fingerprint", args.fingerprint.is_some()),
            ("version", args.version.is_some()),
            ("why", args.why.is_some()),
            ("token", args.token.is_some()),
        ];
        let takes: &[&str] = match action {
            RefineAction::Report => &["skill", "revision", "step", "turn"],
            RefineAction::Revise => &["report", "content", "fingerprint", "token"],
            RefineAction::Revert => &["skill", "version"],
            RefineAction::Retire => &["skill", "why"],
        };
        let stray: Vec<&str> = given
            .iter()
            .filter(|(key, is_given)| *is_given && !takes.contains(key))
            .map(|(key, _)| *key)
            .collect();
        if !stray.is_empty() {
            return Err(format!(
                "skill_refine {name} takes {}; it does not take {}",
                takes.join(", "),
                stray.join(", ")
            ));
        }
        let missing = |what: &str| {
            format!(
                "skill_refine {name} needs {what}; it takes {}",
                takes.join(", ")
            )
        };
        Ok(match action {
            RefineAction::Report => {
                let (Some(skill), Some(revision), Some(step)) =
                    (args.skill, args.revision, args.step)
                else {
                    let absent: Vec<&str> = [
                        ("skill", given[0].1),
                        ("revision", given[1].1),
                        ("step", given[2].1),
                    ]
                    .iter()
                    .filter(|(_, is_given)| !is_given)
                    .map(|(key, _)| *key)
                    .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Report(Report {
                    skill,
                    revision,
                    step,
                    turn: args.turn.filter(|turn| !turn.trim().is_empty()),
                })
            }
            RefineAction::Revise => {
                let (Some(report), Some(content), Some(fingerprint), Some(token)) =
                    (args.report, args.content, args.fingerprint, args.token)
                else {
                    let absent: Vec<&str> = [
                        ("report", given[4].1),
                        ("content", given[5].1),
                        ("fingerprint", given[6].1),
                        ("token", given[9].1),
                    ]
                    .iter()
                    .filter(|(_, is_given)| !is_given)
                    .map(|(key, _)| *key)
                    .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Revise {
                    report,
                    content,
                    fingerprint,
                    token,
                }
            }
            RefineAction::Revert => {
                let (Some(skill), Some(version)) = (args.skill, args.version) else {
                    let absent: Vec<&str> = [("skill", given[0].1), ("version", given[7].1)]
                        .iter()
                        .filter(|(_, is_given)| !is_given)
                        .map(|(key, _)| *key)
                        .collect();
                    return Err(missing(&absent.join(" and ")));
                };
                Refine::Revert { skill, version }
            }
            RefineAction::Retire => {
                let Some(skill) = args.skill else {
                    return Err(missing("skill"));
                };
                Refine::Retire {
                    skill,
                    why: args.why.filter(|why| !why.trim().is_empty()),
                }
            }
        })
    }
}

/// The answer to a card filed by revise, revert or retire.
pub(super) fn filed_answer(filed: Result<Filed, Answer>, what: &str) -> Answer {
    match filed {
        Ok(Filed {
            card,
            answered: None,
        }) => Answer::ok(format!(
            "Filed {what} as card #{card}; it waits for your human's answer."
        )),
        Ok(Filed {
            card,
            answered: Some(answered),
        }) => answered_answer(&format!("Filed {what} as card #{card}"), &answered),
        Err(answer) => answer,
    }
}

/// A card the runtime answered on its own at once: applied, or refused (nothing changed).
pub(super) fn answered_answer(filed: &str, answered: &Answered) -> Answer {
    match answered.state {
        CardState::Applied => Answer::ok(format!(
            "{filed}, and it was applied on its own (the card is filed as answered): {}.",
            answered.outcome
        )),
        CardState::Refused => Answer::error(format!(
            "{filed}, but it could not be applied, so nothing changed: {}",
            answered.outcome
        )),
        CardState::Waiting => Answer::ok(format!("{filed}; it waits for your human's answer.")),
        CardState::Rejected => Answer::error(format!(
            "{filed}, and it was turned down: {}",
            answered.outcome
        )),
    }
}
