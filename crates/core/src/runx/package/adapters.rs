//! The declarations of the two adapter sources, as Runx's source parser reads them
//! (`runx-parser/src/skill/source.rs`): an `external-adapter` source's `external_adapter`
//! (exactly one of an inline `manifest` or a `manifest_path` below the skill's folder) and a
//! `thread-outbox-provider` source's `thread_outbox_provider` (an operation and its paths).
//!
//! An external adapter's manifest is read into a mirror of Runx's `ExternalAdapterManifest`
//! (`runx-contracts/src/external_adapter.rs`) through serde's derive, so a manifest Runx
//! refuses is refused here in serde's own words (`missing field `schema``, `unknown variant
//! …`): the fields, their order, their types and `deny_unknown_fields` are Runx's, and so are
//! the words of its non-empty strings. The process the adapter starts (its transport's command
//! and arguments) names the package's execution files, as a `cli-tool`'s does.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::Deserialize;
use serde_json::Value;

use super::PackageError;
use super::check::get;
use super::join;
use crate::runx::contracts::NonEmpty;
use crate::runx::receipt::ReferenceType;
use crate::runx::yaml::{YamlEntry, YamlNode};

/// The refusal of the source being checked: the line, the Lab's field and message, and Runx's
/// text without the file (the source's checker adds the file, or an inline step's prefix).
pub(super) type Refuse<'r> = &'r dyn Fn(usize, String, String, String) -> PackageError;

/// How an `external-adapter` source names its manifest.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ExternalAdapter {
    /// Written in X.yaml (`external_adapter.manifest`); its paths are read from the profile's
    /// folder.
    Inline(Box<ExternalAdapterManifest>),
    /// A JSON file of the package (`external_adapter.manifest_path`), relative to the profile's
    /// folder; its paths are read from the manifest's own folder.
    Path(String),
}

/// Runx's `runx.external_adapter.manifest.v1`, field for field. Every type keeps Runx's name,
/// because serde's refusals name it (`expected struct ExternalAdapterTransport`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExternalAdapterManifest {
    schema: ExternalAdapterManifestSchema,
    protocol_version: ExternalAdapterProtocolVersion,
    adapter_id: NonEmpty,
    name: NonEmpty,
    version: NonEmpty,
    supported_source_types: Vec<NonEmpty>,
    transport: ExternalAdapterTransport,
    timeouts: ExternalAdapterTimeouts,
    credential_needs: Option<Vec<ExternalAdapterCredentialNeed>>,
    metadata: Option<BTreeMap<String, Value>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
enum ExternalAdapterManifestSchema {
    #[serde(rename = "runx.external_adapter.manifest.v1")]
    V1,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
enum ExternalAdapterProtocolVersion {
    #[serde(rename = "runx.external_adapter.v1")]
    V1,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ExternalAdapterTransportKind {
    Process,
    Http,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExternalAdapterTransport {
    kind: ExternalAdapterTransportKind,
    command: Option<NonEmpty>,
    args: Option<Vec<String>>,
    endpoint: Option<NonEmpty>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExternalAdapterTimeouts {
    startup_ms: u64,
    invocation_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ExternalAdapterCredentialPurpose {
    ProviderApi,
    Registry,
    ArtifactStore,
    WebhookVerification,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExternalAdapterCredentialNeed {
    purpose: ExternalAdapterCredentialPurpose,
    provider: NonEmpty,
    scope_refs: Option<Vec<Reference>>,
    required: bool,
}

/// Runx's `runx.reference.v1` as its deserializer reads it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reference {
    #[serde(rename = "type")]
    kind: ReferenceType,
    uri: NonEmpty,
    provider: Option<NonEmpty>,
    locator: Option<NonEmpty>,
    label: Option<NonEmpty>,
    observed_at: Option<IsoDateTime>,
    proof_kind: Option<ProofKind>,
}

/// Runx's `IsoDateTime`: only its non-emptiness is checked when read.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "String")]
struct IsoDateTime(String);

impl TryFrom<String> for IsoDateTime {
    type Error = &'static str;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.is_empty() {
            // Runx's words.
            Err("datetime must be non-empty")
        } else {
            Ok(Self(value))
        }
    }
}

/// The proof kinds a reference may carry (Runx's `reference.rs` `ProofKind`, not the
/// skill-authoring one).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ProofKind {
    EffectEvidence,
    EffectFinality,
    CredentialResolution,
}

impl ExternalAdapterManifest {
    /// An inline manifest (the source's `external_adapter.manifest` as JSON), or Runx's
    /// refusal text without the file.
    pub(super) fn from_inline(value: Value) -> Result<Self, String> {
        serde_json::from_value(value)
            .map_err(|error| format!("source.external_adapter.manifest is invalid: {error}"))
    }

