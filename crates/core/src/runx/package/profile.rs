//! X.yaml, the execution profile: the catalog, runners and their examples.

use std::collections::BTreeSet;

use serde_json::Value;

use super::check::{Check, get, has, line_of};
use super::harness::check_harness;
use super::inputs::{SourceContext, check_input, check_inputs, check_source};
use super::manual::{check_artifacts, check_idempotency, check_retry, first, post_run_reflect};
use super::model::{Catalog, ExecutionProfile, InputDef, Runner};
use super::yaml_as_runx::{parity_subset_refusal, read_profile_document};
use super::{
    CATALOG_FIELDS, PROFILE_FIELDS, PROFILE_FILE, PackageError, RUNNER_FIELDS, SOURCE_FIELDS,
    invalid_as_runx, join,
};
use crate::runx::yaml::{self, YamlEntry, YamlValue};

/// Parses X.yaml against the package's file list (for `harness.files`).
pub(super) fn parse_profile(
    text: &str,
    paths: &BTreeSet<&str>,
) -> Result<ExecutionProfile, PackageError> {
    let check = Check {
        file: PROFILE_FILE,
        graph_file: false,
    };
    // Runx scans the text for ambiguous YAML first, then refuses its profile subset (anchors,
    // duplicate keys, document markers: the Lab's reader words those as Runx does), then reads
    // it with serde_norway: a syntax error opens with serde's words.
    let root = match yaml::parse(PROFILE_FILE, text) {
        Ok(root) => match parity_subset_refusal(text) {
            None => root,
            Some(runx) => {
                return Err(invalid_as_runx(
                    PROFILE_FILE,
                    1,
                    "(document)",
                    "Runx reads this YAML as ambiguous; quote the value or key it names",
                    runx,
                ));
            }
        },
        Err(err) => {
            let ambiguous = parity_subset_refusal(text);
            return Err(
                match (err.runx.is_some() && ambiguous.is_none(), ambiguous) {
                    (true, _) => PackageError::Yaml(err),
                    (false, Some(runx)) => {
                        PackageError::Yaml(err).opening_with_runx(format!("{PROFILE_FILE}: {runx}"))
                    }
                    (false, None) => match read_profile_document(text) {
                        Err(runx) => PackageError::Yaml(err)
                            .opening_with_runx(format!("{PROFILE_FILE}: {runx}")),
                        Ok(()) => PackageError::Yaml(err),
                    },
                },
            );
        }
    };
    let entries = match &root.value {
        YamlValue::Mapping(entries) => entries.as_slice(),
        _ => {
            return Err(check.err_runx(
                root.line,
                "(document)",
                format!(
                    "X.yaml must be a mapping with at least runners, not {}",
                    root.kind()
                ),
                format!(
                    "{}: runner_manifest: Runner manifest YAML must parse to an object.",
                    check.file
                ),
            ));
        }
    };
    check.closed_as(
        entries,
        "",
        "X.yaml top-level",
        &PROFILE_FIELDS,
        Some("runner_manifest"),
    )?;
    // A blank `skill` is refused as Runx refuses it: it does not match SKILL.md's name.
    let skill = check.opt_string(entries, "skill", "")?.map(str::to_owned);
    let version = check.opt_string(entries, "version", "")?.map(str::to_owned);
    check.opt_mapping(entries, "runx", "")?;
    let catalog = match check.opt_mapping(entries, "catalog", "")? {
        None => None,
        Some(catalog) => Some(check_catalog(&check, catalog, line_of(entries, "catalog"))?),
    };
    let mut credentials = Vec::new();
    for entry in check
        .opt_mapping(entries, "credentials", "")?
        .unwrap_or_default()
    {
        check.mapping(&entry.value, &join("credentials", &entry.key))?;
        credentials.push(entry.key.clone());
    }
    let input_definitions = match check.opt_mapping(entries, "input_definitions", "")? {
        None => Vec::new(),
        Some(definitions) => {
            let mut checked = Vec::new();
            for entry in definitions {
                let field = join("input_definitions", &entry.key);
                let record = check.mapping(&entry.value, &field)?;
                checked.push(check_input(&check, entry, record, &field)?);
            }
            checked
        }
    };
    // A null `runners` is absent to Runx; an empty one passes its validator (Runx refuses it
    // only when a command must pick the default runner: `Package::runner_selection_refusal`).
    let runners_entry = get(entries, "runners").filter(|entry| !entry.value.is_null());
    let runners_entry = runners_entry.ok_or_else(|| {
        check.err_runx(
            root.line,
            "runners",
            "is required: declare at least one runner",
            format!("{}: runners is required.", check.file),
        )
    })?;
    let runner_entries = check.mapping(&runners_entry.value, "runners")?;
    let mut runners = Vec::new();
    for entry in runner_entries {
        runners.push(check_runner(
            &check,
            entry,
            &input_definitions,
            &credentials,
        )?);
    }
    let defaults: Vec<&Runner> = runners.iter().filter(|runner| runner.default).collect();
    if let [first, second, ..] = defaults.as_slice() {
        return Err(check.err_runx(
            second.line,
            &join(&join("runners", &second.name), "default"),
            format!(
                "{} and {} both say default: true; keep one default runner",
                first.name, second.name
            ),
            format!(
                "{}.runners: runner selection is ambiguous: declare at most one default runner",
                check.file
            ),
        ));
    }
    let runner_names: BTreeSet<&str> = runners.iter().map(|runner| runner.name.as_str()).collect();
    let harness = match get(entries, "harness").filter(|entry| !entry.value.is_null()) {
        None => None,
        Some(entry) => Some(check_harness(&check, entry, paths, &runner_names)?),
    };
    Ok(ExecutionProfile {
        skill,
        version,
        catalog,
        credentials,
        input_definitions,
        runners,
        harness,
        json: root.to_json(),
        skill_line: line_of(entries, "skill"),
    })
}

