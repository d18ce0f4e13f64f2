//! Runx's catalog semantic enforcement at load (`runx-parser/src/package/validate.rs`,
//! `skill/catalog.rs`, `analyze_package_catalog_semantics`): a package whose catalog is
//! `public` must prove, in its harness, what a cold agent needs to pick it and what its
//! default runner does:
//!
//! - `missing_cold_selection_proof`: a completed (`expect.status: sealed`) standalone journey
//!   on the default runner naming at least two nearby public skills (confusors) other than
//!   itself;
//! - `missing_standalone_default_proof`: a completed standalone journey on the default runner;
//! - `missing_composed_reuse_proof`: a completed composed journey.
//!
//! A package-runner case (an inline `harness.cases` entry, or a `kind: skill` fixture whose
//! `target` is `..`) exercises the default runner when it names no runner or names it; any
//! other fixture when its journey says `exercises_runner: <default>`.
//!
//! Before those, the structural diagnostics (`analyze_catalog_semantics`) hold the catalog's
//! promise to what the default runner's execution closure reaches ([`super::closure`]):
//!
//! - `public_promise_mismatch`: the skill's name promises an operation (a word `send`, `sync`,
//!   `notify`, `spend`, `refund`, `settle`, `publish`, `file`, `unseal`, `pay`, `charge`,
//!   `release`, or the names `issue-to-pr`, `dispute-respond`) and `execution` is not `execute`;
//! - `default_runner_is_planning_only`: `execution: execute` (or an operation name) and the
//!   closure reaches no mutation, readback, adapter or agent act; or an operation name, a
//!   runner named for planning (`plan`, `draft`, `prepare`) and no mutation or readback;
//! - `provider_readback_unreachable`: `completion: provider_readback` and no readback;
//! - `adapter_unreachable`: `requires_adapter: true` and neither readback nor an adapter;
//! - `approval_unreachable`: `approval: required` and no mutation;
//! - `mock_default`, `fixture_default`: the closure is a mock or demo, a fixture or harness.
//!
//! Every diagnostic refuses the package, all of them on one line in that order, structural
//! ones first.
//!
//! The same analysis is the inspection's `semantic_report` ([`semantic_report`]), shaped as
//! Runx's `CatalogSemanticReport`: `mode` (always `enforced`), `skill`, `defaultRunner`,
//! `diagnostics` (each `code, skill, runner, claimedExecution, claimedCompletion, observed,
//! requiredCorrection`) and `readiness`. An `internal` catalog is not enforced at load, and
//! its report still carries the diagnostics Runx makes of any catalog (the execution,
//! completion, adapter and approval promises; the name's promise, mock and fixture defaults
//! and the journey proofs are judged only for a public one), with `readiness` unevaluated.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::closure::{ClosureFacts, contains_word, default_runner_facts};
use super::model::{Catalog, ExecutionProfile, Fixture, Runner};
use super::{PROFILE_FILE, PackageError};

/// Runx's `CatalogOperatorReadiness`: which journey proofs the harness holds for the default
/// runner, and the first cases holding them.
#[derive(Default)]
struct Readiness {
    evaluated: bool,
    cold_selection: bool,
    standalone_default: bool,
    composed_reuse: bool,
    /// Runx's `providerProof: harness` (else `none`): a sealed standalone journey ran the
    /// default runner, whose result holds a provider readback, without supplied agent answers.
    provider_proof: bool,
    supplied_agent_answers: bool,
    cold_selection_confusors: Vec<String>,
    standalone_case: Option<String>,
    composed_case: Option<String>,
}

