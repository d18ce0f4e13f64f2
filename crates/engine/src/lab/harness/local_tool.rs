//! Local tool manifests (`runx.tool.manifest.v1`) a graph step names, run as Runx runs them.
//!
//! Runx's graph step dispatches a tool that is not native to the local manifest it resolves
//! (`tool_catalogs/dispatch/local.rs`, `invoke`): it checks the manifest's `scopes` against the
//! step's (`missing required scope declaration(s): …`), then builds the tool's inputs from its
//! declared `inputs` only (`input_contract.rs`, `materialize_tool_inputs`: defaults, `required`,
//! the declared type, an `artifact` input unwrapped from its `{data}` envelope; undeclared
//! step inputs are dropped), and runs the manifest's `source` with the manifest's folder as its
//! skill folder: a `cli-tool` runs there (its `cwd` read from there) with the inputs in its
//! environment; a `javascript` module loads from the package that owns that folder, which
//! Runx accepts only where the folder is the package's root or holds an `X.yaml`. Any other
//! source is refused. The output is the source's, to which Runx adds the manifest's
//! `artifacts` (`dispatch/artifacts.rs`): `wrap_as` wraps the whole output (or its field of
//! that name) as `{data}`, each `named_emits` key wraps its field.
//!
//! The Lab replays a scratch copy of the package alone, so a manifest outside the package (the
//! workspace's `tools`, or a folder Runx leaves out of every package) is refused, where Runx
//! runs it (see docs/lab.md, differences).

use std::path::{Component, Path, PathBuf};

use mindrune_core::SNAPSHOT_IGNORED as IGNORED;
use serde_json::{Map, Value};

use super::assertions::data_envelope;
use super::{HarnessOptions, result_contract};

/// What a replay's refusal of a tool manifest outside the package says.
pub(crate) const TOOL_OUTSIDE_PACKAGE: &str = "whose manifest lies outside the package";

/// The second line of a harness failure holding that refusal: where MindRune is stricter than
/// Runx (added where the failure is told, as for a cli-tool's file outside the package).
pub(crate) const TOOL_OUTSIDE_STRICTER: &str = "  Runx runs a local tool from its manifest beside \
     the package and accepts it, MindRune is stricter: a replay holds the package alone, so a \
     package must carry the tools it runs (move it into the package's tools/)";

/// A local tool ready to run through the harness's sources.
pub(super) struct Prepared {
    /// `cli-tool` or `javascript`.
    pub kind: String,
    /// The manifest's source, its folder made relative to the package: a cli-tool's `cwd`,
    /// a javascript source's `module`.
    pub source: Value,
    /// The inputs Runx gives the tool.
    pub inputs: Map<String, Value>,
    /// The manifest's `artifacts`, which wrap the output.
    pub artifacts: Option<Value>,
}

/// The local manifest `tool` resolves to for the replayed package, prepared to run; `None`
/// where it is not a local tool (or no package folder is known); `Some(Err)` with Runx's
/// refusal (or the Lab's, for a manifest outside the package).
pub(super) fn prepare(
    tool: &str,
    step: &Value,
    inputs: &Map<String, Value>,
    options: &HarnessOptions,
) -> Option<Result<Prepared, String>> {
    let dir = options.package_dir.as_deref()?;
    let (path, manifest) =
        match result_contract::resolve_tool(tool, dir, options.workspace_root.as_deref()) {
            Ok(Some(result_contract::Tool::Local(path, manifest))) => (path, manifest),
            Ok(_) => return None,
            Err(message) => return Some(Err(message)),
        };
    Some(prepare_found(tool, &path, &manifest, dir, step, inputs))
}

