//! The Skill Lab's runners — `design`, `build`, `improve`, `harness` — as one pipeline:
//!
//! ```text
//! inspect → architect (agent act) → plan → author (agent act) → bind → apply
//! ```
//!
//! Judgment stays in the two bounded agent acts; everything else is native code. `design`
//! stops at the plan. The acts are pluggable ([`Agent`]): an agent of the agent runner
//! ([`super::agent_acts::RunnerAgent`]: Claude Code, or a command that reads the act's JSON on
//! stdin and answers on stdout), or a file of answers. An act with no answer stops the run
//! as `needs_agent` with the exact request and an answers template, as Runx does, and nothing
//! has been written at that point.

use std::path::PathBuf;

use mindrune_core::{
    ApplyResult, ArchitectureDecision, ArchitecturePlan, ChangeBundle, ChangeDraft, DecisionSchema,
    DraftSchema, parse_contract, to_json,
};
use mindrune_core::{Mode, Refusal, bind_change, plan_change};
use serde_json::{Value, json};

use super::apply::{CandidateCheck, apply_change};
use super::apply_error::ApplyError;
use super::inspect::inspect_workspace;

/// One of the four runners of the skill-lab package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Design,
    Build,
    Improve,
    Harness,
}

impl Runner {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Design => "design",
            Self::Build => "build",
            Self::Improve => "improve",
            Self::Harness => "harness",
        }
    }

    /// The apply mode of a mutating runner; `design` never applies.
    pub fn mode(self) -> Option<Mode> {
        match self {
            Self::Design => None,
            Self::Build => Some(Mode::Build),
            Self::Improve => Some(Mode::Improve),
            Self::Harness => Some(Mode::Harness),
        }
    }
}

/// The two agent acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    Architecture,
    Author,
}

impl Act {
    /// The agent task id, as in the skill-lab package's SKILL.md.
    pub fn task(self) -> &'static str {
        match self {
            Self::Architecture => "skill-lab-architecture",
            Self::Author => "skill-lab-author",
        }
    }

    /// The one output the act returns.
    pub fn output(self) -> &'static str {
        match self {
            Self::Architecture => "architecture_decision",
            Self::Author => "change_draft",
        }
    }

    fn schema(self) -> &'static str {
        match self {
            Self::Architecture => DecisionSchema::ID,
            Self::Author => DraftSchema::ID,
        }
    }

    /// The key of this act's answer in an answers file (`agent_task.<task>.output`).
    pub fn answer_key(self) -> String {
        format!("agent_task.{}.output", self.task())
    }
}

/// What the operator asked for (the skill-lab runners' inputs).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    pub repo_root: PathBuf,
    pub target_dir: String,
    pub objective: String,
    pub package_name: Option<String>,
    pub project_context: Option<String>,
    /// Improve's failure evidence.
    pub receipt_id: Option<String>,
    pub receipt_summary: Option<String>,
    pub harness_output: Option<String>,
    pub failure_packet: Option<Value>,
}

impl RunRequest {
    fn inputs(&self, runner: Runner) -> Value {
        let mut inputs = json!({
            "objective": self.objective,
            "repo_root": self.repo_root.display().to_string(),
            "target_dir": self.target_dir,
        });
        let object = inputs.as_object_mut().expect("inputs is an object");
        let mut put = |key: &str, value: Option<Value>| {
            if let Some(value) = value {
                object.insert(key.into(), value);
            }
        };
        put(
            "project_context",
            self.project_context.clone().map(Value::from),
        );
        if runner == Runner::Build {
            put("package_name", self.package_name.clone().map(Value::from));
        }
        if runner == Runner::Improve {
            put("receipt_id", self.receipt_id.clone().map(Value::from));
            put(
                "receipt_summary",
                self.receipt_summary.clone().map(Value::from),
            );
            put("failure_packet", self.failure_packet.clone());
        }
        if matches!(runner, Runner::Improve | Runner::Harness) {
            put(
                "harness_output",
                self.harness_output.clone().map(Value::from),
            );
        }
        inputs
    }
}

/// A source of the agent acts' answers.
pub trait Agent {
    /// Answers `act` given its request; `Ok(None)` means no answer is available (the run then
    /// stops as needs-agent), `Err` that the agent failed. `check` is the native step that
    /// follows the act (parse and plan, or parse and bind), without side effects: an agent
    /// that can be asked again hands its refusal back once
    /// ([`super::agent_acts::RunnerAgent`]); a file of answers has nobody to ask.
    fn answer(
        &mut self,
        act: Act,
        request: &Value,
        check: &mut dyn FnMut(&Value) -> Result<(), String>,
    ) -> Result<Option<Value>, String>;
}

