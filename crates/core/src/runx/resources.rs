//! What a candidate package would use when it runs — fan-out, processes, network, domain
//! modules — measured from its execution profile and held against the architecture decision's
//! budget, as Runx's `validation/resources.rs` does, with its refusal texts.

use serde_json::{Value, json};

use super::admission::Refusal;
use super::contracts::{ArchitectureDecision, Lane};
use super::package::Package;

/// The resources a package's runners declare they use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceUsage {
    /// The most branches of one fan-out group (1 without fan-out).
    pub max_fanout: u64,
    /// Processes the runners spawn: one per process-backed runner or step, one per
    /// `command.execute`, and one for the JavaScript worker when there is any module.
    pub process_spawns: u64,
    pub network: bool,
    pub domain_modules: bool,
}

impl ResourceUsage {
    pub fn to_json(&self) -> Value {
        json!({
            "max_fanout": self.max_fanout,
            "process_spawns": self.process_spawns,
            "network": self.network,
            "domain_modules": self.domain_modules,
        })
    }
}

/// Measures `package`'s declared resource use.
pub fn resource_usage(package: &Package) -> ResourceUsage {
    let mut usage = ResourceUsage {
        max_fanout: 1,
        process_spawns: 0,
        network: false,
        domain_modules: !package.javascript_modules().is_empty(),
    };
    let runners = package
        .profile_json()
        .get("runners")
        .and_then(Value::as_object);
    for runner in runners.into_iter().flat_map(|runners| runners.values()) {
        classify_source(runner, &mut usage);
        let steps = runner
            .pointer("/graph/steps")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut groups: Vec<&str> = steps
            .iter()
            .filter_map(|step| step.get("fanout_group").and_then(Value::as_str))
            .collect();
        groups.sort_unstable();
        for group in groups.chunk_by(|a, b| a == b) {
            usage.max_fanout = usage.max_fanout.max(group.len() as u64);
        }
        for step in steps {
            if let Some(tool) = step.get("tool").and_then(Value::as_str) {
                classify_native_tool(tool, &mut usage);
            }
            if let Some(run) = step.get("run").filter(|run| run.is_object()) {
                classify_source(run, &mut usage);
            }
        }
    }
    if usage.domain_modules {
        usage.process_spawns += 1;
    }
    usage
}

fn classify_source(source: &Value, usage: &mut ResourceUsage) {
    match source.get("type").and_then(Value::as_str).unwrap_or("") {
        "javascript" => usage.domain_modules = true,
        "cli-tool" | "mcp" | "external-adapter" | "thread-outbox-provider" => {
            usage.process_spawns += 1;
        }
        "a2a" => usage.network = true,
        _ => {}
    }
    if source.pointer("/sandbox/network").and_then(Value::as_bool) == Some(true) {
        usage.network = true;
    }
}

fn classify_native_tool(tool: &str, usage: &mut ResourceUsage) {
    if tool == "command.execute" {
        usage.process_spawns += 1;
    }
    if tool.starts_with("http.") || tool.starts_with("provider.") || tool == "web.fetch" {
        usage.network = true;
    }
}

/// Refuses a candidate whose declared use exceeds the decision's budget, or whose domain
/// modules do not match a planned `domain_module` lane exactly (both ways).
pub fn validate_resources(
    architecture: &ArchitectureDecision,
    usage: &ResourceUsage,
) -> Result<(), Refusal> {
    let budget = &architecture.resource_budget;
    if usage.max_fanout > budget.max_fanout {
        return Err(Refusal(format!(
            "candidate fan-out {} exceeds architecture budget {}",
            usage.max_fanout, budget.max_fanout
        )));
    }
    if usage.process_spawns > budget.max_process_spawns {
        return Err(Refusal(format!(
            "candidate process count {} exceeds architecture budget {}",
            usage.process_spawns, budget.max_process_spawns
        )));
    }
    if usage.network && !budget.network_allowed {
        return Err(Refusal(
            "candidate declares a network lane but its architecture forbids network access".into(),
        ));
    }
    let planned = architecture
        .required_behaviors
        .iter()
        .any(|behavior| behavior.lane == Lane::DomainModule);
    if usage.domain_modules != planned {
        return Err(Refusal(
            "candidate domain modules must exactly match the architecture decision".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runx::package::load_package;
    use crate::runx::snapshot::SnapshotFile;

    fn package(profile: &str) -> Package {
        let file = |path: &str, text: &str| SnapshotFile {
            path: path.into(),
            mode: 0o100644,
            contents: text.as_bytes().to_vec(),
        };
        let mut files = vec![
            file(
                "SKILL.md",
                "---\nname: demo\ndescription: d\n---\n\n# Demo\n",
            ),
            file("X.yaml", profile),
        ];
        // The module these profiles declare: a package is only valid with it, and Runx
        // refuses one nothing declares.
        if profile.contains("demo.mjs") {
            files.push(file("demo.mjs", "export default () => ({});\n"));
        }
        load_package(&files).unwrap()
    }

    #[test]
    fn network_tools_and_processes_are_counted() {
        let usage = resource_usage(&package(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    graph:\n      name: demo\n      result_from: [fetch]\n      steps:\n        - id: run\n          tool: command.execute\n        - id: fetch\n          tool: web.fetch\n",
        ));
        assert_eq!(usage.process_spawns, 1);
        assert!(usage.network);
        assert!(!usage.domain_modules);
    }

    #[test]
    fn a_javascript_module_is_a_domain_module_and_one_worker_process() {
        let usage = resource_usage(&package(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: javascript\n    module: demo.mjs\n",
        ));
        assert!(usage.domain_modules);
        assert_eq!(usage.process_spawns, 1);
        assert!(!usage.network);
    }

    #[test]
    fn supplied_evidence_tools_do_not_claim_the_network() {
        let mut usage = resource_usage(&package(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: agent-task\n    agent: a\n    task: t\n",
        ));
        classify_native_tool("evidence.index_fetch_sources", &mut usage);
        assert!(!usage.network);
    }
}
