//! The Skill Lab's native plan and bind steps and their admission rules, mirroring Runx's own
//! tests (`services/skill_packages/tests.rs`), and every contract we produce checked against
//! Runx's JSON schemas in `shared/data/runx/schemas/`.

use std::path::PathBuf;

use mindrune_core::{
    ArchitectureDecision, ChangeBundle, ChangeDecision, ChangeDraft, Disposition, ProofKind,
    Visibility, parse_contract, to_json,
};
use mindrune_core::{
    Mode, Refusal, admit_change, assert_allowed_delete_path, assert_allowed_write_path,
    bind_change, metrics_json, normalize_package_file, normalize_target_dir, package_metrics,
    plan_change, reject_secret_material, validate_change_contract,
};
use serde_json::{Value, json};

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    )
}

/// Checks `value` against one of Runx's generated contract schemas.
fn assert_matches_schema(schema_file: &str, value: &Value) {
    let path = shared().join("data/runx/schemas").join(schema_file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    });
    let schema: Value = serde_json::from_str(&text).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{schema_file}: {errors:#?}\n{value:#}");
}

fn digest(c: char) -> String {
    format!("sha256:{}", c.to_string().repeat(64))
}

/// Runx's test architecture: a public demo skill, or a decision that builds nothing.
fn architecture(disposition: &str, deletions: &[&str]) -> ArchitectureDecision {
    let implements = matches!(disposition, "build" | "extend_existing");
    let mut value = json!({
        "schema": "runx.skill.architecture_decision.v1",
        "disposition": disposition,
        "objective": "Create or maintain the bounded demo skill.",
        "operator_value": "Give the operator one reviewable decision.",
        "knowledge_contract": {
            "purpose": "Explain and perform the bounded decision.",
            "evidence_required": ["A supplied objective."],
            "decision_logic": ["Preserve supplied evidence."],
            "stop_conditions": ["Stop when evidence is incomplete."],
            "recovery": ["Resume with the missing evidence."]
        },
        "required_behaviors": [],
        "native_reuse": {
            "inspected_capabilities": ["runx.skill.inspect", "runx.skill.apply"],
            "selected_capabilities": [],
            "missing_capabilities": if disposition == "needs_core" { json!(["runx.missing.capability"]) } else { json!([]) }
        },
        "effects": [{"effect": "none", "authority_scopes": [], "approval": "none", "provider_boundary": false}],
        "skill_chain": {"context_skills": [], "routes": []},
        "resource_budget": {"max_files": 8, "max_executable_lines": 0, "max_fanout": 1, "max_process_spawns": 0, "network_allowed": false},
        "preservation_obligations": ["Keep the operating manual substantive."],
        "deletions": deletions,
        "proof_plan": []
    });
    if implements {
        let object = value.as_object_mut().unwrap();
        object.insert("identity".into(), json!({
            "current_name": if disposition == "extend_existing" { json!("demo") } else { json!(null) },
            "proposed_name": "demo",
            "action": if disposition == "build" { "create" } else { "keep" },
            "visibility": "public",
            "rationale": "Demo is the exact operator-facing identity."
        }));
        object.insert(
            "direct_use".into(),
            json!({
                "trigger_requests": ["Make one bounded demo decision."],
                "non_trigger_requests": ["Publish this decision."],
                "default_outcome": "Return one bounded decision.",
                "routine_host_work": ["Inspect the supplied objective."],
                "runx_boundary": "Bind the result and evidence in a receipt.",
                "terminal_result": "A reviewable demo decision.",
                "blocker_behavior": "Block once and name missing evidence.",
                "native_escape": "Return gathered context for native continuation."
            }),
        );
        object.insert(
            "chain_use".into(),
            json!({
                "accepted_inputs": ["A supplied objective or prior evidence packet."],
                "result": "A reusable demo decision.",
                "reused_evidence": ["Prior objective evidence."],
                "reused_effects": [],
                "must_not_repeat": ["Do not rediscover supplied evidence."]
            }),
        );
        object.insert(
            "required_behaviors".into(),
            json!([
                {"id": "decide", "outcome": "Return one bounded decision.", "lane": "agent_task"}
            ]),
        );
        object.insert("proof_plan".into(), json!([
            {"name": "cold-selection", "kind": "selection_trial", "expected": "The natural request selects demo."},
            {"name": "standalone-result", "kind": "standalone_operator_journey", "expected": "The direct request returns a decision."},
            {"name": "composed-reuse", "kind": "composed_operator_journey", "expected": "Prior evidence is reused."}
        ]));
    }
    parse_contract("architecture_decision", &value).unwrap()
}

