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
//! Runx also reports structural drift of the default runner against the catalog's promise
//! (`public_promise_mismatch`, `default_runner_is_planning_only`, `mock_default`, …); those
//! need Runx's reachability analysis of the runner's execution closure and are not made here
//! (docs/lab.md, "differences from Runx").

use std::collections::BTreeSet;

use serde_json::Value;

use super::{ExecutionProfile, Fixture, PROFILE_FILE, PackageError};

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

/// The refusal Runx gives a public package whose harness lacks the proofs, or `Ok`.
/// `catalog_line` is the line of `catalog:` in X.yaml, for MindRune's second line.
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
    let mut readiness = Readiness::default();
    for case in profile.harness.iter().flat_map(|harness| &harness.cases) {
        update(
            &mut readiness,
            skill,
            &default.name,
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
            &default.name,
            fixture.kind == "skill" && fixture.target == "..",
            fixture.runner.as_deref(),
            &fixture.json,
        );
    }
    let mut corrections = Vec::new();
    let mut hints = Vec::new();
    if !readiness.cold_selection {
        corrections.push((
            "missing_cold_selection_proof",
            "add a standalone journey for the actual default runner with at least two nearby public skill confusors",
        ));
        hints.push("a sealed standalone journey naming two confusors");
    }
    if !readiness.standalone_default {
        corrections.push((
            "missing_standalone_default_proof",
            "run a standalone operator journey against the actual default runner rather than a convenient phase runner",
        ));
        hints.push("a sealed standalone journey on the default runner");
    }
    if !readiness.composed_reuse {
        corrections.push((
            "missing_composed_reuse_proof",
            "add a composed journey that names reused prior evidence and work that must not be repeated",
        ));
        hints.push("a sealed composed journey");
    }
    if corrections.is_empty() {
        return Ok(());
    }
    let corrections = corrections
        .iter()
        .map(|(code, correction)| format!("{code} on runner {:?}: {correction}", default.name))
        .collect::<Vec<_>>()
        .join("; ");
    Err(PackageError::Invalid {
        file: PROFILE_FILE.to_owned(),
        line: catalog_line,
        field: "catalog".to_owned(),
        message: format!(
            "visibility is public, so Runx loads the package only when its fixtures prove {} \
             (runner {:?}); add them or make the catalog internal",
            hints.join(", "),
            default.name
        ),
        runx: Some(format!(
            "X.yaml.catalog: catalog semantic enforcement rejected the package: {corrections}"
        )),
    })
}
