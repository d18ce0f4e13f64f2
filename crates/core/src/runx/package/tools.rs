//! The local tools a package carries (`tools/<namespace>/<tool>/manifest.json`), checked at
//! load as Runx checks them (`runx-parser` `package/validate/tools.rs`, `tool.rs`,
//! `runx-core` `policy/tool_ref.rs`), in Runx's order and words:
//!
//! - every `manifest.json` below a `tools` folder of the package (not of a nested package),
//!   in path order, is JSON holding an object with only the manifest's fields, the schema
//!   `runx.tool.manifest.v1`, a source Runx can run (`cli-tool`, `javascript`, `mcp`, `a2a`),
//!   a name, and well-formed inputs, scopes, retry, idempotency, `mutating` and artifacts;
//! - its name is a catalog reference (`namespace.tool`) equal to its path below `tools/`;
//! - every file its source names (`command`, `args`, `module`, an `mcp` server's command and
//!   arguments) is a normalized path inside the package, present where it must be local, and
//!   every JavaScript file among them brings its static imports and `require`s along, each a
//!   `node:` builtin or a relative file of the package; a `node` command runs no TypeScript.
//!
//! The files a tool names are the package's execution files too: the module check does not
//! call them unreachable.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Deserialize;
use serde_json::Value;

use super::check::{Check, get, line_of};
use super::graph::admit_tool_ref;
use super::inputs::{SourceContext, check_inputs, check_source};
use super::javascript::{has_nested_manual_boundary, process_module_imports};
use super::manual::check_artifacts;
use super::{InputDef, PackageError, text_file};
use crate::runx::yaml::{self, YamlEntry, YamlNode, YamlValue};

/// A manifest's top-level fields, in Runx's order (which its refusal lists).
const MANIFEST_FIELDS: [&str; 12] = [
    "schema",
    "name",
    "version",
    "description",
    "source",
    "inputs",
    "scopes",
    "risk",
    "retry",
    "idempotency",
    "mutating",
    "artifacts",
];

/// The source types a tool manifest may have.
const TOOL_SOURCE_TYPES: [&str; 4] = ["cli-tool", "javascript", "mcp", "a2a"];

/// The only manifest schema Runx knows; deserialized as Runx does, so that a wrong value is
/// refused with serde's own words, as Runx's is.
#[derive(Deserialize)]
enum ToolManifestSchema {
    #[serde(rename = "runx.tool.manifest.v1")]
    V1,
}

/// A tool the package carries: its manifest and the package files its source runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageTool {
    /// The manifest's package path (`tools/demo/echo/manifest.json`).
    pub manifest_path: String,
    /// The tool's name (`demo.echo`).
    pub name: String,
    /// Its declared inputs.
    pub inputs: Vec<InputDef>,
    /// The package files its source names, with the JavaScript they import.
    pub source_files: BTreeSet<String>,
}

/// Runx's `validate_package_tools`: every tool manifest the package owns, checked, in path
/// order; the first refusal is returned.
pub(super) fn check_package_tools(
    files: &BTreeMap<&str, &[u8]>,
) -> Result<Vec<PackageTool>, PackageError> {
    files
        .iter()
        .filter(|(path, _)| is_tool_manifest_path(path))
        .filter(|(path, _)| !has_nested_manual_boundary(path, files))
        .map(|(path, contents)| check_tool(path, contents, files))
        .collect()
}

fn is_tool_manifest_path(path: &str) -> bool {
    path.ends_with("/manifest.json") && path.split('/').any(|segment| segment == "tools")
}

fn check_tool(
    path: &str,
    contents: &[u8],
    files: &BTreeMap<&str, &[u8]>,
) -> Result<PackageTool, PackageError> {
    let text = text_file(path, contents)?;
    let document = parse_manifest(path, text)?;
    let check = Check {
        file: path,
        graph_file: false,
    };
    let (name, inputs) = check_manifest(&check, &document)?;
    check_identity(&check, &document, &name)?;
    let source = document
        .entry("source")
        .map(|entry| entry.value.to_json())
        .unwrap_or_default();
    let tool_directory = path.strip_suffix("/manifest.json").unwrap_or(path);
    let source_files = check_source_files(files, path, tool_directory, &source)?;
    Ok(PackageTool {
        manifest_path: path.to_owned(),
        name,
        inputs,
        source_files,
    })
}