fn draft(decision: &str, writes: &[(&str, &str)], deletes: &[&str]) -> ChangeDraft {
    let writes: Vec<Value> = writes
        .iter()
        .map(|(path, contents)| json!({"path": path, "contents": contents}))
        .collect();
    parse_contract(
        "change_draft",
        &json!({
            "schema": "runx.skill.change_draft.v1", "decision": decision,
            "summary": "Apply the bounded demo package change.",
            "non_goals": ["Do not publish or call a provider."],
            "writes": writes, "deletes": deletes, "expected_outputs": []
        }),
    )
    .unwrap()
}

fn bundle(
    base: &str,
    decision: &str,
    architecture: ArchitectureDecision,
    writes: &[(&str, &str)],
    deletes: &[&str],
) -> ChangeBundle {
    let plan = plan_change(base, architecture).unwrap();
    bind_change(&plan, draft(decision, writes, deletes)).unwrap()
}

fn refusal<T: std::fmt::Debug>(result: Result<T, Refusal>) -> String {
    result.unwrap_err().0
}

#[test]
fn plan_digest_binds_the_base_and_architecture() {
    let first = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    let second = plan_change(&digest('b'), architecture("build", &[])).unwrap();
    assert_ne!(first.plan_digest, second.plan_digest);
    let mut other = architecture("build", &[]);
    other.objective = "Another objective.".into();
    assert_ne!(
        first.plan_digest,
        plan_change(&digest('a'), other).unwrap().plan_digest
    );
    assert_matches_schema("skill-architecture-plan.schema.json", &to_json(&first));
    assert_matches_schema(
        "skill-architecture-decision.schema.json",
        &to_json(&first.architecture),
    );
}

#[test]
fn plan_digest_is_the_stable_json_digest_of_base_and_architecture() {
    let planned = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    let expected = mindrune_core::stable_digest(&json!({
        "base_digest": digest('a'),
        "architecture": to_json(&planned.architecture),
    }))
    .unwrap();
    assert_eq!(planned.plan_digest.as_str(), expected);
    // Absent optional fields are left out of the hashed JSON, as Runx's serde does.
    assert!(
        to_json(&planned.architecture)["identity"]
            .get("current_name")
            .is_none()
    );
}

#[test]
fn plan_refuses_a_malformed_base_digest() {
    assert_eq!(
        refusal(plan_change("sha256:abc", architecture("build", &[]))),
        "base_digest must contain exactly 64 hexadecimal characters"
    );
    assert_eq!(
        refusal(plan_change("abc", architecture("build", &[]))),
        "base_digest must be a sha256-prefixed digest"
    );
}

