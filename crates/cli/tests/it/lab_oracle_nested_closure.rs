//! The `execution_closure` of runners whose graph names a local skill folder or that reach an
//! `mcp` source, held to what the real Runx printed.
//!
//! Runx loads the package a `skill:` step names (`.` for a sibling runner, `../other` for
//! another package), walks its runner and binds it in the closure, with the step's edge and,
//! for a package outside the inspected one, a direct external edge; an `mcp` runner reaches
//! `mcp:<tool>` (`runx-runtime/src/skill_package/inspection/execution_closure.rs`). The
//! expected JSON is what `runx skill inspect skills/outer --json` printed for each of
//! `runner_inspections` on the files written below (`$OUTER` and `$OTHER` stand for the two
//! packages' absolute folders), observed from runx-cli 0.8.2 (`AutoMerchLab/runx` at commit
//! `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand with the nightly toolchain, run by
//! hand on 2026-12-07); no Runx binary or recipe is kept.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `skills/outer/X.yaml`: a graph reaching a tool, a sibling runner and another package; a
/// sibling agent-task runner; an `mcp` runner; a graph reaching another package's second
/// runner and an unresolved `$input` skill.
const OUTER: &str = r#"skill: outer
version: "0.1.0"
catalog:
  kind: skill
  audience: public
  visibility: internal
  role: canonical
runners:
  flow:
    default: true
    type: graph
    inputs:
      topic:
        type: string
        required: true
        description: What to note.
    graph:
      name: flow
      result_from: [sub]
      steps:
        - id: read
          tool: fs.read
          inputs:
            path: SKILL.md
        - id: sib
          skill: .
          runner: inner
        - id: sub
          skill: ../other
  inner:
    type: agent-task
    agent: builder
    task: outer-inner
    outputs:
      note: string
  remote:
    type: mcp
    server:
      command: node
      args: [srv.mjs]
    tool: lookup
  side:
    type: graph
    graph:
      name: side
      result_from: [s1]
      steps:
        - id: s1
          skill: ../other
          runner: side
        - id: s2
          skill: $input.target
"#;

/// `skills/other/X.yaml`: an agent-task default runner and a `cli-tool` one.
const OTHER: &str = r#"skill: other
version: "0.1.0"
catalog:
  kind: skill
  audience: public
  visibility: internal
  role: canonical
runners:
  main:
    default: true
    type: agent-task
    agent: builder
    task: other-note
    outputs:
      note: string
    inputs:
      topic:
        type: string
        required: true
        description: What to note.
  side:
    type: cli-tool
    command: node
    args: [x.mjs]
"#;