/// The manifest as a tree with lines: Runx reads it as JSON (`serde_json`), and so does the
/// decision here; the lines come from reading the same text as YAML, of which JSON is a
/// part, where that gives the same value (else every field is reported at line 1). Keys are
/// in Runx's order (sorted), so the first refused key is the one Runx names.
fn parse_manifest(path: &str, text: &str) -> Result<YamlNode, PackageError> {
    let value: Value = serde_json::from_str(text).map_err(|error| PackageError::Invalid {
        file: path.to_owned(),
        line: error.line().max(1),
        field: "(file)".to_owned(),
        message: "is not valid JSON; fix the syntax".to_owned(),
        runx: Some(format!(
            "{path}: tool_manifest: JSON parse failed: Tool manifest JSON is invalid: {error}"
        )),
    })?;
    if !value.is_object() {
        return Err(PackageError::Invalid {
            file: path.to_owned(),
            line: 1,
            field: "(file)".to_owned(),
            message: "must hold one JSON object, the tool's manifest".to_owned(),
            runx: Some(format!(
                "{path}: tool_manifest: Tool manifest JSON must parse to an object."
            )),
        });
    }
    let mut node = yaml::parse(path, text)
        .ok()
        .filter(|node| node.to_json() == value)
        .unwrap_or_else(|| YamlNode::from_json(&value, 1));
    node.sort_keys();
    Ok(node)
}

/// Runx's `validate_tool_manifest`: the tool's name and inputs, or the first refusal.
fn check_manifest(
    check: &Check<'_>,
    document: &YamlNode,
) -> Result<(String, Vec<InputDef>), PackageError> {
    let entries = document.as_mapping().unwrap_or_default();
    if let Some(entry) = entries
        .iter()
        .find(|entry| !MANIFEST_FIELDS.contains(&entry.key.as_str()))
    {
        return Err(refuse(
            check,
            entry.line,
            &entry.key,
            format!(
                "is not a tool manifest field; remove it or use one of: {}",
                MANIFEST_FIELDS.join(", ")
            ),
            format!(
                "tool_manifest.{} is not supported; allowed fields: {}.",
                entry.key,
                MANIFEST_FIELDS.join(", ")
            ),
        ));
    }
    check_schema(check, entries)?;
    check_tool_source(check, entries)?;
    let name = match get(entries, "name") {
        Some(entry) => match &entry.value.value {
            YamlValue::String(name) if !name.is_empty() => name.clone(),
            YamlValue::String(_) | YamlValue::Null => {
                return Err(missing(check, entry.line, "name"));
            }
            _ => return Err(not_a_string(check, entry, "name")),
        },
        None => return Err(missing(check, 1, "name")),
    };
    for key in ["version", "description"] {
        if let Some(entry) = get(entries, key)
            && !matches!(entry.value.value, YamlValue::String(_) | YamlValue::Null)
        {
            return Err(not_a_string(check, entry, key));
        }
    }
    let inputs = match non_null(entries, "inputs") {
        None => Vec::new(),
        Some(entry) => {
            let inputs = entry
                .value
                .as_mapping()
                .ok_or_else(|| not_an_object(check, entry))?;
            check_inputs(check, inputs, "inputs", &[])?
        }
    };
    check_scopes(check, entries)?;
    check_retry(check, entries)?;
    check_idempotency(check, entries)?;
    if let Some(entry) = non_null(entries, "mutating")
        && entry.value.as_bool().is_none()
    {
        return Err(refuse(
            check,
            entry.line,
            "mutating",
            "must be true or false",
            "mutating must be a boolean.",
        ));
    }
    if let Some(entry) = non_null(entries, "artifacts") {
        check_artifacts(check, entry, "artifacts")?;
    }
    Ok((name, inputs))
}

fn check_schema(check: &Check<'_>, entries: &[YamlEntry]) -> Result<(), PackageError> {
    let Some(entry) = get(entries, "schema") else {
        return Err(refuse(
            check,
            1,
            "schema",
            "is required; write \"schema\": \"runx.tool.manifest.v1\"",
            "schema is required",
        ));
    };
    serde_json::from_value::<ToolManifestSchema>(entry.value.to_json())
        .map(|_| ())
        .map_err(|error| {
            refuse(
                check,
                entry.line,
                "schema",
                "must be \"runx.tool.manifest.v1\"",
                format!("schema is invalid: {error}"),
            )
        })
}

