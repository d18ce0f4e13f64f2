//! `runx.skill.inspect`: the authoring context an agent designs against
//! (`runx.skill_lab.authoring_context.v1`): the target's files, metrics, digest and parsed
//! inspection, the catalog of skills in the workspace, and the native tools MindRune provides.
//!
//! An invalid target is not an error here: its inspection says `invalid` with the reason, so
//! the agent can repair it. Only an unreadable workspace or an unsafe target path fails.

use std::borrow::Cow;
use std::fs;
use std::path::{Path, PathBuf};

use mindrune_core::{NestedPackage, Package, RUNX_VALIDATION_PREFIX, load_package};
use mindrune_core::{PacketSchemas, inspect_packets, invalid_inspection};
use mindrune_core::{SNAPSHOT_IGNORED, SnapshotFile, absent_digest};
use mindrune_core::{metrics_json, normalize_target_dir, package_metrics};
use serde_json::{Value, json};

use super::apply::finish_interrupted_apply;
use super::apply_error::ApplyError;
use super::harness::packet_inputs::check_packet_inputs;
use super::harness::scratch;
use super::snapshot_walk::{PackageSnapshot, SnapshotError, snapshot_package};

/// The packet id of the authoring context.
pub(crate) const AUTHORING_CONTEXT_SCHEMA: &str = "runx.skill_lab.authoring_context.v1";

/// The native tools MindRune's Skill Lab and harness provide, as the catalog shows them.
pub(crate) const NATIVE_TOOLS: [(&str, &str, &[&str]); 8] = [
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
    inspect_with(repo_root, target_dir, &mut snapshot_package)
}

/// Reads a package folder; [`snapshot_package`] outside the tests, which count the reads.
type ReadPackage<'r> = dyn FnMut(&Path) -> Result<PackageSnapshot, SnapshotError> + 'r;

/// A package's parse: its `runx.skill.inspect.v1` inspection and its catalog facts, or why it
/// does not load (in Runx's words).
type Parsed = Result<Loaded, String>;

/// What the context keeps of a package that loads.
#[derive(Clone)]
struct Loaded {
    inspection: Value,
    /// The catalog entry's facts as Runx's `runx list` gathers them.
    name: String,
    kind: &'static str,
    scopes: Vec<String>,
    fixtures: usize,
    harness_cases: usize,
}

fn inspect_with(
    repo_root: &Path,
    target_dir: Option<&str>,
    read: &mut ReadPackage<'_>,
) -> Result<Value, ApplyError> {
    // Every lab run inspects first (a replay's first scratch folder sweeps too): clear the
    // scratch folders killed runs left in the temp folder.
    scratch::sweep_stale_once();
    let root = fs::canonicalize(repo_root).map_err(|source| ApplyError::Io {
        action: "resolve",
        path: repo_root.to_path_buf(),
        source,
    })?;
    let Some(target_dir) = target_dir else {
        // Design may run before a target is chosen. It still plans against a base digest: that
        // of no package, so a later build must re-inspect and re-plan against its real target.
        let mut context = workspace_context(&root, catalog_skills(&root, None, read));
        let object = context.as_object_mut().expect("context is an object");
        object.insert("target_dir".into(), Value::Null);
        object.insert("target_exists".into(), json!(false));
        object.insert("base_digest".into(), json!(absent_digest()));
        object.insert("target_files".into(), json!([]));
        object.insert("target_metrics".into(), metrics_json(&package_metrics(&[])));
        return Ok(context);
    };
    let relative = normalize_target_dir(target_dir)?;
    finish_interrupted_apply(&root, &relative)?;
    let target_path = root.join(&relative);
    let snapshot = read(&target_path)?;
    // The target is read and parsed once: its catalog entry reuses both, so the entry and the
    // inspection describe the same bytes, the ones an interrupted apply was rolled back to.
    let parsed = snapshot
        .exists
        .then(|| parse(&snapshot.files, &target_path));
    let target = parsed
        .as_ref()
        .map(|parsed| (target_path.as_path(), parsed));
    let mut context = workspace_context(&root, catalog_skills(&root, target, read));
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
    // Runx writes `null` for a target that does not exist yet.
    object.insert(
        "target_inspection".into(),
        parsed.as_ref().map_or(Value::Null, inspection_of),
    );
    Ok(context)
}

/// The part of the context that does not depend on the target. `catalog_root` is
/// repo-relative as Runx gives it: `skills` when the workspace has that folder, else the
/// workspace itself (`""`).
fn workspace_context(root: &Path, catalog: Value) -> Value {
    let catalog_root = if root.join("skills").is_dir() {
        "skills"
    } else {
        ""
    };
    json!({
        "schema": AUTHORING_CONTEXT_SCHEMA,
        "repo_root": root.display().to_string(),
        "catalog_root": catalog_root,
        "catalog_skills": catalog,
        "core_tools": core_tools(),
    })
}