/// What Runx printed: each runner's `execution_closure`, by runner name.
const RUNX_CLOSURES: &str = r#"{
  "flow": {
    "agent_acts": 2,
    "closure_digest": "sha256:b3002588197525c4a9230cd80845f2703defdd5f20f2111b042ce36d55b2a927",
    "components": [
      "tool:fs.read"
    ],
    "declared_artifact": false,
    "direct_external_skill_edges": [
      {
        "runner": "main",
        "skill": "other"
      }
    ],
    "fully_bound": true,
    "package_bindings": [
      {
        "package_digest": "sha256:e43c43c4a77d6c3bc597933e92fdc80ff68c1da1614bba1db0d6298f8c2d92ee",
        "runner": "main",
        "skill": "other",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "x.mjs"
        ],
        "source_path": "$OTHER"
      },
      {
        "package_digest": "sha256:6124470e63daf31de1493114144980f2c31976862da6e18a4027558aefe2f32d",
        "runner": "flow",
        "skill": "outer",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "srv.mjs"
        ],
        "source_path": "$OUTER"
      },
      {
        "package_digest": "sha256:6124470e63daf31de1493114144980f2c31976862da6e18a4027558aefe2f32d",
        "runner": "inner",
        "skill": "outer",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "srv.mjs"
        ],
        "source_path": "$OUTER"
      }
    ],
    "profiles": [
      "../other/X.yaml#main",
      "X.yaml#flow",
      "X.yaml#inner"
    ],
    "runtime_release": "0.8.2",
    "skill_edges": [
      "other#main",
      "outer#inner"
    ],
    "summary": "tool:fs.read; 2 agent acts",
    "unresolved_skill_edges": []
  },
  "inner": {
    "agent_acts": 1,
    "closure_digest": "sha256:4092944c9129bec389ed90033a67b0776299def46c27b5e4488ab7d868ee0ee5",
    "components": [],
    "declared_artifact": false,
    "direct_external_skill_edges": [],
    "fully_bound": true,
    "package_bindings": [
      {
        "package_digest": "sha256:6124470e63daf31de1493114144980f2c31976862da6e18a4027558aefe2f32d",
        "runner": "inner",
        "skill": "outer",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "srv.mjs"
        ],
        "source_path": "$OUTER"
      }
    ],
    "profiles": [
      "X.yaml#inner"
    ],
    "runtime_release": "0.8.2",
    "skill_edges": [],
    "summary": "1 agent act",
    "unresolved_skill_edges": []
  },
  "remote": {
    "agent_acts": 0,
    "closure_digest": "sha256:9a162b33c11fdf9f9db4923f3a6c341f4e931d54a276b606868d0fb5a2acf4f6",
    "components": [
      "mcp:lookup"
    ],
    "declared_artifact": false,
    "direct_external_skill_edges": [],
    "fully_bound": true,
    "package_bindings": [
      {
        "package_digest": "sha256:6124470e63daf31de1493114144980f2c31976862da6e18a4027558aefe2f32d",
        "runner": "remote",
        "skill": "outer",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "srv.mjs"
        ],
        "source_path": "$OUTER"
      }
    ],
    "profiles": [
      "X.yaml#remote"
    ],
    "runtime_release": "0.8.2",
    "skill_edges": [],
    "summary": "mcp:lookup",
    "unresolved_skill_edges": []
  },
  "side": {
    "agent_acts": 0,
    "closure_digest": "sha256:f9855993f01e9dcd3d663d73f6bb6d11b47e5ffef8826564d7a6e2fe1c1c2da1",
    "components": [
      "cli-tool:node"
    ],
    "declared_artifact": false,
    "direct_external_skill_edges": [
      {
        "runner": "side",
        "skill": "other"
      }
    ],
    "fully_bound": false,
    "package_bindings": [
      {
        "package_digest": "sha256:e43c43c4a77d6c3bc597933e92fdc80ff68c1da1614bba1db0d6298f8c2d92ee",
        "runner": "side",
        "skill": "other",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "x.mjs"
        ],
        "source_path": "$OTHER"
      },
      {
        "package_digest": "sha256:6124470e63daf31de1493114144980f2c31976862da6e18a4027558aefe2f32d",
        "runner": "side",
        "skill": "outer",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "srv.mjs"
        ],
        "source_path": "$OUTER"
      }
    ],
    "profiles": [
      "../other/X.yaml#side",
      "X.yaml#side"
    ],
    "runtime_release": "0.8.2",
    "skill_edges": [
      "$input.target#default",
      "other#side"
    ],
    "summary": "cli-tool:node",
    "unresolved_skill_edges": [
      "$input.target#default"
    ]
  }
}"#;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, manual, profile, script) in [
        (
            "outer",
            "description: Note a topic.\n---\nNote the topic.",
            OUTER,
            "srv.mjs",
        ),
        (
            "other",
            "description: Note another topic.\n---\nNote it.",
            OTHER,
            "x.mjs",
        ),
    ] {
        let package = dir.path().join("skills").join(name);
        fs::create_dir_all(&package).unwrap();
        fs::write(
            package.join("SKILL.md"),
            format!("---\nname: {name}\n{manual}\n"),
        )
        .unwrap();
        fs::write(package.join("X.yaml"), profile).unwrap();
        fs::write(package.join(script), "console.log(\"{}\");\n").unwrap();
    }
    dir
}

fn inspect(root: &Path) -> Value {
    let output = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "inspect", "--json", "--repo-root"])
        .arg(root)
        .args(["--target-dir", "skills/outer"])
        .env("MINDRUNE_HOME", root.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .current_dir(root)
        .output()
        .unwrap();
    let context: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "lab inspect printed no JSON ({err}): {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    context["target_inspection"].clone()
}

#[test]
fn runners_reaching_local_skill_folders_and_mcp_carry_runx_execution_closures() {
    let dir = workspace();
    let skills = fs::canonicalize(dir.path().join("skills")).unwrap();
    let expected = RUNX_CLOSURES
        .replace("$OUTER", skills.join("outer").to_str().unwrap())
        .replace("$OTHER", skills.join("other").to_str().unwrap());
    let expected: Value = serde_json::from_str(&expected).unwrap();
    let inspection = inspect(dir.path());
    assert_eq!(inspection["status"], "ok", "{inspection}");
    for entry in inspection["runner_inspections"].as_array().unwrap() {
        let name = entry["runner"]["name"].as_str().unwrap();
        assert_eq!(
            entry["execution_closure"], expected[name],
            "runner {name}'s execution_closure"
        );
    }
    // The default runner's closure is printed at the top as well.
    assert_eq!(inspection["execution_closure"], expected["flow"]);
}

#[test]
fn a_graph_naming_a_local_folder_that_is_no_package_fails_the_whole_inspection() {
    // Runx: `runx skill inspect skills/outer --json` fails as a whole (`skill_error`: `runtime
    // I/O failed while reading <…>/skills/outer/../other: No such file or directory (os error
    // 2)`), the step's reference joined to the canonical package folder as written.
    let dir = workspace();
    fs::remove_dir_all(dir.path().join("skills/other")).unwrap();
    let outer = fs::canonicalize(dir.path().join("skills/outer")).unwrap();
    let inspection = inspect(dir.path());
    assert_eq!(
        inspection,
        serde_json::json!({"status": "failure", "error": {
            "message": format!(
                "runtime I/O failed while reading {}/../other: No such file or directory (os \
                 error 2)",
                outer.display()
            ),
            "code": "skill_error",
        }})
    );
}