/// The manifest's `source`: an executable source (the checks a runner's source gets), of a
/// type a tool may have.
fn check_tool_source(check: &Check<'_>, entries: &[YamlEntry]) -> Result<(), PackageError> {
    let Some(entry) = non_null(entries, "source") else {
        let line = get(entries, "source").map_or(1, |entry| entry.line);
        return Err(refuse(
            check,
            line,
            "source",
            "is required: the tool's executable source",
            "source is required.",
        ));
    };
    let source = entry
        .value
        .as_mapping()
        .ok_or_else(|| not_an_object(check, entry))?;
    match get(source, "type").map(|entry| &entry.value.value) {
        Some(YamlValue::String(kind)) if !kind.is_empty() => {}
        Some(YamlValue::String(_) | YamlValue::Null) | None => {
            return Err(missing(check, line_of(source, "type"), "source.type"));
        }
        Some(_) => {
            let at = get(source, "type").unwrap_or(entry);
            return Err(not_a_string(check, at, "source.type"));
        }
    }
    let checked = check_source(
        check,
        source,
        entry.line,
        "source",
        SourceContext::Skill,
        true,
    )?;
    if !TOOL_SOURCE_TYPES.contains(&checked.source_type.as_str()) {
        return Err(refuse(
            check,
            line_of(source, "type"),
            "source.type",
            format!(
                "a tool runs as one of {}; a {} source belongs in a runner",
                TOOL_SOURCE_TYPES.join(", "),
                checked.source_type
            ),
            "source.type must be one of cli-tool, javascript, mcp, or a2a for tool manifests.",
        ));
    }
    Ok(())
}

fn check_scopes(check: &Check<'_>, entries: &[YamlEntry]) -> Result<(), PackageError> {
    let Some(entry) = non_null(entries, "scopes") else {
        return Ok(());
    };
    let scopes = entry
        .value
        .as_sequence()
        .filter(|items| items.iter().all(|item| item.as_str().is_some()))
        .ok_or_else(|| {
            refuse(
                check,
                entry.line,
                "scopes",
                "must be a list of scope strings",
                "scopes must be an array of strings.",
            )
        })?;
    if let Some(blank) = scopes
        .iter()
        .find(|scope| scope.as_str().is_some_and(|scope| scope.trim().is_empty()))
    {
        return Err(refuse(
            check,
            blank.line,
            "scopes",
            "must not hold a blank scope; remove it",
            "scopes must contain only non-empty scope strings",
        ));
    }
    Ok(())
}

fn check_retry(check: &Check<'_>, entries: &[YamlEntry]) -> Result<(), PackageError> {
    let Some(entry) = non_null(entries, "retry") else {
        return Ok(());
    };
    let retry = entry
        .value
        .as_mapping()
        .ok_or_else(|| not_an_object(check, entry))?;
    let Some(attempts) = non_null(retry, "max_attempts") else {
        return Ok(());
    };
    // Runx's `optional_u64`: a number whose value is a whole number of at least 0, and then
    // not 0.
    let whole = match &attempts.value.value {
        YamlValue::Number(number) => number.as_f64().map(|n| n.fract() == 0.0 && n >= 0.0),
        _ => None,
    };
    let positive = attempts.value.as_u64().is_none_or(|n| n > 0);
    match whole {
        Some(true) if positive => Ok(()),
        Some(_) => Err(refuse(
            check,
            attempts.line,
            "retry.max_attempts",
            "must be a positive whole number (1 means no retry)",
            "retry.max_attempts must be a positive integer.",
        )),
        None => Err(refuse(
            check,
            attempts.line,
            "retry.max_attempts",
            "must be a positive whole number (1 means no retry)",
            "retry.max_attempts must be a finite number.",
        )),
    }
}

fn check_idempotency(check: &Check<'_>, entries: &[YamlEntry]) -> Result<(), PackageError> {
    let Some(entry) = non_null(entries, "idempotency") else {
        return Ok(());
    };
    match &entry.value.value {
        YamlValue::String(key) if key.trim().is_empty() => Err(refuse(
            check,
            entry.line,
            "idempotency",
            "must not be empty; write the key or remove it",
            "idempotency must not be empty.",
        )),
        YamlValue::String(_) => Ok(()),
        YamlValue::Mapping(record) => match non_null(record, "key") {
            None => Ok(()),
            Some(key) => match key.value.as_str() {
                Some(text) if text.trim().is_empty() => Err(refuse(
                    check,
                    key.line,
                    "idempotency.key",
                    "must not be empty; write the key or remove it",
                    "idempotency.key must not be empty.",
                )),
                Some(_) => Ok(()),
                None => Err(not_a_string(check, key, "idempotency.key")),
            },
        },
        _ => Err(not_an_object(check, entry)),
    }
}