#[test]
fn public_architecture_needs_an_operator_contract_and_each_journey_proof() {
    let mut missing_identity = architecture("build", &[]);
    missing_identity.identity = None;
    assert_eq!(
        refusal(plan_change(&digest('a'), missing_identity)),
        "build and extension architectures require an identity decision"
    );
    for missing in [
        ProofKind::SelectionTrial,
        ProofKind::StandaloneOperatorJourney,
        ProofKind::ComposedOperatorJourney,
    ] {
        let mut incomplete = architecture("build", &[]);
        incomplete.proof_plan.retain(|proof| proof.kind != missing);
        assert_eq!(
            refusal(plan_change(&digest('a'), incomplete)),
            "public architectures require selection_trial, standalone_operator_journey, and composed_operator_journey proofs",
        );
    }
    let mut internal = architecture("extend_existing", &[]);
    internal.identity.as_mut().unwrap().visibility = Visibility::Internal;
    internal.direct_use = None;
    assert!(plan_change(&digest('a'), internal).is_ok());

    let mut internal_with_triggers = architecture("extend_existing", &[]);
    internal_with_triggers.identity.as_mut().unwrap().visibility = Visibility::Internal;
    assert_eq!(
        refusal(plan_change(&digest('a'), internal_with_triggers)),
        "internal architectures must not declare a public direct_use trigger contract"
    );
}

#[test]
fn needs_core_must_name_a_missing_capability_and_nothing_else_may() {
    let mut needs_core = architecture("needs_core", &[]);
    needs_core.native_reuse.missing_capabilities.clear();
    assert_eq!(
        refusal(plan_change(&digest('a'), needs_core)),
        "needs_core architecture must identify at least one missing native capability"
    );
    let mut build = architecture("build", &[]);
    build
        .native_reuse
        .missing_capabilities
        .push("runx.x".into());
    assert_eq!(
        refusal(plan_change(&digest('a'), build)),
        "missing native capabilities require a needs_core architecture decision"
    );
    let mut no_skill = architecture("no_skill", &[]);
    no_skill.identity = architecture("build", &[]).identity;
    assert_eq!(
        refusal(plan_change(&digest('a'), no_skill)),
        "no_skill and needs_core architectures must not invent a package identity or operator contract"
    );
}

#[test]
fn native_lanes_must_reuse_a_selected_capability() {
    let mut decision = architecture("build", &[]);
    decision.required_behaviors[0] = serde_json::from_value(json!({
        "id": "fetch", "outcome": "Fetch.", "lane": "native_capability", "reuse_ref": "web.fetch"
    }))
    .unwrap();
    assert_eq!(
        refusal(plan_change(&digest('a'), decision.clone())),
        "native behavior 'fetch' must reference a selected capability"
    );
    decision
        .native_reuse
        .selected_capabilities
        .push("web.fetch".into());
    assert_eq!(
        refusal(plan_change(&digest('a'), decision.clone())),
        "selected native capabilities must be present in inspected_capabilities"
    );
    decision
        .native_reuse
        .inspected_capabilities
        .push("web.fetch".into());
    assert!(plan_change(&digest('a'), decision).is_ok());
}

#[test]
fn bind_owns_integrity_fields_and_rejects_a_tampered_plan() {
    let planned = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    let draft = draft("write", &[("SKILL.md", "---\nname: demo\n---\n")], &[]);
    assert!(to_json(&draft).get("base_digest").is_none());
    let bundle = bind_change(&planned, draft.clone()).unwrap();
    assert_eq!(bundle.base_digest, planned.base_digest);
    assert_eq!(bundle.plan_digest, planned.plan_digest);
    assert_eq!(bundle.architecture, planned.architecture);
    assert_matches_schema("skill-change-bundle.schema.json", &to_json(&bundle));
    assert_matches_schema("skill-change-draft.schema.json", &to_json(&draft));

    let mut tampered = planned.clone();
    tampered.plan_digest = digest('f').as_str().into();
    assert_eq!(
        refusal(bind_change(&tampered, draft.clone())),
        "architecture plan digest does not bind its base and decision"
    );
    let mut swapped = planned;
    swapped.architecture.objective = "A different decision under the old digest.".into();
    assert_eq!(
        refusal(bind_change(&swapped, draft)),
        "architecture plan digest does not bind its base and decision"
    );
}

