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
            return Err(check.err_said(
                line_of(graph, key),
                &join(field, key),
                "is not supported by the local sequential graph runner; remove it",
                |name| format!("{name} is not supported by the local sequential graph runner."),
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
    let not_a_list = |line: usize, message: String| {
        check.err_said(line, &steps_field, message, |name| {
            format!("{name} must be an array.")
        })
    };
    let steps_entry = get(graph, "steps")
        .ok_or_else(|| not_a_list(entry.line, "is required: list the graph's steps".to_owned()))?;
    let raw_steps = steps_entry.value.as_sequence().ok_or_else(|| {
        not_a_list(
            steps_entry.line,
            format!("must be a list of steps, not {}", steps_entry.value.kind()),
        )
    })?;
    if raw_steps.is_empty() {
        return Err(check.err_said(
            steps_entry.line,
            &steps_field,
            "must list at least one step",
            |name| format!("{name} must contain at least one step."),
        ));
    }
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
        // Runx names the entry `result_from.<index>`; the Lab's own line names `[index]`.
        let refuse = |message: String, runx: String| {
            check.err_said(
                result_line,
                &join(field, "result_from"),
                format!("[{index}] {message}"),
                |_| runx,
            )
        };
        if id.trim().is_empty() {
            return Err(refuse(
                "must not be empty; name a step id".to_owned(),
                format!("result_from.{index} must not be empty."),
            ));
        }
        if !ids.contains(id) {
            return Err(refuse(
                format!("names {id:?}, which is not a step of this graph"),
                format!("result_from.{index} references unknown step '{id}'."),
            ));
        }
        if !seen.insert(id) {
            return Err(refuse(
                format!("repeats {id:?}; list each step once"),
                format!("result_from contains duplicate step '{id}'."),
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

/// Step keys Runx refuses, in the order it checks them, with what to do instead and Runx's
/// words after the field's name.
pub(super) const REJECTED_STEP_FIELDS: [(&str, &str, &str); 4] = [
    (
        "instructions",
        "model instructions belong in SKILL.md, not X.yaml (write them in the agent task's \
         section of SKILL.md)",
        "is not supported; put agent operating instructions in the owning SKILL.md",
    ),
    (
        "effect_family",
        "is not supported: Runx derives effect ownership from the resolved target; remove it",
        "is not supported; effect ownership is derived from the resolved target",
    ),
    (
        "sync",
        "is not supported by the local sequential graph runner; remove it (reference a nested \
         graph as a skill: step)",
        "is not supported by the local sequential graph runner.",
    ),
    (
        "stage",
        "is not supported by the local sequential graph runner; remove it (reference a nested \
         graph as a skill: step)",
        "is not supported by the local sequential graph runner.",
    ),
];

pub(super) fn check_step(
    check: &Check<'_>,
    node: &YamlNode,
    field: &str,
    previous: &BTreeSet<String>,
    charter: bool,
) -> Result<GraphStep, PackageError> {
    let step = check.mapping(node, field)?;
    // Runx's step checks in its order: refused fields, the mode, more than one target, the id,
    // then no target.
    let said = |line: usize, at: &str, message: String, runx: &dyn Fn(&str) -> String| {
        check.err_said(line, at, message, |name| runx(name))
    };
    for (key, message, runx) in REJECTED_STEP_FIELDS {
        if let Some(entry) = get(step, key) {
            return Err(said(
                entry.line,
                &join(field, key),
                message.to_owned(),
                &|name| format!("{name} {runx}"),
            ));
        }
    }
    let mode = check.opt_string(step, "mode", field)?;
    match mode {
        None | Some("sequential") => {}
        Some("fanout") => {
            if get(step, "fanout_group")
                .and_then(|entry| entry.value.as_str())
                .is_none()
            {
                return Err(said(
                    line_of(step, "mode"),
                    &join(field, "fanout_group"),
                    "is required when mode is fanout".to_owned(),
                    &|name| format!("{name} is required when mode is fanout."),
                ));
            }
        }
        Some(other) => {
            return Err(said(
                line_of(step, "mode"),
                &join(field, "mode"),
                format!("is {other:?}; the local graph runner supports sequential and fanout"),
                &|name| format!("{name} '{other}' is not supported by the local graph runner."),
            ));
        }
    }
    let targets: Vec<&YamlEntry> = ["tool", "skill", "run"]
        .into_iter()
        .filter_map(|key| get(step, key))
        .collect();
    if targets.len() > 1 {
        return Err(said(
            targets[1].line,
            field,
            "must declare exactly one of tool, skill or run".to_owned(),
            &|name| format!("{name} must not declare more than one of run, skill, or tool."),
        ));
    }
    let id = check.required(step, "id", field, node.line)?;
    if previous.contains(&id) {
        return Err(said(
            line_of(step, "id"),
            &join(field, "id"),
            format!("{id:?} is used by an earlier step; ids must be unique"),
            &|name| format!("{name} '{id}' must be unique."),
        ));
    }
    if targets.is_empty() {
        return Err(said(
            node.line,
            field,
            "must declare exactly one of tool, skill or run".to_owned(),
            &|name| format!("{name} must declare exactly one of skill, tool, or run."),
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
        return Err(said(
            line_of(step, "runner"),
            &join(field, "runner"),
            "is only valid for nested skill steps; remove it".to_owned(),
            &|name| format!("{name} is only valid for nested skill steps."),
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
        return Err(said(
            line_of(step, "context_skills"),
            &join(field, "context_skills"),
            "is only valid for agent-task steps or nested skills".to_owned(),
            &|name| format!("{name} is only valid for agent-task steps or nested agent skills."),
        ));
    }
    if let Some(inputs) = check.opt_mapping(step, "inputs", field)? {
        let inputs_field = join(field, "inputs");
        for entry in inputs {
            let at = join(&inputs_field, &entry.key);
            check_binding(check, &entry.value, &at, previous)?;
            if context.contains_key(&entry.key) {
                // Runx names every such input, sorted (its inputs are a `BTreeMap`).
                let mut both: Vec<&str> = inputs
                    .iter()
                    .map(|entry| entry.key.as_str())
                    .filter(|key| context.contains_key(*key))
                    .collect();
                both.sort_unstable();
                return Err(said(
                    entry.line,
                    field,
                    format!(
                        "binds {} through both inputs and context; keep one",
                        entry.key
                    ),
                    &|step| {
                        format!(
                            "{step} binds the same input through both inputs and context: {}.",
                            both.join(", ")
                        )
                    },
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
            // Runx names every other field, sorted (its object is a `BTreeMap`).
            let mut fields: Vec<&str> = run
                .iter()
                .map(|e| e.key.as_str())
                .filter(|key| *key != "type")
                .collect();
            fields.sort_unstable();
            return Err(check.err_said(
                extra.line,
                &run_field,
                format!(
                    "an approval gate takes only type: approval; remove {}",
                    fields.join(", ")
                ),
                |step| {
                    format!(
                        "{step} approval control accepts only type; unsupported fields: {}",
                        fields.join(", ")
                    )
                },
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
        return Err(check.err_said(
            line_of(run, "type"),
            &run_field,
            format!(
                "type {} is not an inline graph source (use agent-task, cli-tool or javascript, \
                 or a skill or tool step for adapters)",
                source.source_type
            ),
            |step| {
                format!(
                    "{step}.type '{}' is not an inline graph source; use a skill or tool target \
                     for supervised adapters",
                    source.source_type
                )
            },
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
        let syntax = || {
            check.err_said(
                entry.line,
                &at,
                "must be written <step-id>.<output-field>",
                |name| format!("{name} must use '<step-id>.<output-field>' syntax."),
            )
        };
        let Some((from, output)) = reference.split_once('.') else {
            return Err(syntax());
        };
        if from.is_empty() || output.is_empty() {
            return Err(syntax());
        }
        if !previous.contains(from) {
            return Err(check.err_said(
                entry.line,
                &at,
                format!("reads step {from:?}, which is not an earlier step of this graph"),
                |name| format!("{name} references unknown or later step '{from}'."),
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
                return Err(check.err_said(
                    node.line,
                    field,
                    format!(
                        "uses the retired {{{{...}}}} binding {value:?}; write \"$input.{name}\""
                    ),
                    |at| {
                        format!(
                            "{} uses retired graph input binding {value:?}; use \"$input.{name}\".",
                            runx_entry(at)
                        )
                    },
                ));
            }
            if let Some((from, output)) = value.split_once('.')
                && !output.is_empty()
                && previous.contains(from)
            {
                return Err(check.err_said(
                    node.line,
                    field,
                    format!(
                        "{value:?} looks like a step output; move it to context to read an \
                         earlier step's output"
                    ),
                    |at| {
                        format!(
                            "{} looks like step output reference {value:?}; move it to context if \
                             you meant to read a previous step output.",
                            runx_entry(at)
                        )
                    },
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

/// Runx's name of an entry inside an input's value: a list's item by `.<index>`, as its JSON
/// walk names it (`steps.0.inputs.list.1`), where the Lab's own line says `list[1]`.
fn runx_entry(field: &str) -> String {
    field.replace('[', ".").replace(']', "")
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
    // Runx reads `field`, `equals` and `not_equals` and ignores any other key of `when`.
    let Some(when) = check.opt_mapping(step, "when", field)? else {
        return Ok(None);
    };
    let line = line_of(step, "when");
    let equals = get(when, "equals").map(|e| e.value.to_json());
    let not_equals = get(when, "not_equals").map(|e| e.value.to_json());
    if equals.is_some() == not_equals.is_some() {
        let runx = if equals.is_some() {
            "must not declare both equals and not_equals."
        } else {
            "must declare equals or not_equals."
        };
        return Err(check.err_said(
            line,
            &when_field,
            "must declare exactly one of equals or not_equals",
            |name| format!("{name} {runx}"),
        ));
    }
    Ok(Some(When {
        field: check.required(when, "field", &when_field, line)?,
        equals,
        not_equals,
    }))
}

/// `mint_authority: {source}` needs the graph's `charter_from`, and each source draws from one
/// place: `static_scopes` from the step's scopes, `requested_scope` from `requested_scope_from`
/// (Runx's `validate_mint_authority`, in its words).
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
            return Err(check.err_said(
                line_of(step, "requested_scope_from"),
                &join(field, "requested_scope_from"),
                "is only valid with a mint_authority directive",
                |name| format!("{name} is only valid with a mint_authority directive."),
            ));
        }
        return Ok(());
    };
    let line = line_of(step, "mint_authority");
    if !charter {
        return Err(check.err_said(
            line,
            &mint_field,
            "needs the graph to declare charter_from",
            |name| format!("{name} requires the graph to declare charter_from."),
        ));
    }
    let source_field = join(&mint_field, "source");
    let source = match get(mint, "source").filter(|entry| !entry.value.is_null()) {
        None => return Err(check.err_field(line, &source_field, "is required", "is required.")),
        Some(entry) => check.string(entry, &source_field)?,
    };
    if !matches!(source, "static_scopes" | "requested_scope") {
        return Err(check.err_said(
            line_of(mint, "source"),
            &source_field,
            format!("is {source:?}; use static_scopes or requested_scope"),
            |name| format!("{name} '{source}' must be static_scopes or requested_scope."),
        ));
    }
    let problem = match (source, scopes.is_empty(), requested.is_some()) {
        ("static_scopes", true, _) => Some((
            "static_scopes needs a non-empty scopes list",
            "static_scopes requires a non-empty scopes list.",
        )),
        ("static_scopes", _, true) => Some((
            "static_scopes must not declare requested_scope_from",
            "static_scopes must not declare requested_scope_from.",
        )),
        ("requested_scope", _, false) => Some((
            "requested_scope needs requested_scope_from",
            "requested_scope requires requested_scope_from.",
        )),
        ("requested_scope", false, _) => Some((
            "requested_scope must not declare a static scopes list",
            "requested_scope must not declare a static scopes list.",
        )),
        _ => None,
    };
    match problem {
        Some((message, runx)) => Err(check.err_said(line, &mint_field, message, |name| {
            format!("{name} source {runx}")
        })),
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

#[cfg(test)]
mod tests {
    use super::super::first_refusal_line;

    const MANUAL: &[u8] = b"---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n";

    /// The graph as a graph runner's in X.yaml, and as the graph file a `kind: graph` fixture
    /// runs: the first refusal lines of both packages.
    fn refusals(graph: &str) -> (Option<String>, Option<String>) {
        let indented: String = graph
            .lines()
            .map(|line| format!("      {line}\n"))
            .collect();
        let runner = format!(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    graph:\n\
             {indented}"
        );
        let in_profile = first_refusal_line(&[("SKILL.md", MANUAL), ("X.yaml", runner.as_bytes())]);
        let in_file = first_refusal_line(&[
            ("SKILL.md", MANUAL),
            (
                "X.yaml",
                b"skill: demo\nrunners:\n  main:\n    default: true\n    type: cli-tool\n    \
                  command: node\n    args: [run.mjs]\n",
            ),
            ("run.mjs", b"console.log('{}');\n"),
            (
                "fixtures/g.yaml",
                b"kind: graph\nname: g\ntarget: ../graphs/flow.yaml\n",
            ),
            ("graphs/flow.yaml", graph.as_bytes()),
        ]);
        (in_profile, in_file)
    }

    /// Every line is the real runx-cli 0.8.2's (`runx skill inspect`) for both layouts, after
    /// the file's name: a graph's own fields, its steps' fields and the rules between steps.
    #[test]
    fn a_graphs_refusals_are_worded_as_runx_in_x_yaml_and_in_a_graph_file() {
        for (graph, runx) in [
            (
                "name: flow\nsteps:\n  - id: a\n    tool: 3\n",
                "steps.0.tool must be a string.",
            ),
            (
                "name: flow\nsteps:\n  - tool: fs.read\n",
                "steps.0.id is required.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: a\n    tool: fs.read\n",
                "steps.1.id 'a' must be unique.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    run:\n      type: cli-tool\n      command: 3\n",
                "steps.0.run is not a valid inline source: source.command must be a string.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    run:\n      type: cli-tool\n      command: node\n      zeta: 1\n",
                "steps.0.run is not a valid inline source: source.zeta is not supported; allowed fields: act, agent, agent_card_url, agent_identity, args, arguments, command, cwd, environment, external_adapter, export, graph, input_mode, module, outputs, pages, server, task, thread_outbox_provider, timeout_seconds, tool, type.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    run:\n      type: approval\n      b: 1\n",
                "steps.0.run approval control accepts only type; unsupported fields: b",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n",
                "steps.0 must declare exactly one of skill, tool, or run.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    skill: .\n",
                "steps.0 must not declare more than one of run, skill, or tool.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    context:\n      x: b.y\n",
                "steps.0.context.x references unknown or later step 'b'.",
            ),
            (
                "name: flow\nresult_from: [zz]\nsteps:\n  - id: a\n    tool: fs.read\n",
                "result_from.0 references unknown step 'zz'.",
            ),
            (
                "name: flow\nsteps: []\n",
                "steps must contain at least one step.",
            ),
            ("name: flow\nsteps:\n  - 3\n", "steps.0 must be an object."),
            (
                "name: flow\nsteps:\n  - id: 3\n    tool: fs.read\n",
                "steps.0.id must be a string.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    when: 3\n",
                "steps.0.when must be an object.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    retry: {max_attempts: 0}\n",
                "steps.0.retry.max_attempts must be a positive integer.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    label: 3\n",
                "steps.0.label must be a string.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    mutation: yes-please\n",
                "steps.0.mutation must be a boolean.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    scopes: 3\n",
                "steps.0.scopes must be an array of strings.",
            ),
            (
                "name: flow\nfanout: 3\nsteps:\n  - id: a\n    tool: fs.read\n",
                "fanout must be an object.",
            ),
            (
                "name: 3\nsteps:\n  - id: a\n    tool: fs.read\n",
                "name must be a string.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    mode: parallel\n",
                "steps.0.mode 'parallel' is not supported by the local graph runner.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    mode: fanout\n",
                "steps.0.fanout_group is required when mode is fanout.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    stage: 1\n    instructions: x\n",
                "steps.0.instructions is not supported; put agent operating instructions in the owning SKILL.md",
            ),
            (
                "name: flow\nschedule: 1\nsync: 1\nsteps:\n  - id: a\n    tool: fs.read\n",
                "sync is not supported by the local sequential graph runner.",
            ),
            ("name: flow\n", "steps must be an array."),
            ("name: flow\nsteps: {}\n", "steps must be an array."),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    runner: x\n",
                "steps.0.runner is only valid for nested skill steps.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    context_skills: [x]\n",
                "steps.0.context_skills is only valid for agent-task steps or nested agent skills.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    context:\n      z: a.x\n      y: a.x\n    inputs:\n      z: 1\n      y: 2\n",
                "steps.1 binds the same input through both inputs and context: y, z.",
            ),
            (
                "name: flow\nresult_from: [a, a]\nsteps:\n  - id: a\n    tool: fs.read\n",
                "result_from contains duplicate step 'a'.",
            ),
            (
                "name: flow\nresult_from: [' ']\nsteps:\n  - id: a\n    tool: fs.read\n",
                "result_from.0 must not be empty.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    context:\n      x: a.\n",
                "steps.1.context.x must use '<step-id>.<output-field>' syntax.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    context:\n      x: a\n",
                "steps.1.context.x must use '<step-id>.<output-field>' syntax.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    inputs:\n      x: '{{ name }}'\n",
                "steps.0.inputs.x uses retired graph input binding \"{{ name }}\"; use \"$input.name\".",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    inputs:\n      x:\n        - ok\n        - y: '{{name}}'\n",
                "steps.0.inputs.x.1.y uses retired graph input binding \"{{name}}\"; use \"$input.name\".",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    inputs:\n      x: [1, a.out]\n",
                "steps.1.inputs.x.1 looks like step output reference \"a.out\"; move it to context if you meant to read a previous step output.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    when: {field: a.x, equals: 1, not_equals: 2}\n",
                "steps.1.when must not declare both equals and not_equals.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n  - id: b\n    tool: fs.read\n    when: {field: a.x}\n",
                "steps.1.when must declare equals or not_equals.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    when: {equals: 1}\n",
                "steps.0.when.field is required.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    scopes: [s]\n    mint_authority: {source: static_scopes}\n",
                "steps.0.mint_authority requires the graph to declare charter_from.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    tool: fs.read\n    requested_scope_from: x\n",
                "steps.0.requested_scope_from is only valid with a mint_authority directive.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    mint_authority: {}\n",
                "steps.0.mint_authority.source is required.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    mint_authority: {source: both}\n",
                "steps.0.mint_authority.source 'both' must be static_scopes or requested_scope.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    mint_authority: {source: static_scopes}\n",
                "steps.0.mint_authority source static_scopes requires a non-empty scopes list.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    scopes: [s]\n    requested_scope_from: x\n    mint_authority: {source: static_scopes}\n",
                "steps.0.mint_authority source static_scopes must not declare requested_scope_from.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    mint_authority: {source: requested_scope}\n",
                "steps.0.mint_authority source requested_scope requires requested_scope_from.",
            ),
            (
                "name: flow\ncharter_from: c\nsteps:\n  - id: a\n    tool: fs.read\n    scopes: [s]\n    requested_scope_from: x\n    mint_authority: {source: requested_scope}\n",
                "steps.0.mint_authority source requested_scope must not declare a static scopes list.",
            ),
            (
                "name: flow\nsteps:\n  - id: a\n    run:\n      type: approval\n      z: 1\n      b: 1\n",
                "steps.0.run approval control accepts only type; unsupported fields: b, z",
            ),
        ] {
            let (in_profile, in_file) = refusals(graph);
            assert_eq!(in_profile, Some(format!("X.yaml: {runx}")), "{graph}");
            assert_eq!(
                in_file,
                Some(format!("graphs/flow.yaml: {runx}")),
                "{graph}"
            );
        }
    }
}
