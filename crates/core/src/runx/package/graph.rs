//! Graphs: steps, their targets, runs, contexts, bindings, `when` conditions and mints.

use std::collections::{BTreeMap, BTreeSet};

use super::check::{Check, get, has, line_of};
use super::fanout::{check_fanout_groups, check_fanout_steps};
use super::inputs::{SourceContext, check_source};
use super::manual::{check_artifacts, check_retry};
use super::model::{Graph, GraphStep, StepTarget, When};
use super::{PackageError, join};
use crate::runx::yaml::{YamlEntry, YamlNode, YamlValue};

/// A graph: `{name, result_from, steps}` plus `owner`, `charter_from`, `fanout`, `policy`.
pub(super) fn check_graph(
    check: &Check<'_>,
    entry: &YamlEntry,
    field: &str,
) -> Result<Graph, PackageError> {
    let graph = check.mapping(&entry.value, field)?;
    for key in ["sync", "schedule", "schedules"] {
        if has(graph, key) {
            return Err(check.err(
                line_of(graph, key),
                &join(field, key),
                "is not supported by the local sequential graph runner; remove it",
            ));
        }
    }
    let name = check.required(graph, "name", field, entry.line)?;
    check.opt_string(graph, "owner", field)?;
    let charter_from = check
        .opt_string(graph, "charter_from", field)?
        .map(str::to_owned);
    check.opt_mapping(graph, "policy", field)?;
    let result_from = check
        .opt_strings(graph, "result_from", field)?
        .unwrap_or_default();
    let steps_field = join(field, "steps");
    let steps_entry = get(graph, "steps").ok_or_else(|| {
        check.err(
            entry.line,
            &steps_field,
            "is required: list the graph's steps",
        )
    })?;
    let raw_steps = steps_entry.value.as_sequence().ok_or_else(|| {
        check.err(
            steps_entry.line,
            &steps_field,
            format!("must be a list of steps, not {}", steps_entry.value.kind()),
        )
    })?;
    let fanout = check_fanout_groups(check, graph, field)?;
    let mut ids = BTreeSet::new();
    let mut steps = Vec::new();
    for (index, node) in raw_steps.iter().enumerate() {
        let step = check_step(
            check,
            node,
            &format!("{steps_field}[{index}]"),
            &ids,
            charter_from.is_some(),
        )?;
        ids.insert(step.id.clone());
        steps.push(step);
    }
    check_fanout_steps(check, &fanout, &steps, field)?;
    let result_line = line_of(graph, "result_from");
    let mut seen = BTreeSet::new();
    for (index, id) in result_from.iter().enumerate() {
        let at = format!("{field}.result_from[{index}]");
        if id.trim().is_empty() {
            return Err(check.err(result_line, &at, "must not be empty; name a step id"));
        }
        if !ids.contains(id) {
            return Err(check.err(
                result_line,
                &at,
                format!("names {id:?}, which is not a step of this graph"),
            ));
        }
        if !seen.insert(id) {
            return Err(check.err(
                result_line,
                &at,
                format!("repeats {id:?}; list each step once"),
            ));
        }
    }
    Ok(Graph {
        name,
        result_from,
        charter_from,
        steps,
    })
}

/// Step keys Runx refuses, with what to do instead.
pub(super) fn rejected_step_field(key: &str) -> Option<&'static str> {
    match key {
        "instructions" => Some(
            "model instructions belong in SKILL.md, not X.yaml (write them in the agent task's \
             section of SKILL.md)",
        ),
        "effect_family" => Some(
            "is not supported: Runx derives effect ownership from the resolved target; remove it",
        ),
        "sync" | "stage" => Some(
            "is not supported by the local sequential graph runner; remove it (reference a nested \
             graph as a skill: step)",
        ),
        _ => None,
    }
}