pub(super) fn check_catalog(
    check: &Check<'_>,
    catalog: &[YamlEntry],
    line: usize,
) -> Result<Catalog, PackageError> {
    let field = "catalog";
    check.closed_as(catalog, field, "catalog", &CATALOG_FIELDS, Some(field))?;
    let required = |key: &str, allowed: &[&str]| {
        check
            .opt_one_of(catalog, key, field, allowed)?
            .ok_or_else(|| {
                check.err_runx(
                    line,
                    &join(field, key),
                    format!("is required: one of {}", allowed.join(", ")),
                    format!("{}: {field}.{key} is required.", check.file),
                )
            })
    };
    let kind = required("kind", &["skill", "graph"])?;
    let audience = required("audience", &["public", "builder", "operator", "system"])?;
    let visibility = check
        .opt_one_of(catalog, "visibility", field, &["public", "internal"])?
        .unwrap_or_else(|| "public".to_owned());
    let role = required(
        "role",
        &[
            "canonical",
            "branded",
            "context",
            "graph-stage",
            "runtime-path",
            "harness-fixture",
        ],
    )?;
    let staged = matches!(
        role.as_str(),
        "graph-stage" | "runtime-path" | "harness-fixture"
    );
    if visibility == "public" && staged {
        return Err(check.err_runx(
            line_of(catalog, "role"),
            "catalog.role",
            format!("cannot be {role} when visibility is public; set visibility: internal"),
            format!(
                "{}: catalog.role cannot be {role} when visibility is public.",
                check.file
            ),
        ));
    }
    let canonical_skill = check
        .opt_string(catalog, "canonical_skill", field)?
        .map(str::to_owned);
    let provider = check
        .opt_string(catalog, "provider", field)?
        .map(str::to_owned);
    let runtime_path = check
        .opt_string(catalog, "runtime_path", field)?
        .map(str::to_owned);
    let part_of = check
        .opt_strings(catalog, "part_of", field)?
        .unwrap_or_default();
    let execution = check.opt_one_of(catalog, "execution", field, &["plan", "read", "execute"])?;
    let completion = check.opt_one_of(
        catalog,
        "completion",
        field,
        &["plan", "runtime_receipt", "provider_readback"],
    )?;
    let requires_adapter = check.opt_bool(catalog, "requires_adapter", field)?;
    let approval = check.opt_one_of(
        catalog,
        "approval",
        field,
        &["none", "conditional", "required"],
    )?;
    let present = [
        execution.is_some(),
        completion.is_some(),
        requires_adapter.is_some(),
        approval.is_some(),
    ];
    if present.iter().any(|p| *p) && !present.iter().all(|p| *p) {
        return Err(check.err_runx(
            line,
            field,
            "capability metadata comes together: declare execution, completion, \
             requires_adapter and approval, or none of them",
            format!(
                "{}: catalog capability metadata must declare execution, completion, \
                 requires_adapter, and approval together.",
                check.file
            ),
        ));
    }
    if role == "branded" {
        for (key, value) in [
            ("canonical_skill", &canonical_skill),
            ("provider", &provider),
        ] {
            if value.is_none() {
                return Err(check.err_runx(
                    line,
                    &join(field, key),
                    "is required when role is branded",
                    format!(
                        "{}: catalog.{key} is required when catalog.role is branded.",
                        check.file
                    ),
                ));
            }
        }
    }
    if staged && part_of.is_empty() {
        return Err(check.err_runx(
            line,
            "catalog.part_of",
            format!("is required when role is {role}: name the skill it belongs to"),
            format!(
                "{}: catalog.part_of is required when catalog.role is {role}.",
                check.file
            ),
        ));
    }
    Ok(Catalog {
        kind,
        audience,
        visibility,
        role,
        canonical_skill,
        provider,
        runtime_path,
        part_of,
        execution,
        completion,
        requires_adapter,
        approval,
    })
}