impl Readiness {
    fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("evaluated".into(), json!(self.evaluated));
        out.insert("coldSelection".into(), json!(self.cold_selection));
        out.insert("standaloneDefault".into(), json!(self.standalone_default));
        out.insert("composedReuse".into(), json!(self.composed_reuse));
        out.insert("providerProof".into(), json!(self.provider_proof_name()));
        out.insert(
            "suppliedAgentAnswers".into(),
            json!(self.supplied_agent_answers),
        );
        if !self.cold_selection_confusors.is_empty() {
            out.insert(
                "coldSelectionConfusors".into(),
                json!(self.cold_selection_confusors),
            );
        }
        if let Some(case) = &self.standalone_case {
            out.insert("standaloneCase".into(), json!(case));
        }
        if let Some(case) = &self.composed_case {
            out.insert("composedCase".into(), json!(case));
        }
        Value::Object(out)
    }

    fn provider_proof_name(&self) -> &'static str {
        if self.provider_proof {
            "harness"
        } else {
            "none"
        }
    }

    /// Runx's `readiness_observations`: the `observed` of every journey diagnostic.
    fn observations(&self) -> Vec<String> {
        let mut observed: Vec<String> = [
            (self.cold_selection, "cold_selection_harness"),
            (self.standalone_default, "standalone_default_harness"),
            (self.composed_reuse, "composed_reuse_harness"),
            (self.supplied_agent_answers, "supplied_agent_answers"),
        ]
        .into_iter()
        .filter(|(holds, _)| *holds)
        .map(|(_, name)| name.to_owned())
        .collect();
        observed.push(format!("provider_proof:{}", self.provider_proof_name()));
        observed
    }
}

/// One case or fixture, as the readiness reads it.
struct Case<'a> {
    name: &'a str,
    /// An inline case, or a `kind: skill` fixture whose `target` is `..`.
    package_runner_case: bool,
    runner: Option<&'a str>,
    json: &'a Value,
}

