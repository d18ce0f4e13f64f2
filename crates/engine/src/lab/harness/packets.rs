//! Packet schemas, found and enforced as Runx's runtime does (`packet_schemas.rs`,
//! `packet_validation.rs`).
//!
//! A step (or a single-source runner) that declares `artifacts.packets` (output → packet id) or
//! `artifacts.wrap_as` with `artifacts.packet` has each such output checked, once it succeeded,
//! against the JSON Schema whose `x-runx-packet-id` is that id. Runx looks the schemas up in
//! `*.json` files of a fixed list of folders: the package's `packets/`, and `packets/` and
//! `dist/packets/` of the package's source workspace (the nearest folder at or above the package
//! holding `pnpm-workspace.yaml` or `.runx/project.json`, else the package itself). Runx also
//! searches its isolated harness workspace, which holds no schemas of its own; the Lab's case
//! scratch is the same, so it is not listed. A schema that cannot be found, a schema that does
//! not compile, or an output the schema refuses fails the step, in Runx's words:
//! `skill 'agent' failed: packet output 'O' for 'P': declared packet schema was not found;
//! searched …`. The catalog is read only when a package declares a packet, and its errors
//! (invalid JSON, an empty `x-runx-packet-id`, two different documents for one id) surface
//! only when a packet is checked, as in Runx.
//!
//! The `jsonschema` crate (already the engine's, for agent answers and input schemas) checks
//! outputs with draft 2020-12, the draft Runx's validator uses and the schemas declare.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::assertions::{data_envelope, unwrap_envelope};

/// Runx's field naming a JSON document's packet id; a document without it is not a packet
/// schema.
pub(crate) const PACKET_ID_FIELD: &str = "x-runx-packet-id";

/// One packet schema found on disk.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    path: PathBuf,
    source: String,
    schema: Value,
}

/// The packet schemas a package's harness can use, and where they were looked for.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketCatalog {
    searched: Vec<PathBuf>,
    /// The schemas by id, or why the folders could not be read as a catalog.
    entries: Result<BTreeMap<String, Entry>, String>,
    /// Where packet-valued inputs find their schemas, when that is another list of folders
    /// (Runx admits inputs from [`input_schema_directories`]; outputs from this one's).
    inputs: Option<Box<PacketCatalog>>,
}

impl Default for PacketCatalog {
    fn default() -> Self {
        Self::empty()
    }
}

impl PacketCatalog {
    /// No folder searched and no schema: every declared packet is "not found".
    pub fn empty() -> Self {
        Self {
            searched: Vec::new(),
            entries: Ok(BTreeMap::new()),
            inputs: None,
        }
    }

    /// The catalog Runx would use for the package in `package_dir`, which is made absolute
    /// first (as Runx canonicalizes a package's folder): the search walks up from it, and the
    /// folders searched are named in full.
    /// A packet-valued input's schema is looked up as when the package loaded
    /// ([`input_schema_directories`]), so a case runs with the schema its package was admitted
    /// with.
    pub fn for_package(package_dir: &Path) -> Self {
        let absolute =
            std::fs::canonicalize(package_dir).or_else(|_| std::path::absolute(package_dir));
        let package_dir = absolute.as_deref().unwrap_or(package_dir);
        let mut catalog = Self::discover(schema_directories(package_dir));
        let input_directories = input_schema_directories(package_dir);
        if input_directories != catalog.searched {
            catalog.inputs = Some(Box::new(Self::discover(input_directories)));
        }
        catalog
    }

    /// Reads every `*.json` directly in each folder (in name order; a missing folder is
    /// empty), keeping the documents that carry a packet id.
    pub fn discover(directories: Vec<PathBuf>) -> Self {
        let mut entries = BTreeMap::new();
        let mut failure = None;
        for directory in &directories {
            if let Err(err) = read_directory(directory, &mut entries) {
                failure = Some(err);
                break;
            }
        }
        Self {
            searched: directories,
            entries: failure.map_or(Ok(entries), Err),
            inputs: None,
        }
    }

    /// The SHA-256 (`sha256:<hex>`) of the file holding the schema whose packet id is `id`,
    /// as Runx binds an input's packet schema in an execution closure.
    pub fn schema_digest(&self, id: &str) -> Option<String> {
        let entry = self.entries.as_ref().ok()?.get(id)?;
        Some(mindrune_core::sha256(entry.source.as_bytes()))
    }

    /// The schema of the packet-valued input whose packet id is `id`, if found: from the
    /// folders Runx admits inputs from, which may be more than those of output packets.
    pub fn input_schema(&self, id: &str) -> Result<Option<&Value>, String> {
        match &self.inputs {
            Some(inputs) => inputs.schema(id),
            None => self.schema(id),
        }
    }