/// Answers from a file shaped like Runx's resume answers:
/// `{"answers": {"agent_task.skill-lab-architecture.output": {"architecture_decision": …}}}`
/// (the `answers` wrapper is optional).
pub struct AnswersFile {
    answers: Value,
}

impl AnswersFile {
    pub fn new(value: Value) -> Self {
        let answers = value.get("answers").cloned().unwrap_or(value);
        Self { answers }
    }
}

impl Agent for AnswersFile {
    fn answer(
        &mut self,
        act: Act,
        _request: &Value,
        _check: &mut dyn FnMut(&Value) -> Result<(), String>,
    ) -> Result<Option<Value>, String> {
        Ok(self.answers.get(act.answer_key()).cloned())
    }
}

/// No agent: every act stops the run as needs-agent.
pub struct NoAgent;

impl Agent for NoAgent {
    fn answer(
        &mut self,
        _act: Act,
        _request: &Value,
        _check: &mut dyn FnMut(&Value) -> Result<(), String>,
    ) -> Result<Option<Value>, String> {
        Ok(None)
    }
}

/// One step of the run, in order, with how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    pub step: &'static str,
    pub status: &'static str,
}

/// How a run ended.
#[derive(Debug, Clone)]
pub enum RunEnd {
    /// `design` ends here: the digest-bound plan.
    Planned,
    /// A mutating runner reached `apply` (its verdict says whether anything was written).
    Applied(Box<ApplyResult>),
    /// An act had no answer: the run stops before anything is written.
    NeedsAgent { act: Act, request: Value },
    /// A step refused or failed; nothing was written.
    Failed { step: &'static str, reason: String },
}

/// The whole record of a run: every artifact it produced, for the receipt and the report.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub runner: Runner,
    pub inputs: Value,
    pub steps: Vec<StepRecord>,
    pub authoring_context: Option<Value>,
    pub plan: Option<ArchitecturePlan>,
    pub bundle: Option<ChangeBundle>,
    pub end: RunEnd,
}

impl RunReport {
    /// The public result (the graph's `result_from`): the plan for design, the apply result
    /// for the others, the request and template when an agent is needed, else the failure.
    pub fn result_json(&self) -> Value {
        match &self.end {
            RunEnd::Planned => json!({"architecture_plan": self.plan.as_ref().map(to_json)}),
            RunEnd::Applied(result) => json!({"apply_result": to_json(result.as_ref())}),
            RunEnd::NeedsAgent { act, request } => json!({
                "status": "needs_agent",
                "act": act.task(),
                "request": request,
                "answers_template": answers_template(*act),
            }),
            RunEnd::Failed { step, reason } => {
                json!({"status": "failure", "step": step, "reason": reason})
            }
        }
    }
}

/// The template an operator fills in to answer `act` (Runx's `answers_template`).
pub fn answers_template(act: Act) -> Value {
    let mut answer = serde_json::Map::new();
    answer.insert(
        act.output().into(),
        json!({"schema": act.schema(), "...": format!("one {} as the skill-lab SKILL.md's `{}` contract describes", act.schema(), act.task())}),
    );
    let mut answers = serde_json::Map::new();
    answers.insert(act.answer_key(), Value::Object(answer));
    json!({ "answers": answers })
}

/// Reads an act's answer: `{"<output>": {...}}`, or the contract itself.
fn unwrap_answer(act: Act, answer: Value) -> Value {
    match answer.get(act.output()) {
        Some(inner) if answer.as_object().is_some_and(|o| o.len() == 1) => inner.clone(),
        _ => answer,
    }
}

/// Runs `runner` for `request`, with `agent` answering the acts and `checker` validating
/// the staged candidate.
pub fn run(
    runner: Runner,
    request: &RunRequest,
    agent: &mut dyn Agent,
    checker: &mut dyn CandidateCheck,
) -> RunReport {
    let inputs = request.inputs(runner);
    let mut report = RunReport {
        runner,
        inputs: inputs.clone(),
        steps: Vec::new(),
        authoring_context: None,
        plan: None,
        bundle: None,
        end: RunEnd::Planned,
    };
    report.end = match run_steps(runner, request, &inputs, agent, checker, &mut report) {
        Ok(end) | Err(end) => end,
    };
    report
}