pub(super) fn check_runner(
    check: &Check<'_>,
    entry: &YamlEntry,
    definitions: &[InputDef],
    credentials: &[String],
) -> Result<Runner, PackageError> {
    let name = entry.key.clone();
    let field = join("runners", &name);
    let runner = check.mapping(&entry.value, &field)?;
    if let Some(instructions) = get(runner, "instructions") {
        return Err(check.err(
            instructions.line,
            &join(&field, "instructions"),
            "model instructions belong in SKILL.md, not X.yaml (write them in the agent task's \
             section of SKILL.md)",
        ));
    }
    check.closed_as(runner, &field, "runner", &RUNNER_FIELDS, Some(&field))?;
    let runx = check
        .opt_mapping(runner, "runx", &field)?
        .unwrap_or_default();
    post_run_reflect(check, runx, &join(&field, "runx"))?;
    let source = match check.opt_mapping(runner, "source", &field)? {
        Some(source) => {
            let source_field = join(&field, "source");
            check_source(
                check,
                source,
                line_of(runner, "source"),
                &source_field,
                SourceContext::Skill,
                true,
            )?
        }
        None => {
            // Without a `source:` block the runner's own source fields are its source, and its
            // other fields (scopes, inputs, ...) are not the source's business.
            let flattened: Vec<YamlEntry> = runner
                .iter()
                .filter(|e| SOURCE_FIELDS.contains(&e.key.as_str()))
                .cloned()
                .collect();
            check_source(
                check,
                &flattened,
                entry.line,
                &field,
                SourceContext::Skill,
                false,
            )?
        }
    };
    let default = check.opt_bool(runner, "default", &field)?.unwrap_or(false);
    let inputs = match check.opt_mapping(runner, "inputs", &field)? {
        None => Vec::new(),
        Some(inputs) => check_inputs(check, inputs, &join(&field, "inputs"), definitions)?,
    };
    let scopes = check.opt_non_blank_strings(runner, "scopes", &field, "scope")?;
    let credential = check.opt_non_empty(runner, "credential", &field)?;
    if let Some(credential) = &credential {
        let at = line_of(runner, "credential");
        if source.source_type == "javascript" {
            return Err(check.err_runx(
                at,
                &join(&field, "credential"),
                "a pure javascript source cannot hold a credential; route it through a native \
                 provider tool",
                format!(
                    "{}: {field}.credential is not valid for a pure javascript source; route \
                     credentials through a native provider tool",
                    check.file
                ),
            ));
        }
        if !credentials.contains(credential) {
            return Err(check.err_runx(
                at,
                &join(&field, "credential"),
                format!("names {credential:?}, which credentials does not declare"),
                format!(
                    "{}: {field}.credential references undeclared credential {credential}",
                    check.file
                ),
            ));
        }
    }
    let artifacts = first(runner, "artifacts", runx);
    if let Some((artifact_entry, key)) = &artifacts {
        check_artifacts(check, artifact_entry, &join(&field, key))?;
    }
    if source.source_type == "graph" {
        // Runx's texts: `<field>.<key> is ambiguous for a graph source; <runx>`.
        for (present, key, message, runx) in [
            (
                artifacts.is_some(),
                "artifacts",
                "declare the packet on the graph's terminal output-producing step",
                "declare the packet on the graph's terminal output-producing step",
            ),
            (
                !source.environment.is_empty(),
                "environment",
                "declare environment on the executable run step",
                "declare environment requirements on the executable run step",
            ),
            (
                source.outputs.is_some(),
                "outputs",
                "declare outputs on the graph's terminal output-producing step",
                "declare outputs on the graph's terminal output-producing step",
            ),
        ] {
            if present {
                return Err(check.err_runx(
                    line_of(runner, key),
                    &join(&field, key),
                    format!("is ambiguous on a graph runner; {message}"),
                    format!(
                        "{}: {field}.{key} is ambiguous for a graph source; {runx}",
                        check.file
                    ),
                ));
            }
        }
        if source
            .graph
            .as_ref()
            .is_none_or(|graph| graph.result_from.is_empty())
        {
            return Err(check.err_runx(
                line_of(runner, "graph"),
                &format!("{field}.graph.result_from"),
                "must name at least one step whose output is the runner's public result",
                format!(
                    "{}: {field}.graph.result_from must name at least one intentional public \
                     result producer",
                    check.file
                ),
            ));
        }
    }
    if let Some((retry, key)) = first(runner, "retry", runx) {
        check_retry(check, retry, &join(&field, &key))?;
    }
    if let Some((idempotency, key)) = first(runner, "idempotency", runx) {
        check_idempotency(check, idempotency, &join(&field, &key))?;
    }
    if let Some(mutating) = get(runner, "mutating").filter(|e| !e.value.is_null())
        && mutating.value.as_bool().is_none()
    {
        return Err(check.err_field(
            mutating.line,
            &join(&field, "mutating"),
            "must be true or false",
            "must be a boolean.",
        ));
    }
    // Runx reads only `runx.allowed_tools`; a runner's own `allowed_tools` is not checked.
    check.opt_strings(runx, "allowed_tools", &join(&field, "runx"))?;
    let examples = check_examples(check, runner, &field, &inputs)?;
    Ok(Runner {
        name,
        line: entry.line,
        default,
        inputs,
        scopes,
        credential,
        source,
        examples,
        json: entry.value.to_json(),
    })
}