    /// The schema whose packet id is `id`, if found; `Err` when the folders could not be read
    /// as a catalog.
    pub fn schema(&self, id: &str) -> Result<Option<&Value>, String> {
        let entries = self.entries.as_ref().map_err(String::clone)?;
        Ok(entries.get(id).map(|entry| &entry.schema))
    }

    /// The folders searched, comma-separated, as Runx lists them.
    fn searched(&self) -> String {
        self.searched
            .iter()
            .map(|path| path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Checks a succeeded step's packet outputs (`artifacts` of the step or runner) in its
    /// claim. `Err` is Runx's reason, `skill 'agent' failed: …`.
    pub fn verify(&self, artifacts: Option<&Value>, claim: &Value) -> Result<(), String> {
        let failed = |message: String| format!("skill 'agent' failed: {message}");
        let bindings = bindings(artifacts);
        if bindings.is_empty() {
            return Ok(());
        }
        let entries = self
            .entries
            .as_ref()
            .map_err(|err| failed(format!("packet schema catalog failed: {err}")))?;
        for (output, packet) in bindings {
            let value = projected(artifacts, claim, &output).map_err(failed)?;
            let fail = |detail: String| {
                failed(format!("packet output '{output}' for '{packet}': {detail}"))
            };
            let Some(entry) = entries.get(&packet) else {
                return Err(fail(format!(
                    "declared packet schema was not found; searched {}",
                    self.searched()
                )));
            };
            let validator = jsonschema::draft202012::new(&entry.schema)
                .map_err(|err| fail(format!("packet schema is invalid: {err}")))?;
            validator
                .validate(&value)
                .map_err(|err| fail(format!("output violates schema: {err}")))?;
        }
        Ok(())
    }
}

/// Runx's search list for a package that is its own profile folder (the Lab's packages):
/// `<package>/packets`, then `packets` and `dist/packets` of the source workspace, each once.
pub(crate) fn schema_directories(package_dir: &Path) -> Vec<PathBuf> {
    let workspace = source_workspace(package_dir);
    let mut directories: Vec<PathBuf> = Vec::new();
    for directory in [
        package_dir.join("packets"),
        workspace.join("packets"),
        workspace.join("dist").join("packets"),
    ] {
        if !directories.contains(&directory) {
            directories.push(directory);
        }
    }
    directories
}

/// The folders Runx reads packet schemas from when it admits a package's inputs: the
/// harness's list (the package's `packets`, the source workspace's `packets` and
/// `dist/packets`) and, the package being its own workspace there, `<package>/dist/packets`,
/// which Runx searches whether or not a workspace marker lies above the package.
pub(super) fn input_schema_directories(package_dir: &Path) -> Vec<PathBuf> {
    let mut directories = schema_directories(package_dir);
    let own = package_dir.join("dist").join("packets");
    if !directories.contains(&own) {
        directories.push(own);
    }
    directories
}

/// The nearest folder at or above `start` holding `pnpm-workspace.yaml` or
/// `.runx/project.json`; `start` itself when there is none (Runx's `resolve_runx_workspace_base`
/// with no `RUNX_CWD`).
fn source_workspace(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| {
            dir.join("pnpm-workspace.yaml").exists() || dir.join(".runx/project.json").exists()
        })
        .unwrap_or(start)
        .to_path_buf()
}

fn read_directory(directory: &Path, entries: &mut BTreeMap<String, Entry>) -> Result<(), String> {
    let listing = match std::fs::read_dir(directory) {
        Ok(listing) => listing,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(format!("reading {}: {err}", directory.display())),
    };
    let mut paths = Vec::new();
    for item in listing {
        let item = item.map_err(|err| format!("reading {}: {err}", directory.display()))?;
        let path = item.path();
        if path.is_file() && path.extension().and_then(|ext| ext.to_str()) == Some("json") {
            paths.push(path);
        }
    }
    paths.sort();
    for path in paths {
        let source = std::fs::read_to_string(&path)
            .map_err(|err| format!("reading {}: {err}", path.display()))?;
        let Some((id, schema)) = packet_schema(&path, &source)? else {
            continue;
        };
        if let Some(existing) = entries.get(&id) {
            if existing.source != source {
                return Err(format!(
                    "packet schema id '{id}' resolves to conflicting documents at {} and {}",
                    existing.path.display(),
                    path.display()
                ));
            }
            continue;
        }
        entries.insert(
            id,
            Entry {
                path,
                source,
                schema,
            },
        );
    }
    Ok(())
}

/// A document's packet id and the document: `None` without the field; an error for JSON that
/// does not parse or an id that is not a non-empty string (Runx's
/// `parse_packet_schema_document`).
fn packet_schema(path: &Path, source: &str) -> Result<Option<(String, Value)>, String> {
    let value: Value = serde_json::from_str(source)
        .map_err(|err| format!("{}: packet schema is not valid JSON: {err}", path.display()))?;
    let Some(raw) = value.get(PACKET_ID_FIELD) else {
        return Ok(None);
    };
    let id = raw
        .as_str()
        .filter(|id| !id.trim().is_empty())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "{}: {PACKET_ID_FIELD} must be a non-empty string",
                path.display()
            )
        })?;
    Ok(Some((id, value)))
}

