//! Each runner's `input_schema`, `requirements` and `execution_closure` in the inspection, held
//! to what the real Runx printed.
//!
//! Each test lays out a package in a fresh scratch workspace, runs `mindrune lab inspect --json`
//! and compares `target_inspection` with what `runx skill inspect <package> --json` printed on
//! the same files (`$PACKAGE` stands for the package's absolute folder). The expected JSON was
//! observed from runx-cli 0.8.2 (`AutoMerchLab/runx` at commit
//! `3c8315b9baf67b318895cb06151f68e42bc3fe3a`, built by hand with the nightly toolchain, run by
//! hand on 2026-12-07); no Runx binary or recipe is kept.

use std::fs;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::lab_oracle_cases::{lay_out, shared};

/// `runx skill inspect skills/hello-world --json`'s `runner_inspections`, for the oracle's
/// `secret-in-notes` package (hello-world with its `run.mjs` and a `notes/key.pem`).
const HELLO_WORLD: &str = r#"[
  {
    "execution_closure": {
      "agent_acts": 0,
      "closure_digest": "sha256:acbb8bc92a817b07544ae05fba010c52bad4774f1310e35d246c9c5157d17ba0",
      "components": [
        "cli-tool:node"
      ],
      "declared_artifact": false,
      "direct_external_skill_edges": [],
      "fully_bound": true,
      "package_bindings": [
        {
          "package_digest": "sha256:5528d14c43800eba313495990d79c39c45bad10804b8d93778eb8c7733473b36",
          "runner": "default",
          "skill": "hello-world",
          "source_files": [
            "SKILL.md",
            "X.yaml",
            "notes/key.pem",
            "run.mjs"
          ],
          "source_path": "$PACKAGE"
        }
      ],
      "profiles": [
        "X.yaml#default"
      ],
      "runtime_release": "0.8.2",
      "skill_edges": [],
      "summary": "cli-tool:node",
      "unresolved_skill_edges": []
    },
    "runner": {
      "artifacts": {
        "named_emits": {
          "message": "message"
        }
      },
      "input_schema": {
        "additionalProperties": false,
        "examples": [
          {
            "message": "hello from docs"
          }
        ],
        "properties": {
          "message": {
            "description": "Message to print from the example skill.",
            "type": "string"
          }
        },
        "required": [
          "message"
        ],
        "type": "object"
      },
      "inputs": [
        {
          "description": "Message to print from the example skill.",
          "name": "message",
          "required": true,
          "schema": {
            "description": "Message to print from the example skill.",
            "type": "string"
          },
          "type": "string"
        }
      ],
      "name": "default",
      "outputs": [],
      "requirements": {},
      "type": "cli-tool"
    }
  }
]"#;