fn update(
    readiness: &mut Readiness,
    skill: &str,
    default: &str,
    facts: &ClosureFacts,
    case: &Case<'_>,
) {
    let completed = case.json["expect"]["status"] == "sealed";
    let answers = case.json["caller"]["answers"]
        .as_object()
        .is_some_and(|answers| !answers.is_empty());
    for journey in case.json["operator_journeys"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let exercises_default = if case.package_runner_case {
            case.runner.is_none_or(|runner| runner == default)
        } else {
            journey["exercises_runner"].as_str() == Some(default)
        };
        match journey["mode"].as_str() {
            Some("standalone") if exercises_default && completed => {
                readiness.standalone_default = true;
                readiness
                    .standalone_case
                    .get_or_insert_with(|| case.name.to_owned());
                readiness.supplied_agent_answers |= answers;
                let confusors: BTreeSet<&str> = journey["confusors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::trim)
                    .filter(|value| !value.is_empty() && *value != skill)
                    .collect();
                if confusors.len() >= 2 {
                    readiness.cold_selection = true;
                    readiness.cold_selection_confusors =
                        confusors.into_iter().map(str::to_owned).collect();
                }
                if facts.provider_readback && !answers {
                    readiness.provider_proof = true;
                }
            }
            Some("composed") if completed => {
                readiness.composed_reuse = true;
                readiness
                    .composed_case
                    .get_or_insert_with(|| case.name.to_owned());
            }
            _ => {}
        }
    }
}

/// One diagnostic: Runx's code, required correction and observed facts, and MindRune's
/// account of it.
struct Diagnostic {
    code: &'static str,
    correction: &'static str,
    observed: Vec<String>,
    hint: String,
}

/// Whether the skill's name promises a terminal operation (Runx's
/// `inferred_operation_promise`).
fn inferred_operation_promise(skill: &str) -> bool {
    contains_word(
        skill,
        &[
            "send", "sync", "notify", "spend", "refund", "settle", "publish", "file", "unseal",
            "pay", "charge", "release",
        ],
    ) || matches!(skill, "issue-to-pr" | "dispute-respond")
}

/// The structural diagnostics of a catalog against its default runner's closure, in Runx's
/// order (the name's promise, mock and fixture defaults only of a public catalog).
fn structural_diagnostics(
    skill: &str,
    runner: &str,
    catalog: &Catalog,
    facts: &ClosureFacts,
) -> Vec<Diagnostic> {
    let public = catalog.visibility == "public";
    let observed: Vec<String> = facts.observations.iter().cloned().collect();
    let mut found = Vec::new();
    let mut push = |code, correction, hint: String| {
        found.push(Diagnostic {
            code,
            correction,
            observed: observed.clone(),
            hint,
        });
    };
    let operation = public && inferred_operation_promise(skill);
    let execute = catalog.execution.as_deref() == Some("execute");
    if operation && !execute {
        push(
            "public_promise_mismatch",
            "declare execute/provider_readback for the operation promise or refocus the public capability so its name promises only the returned artifact",
            format!(
                "the name {skill:?} promises an operation but execution is {}",
                catalog
                    .execution
                    .as_deref()
                    .map_or_else(|| "not declared".to_owned(), |e| format!("{e:?}"))
            ),
        );
    }
    if (execute || operation)
        && !facts.mutation
        && !facts.provider_readback
        && !facts.adapter
        && !facts.agent
    {
        push(
            "default_runner_is_planning_only",
            "make the default runner reach the advertised terminal operation; retain this runner as an explicit plan or inspect runner",
            format!(
                "runner {runner:?} reaches no mutation, provider readback, adapter or agent act"
            ),
        );
    } else if operation && facts.planning_name && !facts.mutation && !facts.provider_readback {
        push(
            "default_runner_is_planning_only",
            "select an end-to-end default and keep the planning runner explicitly named",
            format!(
                "runner {runner:?} is named for planning and reaches no mutation or provider readback"
            ),
        );
    }
    if catalog.completion.as_deref() == Some("provider_readback") && !facts.provider_readback {
        push(
            "provider_readback_unreachable",
            "route the default execution closure through provider.read/provider.mutate and return its durable readback, or correct completion metadata",
            format!(
                "completion is provider_readback but no provider or network effect of runner {runner:?} reaches its result"
            ),
        );
    }
    if catalog.requires_adapter == Some(true) && !facts.provider_readback && !facts.adapter {
        push(
            "adapter_unreachable",
            "make a declared provider or adapter boundary reachable from the default runner, or remove requires_adapter",
            format!(
                "requires_adapter is true but runner {runner:?} reaches no provider, network or data adapter"
            ),
        );
    }
    if catalog.approval.as_deref() == Some("required") && !facts.mutation {
        push(
            "approval_unreachable",
            "place one exact approval at the reachable consequential mutation, or correct approval metadata",
            format!("approval is required but runner {runner:?} reaches no mutation"),
        );
    }
    if public && facts.mock {
        push(
            "mock_default",
            "move mock execution to an explicit test runner and select a real or truthfully blocked production default",
            format!("runner {runner:?} runs a mock or demo path"),
        );
    }
    if public && facts.fixture {
        push(
            "fixture_default",
            "move fixture execution to harness-only coverage and select an operator-facing default",
            format!("runner {runner:?} runs a fixture, harness or test path"),
        );
    }
    found
}

/// The readiness of a public package's harness for its default runner: inline cases first,
/// then the fixtures by path.
fn readiness(
    skill: &str,
    default: &str,
    profile: &ExecutionProfile,
    fixtures: &[Fixture],
    facts: &ClosureFacts,
) -> Readiness {
    let mut readiness = Readiness {
        evaluated: true,
        ..Readiness::default()
    };
    for case in profile.harness.iter().flat_map(|harness| &harness.cases) {
        let case = Case {
            name: &case.name,
            package_runner_case: true,
            runner: case.runner.as_deref(),
            json: &case.json,
        };
        update(&mut readiness, skill, default, facts, &case);
    }
    let mut fixtures: Vec<&Fixture> = fixtures.iter().collect();
    fixtures.sort_by(|a, b| a.path.cmp(&b.path));
    for fixture in fixtures {
        let case = Case {
            name: &fixture.name,
            package_runner_case: fixture.kind == "skill" && fixture.target == "..",
            runner: fixture.runner.as_deref(),
            json: &fixture.json,
        };
        update(&mut readiness, skill, default, facts, &case);
    }
    readiness
}

/// The journey diagnostics of a public package whose harness lacks the proofs.
fn journey_diagnostics(default: &str, readiness: &Readiness) -> Vec<Diagnostic> {
    let observed = readiness.observations();
    let mut found = Vec::new();
    let mut push = |code, correction, hint: String| {
        found.push(Diagnostic {
            code,
            correction,
            observed: observed.clone(),
            hint,
        });
    };
    if !readiness.cold_selection {
        push(
            "missing_cold_selection_proof",
            "add a standalone journey for the actual default runner with at least two nearby public skill confusors",
            format!(
                "no fixture proves a sealed standalone journey on runner {default:?} naming two confusors"
            ),
        );
    }
    if !readiness.standalone_default {
        push(
            "missing_standalone_default_proof",
            "run a standalone operator journey against the actual default runner rather than a convenient phase runner",
            format!("no fixture proves a sealed standalone journey on runner {default:?}"),
        );
    }
    if !readiness.composed_reuse {
        push(
            "missing_composed_reuse_proof",
            "add a composed journey that names reused prior evidence and work that must not be repeated",
            "no fixture proves a sealed composed journey".to_owned(),
        );
    }
    found
}

/// The package's catalog semantics: its default runner, the diagnostics in Runx's order
/// (structural, then the journey proofs of a public catalog) and the readiness.
struct Analysis<'a> {
    default: Option<&'a Runner>,
    diagnostics: Vec<Diagnostic>,
    readiness: Readiness,
}