fn prepare_found(
    tool: &str,
    path: &Path,
    manifest: &Value,
    package: &Path,
    step: &Value,
    inputs: &Map<String, Value>,
) -> Result<Prepared, String> {
    let canonical = |path: &Path| std::fs::canonicalize(path).unwrap_or_else(|_| path.into());
    // Inside the package folder is not enough: a folder Runx leaves out of every package
    // (`.runx`, `node_modules`, …) is in no snapshot and no scratch copy.
    let folder = canonical(path)
        .parent()
        .and_then(|folder| folder.strip_prefix(canonical(package)).ok())
        .map(Path::to_path_buf)
        .filter(|folder| {
            !folder.components().any(|part| {
                part.as_os_str()
                    .to_str()
                    .is_some_and(|name| IGNORED.contains(&name))
            })
        })
        .ok_or_else(|| {
            format!(
                "tool {tool:?} is a local tool ({}) {TOOL_OUTSIDE_PACKAGE}",
                path.display()
            )
        })?;
    let name = manifest.get("name").and_then(Value::as_str).unwrap_or(tool);
    let required = strings(manifest.get("scopes"));
    let granted = strings(step.get("scopes"));
    let mut missing: Vec<&str> = required
        .into_iter()
        .filter(|scope| !granted.contains(scope))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if !missing.is_empty() {
        return Err(format!(
            "skill '{name}' failed: missing required scope declaration(s): {}",
            missing.join(", ")
        ));
    }
    let inputs = tool_inputs(manifest.get("inputs"), inputs)?;
    let mut source = manifest.get("source").cloned().unwrap_or(Value::Null);
    let kind = source
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    match kind.as_str() {
        "cli-tool" => {
            let cwd = source.get("cwd").and_then(Value::as_str).unwrap_or("");
            let cwd = relative(&folder.join(cwd));
            if let Some(source) = source.as_object_mut() {
                source.insert("cwd".to_owned(), Value::String(cwd));
            }
        }
        "javascript" => {
            // Runx loads the module from the package owning the tool's folder, which must be
            // that package's root or hold a profile (`load_validated_skill_package`).
            let profile = folder.as_os_str().is_empty() || path.with_file_name("X.yaml").is_file();
            if !profile {
                return Err(format!(
                    "skill package validation failed: {}: skill package directory must contain \
                     SKILL.md or an owned X.yaml profile",
                    path.parent().unwrap_or(path).display()
                ));
            }
            let module = source.get("module").and_then(Value::as_str).unwrap_or("");
            let module = relative(&folder.join(module.trim_start_matches("./")));
            if let Some(source) = source.as_object_mut() {
                source.insert("module".to_owned(), Value::String(module));
            }
        }
        other => {
            return Err(format!(
                "Resolved tool '{name}' uses unsupported adapter '{other}' for declared tool \
                 execution."
            ));
        }
    }
    Ok(Prepared {
        kind,
        source,
        inputs,
        artifacts: manifest.get("artifacts").cloned(),
    })
}

fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A relative path with `.` and `..` folded lexically (a `..` that climbs above the start is
/// kept, for the cli-tool's own check to refuse).
fn relative(path: &Path) -> String {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(parts.last(), Some(Component::Normal(_))) => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().display().to_string()
}

/// Runx's `materialize_tool_inputs`: each declared input, from the step's inputs else its
/// default; a required one absent or null is refused, one of the wrong type is refused, and
/// undeclared inputs are not given to the tool.
fn tool_inputs(
    declared: Option<&Value>,
    supplied: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    declared_inputs("tool", declared, supplied)
}

/// Runx's `materialize_declared_inputs` for `owner` (`tool`, or `runner` for a nested
/// runner's, `materialize_nested_runner_inputs`): undeclared inputs are dropped.
pub(super) fn declared_inputs(
    owner: &str,
    declared: Option<&Value>,
    supplied: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut inputs = Map::new();
    let Some(declared) = declared.and_then(Value::as_object) else {
        return Ok(inputs);
    };
    for (name, spec) in declared {
        let required = spec.get("required").and_then(Value::as_bool) == Some(true);
        let refuse =
            |message: String| format!("{owner} input contract failed at '/{name}': {message}");
        let value = supplied
            .get(name)
            .or_else(|| spec.get("default"))
            .filter(|value| !value.is_null());
        let value = match value {
            Some(value) if spec.get("artifact").and_then(Value::as_bool) == Some(true) => {
                unwrap_artifact(value, name).map_err(refuse)?
            }
            Some(value) => value.clone(),
            None => Value::Null,
        };
        if value.is_null() {
            if required {
                return Err(refuse(format!("{owner} input '{name}' is required")));
            }
            continue;
        }
        let kind = spec.get("type").and_then(Value::as_str).unwrap_or("string");
        let fits = match kind {
            "json" => true,
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            "object" => value.is_object(),
            "array" => value.is_array(),
            _ => false,
        };
        if !fits {
            return Err(refuse(format!(
                "{owner} input '{name}' must be {kind}, received {}",
                json_type(&value)
            )));
        }
        if let Some(schema) = spec.get("schema").filter(|schema| schema.is_object()) {
            let validator = jsonschema::validator_for(schema)
                .map_err(|err| refuse(format!("declared input schema is invalid: {err}")))?;
            if let Some(error) = validator.iter_errors(&value).next() {
                let at = error.instance_path().to_string();
                return Err(format!(
                    "{owner} input contract failed at '/{name}{at}': value does not satisfy the \
                     declared schema at '{}'",
                    error.schema_path()
                ));
            }
        }
        inputs.insert(name.clone(), value);
    }
    Ok(inputs)
}

/// Runx's `unwrap_artifact`: the `data` of an envelope (or of its `artifact` or `output`).
fn unwrap_artifact(value: &Value, name: &str) -> Result<Value, String> {
    let Some(object) = value.as_object() else {
        return Ok(value.clone());
    };
    if let Some(data) = object.get("data") {
        return Ok(data.clone());
    }
    for envelope in ["artifact", "output"] {
        if let Some(data) = object.get(envelope).and_then(|nested| nested.get("data")) {
            return Ok(data.clone());
        }
    }
    if object.contains_key("schema") || object.contains_key("meta") {
        return Err(format!(
            "tool input '{name}' is an artifact envelope without data"
        ));
    }
    Ok(value.clone())
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Runx's `artifacts::apply`: an object output gains `wrap_as` (its field of that name, else
/// the whole output, as `{data}`) and each `named_emits` field present, as `{data}`.
pub(super) fn wrap(output: Value, artifacts: Option<&Value>) -> Value {
    let (Value::Object(mut object), Some(artifacts)) = (output.clone(), artifacts) else {
        return output;
    };
    let mut projected = Map::new();
    if let Some(wrap_as) = artifacts.get("wrap_as").and_then(Value::as_str) {
        let value = object
            .get(wrap_as)
            .cloned()
            .unwrap_or_else(|| output.clone());
        projected.insert(wrap_as.to_owned(), data_envelope(value));
    }
    if let Some(named) = artifacts.get("named_emits").and_then(Value::as_object) {
        for name in named.keys() {
            if let Some(value) = object.get(name) {
                projected.insert(name.clone(), data_envelope(value.clone()));
            }
        }
    }
    object.extend(projected);
    Value::Object(object)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_tool_receives_only_its_declared_inputs_with_defaults_and_unwrapped_artifacts() {
        let declared = json!({
            "name": {"type": "string", "required": true},
            "n": {"type": "integer", "default": 2},
            "doc": {"type": "json", "artifact": true}
        });
        let supplied = map(json!({"name": "x", "extra": 1, "doc": {"data": {"a": 1}}}));
        assert_eq!(
            tool_inputs(Some(&declared), &supplied),
            Ok(map(json!({"name": "x", "n": 2, "doc": {"a": 1}})))
        );
        assert_eq!(tool_inputs(None, &supplied), Ok(Map::new()));
    }

    #[test]
    fn a_missing_or_mistyped_tool_input_is_refused_in_runx_words() {
        let declared = json!({"name": {"type": "string", "required": true}});
        assert_eq!(
            tool_inputs(Some(&declared), &map(json!({"name": null}))),
            Err("tool input contract failed at '/name': tool input 'name' is required".to_owned())
        );
        assert_eq!(
            tool_inputs(Some(&declared), &map(json!({"name": 3}))),
            Err(
                "tool input contract failed at '/name': tool input 'name' must be string, \
                 received integer"
                    .to_owned()
            )
        );
    }

    #[test]
    fn artifacts_wrap_an_object_output_as_runx_applies_them() {
        let wrapped = wrap(json!({"a": 1}), Some(&json!({"wrap_as": "bar_packet"})));
        assert_eq!(wrapped, json!({"a": 1, "bar_packet": {"data": {"a": 1}}}));
        let named = wrap(
            json!({"a": 1, "b": 2}),
            Some(&json!({"named_emits": {"a": "x", "c": "y"}})),
        );
        assert_eq!(named, json!({"a": {"data": 1}, "b": 2}));
        assert_eq!(
            wrap(json!("text"), Some(&json!({"wrap_as": "p"}))),
            json!("text")
        );
    }

    #[test]
    fn a_relative_path_folds_dots_but_keeps_an_escape() {
        assert_eq!(relative(Path::new("tools/foo/bar/./")), "tools/foo/bar");
        assert_eq!(relative(Path::new("tools/foo/bar/../x")), "tools/foo/x");
        assert_eq!(relative(Path::new("../x")), "../x");
    }
}