/// `runx skill inspect skills/web-fetch --json`'s `runner_inspections`, for
/// `shared/data/runx/packages/web-fetch`.
const WEB_FETCH: &str = r#"[
  {
    "execution_closure": {
      "agent_acts": 0,
      "closure_digest": "sha256:3f1d5abaee93cc3e7be153dcddad72d38461d1810f3394dca96364663697924e",
      "components": [
        "tool:web.fetch"
      ],
      "declared_artifact": false,
      "direct_external_skill_edges": [],
      "fully_bound": true,
      "package_bindings": [
        {
          "package_digest": "sha256:7456c64e8d03f6e2b9839b273224709df01c663b952a004b611ecf849f9153ef",
          "runner": "web-fetch",
          "skill": "web-fetch",
          "source_files": [
            "SKILL.md",
            "X.yaml",
            "fixtures/fetch-example-metadata.yaml",
            "fixtures/fetch-metadata-within-allowlist.yaml",
            "fixtures/fetch-missing-url-fails-preflight.yaml",
            "fixtures/fetch-text-within-allowlist.yaml"
          ],
          "source_path": "$PACKAGE"
        }
      ],
      "profiles": [
        "X.yaml#web-fetch"
      ],
      "runtime_release": "0.8.2",
      "skill_edges": [],
      "summary": "tool:web.fetch",
      "unresolved_skill_edges": []
    },
    "runner": {
      "input_schema": {
        "additionalProperties": false,
        "examples": [
          {
            "extract": "text",
            "url": "https://example.com/"
          }
        ],
        "properties": {
          "allowlist": {
            "default": [
              "*"
            ],
            "description": "Optional host restriction. Omit for any publicly routable host; use exact hosts or leading wildcards such as *.example.com to narrow the fetch and redirects.",
            "items": {
              "maxLength": 253,
              "minLength": 1,
              "type": "string"
            },
            "maxItems": 64,
            "minItems": 1,
            "type": "array",
            "uniqueItems": true
          },
          "extract": {
            "default": "text",
            "description": "Extraction mode: text, metadata, or links. Defaults to text.",
            "type": "string"
          },
          "max_bytes": {
            "default": 1000000,
            "description": "Positive cap on response bytes read; a clipped read is flagged truncated.",
            "maximum": 8388608,
            "minimum": 1,
            "type": "number"
          },
          "url": {
            "description": "Single public HTTP(S) URL to fetch.",
            "format": "uri",
            "pattern": "^https?://",
            "type": "string"
          }
        },
        "required": [
          "url"
        ],
        "type": "object"
      },
      "inputs": [
        {
          "description": "Optional host restriction. Omit for any publicly routable host; use exact hosts or leading wildcards such as *.example.com to narrow the fetch and redirects.",
          "name": "allowlist",
          "required": false,
          "schema": {
            "default": [
              "*"
            ],
            "description": "Optional host restriction. Omit for any publicly routable host; use exact hosts or leading wildcards such as *.example.com to narrow the fetch and redirects.",
            "items": {
              "maxLength": 253,
              "minLength": 1,
              "type": "string"
            },
            "maxItems": 64,
            "minItems": 1,
            "type": "array",
            "uniqueItems": true
          },
          "type": "array"
        },
        {
          "description": "Extraction mode: text, metadata, or links. Defaults to text.",
          "name": "extract",
          "required": false,
          "schema": {
            "default": "text",
            "description": "Extraction mode: text, metadata, or links. Defaults to text.",
            "type": "string"
          },
          "type": "string"
        },
        {
          "description": "Positive cap on response bytes read; a clipped read is flagged truncated.",
          "name": "max_bytes",
          "required": false,
          "schema": {
            "default": 1000000,
            "description": "Positive cap on response bytes read; a clipped read is flagged truncated.",
            "maximum": 8388608,
            "minimum": 1,
            "type": "number"
          },
          "type": "number"
        },
        {
          "description": "Single public HTTP(S) URL to fetch.",
          "name": "url",
          "required": true,
          "schema": {
            "description": "Single public HTTP(S) URL to fetch.",
            "format": "uri",
            "pattern": "^https?://",
            "type": "string"
          },
          "type": "string"
        }
      ],
      "name": "web-fetch",
      "outputs": [],
      "requirements": {
        "scopes": [
          "net:allowlist"
        ]
      },
      "type": "graph"
    }
  }
]"#;

/// The default runner's `input_schema` and the `execution_closure` Runx printed for a package
/// whose input `plan` is the packet `runx.test.plan.v1`, its schema (the file [`PLAN`]) at
/// `skills/demo/dist/packets/plan.json` below a workspace marker.
const PACKET_DEMO: &str = r#"{
  "execution_closure": {
    "agent_acts": 1,
    "closure_digest": "sha256:90af8ccc52e6bf97ea1edcb1d8e0ba0d265fbabaced6e966f19aab1903bf3682",
    "components": [],
    "declared_artifact": false,
    "direct_external_skill_edges": [],
    "fully_bound": true,
    "package_bindings": [
      {
        "input_packet_schemas": [
          {
            "packet": "runx.test.plan.v1",
            "schema_digest": "sha256:95e4be3dd072d5dc161dfc9d65b0ab40b99b49a85e152f6297d575be3c00f140"
          }
        ],
        "package_digest": "sha256:f0abf94c008a2b412e8ddfd7dd1bb849288c46a2a34722697bc8ee1308a2348d",
        "runner": "apply",
        "skill": "demo",
        "source_files": [
          "SKILL.md",
          "X.yaml",
          "dist/packets/plan.json"
        ],
        "source_path": "$PACKAGE"
      }
    ],
    "profiles": [
      "X.yaml#apply"
    ],
    "runtime_release": "0.8.2",
    "skill_edges": [],
    "summary": "1 agent act",
    "unresolved_skill_edges": []
  },
  "input_schema": {
    "additionalProperties": false,
    "examples": [
      {
        "plan": {
          "decision": "go"
        }
      }
    ],
    "properties": {
      "plan": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {
          "decision": {
            "type": "string"
          }
        },
        "required": [
          "decision"
        ],
        "type": "object",
        "x-runx-packet-id": "runx.test.plan.v1"
      }
    },
    "required": [
      "plan"
    ],
    "type": "object"
  }
}"#;