fn analyze<'a>(skill: &str, profile: &'a ExecutionProfile, fixtures: &[Fixture]) -> Analysis<'a> {
    let default = profile
        .runners
        .iter()
        .find(|runner| runner.default)
        .or_else(|| (profile.runners.len() == 1).then(|| &profile.runners[0]));
    let mut analysis = Analysis {
        default,
        diagnostics: Vec::new(),
        readiness: Readiness::default(),
    };
    let (Some(runner), Some(catalog)) = (default, &profile.catalog) else {
        return analysis;
    };
    let facts = default_runner_facts(skill, profile, runner);
    analysis.diagnostics = structural_diagnostics(skill, &runner.name, catalog, &facts);
    if catalog.visibility == "public" {
        analysis.readiness = readiness(skill, &runner.name, profile, fixtures, &facts);
        let journeys = journey_diagnostics(&runner.name, &analysis.readiness);
        analysis.diagnostics.extend(journeys);
    }
    analysis
}

/// Runx's `semantic_report` of a package whose skill is `skill` (SKILL.md's name): the catalog
/// semantics of its default runner, as `runx skill inspect` prints them.
pub(crate) fn semantic_report(
    skill: &str,
    profile: &ExecutionProfile,
    fixtures: &[Fixture],
) -> Value {
    let analysis = analyze(skill, profile, fixtures);
    let catalog = profile.catalog.as_ref();
    let diagnostics: Vec<Value> = analysis
        .diagnostics
        .iter()
        .map(|diagnostic| {
            let mut out = Map::new();
            out.insert("code".into(), json!(diagnostic.code));
            out.insert("skill".into(), json!(skill));
            let runner = analysis.default.map(|runner| runner.name.as_str());
            out.insert("runner".into(), json!(runner));
            if let Some(execution) = catalog.and_then(|c| c.execution.as_deref()) {
                out.insert("claimedExecution".into(), json!(execution));
            }
            if let Some(completion) = catalog.and_then(|c| c.completion.as_deref()) {
                out.insert("claimedCompletion".into(), json!(completion));
            }
            out.insert("observed".into(), json!(diagnostic.observed));
            out.insert("requiredCorrection".into(), json!(diagnostic.correction));
            Value::Object(out)
        })
        .collect();
    let mut report = Map::new();
    report.insert("mode".into(), json!("enforced"));
    report.insert("skill".into(), json!(skill));
    if let Some(runner) = analysis.default {
        report.insert("defaultRunner".into(), json!(runner.name));
    }
    report.insert("diagnostics".into(), Value::Array(diagnostics));
    report.insert("readiness".into(), analysis.readiness.to_json());
    Value::Object(report)
}

