//! `runx.skill.inspect`: the authoring context an agent designs against
//! (`runx.skill_lab.authoring_context.v1`): the target's files, metrics, digest and parsed
//! inspection, the catalog of skills in the workspace, and the native tools MindRune provides.
//!
//! An invalid target is not an error here: its inspection says `invalid` with the reason, so
//! the agent can repair it. Only an unreadable workspace or an unsafe target path fails.

use std::fs;
use std::path::{Path, PathBuf};

use mindrune_core::runx::admission::{self, metrics_json, package_metrics};
use mindrune_core::runx::package::{inspect_package, load_package};
use mindrune_core::runx::snapshot::{IGNORED, SnapshotFile, absent_digest};
use serde_json::{Value, json};

use super::apply::{ApplyError, finish_interrupted_apply};
use super::snapshot_walk::snapshot_package;

/// The packet id of the authoring context.
pub const AUTHORING_CONTEXT_SCHEMA: &str = "runx.skill_lab.authoring_context.v1";

/// The native tools MindRune's Skill Lab and harness provide, as the catalog shows them.
pub const NATIVE_TOOLS: [(&str, &str, &[&str]); 8] = [
    (
        "runx.skill.inspect",
        "Inspect a package target, its metrics and digest, and the workspace catalog.",
        &["fs.read"],
    ),
    (
        "runx.skill.plan",
        "Bind an architecture decision to the inspected base digest.",
        &[],
    ),
    (
        "runx.skill.bind",
        "Bind a change draft to an admitted architecture plan.",
        &[],
    ),
    (
        "runx.skill.validate",
        "Validate a package: contract, inspection and safe harness replay.",
        &["fs.read"],
    ),
    (
        "runx.skill.apply",
        "Commit a validated change bundle in one verified local transaction.",
        &["fs.write", "fs.delete"],
    ),
    (
        "web.fetch",
        "Fetch one allowlisted web source and extract text, metadata or links.",
        &["net:allowlist"],
    ),
    (
        "http.read",
        "Read one HTTP resource without side effects.",
        &["net:allowlist"],
    ),
    (
        "fs.read",
        "Read one file inside the workspace.",
        &["fs.read"],
    ),
];

/// The catalog walk stops after this many folders, so inspecting a huge checkout stays quick.
const MAX_CATALOG_FOLDERS: usize = 5_000;

/// Builds the authoring context for `target_dir` (repo-relative) under `repo_root`.
pub fn inspect_workspace(repo_root: &Path, target_dir: Option<&str>) -> Result<Value, ApplyError> {
    let root = fs::canonicalize(repo_root).map_err(|source| ApplyError::Io {
        action: "resolve",
        path: repo_root.to_path_buf(),
        source,
    })?;
    let mut context = json!({
        "schema": AUTHORING_CONTEXT_SCHEMA,
        "repo_root": root.display().to_string(),
        "catalog_root": root.display().to_string(),
        "catalog_skills": catalog_skills(&root),
        "core_tools": core_tools(),
    });
    let Some(target_dir) = target_dir else {
        // Design may run before a target is chosen. It still plans against a base digest: that
        // of no package, so a later build must re-inspect and re-plan against its real target.
        let object = context.as_object_mut().expect("context is an object");
        object.insert("target_exists".into(), json!(false));
        object.insert("base_digest".into(), json!(absent_digest()));
        object.insert("target_files".into(), json!([]));
        object.insert("target_metrics".into(), metrics_json(&package_metrics(&[])));
        return Ok(context);
    };
    let relative = admission::normalize_target_dir(target_dir)?;
    finish_interrupted_apply(&root, &relative)?;
    let snapshot = snapshot_package(&root.join(&relative))?;
    let files: Vec<Value> = snapshot
        .files
        .iter()
        .map(|file| json!({"path": file.path, "bytes": file.contents.len()}))
        .collect();
    let object = context.as_object_mut().expect("context is an object");
    object.insert("target_dir".into(), json!(relative));
    object.insert("target_exists".into(), json!(snapshot.exists));
    object.insert("base_digest".into(), json!(snapshot.digest));
    object.insert("target_files".into(), Value::Array(files));
    object.insert(
        "target_metrics".into(),
        metrics_json(&package_metrics(&snapshot.files)),
    );
    if snapshot.exists {
        object.insert("target_inspection".into(), inspection(&snapshot.files));
    }
    Ok(context)
}

/// The parsed package's inspection, or `{status: invalid, error}` as repair context.
pub fn inspection(files: &[SnapshotFile]) -> Value {
    match load_package(files) {
        Ok(package) => {
            let mut value = inspect_package(&package);
            if let Some(object) = value.as_object_mut() {
                object.entry("status").or_insert_with(|| json!("valid"));
            }
            value
        }
        Err(err) => json!({"status": "invalid", "error": err.to_string()}),
    }
}

fn core_tools() -> Value {
    NATIVE_TOOLS
        .iter()
        .map(|(name, description, scopes)| {
            json!({
                "name": name, "kind": "native", "description": description,
                "path": format!("native:{name}"), "status": "available", "scopes": scopes,
            })
        })
        .collect()
}

/// Every `X.yaml` in the workspace (outside ignored folders) as a catalog entry.
fn catalog_skills(root: &Path) -> Value {
    let mut found = Vec::new();
    let mut pending: Vec<PathBuf> = vec![root.to_path_buf()];
    let mut visited = 0;
    while let Some(folder) = pending.pop() {
        visited += 1;
        if visited > MAX_CATALOG_FOLDERS {
            break;
        }
        let Ok(entries) = fs::read_dir(&folder) else {
            continue;
        };
        let mut names: Vec<(String, fs::FileType)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                Some((name, entry.file_type().ok()?))
            })
            .collect();
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names {
            if IGNORED.contains(&name.as_str()) || name.starts_with(".runx-candidate-") {
                continue;
            }
            if kind.is_dir() {
                pending.push(folder.join(&name));
            } else if kind.is_file() && name == "X.yaml" {
                found.push(catalog_entry(root, &folder));
            }
        }
    }
    found.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    Value::Array(found)
}

fn catalog_entry(root: &Path, folder: &Path) -> Value {
    let relative_dir = folder
        .strip_prefix(root)
        .unwrap_or(folder)
        .to_string_lossy()
        .into_owned();
    let path = if relative_dir.is_empty() {
        "X.yaml".to_owned()
    } else {
        format!("{relative_dir}/X.yaml")
    };
    let fallback_name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    match snapshot_package(folder) {
        Ok(snapshot) => match load_package(&snapshot.files) {
            Ok(package) => {
                let inspected = inspect_package(&package);
                let mut scopes: Vec<Value> = inspected["runners"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|runner| runner["scopes"].as_array().cloned().unwrap_or_default())
                    .collect();
                scopes.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                scopes.dedup();
                json!({
                    "name": inspected["skill"],
                    "kind": inspected.pointer("/catalog/kind").cloned().unwrap_or(json!("skill")),
                    "description": inspected["description"],
                    "path": path,
                    "status": "valid",
                    "scopes": scopes,
                    "fixtures": inspected.pointer("/counts/fixtures"),
                    "harness_cases": inspected.pointer("/counts/harness_cases"),
                })
            }
            Err(err) => json!({
                "name": fallback_name, "kind": "skill", "path": path,
                "status": "invalid", "error": err.to_string(), "scopes": [],
            }),
        },
        Err(err) => json!({
            "name": fallback_name, "kind": "skill", "path": path,
            "status": "invalid", "error": err.to_string(), "scopes": [],
        }),
    }
}