/// `examples`: complete input objects, each naming only declared inputs and every required one.
pub(super) fn check_examples(
    check: &Check<'_>,
    runner: &[YamlEntry],
    field: &str,
    inputs: &[InputDef],
) -> Result<Vec<Value>, PackageError> {
    let Some(entry) = get(runner, "examples").filter(|e| !e.value.is_null()) else {
        return Ok(Vec::new());
    };
    let examples_field = join(field, "examples");
    let items = entry.value.as_sequence().ok_or_else(|| {
        check.err_runx(
            entry.line,
            &examples_field,
            "must be a list of complete input objects",
            format!("{}: {examples_field} must be an array.", check.file),
        )
    })?;
    let mut examples = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let at = format!("{examples_field}[{index}]");
        let example = check.mapping(item, &at)?;
        if let Some(unknown) = example
            .iter()
            .find(|e| !inputs.iter().any(|input| input.name == e.key))
        {
            return Err(check.err_runx(
                unknown.line,
                &join(&at, &unknown.key),
                format!("is not an input of runner {field}; examples may only use declared inputs"),
                format!(
                    "{}: {at} does not match the runner input contract: Additional properties \
                     are not allowed ('{}' was unexpected)",
                    check.file, unknown.key
                ),
            ));
        }
        if let Some(missing) = inputs
            .iter()
            .find(|input| input.required && !has(example, &input.name))
        {
            return Err(check.err_runx(
                item.line,
                &at,
                format!(
                    "leaves out the required input {}; an example is a complete input object",
                    missing.name
                ),
                format!(
                    "{}: {at} does not match the runner input contract: \"{}\" is a required \
                     property",
                    check.file, missing.name
                ),
            ));
        }
        examples.push(item.to_json());
    }
    Ok(examples)
}