fn parse(files: &[SnapshotFile], skill_path: &Path) -> Parsed {
    let package = load_package(files).map_err(|err| format!("{RUNX_VALIDATION_PREFIX}{err}"))?;
    let packets = check_packet_inputs(&package, skill_path)
        .map_err(|err| format!("{RUNX_VALIDATION_PREFIX}{err}"))?;
    if let Some(refusal) = package.runner_selection_refusal() {
        return Err(refusal.to_owned());
    }
    Ok(loaded(&package, files, skill_path, &packets))
}

fn loaded(
    package: &Package,
    files: &[SnapshotFile],
    skill_path: &Path,
    packets: &PacketSchemas,
) -> Loaded {
    let runners = &package.profile().runners;
    let graph = runners.iter().any(|runner| {
        runner
            .source
            .graph
            .as_ref()
            .is_some_and(|g| !g.steps.is_empty())
    });
    // Runx's `declared_scopes`: each runner's scopes and those of its graph steps.
    let mut scopes: Vec<String> = runners
        .iter()
        .flat_map(|runner| {
            let steps = runner.source.graph.iter().flat_map(|graph| &graph.steps);
            runner
                .scopes
                .iter()
                .chain(steps.flat_map(|step| &step.scopes))
                .cloned()
        })
        .collect();
    scopes.sort();
    scopes.dedup();
    Loaded {
        inspection: inspect_packets(
            package,
            files,
            &skill_path.display().to_string(),
            packets,
            &load_nested,
        ),
        name: package
            .profile()
            .skill
            .clone()
            .unwrap_or_else(|| package.name().to_owned()),
        kind: if graph { "graph" } else { "skill" },
        scopes,
        fixtures: package.fixtures().len(),
        harness_cases: package.harness_cases().len(),
    }
}

/// Reads and loads the local package a graph step names (Runx loads it to walk its runner
/// into the execution closure, and to expand it before a graph runs); `dir` is the step's
/// reference joined to the naming package's folder as written. Where it fails: Runx's words
/// for a folder that cannot be read (`resolve_skill_package_directory`: `runtime I/O failed
/// while reading <dir>: <error>`), else why the Lab does not load the package.
pub(crate) fn load_nested(dir: &Path) -> Result<NestedPackage, String> {
    fs::symlink_metadata(dir)
        .map_err(|err| format!("runtime I/O failed while reading {}: {err}", dir.display()))?;
    let canonical = fs::canonicalize(dir).map_err(|err| {
        format!(
            "runtime I/O failed while resolving skill package directory {}: {err}",
            dir.display()
        )
    })?;
    let snapshot = snapshot_package(&canonical).map_err(|err| err.to_string())?;
    if !snapshot.exists {
        return Err(format!(
            "{} is no skill package folder",
            canonical.display()
        ));
    }
    let package =
        load_package(&snapshot.files).map_err(|err| format!("{RUNX_VALIDATION_PREFIX}{err}"))?;
    let packets = check_packet_inputs(&package, &canonical)?;
    Ok(NestedPackage {
        package,
        files: snapshot.files,
        source_path: canonical.display().to_string(),
        packets,
    })
}

fn inspection_of(parsed: &Parsed) -> Value {
    match parsed {
        Ok(loaded) => loaded.inspection.clone(),
        Err(error) => invalid_inspection(error),
    }
}

/// The native tools as Runx lists its own (`kind: tool`, `status: ok`). MindRune provides
/// these eight, not Runx's whole native catalog, so only these are listed.
fn core_tools() -> Value {
    NATIVE_TOOLS
        .iter()
        .map(|(name, description, scopes)| {
            json!({
                "name": name, "kind": "tool", "description": description,
                "path": format!("native:{name}"), "status": "ok", "scopes": scopes,
            })
        })
        .collect()
}

/// Every `X.yaml` in the workspace (outside ignored folders) as a catalog entry. The target,
/// already read and parsed (its folder and its parse), is not read again.
fn catalog_skills(
    root: &Path,
    target: Option<(&Path, &Parsed)>,
    read: &mut ReadPackage<'_>,
) -> Value {
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
            if SNAPSHOT_IGNORED.contains(&name.as_str()) || name.starts_with(".runx-candidate-") {
                continue;
            }
            if kind.is_dir() {
                pending.push(folder.join(&name));
            } else if kind.is_file() && name == "X.yaml" {
                let parsed = match target {
                    Some((path, parsed)) if path == folder => Cow::Borrowed(parsed),
                    _ => Cow::Owned(
                        read(&folder)
                            .map_err(|err| err.to_string())
                            .and_then(|snapshot| parse(&snapshot.files, &folder)),
                    ),
                };
                found.push(catalog_entry(root, &folder, &parsed));
            }
        }
    }
    // Runx's `runx list` order: by kind (skill before graph), then by name.
    let kind_order = |entry: &Value| match entry["kind"].as_str() {
        Some("tool") => 0,
        Some("skill") => 1,
        Some("graph") => 2,
        _ => 3,
    };
    found.sort_by(|a, b| {
        kind_order(a)
            .cmp(&kind_order(b))
            .then_with(|| a["name"].as_str().cmp(&b["name"].as_str()))
            .then_with(|| a["path"].as_str().cmp(&b["path"].as_str()))
    });
    Value::Array(found)
}

