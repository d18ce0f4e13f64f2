//! What a package's files refer to beyond its runners, checked at load as Runx checks it
//! (`runx-parser` `package/validate/references.rs`, `support.rs`, `path.rs`), in Runx's words:
//!
//! - each agent step's `context_skills` names each reference once, and a reference that is
//!   not a registry one is a relative path inside the package to a folder whose SKILL.md is
//!   a valid manual;
//! - each receipt a fixture's `setup.receipts` seeds is a file of the package, and a `kind:
//!   graph` fixture's `target` is a graph file of the package (read from the fixture's folder)
//!   that checks as a graph, whose steps' scripts and modules are declared files;
//! - each operator reference (`references/**/*.md`) is UTF-8 text.
//!
//! Nested packages (a folder below the root with its own SKILL.md) are loaded whole by
//! [`super::load_package`] itself.

use std::collections::{BTreeMap, BTreeSet};

use super::check::Check;
use super::graph::check_graph;
use super::javascript::has_nested_manual_boundary;
use super::manual::{check_manual_ownership, parse_manual};
use super::model::{ExecutionProfile, Fixture, Graph};
use super::yaml_as_runx::read_graph_document;
use super::{PROFILE_FILE, PackageError, text_file};
use crate::runx::yaml::{self, YamlEntry, YamlError};

/// One `context_skills` reference of a graph step, where Runx names it.
pub(super) struct ContextReference {
    /// Runx's field: `X.yaml.runners.<name>.source.graph.steps[<index>].context_skills`.
    field: String,
    /// The line of the step in X.yaml.
    line: usize,
    reference: String,
}

/// Runx's `collect_step_context_refs` over every runner's graph (runners by name, as Runx
/// keeps them): the references, or the first one a step declares twice.
pub(super) fn context_references(
    profile: &ExecutionProfile,
) -> Result<Vec<ContextReference>, PackageError> {
    let mut runners: Vec<_> = profile.runners.iter().collect();
    runners.sort_by(|a, b| a.name.cmp(&b.name));
    let mut references = Vec::new();
    for runner in runners {
        let steps = runner.source.graph.iter().flat_map(|graph| &graph.steps);
        for (index, step) in steps.enumerate() {
            let field = format!(
                "{PROFILE_FILE}.runners.{}.source.graph.steps[{index}].context_skills",
                runner.name
            );
            let mut seen = BTreeSet::new();
            let declared = step.json.get("context_skills").and_then(|v| v.as_array());
            for reference in declared.into_iter().flatten().filter_map(|v| v.as_str()) {
                if !seen.insert(reference) {
                    return Err(PackageError::Invalid {
                        file: PROFILE_FILE.to_owned(),
                        line: step.line,
                        field: format!(
                            "runners.{}.graph.steps.{}.context_skills",
                            runner.name, step.id
                        ),
                        message: format!("names {reference:?} twice; list each skill once"),
                        runx: Some(format!(
                            "{field}: context skill ref {reference:?} is declared more than once"
                        )),
                    });
                }
                references.push(ContextReference {
                    field: field.clone(),
                    line: step.line,
                    reference: reference.to_owned(),
                });
            }
        }
    }
    Ok(references)
}