/// Runx's `validate_tool_identity`: the name is a catalog reference, and it is the
/// manifest's path below `tools/`, its segments joined by dots.
fn check_identity(check: &Check<'_>, document: &YamlNode, name: &str) -> Result<(), PackageError> {
    let path = check.file;
    let line = document.entry("name").map_or(1, |entry| entry.line);
    if let Err(reason) = admit_tool_ref(name) {
        return Err(PackageError::Invalid {
            file: path.to_owned(),
            line,
            field: "name".to_owned(),
            message: format!("is not a tool reference: {reason}"),
            runx: Some(format!(
                "{path}.name: bundled tool name {name:?} is invalid: {reason}"
            )),
        });
    }
    let segments: Vec<&str> = path.split('/').collect();
    let tools_index = segments
        .iter()
        .rposition(|segment| *segment == "tools")
        .unwrap_or_default();
    let name_segments = &segments[tools_index + 1..segments.len().saturating_sub(1)];
    if name_segments.len() < 2 {
        return Err(PackageError::Invalid {
            file: path.to_owned(),
            line: 1,
            field: "(file name)".to_owned(),
            message: "move the manifest to tools/<namespace>/<tool>/manifest.json".to_owned(),
            runx: Some(format!(
                "{path}: bundled tool paths must be tools/<namespace>/<tool>/manifest.json"
            )),
        });
    }
    let expected = name_segments.join(".");
    if expected != name {
        return Err(PackageError::Invalid {
            file: path.to_owned(),
            line,
            field: "name".to_owned(),
            message: format!(
                "must be {expected:?}, the manifest's folder below tools/; rename the tool or \
                 move the manifest"
            ),
            runx: Some(format!(
                "{path}.name: bundled tool name {name:?} must match its catalog path {expected:?}"
            )),
        });
    }
    Ok(())
}

/// One value of the source that may name a package file.
struct SourceEntry<'a> {
    field: String,
    value: &'a str,
    /// Whether the file must be in the package (else a value naming no file is a word, such
    /// as `node` or `--flag`).
    required_local: bool,
}

fn source_entries(source: &Value) -> Vec<SourceEntry<'_>> {
    let mut entries = process_entries("source", source);
    if let Some(module) = source.get("module").and_then(Value::as_str) {
        entries.push(SourceEntry {
            field: "source.module".to_owned(),
            value: module,
            required_local: true,
        });
    }
    if let Some(server) = source.get("server").filter(|server| server.is_object()) {
        entries.extend(process_entries("source.server", server));
    }
    entries
}

/// The command and arguments of a process (`prefix` is the field holding them).
fn process_entries<'v>(prefix: &str, process: &'v Value) -> Vec<SourceEntry<'v>> {
    let command = process.get("command").and_then(Value::as_str);
    let args = process
        .get("args")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    let command = command.map(|command| SourceEntry {
        field: format!("{prefix}.command"),
        value: command,
        required_local: command.starts_with('.'),
    });
    command
        .into_iter()
        .chain(args.enumerate().map(|(index, argument)| SourceEntry {
            field: format!("{prefix}.args[{index}]"),
            value: argument,
            required_local: looks_like_local_source(argument),
        }))
        .collect()
}

fn looks_like_local_source(value: &str) -> bool {
    value.starts_with('.')
        || value.rsplit_once('.').is_some_and(|(_, extension)| {
            matches!(
                extension,
                "js" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" | "py" | "rb" | "sh" | "wasm"
            )
        })
}

fn has_extension(path: &str, extensions: &[&str]) -> bool {
    path.rsplit_once('.')
        .is_some_and(|(_, extension)| extensions.contains(&extension))
}

const JAVASCRIPT_EXTENSIONS: [&str; 3] = ["js", "mjs", "cjs"];
const TYPESCRIPT_EXTENSIONS: [&str; 4] = ["ts", "tsx", "mts", "cts"];