fn run_steps(
    runner: Runner,
    request: &RunRequest,
    inputs: &Value,
    agent: &mut dyn Agent,
    checker: &mut dyn CandidateCheck,
    report: &mut RunReport,
) -> Result<RunEnd, RunEnd> {
    let fail = |report: &mut RunReport, step: &'static str, reason: String| {
        report.steps.push(StepRecord {
            step,
            status: "failure",
        });
        RunEnd::Failed { step, reason }
    };
    let passed = |report: &mut RunReport, step: &'static str| {
        report.steps.push(StepRecord {
            step,
            status: "sealed",
        });
    };

    // inspect
    let context = inspect_workspace(&request.repo_root, Some(&request.target_dir))
        .map_err(|err| fail(report, "inspect", err.to_string()))?;
    passed(report, "inspect");
    let base_digest = context["base_digest"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    report.authoring_context = Some(context.clone());

    // architect
    let architect_request = json!({
        "task": Act::Architecture.task(),
        "runner": runner.as_str(),
        "output": Act::Architecture.output(),
        "schema": DecisionSchema::ID,
        "inputs": inputs,
        "context": {"authoring_context": context},
    });
    let mut check_plan = |answer: &Value| -> Result<(), String> {
        let decision: ArchitectureDecision = parse_contract(
            Act::Architecture.output(),
            &unwrap_answer(Act::Architecture, answer.clone()),
        )
        .map_err(|err| err.to_string())?;
        plan_change(&base_digest, decision)
            .map(|_| ())
            .map_err(|Refusal(reason)| format!("the native plan step refused it: {reason}"))
    };
    let decision: ArchitectureDecision = ask(
        agent,
        Act::Architecture,
        &architect_request,
        report,
        "architect",
        &mut check_plan,
    )?;
    passed(report, "architect");

    // plan
    let plan = plan_change(&base_digest, decision)
        .map_err(|Refusal(reason)| fail(report, "plan", reason))?;
    passed(report, "plan");
    report.plan = Some(plan.clone());
    let Some(mode) = runner.mode() else {
        return Ok(RunEnd::Planned);
    };

    // author
    let author_request = json!({
        "task": Act::Author.task(),
        "runner": runner.as_str(),
        "output": Act::Author.output(),
        "schema": DraftSchema::ID,
        "inputs": inputs,
        "context": {"architecture_plan": to_json(&plan)},
    });
    let mut check_bind = |answer: &Value| -> Result<(), String> {
        let draft: ChangeDraft = parse_contract(
            Act::Author.output(),
            &unwrap_answer(Act::Author, answer.clone()),
        )
        .map_err(|err| err.to_string())?;
        bind_change(&plan, draft)
            .map(|_| ())
            .map_err(|Refusal(reason)| format!("the native bind step refused it: {reason}"))
    };
    let draft: ChangeDraft = ask(
        agent,
        Act::Author,
        &author_request,
        report,
        "author",
        &mut check_bind,
    )?;
    passed(report, "author");

    // bind
    let bundle =
        bind_change(&plan, draft).map_err(|Refusal(reason)| fail(report, "bind", reason))?;
    passed(report, "bind");
    report.bundle = Some(bundle.clone());

    // apply
    let result = apply_change(
        &request.repo_root,
        &request.target_dir,
        mode,
        &bundle,
        checker,
    )
    .map_err(|err: ApplyError| fail(report, "apply", err.to_string()))?;
    passed(report, "apply");
    Ok(RunEnd::Applied(Box::new(result)))
}

fn ask<T: serde::de::DeserializeOwned>(
    agent: &mut dyn Agent,
    act: Act,
    request: &Value,
    report: &mut RunReport,
    step: &'static str,
    check: &mut dyn FnMut(&Value) -> Result<(), String>,
) -> Result<T, RunEnd> {
    let answer = match agent.answer(act, request, check) {
        Ok(Some(answer)) => answer,
        Ok(None) => {
            report.steps.push(StepRecord {
                step,
                status: "needs_agent",
            });
            return Err(RunEnd::NeedsAgent {
                act,
                request: request.clone(),
            });
        }
        Err(reason) => {
            report.steps.push(StepRecord {
                step,
                status: "failure",
            });
            return Err(RunEnd::Failed { step, reason });
        }
    };
    parse_contract(act.output(), &unwrap_answer(act, answer)).map_err(|err| {
        report.steps.push(StepRecord {
            step,
            status: "failure",
        });
        RunEnd::Failed {
            step,
            reason: err.to_string(),
        }
    })
}