/// Runx's `validate_context_skill_sources`: each reference that is a path resolves to a
/// folder of the package whose SKILL.md is a valid manual.
pub(super) fn check_context_skill_sources(
    references: &[ContextReference],
    files: &BTreeMap<&str, &[u8]>,
) -> Result<(), PackageError> {
    for reference in references {
        let at = |message: String, runx: String| PackageError::Invalid {
            file: PROFILE_FILE.to_owned(),
            line: reference.line,
            field: reference.field.trim_start_matches("X.yaml.").to_owned(),
            message,
            runx: Some(runx),
        };
        let manual_path = match context_manual_path(&reference.reference) {
            Ok(Some(path)) => path,
            Ok(None) => continue,
            Err(problem) => {
                return Err(at(
                    "name a skill folder of the package by its relative path, or a registry \
                     skill (registry:…)"
                        .to_owned(),
                    format!(
                        "{PROFILE_FILE}: context skill ref {:?} {problem}",
                        reference.reference
                    ),
                ));
            }
        };
        let Some(contents) = files.get(manual_path.as_str()) else {
            return Err(at(
                format!("names a folder without SKILL.md; add {manual_path} or fix the reference"),
                format!(
                    "{}: context skill ref {:?} does not resolve to {manual_path}",
                    reference.field, reference.reference
                ),
            ));
        };
        let invalid = |inner: String| PackageError::Invalid {
            file: manual_path.clone(),
            line: 1,
            field: "(manual)".to_owned(),
            message: "the context skill's manual must be a valid SKILL.md".to_owned(),
            runx: Some(format!(
                "{manual_path}: context skill manual is invalid: {inner}"
            )),
        };
        let text = text_file(&manual_path, contents)?;
        let (_, frontmatter) = parse_manual(text).map_err(|err| invalid(first_line(&err)))?;
        check_manual_ownership(&frontmatter).map_err(|err| invalid(first_line(&err)))?;
    }
    Ok(())
}

/// Runx's `normalize_context_ref`: the manual a reference names (`None` for a registry
/// reference), or why it names none (Runx's words after the reference).
fn context_manual_path(reference: &str) -> Result<Option<String>, &'static str> {
    if ["registry:", "runx-registry:", "runx://skill/"]
        .iter()
        .any(|prefix| reference.starts_with(prefix))
    {
        return Ok(None);
    }
    if reference.trim() != reference
        || reference.is_empty()
        || reference.starts_with('/')
        || reference.contains('\\')
    {
        return Err("must be a relative POSIX path or registry ref");
    }
    let segments: Vec<&str> = reference.split('/').filter(|s| *s != ".").collect();
    if segments.is_empty() || segments.iter().any(|s| s.is_empty() || *s == "..") {
        return Err("must not traverse the package");
    }
    if segments.contains(&"graph") {
        return Err("must not target an internal graph stage");
    }
    Ok(Some(format!("{}/SKILL.md", segments.join("/"))))
}

/// The graph file a `kind: graph` fixture runs, checked.
pub(super) struct FixtureGraph {
    /// The fixture that runs it (`fixtures/flow.yaml`).
    pub(super) fixture: String,
    /// Its package path (`graphs/flow.yaml`).
    pub(super) path: String,
    pub(super) graph: Graph,
}

impl FixtureGraph {
    /// The folder its steps' paths are read from.
    pub(super) fn folder(&self) -> &str {
        self.path.rsplit_once('/').map_or("", |(folder, _)| folder)
    }
}

/// Runx's `collect_harness_fixture_references` (fixtures in path order): every receipt a
/// fixture seeds is a file of the package, and a `kind: graph` fixture's `target` is a graph
/// file of the package, read from the fixture's folder, that parses and checks as a graph.
pub(super) fn check_fixture_references(
    fixtures: &[Fixture],
    files: &BTreeMap<&str, &[u8]>,
    fixture_texts: &BTreeMap<&str, &str>,
) -> Result<Vec<FixtureGraph>, PackageError> {
    let mut graphs = Vec::new();
    for fixture in fixtures {
        check_setup_receipts(fixture, files, fixture_texts)?;
        if fixture.kind == "graph" {
            graphs.push(check_graph_target(fixture, files, fixture_texts)?);
        }
    }
    Ok(graphs)
}