pub(super) fn check_step(
    check: &Check<'_>,
    node: &YamlNode,
    field: &str,
    previous: &BTreeSet<String>,
    charter: bool,
) -> Result<GraphStep, PackageError> {
    let step = check.mapping(node, field)?;
    if let Some((entry, message)) = step
        .iter()
        .find_map(|entry| rejected_step_field(&entry.key).map(|message| (entry, message)))
    {
        return Err(check.err(entry.line, &join(field, &entry.key), message));
    }
    let mode = check.opt_string(step, "mode", field)?;
    match mode {
        None | Some("sequential") => {}
        Some("fanout") => {
            if check.opt_string(step, "fanout_group", field)?.is_none() {
                return Err(check.err(
                    line_of(step, "mode"),
                    &join(field, "fanout_group"),
                    "is required when mode is fanout",
                ));
            }
        }
        Some(other) => {
            return Err(check.err(
                line_of(step, "mode"),
                &join(field, "mode"),
                format!("is {other:?}; the local graph runner supports sequential and fanout"),
            ));
        }
    }
    let targets: Vec<&YamlEntry> = ["tool", "skill", "run"]
        .into_iter()
        .filter_map(|key| get(step, key))
        .collect();
    if targets.len() != 1 {
        let at = targets.get(1).map_or(node.line, |entry| entry.line);
        return Err(check.err(at, field, "must declare exactly one of tool, skill or run"));
    }
    let id = check.required(step, "id", field, node.line)?;
    if previous.contains(&id) {
        return Err(check.err(
            line_of(step, "id"),
            &join(field, "id"),
            format!("{id:?} is used by an earlier step; ids must be unique"),
        ));
    }
    let target = match targets.first().map(|entry| entry.key.as_str()) {
        Some("tool") => {
            let tool = check.opt_non_empty(step, "tool", field)?.ok_or_else(|| {
                check.err(
                    line_of(step, "tool"),
                    &join(field, "tool"),
                    "must name a tool",
                )
            })?;
            if let Err(reason) = admit_tool_ref(&tool) {
                return Err(check.err_runx(
                    line_of(step, "tool"),
                    &join(field, "tool"),
                    format!("is {tool:?}; name a catalog tool such as fs.read"),
                    format!(
                        "{}: steps.{}.tool {tool:?} is not an admissible catalog tool ref: \
                         {reason}.",
                        check.file,
                        step_index(field)
                    ),
                ));
            }
            StepTarget::Tool(tool)
        }
        Some("skill") => {
            StepTarget::Skill(check.opt_non_empty(step, "skill", field)?.ok_or_else(|| {
                check.err(
                    line_of(step, "skill"),
                    &join(field, "skill"),
                    "must name a skill",
                )
            })?)
        }
        _ => check_run(check, step, field)?,
    };
    let runner = check.opt_non_empty(step, "runner", field)?;
    if runner.is_some() && !matches!(target, StepTarget::Skill(_)) {
        return Err(check.err(
            line_of(step, "runner"),
            &join(field, "runner"),
            "is only valid for nested skill steps; remove it",
        ));
    }
    let context = check_context(check, step, field, previous)?;
    let context_skills = check
        .opt_strings(step, "context_skills", field)?
        .unwrap_or_default();
    let agent_step = match &target {
        StepTarget::Skill(_) => true,
        StepTarget::Run(source) => source.source_type == "agent-task",
        _ => false,
    };
    if !context_skills.is_empty() && !agent_step {
        return Err(check.err(
            line_of(step, "context_skills"),
            &join(field, "context_skills"),
            "is only valid for agent-task steps or nested skills",
        ));
    }
    if let Some(inputs) = check.opt_mapping(step, "inputs", field)? {
        let inputs_field = join(field, "inputs");
        for entry in inputs {
            let at = join(&inputs_field, &entry.key);
            check_binding(check, &entry.value, &at, previous)?;
            if context.contains_key(&entry.key) {
                return Err(check.err(
                    entry.line,
                    &at,
                    "is bound through both inputs and context; keep one",
                ));
            }
        }
    }
    let scopes = check.opt_non_blank_strings(step, "scopes", field, "scope")?;
    let allowed_tools = check.opt_strings(step, "allowed_tools", field)?;
    for tool in allowed_tools.iter().flatten() {
        if let Err(reason) = admit_tool_ref(tool) {
            return Err(check.err_runx(
                line_of(step, "allowed_tools"),
                &join(field, "allowed_tools"),
                format!("names {tool:?}; name catalog tools such as fs.read"),
                format!(
                    "{}: steps.{}.allowed_tools entry {tool:?} is not an admissible agent tool \
                     ref: {reason}.",
                    check.file,
                    step_index(field)
                ),
            ));
        }
    }
    if let Some(entry) = get(step, "artifacts").filter(|e| !e.value.is_null()) {
        check_artifacts(check, entry, &join(field, "artifacts"))?;
    }
    if let Some(entry) = get(step, "retry").filter(|e| !e.value.is_null()) {
        let retry_field = join(field, "retry");
        check_retry(check, entry, &retry_field)?;
        let retry = check.mapping(&entry.value, &retry_field)?;
        check.opt_u64(retry, "backoff_ms", &retry_field)?;
    }
    check.opt_mapping(step, "policy", field)?;
    let when = check_when(check, step, field)?;
    let mutation = check.opt_bool(step, "mutation", field)?.unwrap_or(false);
    check.opt_non_empty(step, "idempotency_key", field)?;
    check.opt_non_empty(step, "label", field)?;
    check_mint(check, step, field, charter, &scopes)?;
    Ok(GraphStep {
        id,
        line: node.line,
        label: check.opt_string(step, "label", field)?.map(str::to_owned),
        target,
        runner,
        scopes,
        allowed_tools,
        context,
        mutation,
        when,
        fanout_group: check
            .opt_string(step, "fanout_group", field)?
            .map(str::to_owned),
        json: node.to_json(),
    })
}

