//! Inputs and sources: input definitions and their types, and each source a step or runner
//! reads (JavaScript modules, cli-tool commands, their environment).

use serde_json::Value;

use super::adapters;
use super::check::{Check, get, has, line_of};
use super::graph::check_graph;
use super::model::{InputDef, Source};
use super::{
    INPUT_FIELDS, INPUT_TYPES, JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS, JAVASCRIPT_MAX_TIMEOUT_SECONDS,
    PackageError, SOURCE_FIELDS, SOURCE_TYPES, join,
};
use crate::runx::yaml::YamlEntry;

/// Input definitions; `definitions` resolves `{definition: <name>}` references.
pub(super) fn check_inputs(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
    definitions: &[InputDef],
) -> Result<Vec<InputDef>, PackageError> {
    let mut inputs = Vec::new();
    for entry in entries {
        let field = join(parent, &entry.key);
        let record = check.mapping(&entry.value, &field)?;
        if has(record, "definition") {
            if record.len() != 1 {
                return Err(check.err(
                    entry.line,
                    &field,
                    "a {definition: <name>} reference takes no other fields; change the shared \
                     definition in input_definitions instead",
                ));
            }
            let name = check.required(record, "definition", &field, entry.line)?;
            let Some(definition) = definitions.iter().find(|def| def.name == name) else {
                return Err(check.err_said(
                    line_of(record, "definition"),
                    &join(&field, "definition"),
                    format!("names {name:?}, which input_definitions does not declare"),
                    |at| format!("{at} references unknown input_definitions.{name}"),
                ));
            };
            inputs.push(InputDef {
                name: entry.key.clone(),
                line: entry.line,
                definition: Some(name),
                ..definition.clone()
            });
            continue;
        }
        inputs.push(check_input(check, entry, record, &field)?);
    }
    Ok(inputs)
}

pub(super) fn check_input(
    check: &Check<'_>,
    entry: &YamlEntry,
    record: &[YamlEntry],
    field: &str,
) -> Result<InputDef, PackageError> {
    let runx_field = check.runx_field(field);
    check.closed_as(record, field, "input", &INPUT_FIELDS, runx_field.as_deref())?;
    // Refused in Runx's words (`runx-parser` `validate_inputs`), which name the input's whole
    // path as the Lab does.
    let input_type = match get(record, "type").filter(|entry| !entry.value.is_null()) {
        None => "string".to_owned(),
        Some(entry) => {
            let value = check.string(entry, &join(field, "type"))?;
            if !INPUT_TYPES.contains(&value) {
                return Err(check.err_runx(
                    entry.line,
                    &join(field, "type"),
                    format!("is {value:?}; use one of: {}", INPUT_TYPES.join(", ")),
                    format!(
                        "{}: {field}.type must be one of array, boolean, integer, json, number, \
                         object, or string",
                        check.file
                    ),
                ));
            }
            value.to_owned()
        }
    };
    let default = get(record, "default").map(|entry| entry.value.to_json());
    let packet = check.opt_non_empty(record, "packet", field)?;
    let schema = check.opt_mapping(record, "schema", field)?;
    if packet.is_some() {
        let at = line_of(record, "packet");
        let packet_field = join(field, "packet");
        if input_type != "json" {
            return Err(check.err_said(
                at,
                &packet_field,
                format!("needs {field}.type to be json"),
                |_| format!("{field}.packet requires {field}.type to be json"),
            ));
        }
        if schema.is_some() {
            return Err(check.err_said(
                at,
                &packet_field,
                "packet and schema are exclusive: the packet catalog owns the schema; remove \
                 schema",
                |_| {
                    format!(
                        "{field}.packet and {field}.schema are mutually exclusive; the packet \
                         catalog owns the schema"
                    )
                },
            ));
        }
        if default.is_some() {
            return Err(check.err_said(
                at,
                &packet_field,
                "a packet input cannot have a default; remove it",
                |_| format!("{field}.packet cannot declare a default packet value"),
            ));
        }
    }
    match schema {
        Some(schema) => {
            if let Some(duplicate) = ["type", "description", "default"]
                .into_iter()
                .find(|key| has(schema, key))
            {
                return Err(check.err_said(
                    line_of(schema, duplicate),
                    &join(&join(field, "schema"), duplicate),
                    format!("duplicates {field}.{duplicate}; keep it on the input, not in schema"),
                    |_| format!("{field}.schema.{duplicate} duplicates {field}.{duplicate}"),
                ));
            }
            if let Some(examples) = get(schema, "examples")
                && examples.value.as_sequence().is_none()
            {
                return Err(check.err_said(
                    examples.line,
                    &join(&join(field, "schema"), "examples"),
                    "must be a list",
                    |_| format!("{field}.schema.examples must be an array"),
                ));
            }
        }
        None => {
            if let Some(value) = &default
                && packet.is_none()
                && !accepts(&input_type, value)
            {
                return Err(check.err_said(
                    line_of(record, "default"),
                    &join(field, "default"),
                    format!("must match the declared type {input_type}"),
                    |_| format!("{field}.default must match declared type {input_type}"),
                ));
            }
        }
    }
    Ok(InputDef {
        name: entry.key.clone(),
        line: entry.line,
        input_type,
        required: check.opt_bool(record, "required", field)?.unwrap_or(false),
        description: check
            .opt_string(record, "description", field)?
            .map(str::to_owned),
        default,
        artifact: check.opt_bool(record, "artifact", field)?,
        packet,
        schema: get(record, "schema").map(|entry| entry.value.to_json()),
        definition: None,
    })
}

