//! What `lab inspect` shows of a package: its inputs, graph steps, catalog, harness cases,
//! fixtures and counts, as JSON.

use serde_json::{Value, json};

use super::model::{GraphStep, InputDef, Package, StepTarget};

/// The `inspect` summary of a package: identity, runners with their type, default flag,
/// inputs and graph steps, the catalog, harness case and fixture names, and counts.
pub fn inspect_package(package: &Package) -> Value {
    let skill = package.skill();
    let default_runner = package.default_runner().map(|runner| runner.name.clone());
    let runners: Vec<Value> = package
        .profile
        .runners
        .iter()
        .map(|runner| {
            let mut summary = json!({
                "name": runner.name,
                "type": runner.source.source_type,
                "default": default_runner.as_deref() == Some(runner.name.as_str()),
                "inputs": runner.inputs.iter().map(inspect_input).collect::<Vec<_>>(),
                "scopes": runner.scopes,
            });
            if let Some(graph) = &runner.source.graph {
                summary["graph"] = json!({
                    "name": graph.name,
                    "result_from": graph.result_from,
                    "steps": graph.steps.iter().map(inspect_step).collect::<Vec<_>>(),
                });
            }
            if let Some(module) = &runner.source.module {
                summary["module"] = json!(module);
                summary["export"] = json!(runner.source.export.as_deref().unwrap_or("default"));
            }
            if let Some(command) = &runner.source.command {
                summary["command"] = json!(command);
            }
            summary
        })
        .collect();
    let catalog = package.profile.catalog.as_ref().map(|catalog| {
        json!({
            "kind": catalog.kind,
            "audience": catalog.audience,
            "visibility": catalog.visibility,
            "role": catalog.role,
            "execution": catalog.execution,
            "completion": catalog.completion,
            "requires_adapter": catalog.requires_adapter,
            "approval": catalog.approval,
        })
    });
    let cases: Vec<&str> = package
        .harness_cases()
        .iter()
        .map(|case| case.name.as_str())
        .collect();
    let fixtures: Vec<Value> = package
        .fixtures
        .iter()
        .map(
            |fixture| json!({"path": fixture.path, "name": fixture.name, "runner": fixture.runner}),
        )
        .collect();
    let steps: usize = package
        .profile
        .runners
        .iter()
        .filter_map(|runner| runner.source.graph.as_ref())
        .map(|graph| graph.steps.len())
        .sum();
    let modules: Vec<Value> = package
        .javascript_modules()
        .into_iter()
        .map(|module| {
            json!({
                "runner": module.runner,
                "step": module.step,
                "module": module.module,
                "export": module.export.as_deref().unwrap_or("default"),
                "timeout_seconds": module.timeout_seconds,
            })
        })
        .collect();
    json!({
        "skill": skill.name,
        "version": package.profile.version,
        "description": skill.description,
        "category": skill.runx_category.as_ref().or(skill.category.as_ref()),
        "registry_owner": skill.registry_owner.as_deref().unwrap_or("runx"),
        "default_runner": default_runner,
        "runners": runners,
        "catalog": catalog,
        "javascript_modules": modules,
        "harness": {
            "cases": cases,
            "files": package.profile.harness.as_ref().map(|h| h.files.clone()).unwrap_or_default(),
            "fixtures": fixtures,
        },
        "counts": {
            "runners": package.profile.runners.len(),
            "graph_steps": steps,
            "harness_cases": cases.len(),
            "fixtures": package.fixtures.len(),
            "javascript_modules": modules.len(),
        },
    })
}

pub(super) fn inspect_input(input: &InputDef) -> Value {
    let mut summary = json!({
        "name": input.name,
        "type": input.input_type,
        "required": input.required,
    });
    if let Some(default) = &input.default {
        summary["default"] = default.clone();
    }
    if let Some(packet) = &input.packet {
        summary["packet"] = json!(packet);
    }
    summary
}

pub(super) fn inspect_step(step: &GraphStep) -> Value {
    let (kind, reference) = match &step.target {
        StepTarget::Tool(tool) => ("tool", json!(tool)),
        StepTarget::Skill(skill) => ("skill", json!(skill)),
        StepTarget::Approval => ("approval", Value::Null),
        StepTarget::Run(source) => ("run", json!(source.source_type)),
    };
    json!({
        "id": step.id,
        "label": step.label,
        "target": kind,
        "ref": reference,
        "mutation": step.mutation,
        "scopes": step.scopes,
    })
}