#[test]
fn bind_refuses_a_draft_that_disagrees_with_the_plan() {
    let planned = plan_change(&digest('a'), architecture("no_skill", &[])).unwrap();
    assert_eq!(
        refusal(bind_change(
            &planned,
            draft("write", &[("SKILL.md", "x")], &[])
        )),
        "change decision conflicts with the architecture disposition"
    );
    assert_eq!(
        refusal(bind_change(
            &planned,
            draft("no_skill", &[("SKILL.md", "x")], &[])
        )),
        "non-write bundles must not contain writes or deletes"
    );
    let build = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    assert_eq!(
        refusal(bind_change(&build, draft("write", &[], &[]))),
        "a write decision must contain at least one write or delete"
    );
    assert_eq!(
        refusal(bind_change(&build, draft("write", &[], &["old.md"]))),
        "bundle deletes must exactly match architecture deletions"
    );
}

#[test]
fn apply_contract_follows_the_mode_decision_table() {
    let cases = [
        (
            Mode::Build,
            "no_change",
            "extend_existing",
            Some("no_change is not a valid decision in build mode"),
        ),
        (
            Mode::Harness,
            "needs_core",
            "needs_core",
            Some("needs_core is not a valid decision in harness mode"),
        ),
        (
            Mode::Improve,
            "no_skill",
            "no_skill",
            Some("no_skill is not a valid decision in improve mode"),
        ),
        (Mode::Build, "no_skill", "no_skill", None),
        (Mode::Improve, "no_change", "extend_existing", None),
        (Mode::Harness, "no_change", "extend_existing", None),
    ];
    for (mode, decision, disposition, expected) in cases {
        let bundle = bundle(
            &digest('a'),
            decision,
            architecture(disposition, &[]),
            &[],
            &[],
        );
        let result = validate_change_contract(&bundle, mode, &digest('a'));
        assert_eq!(
            result.err().map(|r| r.0).as_deref(),
            expected,
            "{mode:?} {decision}"
        );
    }
}

#[test]
fn a_non_write_decision_against_a_stale_base_is_refused() {
    let bundle = bundle(
        &digest('a'),
        "no_change",
        architecture("extend_existing", &[]),
        &[],
        &[],
    );
    assert_eq!(
        refusal(validate_change_contract(
            &bundle,
            Mode::Improve,
            &digest('b')
        )),
        "non-write decision is stale against the inspected base digest"
    );
}

#[test]
fn apply_refuses_plan_drift() {
    let mut drifted = bundle(
        &digest('a'),
        "write",
        architecture("build", &[]),
        &[("SKILL.md", "x")],
        &[],
    );
    drifted.plan_digest = digest('f').as_str().into();
    assert_eq!(
        refusal(validate_change_contract(
            &drifted,
            Mode::Build,
            &digest('a')
        )),
        "plan_digest does not bind the supplied architecture decision"
    );
}

#[test]
fn improve_may_maintain_but_not_add_or_delete_public_docs() {
    assert!(assert_allowed_write_path("README.md", true, Mode::Improve).is_ok());
    assert_eq!(
        refusal(assert_allowed_write_path(
            "CHANGELOG.md",
            false,
            Mode::Improve
        )),
        "CHANGELOG.md is auxiliary package bloat; keep operating guidance in SKILL.md"
    );
    assert!(assert_allowed_write_path("README.md", true, Mode::Build).is_err());
    assert_eq!(
        refusal(assert_allowed_delete_path("README.md", Mode::Improve)),
        "README.md is an existing public package surface and cannot be deleted by skill-lab"
    );
}

/// Writes, deletes, mode and the refusal expected.
type RefusedCase = (
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    Mode,
    &'static str,
);