fn check_graph_target(
    fixture: &Fixture,
    files: &BTreeMap<&str, &[u8]>,
    fixture_texts: &BTreeMap<&str, &str>,
) -> Result<FixtureGraph, PackageError> {
    let reference = fixture.target.as_str();
    let line = fixture_texts
        .get(fixture.path.as_str())
        .and_then(|text| text.lines().position(|line| line.starts_with("target:")))
        .map_or(1, |index| index + 1);
    let refuse = |message: &str, runx: String| PackageError::Invalid {
        file: fixture.path.clone(),
        line,
        field: "target".to_owned(),
        message: message.to_owned(),
        runx: Some(format!("{}: {runx}", fixture.path)),
    };
    let hint = "a graph fixture's target is the graph file it runs, relative to the fixture";
    if reference.trim() != reference
        || reference.is_empty()
        || reference.starts_with('/')
        || reference.contains('\\')
    {
        return Err(refuse(
            hint,
            format!("graph target {reference:?} must be a relative POSIX path"),
        ));
    }
    let mut segments: Vec<&str> = fixture
        .path
        .rsplit_once('/')
        .map(|(folder, _)| folder.split('/').filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    for segment in reference.split('/') {
        match segment {
            "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(refuse(
                        hint,
                        format!("graph target {reference:?} escapes the skill package"),
                    ));
                }
            }
            "" => {
                return Err(refuse(
                    hint,
                    format!("graph target {reference:?} contains an empty path segment"),
                ));
            }
            name => segments.push(name),
        }
    }
    let path = segments.join("/");
    if let Some(problem) = super::javascript::package_path_problem(&path) {
        return Err(refuse(hint, format!("{path}: {problem}")));
    }
    let Some(contents) = files.get(path.as_str()) else {
        return Err(refuse(
            "names a graph file that is not in the package; add it or fix the target",
            format!("graph target {reference:?} resolves to missing file {path}"),
        ));
    };
    let text = text_file(&path, contents)?;
    let graph = check_graph_file(&path, text)?;
    Ok(FixtureGraph {
        fixture: fixture.path.clone(),
        path,
        graph,
    })
}

/// A graph file: Runx's graph document (`parse_graph_yaml`, `validate_graph`), checked with
/// the checks a runner's graph gets; its first two fields refused in Runx's words.
fn check_graph_file(path: &str, text: &str) -> Result<Graph, PackageError> {
    // Runx reads the file with serde_norway: what it cannot read is refused in its words, the
    // Lab's place second. What it reads and the Lab's stricter reader refuses (an anchor, a
    // duplicate key) is refused in the Lab's words, saying so.
    let node = match (read_graph_document(text), yaml::parse(path, text)) {
        (Ok(()), Ok(node)) => node,
        (Err(runx), Err(err)) => {
            return Err(PackageError::Yaml(err).opening_with_runx(format!("{path}: {runx}")));
        }
        (Err(runx), Ok(_)) => {
            return Err(PackageError::Invalid {
                file: path.to_owned(),
                line: 1,
                field: "(document)".to_owned(),
                message: "Runx's YAML reader refuses it; fix what the line above names".to_owned(),
                runx: Some(format!("{path}: {runx}")),
            });
        }
        (Ok(()), Err(err)) => return Err(stricter_yaml(err, "graph file")),
    };
    let check = Check {
        file: path,
        graph_file: true,
    };
    let runx = |line: usize, field: &str, message: &str, runx: &str| {
        check.err_runx(line, field, message, format!("{path}: {runx}"))
    };
    let Some(entries) = node.as_mapping() else {
        return Err(runx(
            node.line,
            "(document)",
            "a graph file is a mapping with a name and steps",
            "graph: Graph YAML must parse to an object.",
        ));
    };
    match entries.iter().find(|entry| entry.key == "name") {
        Some(entry) if entry.value.as_str().is_some_and(|name| !name.is_empty()) => {}
        Some(entry) if !entry.value.is_null() && entry.value.as_str().is_none() => {
            return Err(runx(
                entry.line,
                "name",
                "must be a string: the graph's name",
                "name must be a string.",
            ));
        }
        _ => {
            return Err(runx(
                1,
                "name",
                "is required: the graph's name",
                "name is required.",
            ));
        }
    }
    if let Some(steps) = entries.iter().find(|entry| entry.key == "steps")
        && steps.value.as_sequence().is_none()
    {
        return Err(runx(
            steps.line,
            "steps",
            "must be a list of steps",
            "steps must be an array.",
        ));
    }
    let entry = YamlEntry {
        key: "graph".to_owned(),
        line: 1,
        column: 1,
        value: node.clone(),
    };
    check_graph(&check, &entry, "graph")
}