/// `run:`: `{type: approval}` alone is a human gate; anything else is an inline
/// `agent-task`, `cli-tool` or `javascript` source.
pub(super) fn check_run(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
) -> Result<StepTarget, PackageError> {
    let run_field = join(field, "run");
    let Some(entry) = get(step, "run") else {
        return Err(check.err(1, &run_field, "is required"));
    };
    let run = check.mapping(&entry.value, &run_field)?;
    if get(run, "type").and_then(|e| e.value.as_str()) == Some("approval") {
        if let Some(extra) = run.iter().find(|e| e.key != "type") {
            return Err(check.err(
                extra.line,
                &join(&run_field, &extra.key),
                "an approval gate takes only type: approval; remove this field",
            ));
        }
        return Ok(StepTarget::Approval);
    }
    let source = check_source(
        check,
        run,
        entry.line,
        &run_field,
        SourceContext::InlineStep,
        true,
    )?;
    if !matches!(
        source.source_type.as_str(),
        "agent-task" | "cli-tool" | "javascript"
    ) {
        return Err(check.err(
            line_of(run, "type"),
            &join(&run_field, "type"),
            format!(
                "{} is not an inline graph source (use agent-task, cli-tool or javascript, or a \
                 skill or tool step for adapters)",
                source.source_type
            ),
        ));
    }
    Ok(StepTarget::Run(Box::new(source)))
}

/// `context: {input: <step>.<output>...}` from earlier steps only.
pub(super) fn check_context(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
    previous: &BTreeSet<String>,
) -> Result<BTreeMap<String, String>, PackageError> {
    let context_field = join(field, "context");
    let mut context = BTreeMap::new();
    for entry in check
        .opt_mapping(step, "context", field)?
        .unwrap_or_default()
    {
        let at = join(&context_field, &entry.key);
        let reference = check.string(entry, &at)?;
        let Some((from, output)) = reference.split_once('.') else {
            return Err(check.err(entry.line, &at, "must be written <step-id>.<output-field>"));
        };
        if from.is_empty() || output.is_empty() {
            return Err(check.err(entry.line, &at, "must be written <step-id>.<output-field>"));
        }
        if !previous.contains(from) {
            return Err(check.err(
                entry.line,
                &at,
                format!("reads step {from:?}, which is not an earlier step of this graph"),
            ));
        }
        context.insert(entry.key.clone(), reference.to_owned());
    }
    Ok(context)
}

/// An input binding: no retired `{{name}}` templates, and no `<earlier step>.<output>`
/// strings, which belong in `context`.
pub(super) fn check_binding(
    check: &Check<'_>,
    node: &YamlNode,
    field: &str,
    previous: &BTreeSet<String>,
) -> Result<(), PackageError> {
    match &node.value {
        YamlValue::String(value) => {
            if let Some(name) = legacy_binding(value) {
                return Err(check.err(
                    node.line,
                    field,
                    format!(
                        "uses the retired {{{{...}}}} binding {value:?}; write \"$input.{name}\""
                    ),
                ));
            }
            if let Some((from, output)) = value.split_once('.')
                && !output.is_empty()
                && previous.contains(from)
            {
                return Err(check.err(
                        node.line,
                        field,
                        format!("{value:?} looks like a step output; move it to context to read an earlier step's output"),
                    ));
            }
            Ok(())
        }
        YamlValue::Sequence(items) => items.iter().enumerate().try_for_each(|(index, item)| {
            check_binding(check, item, &format!("{field}[{index}]"), previous)
        }),
        YamlValue::Mapping(entries) => entries.iter().try_for_each(|entry| {
            check_binding(check, &entry.value, &join(field, &entry.key), previous)
        }),
        _ => Ok(()),
    }
}