#[test]
fn admission_refuses_escapes_skill_md_deletion_secrets_and_non_fixtures_in_harness_mode() {
    let cases: [RefusedCase; 6] = [
        (
            &[("../evil.md", "x")],
            &[],
            Mode::Build,
            "target_dir must stay inside repo_root\n  ../evil.md must stay inside the target package",
        ),
        (
            &[("/etc/passwd", "x")],
            &[],
            Mode::Build,
            "target_dir must stay inside repo_root\n  /etc/passwd must stay inside the target package",
        ),
        (
            &[],
            &["SKILL.md"],
            Mode::Improve,
            "SKILL.md cannot be deleted",
        ),
        (
            &[("docs/README.md", "x")],
            &[],
            Mode::Build,
            "README.md is auxiliary package bloat; keep operating guidance in SKILL.md",
        ),
        (
            &[("key.pem", "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n")],
            &[],
            Mode::Build,
            "refusing secret-like material in key.pem",
        ),
        (
            &[("X.yaml", "skill: x")],
            &[],
            Mode::Harness,
            "harness mode may only change fixtures/*.yaml files: X.yaml",
        ),
    ];
    for (writes, deletes, mode, expected) in cases {
        let disposition = if deletes.is_empty() {
            "build"
        } else {
            "extend_existing"
        };
        let mut decision = architecture(disposition, deletes);
        if mode == Mode::Harness {
            decision.disposition = Disposition::ExtendExisting;
            decision.identity = architecture("extend_existing", &[]).identity;
        }
        let planned = plan_change(&digest('a'), decision).unwrap();
        let bundle = bind_change(&planned, draft("write", writes, deletes)).unwrap();
        assert_eq!(refusal(admit_change(&bundle, mode, |_| false)), expected);
    }
    let planned = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    let nitro = bind_change(
        &planned,
        draft("write", &[("SKILL.md", "token=nskey_live_abc")], &[]),
    )
    .unwrap();
    assert_eq!(
        refusal(admit_change(&nitro, Mode::Build, |_| false)),
        "refusing secret-like material in SKILL.md"
    );
}

#[test]
fn admission_normalizes_paths_and_refuses_a_path_twice() {
    let planned = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    let ok = bind_change(&planned, draft("write", &[("fixtures//a.yaml", "x")], &[])).unwrap();
    assert_eq!(
        admit_change(&ok, Mode::Build, |_| false).unwrap().writes[0].0,
        "fixtures/a.yaml"
    );
    let twice = bind_change(
        &planned,
        draft("write", &[("a.md", "x"), ("./a.md", "y")], &[]),
    )
    .unwrap();
    assert!(admit_change(&twice, Mode::Build, |_| false).is_err());
}

#[test]
fn package_paths_refuse_ignored_names_control_characters_and_overlong_names() {
    for (bad, message) in [
        (
            "node_modules/evil/index.js",
            "node_modules/evil/index.js: node_modules is never part of a package (Runx skips it); put the file elsewhere",
        ),
        (
            ".git/hooks/pre-commit",
            ".git/hooks/pre-commit: .git is never part of a package (Runx skips it); put the file elsewhere",
        ),
        (
            "a/target/x",
            "a/target/x: target is never part of a package (Runx skips it); put the file elsewhere",
        ),
        (
            "a\u{0}b",
            "\"a\\0b\" has a control character; package paths are printable",
        ),
    ] {
        assert_eq!(refusal(normalize_package_file(bad)), message, "{bad:?}");
    }
    let long = "x".repeat(201);
    assert!(refusal(normalize_package_file(&long)).ends_with("may be at most 200 bytes"));
    assert_eq!(
        refusal(assert_allowed_write_path(
            "docs/Readme.md",
            false,
            Mode::Build
        )),
        "Readme.md is auxiliary package bloat; keep operating guidance in SKILL.md"
    );
}

#[test]
fn a_credential_the_scrubber_knows_is_refused_in_any_package_file() {
    let aws = format!(
        "aws_secret_access_key = {}",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4r8vTq2Lk"
    );
    let refused = refusal(reject_secret_material("fixtures/a.yaml", &aws));
    assert!(
        refused.starts_with("refusing secret-like material in fixtures/a.yaml\n"),
        "{refused}"
    );
    assert!(
        refused.contains("Runx accepts it, MindRune is stricter"),
        "{refused}"
    );
}