/// Runx's `validate_tool_source_files`: the package files the source names, with the
/// JavaScript they reach.
fn check_source_files(
    files: &BTreeMap<&str, &[u8]>,
    manifest_path: &str,
    tool_directory: &str,
    source: &Value,
) -> Result<BTreeSet<String>, PackageError> {
    let mut found = BTreeSet::new();
    let mut modules = VecDeque::new();
    for entry in source_entries(source) {
        let candidate = normalize_relative_path(tool_directory, entry.value, &entry.field)
            .map_err(|refusal| refusal.at(manifest_path, &entry.field))?;
        if !files.contains_key(candidate.as_str()) {
            if entry.required_local {
                return Err(Refusal {
                    path: entry.field.clone(),
                    message: format!(
                        "declared tool source file {candidate:?} is missing from the package"
                    ),
                }
                .at(manifest_path, &entry.field));
            }
            continue;
        }
        if has_extension(&candidate, &JAVASCRIPT_EXTENSIONS) {
            modules.push_back(candidate.clone());
        }
        found.insert(candidate);
    }
    while let Some(module) = modules.pop_front() {
        let Some(bytes) = files.get(module.as_str()) else {
            return Err(Refusal {
                path: module.clone(),
                message: "tool source dependency is missing".to_owned(),
            }
            .at(manifest_path, "source"));
        };
        let text = text_file(&module, bytes)?;
        let imports =
            process_module_imports(&module, text).map_err(|refusal| refusal.into_error(None))?;
        let directory = module
            .rsplit_once('/')
            .map_or("", |(directory, _)| directory);
        for (specifier, line) in imports {
            if specifier.starts_with("node:") {
                continue;
            }
            let in_module = |message: String| PackageError::Invalid {
                file: module.clone(),
                line,
                field: "import".to_owned(),
                message: "a tool's JavaScript imports node: builtins and files of the package \
                          only; bundle the dependency into the package"
                    .to_owned(),
                runx: Some(format!("{module}: {message}")),
            };
            if !(specifier.starts_with("./") || specifier.starts_with("../")) {
                return Err(in_module(format!(
                    "process-backed tool import {specifier:?} must be a node: builtin or a \
                     relative package file"
                )));
            }
            let dependency = normalize_relative_path(directory, &specifier, &module)
                .map_err(|refusal| in_module(refusal.message_with_path()))?;
            if !files.contains_key(dependency.as_str()) {
                return Err(in_module(format!(
                    "process-backed tool import {specifier:?} resolves to missing file \
                     {dependency}"
                )));
            }
            if found.insert(dependency.clone())
                && has_extension(&dependency, &JAVASCRIPT_EXTENSIONS)
            {
                modules.push_back(dependency);
            }
        }
    }
    if node_command(source)
        && let Some(path) = found
            .iter()
            .find(|path| has_extension(path, &TYPESCRIPT_EXTENSIONS))
    {
        return Err(PackageError::Invalid {
            file: manifest_path.to_owned(),
            line: 1,
            field: "source.command".to_owned(),
            message: "node runs JavaScript; compile the TypeScript and name the .js or .mjs file"
                .to_owned(),
            runx: Some(format!(
                "{path}: node tool source imports uncompiled TypeScript; declare an executable \
                 JavaScript entrypoint"
            )),
        });
    }
    Ok(found)
}

fn node_command(source: &Value) -> bool {
    source
        .get("command")
        .and_then(Value::as_str)
        .is_some_and(|command| {
            let executable = command.rsplit(['/', '\\']).next().unwrap_or(command);
            executable
                .strip_suffix(".exe")
                .unwrap_or(executable)
                .eq_ignore_ascii_case("node")
        })
}

/// A refusal in Runx's words about `path` (a field, a file), before it is placed.
struct Refusal {
    path: String,
    message: String,
}

impl Refusal {
    fn message_with_path(&self) -> String {
        format!("{}: {}", self.path, self.message)
    }

    /// As a package refusal pointing at the manifest's `field`.
    fn at(self, manifest_path: &str, field: &str) -> PackageError {
        PackageError::Invalid {
            file: manifest_path.to_owned(),
            line: 1,
            field: field.to_owned(),
            message: "a tool's source names files inside the package by relative POSIX paths; \
                      fix the path or add the file"
                .to_owned(),
            runx: Some(self.message_with_path()),
        }
    }
}

/// Runx's `normalize_relative_path` for a tool: `value` read from `directory`, inside the
/// package; `field` is what a refusal names.
fn normalize_relative_path(directory: &str, value: &str, field: &str) -> Result<String, Refusal> {
    let refusal = |path: &str, message: String| Refusal {
        path: path.to_owned(),
        message,
    };
    if value.trim() != value
        || value.is_empty()
        || value.starts_with('/')
        || value.contains(['\\', '?', '#'])
    {
        return Err(refusal(
            field,
            format!("tool source path {value:?} must be a normalized relative POSIX path"),
        ));
    }
    let mut segments: Vec<&str> = if directory.is_empty() {
        Vec::new()
    } else {
        directory.split('/').collect()
    };
    for segment in value.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(refusal(
                        field,
                        format!("tool source path {value:?} escapes the skill package"),
                    ));
                }
            }
            segment => segments.push(segment),
        }
    }
    let resolved = segments.join("/");
    if let Some(problem) = super::javascript::package_path_problem(&resolved) {
        return Err(refusal(&resolved, problem.to_owned()));
    }
    Ok(resolved)
}

/// The entry under `key` unless it is absent or null.
fn non_null<'n>(entries: &'n [YamlEntry], key: &str) -> Option<&'n YamlEntry> {
    get(entries, key).filter(|entry| !entry.value.is_null())
}

