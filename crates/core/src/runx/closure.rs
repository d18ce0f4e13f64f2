//! Runx's `execution_closure` of a runner (`runx-runtime` `skill_package/inspection/
//! execution_closure.rs`): what the runner reaches when it runs (tools, processes, agent acts,
//! other skills), the packages it is bound to, and a digest over the bindings.
//!
//! MindRune walks the runner's own source and graph steps as Runx does. A step naming another
//! skill by `$input` or registry reference is an unresolved edge, as in Runx's inspection; a
//! step naming a local skill folder (`.` for a sibling runner, `../other` for another package)
//! is followed into that package's runner, which the caller loads ([`LoadNested`]: this crate
//! does no I/O), and binds it too; a packet-valued input binds its admitted schema's digest.
//! [`closure`] fails, in Runx's words, where Runx's `skill inspect` fails as a whole (a
//! folder a step names that is no package, a runner it does not have) and answers `None`
//! where the closure cannot be bound otherwise (a packet schema that was not admitted).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::inspect::PacketSchemas;
use super::package::{PROFILE_FILE, Package, Runner, Source, StepTarget};
use super::snapshot::SnapshotFile;
use crate::digest;

/// The Runx release whose closures these are (Runx's `EXECUTION_RUNTIME_RELEASE`).
pub(super) const RUNTIME_RELEASE: &str = "0.8.2";

/// A local skill package a graph step names, read and loaded by the caller.
pub struct NestedPackage {
    /// The loaded package.
    pub package: Package,
    /// Its files.
    pub files: Vec<SnapshotFile>,
    /// Its folder, canonical, as Runx prints a binding's `source_path`.
    pub source_path: String,
    /// The schemas its packet-valued inputs were admitted with.
    pub packets: PacketSchemas,
}

/// Reads and loads the package in a folder: the step's reference joined to the naming
/// package's folder as written (`<folder>/../other`, as Runx names it in its errors); why it
/// cannot be read or does not load, in Runx's words, otherwise (`runtime I/O failed while
/// reading <folder>/../other: No such file or directory (os error 2)`).
pub(crate) type LoadNested<'a> = dyn Fn(&Path) -> Result<NestedPackage, String> + 'a;

/// Runx's refusal of a step's runner selection (`select_step_runner`, an
/// `UnsupportedRunnerSelection`): the runner named, or `default` when none is named and the
/// package has no single default or only runner.
pub fn unsupported_runner(runner: &str) -> String {
    format!("runner selection '{runner}' is not supported by the native runtime yet")
}

/// One package a closure is bound to; ordered as Runx's `ExecutionPackageBinding` set.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Binding {
    skill: String,
    runner: String,
    package_digest: String,
    input_packet_schemas: Vec<(String, String)>,
    source_path: String,
    source_files: Vec<String>,
}

/// A package being walked: its parse, files, folder and admitted packet schemas.
#[derive(Clone, Copy)]
struct Bound<'p> {
    package: &'p Package,
    files: &'p [SnapshotFile],
    source_path: &'p str,
    packets: &'p PacketSchemas,
}

struct Walk<'l> {
    load: &'l LoadNested<'l>,
    /// The folder of the package inspected (`direct_external_skill_edges` are those leaving it).
    root: PathBuf,
    visited: BTreeSet<(String, String)>,
    bindings: BTreeSet<Binding>,
    profiles: BTreeSet<String>,
    components: BTreeSet<String>,
    skill_edges: BTreeSet<String>,
    direct_external: BTreeSet<(String, String)>,
    unresolved: BTreeSet<String>,
    agent_acts: u64,
    declared_artifact: bool,
    /// Why Runx's inspection fails as a whole, once a step's package or runner fails.
    failure: Option<String>,
}