/// A private-key block inside YAML comments (oracle case `apply-c3b-secret-in-fixture-comment`):
/// Runx writes it, MindRune refuses it with Runx's first line and says on the second that the
/// refusal is its own.
#[test]
fn a_private_key_in_yaml_comments_is_refused_as_mindrune_stricter_than_runx() {
    let fixture =
        "name: smoke\n# -----BEGIN PRIVATE KEY-----\n# MIIBfixture\n# -----END PRIVATE KEY-----\n";
    let refused = refusal(reject_secret_material("fixtures/smoke.yaml", fixture));
    let mut lines = refused.lines();
    assert_eq!(
        lines.next(),
        Some("refusing secret-like material in fixtures/smoke.yaml")
    );
    assert!(
        lines
            .next()
            .is_some_and(|line| line.contains("MindRune is stricter")),
        "{refused}"
    );
}

/// Runx writes a `ghp_` token in a package file (`apply-refusals.txt`, `gh-token`); MindRune
/// refuses it and says the refusal is its own.
#[test]
fn a_github_token_is_refused_as_mindrune_stricter_than_runx() {
    let token = format!("token: ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    let refused = refusal(reject_secret_material("notes/token.md", &token));
    let mut lines = refused.lines();
    assert_eq!(
        lines.next(),
        Some("refusing secret-like material in notes/token.md")
    );
    assert!(
        lines
            .next()
            .is_some_and(|line| line.contains("ghp_") && line.contains("MindRune is stricter")),
        "{refused}"
    );
    // Runx's own two rules keep Runx's one line.
    assert_eq!(
        refusal(reject_secret_material(
            "notes/provider.md",
            "key nskey_live_abc"
        )),
        "refusing secret-like material in notes/provider.md"
    );
}

#[test]
fn the_real_packages_carry_nothing_secret_like() {
    let packages = shared().join("data/runx/packages");
    let mut checked = 0;
    let mut pending = vec![packages];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let name = path.display().to_string();
            assert!(reject_secret_material(&name, &text).is_ok(), "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
}

#[test]
fn target_dir_must_be_a_repo_relative_child() {
    assert_eq!(normalize_target_dir("skills/demo").unwrap(), "skills/demo");
    for (bad, message) in [
        (
            "",
            "target_dir must be a non-empty repo-relative POSIX path",
        ),
        (
            " skills",
            "target_dir must be a non-empty repo-relative POSIX path",
        ),
        (
            "skills\\demo",
            "target_dir must be a non-empty repo-relative POSIX path",
        ),
        ("../demo", "target_dir must stay inside repo_root"),
        ("/abs", "target_dir must stay inside repo_root"),
        ("./demo", "target_dir must stay inside repo_root"),
    ] {
        assert_eq!(refusal(normalize_target_dir(bad)), message, "{bad:?}");
    }
}

#[test]
fn metrics_classify_lines_as_runx_does() {
    use mindrune_core::SnapshotFile;
    let file = |path: &str, contents: &str| SnapshotFile {
        path: path.into(),
        mode: 0o100644,
        contents: contents.as_bytes().to_vec(),
    };
    let metrics = package_metrics(&[
        file("SKILL.md", "a\nb\n"),
        file("run.mjs", "x\ny"),
        file("fixtures/a.yaml", "1\n2\n3\n"),
        file("dist/out.js", "z\n"),
    ]);
    assert_eq!(
        (
            metrics.files,
            metrics.production_lines,
            metrics.test_lines,
            metrics.generated_lines
        ),
        (4, 4, 3, 1)
    );
    assert_eq!((metrics.executable_files, metrics.executable_lines), (2, 3));
    assert_eq!(metrics_json(&metrics)["text_lines"], 8);
}

#[test]
fn the_real_skill_lab_fixture_answers_parse_and_plan() {
    // The skill-lab package's own fixtures carry real architecture decisions and drafts.
    let dir = shared().join("data/runx/packages/skill-lab/fixtures");
    let mut planned = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let fixture: Value = yaml_serde::from_str(&text).unwrap();
        let answers = &fixture["caller"]["answers"];
        let Some(decision) =
            answers["agent_task.skill-lab-architecture.output"].get("architecture_decision")
        else {
            continue;
        };
        let decision: ArchitectureDecision = parse_contract("architecture_decision", decision)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        assert_matches_schema(
            "skill-architecture-decision.schema.json",
            &to_json(&decision),
        );
        let plan = plan_change(&digest('a'), decision)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        if let Some(draft) = answers["agent_task.skill-lab-author.output"].get("change_draft") {
            let draft: ChangeDraft = parse_contract("change_draft", draft).unwrap();
            let bundle =
                bind_change(&plan, draft).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
            assert_ne!(
                bundle.decision == ChangeDecision::Write,
                bundle.writes.is_empty() && bundle.deletes.is_empty()
            );
        }
        planned += 1;
    }
    assert!(planned >= 4, "only {planned} fixtures carried a decision");
}

/// The typed-input refusals of `shared/data/runx/oracle/plan-bind-refusals.txt` (the `runx:`
/// lines, after Runx's `skill '…' failed: ` wrappers), reproduced word for word on the first
/// line of MindRune's refusal.
#[test]
fn plan_and_bind_typed_input_refusals_are_runx_text() {
    let path = shared().join("data/runx/oracle/plan-bind-refusals.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    });
    let runx_of = |case: &str| -> String {
        let mut lines = text
            .lines()
            .skip_while(|line| *line != format!("### {case}"));
        lines.next();
        let line = lines.next().unwrap().trim_start();
        let message = line.strip_prefix("runx: REFUSED ").unwrap();
        message
            .trim_start_matches("skill 'plan' failed: ")
            .trim_start_matches("skill 'bind' failed: ")
            .trim_start_matches("skill 'runx.skill.plan' failed: ")
            .trim_start_matches("skill 'runx.skill.bind' failed: ")
            .trim_start_matches("skill 'runx.skill.apply' failed: ")
            .to_owned()
    };
    let first_line = |text: String| text.lines().next().unwrap().to_owned();
    let decision = to_json(&architecture("build", &[]));

    let mut unknown = decision.clone();
    unknown["bogus"] = json!(true);
    let err =
        parse_contract::<ArchitectureDecision>("architecture_decision", &unknown).unwrap_err();
    assert_eq!(first_line(err.to_string()), runx_of("plan-unknown-field"));

    let mut variant = decision.clone();
    variant["disposition"] = json!("rewrite");
    let err =
        parse_contract::<ArchitectureDecision>("architecture_decision", &variant).unwrap_err();
    assert_eq!(first_line(err.to_string()), runx_of("plan-bad-disposition"));

    let mut empty = decision;
    empty["objective"] = json!("");
    let err = parse_contract::<ArchitectureDecision>("architecture_decision", &empty).unwrap_err();
    assert_eq!(first_line(err.to_string()), runx_of("plan-empty-objective"));
    assert!(
        err.to_string()
            .ends_with("\n  at architecture_decision: objective"),
        "{err}"
    );

    let with_digest = json!({
        "schema": "runx.skill.change_draft.v1", "decision": "no_change",
        "summary": "s", "non_goals": [], "writes": [], "deletes": [],
        "expected_outputs": [], "base_digest": "sha256:00"
    });
    let err = parse_contract::<ChangeDraft>("change_draft", &with_digest).unwrap_err();
    assert_eq!(
        first_line(err.to_string()),
        runx_of("bind-draft-with-digest")
    );

    // The admission refusals were already Runx's words.
    let planned = plan_change(&digest('a'), architecture("build", &[])).unwrap();
    assert_eq!(
        refusal(bind_change(&planned, draft("write", &[], &[]))),
        runx_of("bind-write-without-files")
    );
    assert_eq!(
        refusal(plan_change("sha256:abc", architecture("build", &[]))),
        runx_of("plan-bad-base")
    );
}