/// Whether a value fits an input type.
pub(super) fn accepts(input_type: &str, value: &Value) -> bool {
    match input_type {
        "array" => value.is_array(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "object" => value.is_object(),
        "string" => value.is_string(),
        _ => true,
    }
}

/// Where a source is declared: a runner or legacy SKILL.md (where `agent-task` needs its agent
/// and task), or an inline graph step (where the graph supplies them).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SourceContext {
    Skill,
    InlineStep,
}

/// Checks an executable source. `entries` are the source's fields (a `source:` or `run:`
/// block, or a runner's own fields), `parent` their path, `line` where the source starts.
pub(super) fn check_source(
    check: &Check<'_>,
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    context: SourceContext,
    closed: bool,
) -> Result<Source, PackageError> {
    let type_field = join(parent, "type");
    let source_type = check.required(entries, "type", parent, line)?;
    let type_line = line_of(entries, "type");
    // A runner's own source is refused in Runx's words (`X.yaml: source.agent is required.`).
    let runner_source = context == SourceContext::Skill;
    // An inline graph step's source is refused as Runx's graph parser words it (`X.yaml:
    // steps.1.run is not a valid inline source: agent-task sources must not …`).
    let step = inline_step_index(parent);
    let refuse = |line: usize, field: String, message: String, runx: String| {
        if runner_source {
            check.err_runx(line, &field, message, format!("{}: {runx}", check.file))
        } else if let Some(index) = step {
            check.err_runx(
                line,
                &field,
                message,
                format!(
                    "{}: steps.{index}.run is not a valid inline source: {runx}",
                    check.file
                ),
            )
        } else {
            check.err(line, &field, message)
        }
    };
    // The refusals matched to Runx's words only where the Lab knows the file's field paths
    // (X.yaml, SKILL.md, an inline step), not a tool manifest's.
    let worded = step.is_some() || (runner_source && check.runx_field(parent).is_some());
    let refuse_known = |line: usize, field: String, message: String, runx: String| {
        if worded {
            refuse(line, field, message, runx)
        } else {
            check.err(line, &field, message)
        }
    };
    match source_type.as_str() {
        "http" => {
            return Err(refuse_known(
                type_line,
                type_field,
                "http was removed; compose http.read, http.query or http.execute as a graph step"
                    .to_owned(),
                "source.type http was removed; compose http.read, http.query, or http.execute \
                 in a graph."
                    .to_owned(),
            ));
        }
        "catalog" => {
            return Err(refuse_known(
                type_line,
                type_field,
                "catalog was removed; call catalog tools from a graph tool step".to_owned(),
                "source.type catalog was removed; invoke catalog tools from a graph tool step."
                    .to_owned(),
            ));
        }
        _ => {}
    }
    if closed {
        // Runx names a `source:` block's unknown field by the Lab's path
        // (`runners.main.source.zeta is not supported; allowed fields: …`).
        // An inline step's source is named as Runx's graph parser names it
        // (`steps.0.run is not a valid inline source: source.zeta is not supported; …`).
        let inline = inline_step_index(parent)
            .map(|index| format!("steps.{index}.run is not a valid inline source: source"));
        let runx_parent = inline.or_else(|| check.runx_field(parent).map(|_| parent.to_owned()));
        check.closed_as(
            entries,
            parent,
            "source",
            &SOURCE_FIELDS,
            runx_parent.as_deref(),
        )?;
    }
    let args = check
        .opt_strings(entries, "args", parent)?
        .unwrap_or_default();
    check.opt_one_of(entries, "input_mode", parent, &["args", "stdin", "none"])?;
    let timeout_seconds = check.opt_u64(entries, "timeout_seconds", parent)?;
    let command = check
        .opt_string(entries, "command", parent)?
        .map(str::to_owned);
    if source_type == "cli-tool" && command.is_none() {
        return Err(refuse_known(
            line,
            join(parent, "command"),
            "is required for a cli-tool source".to_owned(),
            "source.command is required.".to_owned(),
        ));
    }
    let (module, export) = if source_type == "javascript" {
        check_javascript(check, entries, line, parent, timeout_seconds)?
    } else {
        if let Some(key) = ["module", "export"]
            .into_iter()
            .find(|key| has(entries, key))
        {
            return Err(refuse_known(
                line_of(entries, key),
                join(parent, key),
                "module and export are only for type: javascript sources".to_owned(),
                "source.module and source.export are only valid for javascript sources.".to_owned(),
            ));
        }
        (None, None)
    };
    if source_type == "agent-task"
        && let Some(key) = ["command", "args"]
            .into_iter()
            .find(|key| has(entries, key))
    {
        return Err(refuse(
            line_of(entries, key),
            join(parent, key),
            "an agent-task source runs no command; remove it".to_owned(),
            "agent-task sources must not declare source.command or source.args.".to_owned(),
        ));
    }
    if !SOURCE_TYPES.contains(&source_type.as_str()) {
        return Err(refuse_known(
            type_line,
            type_field,
            format!(
                "{source_type:?} is not a Runx source type; use one of: {}",
                SOURCE_TYPES.join(", ")
            ),
            format!("source.type {source_type} is not a supported source type."),
        ));
    }
    check.opt_string(entries, "cwd", parent)?;
    if source_type == "mcp" {
        let server_field = join(parent, "server");
        let server = check
            .opt_mapping(entries, "server", parent)?
            .ok_or_else(|| {
                refuse_known(
                    line,
                    server_field.clone(),
                    "is required for an mcp source".to_owned(),
                    "source.server is required.".to_owned(),
                )
            })?;
        check.required(server, "command", &server_field, line_of(entries, "server"))?;
        check.opt_strings(server, "args", &server_field)?;
        if check.opt_string(entries, "tool", parent)?.is_none() {
            return Err(refuse_known(
                line,
                join(parent, "tool"),
                "is required for an mcp source".to_owned(),
                "source.tool is required.".to_owned(),
            ));
        }
    }
    if source_type == "a2a"
        && check
            .opt_string(entries, "agent_card_url", parent)?
            .is_none()
    {
        return Err(refuse_known(
            line,
            join(parent, "agent_card_url"),
            "is required for an a2a source".to_owned(),
            "source.agent_card_url is required.".to_owned(),
        ));
    }
    let needs_agent_task = source_type == "agent-task" && runner_source;
    let agent = match check.opt_string(entries, "agent", parent)? {
        None if needs_agent_task => {
            return Err(refuse(
                line,
                join(parent, "agent"),
                "is required for an agent-task runner".to_owned(),
                "source.agent is required.".to_owned(),
            ));
        }
        other => other.map(str::to_owned),
    };
    let task = match check.opt_string(entries, "task", parent)? {
        None if needs_agent_task || source_type == "a2a" => {
            return Err(refuse(
                line,
                join(parent, "task"),
                format!("is required for an {source_type} source"),
                "source.task is required.".to_owned(),
            ));
        }
        other => other.map(str::to_owned),
    };
    let external_adapter =
        adapters::check_external_adapter(entries, line, parent, &source_type, &refuse_known)?;
    adapters::check_thread_outbox_provider(entries, line, parent, &source_type, &refuse_known)?;
    if has(entries, "pages") && source_type != "javascript" {
        return Err(refuse_known(
            line_of(entries, "pages"),
            join(parent, "pages"),
            "pages is only valid for deterministic javascript sources".to_owned(),
            "source.pages is only valid for deterministic javascript sources.".to_owned(),
        ));
    }
    let outputs = match check.opt_mapping(entries, "outputs", parent)? {
        None => None,
        Some(_) => get(entries, "outputs").map(|entry| entry.value.to_json()),
    };
    let environment = check_environment(check, entries, parent)?;
    let graph = if source_type == "graph" {
        let graph_field = join(parent, "graph");
        let graph_entry = get(entries, "graph").filter(|entry| !entry.value.is_null());
        let graph_entry = graph_entry.ok_or_else(|| {
            refuse_known(
                line,
                graph_field.clone(),
                "is required for a graph source".to_owned(),
                "source.graph is required.".to_owned(),
            )
        })?;
        Some(check_graph(check, graph_entry, &graph_field)?)
    } else {
        None
    };
    Ok(Source {
        source_type,
        command,
        args,
        module,
        export,
        timeout_seconds,
        agent,
        task,
        outputs,
        environment,
        graph,
        external_adapter,
    })
}