fn refuse(
    check: &Check<'_>,
    line: usize,
    field: &str,
    message: impl Into<String>,
    runx: impl std::fmt::Display,
) -> PackageError {
    check.err_runx(line, field, message, format!("{}: {runx}", check.file))
}

fn missing(check: &Check<'_>, line: usize, field: &str) -> PackageError {
    refuse(
        check,
        line,
        field,
        "is required",
        format!("{field} is required."),
    )
}

/// Runx's refusal of a field that is not a string; `field` is its whole path.
fn not_a_string(check: &Check<'_>, entry: &YamlEntry, field: &str) -> PackageError {
    refuse(
        check,
        entry.line,
        field,
        format!("must be a string, not {}", entry.value.kind()),
        format!("{field} must be a string."),
    )
}

/// Runx's refusal of a top-level field that is not an object.
fn not_an_object(check: &Check<'_>, entry: &YamlEntry) -> PackageError {
    refuse(
        check,
        entry.line,
        &entry.key,
        format!("must be an object, not {}", entry.value.kind()),
        format!("{} must be an object.", entry.key),
    )
}

#[cfg(test)]
mod tests {
    use super::super::load_package;
    use crate::runx::snapshot::SnapshotFile;

    const MANUAL: &str = "---\nname: demo\ndescription: A demo skill.\n---\n\n# Demo\n\nUse it.\n";

    /// A package whose one runner is a graph calling the tool `demo.echo`.
    const PROFILE: &str = "\
skill: demo
runners:
  main:
    default: true
    type: graph
    graph:
      name: demo
      result_from: [echo]
      steps:
        - id: echo
          tool: demo.echo
";