    /// A manifest file's bytes, or Runx's refusal text without the file.
    pub(super) fn from_file(bytes: &[u8]) -> Result<Self, String> {
        serde_json::from_slice(bytes)
            .map_err(|error| format!("external-adapter manifest is invalid: {error}"))
    }

    /// The command and arguments of the process the adapter starts, as written.
    pub(super) fn process_values(&self) -> impl Iterator<Item = &str> {
        let transport = &self.transport;
        transport
            .command
            .iter()
            .map(NonEmpty::as_str)
            .chain(transport.args.iter().flatten().map(String::as_str))
    }
}

/// Runx's `safe_external_adapter_manifest_path`: not blank, relative, and only plain
/// segments (no `.`, `..` or root). Also the rule of a thread-outbox provider's paths.
pub(super) fn safe_relative_path(value: &str) -> bool {
    !value.trim().is_empty()
        && Path::new(value)
            .components()
            .all(|component| matches!(component, Component::Normal(_)))
}

/// The fields of an `external_adapter` declaration, in Runx's order.
const EXTERNAL_ADAPTER_FIELDS: [&str; 2] = ["manifest", "manifest_path"];

/// The fields of a `thread_outbox_provider` declaration, in Runx's order.
const THREAD_OUTBOX_FIELDS: [&str; 4] = ["operation", "manifest_path", "push_path", "fetch_path"];

/// Runx's `validate_external_adapter_manifest`: the declaration an `external-adapter` source
/// must have and no other source may, with exactly one of an inline manifest (read here) or a
/// manifest path (read with the package's files, [`ExternalAdapter::Path`]).
pub(super) fn check_external_adapter(
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    source_type: &str,
    refuse: Refuse<'_>,
) -> Result<Option<ExternalAdapter>, PackageError> {
    let field = join(parent, "external_adapter");
    let Some((node, entries)) = declaration(
        entries,
        line,
        &field,
        "external_adapter",
        source_type == "external-adapter",
        refuse,
    )?
    else {
        return Ok(None);
    };
    closed(
        entries,
        &field,
        "external_adapter",
        &EXTERNAL_ADAPTER_FIELDS,
        refuse,
    )?;
    let exactly_one = || {
        refuse(
            node.line,
            field.clone(),
            "write exactly one of manifest (the manifest itself) or manifest_path (a JSON file \
             of the package)"
                .to_owned(),
            "source.external_adapter must declare exactly one of manifest or manifest_path."
                .to_owned(),
        )
    };
    match (get(entries, "manifest"), get(entries, "manifest_path")) {
        (Some(_), Some(_)) | (None, None) => Err(exactly_one()),
        (Some(manifest), None) => ExternalAdapterManifest::from_inline(manifest.value.to_json())
            .map(|manifest| Some(ExternalAdapter::Inline(Box::new(manifest))))
            .map_err(|runx| {
                refuse(
                    manifest.line,
                    join(&field, "manifest"),
                    "is not a runx.external_adapter.manifest.v1 manifest; fix the field Runx \
                     names"
                        .to_owned(),
                    runx,
                )
            }),
        (None, Some(path)) => {
            let path = relative_path(path, &field, "external_adapter", "manifest_path", refuse)?;
            Ok(Some(ExternalAdapter::Path(path)))
        }
    }
}

/// Runx's `validate_thread_outbox_provider`: the declaration a `thread-outbox-provider` source
/// must have and no other source may: a `push` or `fetch` operation, a manifest path, and the
/// path of its operation (a push may name a `push_path`, a fetch must name a `fetch_path`).
pub(super) fn check_thread_outbox_provider(
    entries: &[YamlEntry],
    line: usize,
    parent: &str,
    source_type: &str,
    refuse: Refuse<'_>,
) -> Result<(), PackageError> {
    const KEY: &str = "thread_outbox_provider";
    let field = join(parent, KEY);
    let Some((node, entries)) = declaration(
        entries,
        line,
        &field,
        KEY,
        source_type == "thread-outbox-provider",
        refuse,
    )?
    else {
        return Ok(());
    };
    closed(entries, &field, KEY, &THREAD_OUTBOX_FIELDS, refuse)?;
    let operation = match get(entries, "operation") {
        Some(entry) if !entry.value.is_null() => string(entry, &field, KEY, refuse)?,
        _ => return Err(required(node.line, &field, KEY, "operation", refuse)),
    };
    if !matches!(operation, "push" | "fetch") {
        return Err(refuse(
            get(entries, "operation").map_or(node.line, |entry| entry.line),
            join(&field, "operation"),
            format!("is {operation:?}; write push or fetch"),
            format!("source.{KEY}.operation must be push or fetch, got '{operation}'."),
        ));
    }
    match get(entries, "manifest_path") {
        Some(entry) if !entry.value.is_null() => {
            relative_path(entry, &field, KEY, "manifest_path", refuse)?;
        }
        _ => return Err(required(node.line, &field, KEY, "manifest_path", refuse)),
    }
    let present = |key: &str| -> Result<Option<usize>, PackageError> {
        match get(entries, key) {
            Some(entry) if !entry.value.is_null() => {
                relative_path(entry, &field, KEY, key, refuse)?;
                Ok(Some(entry.line))
            }
            _ => Ok(None),
        }
    };
    let push_path = present("push_path")?;
    let fetch_path = present("fetch_path")?;
    let wrong = |line: usize, key: &str, runx: &str| {
        refuse(
            line,
            join(&field, key),
            format!("does not belong to a {operation} operation; remove it"),
            format!("source.{KEY}.{key} {runx}"),
        )
    };
    match (operation, push_path, fetch_path) {
        ("push", _, Some(line)) => Err(wrong(
            line,
            "fetch_path",
            "is only valid for fetch operations.",
        )),
        ("fetch", Some(line), _) => Err(wrong(
            line,
            "push_path",
            "is only valid for push operations.",
        )),
        ("fetch", None, None) => Err(refuse(
            node.line,
            join(&field, "fetch_path"),
            "is required for a fetch operation".to_owned(),
            format!("source.{KEY}.fetch_path is required for fetch operations."),
        )),
        _ => Ok(()),
    }
}

/// The declaration `key` of a source: refused where the source type has none, required (an
/// object) where it has one.
fn declaration<'e>(
    entries: &'e [YamlEntry],
    line: usize,
    field: &str,
    key: &str,
    expected: bool,
    refuse: Refuse<'_>,
) -> Result<Option<(&'e YamlNode, &'e [YamlEntry])>, PackageError> {
    let kind = key.replace('_', "-");
    let entry = get(entries, key);
    if !expected {
        return match entry {
            Some(entry) => Err(refuse(
                entry.line,
                field.to_owned(),
                format!("is only valid for {kind} sources; remove it"),
                format!("source.{key} is only valid for {kind} sources."),
            )),
            None => Ok(None),
        };
    }
    let Some(entry) = entry.filter(|entry| !entry.value.is_null()) else {
        return Err(refuse(
            line,
            field.to_owned(),
            format!("is required for a {kind} source"),
            format!("source.{key} is required."),
        ));
    };
    match entry.value.as_mapping() {
        Some(entries) => Ok(Some((&entry.value, entries))),
        None => Err(refuse(
            entry.line,
            field.to_owned(),
            format!("must be a mapping, not {}", entry.value.kind()),
            format!("source.{key} must be an object."),
        )),
    }
}

/// Refuses a field of the declaration outside `allowed`, as Runx's `reject_unknown_fields`.
fn closed(
    entries: &[YamlEntry],
    field: &str,
    key: &str,
    allowed: &[&str],
    refuse: Refuse<'_>,
) -> Result<(), PackageError> {
    match entries
        .iter()
        .find(|entry| !allowed.contains(&entry.key.as_str()))
    {
        Some(entry) => Err(refuse(
            entry.line,
            join(field, &entry.key),
            format!(
                "unknown {key} field; remove it or use one of: {}",
                allowed.join(", ")
            ),
            format!(
                "source.{key}.{} is not supported; allowed fields: {}.",
                entry.key,
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

fn required(line: usize, field: &str, key: &str, name: &str, refuse: Refuse<'_>) -> PackageError {
    refuse(
        line,
        join(field, name),
        "is required".to_owned(),
        format!("source.{key}.{name} is required."),
    )
}

fn string<'e>(
    entry: &'e YamlEntry,
    field: &str,
    key: &str,
    refuse: Refuse<'_>,
) -> Result<&'e str, PackageError> {
    entry.value.as_str().ok_or_else(|| {
        refuse(
            entry.line,
            join(field, &entry.key),
            format!("must be a string, not {}; quote it", entry.value.kind()),
            format!("source.{key}.{} must be a string.", entry.key),
        )
    })
}

/// A path of a declaration: a string of plain segments below the skill's folder.
fn relative_path(
    entry: &YamlEntry,
    field: &str,
    key: &str,
    name: &str,
    refuse: Refuse<'_>,
) -> Result<String, PackageError> {
    if entry.value.is_null() {
        return Err(required(entry.line, field, key, name, refuse));
    }
    let path = string(entry, field, key, refuse)?;
    if safe_relative_path(path) {
        return Ok(path.to_owned());
    }
    Err(refuse(
        entry.line,
        join(field, name),
        format!("{path:?} is not a relative path below the skill's folder; name a file inside it"),
        format!("source.{key}.{name} must be a relative path below the skill directory: '{path}'"),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::first_refusal_line;
    use super::*;

    fn manifest() -> Value {
        json!({
            "schema": "runx.external_adapter.manifest.v1",
            "protocol_version": "runx.external_adapter.v1",
            "adapter_id": "demo",
            "name": "Demo",
            "version": "1.0.0",
            "supported_source_types": ["demo"],
            "transport": {"kind": "process", "command": "node", "args": ["adapter.mjs"]},
            "timeouts": {"startup_ms": 1000, "invocation_ms": 5000}
        })
    }

    #[test]
    fn a_complete_manifest_reads_and_names_the_process_it_starts() {
        let manifest = ExternalAdapterManifest::from_inline(manifest()).unwrap();
        assert_eq!(
            manifest.process_values().collect::<Vec<_>>(),
            ["node", "adapter.mjs"]
        );
    }

    #[test]
    fn a_manifest_is_refused_in_serdes_words_as_runx_refuses_it() {
        let mut missing = manifest();
        missing.as_object_mut().unwrap().remove("schema");
        assert_eq!(
            ExternalAdapterManifest::from_inline(missing).unwrap_err(),
            "source.external_adapter.manifest is invalid: missing field `schema`"
        );
        let mut extra = manifest();
        extra["zeta"] = json!(1);
        assert_eq!(
            ExternalAdapterManifest::from_inline(extra).unwrap_err(),
            "source.external_adapter.manifest is invalid: unknown field `zeta`, expected one of \
             `schema`, `protocol_version`, `adapter_id`, `name`, `version`, \
             `supported_source_types`, `transport`, `timeouts`, `credential_needs`, `metadata`"
        );
        let mut empty = manifest();
        empty["name"] = json!("");
        assert_eq!(
            ExternalAdapterManifest::from_inline(empty).unwrap_err(),
            "source.external_adapter.manifest is invalid: string must be non-empty"
        );
        let mut reference = manifest();
        reference["credential_needs"] = json!([{
            "purpose": "registry", "provider": "p", "required": true,
            "scope_refs": [{"type": "actor", "uri": "x"}]
        }]);
        let refusal = ExternalAdapterManifest::from_inline(reference).unwrap_err();
        assert!(
            refusal.starts_with(
                "source.external_adapter.manifest is invalid: unknown variant `actor`, expected \
                 one of `github_issue`"
            ),
            "{refusal}"
        );
        assert_eq!(
            ExternalAdapterManifest::from_file(b"{}").unwrap_err(),
            "external-adapter manifest is invalid: missing field `schema` at line 1 column 2"
        );
    }

    const MANUAL: &str = "---\nname: demo\ndescription: A demo.\n---\n\nUse it.\n";
    const RUN: &str = "console.log('{}');\n";
    /// A manifest laid out as the layouts run through runx-cli 0.8.2 had it (its refusals name
    /// lines and columns).
    const MANIFEST: &str = r#"{
  "schema": "runx.external_adapter.manifest.v1",
  "protocol_version": "runx.external_adapter.v1",
  "adapter_id": "demo",
  "name": "Demo",
  "version": "1.0.0",
  "supported_source_types": [
    "demo"
  ],
  "transport": {
    "kind": "process",
    "command": "node",
    "args": [
      "run.mjs"
    ]
  },
  "timeouts": {
    "startup_ms": 1000,
    "invocation_ms": 5000
  }
}"#;
    const TRANSPORT: &str = r#"{
    "kind": "process",
    "command": "node",
    "args": [
      "run.mjs"
    ]
  }"#;

    /// The first refusal line of a package whose runner `main` is a `source_type` source with
    /// `declaration` (X.yaml lines at the runner's indentation), plus `files`.
    fn load(source_type: &str, declaration: &str, files: &[(&str, &str)]) -> Option<String> {
        let command = if source_type == "cli-tool" {
            "    command: node\n"
        } else {
            ""
        };
        let profile = format!(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: {source_type}\n\
             {command}{declaration}"
        );
        let mut all: Vec<(&str, &[u8])> = vec![
            ("SKILL.md", MANUAL.as_bytes()),
            ("X.yaml", profile.as_bytes()),
        ];
        all.extend(files.iter().map(|(path, text)| (*path, text.as_bytes())));
        first_refusal_line(&all)
    }

    fn adapter(declaration: &str, files: &[(&str, &str)]) -> Option<String> {
        load("external-adapter", declaration, files)
    }

    fn outbox(declaration: &str) -> Option<String> {
        load("thread-outbox-provider", declaration, &[])
    }

    const BY_PATH: &str = "    external_adapter:\n      manifest_path: adapter.json\n";

    // Every expected line below is the real runx-cli 0.8.2's (`runx skill inspect`).

    #[test]
    fn an_adapter_manifest_file_is_read_and_refused_as_runx_refuses_it() {
        let manifest = |file: &str| adapter(BY_PATH, &[("adapter.json", file), ("run.mjs", RUN)]);
        assert_eq!(manifest(MANIFEST), None);
        assert_eq!(
            adapter(BY_PATH, &[]).as_deref(),
            Some(
                r#"X.yaml.runners.main.source: external-adapter manifest "adapter.json" is missing"#
            )
        );
        let invalid = "adapter.json: external-adapter manifest is invalid: ";
        for (file, says) in [
            ("{}".to_owned(), "missing field `schema` at line 1 column 2"),
            ("not json".to_owned(), "expected ident at line 1 column 2"),
            (
                MANIFEST.replace(
                    TRANSPORT,
                    r#"{
    "kind": "socket"
  }"#,
                ),
                "unknown variant `socket`, expected `process` or `http` at line 11 column 20",
            ),
            (
                MANIFEST.replace(TRANSPORT, r#""x""#),
                r#"invalid type: string "x", expected struct ExternalAdapterTransport at line 10 column 18"#,
            ),
            (
                MANIFEST.replace(r#""name": "Demo""#, r#""name": """#),
                "string must be non-empty at line 5 column 12",
            ),
            (
                MANIFEST.replace(
                    r#""schema": "runx.external_adapter.manifest.v1""#,
                    r#""schema": "runx.other.v1""#,
                ),
                "unknown variant `runx.other.v1`, expected `runx.external_adapter.manifest.v1` at \
                 line 2 column 27",
            ),
            (
                MANIFEST.replace(
                    r#""schema": "runx.external_adapter.manifest.v1""#,
                    r#""schema": 1"#,
                ),
                "expected value at line 2 column 13",
            ),
            (
                MANIFEST
                    .replace(r#""startup_ms": 1000"#, r#""startup_ms": 1.5"#)
                    .replace(r#""invocation_ms": 5000"#, r#""invocation_ms": 1"#),
                "invalid type: floating point `1.5`, expected u64 at line 18 column 21",
            ),
            (
                MANIFEST.replace("5000\n  }\n}", "5000\n  },\n  \"zeta\": 1\n}"),
                "unknown field `zeta`, expected one of `schema`, `protocol_version`, \
                 `adapter_id`, `name`, `version`, `supported_source_types`, `transport`, \
                 `timeouts`, `credential_needs`, `metadata` at line 21 column 8",
            ),
        ] {
            assert_eq!(manifest(&file), Some(format!("{invalid}{says}")), "{file}");
        }
    }

    #[test]
    fn an_adapter_runs_files_of_the_package_read_from_the_manifests_folder() {
        let inline = format!(
            "    external_adapter:\n      manifest: {}\n",
            serde_json::to_string(&serde_json::from_str::<Value>(MANIFEST).unwrap()).unwrap()
        );
        assert_eq!(adapter(&inline, &[("run.mjs", RUN)]), None);
        assert_eq!(
            adapter(&inline, &[]).as_deref(),
            Some("run.mjs: declared execution sidecar is missing from the skill package")
        );
        let nested = "    external_adapter:\n      manifest_path: adapters/a.json\n";
        assert_eq!(
            adapter(
                nested,
                &[("adapters/a.json", MANIFEST), ("adapters/run.mjs", RUN)]
            ),
            None
        );
        assert_eq!(
            adapter(nested, &[("adapters/a.json", MANIFEST)]).as_deref(),
            Some("adapters/run.mjs: declared execution sidecar is missing from the skill package")
        );
        // The script is an execution file, not a module root: what it imports is unreachable.
        assert_eq!(
            adapter(
                BY_PATH,
                &[
                    ("adapter.json", MANIFEST),
                    ("run.mjs", "import {x} from './lib.mjs';\nconsole.log(x);\n"),
                    ("lib.mjs", "export const x = 1;\n"),
                ]
            )
            .as_deref(),
            Some(
                "lib.mjs: executable JavaScript module is not reachable from a declared package \
                 source"
            )
        );
    }

    #[test]
    fn an_adapter_declaration_is_refused_in_runx_words() {
        let said = |declaration: &str| adapter(declaration, &[]);
        for (declaration, runx) in [
            ("", "source.external_adapter is required."),
            (
                "    external_adapter: null\n",
                "source.external_adapter is required.",
            ),
            (
                "    external_adapter: x\n",
                "source.external_adapter must be an object.",
            ),
            (
                "    external_adapter: {}\n",
                "source.external_adapter must declare exactly one of manifest or manifest_path.",
            ),
            (
                "    external_adapter:\n      manifest: {}\n      manifest_path: a.json\n",
                "source.external_adapter must declare exactly one of manifest or manifest_path.",
            ),
            (
                "    external_adapter:\n      manifest_path: a.json\n      zeta: 1\n",
                "source.external_adapter.zeta is not supported; allowed fields: manifest, \
                 manifest_path.",
            ),
            (
                "    external_adapter:\n      manifest_path: ../a.json\n",
                "source.external_adapter.manifest_path must be a relative path below the skill \
                 directory: '../a.json'",
            ),
            (
                "    external_adapter:\n      manifest_path: ./a.json\n",
                "source.external_adapter.manifest_path must be a relative path below the skill \
                 directory: './a.json'",
            ),
            (
                "    external_adapter:\n      manifest_path: 3\n",
                "source.external_adapter.manifest_path must be a string.",
            ),
            (
                "    external_adapter:\n      manifest_path: null\n",
                "source.external_adapter.manifest_path is required.",
            ),
            (
                "    external_adapter:\n      manifest: null\n",
                "source.external_adapter.manifest is invalid: invalid type: null, expected \
                 struct ExternalAdapterManifest",
            ),
            (
                "    external_adapter:\n      manifest: {schema: runx.external_adapter.manifest.v1}\n",
                "source.external_adapter.manifest is invalid: missing field `protocol_version`",
            ),
        ] {
            assert_eq!(
                said(declaration),
                Some(format!("X.yaml: {runx}")),
                "{declaration}"
            );
        }
        assert_eq!(
            load(
                "cli-tool",
                "    external_adapter:\n      manifest_path: a.json\n",
                &[]
            )
            .as_deref(),
            Some("X.yaml: source.external_adapter is only valid for external-adapter sources.")
        );
    }

    #[test]
    fn a_thread_outbox_declaration_is_refused_in_runx_words() {
        let declaration = |body: &str| format!("    thread_outbox_provider:\n{body}");
        assert_eq!(
            outbox(&declaration(
                "      operation: push\n      manifest_path: m.json\n"
            )),
            None
        );
        let field = "source.thread_outbox_provider";
        for (body, runx) in [
            (
                "      operation: pull\n      manifest_path: m.json\n",
                format!("{field}.operation must be push or fetch, got 'pull'."),
            ),
            (
                "      manifest_path: m.json\n",
                format!("{field}.operation is required."),
            ),
            (
                "      operation: 1\n      manifest_path: m.json\n",
                format!("{field}.operation must be a string."),
            ),
            (
                "      operation: push\n",
                format!("{field}.manifest_path is required."),
            ),
            (
                "      operation: fetch\n      manifest_path: m.json\n",
                format!("{field}.fetch_path is required for fetch operations."),
            ),
            (
                "      operation: push\n      manifest_path: m.json\n      fetch_path: f.json\n",
                format!("{field}.fetch_path is only valid for fetch operations."),
            ),
            (
                "      operation: fetch\n      manifest_path: m.json\n      push_path: p.json\n      fetch_path: f.json\n",
                format!("{field}.push_path is only valid for push operations."),
            ),
            (
                "      operation: push\n      manifest_path: /m.json\n",
                format!(
                    "{field}.manifest_path must be a relative path below the skill directory: '/m.json'"
                ),
            ),
            (
                "      operation: push\n      manifest_path: m.json\n      push_path: ../p.json\n",
                format!(
                    "{field}.push_path must be a relative path below the skill directory: '../p.json'"
                ),
            ),
            (
                "      operation: push\n      manifest_path: m.json\n      push_path: 4\n",
                format!("{field}.push_path must be a string."),
            ),
            (
                "      operation: push\n      manifest_path: m.json\n      zeta: 1\n",
                format!(
                    "{field}.zeta is not supported; allowed fields: operation, manifest_path, push_path, fetch_path."
                ),
            ),
        ] {
            assert_eq!(
                outbox(&declaration(body)),
                Some(format!("X.yaml: {runx}")),
                "{body}"
            );
        }
        assert_eq!(
            outbox("").as_deref(),
            Some("X.yaml: source.thread_outbox_provider is required.")
        );
        assert_eq!(
            outbox("    thread_outbox_provider: [1]\n").as_deref(),
            Some("X.yaml: source.thread_outbox_provider must be an object.")
        );
        assert_eq!(
            load(
                "cli-tool",
                "    thread_outbox_provider:\n      operation: push\n",
                &[]
            )
            .as_deref(),
            Some(
                "X.yaml: source.thread_outbox_provider is only valid for thread-outbox-provider \
                 sources."
            )
        );
    }

    #[test]
    fn a_manifest_path_is_plain_segments_below_the_folder() {
        // Rust's path components drop a `.` segment inside a path, and so does Runx's check.
        for good in [
            "adapter.json",
            "adapters/demo.json",
            "a/b/c",
            "a/./b",
            "a//b",
        ] {
            assert!(safe_relative_path(good), "{good}");
        }
        for bad in ["", " ", "/abs.json", "../up.json", "a/../b", "./a.json"] {
            assert!(!safe_relative_path(bad), "{bad}");
        }
    }
}