/// `(output, packet id)` for each `packets` entry, then the `wrap_as`/`packet` pair.
fn bindings(artifacts: Option<&Value>) -> Vec<(String, String)> {
    let Some(artifacts) = artifacts else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = artifacts
        .get("packets")
        .and_then(Value::as_object)
        .map(|packets| {
            packets
                .iter()
                .filter_map(|(output, id)| Some((output.clone(), id.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    if let (Some(wrap_as), Some(packet)) = (
        artifacts.get("wrap_as").and_then(Value::as_str),
        artifacts.get("packet").and_then(Value::as_str),
    ) {
        out.push((wrap_as.to_owned(), packet.to_owned()));
    }
    out
}

/// The value a packet output carries, as Runx projects it: `wrap_as` is the claim's field of
/// that name or else the whole claim, a `named_emits` output is the claim's field; either is
/// the payload of its `{data: …}` envelope.
fn projected(artifacts: Option<&Value>, claim: &Value, output: &str) -> Result<Value, String> {
    let wrap_as = artifacts
        .and_then(|artifacts| artifacts.get("wrap_as"))
        .and_then(Value::as_str);
    let named = artifacts
        .and_then(|artifacts| artifacts.pointer("/named_emits"))
        .and_then(Value::as_object)
        .is_some_and(|named| named.contains_key(output));
    let field = claim.get(output).cloned();
    let value = if wrap_as == Some(output) {
        field.unwrap_or_else(|| claim.clone())
    } else if named {
        field.ok_or_else(|| format!("named packet output '{output}' was not returned"))?
    } else {
        return Err(format!("named packet output '{output}' was not returned"));
    };
    let envelope = data_envelope(value);
    unwrap_envelope(&envelope)
        .cloned()
        .ok_or_else(|| format!("packet output '{output}' was not projected as a data envelope"))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::json;

    use super::*;

    const PLAN: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "x-runx-packet-id": "runx.test.plan.v1",
  "type": "object",
  "required": ["decision"],
  "properties": {"decision": {"type": "string"}},
  "additionalProperties": false
}
"#;

    fn wrapped() -> Value {
        json!({"wrap_as": "plan_packet", "packet": "runx.test.plan.v1"})
    }

    /// A workspace with `pnpm-workspace.yaml` and the package at `skills/demo`.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("pnpm-workspace.yaml"), "packages: []\n").unwrap();
        let package = dir.path().join("skills/demo");
        fs::create_dir_all(&package).unwrap();
        (dir, package)
    }

    #[test]
    fn a_missing_schema_fails_in_runx_words_naming_the_folders_searched() {
        let (dir, package) = workspace();
        let catalog = PacketCatalog::for_package(&package);
        let err = catalog
            .verify(Some(&wrapped()), &json!({"decision": "ready"}))
            .unwrap_err();
        let root = fs::canonicalize(dir.path()).unwrap();
        let root = root.display();
        assert_eq!(
            err,
            format!(
                "skill 'agent' failed: packet output 'plan_packet' for 'runx.test.plan.v1': \
                 declared packet schema was not found; searched {root}/skills/demo/packets, \
                 {root}/packets, {root}/dist/packets"
            )
        );
    }

    #[test]
    fn an_input_packet_schema_under_the_package_dist_packets_is_found_below_a_workspace_marker() {
        let (_dir, package) = workspace();
        fs::create_dir_all(package.join("dist/packets")).unwrap();
        fs::write(package.join("dist/packets/plan.json"), PLAN).unwrap();
        let catalog = PacketCatalog::for_package(&package);
        // Inputs are admitted from the package's own dist/packets, as at load time...
        assert_eq!(
            catalog
                .input_schema("runx.test.plan.v1")
                .unwrap()
                .map(|schema| schema["x-runx-packet-id"].clone()),
            Some(json!("runx.test.plan.v1"))
        );
        // ...while an output packet is looked for in the harness's folders only.
        assert_eq!(catalog.schema("runx.test.plan.v1"), Ok(None));
    }

    #[test]
    fn without_a_workspace_marker_the_package_is_its_own_source_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("demo");
        assert_eq!(
            schema_directories(&package),
            [package.join("packets"), package.join("dist/packets")]
        );
    }

    #[test]
    fn a_schema_under_dist_packets_is_found_and_checks_the_output() {
        let (dir, package) = workspace();
        fs::create_dir_all(dir.path().join("dist/packets")).unwrap();
        fs::write(dir.path().join("dist/packets/plan.schema.json"), PLAN).unwrap();
        // A JSON document without a packet id is not a packet schema and is ignored.
        fs::write(
            dir.path().join("dist/packets/other.json"),
            "{\"type\": \"string\"}",
        )
        .unwrap();
        let catalog = PacketCatalog::for_package(&package);
        // wrap_as: the claim's own field, else the whole claim.
        catalog
            .verify(Some(&wrapped()), &json!({"decision": "ready"}))
            .unwrap();
        catalog
            .verify(
                Some(&wrapped()),
                &json!({"plan_packet": {"decision": "ready"}}),
            )
            .unwrap();
        let err = catalog
            .verify(Some(&wrapped()), &json!({"decision": true}))
            .unwrap_err();
        assert!(
            err.starts_with(
                "skill 'agent' failed: packet output 'plan_packet' for 'runx.test.plan.v1': \
                 output violates schema: "
            ),
            "{err}"
        );
    }

    #[test]
    fn named_packets_are_checked_from_the_package_packets_folder() {
        let (_dir, package) = workspace();
        fs::create_dir_all(package.join("packets")).unwrap();
        fs::write(package.join("packets/plan.json"), PLAN).unwrap();
        let catalog = PacketCatalog::for_package(&package);
        let artifacts = json!({"named_emits": {"plan": "plan"},
                               "packets": {"plan": "runx.test.plan.v1"}});
        catalog
            .verify(
                Some(&artifacts),
                &json!({"plan": {"decision": "go"}, "extra": 1}),
            )
            .unwrap();
        let err = catalog
            .verify(
                Some(&artifacts),
                &json!({"plan": {"decision": "go", "x": 1}}),
            )
            .unwrap_err();
        assert!(err.contains("output violates schema"), "{err}");
        let err = catalog
            .verify(Some(&artifacts), &json!({"other": 1}))
            .unwrap_err();
        assert_eq!(
            err,
            "skill 'agent' failed: named packet output 'plan' was not returned"
        );
        // No packet declared: nothing to check, whatever the catalog holds.
        PacketCatalog::empty()
            .verify(Some(&json!({"named_emits": {"plan": "plan"}})), &json!({}))
            .unwrap();
    }

    #[test]
    fn catalog_faults_surface_only_when_a_packet_is_checked() {
        let (dir, package) = workspace();
        let packets = dir.path().join("dist/packets");
        fs::create_dir_all(&packets).unwrap();
        fs::write(packets.join("a.json"), PLAN).unwrap();
        fs::write(
            packets.join("b.json"),
            PLAN.replace("\"type\": \"object\"", "\"type\": \"array\""),
        )
        .unwrap();
        let catalog = PacketCatalog::for_package(&package);
        PacketCatalog::verify(&catalog, None, &json!({})).unwrap();
        let err = catalog
            .verify(Some(&wrapped()), &json!({"decision": "ready"}))
            .unwrap_err();
        assert!(
            err.starts_with(
                "skill 'agent' failed: packet schema catalog failed: packet schema id \
                 'runx.test.plan.v1' resolves to conflicting documents at "
            ),
            "{err}"
        );
        // The same document twice is one schema.
        fs::write(packets.join("b.json"), PLAN).unwrap();
        PacketCatalog::for_package(&package)
            .verify(Some(&wrapped()), &json!({"decision": "ready"}))
            .unwrap();
        for (bad, why) in [
            ("{", "packet schema is not valid JSON"),
            (
                "{\"x-runx-packet-id\": \" \"}",
                "x-runx-packet-id must be a non-empty string",
            ),
        ] {
            fs::write(packets.join("b.json"), bad).unwrap();
            let err = PacketCatalog::for_package(&package)
                .verify(Some(&wrapped()), &json!({"decision": "ready"}))
                .unwrap_err();
            assert!(err.contains(why), "{err}");
        }
    }

    #[test]
    fn a_schema_that_does_not_compile_is_invalid() {
        let (_dir, package) = workspace();
        fs::create_dir_all(package.join("packets")).unwrap();
        fs::write(
            package.join("packets/plan.json"),
            r#"{"x-runx-packet-id": "runx.test.plan.v1", "type": 7}"#,
        )
        .unwrap();
        let err = PacketCatalog::for_package(&package)
            .verify(Some(&wrapped()), &json!({"decision": "ready"}))
            .unwrap_err();
        assert!(err.contains("packet schema is invalid: "), "{err}");
    }
}