/// A `javascript` source: a portable module path, an identifier export (none means the
/// default export), no process or effect fields, and a wall of 1 to 30 seconds.
pub(super) fn check_javascript(
    check: &Check<'_>,
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    timeout_seconds: Option<u64>,
) -> Result<(Option<String>, Option<String>), PackageError> {
    const FORBIDDEN: [&str; 19] = [
        "agent",
        "agent_card_url",
        "agent_identity",
        "allow_private_network",
        "args",
        "arguments",
        "command",
        "cwd",
        "external_adapter",
        "graph",
        "headers",
        "hook",
        "http",
        "input_mode",
        "method",
        "server",
        "task",
        "tool",
        "url",
    ];
    if let Some(entry) = entries
        .iter()
        .find(|entry| FORBIDDEN.contains(&entry.key.as_str()))
    {
        return Err(check.err(
            entry.line,
            &join(parent, &entry.key),
            "a javascript source is a pure domain module and cannot declare process or effect \
             fields; remove it, or use a cli-tool runner or a native tool step",
        ));
    }
    let module_field = join(parent, "module");
    let module = check
        .opt_string(entries, "module", parent)?
        .ok_or_else(|| {
            check.err_field(
                line,
                &module_field,
                "is required for a javascript source",
                "is required.",
            )
        })?;
    let segments: Vec<&str> = module.split('/').collect();
    if module.starts_with('/')
        || module.contains('\\')
        || segments
            .iter()
            .any(|s| s.is_empty() || matches!(*s, "." | ".."))
        || !segments
            .last()
            .is_some_and(|name| name.ends_with(".mjs") || name.ends_with(".js"))
    {
        let message = format!(
            "is {module:?}; write a relative .mjs or .js path inside the package, without '.', \
             '..' or backslashes"
        );
        return Err(match inline_step_index(parent) {
            Some(index) => check.err_runx(
                line_of(entries, "module"),
                &module_field,
                message,
                format!(
                    "{}: steps.{index}.run is not a valid inline source: source.module must be a \
                     portable relative .mjs or .js path without '.', '..', or backslash segments.",
                    check.file
                ),
            ),
            // A runner's own source: Runx's source validator names the field `source.module`
            // whatever the runner.
            None => check.err_runx(
                line_of(entries, "module"),
                &module_field,
                message,
                format!(
                    "{}: source.module must be a portable relative .mjs or .js path without '.', \
                     '..', or backslash segments.",
                    check.file
                ),
            ),
        });
    }
    let export = check.opt_string(entries, "export", parent)?;
    if let Some(name) = export {
        let mut chars = name.chars();
        let start = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$'));
        if !start || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$')) {
            return Err(check.err_field(
                line_of(entries, "export"),
                &join(parent, "export"),
                format!("is {name:?}; write a JavaScript identifier, or leave it out for the default export"),
                "must be a JavaScript identifier.",
            ));
        }
    }
    if let Some(seconds) = timeout_seconds
        && (seconds == 0 || seconds > JAVASCRIPT_MAX_TIMEOUT_SECONDS)
    {
        return Err(check.err(
                line_of(entries, "timeout_seconds"),
                &join(parent, "timeout_seconds"),
                format!(
                    "is {seconds}; a javascript worker's wall is 1 to \
                     {JAVASCRIPT_MAX_TIMEOUT_SECONDS} seconds ({JAVASCRIPT_DEFAULT_TIMEOUT_SECONDS} \
                     when left out)"
                ),
            ));
    }
    Ok((Some(module.to_owned()), export.map(str::to_owned)))
}