impl Walk<'_> {
    /// Runx's `walk_runner`: binds `runner` of `bound`, then walks its source; `None` where
    /// Runx's inspection would fail.
    fn runner(
        &mut self,
        bound: Bound<'_>,
        runner: &Runner,
        profile: &str,
        root: bool,
    ) -> Option<()> {
        if !self
            .visited
            .insert((bound.source_path.to_owned(), runner.name.clone()))
        {
            return Some(());
        }
        // The runner's packet-valued inputs, each bound to the digest of its admitted schema.
        let packet_ids: BTreeSet<&str> = runner
            .inputs
            .iter()
            .filter_map(|input| input.packet.as_deref())
            .collect();
        let mut input_packet_schemas = Vec::new();
        for packet in packet_ids {
            let digest = &bound.packets.get(packet)?.digest;
            input_packet_schemas.push((packet.to_owned(), digest.clone()));
        }
        let mut source_files: Vec<String> =
            bound.files.iter().map(|file| file.path.clone()).collect();
        source_files.sort_unstable();
        self.bindings.insert(Binding {
            skill: bound.package.skill().name.clone(),
            runner: runner.name.clone(),
            package_digest: super::inspect::package_digest(bound.files),
            input_packet_schemas,
            source_path: bound.source_path.to_owned(),
            source_files,
        });
        self.profiles.insert(format!("{profile}#{}", runner.name));
        let declared_artifact = runner.json.get("artifacts").is_some_and(|a| !a.is_null());
        self.source(
            bound,
            &runner.source,
            &runner.json,
            declared_artifact,
            profile,
            root,
        )
    }

    /// Runx's `walk_source` (and `walk_graph` for a graph); `json` is the source as written.
    fn source(
        &mut self,
        bound: Bound<'_>,
        source: &Source,
        json: &Value,
        declared_artifact: bool,
        profile: &str,
        root: bool,
    ) -> Option<()> {
        match source.source_type.as_str() {
            "graph" => {
                let Some(graph) = &source.graph else {
                    return Some(());
                };
                for step in &graph.steps {
                    let has_artifacts = step.json.get("artifacts").is_some_and(|a| !a.is_null());
                    match &step.target {
                        StepTarget::Tool(tool) => {
                            self.components.insert(format!("tool:{tool}"));
                        }
                        StepTarget::Skill(reference) => {
                            self.skill(bound, reference, step.runner.as_deref(), profile, root)?;
                        }
                        StepTarget::Run(run) => {
                            let run_json = step.json.get("run").unwrap_or(&Value::Null);
                            self.source(bound, run, run_json, has_artifacts, profile, root)?;
                        }
                        StepTarget::Approval => {}
                    }
                }
            }
            "agent" | "agent-task" | "agent-step" => {
                self.agent_acts += 1;
                self.declared_artifact |= declared_artifact;
            }
            "cli-tool" => {
                self.components.insert(
                    source
                        .command
                        .as_ref()
                        .map_or_else(|| "cli-tool".to_owned(), |c| format!("cli-tool:{c}")),
                );
            }
            "mcp" => {
                self.components.insert(
                    json.get("tool")
                        .and_then(Value::as_str)
                        .map_or_else(|| "mcp".to_owned(), |tool| format!("mcp:{tool}")),
                );
            }
            "javascript" | "a2a" | "external-adapter" | "thread-outbox-provider" => {
                self.components.insert(source.source_type.clone());
            }
            _ => {}
        }
        Some(())
    }

    /// A `skill:` step: an unresolved edge for a `$…` or registry reference; otherwise the
    /// local folder's package, loaded and walked (Runx's `resolve_step_skill`).
    fn skill(
        &mut self,
        bound: Bound<'_>,
        reference: &str,
        runner: Option<&str>,
        profile: &str,
        root: bool,
    ) -> Option<()> {
        const REGISTRY: [&str; 3] = ["registry:", "runx-registry:", "runx://skill/"];
        let registry = REGISTRY.iter().any(|prefix| reference.starts_with(prefix));
        if reference.starts_with('$') || registry {
            let edge = format!("{reference}#{}", runner.unwrap_or("default"));
            self.skill_edges.insert(edge.clone());
            self.unresolved.insert(edge);
            if registry && root {
                let id = REGISTRY
                    .iter()
                    .find_map(|prefix| reference.strip_prefix(prefix))
                    .unwrap_or(reference);
                let id = id.split('@').next().unwrap_or(id);
                if let Some(name) = id.rsplit('/').next().filter(|name| !name.is_empty()) {
                    self.direct_external
                        .insert((name.to_owned(), runner.unwrap_or("default").to_owned()));
                }
            }
            return Some(());
        }
        let directory = normalize(&Path::new(bound.source_path).join(reference), true)?;
        let nested_profile = normalize(
            &Path::new(profile)
                .parent()
                .unwrap_or_else(|| Path::new(""))
                .join(reference)
                .join(PROFILE_FILE),
            false,
        )?;
        let loaded;
        let nested = if Path::new(&directory) == Path::new(bound.source_path) {
            bound
        } else {
            loaded = match (self.load)(&Path::new(bound.source_path).join(reference)) {
                Ok(loaded) => loaded,
                Err(message) => {
                    self.failure = Some(message);
                    return None;
                }
            };
            Bound {
                package: &loaded.package,
                files: &loaded.files,
                source_path: &loaded.source_path,
                packets: &loaded.packets,
            }
        };
        // Runx's `select_step_runner`: the named runner, else the one default, else the only one.
        let runners = &nested.package.profile().runners;
        let selected = match runner {
            Some(name) => runners.iter().find(|r| r.name == name),
            None => {
                let defaults: Vec<&Runner> = runners.iter().filter(|r| r.default).collect();
                match defaults.as_slice() {
                    [one] => Some(*one),
                    [] if runners.len() == 1 => runners.first(),
                    _ => None,
                }
            }
        };
        let Some(selected) = selected else {
            self.failure = Some(unsupported_runner(runner.unwrap_or("default")));
            return None;
        };
        let name = &nested.package.skill().name;
        self.skill_edges.insert(format!("{name}#{}", selected.name));
        if root && !Path::new(nested.source_path).starts_with(&self.root) {
            self.direct_external
                .insert((name.clone(), selected.name.clone()));
        }
        self.runner(nested, selected, &nested_profile, false)
    }
}