/// The refusal Runx gives a public package whose default runner drifts from its catalog's
/// promise or whose harness lacks the proofs, or `Ok`. `catalog_line` is the line of
/// `catalog:` in X.yaml, for MindRune's second line.
pub(super) fn check_catalog_semantics(
    skill: &str,
    profile: &ExecutionProfile,
    fixtures: &[Fixture],
    catalog_line: usize,
) -> Result<(), PackageError> {
    if profile
        .catalog
        .as_ref()
        .is_none_or(|catalog| catalog.visibility != "public")
    {
        return Ok(());
    }
    let analysis = analyze(skill, profile, fixtures);
    let (Some(default), false) = (analysis.default, analysis.diagnostics.is_empty()) else {
        return Ok(());
    };
    let diagnostics = &analysis.diagnostics;
    let corrections = diagnostics
        .iter()
        .map(|d| format!("{} on runner {:?}: {}", d.code, default.name, d.correction))
        .collect::<Vec<_>>()
        .join("; ");
    let hints = diagnostics
        .iter()
        .map(|d| d.hint.as_str())
        .collect::<Vec<_>>()
        .join("; ");
    Err(PackageError::Invalid {
        file: PROFILE_FILE.to_owned(),
        line: catalog_line,
        field: "catalog".to_owned(),
        message: format!(
            "visibility is public, and Runx loads a public package only when its default \
             runner keeps the catalog's promise and its fixtures prove it: {hints}; fix them or \
             make the catalog internal"
        ),
        runx: Some(format!(
            "X.yaml.catalog: catalog semantic enforcement rejected the package: {corrections}"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{SnapshotFile, load_package};

    /// A public graph package: `capability` lines under `catalog`, the default runner
    /// `runner` (with `runner_extra` lines) whose graph returns `result` from `steps`, and a
    /// harness holding every journey proof, so only structural diagnostics can refuse it.
    fn package(
        skill: &str,
        capability: &str,
        runner: &str,
        runner_extra: &str,
        result: &str,
        steps: &str,
    ) -> Vec<SnapshotFile> {
        let profile = format!(
            "skill: {skill}
catalog:
  kind: graph
  audience: public
  visibility: public
  role: canonical
{capability}harness:
  cases:
    - name: smoke
      operator_journeys:
        - mode: standalone
          confusors: [extract, web-fetch]
          request: Do this exact thing.
          expected_outcome: It is done.
        - mode: composed
          request: Continue from the prior step.
          expected_outcome: Reuse what was selected.
          prior_evidence: [The prior selection.]
          must_not_repeat: [Do not select again.]
      inputs:
        url: https://example.com/
      expect:
        status: sealed
runners:
  {runner}:
    default: true
    type: graph
{runner_extra}    inputs:
      url:
        type: string
        required: true
        description: The URL.
    graph:
      name: {skill}
      result_from: [{result}]
      steps:
{steps}"
        );
        let manual = format!("---\nname: {skill}\ndescription: A test skill.\n---\nBody.\n");
        [("SKILL.md", manual), ("X.yaml", profile)]
            .into_iter()
            .map(|(path, text)| SnapshotFile {
                path: path.to_owned(),
                mode: 0o100_644,
                contents: text.into_bytes(),
            })
            .collect()
    }

    const CAPABILITY_READ: &str = "  execution: read
  completion: runtime_receipt
  requires_adapter: false
  approval: none
";

    fn capability(execution: &str, completion: &str, adapter: bool, approval: &str) -> String {
        format!(
            "  execution: {execution}\n  completion: {completion}\n  requires_adapter: \
             {adapter}\n  approval: {approval}\n"
        )
    }

    fn step(id: &str, tool: &str) -> String {
        format!(
            "        - id: {id}\n          tool: {tool}\n          inputs:\n            url: \"$input.url\"\n"
        )
    }

    /// Runx's first line of the refusal, or `None` when the package loads.
    fn first_line(files: &[SnapshotFile]) -> Option<String> {
        load_package(files).err().map(|err| {
            let text = err.to_string();
            text.lines().next().unwrap_or_default().to_owned()
        })
    }

    fn refusal(codes: &[(&str, &str, &str)]) -> String {
        let corrections = codes
            .iter()
            .map(|(code, runner, correction)| format!("{code} on runner {runner:?}: {correction}"))
            .collect::<Vec<_>>()
            .join("; ");
        format!("X.yaml.catalog: catalog semantic enforcement rejected the package: {corrections}")
    }

    const PLANNING: &str = "make the default runner reach the advertised terminal operation; retain this runner as an explicit plan or inspect runner";
    const READBACK: &str = "route the default execution closure through provider.read/provider.mutate and return its durable readback, or correct completion metadata";
    const ADAPTER: &str = "make a declared provider or adapter boundary reachable from the default runner, or remove requires_adapter";
    const APPROVAL: &str = "place one exact approval at the reachable consequential mutation, or correct approval metadata";

    #[test]
    fn a_plan_only_default_behind_an_execute_promise_is_refused_with_every_code_in_order() {
        let steps = step("sketch", "runx.skill.inspect");
        let files = package(
            "notes-lab",
            &capability("execute", "provider_readback", true, "required"),
            "plan",
            "",
            "sketch",
            &steps,
        );
        assert_eq!(
            first_line(&files).as_deref(),
            Some(
                refusal(&[
                    ("default_runner_is_planning_only", "plan", PLANNING),
                    ("provider_readback_unreachable", "plan", READBACK),
                    ("adapter_unreachable", "plan", ADAPTER),
                    ("approval_unreachable", "plan", APPROVAL),
                ])
                .as_str()
            )
        );
        let err = load_package(&files).unwrap_err().to_string();
        assert!(
            err.contains("\n  at X.yaml:2: catalog: visibility is public"),
            "{err}"
        );
        // The same catalog made internal is not enforced.
        let internal = package(
            "notes-lab",
            &capability("execute", "provider_readback", true, "required"),
            "plan",
            "",
            "sketch",
            &steps,
        );
        let internal: Vec<SnapshotFile> = internal
            .into_iter()
            .map(|mut file| {
                let text = String::from_utf8(file.contents).unwrap();
                file.contents = text
                    .replace("visibility: public", "visibility: internal")
                    .into_bytes();
                file
            })
            .collect();
        assert_eq!(first_line(&internal), None);
    }

    #[test]
    fn a_mutating_provider_step_keeps_an_execute_promise() {
        let steps = step("fetch", "provider.mutate");
        let files = package(
            "notes-lab",
            &capability("execute", "provider_readback", true, "required"),
            "run",
            "",
            "fetch",
            &steps,
        );
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn an_operation_name_needs_execute() {
        let steps = step("fetch", "web.fetch");
        let mismatch = "public_promise_mismatch on runner \"run\": declare execute/provider_readback for the operation promise or refocus the public capability so its name promises only the returned artifact";
        let files = package("notes-publish", CAPABILITY_READ, "run", "", "fetch", &steps);
        assert_eq!(
            first_line(&files),
            Some(format!(
                "X.yaml.catalog: catalog semantic enforcement rejected the package: {mismatch}"
            ))
        );
        // No capability at all is no `execute` either; a word inside another word is no
        // promise (`files`, `publisher`).
        let files = package("notes-publish", "", "run", "", "fetch", &steps);
        assert!(first_line(&files).is_some_and(|line| line.contains(mismatch)));
        for skill in ["notes-files", "publisher"] {
            let files = package(skill, CAPABILITY_READ, "run", "", "fetch", &steps);
            assert_eq!(first_line(&files), None, "{skill}");
        }
        let files = package(
            "notes-publish",
            &capability("execute", "runtime_receipt", false, "none"),
            "run",
            "",
            "fetch",
            &steps,
        );
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn an_operation_name_with_a_planning_default_reaching_only_an_adapter_is_planning_only() {
        let steps = step("events", "data.read_events");
        let cap = capability("execute", "runtime_receipt", true, "none");
        let files = package("ledger-sync", &cap, "draft", "", "events", &steps);
        assert_eq!(
            first_line(&files),
            Some(refusal(&[(
                "default_runner_is_planning_only",
                "draft",
                "select an end-to-end default and keep the planning runner explicitly named"
            )]))
        );
        let files = package("ledger-sync", &cap, "drafting", "", "events", &steps);
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn provider_readback_must_reach_the_result() {
        let cap = capability("read", "provider_readback", false, "none");
        let detached = format!(
            "{}{}",
            step("fetch", "web.fetch"),
            step("report", "runx.skill.inspect")
        );
        let files = package("page-reader", &cap, "read", "", "report", &detached);
        assert_eq!(
            first_line(&files),
            Some(refusal(&[(
                "provider_readback_unreachable",
                "read",
                READBACK
            )]))
        );
        let wired = format!(
            "{}        - id: report\n          tool: runx.skill.inspect\n          context:\n            page: fetch.body\n",
            step("fetch", "web.fetch")
        );
        let files = package("page-reader", &cap, "read", "", "report", &wired);
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn a_required_adapter_must_be_reachable() {
        let cap = capability("read", "runtime_receipt", true, "none");
        let files = package(
            "notes-reader",
            &cap,
            "read",
            "",
            "look",
            &step("look", "runx.skill.inspect"),
        );
        assert_eq!(
            first_line(&files),
            Some(refusal(&[("adapter_unreachable", "read", ADAPTER)]))
        );
        let files = package(
            "notes-reader",
            &cap,
            "read",
            "",
            "look",
            &step("look", "data.read_projection"),
        );
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn a_required_approval_needs_a_reachable_mutation() {
        let cap = capability("execute", "runtime_receipt", false, "required");
        let look = step("look", "runx.skill.inspect");
        let files = package("notes-writer", &cap, "write", "", "look", &look);
        assert_eq!(
            first_line(&files),
            Some(refusal(&[
                ("default_runner_is_planning_only", "write", PLANNING),
                ("approval_unreachable", "write", APPROVAL),
            ]))
        );
        let files = package(
            "notes-writer",
            &cap,
            "write",
            "    mutating: true\n",
            "look",
            &look,
        );
        assert_eq!(first_line(&files), None);
        let files = package(
            "notes-writer",
            &cap,
            "write",
            "    risk:\n      mutating: true\n",
            "look",
            &look,
        );
        assert_eq!(first_line(&files), None);
    }

    #[test]
    fn a_mock_or_fixture_default_is_refused() {
        let fetch = step("fetch", "web.fetch");
        let files = package("page-reader", CAPABILITY_READ, "demo", "", "fetch", &fetch);
        assert_eq!(
            first_line(&files),
            Some(refusal(&[(
                "mock_default",
                "demo",
                "move mock execution to an explicit test runner and select a real or truthfully blocked production default"
            )]))
        );
        let files = package(
            "page-reader",
            CAPABILITY_READ,
            "smoke-test",
            "",
            "fetch",
            &fetch,
        );
        assert_eq!(
            first_line(&files),
            Some(refusal(&[(
                "fixture_default",
                "smoke-test",
                "move fixture execution to harness-only coverage and select an operator-facing default"
            )]))
        );
        for runner in ["demonstrate", "tests", "mockup"] {
            let files = package("page-reader", CAPABILITY_READ, runner, "", "fetch", &fetch);
            assert_eq!(first_line(&files), None, "{runner}");
        }
    }

    fn internal(files: Vec<SnapshotFile>) -> Vec<SnapshotFile> {
        files
            .into_iter()
            .map(|mut file| {
                let text = String::from_utf8(file.contents).unwrap();
                file.contents = text
                    .replace("visibility: public", "visibility: internal")
                    .into_bytes();
                file
            })
            .collect()
    }

    fn report(files: &[SnapshotFile]) -> serde_json::Value {
        load_package(files).unwrap().semantic_report()
    }

    const UNEVALUATED: &str = r#"{"evaluated": false, "coldSelection": false,
        "standaloneDefault": false, "composedReuse": false, "providerProof": "none",
        "suppliedAgentAnswers": false}"#;

    #[test]
    fn an_internal_catalog_loads_and_reports_its_unkept_promises_with_the_observed_closure() {
        let files = internal(package(
            "notes-lab",
            &capability("execute", "provider_readback", true, "required"),
            "plan",
            "",
            "sketch",
            &step("sketch", "runx.skill.inspect"),
        ));
        let diagnostic = |code: &str, correction: &str| {
            serde_json::json!({
                "code": code, "skill": "notes-lab", "runner": "plan",
                "claimedExecution": "execute", "claimedCompletion": "provider_readback",
                "observed": ["planning_runner_name", "tool:runx.skill.inspect"],
                "requiredCorrection": correction,
            })
        };
        assert_eq!(
            report(&files),
            serde_json::json!({
                "mode": "enforced",
                "skill": "notes-lab",
                "defaultRunner": "plan",
                "diagnostics": [
                    diagnostic("default_runner_is_planning_only", PLANNING),
                    diagnostic("provider_readback_unreachable", READBACK),
                    diagnostic("adapter_unreachable", ADAPTER),
                    diagnostic("approval_unreachable", APPROVAL),
                ],
                "readiness": serde_json::from_str::<serde_json::Value>(UNEVALUATED).unwrap(),
            })
        );
    }

    #[test]
    fn an_internal_catalog_is_not_judged_on_its_name_mock_or_fixture_defaults() {
        let fetch = step("fetch", "web.fetch");
        let files = internal(package(
            "notes-publish",
            CAPABILITY_READ,
            "demo-test",
            "",
            "fetch",
            &fetch,
        ));
        let report = report(&files);
        assert_eq!(report["diagnostics"], serde_json::json!([]));
        assert_eq!(report["defaultRunner"], "demo-test");
        // The facts are still gathered, so a test can see why the runner would be refused
        // once the catalog is public.
        let files = package(
            "notes-publish",
            CAPABILITY_READ,
            "demo-test",
            "",
            "fetch",
            &fetch,
        );
        let err = load_package(&files).unwrap_err().to_string();
        for code in ["public_promise_mismatch", "mock_default", "fixture_default"] {
            assert!(err.contains(code), "{code} in {err}");
        }
    }

    #[test]
    fn a_public_package_that_loads_reports_its_journey_readiness_and_provider_proof() {
        let files = package(
            "page-reader",
            CAPABILITY_READ,
            "read",
            "",
            "fetch",
            &step("fetch", "web.fetch"),
        );
        assert_eq!(
            report(&files),
            serde_json::json!({
                "mode": "enforced",
                "skill": "page-reader",
                "defaultRunner": "read",
                "diagnostics": [],
                "readiness": {
                    "evaluated": true, "coldSelection": true, "standaloneDefault": true,
                    "composedReuse": true, "providerProof": "harness",
                    "suppliedAgentAnswers": false,
                    "coldSelectionConfusors": ["extract", "web-fetch"],
                    "standaloneCase": "smoke", "composedCase": "smoke",
                },
            })
        );
    }
}
