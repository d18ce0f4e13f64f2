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

use std::collections::BTreeSet;

use serde_json::Value;

use super::closure::{ClosureFacts, contains_word, default_runner_facts};
use super::model::{Catalog, ExecutionProfile, Fixture};
use super::{PROFILE_FILE, PackageError};

#[derive(Default)]
struct Readiness {
    cold_selection: bool,
    standalone_default: bool,
    composed_reuse: bool,
}

fn update(
    readiness: &mut Readiness,
    skill: &str,
    default_runner: &str,
    package_runner_case: bool,
    selected_runner: Option<&str>,
    case: &Value,
) {
    let completed = case["expect"]["status"] == "sealed";
    for journey in case["operator_journeys"].as_array().into_iter().flatten() {
        let exercises_default = if package_runner_case {
            selected_runner.is_none_or(|runner| runner == default_runner)
        } else {
            journey["exercises_runner"].as_str() == Some(default_runner)
        };
        match journey["mode"].as_str() {
            Some("standalone") if exercises_default && completed => {
                readiness.standalone_default = true;
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
                }
            }
            Some("composed") if completed => readiness.composed_reuse = true,
            _ => {}
        }
    }
}

/// One diagnostic: Runx's code and required correction, and MindRune's account of it.
struct Diagnostic {
    code: &'static str,
    correction: &'static str,
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

/// The structural diagnostics of a public catalog against its default runner's closure, in
/// Runx's order.
fn structural_diagnostics(
    skill: &str,
    runner: &str,
    catalog: &Catalog,
    facts: &ClosureFacts,
) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    let mut push = |code, correction, hint: String| {
        found.push(Diagnostic {
            code,
            correction,
            hint,
        });
    };
    let operation = inferred_operation_promise(skill);
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
    if facts.mock {
        push(
            "mock_default",
            "move mock execution to an explicit test runner and select a real or truthfully blocked production default",
            format!("runner {runner:?} runs a mock or demo path"),
        );
    }
    if facts.fixture {
        push(
            "fixture_default",
            "move fixture execution to harness-only coverage and select an operator-facing default",
            format!("runner {runner:?} runs a fixture, harness or test path"),
        );
    }
    found
}

/// The journey diagnostics of a public package whose harness lacks the proofs.
fn journey_diagnostics(
    skill: &str,
    default: &str,
    profile: &ExecutionProfile,
    fixtures: &[Fixture],
) -> Vec<Diagnostic> {
    let mut readiness = Readiness::default();
    for case in profile.harness.iter().flat_map(|harness| &harness.cases) {
        update(
            &mut readiness,
            skill,
            default,
            true,
            case.runner.as_deref(),
            &case.json,
        );
    }
    let mut fixtures: Vec<&Fixture> = fixtures.iter().collect();
    fixtures.sort_by(|a, b| a.path.cmp(&b.path));
    for fixture in fixtures {
        update(
            &mut readiness,
            skill,
            default,
            fixture.kind == "skill" && fixture.target == "..",
            fixture.runner.as_deref(),
            &fixture.json,
        );
    }
    let mut found = Vec::new();
    if !readiness.cold_selection {
        found.push(Diagnostic {
            code: "missing_cold_selection_proof",
            correction: "add a standalone journey for the actual default runner with at least two nearby public skill confusors",
            hint: format!(
                "no fixture proves a sealed standalone journey on runner {default:?} naming two confusors"
            ),
        });
    }
    if !readiness.standalone_default {
        found.push(Diagnostic {
            code: "missing_standalone_default_proof",
            correction: "run a standalone operator journey against the actual default runner rather than a convenient phase runner",
            hint: format!("no fixture proves a sealed standalone journey on runner {default:?}"),
        });
    }
    if !readiness.composed_reuse {
        found.push(Diagnostic {
            code: "missing_composed_reuse_proof",
            correction: "add a composed journey that names reused prior evidence and work that must not be repeated",
            hint: "no fixture proves a sealed composed journey".to_owned(),
        });
    }
    found
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
    let Some(catalog) = &profile.catalog else {
        return Ok(());
    };
    if catalog.visibility != "public" {
        return Ok(());
    }
    let default = profile
        .runners
        .iter()
        .find(|runner| runner.default)
        .or_else(|| (profile.runners.len() == 1).then(|| &profile.runners[0]));
    let Some(default) = default else {
        return Ok(());
    };
    let facts = default_runner_facts(profile, default);
    let mut diagnostics = structural_diagnostics(skill, &default.name, catalog, &facts);
    diagnostics.extend(journey_diagnostics(skill, &default.name, profile, fixtures));
    if diagnostics.is_empty() {
        return Ok(());
    }
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
}