/// A refusal of YAML that Runx reads (an anchor, an alias, a tag, a duplicate key in a fixture
/// or a graph file): the Lab's own words, and a second line saying that Runx reads it and why
/// the Lab does not.
pub(super) fn stricter_yaml(mut err: YamlError, what: &str) -> PackageError {
    err.message.push_str(&format!(
        "\n  Runx reads this {what}; MindRune is stricter: it reads every YAML file of a package \
         as Runx reads X.yaml, without anchors, aliases, tags or duplicate keys, so that each \
         value is written once and means one thing"
    ));
    PackageError::Yaml(err)
}

/// Runx's check that every receipt a fixture seeds is a file of the package.
fn check_setup_receipts(
    fixture: &Fixture,
    files: &BTreeMap<&str, &[u8]>,
    fixture_texts: &BTreeMap<&str, &str>,
) -> Result<(), PackageError> {
    let receipts = fixture
        .json
        .pointer("/setup/receipts")
        .and_then(|v| v.as_array());
    for receipt in receipts.into_iter().flatten().filter_map(|v| v.as_str()) {
        if !files.contains_key(receipt) {
            let line = fixture_texts
                .get(fixture.path.as_str())
                .and_then(|text| text.lines().position(|line| line.contains(receipt)))
                .map_or(1, |index| index + 1);
            return Err(PackageError::Invalid {
                file: fixture.path.clone(),
                line,
                field: "setup.receipts".to_owned(),
                message: format!(
                    "names {receipt}, which is not in the package; add the receipt or remove it"
                ),
                runx: Some(format!(
                    "{}: setup receipt {receipt:?} is missing from the skill package",
                    fixture.path
                )),
            });
        }
    }
    Ok(())
}

/// Runx's `validate_operator_reference_files`: the operator references
/// (`references/**/*.md` and any `…/references/…/*.md` of the package) are UTF-8 text.
pub(super) fn check_operator_references(files: &BTreeMap<&str, &[u8]>) -> Result<(), PackageError> {
    for (path, contents) in files {
        let reference = (path.starts_with("references/") || path.contains("/references/"))
            && path.ends_with(".md")
            && !has_nested_manual_boundary(path, files);
        if !reference {
            continue;
        }
        text_file(path, contents)?;
    }
    Ok(())
}

/// The folders below the root that hold a SKILL.md and are not inside another such folder:
/// the packages nested in this one, each loaded whole (Runx's
/// `immediate_nested_manual_prefixes`).
pub(super) fn nested_package_prefixes<'f>(files: &BTreeMap<&'f str, &[u8]>) -> Vec<&'f str> {
    files
        .keys()
        .filter_map(|path| path.strip_suffix("/SKILL.md"))
        .filter(|prefix| {
            let segments: Vec<&str> = prefix.split('/').collect();
            (1..segments.len()).all(|length| {
                !files.contains_key(format!("{}/SKILL.md", segments[..length].join("/")).as_str())
            })
        })
        .collect()
}