/// A package's catalog entry from its parse; one that could not be read or parsed is listed
/// `invalid` with the reason.
fn catalog_entry(root: &Path, folder: &Path, parsed: &Parsed) -> Value {
    let relative_dir = folder
        .strip_prefix(root)
        .unwrap_or(folder)
        .to_string_lossy()
        .into_owned();
    let path_of = |file: &str| {
        if relative_dir.is_empty() {
            file.to_owned()
        } else {
            format!("{relative_dir}/{file}")
        }
    };
    let path = path_of("X.yaml");
    let fallback_name = folder
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Runx's `runx list` item: a graph when a runner has graph steps, the scopes its runners
    // and their steps declare, and the counts of fixtures and inline cases.
    match parsed {
        Ok(loaded) => json!({
            "name": loaded.name,
            "kind": loaded.kind,
            "path": path,
            "status": "ok",
            "scopes": loaded.scopes,
            "fixtures": loaded.fixtures,
            "harness_cases": loaded.harness_cases,
        }),
        // Runx lists a package that fails to load as a skill at its SKILL.md, without the
        // reason (`lab inspect` of that package gives it).
        Err(_) => json!({
            "name": fallback_name, "kind": "skill",
            "path": path_of("SKILL.md"),
            "status": "invalid", "scopes": [],
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const MANUAL: &str = "---\nname: demo\ndescription: A demo skill.\n---\n\n# Demo\n\nUse it.\n";
    const PROFILE: &str = "skill: demo\nrunners:\n  note:\n    default: true\n    type: agent-task\n    agent: builder\n    task: demo-note\n";

    fn write(root: &Path, path: &str, contents: &str) {
        let path = root.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, contents).unwrap();
    }

    /// Inspects `target`, counting the reads of each package folder (repo-relative).
    fn counted(root: &Path, target: &str) -> (Value, BTreeMap<String, usize>) {
        let root = fs::canonicalize(root).unwrap();
        let mut reads = BTreeMap::new();
        let context = inspect_with(&root, Some(target), &mut |dir: &Path| {
            let relative = dir.strip_prefix(&root).unwrap().display().to_string();
            *reads.entry(relative).or_insert(0) += 1;
            snapshot_package(dir)
        })
        .unwrap();
        (context, reads)
    }

    #[test]
    fn the_target_is_read_once_for_its_inspection_and_its_catalog_entry() {
        let repo = tempfile::tempdir().unwrap();
        for package in ["skills/demo", "skills/other"] {
            write(repo.path(), &format!("{package}/SKILL.md"), MANUAL);
            write(repo.path(), &format!("{package}/X.yaml"), PROFILE);
        }
        let (context, reads) = counted(repo.path(), "skills/demo");
        assert_eq!(context["target_inspection"]["status"], "ok", "{context}");
        assert_eq!(
            context["target_inspection"]["schema"],
            "runx.skill.inspect.v1"
        );
        assert_eq!(context["catalog_root"], "skills");
        assert_eq!(
            reads,
            BTreeMap::from([
                ("skills/demo".to_owned(), 1),
                ("skills/other".to_owned(), 1)
            ])
        );
        // The entry made from the target's own read is the one a fresh read makes.
        let root = fs::canonicalize(repo.path()).unwrap();
        assert_eq!(
            context["catalog_skills"],
            catalog_skills(&root, None, &mut snapshot_package)
        );
        assert_eq!(context["catalog_skills"][0]["status"], "ok");
        assert_eq!(context["catalog_skills"][0]["path"], "skills/demo/X.yaml");
    }

    #[test]
    fn an_invalid_target_is_read_once_and_listed_invalid_as_runx_lists_it() {
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), "skills/demo/SKILL.md", MANUAL);
        write(
            repo.path(),
            "skills/demo/X.yaml",
            "skill: demo\nunknown_field: 1\n",
        );
        let (context, reads) = counted(repo.path(), "skills/demo");
        assert_eq!(reads, BTreeMap::from([("skills/demo".to_owned(), 1)]));
        let entry = &context["catalog_skills"][0];
        // As Runx lists it: a skill at its SKILL.md, without the reason (the target's
        // inspection gives it).
        assert_eq!(
            entry,
            &json!({"name": "demo", "kind": "skill", "path": "skills/demo/SKILL.md",
                    "status": "invalid", "scopes": []})
        );
        assert_eq!(context["target_inspection"]["status"], "invalid");
        let root = fs::canonicalize(repo.path()).unwrap();
        assert_eq!(
            context["catalog_skills"],
            catalog_skills(&root, None, &mut snapshot_package)
        );
    }

    #[test]
    fn an_absent_target_reads_only_the_catalog() {
        let repo = tempfile::tempdir().unwrap();
        write(repo.path(), "skills/other/SKILL.md", MANUAL);
        write(repo.path(), "skills/other/X.yaml", PROFILE);
        let (context, reads) = counted(repo.path(), "skills/new");
        assert_eq!(context["target_exists"], false);
        assert_eq!(
            reads,
            BTreeMap::from([("skills/new".to_owned(), 1), ("skills/other".to_owned(), 1)])
        );
    }
}
