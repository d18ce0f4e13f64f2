//! The harness in X.yaml: its files and cases, each case's caller and what it expects.

use std::collections::BTreeSet;

use super::check::{Check, get, has, line_of};
use super::model::{Harness, HarnessCase};
use super::{
    CALLER_FIELDS, CASE_FIELDS, EXPECT_FIELDS, EXPECT_STATUSES, JOURNEY_FIELDS, PackageError,
    RECEIPT_FIELDS, RETIRED_RECEIPT_FIELDS, join,
};
use crate::runx::yaml::YamlEntry;

/// `harness: {files, cases}`.
pub(super) fn check_harness(
    check: &Check<'_>,
    entry: &YamlEntry,
    paths: &BTreeSet<&str>,
    runners: &BTreeSet<&str>,
) -> Result<Harness, PackageError> {
    let field = "harness";
    let harness = check.mapping(&entry.value, field)?;
    check.closed(harness, field, "harness", &["files", "cases"])?;
    let files = check
        .opt_strings(harness, "files", field)?
        .unwrap_or_default();
    let files_line = line_of(harness, "files");
    for (index, declared) in files.iter().enumerate() {
        let at = format!("harness.files[{index}]");
        let normalized = declared.trim() == declared
            && !declared.is_empty()
            && !declared.starts_with('/')
            && !declared.contains('\\')
            && declared.starts_with("fixtures/")
            && declared
                .split('/')
                .all(|s| !s.is_empty() && !matches!(s, "." | ".."));
        if !normalized {
            return Err(check.err_runx(
                files_line,
                &at,
                format!("is {declared:?}; harness files must be normalized relative paths under fixtures/"),
                format!(
                    "{}.{at}: harness files must be normalized profile-relative paths under fixtures/",
                    check.file
                ),
            ));
        }
        if !paths.contains(declared.as_str()) {
            return Err(check.err(
                files_line,
                &at,
                format!("names {declared}, which is not in the package"),
            ));
        }
    }
    let cases_entry = get(harness, "cases").ok_or_else(|| {
        check.err(
            entry.line,
            "harness.cases",
            "is required: list the inline cases (or remove harness)",
        )
    })?;
    let raw_cases = cases_entry
        .value
        .as_sequence()
        .ok_or_else(|| check.err(cases_entry.line, "harness.cases", "must be a list of cases"))?;
    let mut cases = Vec::new();
    for (index, node) in raw_cases.iter().enumerate() {
        let at = format!("harness.cases[{index}]");
        let case = check.mapping(node, &at)?;
        check.closed(case, &at, "harness case", &CASE_FIELDS)?;
        let name = check.required(case, "name", &at, node.line)?;
        let runner = check.opt_non_empty(case, "runner", &at)?;
        if let Some(runner) = &runner
            && !runners.contains(runner.as_str())
        {
            return Err(check.err(
                line_of(case, "runner"),
                &join(&at, "runner"),
                format!("names {runner:?}, which runners does not declare"),
            ));
        }
        check.opt_mapping(case, "inputs", &at)?;
        check.string_map(case, "env", &at)?;
        check_caller(check, case, &at)?;
        let expect = check.opt_mapping(case, "expect", &at)?.ok_or_else(|| {
            check.err(
                node.line,
                &join(&at, "expect"),
                "is required: say what the case must produce",
            )
        })?;
        check_expect(check, expect, &join(&at, "expect"))?;
        check_journeys(check, case, &at)?;
        cases.push(HarnessCase {
            name,
            line: node.line,
            runner,
            json: node.to_json(),
        });
    }
    Ok(Harness { files, cases })
}

/// `caller: {answers, approvals, http_responses, provider_responses}`.
pub(super) fn check_caller(
    check: &Check<'_>,
    parent_entries: &[YamlEntry],
    parent: &str,
) -> Result<(), PackageError> {
    let field = join(parent, "caller");
    let Some(caller) = check.opt_mapping(parent_entries, "caller", parent)? else {
        return Ok(());
    };
    check.closed(caller, &field, "caller", &CALLER_FIELDS)?;
    check.opt_mapping(caller, "answers", &field)?;
    let approvals_field = join(&field, "approvals");
    for entry in check
        .opt_mapping(caller, "approvals", &field)?
        .unwrap_or_default()
    {
        if entry.value.as_bool().is_none() {
            return Err(check.err(
                entry.line,
                &join(&approvals_field, &entry.key),
                "must be true or false (the human gate's answer)",
            ));
        }
    }
    let responses_field = join(&field, "http_responses");
    for entry in check
        .opt_mapping(caller, "http_responses", &field)?
        .unwrap_or_default()
    {
        check.mapping(&entry.value, &join(&responses_field, &entry.key))?;
    }
    check.opt_mapping(caller, "provider_responses", &field)?;
    Ok(())
}