const PLAN: &str = r#"{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "x-runx-packet-id": "runx.test.plan.v1",
  "type": "object",
  "required": ["decision"],
  "properties": {"decision": {"type": "string"}}
}
"#;

/// `mindrune lab inspect --json`'s `target_inspection` of `skills/<name>` in `scratch`.
fn inspect(scratch: &Path, name: &str) -> Value {
    let output = Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "inspect", "--json", "--repo-root"])
        .arg(scratch)
        .args(["--target-dir", &format!("skills/{name}")])
        .env("MINDRUNE_HOME", scratch.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .current_dir(scratch)
        .output()
        .unwrap();
    let context: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "lab inspect printed no JSON ({err}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    context["target_inspection"].clone()
}

/// `expected` (Runx's JSON) with `$PACKAGE` replaced by the package's canonical folder.
fn runx_printed(expected: &str, package: &Path) -> Value {
    let folder = fs::canonicalize(package).unwrap();
    serde_json::from_str(&expected.replace("$PACKAGE", folder.to_str().unwrap())).unwrap()
}

/// Lays out `source` (under `shared/data/runx/`) at `skills/<name>` and checks the runner
/// inspections, and the default runner's, against Runx's.
fn assert_runner_inspections_match(source: &str, name: &str, expected: &str) {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("skills").join(name);
    lay_out(&shared().join("data/runx").join(source), &package);
    let inspection = inspect(dir.path(), name);
    let expected = runx_printed(expected, &package);
    assert_eq!(inspection["runner_inspections"], expected);
    assert_eq!(inspection["runner"], expected[0]["runner"]);
    assert_eq!(
        inspection["execution_closure"],
        expected[0]["execution_closure"]
    );
}

#[test]
fn hello_world_runner_carries_runx_input_schema_requirements_and_execution_closure() {
    assert_runner_inspections_match(
        "oracle/cases/secret-in-notes/package",
        "hello-world",
        HELLO_WORLD,
    );
}

#[test]
fn web_fetch_graph_runner_carries_runx_input_schema_requirements_and_execution_closure() {
    assert_runner_inspections_match("packages/web-fetch", "web-fetch", WEB_FETCH);
}

#[test]
fn a_packet_input_takes_its_packet_schema_and_binds_its_digest_in_the_closure() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("pnpm-workspace.yaml"), "packages: []\n").unwrap();
    let package = root.join("skills/demo");
    fs::create_dir_all(package.join("dist/packets")).unwrap();
    fs::write(package.join("dist/packets/plan.json"), PLAN).unwrap();
    fs::write(
        package.join("SKILL.md"),
        "---\nname: demo\ndescription: A demo.\n---\n\n### demo-apply\n\nApply it.\n",
    )
    .unwrap();
    fs::write(
        package.join("X.yaml"),
        "skill: demo\nrunners:\n  apply:\n    default: true\n    type: agent-task\n    \
         agent: builder\n    task: demo-apply\n    inputs:\n      plan:\n        type: json\n        \
         required: true\n        packet: runx.test.plan.v1\n    outputs:\n      done: boolean\n    \
         examples:\n      - plan: {decision: go}\nharness:\n  cases:\n    - name: apply-plan\n      \
         inputs:\n        plan: {decision: go}\n      caller:\n        answers:\n          \
         agent_task.demo-apply.output: {done: true}\n      expect:\n        status: sealed\n",
    )
    .unwrap();
    let inspection = inspect(root, "demo");
    let expected = runx_printed(PACKET_DEMO, &package);
    assert_eq!(
        inspection["runner"]["input_schema"],
        expected["input_schema"]
    );
    assert_eq!(
        inspection["execution_closure"],
        expected["execution_closure"]
    );
}
