//! Runx's `execution_closure` of a runner (`runx-runtime` `skill_package/inspection/
//! execution_closure.rs`): what the runner reaches when it runs (tools, processes, agent acts,
//! other skills), the package it is bound to, and a digest over the bindings.
//!
//! MindRune walks the runner's own source and graph steps as Runx does. A step naming another
//! skill by `$input` or registry reference is an unresolved edge, as in Runx's inspection; a
//! packet-valued input binds its admitted schema's digest. A step naming a local skill folder
//! (which Runx loads and walks in turn) or an `mcp` source gets no closure: [`closure`]
//! answers `None` rather than a closure Runx would not print.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::inspect::PacketSchemas;
use super::package::{Package, Runner, Source, StepTarget};
use super::snapshot::SnapshotFile;
use crate::digest;

/// The Runx release whose closures these are (Runx's `EXECUTION_RUNTIME_RELEASE`).
pub(super) const RUNTIME_RELEASE: &str = "0.8.2";

#[derive(Default)]
struct Walk {
    components: BTreeSet<String>,
    skill_edges: BTreeSet<String>,
    direct_external: BTreeSet<(String, String)>,
    unresolved: BTreeSet<String>,
    agent_acts: u64,
    declared_artifact: bool,
}

impl Walk {
    /// Walks a source; `false` when it reaches what MindRune does not walk.
    fn source(&mut self, source: &Source, declared_artifact: bool) -> bool {
        match source.source_type.as_str() {
            "graph" => {
                let Some(graph) = &source.graph else {
                    return true;
                };
                for step in &graph.steps {
                    let has_artifacts = step.json.get("artifacts").is_some_and(|a| !a.is_null());
                    match &step.target {
                        StepTarget::Tool(tool) => {
                            self.components.insert(format!("tool:{tool}"));
                        }
                        StepTarget::Skill(reference) => {
                            if !self.external_skill(reference, step.runner.as_deref()) {
                                return false;
                            }
                        }
                        StepTarget::Run(run) => {
                            if !self.source(run, has_artifacts) {
                                return false;
                            }
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
            "javascript" | "a2a" | "external-adapter" | "thread-outbox-provider" => {
                self.components.insert(source.source_type.clone());
            }
            "mcp" => return false,
            _ => {}
        }
        true
    }

    /// An edge to a skill Runx does not load at inspection (`$…` or a registry reference);
    /// `false` for a local one.
    fn external_skill(&mut self, reference: &str, runner: Option<&str>) -> bool {
        let registry = ["registry:", "runx-registry:", "runx://skill/"]
            .iter()
            .any(|prefix| reference.starts_with(prefix));
        if !reference.starts_with('$') && !registry {
            return false;
        }
        let runner = runner.unwrap_or("default");
        let edge = format!("{reference}#{runner}");
        self.skill_edges.insert(edge.clone());
        self.unresolved.insert(edge);
        if registry {
            let id = ["registry:", "runx-registry:", "runx://skill/"]
                .iter()
                .find_map(|prefix| reference.strip_prefix(prefix))
                .unwrap_or(reference);
            let id = id.split('@').next().unwrap_or(id);
            if let Some(name) = id.rsplit('/').next().filter(|name| !name.is_empty()) {
                self.direct_external
                    .insert((name.to_owned(), runner.to_owned()));
            }
        }
        true
    }
}

/// The `execution_closure` Runx prints for `runner` of `package` (whose files are `files`,
/// found at `source_path`), or `None` where MindRune does not walk what the runner reaches.
pub(super) fn closure(
    package: &Package,
    runner: &Runner,
    files: &[SnapshotFile],
    source_path: &str,
    packets: &PacketSchemas,
) -> Option<Value> {
    // The runner's packet-valued inputs, each bound to the digest of its admitted schema.
    let packet_ids: BTreeSet<&str> = runner
        .inputs
        .iter()
        .filter_map(|input| input.packet.as_deref())
        .collect();
    let mut input_packet_schemas = Vec::new();
    for packet in packet_ids {
        let digest = &packets.get(packet)?.digest;
        input_packet_schemas.push((packet, digest.as_str()));
    }
    let mut walk = Walk::default();
    let declared_artifact = runner.json.get("artifacts").is_some_and(|a| !a.is_null());
    if !walk.source(&runner.source, declared_artifact) {
        return None;
    }
    let package_digest = super::inspect::package_digest(files);
    let mut source_files: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
    source_files.sort_unstable();
    let skill = &package.skill().name;
    let components: Vec<&String> = walk.components.iter().collect();
    let unresolved: Vec<&String> = walk.unresolved.iter().collect();
    let mut canonical = b"runx.execution-closure.v1\0".to_vec();
    let mut field = |value: &[u8]| {
        canonical.extend_from_slice(&(value.len() as u64).to_be_bytes());
        canonical.extend_from_slice(value);
    };
    field(RUNTIME_RELEASE.as_bytes());
    field(skill.as_bytes());
    field(runner.name.as_bytes());
    field(package_digest.as_bytes());
    for (packet, digest) in &input_packet_schemas {
        field(packet.as_bytes());
        field(digest.as_bytes());
    }
    for edge in &unresolved {
        field(b"unresolved");
        field(edge.as_bytes());
    }
    let mut binding = json!({
        "skill": skill,
        "runner": runner.name,
        "package_digest": package_digest,
        "source_path": source_path,
        "source_files": source_files,
    });
    if !input_packet_schemas.is_empty() {
        binding["input_packet_schemas"] = input_packet_schemas
            .iter()
            .map(|(packet, digest)| json!({"packet": packet, "schema_digest": digest}))
            .collect();
    }
    Some(json!({
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
        "package_bindings": [binding],
        "agent_acts": walk.agent_acts,
        "declared_artifact": walk.declared_artifact,
        "profiles": [format!("{}#{}", super::package::PROFILE_FILE, runner.name)],
    }))
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