    const MANIFEST: &str = r#"{
  "schema": "runx.tool.manifest.v1",
  "name": "demo.echo",
  "source": {
    "type": "cli-tool",
    "command": "node",
    "args": ["./run.mjs"]
  },
  "inputs": {"text": {"type": "string"}},
  "scopes": ["demo.read"]
}
"#;

    const MANIFEST_PATH: &str = "tools/demo/echo/manifest.json";

    fn package(extra: &[(&str, &str)]) -> Vec<SnapshotFile> {
        let mut pairs = vec![
            ("SKILL.md", MANUAL),
            ("X.yaml", PROFILE),
            ("tools/demo/echo/run.mjs", "console.log('hi');\n"),
        ];
        for (path, text) in extra {
            pairs.retain(|(p, _)| p != path);
            pairs.push((path, text));
        }
        pairs
            .into_iter()
            .map(|(path, text)| SnapshotFile {
                path: path.to_owned(),
                mode: 0o100_644,
                contents: text.as_bytes().to_vec(),
            })
            .collect()
    }

    /// The first line of the refusal of the package with the manifest `manifest` (and the
    /// files `extra`).
    fn first_line(manifest: &str, extra: &[(&str, &str)]) -> String {
        let mut files = vec![(MANIFEST_PATH, manifest)];
        files.extend_from_slice(extra);
        match load_package(&package(&files)) {
            Ok(_) => panic!("accepted:\n{manifest}"),
            Err(err) => err
                .to_string()
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    fn with(from: &str, to: &str) -> String {
        assert!(MANIFEST.contains(from), "{from}");
        MANIFEST.replacen(from, to, 1)
    }

    #[test]
    fn a_package_carrying_a_well_formed_tool_loads() {
        load_package(&package(&[(MANIFEST_PATH, MANIFEST)])).unwrap();
    }

    #[test]
    fn a_module_only_a_tool_runs_is_an_execution_file_not_an_unreachable_one() {
        let manifest = with(r#"["./run.mjs"]"#, r#"["../../../lib/helper.mjs"]"#);
        let helper = (
            "lib/helper.mjs",
            "import { x } from './dep.mjs';\nconsole.log(x);\n",
        );
        let dep = ("lib/dep.mjs", "export const x = 1;\n");
        load_package(&package(&[(MANIFEST_PATH, &manifest), helper, dep])).unwrap();
        // Without the tool, Runx calls the same module unreachable.
        let err = load_package(&package(&[helper, dep])).unwrap_err();
        assert_eq!(
            err.to_string().lines().next(),
            Some(
                "lib/dep.mjs: executable JavaScript module is not reachable from a declared package source"
            )
        );
    }

    #[test]
    fn a_manifest_that_is_no_json_object_is_refused_in_runx_words() {
        assert_eq!(
            first_line("{\"schema\": ", &[]),
            "tools/demo/echo/manifest.json: tool_manifest: JSON parse failed: Tool manifest JSON \
             is invalid: EOF while parsing a value at line 1 column 11"
        );
        assert_eq!(
            first_line("[1, 2]", &[]),
            "tools/demo/echo/manifest.json: tool_manifest: Tool manifest JSON must parse to an \
             object."
        );
    }

    // Every expected line in these tests is the real runx-cli 0.8.2's (`runx skill inspect`).
    #[test]
    fn manifest_fields_are_refused_in_runx_words_and_order() {
        let at = |rest: &str| format!("{MANIFEST_PATH}: {rest}");
        let cases: Vec<(String, String)> = vec![
            (
                with("\"scopes\"", "\"zeta\": 1, \"alpha\": 2, \"scopes\""),
                at(
                    "tool_manifest.alpha is not supported; allowed fields: schema, name, version, \
                    description, source, inputs, scopes, risk, retry, idempotency, mutating, \
                    artifacts.",
                ),
            ),
            (
                with("\"schema\": \"runx.tool.manifest.v1\",", ""),
                at("schema is required"),
            ),
            (
                with("runx.tool.manifest.v1", "runx.tool.manifest.v2"),
                at(
                    "schema is invalid: unknown variant `runx.tool.manifest.v2`, expected \
                    `runx.tool.manifest.v1`",
                ),
            ),
            (
                with("\"name\": \"demo.echo\",", ""),
                at("name is required."),
            ),
            (with("\"demo.echo\"", "7"), at("name must be a string.")),
            (
                with("\"scopes\"", "\"version\": 2, \"scopes\""),
                at("version must be a string."),
            ),
            (
                with("\"type\": \"cli-tool\",", ""),
                at("source.type is required."),
            ),
            (
                with(
                    "\"type\": \"cli-tool\",\n    \"command\": \"node\",\n    \"args\": [\"./run.mjs\"]",
                    "\"type\": \"agent-task\", \"agent\": \"a\", \"task\": \"t\"",
                ),
                at(
                    "source.type must be one of cli-tool, javascript, mcp, or a2a for tool \
                    manifests.",
                ),
            ),
            (
                with("[\"demo.read\"]", "[\"demo.read\", \" \"]"),
                at("scopes must contain only non-empty scope strings"),
            ),
            (
                with("[\"demo.read\"]", "\"demo.read\""),
                at("scopes must be an array of strings."),
            ),
            (
                with("\"scopes\"", "\"retry\": {\"max_attempts\": 0}, \"scopes\""),
                at("retry.max_attempts must be a positive integer."),
            ),
            (
                with("\"scopes\"", "\"idempotency\": \" \", \"scopes\""),
                at("idempotency must not be empty."),
            ),
            (
                with("\"scopes\"", "\"mutating\": \"yes\", \"scopes\""),
                at("mutating must be a boolean."),
            ),
            (
                with("\"scopes\"", "\"inputs\": [], \"scopes\"").replacen(
                    "\"inputs\": {\"text\": {\"type\": \"string\"}},",
                    "",
                    1,
                ),
                at("inputs must be an object."),
            ),
            (
                with("{\"type\": \"string\"}", "{\"type\": \"text\"}"),
                at(
                    "inputs.text.type must be one of array, boolean, integer, json, number, \
                    object, or string",
                ),
            ),
            (
                with(
                    "\"type\": \"cli-tool\",\n    \"command\": \"node\",\n    \"args\": [\"./run.mjs\"]",
                    "\"type\": \"javascript\", \"module\": \"./tool.mjs\"",
                ),
                at(
                    "source.module must be a portable relative .mjs or .js path without '.', \
                    '..', or backslash segments.",
                ),
            ),
            (
                with("\"cli-tool\"", "\"cLi-tool\""),
                at("source.type cLi-tool is not a supported source type."),
            ),
            (
                with("\"command\": \"node\",", ""),
                at("source.command is required."),
            ),
            (
                with("[\"./run.mjs\"]", "\"./run.mjs\""),
                at("source.args must be an array of strings."),
            ),
            (
                with(
                    "{\"type\": \"string\"}",
                    "{\"type\": \"string\", \"required\": \"yes\"}",
                ),
                at("inputs.text.required must be a boolean."),
            ),
        ];
        for (manifest, expected) in cases {
            assert_eq!(first_line(&manifest, &[]), expected, "{manifest}");
        }
    }

    #[test]
    fn a_tool_is_named_by_its_path_below_tools() {
        assert_eq!(
            first_line(&with("\"demo.echo\"", "\"demo.other\""), &[]),
            "tools/demo/echo/manifest.json.name: bundled tool name \"demo.other\" must match its \
             catalog path \"demo.echo\""
        );
        assert_eq!(
            first_line(&with("\"demo.echo\"", "\"echo\""), &[]),
            "tools/demo/echo/manifest.json.name: bundled tool name \"echo\" is invalid: tool ref \
             must include a namespace, for example fs.read"
        );
        let files = package(&[
            (
                "tools/echo/manifest.json",
                &with("\"demo.echo\"", "\"x.echo\""),
            ),
            ("tools/echo/run.mjs", ""),
        ]);
        assert_eq!(
            load_package(&files).unwrap_err().to_string().lines().next(),
            Some(
                "tools/echo/manifest.json: bundled tool paths must be tools/<namespace>/<tool>/manifest.json"
            )
        );
    }

    #[test]
    fn a_tool_runs_only_files_of_the_package_named_by_normalized_paths() {
        assert_eq!(
            first_line(&with("./run.mjs", "./gone.mjs"), &[]),
            "source.args[0]: declared tool source file \"tools/demo/echo/gone.mjs\" is missing \
             from the package"
        );
        assert_eq!(
            first_line(&with("./run.mjs", "/usr/bin/run.mjs"), &[]),
            "source.args[0]: tool source path \"/usr/bin/run.mjs\" must be a normalized relative \
             POSIX path"
        );
        assert_eq!(
            first_line(&with("./run.mjs", "../../../../run.mjs"), &[]),
            "source.args[0]: tool source path \"../../../../run.mjs\" escapes the skill package"
        );
        // A word that names no file is not one: `node`, a flag.
        let flags = with("[\"./run.mjs\"]", "[\"./run.mjs\", \"--quiet\"]");
        load_package(&package(&[(MANIFEST_PATH, &flags)])).unwrap();
    }

    #[test]
    fn a_tool_module_imports_node_builtins_and_package_files_only() {
        let run = |text: &'static str| ("tools/demo/echo/run.mjs", text);
        assert_eq!(
            first_line(
                MANIFEST,
                &[run("import fs from 'node:fs';\nimport _ from 'lodash';\n")]
            ),
            "tools/demo/echo/run.mjs: process-backed tool import \"lodash\" must be a node: \
             builtin or a relative package file"
        );
        assert_eq!(
            first_line(MANIFEST, &[run("const x = require('./gone.cjs');\n")]),
            "tools/demo/echo/run.mjs: process-backed tool import \"./gone.cjs\" resolves to \
             missing file tools/demo/echo/gone.cjs"
        );
        assert_eq!(
            first_line(MANIFEST, &[run("const x = require(name);\n")]),
            "tools/demo/echo/run.mjs: process-backed JavaScript may use only static \
             require(\"specifier\") dependencies"
        );
        // A process may use what a deterministic module may not.
        let effects = run(
            "import { x } from './lib.mjs';\nconsole.log(process.env.HOME, \
                           await fetch('http://127.0.0.1'));\n",
        );
        let lib = (
            "tools/demo/echo/lib.mjs",
            "export const x = require('node:path');\n",
        );
        load_package(&package(&[(MANIFEST_PATH, MANIFEST), effects, lib])).unwrap();
        // node runs no TypeScript.
        let ts = with("./run.mjs", "./run.ts");
        assert_eq!(
            first_line(&ts, &[("tools/demo/echo/run.ts", "")]),
            "tools/demo/echo/run.ts: node tool source imports uncompiled TypeScript; declare an \
             executable JavaScript entrypoint"
        );
    }

    #[test]
    fn a_manifest_outside_tools_is_no_tool_and_a_nested_package_s_is_checked_with_it() {
        let data = package(&[
            (MANIFEST_PATH, MANIFEST),
            ("data/manifest.json", "not json"),
        ]);
        load_package(&data).unwrap();
        // Runx loads a nested package whole, and names its files from the outer package.
        let nested = package(&[
            (MANIFEST_PATH, MANIFEST),
            ("sub/SKILL.md", MANUAL),
            ("sub/tools/demo/echo/manifest.json", "not json"),
        ]);
        assert_eq!(
            load_package(&nested)
                .unwrap_err()
                .to_string()
                .lines()
                .next(),
            Some(
                "sub/tools/demo/echo/manifest.json: tool_manifest: JSON parse failed: Tool \
                 manifest JSON is invalid: expected ident at line 1 column 2"
            )
        );
    }

    #[test]
    fn a_refusal_points_at_the_manifest_line_on_its_second_line() {
        let err = load_package(&package(&[(MANIFEST_PATH, &with("\"demo.read\"", "\"\""))]))
            .unwrap_err()
            .to_string();
        let second = err.lines().nth(1).unwrap_or_default();
        assert!(
            second.starts_with("  at tools/demo/echo/manifest.json:10: scopes: "),
            "{err}"
        );
    }
}