/// `expect: {status, receipt, steps, output, step_outputs}`, shared by fixtures and inline
/// cases (Runx keeps one expectation vocabulary for both).
pub(super) fn check_expect(
    check: &Check<'_>,
    expect: &[YamlEntry],
    field: &str,
) -> Result<(), PackageError> {
    check.closed(expect, field, "expect", &EXPECT_FIELDS)?;
    check.opt_one_of(expect, "status", field, &EXPECT_STATUSES)?;
    let receipt_field = join(field, "receipt");
    if let Some(receipt) = check.opt_mapping(expect, "receipt", field)? {
        if let Some(retired) = receipt
            .iter()
            .find(|e| RETIRED_RECEIPT_FIELDS.contains(&e.key.as_str()))
        {
            return Err(check.err(
                retired.line,
                &join(&receipt_field, &retired.key),
                "is a retired receipt expectation field; remove it (expect state, disposition, \
                 reason_code or ids instead)",
            ));
        }
        check.closed(
            receipt,
            &receipt_field,
            "receipt expectation",
            &RECEIPT_FIELDS,
        )?;
        if let Some(schema) = check.opt_string(receipt, "schema", &receipt_field)?
            && schema != "runx.receipt.v1"
        {
            return Err(check.err(
                line_of(receipt, "schema"),
                &join(&receipt_field, "schema"),
                format!("is {schema:?}; the receipt schema is runx.receipt.v1"),
            ));
        }
        for key in [
            "body_digest",
            "receipt_id",
            "receipt_digest",
            "harness_id",
            "state",
            "disposition",
            "reason_code",
        ] {
            check.opt_string(receipt, key, &receipt_field)?;
        }
        for key in [
            "act_ids",
            "decision_ids",
            "child_receipt_refs",
            "verification_refs",
        ] {
            check.opt_strings(receipt, key, &receipt_field)?;
        }
        check.opt_u64(receipt, "child_receipt_count", &receipt_field)?;
    }
    check.opt_strings(expect, "steps", field)?;
    if let Some(output) = get(expect, "output").filter(|e| !e.value.is_null()) {
        check_json_expectation(check, output, &join(field, "output"))?;
    }
    let step_outputs_field = join(field, "step_outputs");
    for entry in check
        .opt_mapping(expect, "step_outputs", field)?
        .unwrap_or_default()
    {
        check_json_expectation(check, entry, &join(&step_outputs_field, &entry.key))?;
    }
    Ok(())
}

/// `{exact: ...}` or `{subset: ...}`.
pub(super) fn check_json_expectation(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<(), PackageError> {
    let record = check.mapping(&entry.value, field)?;
    check.closed(record, field, "output expectation", &["exact", "subset"])?;
    if !has(record, "exact") && !has(record, "subset") {
        return Err(check.err(entry.line, field, "needs exact or subset"));
    }
    Ok(())
}

/// `operator_journeys`: standalone, composed or refusal claims a reviewer can check.
pub(super) fn check_journeys(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
) -> Result<(), PackageError> {
    let field = join(parent, "operator_journeys");
    let Some(entry) = get(entries, "operator_journeys").filter(|e| !e.value.is_null()) else {
        return Ok(());
    };
    let items = entry
        .value
        .as_sequence()
        .ok_or_else(|| check.err(entry.line, &field, "must be a list of journeys"))?;
    for (index, node) in items.iter().enumerate() {
        let at = format!("{field}[{index}]");
        let journey = check.mapping(node, &at)?;
        check.closed(journey, &at, "operator journey", &JOURNEY_FIELDS)?;
        let mode = check
            .opt_one_of(journey, "mode", &at, &["standalone", "composed", "refusal"])?
            .ok_or_else(|| {
                check.err(
                    node.line,
                    &join(&at, "mode"),
                    "is required: standalone, composed or refusal",
                )
            })?;
        check.required(journey, "request", &at, node.line)?;
        check.required(journey, "expected_outcome", &at, node.line)?;
        let prior = check.opt_non_blank_strings(journey, "prior_evidence", &at, "statement")?;
        let repeat = check.opt_non_blank_strings(journey, "must_not_repeat", &at, "statement")?;
        check.opt_non_blank_strings(journey, "confusors", &at, "skill name")?;
        if mode == "composed" && (prior.is_empty() || repeat.is_empty()) {
            return Err(check.err(
                node.line,
                &at,
                "a composed journey needs prior_evidence and must_not_repeat",
            ));
        }
    }
    Ok(())
}
