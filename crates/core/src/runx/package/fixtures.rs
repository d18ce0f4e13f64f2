//! Fixture files: one harness case written beside the package.

use std::collections::BTreeSet;

use super::check::{Check, get, line_of};
use super::harness::{check_caller, check_expect, check_journeys};
use super::model::Fixture;
use super::references::stricter_yaml;
use super::yaml_as_runx::{FixtureStrings, read_fixture};
use super::{FIXTURE_FIELDS, MAX_SETUP_RECEIPTS, PackageError, invalid_as_runx};
use crate::runx::yaml;

/// Reads one standalone fixture. When `runners` is given, a fixture that targets this package
/// (`target: ..`) must name one of them.
///
/// Runx reads a fixture with serde ([`read_fixture`]); what it refuses is refused here in its
/// words, with the Lab's place and advice second when its own checks find the same fault. Its
/// string fields are taken as serde reads them (`target: 3` is the folder `3`).
pub(crate) fn parse_fixture(
    path: &str,
    text: &str,
    runners: Option<&BTreeSet<&str>>,
) -> Result<Fixture, PackageError> {
    let runx = read_fixture(text);
    let lab = check_fixture(path, text, runners, runx.strings.as_ref());
    match (runx.refusal, lab) {
        (None, Err(PackageError::Yaml(err))) => Err(stricter_yaml(err, "fixture")),
        (
            None,
            Err(PackageError::Invalid {
                file,
                line,
                field,
                message,
                runx: None,
            }),
        ) => {
            // Runx reads the fixture: the refusal is the Lab's own, and says why.
            let why = if field.starts_with("caller") {
                "a caller field the replay does not read, or one of another shape, would be \
                 ignored, so a misspelt answer or approval is refused rather than silently dropped"
            } else if field == "runner" {
                "Runx fails the case when it runs; the Lab refuses the package at load, naming \
                 the runner X.yaml lacks"
            } else {
                "the Lab holds a fixture to the shape its replay reads"
            };
            Err(PackageError::Invalid {
                file,
                line,
                field,
                message: format!(
                    "{message}\n  Runx reads this fixture; MindRune is stricter: {why}"
                ),
                runx: None,
            })
        }
        (None, lab) => lab,
        (Some(runx), Err(err)) => Err(err.opening_with_runx(format!("{path}: {runx}"))),
        (Some(runx), Ok(_)) => Err(PackageError::Invalid {
            file: path.to_owned(),
            line: 1,
            field: "(fixture)".to_owned(),
            message: "Runx's fixture reader refuses it; fix what the line above names".to_owned(),
            runx: Some(format!("{path}: {runx}")),
        }),
    }
}

/// The Lab's own checks of a fixture; `strings` are its string fields as Runx's serde read
/// them, when it could.
fn check_fixture(
    path: &str,
    text: &str,
    runners: Option<&BTreeSet<&str>>,
    strings: Option<&FixtureStrings>,
) -> Result<Fixture, PackageError> {
    let check = Check {
        file: path,
        graph_file: false,
    };
    let root = yaml::parse(path, text)?;
    let fixture = check.mapping(&root, "(document)")?;
    check.closed(fixture, "", "fixture", &FIXTURE_FIELDS)?;
    // Runx deserialises a fixture with serde, so a required field that is absent is refused in
    // serde's words.
    let missing = |key: &str, message: &str| {
        invalid_as_runx(
            path,
            root.line,
            key,
            message,
            format!(
                "invalid harness fixture: failed to parse harness fixture YAML: yaml: YAML parse \
                 failed: missing field `{key}`"
            ),
        )
    };
    if get(fixture, "name").is_none() {
        return Err(missing("name", "is required"));
    }
    let name = match strings {
        Some(strings) => strings.name.clone(),
        None => check.required(fixture, "name", "", root.line)?,
    };
    let kind = check
        .opt_one_of(
            fixture,
            "kind",
            "",
            &["skill", "graph", "mcp", "a2a", "agent", "agent_task"],
        )?
        .ok_or_else(|| {
            missing(
                "kind",
                "is required: skill, graph, a2a, agent or agent_task",
            )
        })?;
    if kind == "mcp" {
        return Err(check.err(
            line_of(fixture, "kind"),
            "kind",
            "mcp fixtures are not supported by the Runx harness yet; use a skill fixture",
        ));
    }
    let target = match strings {
        Some(strings) => strings.target.clone(),
        None => check
            .opt_string(fixture, "target", "")?
            .unwrap_or_default()
            .to_owned(),
    };
    if target.is_empty() && kind != "agent_task" {
        return Err(check.err(
            root.line,
            "target",
            "is required: the package folder relative to the fixture (.. for this package)",
        ));
    }
    let runner = match strings {
        Some(strings) => strings.runner.clone(),
        None => check.opt_non_empty(fixture, "runner", "")?,
    };
    if let (Some(runner), Some(runners), "..") = (&runner, runners, target.as_str())
        && !runners.contains(runner.as_str())
    {
        return Err(check.err(
            line_of(fixture, "runner"),
            "runner",
            format!("names {runner:?}, which X.yaml's runners does not declare"),
        ));
    }
    if let Some(setup) = check.opt_mapping(fixture, "setup", "")? {
        check.closed(setup, "setup", "setup", &["receipts"])?;
        let receipts = check
            .opt_strings(setup, "receipts", "setup")?
            .unwrap_or_default();
        let line = line_of(setup, "receipts");
        if receipts.len() > MAX_SETUP_RECEIPTS {
            return Err(check.err(
                line,
                "setup.receipts",
                format!("seeds more than {MAX_SETUP_RECEIPTS} receipts"),
            ));
        }
        let mut seen = BTreeSet::new();
        for (index, receipt) in receipts.iter().enumerate() {
            let at = format!("setup.receipts[{index}]");
            let normalized = !receipt.is_empty()
                && receipt.len() <= 512
                && !receipt.starts_with('/')
                && !receipt.contains('\\')
                && receipt.ends_with(".json")
                && receipt
                    .split('/')
                    .all(|s| !s.is_empty() && !matches!(s, "." | ".."));
            if !normalized {
                return Err(check.err(
                    line,
                    &at,
                    "must be a normalized package-relative .json path",
                ));
            }
            if !seen.insert(receipt) {
                return Err(check.err(line, &at, "repeats another receipt; list each once"));
            }
        }
    }
    check.opt_mapping(fixture, "inputs", "")?;
    // A scalar is a string to Runx's serde (`X: 1` is "1", and the replay passes it so).
    if strings.is_none() {
        check.string_map(fixture, "env", "")?;
    }
    check_caller(&check, fixture, "")?;
    if let Some(expect) = check.opt_mapping(fixture, "expect", "")? {
        check_expect(&check, expect, "expect")?;
    }
    check_journeys(&check, fixture, "")?;
    check.opt_mapping(fixture, "metadata", "")?;
    Ok(Fixture {
        path: path.to_owned(),
        name,
        kind,
        target,
        runner,
        json: root.to_json(),
    })
}