/// The index of the inline graph step whose `run` is `parent`: Runx names such a source
/// `steps.<i>.run`.
fn inline_step_index(parent: &str) -> Option<&str> {
    // A runner's graph (`runners.main.graph.steps[0].run`) or a graph file's
    // (`graph.steps[0].run`).
    parent
        .strip_prefix("graph.steps[")
        .or_else(|| parent.split_once(".graph.steps[").map(|(_, rest)| rest))
        .and_then(|rest| rest.strip_suffix("].run"))
        .filter(|index| index.bytes().all(|b| b.is_ascii_digit()))
}

/// `environment: {required: [...], optional: [...]}`: portable, distinct, non-secret names.
pub(super) fn check_environment(
    check: &Check<'_>,
    entries: &[YamlEntry],
    parent: &str,
) -> Result<Vec<String>, PackageError> {
    let field = join(parent, "environment");
    let Some(environment) = check.opt_mapping(entries, "environment", parent)? else {
        return Ok(Vec::new());
    };
    check.closed(
        environment,
        &field,
        "environment",
        &["required", "optional"],
    )?;
    let mut names = Vec::new();
    for key in ["required", "optional"] {
        for name in check
            .opt_strings(environment, key, &field)?
            .unwrap_or_default()
        {
            let mut chars = name.chars();
            let portable = chars
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && chars.all(|c| c == '_' || c.is_ascii_alphanumeric());
            let at = line_of(environment, key);
            if !portable {
                return Err(check.err_said(
                    at,
                    &join(&field, key),
                    format!("{name:?} is not a portable environment variable name (letters, digits, '_')"),
                    |at| format!("{at} entry {name:?} must be a portable environment variable name"),
                ));
            }
            if name.starts_with("RUNX_") {
                return Err(check.err_said(
                    at,
                    &join(&field, key),
                    format!("{name} is reserved for the Runx runtime; pick another name"),
                    |at| {
                        format!("{at} cannot request runtime-reserved environment variable {name}")
                    },
                ));
            }
            if names.contains(&name) {
                return Err(check.err_said(
                    at,
                    &join(&field, key),
                    format!("repeats {name}; list it once"),
                    |at| format!("{at} repeats environment variable {name:?}"),
                ));
            }
            names.push(name);
        }
    }
    Ok(names)
}