/// The first line of a refusal as Runx would show it (its own text where the Lab has it).
fn first_line(err: &PackageError) -> String {
    err.to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANUAL: &str = "---\nname: demo\ndescription: A demo skill.\n---\n\n# Demo\n\nUse it.\n";

    /// A graph whose one agent step reads the context skills `refs`.
    fn agent_profile(refs: &str) -> String {
        format!(
            "skill: demo\nrunners:\n  main:\n    default: true\n    type: graph\n    graph:\n      \
             name: demo\n      result_from: [think]\n      steps:\n        - id: think\n          \
             run:\n            type: agent-task\n            agent: builder\n            task: \
             demo-think\n          context_skills: [{refs}]\n"
        )
    }

    use super::super::first_refusal_line as first_line;

    // Every expected line in these tests is the real runx-cli 0.8.2's (`runx skill inspect`).
    #[test]
    fn context_skills_name_manuals_of_the_package_once_each() {
        let manual = MANUAL.as_bytes();
        let with = |refs: &str, extra: &[(&str, &[u8])]| {
            let profile = agent_profile(refs);
            let mut files: Vec<(&str, &[u8])> =
                vec![("SKILL.md", manual), ("X.yaml", profile.as_bytes())];
            files.extend_from_slice(extra);
            first_line(&files)
        };
        assert_eq!(with("ctx/a", &[("ctx/a/SKILL.md", manual)]), None);
        assert_eq!(with("\"registry:acme/x\"", &[]), None);
        assert_eq!(
            with("ctx/a, ctx/a", &[("ctx/a/SKILL.md", manual)]).as_deref(),
            Some(
                "X.yaml.runners.main.source.graph.steps[0].context_skills: context skill ref \
                 \"ctx/a\" is declared more than once"
            )
        );
        assert_eq!(
            with("ctx/b", &[]).as_deref(),
            Some(
                "X.yaml.runners.main.source.graph.steps[0].context_skills: context skill ref \
                 \"ctx/b\" does not resolve to ctx/b/SKILL.md"
            )
        );
        assert_eq!(
            with("../b", &[]).as_deref(),
            Some("X.yaml: context skill ref \"../b\" must not traverse the package")
        );
        assert_eq!(
            with("x/graph", &[]).as_deref(),
            Some("X.yaml: context skill ref \"x/graph\" must not target an internal graph stage")
        );
        assert_eq!(
            with("ctx/a", &[("ctx/a/SKILL.md", b"no frontmatter\n")]).as_deref(),
            Some(
                "ctx/a/SKILL.md: context skill manual is invalid: SKILL.md: skill: Skill markdown \
                 must start with YAML frontmatter delimited by ---."
            )
        );
    }

    #[test]
    fn a_graph_fixture_runs_a_graph_file_of_the_package_whose_steps_declare_files() {
        let profile = "skill: demo\nrunners:\n  main:\n    default: true\n    type: cli-tool\n    \
                       command: node\n    args: [./run.mjs]\n";
        let fixture = |target: &str| {
            format!("name: g\nkind: graph\ntarget: {target}\nexpect:\n  status: sealed\n")
        };
        let graph = "name: flow\nsteps:\n  - id: a\n    run:\n      type: cli-tool\n      \
                     command: node\n      args: [./step.mjs]\n";
        let with = |target: &str, extra: &[(&str, &str)]| {
            let fixture = fixture(target);
            let mut files: Vec<(&str, &[u8])> = vec![
                ("SKILL.md", MANUAL.as_bytes()),
                ("X.yaml", profile.as_bytes()),
                ("run.mjs", b""),
                ("fixtures/g.yaml", fixture.as_bytes()),
            ];
            files.extend(extra.iter().map(|(path, text)| (*path, text.as_bytes())));
            first_line(&files)
        };
        // The graph file's step scripts are read from its folder: no unreachable module.
        let ok = [("graphs/flow.yaml", graph), ("graphs/step.mjs", "")];
        assert_eq!(with("../graphs/flow.yaml", &ok), None);
        let module = "name: flow\nsteps:\n  - id: a\n    run:\n      type: javascript\n      \
                      module: m.mjs\n";
        let with_module = [
            ("graphs/flow.yaml", module),
            ("graphs/m.mjs", "export default () => ({});\n"),
        ];
        assert_eq!(with("../graphs/flow.yaml", &with_module), None);
        for (target, extra, expected) in [
            (
                "../graphs/flow.yaml",
                &[][..],
                "fixtures/g.yaml: graph target \"../graphs/flow.yaml\" resolves to missing file \
                 graphs/flow.yaml",
            ),
            (
                "../../x.yaml",
                &[],
                "fixtures/g.yaml: graph target \"../../x.yaml\" escapes the skill package",
            ),
            (
                "/x.yaml",
                &[],
                "fixtures/g.yaml: graph target \"/x.yaml\" must be a relative POSIX path",
            ),
            (
                "..//graphs/flow.yaml",
                &[],
                "fixtures/g.yaml: graph target \"..//graphs/flow.yaml\" contains an empty path \
                 segment",
            ),
            (
                "../graphs/flow.yaml",
                &[("graphs/flow.yaml", graph)],
                "graphs/step.mjs: declared execution sidecar is missing from the skill package",
            ),
            (
                "../graphs/flow.yaml",
                &[("graphs/flow.yaml", "name: flow\nsteps: 3\n")],
                "graphs/flow.yaml: steps must be an array.",
            ),
            (
                "../graphs/flow.yaml",
                &[("graphs/flow.yaml", "steps:\n  - id: a\n    tool: fs.read\n")],
                "graphs/flow.yaml: name is required.",
            ),
        ] {
            assert_eq!(with(target, extra).as_deref(), Some(expected), "{target}");
        }
    }

    #[test]
    fn a_seeded_receipt_and_an_operator_reference_are_checked_as_runx_checks_them() {
        let profile = "skill: demo\nrunners:\n  main:\n    default: true\n    type: agent\n";
        let fixture = "name: a\nkind: skill\ntarget: ..\nsetup:\n  receipts: \
                       [receipts/gone.json]\nexpect:\n  status: sealed\n";
        assert_eq!(
            first_line(&[
                ("SKILL.md", MANUAL.as_bytes()),
                ("X.yaml", profile.as_bytes()),
                ("fixtures/a.yaml", fixture.as_bytes()),
            ])
            .as_deref(),
            Some(
                "fixtures/a.yaml: setup receipt \"receipts/gone.json\" is missing from the skill \
                 package"
            )
        );
        assert_eq!(
            first_line(&[
                ("SKILL.md", MANUAL.as_bytes()),
                ("X.yaml", profile.as_bytes()),
                ("references/notes.md", b"ok\n\xff\n"),
            ])
            .as_deref(),
            Some(
                "references/notes.md: parser input must be UTF-8: invalid utf-8 sequence of 1 \
                 bytes from index 3"
            )
        );
    }

    #[test]
    fn a_context_reference_is_a_registry_ref_or_a_folder_inside_the_package() {
        assert_eq!(context_manual_path("registry:acme/x"), Ok(None));
        assert_eq!(
            context_manual_path("./skills/helper"),
            Ok(Some("skills/helper/SKILL.md".to_owned()))
        );
        assert_eq!(
            context_manual_path("../sibling"),
            Err("must not traverse the package")
        );
        assert_eq!(
            context_manual_path("/abs"),
            Err("must be a relative POSIX path or registry ref")
        );
        assert_eq!(
            context_manual_path("x/graph/y"),
            Err("must not target an internal graph stage")
        );
    }

    #[test]
    fn nested_packages_are_the_outermost_folders_with_a_manual() {
        let files: BTreeMap<&str, &[u8]> = [
            "SKILL.md",
            "a/SKILL.md",
            "a/b/SKILL.md",
            "c/d/SKILL.md",
            "c/other.md",
        ]
        .into_iter()
        .map(|path| (path, &b""[..]))
        .collect();
        assert_eq!(nested_package_prefixes(&files), vec!["a", "c/d"]);
    }
}