/// `path` without `.` segments and with each `..` taking its parent away; an absolute path
/// must stay absolute, a relative one relative (Runx's `normalize_relative_path`).
fn normalize(path: &Path, absolute: bool) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(value) => out.push(value.to_string_lossy().into_owned()),
            Component::CurDir => {}
            Component::ParentDir => {
                if out.last().is_some_and(|segment| segment != "..") {
                    out.pop();
                } else if absolute {
                    return None;
                } else {
                    out.push("..".to_owned());
                }
            }
            Component::RootDir if absolute => {}
            Component::Prefix(_) | Component::RootDir => return None,
        }
    }
    Some(if absolute {
        format!("/{}", out.join("/"))
    } else {
        out.join("/")
    })
}

/// The `execution_closure` Runx prints for `runner` of `package` (whose files are `files`,
/// found at `source_path`, its packet-valued inputs admitted with `packets`), local packages
/// its graph names read with `load`: Runx's error where its whole inspection fails, `None`
/// where the closure cannot be bound.
pub(super) fn closure(
    package: &Package,
    runner: &Runner,
    files: &[SnapshotFile],
    source_path: &str,
    packets: &PacketSchemas,
    load: &LoadNested<'_>,
) -> Result<Option<Value>, String> {
    let mut walk = Walk {
        load,
        root: PathBuf::from(source_path),
        visited: BTreeSet::new(),
        bindings: BTreeSet::new(),
        profiles: BTreeSet::new(),
        components: BTreeSet::new(),
        skill_edges: BTreeSet::new(),
        direct_external: BTreeSet::new(),
        unresolved: BTreeSet::new(),
        agent_acts: 0,
        declared_artifact: false,
        failure: None,
    };
    let bound = Bound {
        package,
        files,
        source_path,
        packets,
    };
    if walk.runner(bound, runner, PROFILE_FILE, true).is_none() {
        return walk.failure.map_or(Ok(None), Err);
    }
    let components: Vec<&String> = walk.components.iter().collect();
    let unresolved: Vec<&String> = walk.unresolved.iter().collect();
    let mut canonical = b"runx.execution-closure.v1\0".to_vec();
    let mut field = |value: &[u8]| {
        canonical.extend_from_slice(&(value.len() as u64).to_be_bytes());
        canonical.extend_from_slice(value);
    };
    field(RUNTIME_RELEASE.as_bytes());
    for binding in &walk.bindings {
        field(binding.skill.as_bytes());
        field(binding.runner.as_bytes());
        field(binding.package_digest.as_bytes());
        for (packet, digest) in &binding.input_packet_schemas {
            field(packet.as_bytes());
            field(digest.as_bytes());
        }
    }
    for edge in &unresolved {
        field(b"unresolved");
        field(edge.as_bytes());
    }
    let bindings: Vec<Value> = walk
        .bindings
        .iter()
        .map(|binding| {
            let mut out = json!({
                "skill": binding.skill,
                "runner": binding.runner,
                "package_digest": binding.package_digest,
                "source_path": binding.source_path,
                "source_files": binding.source_files,
            });
            if !binding.input_packet_schemas.is_empty() {
                out["input_packet_schemas"] = binding
                    .input_packet_schemas
                    .iter()
                    .map(|(packet, digest)| json!({"packet": packet, "schema_digest": digest}))
                    .collect();
            }
            out
        })
        .collect();
    Ok(Some(json!({
        "closure_digest": digest::sha256(&canonical),
        "runtime_release": RUNTIME_RELEASE,
        "fully_bound": unresolved.is_empty(),
        "summary": summary(&components, walk.agent_acts, walk.declared_artifact),
        "components": components,
        "skill_edges": walk.skill_edges,
        "direct_external_skill_edges": walk.direct_external.iter()
            .map(|(skill, runner)| json!({"skill": skill, "runner": runner}))
            .collect::<Vec<_>>(),
        "unresolved_skill_edges": unresolved,
        "package_bindings": bindings,
        "agent_acts": walk.agent_acts,
        "declared_artifact": walk.declared_artifact,
        "profiles": walk.profiles,
    })))
}

/// Runx's `execution_summary`: the components, then the agent acts.
fn summary(components: &[&String], agent_acts: u64, declared_artifact: bool) -> String {
    let agent = match (agent_acts, declared_artifact) {
        (0, _) => None,
        (1, true) => Some("1 agent act -> declared artifact".to_owned()),
        (count, true) => Some(format!("{count} agent acts -> declared artifact")),
        (1, false) => Some("1 agent act".to_owned()),
        (count, false) => Some(format!("{count} agent acts")),
    };
    let listed = components
        .iter()
        .map(|c| c.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    match (components.is_empty(), agent) {
        (true, Some(agent)) => agent,
        (false, Some(agent)) => format!("{listed}; {agent}"),
        (false, None) => listed,
        (true, None) => "none".to_owned(),
    }
}