/// The name in a retired `{{ name }}` binding.
pub(super) fn legacy_binding(value: &str) -> Option<&str> {
    let name = value.strip_prefix("{{")?.strip_suffix("}}")?.trim();
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.')))
    .then_some(name)
}

/// `when: {field, equals | not_equals}`.
pub(super) fn check_when(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
) -> Result<Option<When>, PackageError> {
    let when_field = join(field, "when");
    let Some(when) = check.opt_mapping(step, "when", field)? else {
        return Ok(None);
    };
    check.closed(
        when,
        &when_field,
        "when",
        &["field", "equals", "not_equals"],
    )?;
    let line = line_of(step, "when");
    let equals = get(when, "equals").map(|e| e.value.to_json());
    let not_equals = get(when, "not_equals").map(|e| e.value.to_json());
    if equals.is_some() == not_equals.is_some() {
        return Err(check.err(
            line,
            &when_field,
            "must declare exactly one of equals or not_equals",
        ));
    }
    Ok(Some(When {
        field: check.required(when, "field", &when_field, line)?,
        equals,
        not_equals,
    }))
}

/// `mint_authority: {source}` needs the graph's `charter_from`, and each source draws from one
/// place: `static_scopes` from the step's scopes, `requested_scope` from `requested_scope_from`.
pub(super) fn check_mint(
    check: &Check<'_>,
    step: &[YamlEntry],
    field: &str,
    charter: bool,
    scopes: &[String],
) -> Result<(), PackageError> {
    let requested = check.opt_non_empty(step, "requested_scope_from", field)?;
    let mint_field = join(field, "mint_authority");
    let Some(mint) = check.opt_mapping(step, "mint_authority", field)? else {
        if requested.is_some() {
            return Err(check.err(
                line_of(step, "requested_scope_from"),
                &join(field, "requested_scope_from"),
                "is only valid with a mint_authority directive",
            ));
        }
        return Ok(());
    };
    let line = line_of(step, "mint_authority");
    if !charter {
        return Err(check.err(line, &mint_field, "needs the graph to declare charter_from"));
    }
    let source = check
        .opt_one_of(
            mint,
            "source",
            &mint_field,
            &["static_scopes", "requested_scope"],
        )?
        .ok_or_else(|| check.err(line, &join(&mint_field, "source"), "is required"))?;
    let problem = match (source.as_str(), scopes.is_empty(), requested.is_some()) {
        ("static_scopes", true, _) => Some("static_scopes needs a non-empty scopes list"),
        ("static_scopes", _, true) => Some("static_scopes must not declare requested_scope_from"),
        ("requested_scope", _, false) => Some("requested_scope needs requested_scope_from"),
        ("requested_scope", false, _) => {
            Some("requested_scope must not declare a static scopes list")
        }
        _ => None,
    };
    match problem {
        Some(message) => Err(check.err(line, &mint_field, message)),
        None => Ok(()),
    }
}

/// The index of the step at `field` (`….steps[<i>]`): Runx names a step `steps.<i>`.
fn step_index(field: &str) -> &str {
    field
        .rsplit_once('[')
        .and_then(|(_, rest)| rest.strip_suffix(']'))
        .unwrap_or("0")
}

/// Runx's `admit_agent_tool_ref` (`runx-core/src/policy/tool_ref.rs`): a tool ref is a
/// dotted catalog name with a namespace, not a path or a data file; `Err` is Runx's reason.
pub(super) fn admit_tool_ref(value: &str) -> Result<(), &'static str> {
    let value = value.trim();
    if value.is_empty() {
        return Err("tool ref must not be empty");
    }
    if value.starts_with('/') || value.starts_with('\\') {
        return Err("tool ref must not be an absolute path");
    }
    if value.contains('/') || value.contains('\\') || value.contains("..") {
        return Err("tool ref must not contain path traversal or separators");
    }
    let lower = value.to_ascii_lowercase();
    if [".json", ".yaml", ".yml", ".toml"]
        .iter()
        .any(|suffix| lower.ends_with(suffix))
    {
        return Err("tool ref must not look like a manifest or data file path");
    }
    let segments: Vec<&str> = value.split('.').collect();
    if segments.len() < 2 {
        return Err("tool ref must include a namespace, for example fs.read");
    }
    if segments.iter().any(|segment| {
        segment.is_empty()
            || !segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    }) {
        return Err(
            "tool ref segments must contain only letters, numbers, hyphens, or underscores",
        );
    }
    Ok(())
}
