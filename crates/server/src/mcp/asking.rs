//! A tool's answer, and asking the human (elicitation or an input-required round) under `ask`.

use mindrune_core::Act;
use mindrune_engine::PlaybookError;
use rmcp::model::{ElicitResult, ElicitationAction, InputRequiredResult};
use serde_json::Value;

use super::args::{Approval, CallPrint, ECHO_CHARS, cut};

/// What a tool says back: its text, and whether the call did what was asked.
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) is_error: bool,
}

impl Answer {
    pub(super) fn ok(text: impl Into<String>) -> Self {
        Answer {
            text: text.into(),
            is_error: false,
        }
    }

    pub(super) fn error(text: impl Into<String>) -> Self {
        Answer {
            text: text.into(),
            is_error: true,
        }
    }

    /// An error that echoes an argument (a path) longer than [`ECHO_CHARS`] echoes only its
    /// start, with `…`.
    pub(super) fn cut_echoes(mut self, arguments: &[&str]) -> Self {
        if self.is_error {
            for argument in arguments {
                if argument.chars().count() > ECHO_CHARS && self.text.contains(argument) {
                    self.text = self.text.replace(argument, &cut(argument, ECHO_CHARS));
                }
            }
        }
        self
    }
}

impl From<PlaybookError> for Answer {
    fn from(err: PlaybookError) -> Self {
        if err.rule().is_none() {
            tracing::warn!(error = %err, "playbook call failed");
        }
        Answer::error(err.to_string())
    }
}

/// How the human can be asked for an act whose policy is `ask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AskBy {
    /// MCP elicitation: a request from the server to the client (protocols before 2026-07-28).
    Elicitation,
    /// An input-required result (SEP-2322, protocol 2026-07-28 and later): the tool call
    /// answers with the same form, and the client calls again with the answer.
    InputRequired,
    /// The client declared no way to ask (no form elicitation).
    Nobody,
}

/// What the human answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asked {
    Yes,
    Not(NotYes),
}

/// Every answer that is not a yes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotYes {
    /// Declined, or accepted with `approve: false`.
    No,
    /// Nobody answered: the client cancelled the question (a host running with no person at
    /// it, such as `claude -p`, cancels every one). Not a no, and not a yes.
    Cancelled,
    /// An answer that is not `{approve: true|false}`.
    Unreadable,
}

/// An act the human is asked about, for the sentences that say what did not happen.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asking {
    pub(super) act: Act,
    /// "drafted" for a create, "filed" for the others.
    pub(super) done: &'static str,
}

impl Asking {
    pub(super) fn of(act: Act) -> Asking {
        Asking {
            act,
            done: if act == Act::Create {
                "drafted"
            } else {
                "filed"
            },
        }
    }

    /// The answer to a call the human did not say yes to.
    pub(super) fn refusal(self, asked: NotYes) -> Answer {
        let done = self.done;
        let text = match asked {
            NotYes::No => format!("your human said no; nothing was {done}"),
            NotYes::Cancelled => format!(
                "Nobody answered: the client cancelled the question, which is what a host with no person at it does (`claude -p` cancels every one). That is not a no, but without a yes nothing was {done}. {}",
                self.ways_forward()
            ),
            NotYes::Unreadable => format!(
                "your human's answer could not be read as a yes or a no, so nothing was {done}"
            ),
        };
        Answer::error(text)
    }

    /// The answer when this client declared no way to ask.
    pub(super) fn nobody_to_ask(self) -> Answer {
        let act = self.act.as_str();
        Answer::error(format!(
            "This client declared no way to ask your human (no elicitation), and under `{act}: ask` nothing is {done} without their yes, so nothing was {done}. {}",
            self.ways_forward(),
            done = self.done
        ))
    }

    /// What the human can do so that this act can happen.
    pub(super) fn ways_forward(self) -> String {
        let act = self.act.as_str();
        let lines = match self.act {
            Act::Report => "`report: auto` (what `mindrune playbook init --unattended` writes) records a report and starts the fixer without asking; its revision still waits on a card while `revise` is `ask` or `card`".to_string(),
            Act::Retire => "`retire: card` files the question as a card that waits for them, unasked".to_string(),
            Act::Create | Act::Revise | Act::Revert => format!(
                "`{act}: card` files it as a card that waits for them, unasked; `{act}: auto` (what `mindrune playbook init --unattended` writes) does it on its own"
            ),
        };
        format!(
            "Ways forward, all your human's: answer in a client that shows the question; let an `Elicitation` hook of the host answer it; or change the line in permissions.yaml: {lines}."
        )
    }
}

/// The key of the one input request an input-required round carries.
pub(super) const APPROVE_KEY: &str = "approve";
/// The request state of an input-required round: a version, the tool, and the fingerprint of
/// the call's arguments. It needs no seal: whoever could forge it could as well answer the
/// question itself, and binding it to the arguments keeps a yes from carrying over to another
/// call.
pub(super) fn round_state(tool: &str, print: &CallPrint) -> String {
    format!("mindrune-ask/1 {tool} {}", print.0)
}

/// Where a call stands in the rounds of an input-required ask: what the client echoed back.
pub(super) struct Round {
    pub(super) tool: &'static str,
    pub(super) print: CallPrint,
    pub(super) state: Option<String>,
    pub(super) responses: Option<rmcp::model::InputResponses>,
}

/// How asking ended for a call: an answer, or a question to send back first.
pub(super) enum Outcome {
    Answered(Asked),
    Question(InputRequiredResult),
}

/// What a tool call replies: its answer, or (on 2026-07-28) the question to ask first.
pub(super) enum Reply {
    Answer(Answer),
    Question(InputRequiredResult),
}

/// The human's answer in an input-required retry: an `ElicitResult` under [`APPROVE_KEY`].
pub(super) fn input_answer(response: Option<&Value>) -> Asked {
    let Some(response) = response else {
        return Asked::Not(NotYes::Unreadable);
    };
    let Ok(result) = serde_json::from_value::<ElicitResult>(response.clone()) else {
        tracing::warn!(%response, "an input response that is not an elicitation result");
        return Asked::Not(NotYes::Unreadable);
    };
    match result.action {
        ElicitationAction::Decline => Asked::Not(NotYes::No),
        ElicitationAction::Cancel => Asked::Not(NotYes::Cancelled),
        ElicitationAction::Accept => match result.content.map(serde_json::from_value::<Approval>) {
            Some(Ok(Approval { approve: true })) => Asked::Yes,
            Some(Ok(Approval { approve: false })) => Asked::Not(NotYes::No),
            _ => Asked::Not(NotYes::Unreadable),
        },
        // An action this version does not know is not a yes.
        _ => Asked::Not(NotYes::Unreadable),
    }
}
