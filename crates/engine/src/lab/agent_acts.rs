//! The Skill Lab's two agent acts on the agent runner ([`crate::agent`]): Claude Code
//! (`--agent claude`) or any command (`--agent-cmd`), each act given the request the pipeline
//! writes (`{task, runner, output, schema, inputs, context}`) and, as its instructions, the
//! skill-lab package's own task contract text (`contracts/`).
//!
//! The agent reads the workspace with read-only tools; its answer is held to Runx's schema of
//! the act's contract and to the same native step that follows it (plan for the architecture,
//! bind for the draft), and a refusal is handed back once. Whatever it answers then goes through
//! the pipeline's own plan, bind and apply as any other answer: nothing here writes.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::runners::{Act, Agent};
use crate::agent::{self, AgentFailure, AgentLimits, Backend, READ_ONLY_TOOLS};

const ARCHITECTURE_CONTRACT: &str = include_str!("contracts/skill-lab-architecture.md");
const AUTHOR_CONTRACT: &str = include_str!("contracts/skill-lab-author.md");
const DECISION_SCHEMA: &str = include_str!("contracts/skill-architecture-decision.schema.json");
const DRAFT_SCHEMA: &str = include_str!("contracts/skill-change-draft.schema.json");

/// How MindRune's host differs from Runx's, said once before the package's contract text.
const HOST_NOTE: &str = "\
You are one bounded agent act of the Skill Lab, the Runx skill-package authoring pipeline that \
MindRune runs. The request below is the act's input: `inputs` are the operator's, `context` is \
what the native steps before you produced. Your task contract, from the skill-lab package's \
SKILL.md, follows. Where it says to call `runx_final_result`, call the StructuredOutput tool with \
that same object. `runx.skill.plan` and `fs.read_bundle` are not tools here: read files with \
Read, Grep and Glob (the working folder is the repository root); MindRune runs the native plan \
and bind checks on your answer and hands a refusal back to you once. You cannot write files: \
the package's bytes go in your answer, and the native apply step writes them after validation.

";

/// The instructions of `act`: the host's note, then the package's contract text.
pub(crate) fn instructions(act: Act) -> String {
    let contract = match act {
        Act::Architecture => ARCHITECTURE_CONTRACT,
        Act::Author => AUTHOR_CONTRACT,
    };
    format!("{HOST_NOTE}# `{}`\n{contract}", act.task())
}

/// The answer's schema: `{"<output>": <Runx's schema of the contract>}`.
pub(crate) fn answer_schema(act: Act) -> Value {
    let text = match act {
        Act::Architecture => DECISION_SCHEMA,
        Act::Author => DRAFT_SCHEMA,
    };
    let mut inner: Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    if let Some(object) = inner.as_object_mut() {
        // Identification, not constraints; the draft keyword would make a validator fetch
        // nothing but guess its dialect from a URL.
        for key in ["$id", "$schema", "x-runx-schema"] {
            object.remove(key);
        }
    }
    let mut properties = Map::new();
    properties.insert(act.output().to_string(), inner);
    json!({
        "type": "object",
        "properties": properties,
        "required": [act.output()],
        "additionalProperties": false,
    })
}

/// An agent of the runner answering the Lab's acts.
pub struct RunnerAgent {
    pub backend: Backend,
    /// The repository root: the agent's working folder.
    pub workdir: PathBuf,
    pub timeout: Duration,
    /// Dollars per act (Claude Code's count).
    pub max_usd: f64,
    /// One line per act answered or failed: its attempts, time, model turns and cost.
    pub spent: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Agent for RunnerAgent {
    fn answer(
        &mut self,
        act: Act,
        request: &Value,
        check: &mut dyn FnMut(&Value) -> Result<(), String>,
    ) -> Result<Option<Value>, String> {
        let runner_act = agent::Act {
            name: act.task().to_string(),
            instructions: instructions(act),
            request: request.clone(),
            schema: answer_schema(act),
            workdir: self.workdir.clone(),
            read_dirs: Vec::new(),
            tools: READ_ONLY_TOOLS
                .iter()
                .map(|tool| tool.to_string())
                .collect(),
            limits: AgentLimits {
                timeout: self.timeout,
                max_usd: self.max_usd,
            },
            command_env: vec![("MINDRUNE_LAB_ACT".to_string(), act.task().to_string())],
        };
        // A command may print the contract bare, as `--agent-cmd` always allowed.
        let output = act.output();
        let wrap = |answer: &Value| -> Value {
            if answer.get(output).is_some() && answer.as_object().is_some_and(|o| o.len() == 1) {
                answer.clone()
            } else {
                let mut object = Map::new();
                object.insert(output.to_string(), answer.clone());
                Value::Object(object)
            }
        };
        let backend = self.backend.clone();
        let outcome = match &backend {
            Backend::Command { .. } => {
                agent::run_normalized(&backend, &runner_act, wrap, |answer| check(answer))
            }
            Backend::Claude { .. } => agent::run(&backend, &runner_act, |answer| check(answer)),
        };
        let attempts = match &outcome {
            Ok(answered) => answered.attempts.as_slice(),
            Err(failure) => failure.attempts(),
        };
        if let Ok(mut spent) = self.spent.lock() {
            spent.push(format!(
                "{}: {}",
                act.task(),
                agent::attempts_line(attempts)
            ));
        }
        match outcome {
            Ok(answered) => Ok(Some(answered.answer)),
            Err(AgentFailure::NoAnswer { .. }) => Ok(None),
            // The second answer goes on to the pipeline's own checks, which refuse it in their
            // own words (and seal that refusal), as they would any answer.
            Err(AgentFailure::Refused {
                last: Some(last), ..
            }) => Ok(Some(last)),
            Err(failure) => Err(failure.to_string()),
        }
    }
}
