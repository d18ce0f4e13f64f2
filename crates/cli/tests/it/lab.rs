//! `mindrune lab` end to end, on the real binary and real packages.
//!
//! The four Runx packages (hello-world, web-fetch, weather-forecast, skill-lab) are read from
//! the project's shared data at test time (`$MINDRUNE_SHARED`, else `../shared` beside the
//! checkout) and copied into a temp workspace; the JavaScript modules Runx does not ship come
//! from the engine's test data. The package these tests build, `checklist-gate`, is our own: a
//! deterministic pass/hold/refused gate over a checklist and the evidence recorded for each
//! item, with a `type: javascript` runner, an operator manual and two fixtures. Its agent acts
//! are answered by `tests/data/lab/agent.sh` from the canned answers beside it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::util::{on_a_terminal, stderr, stdout};

/// `sha256("absent")`: Runx's digest of a package folder that does not exist.
const ABSENT_DIGEST: &str =
    "sha256:5ad38304b535c2987dbd24657c1a11b884984ff600d9f389deb0d4e634fee792";

/// The Runx packages in the shared data.
const REAL_PACKAGES: [&str; 4] = ["hello-world", "web-fetch", "weather-forecast", "skill-lab"];

/// The files of our own package, as its build draft writes them (in path order).
const CHECKLIST_GATE_FILES: [&str; 5] = [
    "SKILL.md",
    "X.yaml",
    "checklist-gate.mjs",
    "fixtures/all-required-evidenced-passes.yaml",
    "fixtures/claimed-without-evidence-holds.yaml",
];

const GATE: &str = "skills/checklist-gate";
const GATE_OBJECTIVE: &str =
    "Gate a release or hand-over on its checklist and the evidence recorded for each item.";

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    )
}

fn test_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lab")
}

/// Copies a folder recursively, giving every copy a plain writable mode (the shared files are
/// read-only), so a package's digest does not depend on where it was copied from.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    fs::set_permissions(to, fs::Permissions::from_mode(0o755)).unwrap();
    for entry in fs::read_dir(from).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            from.display()
        )
    }) {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).unwrap()).unwrap();
            fs::set_permissions(&target, fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// Every file under a folder (hidden ones included), relative path → (bytes, mode).
fn tree(dir: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, (Vec<u8>, u32)>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            let relative = format!("{prefix}{name}");
            if entry.file_type().unwrap().is_dir() {
                walk(&entry.path(), &format!("{relative}/"), files);
            } else {
                let mode = entry.metadata().unwrap().permissions().mode();
                files.insert(relative, (fs::read(entry.path()).unwrap(), mode));
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, "", &mut files);
    files
}

/// The names in a folder (hidden ones included).
fn names(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().into_string().unwrap())
                .collect()
        })
        .unwrap_or_default()
}

/// The package digest as runx.md §2.4 defines it, computed here independently of the lab:
/// `sha256(b"directory\0" ‖ per file: field(path) ‖ field(u32_be(st_mode)) ‖ field(bytes))`,
/// files in depth-first walk order with each folder's entries sorted by name.
fn runx_package_digest(dir: &Path) -> String {
    fn field(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<u8>) {
        let mut entries: Vec<String> = names(dir).into_iter().collect();
        entries.sort();
        for name in entries {
            if [".git", ".runx", "node_modules", "target"].contains(&name.as_str()) {
                continue;
            }
            let path = dir.join(&name);
            let relative = format!("{prefix}{name}");
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                walk(&path, &format!("{relative}/"), out);
            } else {
                field(out, relative.as_bytes());
                field(out, &meta.permissions().mode().to_be_bytes());
                field(out, &fs::read(&path).unwrap());
            }
        }
    }
    if !dir.exists() {
        return mindrune_core::sha256(b"absent");
    }
    let mut bytes = b"directory\0".to_vec();
    walk(dir, "", &mut bytes);
    mindrune_core::sha256(&bytes)
}

fn is_sha256_digest(value: &str) -> bool {
    value.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// Replaces every `<prefix><64 hex>` in `text` with `label`.
fn redact_hex(text: &str, prefix: &str, label: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        out.push_str(&rest[..at]);
        if hex == 64 {
            out.push_str(label);
            rest = &after[64..];
        } else {
            out.push_str(prefix);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The node binary is there (hello-world's runner is `command: node`).
fn node_available() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success())
}

/// A temp workspace to run `mindrune lab` in.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let workspace = Workspace {
            dir: tempfile::tempdir().unwrap(),
        };
        fs::create_dir_all(workspace.root().join("skills")).unwrap();
        workspace
    }

    /// A workspace holding the given real packages under `skills/`.
    /// A workspace laid out as Runx's repository: the packages under `skills/`, and the packet
    /// schemas weather-forecast and skill-lab declare under `dist/packets/` beside a
    /// `pnpm-workspace.yaml` (without them Runx's harness, and the Lab's, fails their cases).
    fn with_packages(packages: &[&str]) -> Workspace {
        let workspace = Workspace::new();
        for package in packages {
            workspace.add_package(package);
        }
        workspace.add_runx_packets();
        workspace
    }

    /// Runx's `dist/packets` for the shared packages. Runx's repository generates
    /// `runx.skill.*.schema.json` from the schemas in `shared/data/runx/schemas/` by adding
    /// `x-runx-packet-id` (the schema's `x-runx-schema`); weather-forecast's is the one the
    /// oracle's run had (a case's `workspace/dist/packets`).
    fn add_runx_packets(&self) {
        let packets = self.path("dist/packets");
        fs::create_dir_all(&packets).unwrap();
        fs::write(self.path("pnpm-workspace.yaml"), "packages: []\n").unwrap();
        let schemas = shared().join("data/runx/schemas");
        for entry in fs::read_dir(&schemas).unwrap() {
            let path = entry.unwrap().path();
            let mut schema: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            let id = schema["x-runx-schema"].clone();
            assert!(id.is_string(), "{} has no x-runx-schema", path.display());
            schema["x-runx-packet-id"] = id;
            fs::write(packets.join(path.file_name().unwrap()), schema.to_string()).unwrap();
        }
        copy_dir(
            &shared().join("data/runx/oracle/cases/js-import-ok/workspace/dist/packets"),
            &packets,
        );
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root().join(relative)
    }

    /// Copies a real package to `skills/<package>`, with our JavaScript module beside it when
    /// the package needs one.
    fn add_package(&self, package: &str) {
        let target = self.path(&format!("skills/{package}"));
        copy_dir(&shared().join("data/runx/packages").join(package), &target);
        let modules = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../engine/tests/data/runx-modules")
            .join(package);
        if modules.is_dir() {
            copy_dir(&modules, &target);
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
            .arg("lab")
            .args(args)
            .env("MINDRUNE_HOME", self.root().join(".home"))
            .env_remove("MINDRUNE_LOG")
            .env_remove("MINDRUNE_DATABASE_URL")
            .env_remove("MINDRUNE_LAB_CRASH_AT")
            .current_dir(self.root())
            .output()
            .unwrap()
    }

    /// Runs and expects `code`; returns stdout.
    fn expect(&self, code: i32, args: &[&str]) -> String {
        let output = self.run(args);
        assert_eq!(
            output.status.code(),
            Some(code),
            "mindrune lab {args:?}\nstdout:\n{}\nstderr:\n{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    }

    fn json(&self, code: i32, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let text = self.expect(code, &args);
        serde_json::from_str(&text).unwrap_or_else(|err| panic!("{err}: {text}"))
    }

    fn inspect(&self, target_dir: &str) -> Value {
        self.json(0, &["inspect", "--target-dir", target_dir])
    }

    fn digest(&self, target_dir: &str) -> String {
        self.inspect(target_dir)["base_digest"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The receipt files sealed so far.
    fn receipts(&self) -> BTreeSet<String> {
        names(&self.path(".runx/receipts"))
    }

    /// `lab verify --json` of a receipt id or path, with its exit code.
    fn verify(&self, reference: &str) -> (i32, Value) {
        let output = self.run(&["verify", reference, "--json"]);
        let value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|err| panic!("{err}: {}{}", stdout(&output), stderr(&output)));
        (output.status.code().unwrap(), value)
    }

    /// A fresh answers folder holding these act answers (by act task id), and the
    /// `--agent-cmd` that answers from it; the agent keeps each request it gets in `requests/`.
    fn agent(&self, name: &str, answers: &[(&str, &Value)]) -> (String, PathBuf) {
        let dir = self.root().join(".agents").join(name);
        let requests = dir.join("requests");
        fs::create_dir_all(&requests).unwrap();
        for (act, answer) in answers {
            fs::write(
                dir.join(format!("{act}.json")),
                serde_json::to_vec_pretty(answer).unwrap(),
            )
            .unwrap();
        }
        let command = format!(
            "sh '{}' '{}' '{}'",
            test_data().join("agent.sh").display(),
            dir.display(),
            requests.display()
        );
        (command, requests)
    }

    /// Runs a lab runner with an agent answering from `answers`; returns the output.
    fn lab_run(
        &self,
        runner: &str,
        target_dir: &str,
        answers: &Answers,
        extra: &[&str],
    ) -> (Output, PathBuf) {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (command, requests) = self.agent(
            &format!("{runner}-{run}"),
            &[
                ("skill-lab-architecture", &answers.architecture),
                ("skill-lab-author", &answers.author),
            ],
        );
        let mut args = vec![
            runner,
            "--target-dir",
            target_dir,
            "--objective",
            GATE_OBJECTIVE,
            "--agent-cmd",
            &command,
        ];
        args.extend_from_slice(extra);
        (self.run(&args), requests)
    }

    /// Builds checklist-gate from its canned answers and returns the build's stdout.
    fn build_gate(&self) -> String {
        let (output, _) = self.lab_run("build", GATE, &Answers::load("checklist-gate"), &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    }

    /// Human output with the workspace path, digests and receipt ids replaced.
    fn redact(&self, text: &str) -> String {
        let canonical = self.root().canonicalize().unwrap();
        let text = text
            .replace(canonical.to_str().unwrap(), "[WS]")
            .replace(self.root().to_str().unwrap(), "[WS]");
        let text = redact_hex(&text, "sha256-", "[RECEIPT]");
        redact_hex(&text, "sha256:", "[DIGEST]")
    }
}

/// The `receipt   <path>` line of a run's human output.
fn printed_receipt(out: &str) -> String {
    out.lines()
        .find_map(|line| line.strip_prefix("receipt   "))
        .unwrap_or_else(|| panic!("no receipt line in:\n{out}"))
        .to_owned()
}

/// The two agent answers of a scenario under `tests/data/lab/`.
#[derive(Clone)]
struct Answers {
    architecture: Value,
    author: Value,
}

impl Answers {
    fn load(scenario: &str) -> Answers {
        let read = |act: &str| -> Value {
            let path = test_data().join(scenario).join(format!("{act}.json"));
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap()
        };
        Answers {
            architecture: read("skill-lab-architecture"),
            author: read("skill-lab-author"),
        }
    }

    fn writes(&mut self) -> &mut Vec<Value> {
        self.author["change_draft"]["writes"]
            .as_array_mut()
            .unwrap()
    }

    /// The drafted files, path → contents.
    fn drafted(&self) -> BTreeMap<String, Vec<u8>> {
        self.author["change_draft"]["writes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|write| {
                (
                    write["path"].as_str().unwrap().to_owned(),
                    write["contents"].as_str().unwrap().as_bytes().to_vec(),
                )
            })
            .collect()
    }

    /// Replaces (or adds) one drafted file.
    fn with_write(mut self, path: &str, contents: &str) -> Answers {
        let writes = self.writes();
        writes.retain(|write| write["path"] != path);
        writes.push(json!({"path": path, "contents": contents}));
        self
    }
}

// --- inspect --------------------------------------------------------------------------------

#[test]
fn inspect_gives_each_real_package_a_stable_runx_digest_its_skill_name_and_the_whole_catalog() {
    let first = Workspace::with_packages(&REAL_PACKAGES);
    let second = Workspace::with_packages(&REAL_PACKAGES);
    for package in REAL_PACKAGES {
        let target = format!("skills/{package}");
        let context = first.inspect(&target);
        let digest = context["base_digest"].as_str().unwrap();
        assert!(is_sha256_digest(digest), "{package}: {digest}");
        // The digest is the package's bytes and modes, as §2.4 defines it: the same on every
        // run and in another workspace, and the same as an independent computation.
        assert_eq!(first.digest(&target), digest, "{package} on a second run");
        assert_eq!(
            second.digest(&target),
            digest,
            "{package} in another workspace"
        );
        assert_eq!(
            runx_package_digest(&first.path(&target)),
            digest,
            "{package}"
        );
        assert_eq!(context["target_dir"], target.as_str());
        assert_eq!(context["target_exists"], true);
        assert_eq!(context["schema"], "runx.skill_lab.authoring_context.v1");
        let inspection = &context["target_inspection"];
        assert_eq!(inspection["schema"], "runx.skill.inspect.v1", "{package}");
        assert_eq!(inspection["name"], package);
        assert_eq!(inspection["status"], "ok", "{package}");
        assert!(
            is_sha256_digest(inspection["package_digest"].as_str().unwrap()),
            "{inspection}"
        );
        assert_eq!(
            context["catalog_root"], "skills",
            "repo-relative, as Runx gives it"
        );
        let files: BTreeSet<String> = context["target_files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["path"].as_str().unwrap().to_owned())
            .collect();
        let on_disk: BTreeSet<String> = tree(&first.path(&target)).into_keys().collect();
        assert_eq!(files, on_disk, "{package}");

        let catalog: BTreeMap<String, String> = context["catalog_skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|skill| {
                assert_eq!(skill["status"], "ok", "{skill}");
                (
                    skill["name"].as_str().unwrap().to_owned(),
                    skill["path"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let expected: BTreeMap<String, String> = REAL_PACKAGES
            .iter()
            .map(|name| ((*name).to_owned(), format!("skills/{name}/X.yaml")))
            .collect();
        assert_eq!(catalog, expected);
    }

    // The human view says the same in lines.
    let out = first.expect(0, &["inspect", "--target-dir", "skills/web-fetch"]);
    let digest = first.digest("skills/web-fetch");
    assert!(
        out.starts_with(&format!(
            "skills/web-fetch\n  base_digest  {digest}\n  files        6 (12551 bytes, 0 executable lines)\n  skill        web-fetch 0.4.0\n"
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "  examples     4 for the default runner\n  catalog      4 skills in the workspace\n"
        ),
        "{out}"
    );
}

#[test]
fn inspect_digest_changes_after_a_byte_edit_and_after_a_chmod_and_comes_back_when_undone() {
    let workspace = Workspace::with_packages(&["weather-forecast"]);
    let target = "skills/weather-forecast";
    let original = workspace.digest(target);

    let manual = workspace.path(&format!("{target}/SKILL.md"));
    let bytes = fs::read(&manual).unwrap();
    let mut edited = bytes.clone();
    let last = edited.len() - 1;
    edited[last] ^= 0x01;
    fs::write(&manual, &edited).unwrap();
    let after_edit = workspace.digest(target);
    assert!(is_sha256_digest(&after_edit));
    assert_ne!(
        after_edit, original,
        "a one-byte edit must change the digest"
    );
    fs::write(&manual, &bytes).unwrap();
    assert_eq!(workspace.digest(target), original);

    let module = workspace.path(&format!("{target}/weather-forecast.mjs"));
    fs::set_permissions(&module, fs::Permissions::from_mode(0o755)).unwrap();
    let after_chmod = workspace.digest(target);
    assert_ne!(after_chmod, original, "the mode is part of the digest");
    assert_ne!(after_chmod, after_edit);
    assert_eq!(after_chmod, runx_package_digest(&workspace.path(target)));
    fs::set_permissions(&module, fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(workspace.digest(target), original);
}

#[test]
fn inspect_of_an_absent_target_reports_it_absent_with_the_absent_digest() {
    let workspace = Workspace::with_packages(&["web-fetch"]);
    let context = workspace.inspect("skills/not-yet");
    assert_eq!(context["target_exists"], false);
    assert_eq!(context["base_digest"], ABSENT_DIGEST);
    assert_eq!(
        runx_package_digest(&workspace.path("skills/not-yet")),
        ABSENT_DIGEST
    );
    assert_eq!(context["target_files"], json!([]));
    assert_eq!(context["target_metrics"]["files"], 0);
    assert_eq!(context["target_inspection"], Value::Null, "{context}");
    // The catalog is still the workspace's.
    assert_eq!(context["catalog_skills"][0]["name"], "web-fetch");

    let out = workspace.expect(0, &["inspect", "--target-dir", "skills/not-yet"]);
    assert_eq!(
        out,
        format!(
            "skills/not-yet\n  absent (a build would create it)\n  base_digest  {ABSENT_DIGEST}\n  files        0 (0 bytes, 0 executable lines)\n  catalog      1 skill in the workspace\n"
        )
    );
    assert!(!workspace.path("skills/not-yet").exists());
}

#[test]
fn inspect_of_an_invalid_profile_is_repair_context_naming_file_and_line() {
    let workspace = Workspace::with_packages(&["web-fetch", "hello-world"]);
    fs::write(
        workspace.path("skills/web-fetch/X.yaml"),
        "skill: web-fetch\nversion: \"0.4.0\"\nrunnerz:\n  fetch: {}\n",
    )
    .unwrap();
    // Exit 0: an invalid package is what an agent is asked to repair, not a failed inspection.
    let context = workspace.inspect("skills/web-fetch");
    let inspection = &context["target_inspection"];
    assert_eq!(inspection["status"], "invalid", "{inspection}");
    let error = inspection["error"].as_str().unwrap();
    // Runx's words, then MindRune's place.
    assert_eq!(
        error.lines().next(),
        Some(
            "skill package validation failed: X.yaml: runner_manifest.runnerz is not supported; allowed fields: skill, version, runx, policy, emits, catalog, credentials, input_definitions, runners, harness."
        ),
        "{error}"
    );
    assert!(
        error.contains("\n  at X.yaml:3: runnerz: unknown X.yaml top-level field"),
        "{error}"
    );
    assert!(is_sha256_digest(context["base_digest"].as_str().unwrap()));
    // The catalog lists the invalid package too, as Runx lists it: at its SKILL.md, without
    // the reason.
    let entry = context["catalog_skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|skill| skill["name"] == "web-fetch")
        .unwrap();
    assert_eq!(
        entry,
        &json!({"name": "web-fetch", "kind": "skill", "path": "skills/web-fetch/SKILL.md",
                "status": "invalid", "scopes": []})
    );

    let out = workspace.expect(0, &["inspect", "--target-dir", "skills/web-fetch"]);
    assert!(out.contains(&format!("  invalid      {error}\n")), "{out}");

    // A YAML syntax error opens with Runx's words (serde_norway's, as runx-cli 0.8.2 printed
    // them for this file), then names its line and column.
    fs::write(
        workspace.path("skills/web-fetch/X.yaml"),
        "skill: web-fetch\nrunners:\n  fetch: [1\n",
    )
    .unwrap();
    let context = workspace.inspect("skills/web-fetch");
    let error = context["target_inspection"]["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "skill package validation failed: X.yaml: runner_manifest: YAML parse failed: did \
             not find expected ',' or ']' at line 4 column 1, while parsing a flow sequence at \
             line 3 column 10\n  at X.yaml:4: column 1: invalid YAML"
        ),
        "{error}"
    );

    // Validation, unlike inspection, fails on it.
    let validation = workspace.json(1, &["validate", "--target-dir", "skills/web-fetch"]);
    assert_eq!(validation["verdict"], "validation_failed");
    assert_eq!(validation["inspect"]["status"], "failed");
    assert_eq!(validation["inspect"]["error"], error);
    assert_eq!(validation["harness"]["status"], "failed");
    assert_eq!(validation["harness"]["reason"], error);
}

// --- validate -------------------------------------------------------------------------------

#[test]
fn validate_replays_the_read_only_real_packages_and_calls_them_tested() {
    let workspace = Workspace::with_packages(&["web-fetch", "weather-forecast"]);
    for package in ["web-fetch", "weather-forecast"] {
        let target = format!("skills/{package}");
        let validation = workspace.json(0, &["validate", "--target-dir", &target]);
        assert_eq!(validation["verdict"], "tested", "{validation}");
        assert_eq!(validation["schema"], "runx.skill.validation.v1");
        // Runx's report fields, in Runx's meaning.
        assert_eq!(validation["requested_ref"], target.as_str());
        assert_eq!(validation["resolved_ref"], target.as_str());
        assert_eq!(validation["inspect"]["schema"], "runx.skill.inspect.v1");
        assert_eq!(validation["inspect"]["name"], package);
        assert_eq!(
            validation["base_digest"],
            workspace.digest(&target).as_str()
        );
        let harness = &validation["harness"];
        assert_eq!(harness["attempted"], true);
        assert_eq!(harness["status"], "passed", "{harness}");
        assert_eq!(harness["case_count"], 4);
        assert_eq!(harness["assertion_error_count"], 0);
        // Their four cases are `kind: skill` fixtures: Runx counts none as a graph case.
        assert_eq!(harness["graph_case_count"], 0);

        let out = workspace.expect(0, &["validate", "--target-dir", &target]);
        assert!(out.starts_with(&format!("{target}: tested\n")), "{out}");
        assert!(
            out.contains("  harness         passed: 4 cases, 0 assertion errors\n"),
            "{out}"
        );
    }
    // Without `dist/packets`, as Runx: weather-forecast's packet schema is not found, and the
    // three cases whose `validate` step succeeds fail there.
    fs::remove_dir_all(workspace.path("dist")).unwrap();
    let validation = workspace.json(1, &["validate", "--target-dir", "skills/weather-forecast"]);
    assert_eq!(validation["verdict"], "validation_failed", "{validation}");
    let reason = validation["harness"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("native harness failed: "), "{reason}");
    // As Runx's report, each names its status only; the step's error is in its receipt.
    assert_eq!(
        reason
            .matches(
                ": harness expectation mismatch at expect.status: expected sealed, actual failure"
            )
            .count(),
        3,
        "{reason}"
    );
    let receipts = crate::util::sealed_receipts(workspace.root());
    assert!(
        receipts.contains(
            "skill 'agent' failed: packet output 'weather_forecast_packet' for \
             'runx.context.weather_forecast.v1': declared packet schema was not found; searched "
        ),
        "{reason}"
    );
    let root = fs::canonicalize(workspace.root()).unwrap();
    let root = root.display();
    assert!(
        receipts.contains(&format!(
            "searched {root}/skills/weather-forecast/packets, {root}/packets, {root}/dist/packets"
        )),
        "{reason}"
    );
    // web-fetch declares none: nothing to find.
    let web = workspace.json(0, &["validate", "--target-dir", "skills/web-fetch"]);
    assert_eq!(web["verdict"], "tested", "{web}");
}

#[test]
fn the_catalog_lists_each_package_as_runx_lists_it() {
    let workspace = Workspace::with_packages(&REAL_PACKAGES);
    let context = workspace.inspect("skills/web-fetch");
    let entry = |name: &str| {
        context["catalog_skills"]
            .as_array()
            .unwrap()
            .iter()
            .find(|skill| skill["name"] == name)
            .cloned()
            .unwrap()
    };
    let skill_lab = entry("skill-lab");
    assert_eq!(skill_lab["kind"], "graph");
    assert_eq!(skill_lab["status"], "ok");
    assert_eq!(
        skill_lab["scopes"],
        json!(["fs.delete", "fs.read", "fs.write", "git.read"])
    );
    assert_eq!(skill_lab["fixtures"], 5);
    assert_eq!(skill_lab["harness_cases"], 2);
    assert_eq!(entry("web-fetch")["scopes"], json!(["net:allowlist"]));
    assert_eq!(entry("hello-world")["kind"], "skill");
    assert_eq!(entry("hello-world")["scopes"], json!([]));
    for tool in context["core_tools"].as_array().unwrap() {
        assert_eq!(
            (&tool["kind"], &tool["status"]),
            (&json!("tool"), &json!("ok")),
            "{tool}"
        );
    }
    // The inspection of the target is Runx's: the sorted runner names and the default runner.
    let inspection = &context["target_inspection"];
    assert_eq!(inspection["runners"], json!(["web-fetch"]), "{inspection}");
    assert_eq!(inspection["runner"]["name"], "web-fetch");
    assert_eq!(inspection["capabilities"]["execution"], "read");
}

#[test]
fn validate_replays_skill_lab_own_seven_cases_only_with_approval_to_execute() {
    let workspace = Workspace::with_packages(&["skill-lab"]);
    let before = tree(&workspace.path("skills/skill-lab"));
    let held = workspace.json(0, &["validate", "--target-dir", "skills/skill-lab"]);
    assert_eq!(held["verdict"], "needs_consequential_harness_approval");
    assert_eq!(held["harness"]["attempted"], false);
    let out = workspace.expect(0, &["validate", "--target-dir", "skills/skill-lab"]);
    assert!(
        out.contains("not replayed: the package executes; pass --allow-execute-harness"),
        "{out}"
    );

    let tested = workspace.json(
        0,
        &[
            "validate",
            "--target-dir",
            "skills/skill-lab",
            "--allow-execute-harness",
        ],
    );
    assert_eq!(tested["verdict"], "tested", "{}", tested["harness"]);
    assert_eq!(tested["harness"]["status"], "passed");
    assert_eq!(tested["harness"]["case_count"], 7);
    assert_eq!(tested["harness"]["assertion_error_count"], 0);
    // Its two inline cases run graph runners; its five fixtures are `kind: skill`.
    assert_eq!(tested["harness"]["graph_case_count"], 2);
    // Its fixtures build packages, but in scratch copies: the workspace is untouched.
    assert_eq!(tree(&workspace.path("skills/skill-lab")), before);
    assert_eq!(
        names(&workspace.path("skills")),
        BTreeSet::from(["skill-lab".to_owned()])
    );
    assert!(!workspace.path(".runx-tmp").exists());
}

#[test]
fn a_replay_shows_which_case_of_how_many_on_a_terminal_and_nothing_extra_when_piped() {
    let workspace = Workspace::with_packages(&["skill-lab"]);
    let args = [
        "validate",
        "--target-dir",
        "skills/skill-lab",
        "--allow-execute-harness",
    ];
    // Piped (as every other test runs it): stderr holds nothing.
    let piped = workspace.run(&args);
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert_eq!(stderr(&piped), "");

    // On a terminal: the bar names the case.
    let Some(seen) = on_a_terminal(
        &format!("lab {}", args.join(" ")),
        workspace.root(),
        &workspace.root().join(".home"),
    ) else {
        return;
    };
    assert!(seen.contains("case 1 of 7: "), "the bar is drawn: {seen}");
    // Its fixtures build packages and replay their harnesses too; those cases are not the
    // operator's, and never take over the bar.
    for (at, _) in seen.match_indices("case ") {
        let rest = &seen[at + 5..];
        let Some((n, rest)) = rest.split_once(" of ") else {
            continue;
        };
        if n.parse::<u32>().is_ok() {
            assert!(rest.starts_with("7: "), "{}", &seen[at..]);
        }
    }
}

#[test]
fn validate_replays_hello_world_without_approval_because_it_declares_no_execution() {
    // Runx's rule: only a catalog that declares `execution: execute` waits for approval;
    // hello-world's catalog declares no `execution`, so it replays as Runx replays it.
    let workspace = Workspace::with_packages(&["hello-world"]);
    if !node_available() {
        println!("skipping hello-world's harness replay: `node` is not installed");
        return;
    }
    let tested = workspace.json(0, &["validate", "--target-dir", "skills/hello-world"]);
    assert_eq!(tested["verdict"], "tested", "{}", tested["harness"]);
    assert_eq!(tested["harness"]["attempted"], true);
    assert_eq!(tested["harness"]["case_count"], 1);
    assert_eq!(
        tested["harness"]["case_names"],
        json!(["hello-world-smoke"])
    );
    assert_eq!(tested["harness"]["assertion_error_count"], 0);
    assert_eq!(tested["harness"]["graph_case_count"], 0);

    // Without its run.mjs, the package is invalid in Runx's words.
    fs::remove_file(workspace.path("skills/hello-world/run.mjs")).unwrap();
    let invalid = workspace.json(1, &["validate", "--target-dir", "skills/hello-world"]);
    assert_eq!(invalid["verdict"], "validation_failed");
    let error = invalid["inspect"]["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "skill package validation failed: run.mjs: declared execution sidecar is missing from the skill package\n"
        ),
        "{error}"
    );
}

// --- build, harness ---------------------------------------------------------------------------

#[test]
fn build_with_a_scripted_agent_writes_exactly_the_drafted_package_which_validates_and_verifies() {
    let workspace = Workspace::with_packages(&["web-fetch"]);
    let answers = Answers::load("checklist-gate");
    let (output, requests) = workspace.lab_run("build", GATE, &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{}", stderr(&output));
    insta::assert_snapshot!("build_human_output", workspace.redact(&out));

    // Exactly the drafted files, with the mode a new package file gets.
    let package = tree(&workspace.path(GATE));
    assert_eq!(
        package.keys().map(String::as_str).collect::<Vec<_>>(),
        CHECKLIST_GATE_FILES
    );
    let drafted = answers.drafted();
    assert_eq!(drafted.len(), package.len());
    for (path, (bytes, mode)) in &package {
        assert_eq!(Some(bytes), drafted.get(path), "{path}");
        assert_eq!(mode & 0o777, 0o644, "{path}");
    }
    // No staging folder is left beside it.
    assert_eq!(
        names(&workspace.path("skills")),
        BTreeSet::from(["checklist-gate".to_owned(), "web-fetch".to_owned()])
    );

    // The agent designed against the absent target and authored against the bound plan.
    let asked: Value = serde_json::from_slice(
        &fs::read(requests.join("skill-lab-architecture.request.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(asked["task"], "skill-lab-architecture");
    assert_eq!(asked["runner"], "build");
    assert_eq!(asked["inputs"]["objective"], GATE_OBJECTIVE);
    assert_eq!(asked["inputs"]["target_dir"], GATE);
    let context = &asked["context"]["authoring_context"];
    assert_eq!(context["target_exists"], false);
    assert_eq!(context["base_digest"], ABSENT_DIGEST);
    assert_eq!(context["catalog_skills"][0]["name"], "web-fetch");
    let asked: Value =
        serde_json::from_slice(&fs::read(requests.join("skill-lab-author.request.json")).unwrap())
            .unwrap();
    assert_eq!(asked["task"], "skill-lab-author");
    let plan = &asked["context"]["architecture_plan"];
    assert_eq!(plan["base_digest"], ABSENT_DIGEST);
    assert_eq!(
        plan["architecture"],
        answers.architecture["architecture_decision"]
    );
    assert!(is_sha256_digest(plan["plan_digest"].as_str().unwrap()));

    // The package validates on its own, without approval (it only reads).
    let validation = workspace.json(0, &["validate", "--target-dir", GATE]);
    assert_eq!(validation["verdict"], "tested", "{}", validation["harness"]);
    assert_eq!(validation["harness"]["case_count"], 2);
    assert_eq!(
        validation["harness"]["case_names"],
        json!([
            "all-required-evidenced-passes",
            "claimed-without-evidence-holds"
        ])
    );
    assert_eq!(validation["inspect"]["name"], "checklist-gate");
    let digest = workspace.digest(GATE);
    assert_eq!(validation["base_digest"], digest.as_str());
    assert!(
        out.contains(&format!("✓ apply     validated_and_applied → {digest}\n")),
        "{out}"
    );

    // The printed receipt verifies.
    let receipt = printed_receipt(&out);
    let verified = workspace.expect(0, &["verify", &receipt]);
    assert!(verified.starts_with("verified sha256:"), "{verified}");
    assert!(
        verified.contains("  seal         closed (skill_lab_applied)\n"),
        "{verified}"
    );
    // The build's receipt, and one per case `lab validate` replayed: a replay's receipts are
    // kept in the workspace's store, as Runx keeps them, and each verifies.
    assert_eq!(workspace.receipts().len(), 3);
    for id in validation["harness"]["receipt_ids"].as_array().unwrap() {
        let verified = workspace.expect(0, &["verify", id.as_str().unwrap()]);
        assert!(
            verified.contains("  seal         closed (process_closed)\n"),
            "{verified}"
        );
    }
}

#[test]
fn build_from_an_answers_file_writes_the_same_package_as_the_scripted_agent() {
    let workspace = Workspace::new();
    workspace.build_gate();
    let answers = Answers::load("checklist-gate");
    let file = workspace.path("answers.json");
    fs::write(
        &file,
        serde_json::to_vec(&json!({"answers": {
            "agent_task.skill-lab-architecture.output": answers.architecture,
            "agent_task.skill-lab-author.output": answers.author,
        }}))
        .unwrap(),
    )
    .unwrap();
    let result = workspace.json(
        0,
        &[
            "build",
            "--target-dir",
            "skills/gate-copy",
            "--objective",
            GATE_OBJECTIVE,
            "--answers",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(result["apply_result"]["verdict"], "validated_and_applied");
    assert_eq!(result["apply_result"]["target_dir"], "skills/gate-copy");
    // The digest is the package's content, not its place: both copies have the same one.
    assert_eq!(
        result["apply_result"]["package_digest"],
        workspace.digest(GATE).as_str()
    );
    assert_eq!(
        tree(&workspace.path("skills/gate-copy")),
        tree(&workspace.path(GATE))
    );
}

#[test]
fn a_second_identical_build_re_inspects_and_rewrites_the_same_bytes_against_the_new_base() {
    let workspace = Workspace::new();
    workspace.build_gate();
    let built = tree(&workspace.path(GATE));
    let first_digest = workspace.digest(GATE);

    let (output, requests) =
        workspace.lab_run("build", GATE, &Answers::load("checklist-gate"), &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    let apply = &result["apply_result"];
    // Not refused as stale: the run re-inspected, so its base is the package the first build
    // wrote, and the plan is a new one bound to that base.
    assert_eq!(apply["verdict"], "validated_and_applied", "{result}");
    assert_eq!(apply["base_digest"], first_digest.as_str());
    assert_eq!(apply["package_digest"], first_digest.as_str());
    assert_eq!(
        apply["validation"]["candidate_digest"],
        first_digest.as_str()
    );
    assert_eq!(apply["validation"]["delta"]["bytes"], 0);
    assert_eq!(apply["validation"]["delta"]["files"], 0);
    // Every drafted path is reported as written, though its bytes are what was there.
    assert_eq!(apply["changed_paths"], json!(CHECKLIST_GATE_FILES));
    let asked: Value = serde_json::from_slice(
        &fs::read(requests.join("skill-lab-architecture.request.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(asked["context"]["authoring_context"]["target_exists"], true);
    assert_eq!(
        asked["context"]["authoring_context"]["base_digest"],
        first_digest.as_str()
    );
    assert_eq!(tree(&workspace.path(GATE)), built);
    assert_eq!(workspace.receipts().len(), 2);
    let (code, verified) = workspace.verify(result["receipt_id"].as_str().unwrap());
    assert_eq!(code, 0, "{verified}");
    assert_eq!(verified["reason_code"], "skill_lab_applied");
}

#[test]
fn harness_mode_adds_a_fixture_and_replays_it_with_the_rest_of_the_package() {
    let workspace = Workspace::new();
    workspace.build_gate();
    let built = tree(&workspace.path(GATE));
    let answers = Answers::load("checklist-gate-harness");
    let (output, _) = workspace.lab_run("harness", GATE, &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{out}{}", stderr(&output));
    assert!(out.contains("✓ architect extend_existing\n"), "{out}");
    assert!(
        out.contains("✓ bind      write: 1 write, 0 deletes\n"),
        "{out}"
    );

    let after = tree(&workspace.path(GATE));
    let added = "fixtures/duplicate-id-refused.yaml";
    assert_eq!(
        after.get(added).map(|(bytes, _)| bytes),
        answers.drafted().get(added)
    );
    let mut rest = after.clone();
    rest.remove(added);
    assert_eq!(
        rest, built,
        "harness mode changes nothing but the new fixture"
    );

    let validation = workspace.json(0, &["validate", "--target-dir", GATE]);
    assert_eq!(validation["verdict"], "tested");
    assert_eq!(validation["harness"]["case_count"], 3);
    assert_eq!(
        validation["harness"]["case_names"][2],
        "duplicate-id-refused"
    );
    let (code, verified) = workspace.verify(&printed_receipt(&out));
    assert_eq!(code, 0, "{verified}");
}

#[test]
fn harness_mode_refuses_a_draft_touching_skill_md_and_leaves_the_package_byte_for_byte() {
    let workspace = Workspace::new();
    workspace.build_gate();
    let skills_before = tree(&workspace.path("skills"));
    let answers = Answers::load("checklist-gate-harness").with_write(
        "SKILL.md",
        "---\nname: checklist-gate\ndescription: A shorter gate.\n---\n\n# Checklist Gate\n\nGate things.\n",
    );
    let (output, _) = workspace.lab_run("harness", GATE, &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert!(
        out.contains(
            "apply refused: harness mode may only change fixtures/*.yaml files: SKILL.md\nnothing was written to the target\n"
        ),
        "{out}"
    );
    assert_eq!(tree(&workspace.path("skills")), skills_before);
    let (code, verified) = workspace.verify(&printed_receipt(&out));
    assert_eq!(code, 0, "{verified}");
    assert_eq!(verified["disposition"], "blocked");
    assert_eq!(verified["reason_code"], "skill_lab_apply_refused");
}

// --- refusals ---------------------------------------------------------------------------------

/// The hold fixture, rewritten to expect the wrong decision.
const WRONG_HOLD_FIXTURE: &str = "name: claimed-without-evidence-holds
kind: skill
target: ..
runner: gate
operator_journeys:
  - mode: composed
    request: The deploy step says the checklist is done; gate it before promotion.
    expected_outcome: A hold naming the required items that lack evidence.
    prior_evidence:
      - The completions recorded by the earlier deploy step.
    must_not_repeat:
      - Do not re-run or re-verify the recorded checks.
inputs:
  checklist:
    - id: backup-verified
      label: Restore from last night's backup verified
    - id: rollback-plan
      label: Rollback plan written and linked
  completions:
    - id: backup-verified
      evidence: restore drill ticket OPS-1207
    - id: rollback-plan
      evidence: \"\"
expect:
  status: sealed
  output:
    subset:
      decision: pass
";

#[test]
fn a_candidate_failing_its_own_harness_is_refused_naming_the_case_and_path_and_nothing_is_written()
{
    let workspace = Workspace::with_packages(&["web-fetch"]);
    let skills_before = tree(&workspace.path("skills"));
    let answers = Answers::load("checklist-gate").with_write(
        "fixtures/claimed-without-evidence-holds.yaml",
        WRONG_HOLD_FIXTURE,
    );
    let (output, _) = workspace.lab_run("build", GATE, &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert!(
        out.contains(
            "/fixtures/claimed-without-evidence-holds.yaml: harness expectation mismatch at expect.output.subset.decision: expected \"pass\", actual \"hold\"; receipt=sha256:"
        ),
        "{out}"
    );
    assert!(!workspace.path(GATE).exists());
    // No staging folder is left behind either.
    assert_eq!(tree(&workspace.path("skills")), skills_before);
    let (code, verified) = workspace.verify(&printed_receipt(&out));
    assert_eq!(code, 0, "{verified}");

    // In harness mode on an existing package: refused, and the package is as it was.
    workspace.build_gate();
    let skills_before = tree(&workspace.path("skills"));
    let mut answers = Answers::load("checklist-gate-harness");
    let fixture = answers.drafted()["fixtures/duplicate-id-refused.yaml"].clone();
    let wrong = String::from_utf8(fixture)
        .unwrap()
        .replace("decision: refused", "decision: hold");
    answers = answers.with_write("fixtures/duplicate-id-refused.yaml", &wrong);
    let (output, _) = workspace.lab_run("harness", GATE, &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert!(
        out.contains("/fixtures/duplicate-id-refused.yaml: harness expectation mismatch at expect.output.exact: expected {\"decision\":\"hold\""),
        "{out}"
    );
    assert_eq!(tree(&workspace.path("skills")), skills_before);
}

#[test]
fn without_an_agent_the_run_stops_with_exit_2_the_answers_template_and_a_sealed_receipt() {
    let workspace = Workspace::new();
    let out = workspace.expect(
        2,
        &["build", "--target-dir", GATE, "--objective", GATE_OBJECTIVE],
    );
    insta::assert_snapshot!("needs_agent_human_output", workspace.redact(&out));
    let template = json!({"answers": {"agent_task.skill-lab-architecture.output": {
        "architecture_decision": {
            "schema": "runx.skill.architecture_decision.v1",
            "...": "one runx.skill.architecture_decision.v1 as the skill-lab SKILL.md's `skill-lab-architecture` contract describes",
        }
    }}});
    assert!(
        out.contains(&serde_json::to_string_pretty(&template).unwrap()),
        "{out}"
    );
    // The request is kept for an agent to answer.
    let request_path = workspace.path(".runx/authoring/requests/build-skill-lab-architecture.json");
    assert!(
        out.contains(&format!(
            "request   {}\n",
            request_path.canonicalize().unwrap().display()
        )),
        "{out}"
    );
    let request: Value = serde_json::from_slice(&fs::read(&request_path).unwrap()).unwrap();
    assert_eq!(request["task"], "skill-lab-architecture");
    assert_eq!(request["inputs"]["objective"], GATE_OBJECTIVE);
    assert_eq!(
        request["context"]["authoring_context"]["base_digest"],
        ABSENT_DIGEST
    );
    assert_eq!(workspace.receipts().len(), 1);
    assert!(!workspace.path(GATE).exists());

    let result = workspace.json(
        2,
        &["build", "--target-dir", GATE, "--objective", GATE_OBJECTIVE],
    );
    assert_eq!(result["status"], "needs_agent");
    assert_eq!(result["act"], "skill-lab-architecture");
    assert_eq!(result["answers_template"], template);
    assert_eq!(result["request"], request);
    assert_eq!(
        result["steps"],
        json!([{"step": "inspect", "status": "sealed"}, {"step": "architect", "status": "needs_agent"}])
    );
    assert_eq!(workspace.receipts().len(), 2);
    let (code, verified) = workspace.verify(result["receipt_id"].as_str().unwrap());
    assert_eq!(code, 0, "{verified}");
    assert_eq!(verified["disposition"], "deferred");
    assert_eq!(verified["reason_code"], "skill_lab_needs_agent");
}

#[test]
fn an_agent_with_no_answer_for_the_author_act_stops_after_the_plan_with_nothing_written() {
    let workspace = Workspace::new();
    let answers = Answers::load("checklist-gate");
    let (command, _) = workspace.agent(
        "architect-only",
        &[("skill-lab-architecture", &answers.architecture)],
    );
    let result = workspace.json(
        2,
        &[
            "build",
            "--target-dir",
            GATE,
            "--objective",
            GATE_OBJECTIVE,
            "--agent-cmd",
            &command,
        ],
    );
    assert_eq!(result["status"], "needs_agent");
    assert_eq!(result["act"], "skill-lab-author");
    assert_eq!(
        result["request"]["context"]["architecture_plan"]["base_digest"],
        ABSENT_DIGEST
    );
    let steps: Vec<&str> = result["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["status"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["sealed", "sealed", "sealed", "needs_agent"]);
    assert!(!workspace.path(GATE).exists());
    let (code, _) = workspace.verify(result["receipt_id"].as_str().unwrap());
    assert_eq!(code, 0);
}

// --- receipts ---------------------------------------------------------------------------------

#[test]
fn every_terminal_path_seals_a_receipt_that_verifies() {
    let workspace = Workspace::new();
    let mut sealed = Vec::new();

    // Success.
    let out = workspace.build_gate();
    sealed.push((printed_receipt(&out), "closed", "skill_lab_applied"));

    // Refusal: a draft adding a README.
    let answers = Answers::load("checklist-gate").with_write("README.md", "# Checklist Gate\n");
    let (output, _) = workspace.lab_run("build", "skills/with-readme", &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}{}", stderr(&output));
    assert!(
        out.contains(
            "apply refused: README.md is auxiliary package bloat; keep operating guidance in SKILL.md\n"
        ),
        "{out}"
    );
    assert!(!workspace.path("skills/with-readme").exists());
    sealed.push((printed_receipt(&out), "blocked", "skill_lab_apply_refused"));

    // Refusal before the write, by plan admission: a public package without its journeys.
    let mut answers = Answers::load("checklist-gate");
    answers.architecture["architecture_decision"]["proof_plan"]
        .as_array_mut()
        .unwrap()
        .retain(|proof| proof["kind"] != "composed_operator_journey");
    let (output, _) = workspace.lab_run("build", "skills/unproven", &answers, &[]);
    let out = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "{out}");
    assert!(
        out.contains("plan refused: public architectures require selection_trial, standalone_operator_journey, and composed_operator_journey proofs\n"),
        "{out}"
    );
    sealed.push((printed_receipt(&out), "blocked", "skill_lab_plan_refused"));

    // Needs an agent.
    let out = workspace.expect(
        2,
        &[
            "build",
            "--target-dir",
            "skills/later",
            "--objective",
            GATE_OBJECTIVE,
        ],
    );
    sealed.push((printed_receipt(&out), "deferred", "skill_lab_needs_agent"));

    assert_eq!(workspace.receipts().len(), sealed.len());
    for (path, disposition, reason) in sealed {
        let (code, verified) = workspace.verify(&path);
        assert_eq!(code, 0, "{path}: {verified}");
        assert_eq!(verified["verdict"], "verified");
        assert_eq!(verified["disposition"], disposition, "{path}");
        assert_eq!(verified["reason_code"], reason, "{path}");
        // By id too.
        let id = verified["id"].as_str().unwrap();
        assert_eq!(workspace.verify(id).0, 0);
    }
}

/// Runx's closed list of reference types (`runx-contracts` `ReferenceType`), written here from
/// `shared/reference/runx-oracle.md` rather than taken from MindRune's code, so the test fails
/// if the code's list drifts from Runx's.
const RUNX_REFERENCE_TYPES: [&str; 41] = [
    "github_issue",
    "github_pull_request",
    "github_repo",
    "slack_thread",
    "sentry_event",
    "provider_thread",
    "provider_event",
    "provider_comment",
    "tracking_item",
    "change_request",
    "repository",
    "support_ticket",
    "signal",
    "act",
    "receipt",
    "graph_receipt",
    "artifact",
    "verification",
    "harness",
    "host",
    "deployment",
    "surface",
    "target",
    "opportunity",
    "thesis_assessment",
    "selection",
    "skill_binding",
    "target_transition_entry",
    "selection_cycle",
    "decision",
    "reflection_entry",
    "feed_entry",
    "principal",
    "authority_proof",
    "scope_admission",
    "grant",
    "mandate",
    "credential",
    "webhook_delivery",
    "redaction_policy",
    "external_url",
];

/// Where a `runx.receipt.v1` holds references, as `(path, reference)` pairs: Runx parses each
/// against the closed type list and refuses the whole receipt for one unknown type.
fn receipt_references(receipt: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    let mut single = |path: &str, value: &Value| {
        if !value.is_null() {
            found.push((path.to_owned(), value.clone()));
        }
    };
    single("subject.ref", &receipt["subject"]["ref"]);
    single("authority.actor_ref", &receipt["authority"]["actor_ref"]);
    single(
        "authority.mandate_ref",
        &receipt["authority"]["mandate_ref"],
    );
    single(
        "authority.attenuation.parent_authority_ref",
        &receipt["authority"]["attenuation"]["parent_authority_ref"],
    );
    for field in ["parent", "previous", "resume_ref"] {
        single(&format!("lineage.{field}"), &receipt["lineage"][field]);
    }
    let mut list = |path: &str, value: &Value| {
        for (index, item) in value.as_array().into_iter().flatten().enumerate() {
            found.push((format!("{path}[{index}]"), item.clone()));
        }
    };
    for field in ["grant_refs", "scope_refs", "authority_proof_refs"] {
        list(&format!("authority.{field}"), &receipt["authority"][field]);
    }
    for field in ["redaction_refs", "setup_refs", "teardown_refs"] {
        list(
            &format!("authority.enforcement.{field}"),
            &receipt["authority"]["enforcement"][field],
        );
    }
    list("signals", &receipt["signals"]);
    list("lineage.children", &receipt["lineage"]["children"]);
    for (index, criterion) in receipt["seal"]["criteria"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for field in ["evidence_refs", "verification_refs"] {
            list(
                &format!("seal.criteria[{index}].{field}"),
                &criterion[field],
            );
        }
    }
    for (index, act) in receipt["acts"].as_array().into_iter().flatten().enumerate() {
        for field in ["source_refs", "target_refs", "artifact_refs"] {
            list(&format!("acts[{index}].{field}"), &act[field]);
        }
        list(
            &format!("acts[{index}].intent.derived_from"),
            &act["intent"]["derived_from"],
        );
    }
    found
}

#[test]
fn every_receipt_the_lab_writes_parses_under_runx_closed_lists() {
    let workspace = Workspace::with_packages(&["web-fetch", "weather-forecast"]);
    // A run that applies (and its candidate's cases), a refusal, a wait for an agent, and the
    // harness cases `lab validate` replays into the workspace's store.
    workspace.build_gate();
    let answers = Answers::load("checklist-gate").with_write("README.md", "# Checklist Gate\n");
    let (output, _) = workspace.lab_run("build", "skills/with-readme", &answers, &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    workspace.expect(
        2,
        &[
            "build",
            "--target-dir",
            "skills/later",
            "--objective",
            GATE_OBJECTIVE,
        ],
    );
    let mut case_receipts = Vec::new();
    for target in [GATE, "skills/web-fetch", "skills/weather-forecast"] {
        let validation = workspace.json(0, &["validate", "--target-dir", target]);
        case_receipts.push(
            validation["harness"]["receipt_ids"]
                .as_array()
                .unwrap()
                .len(),
        );
    }
    // Runx seals no receipt for a case stopped at its inputs: web-fetch's missing-url case and
    // weather-forecast's missing-evidence case.
    assert_eq!(case_receipts, [2, 3, 3]);

    let store = workspace.path(".runx/receipts");
    let receipts: Vec<(String, Value)> = workspace
        .receipts()
        .into_iter()
        .filter(|name| name.starts_with("sha256-") && name.ends_with(".json"))
        .map(|name| {
            let text = fs::read_to_string(store.join(&name)).unwrap();
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect();
    assert!(receipts.len() >= 3 + 2 + 3 + 3, "{}", receipts.len());
    let mut subjects = BTreeSet::new();
    for (name, receipt) in &receipts {
        assert_eq!(receipt["schema"], "runx.receipt.v1", "{name}");
        // The issuer type under which `runx verify` checks the signature instead of refusing
        // it (`local` and `verifier` are refused even with the key).
        assert_eq!(receipt["issuer"]["type"], "hosted", "{name}");
        let references = receipt_references(receipt);
        assert!(references.len() >= 2, "{name}: {references:?}");
        for (path, reference) in references {
            let kind = reference["type"].as_str().unwrap_or_default();
            assert!(
                RUNX_REFERENCE_TYPES.contains(&kind),
                "{name}: {path}.type is {kind:?}, which runx verify refuses (unknown variant)"
            );
            assert!(
                reference["uri"].as_str().is_some_and(|uri| !uri.is_empty()),
                "{name}: {path}"
            );
        }
        subjects.insert(receipt["subject"]["kind"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        subjects,
        BTreeSet::from(["harness_case".to_owned(), "skill".to_owned()])
    );
}

#[test]
fn a_receipt_changed_by_one_byte_fails_verification_saying_it_was_changed_after_sealing() {
    let workspace = Workspace::new();
    let out = workspace.build_gate();
    let path = PathBuf::from(printed_receipt(&out));
    let original = fs::read(&path).unwrap();
    let (_, verified) = workspace.verify(path.to_str().unwrap());
    let id = verified["id"].as_str().unwrap().to_owned();

    // One byte of the signed body: the seal's reason code.
    let text = String::from_utf8(original.clone()).unwrap();
    let at = text.find("\"skill_lab_applied\"").unwrap() + "\"skill_lab_".len();
    let mut tampered = original.clone();
    tampered[at] = b'A';
    fs::write(&path, &tampered).unwrap();

    let (code, verdict) = workspace.verify(&id);
    assert_eq!(code, 1, "{verdict}");
    assert_eq!(verdict["verdict"], "invalid");
    let error = verdict["error"].as_str().unwrap();
    assert!(
        error.starts_with("receipt digest mismatch: the receipt records sha256:")
            && error.ends_with("; it was changed after it was sealed"),
        "{error}"
    );
    let human = workspace.expect(1, &["verify", path.to_str().unwrap()]);
    assert!(
        human.starts_with(&format!(
            "invalid receipt {}: receipt digest mismatch",
            path.display()
        )),
        "{human}"
    );

    fs::write(&path, &original).unwrap();
    assert_eq!(workspace.verify(&id).0, 0);
}

// --- bad input --------------------------------------------------------------------------------

#[test]
fn bad_cli_input_is_refused_before_anything_runs() {
    let workspace = Workspace::with_packages(&["web-fetch"]);
    for args in [
        vec!["inspect", "--target-dir", "../x"],
        vec!["validate", "--target-dir", "../x"],
        vec!["build", "--target-dir", "../x", "--objective", "anything"],
        vec![
            "build",
            "--target-dir",
            "skills/../../x",
            "--objective",
            "anything",
        ],
    ] {
        let output = workspace.run(&args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{args:?}: {}",
            stdout(&output)
        );
        assert!(
            stderr(&output).contains("target_dir must stay inside repo_root"),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    let answers = workspace.path("answers.json");
    fs::write(
        &answers,
        "{\"answers\": {\"agent_task.skill-lab-architecture.output\": ",
    )
    .unwrap();
    let output = workspace.run(&[
        "build",
        "--target-dir",
        GATE,
        "--objective",
        "anything",
        "--answers",
        answers.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "the answers file {} is not JSON",
            answers.display()
        )),
        "{}",
        stderr(&output)
    );
    let missing = workspace.path("no-such-answers.json");
    let output = workspace.run(&[
        "build",
        "--target-dir",
        GATE,
        "--objective",
        "anything",
        "--answers",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(&format!(
            "cannot read the answers file {}",
            missing.display()
        )),
        "{}",
        stderr(&output)
    );

    // None of these started a run: nothing was sealed or written.
    assert!(workspace.receipts().is_empty());
    assert_eq!(
        names(&workspace.path("skills")),
        BTreeSet::from(["web-fetch".to_owned()])
    );
    assert!(!workspace.root().parent().unwrap().join("x").exists());
}

// --- JavaScript worker ------------------------------------------------------------------------

/// A package whose one JavaScript runner doubles `value`, or, given `spin: true`, calls a
/// builtin that loops in C without ever reaching QuickJS's interrupt handler. Its one fixture
/// is the well-behaved case; [`add_spin_fixture`] adds the other.
fn add_spinning_package(workspace: &Workspace) -> PathBuf {
    let dir = workspace.path("skills/builtin-spin");
    fs::create_dir_all(dir.join("fixtures")).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: builtin-spin\ndescription: Double a number, or spin inside a builtin when asked to, so the harness's wall limit can be tested.\n---\n\n# Builtin spin\n\nDoubles `value`; with `spin` it calls `Array.prototype.join` on a huge array-like.\n",
    )
    .unwrap();
    fs::write(
        dir.join("X.yaml"),
        "skill: builtin-spin\nversion: \"0.1.0\"\n\ncatalog:\n  kind: skill\n  audience: public\n  visibility: internal\n  role: canonical\n  execution: read\n  completion: runtime_receipt\n  requires_adapter: false\n  approval: none\n\nrunners:\n  spin:\n    default: true\n    type: javascript\n    module: builtin-spin.mjs\n    export: run\n    timeout_seconds: 1\n    inputs:\n      value:\n        type: number\n        required: true\n        description: The number to double.\n      spin:\n        type: boolean\n        required: false\n        description: Loop inside a builtin instead.\n    outputs:\n      doubled: number\n",
    )
    .unwrap();
    fs::write(
        dir.join("builtin-spin.mjs"),
        "export function run(inputs) {\n  if (inputs.spin === true) {\n    return { doubled: Array.prototype.join.call({ length: 2 ** 53 - 1 }, \"\").length };\n  }\n  return { doubled: inputs.value * 2 };\n}\n",
    )
    .unwrap();
    fs::write(
        dir.join("fixtures/doubles.yaml"),
        "name: doubles\nkind: skill\ntarget: ..\nrunner: spin\ninputs:\n  value: 21\nexpect:\n  status: sealed\n  output:\n    exact:\n      doubled: 42\n",
    )
    .unwrap();
    dir
}

fn add_spin_fixture(dir: &Path) {
    fs::write(
        dir.join("fixtures/spins.yaml"),
        "name: spins\nkind: skill\ntarget: ..\nrunner: spin\ninputs:\n  value: 1\n  spin: true\nexpect:\n  status: sealed\n  output:\n    exact:\n      doubled: 0\n",
    )
    .unwrap();
}

/// Runs `mindrune lab <args>` but gives up (killing it) after `limit`, so a regression fails
/// the test instead of hanging it.
fn run_within(
    workspace: &Workspace,
    args: &[&str],
    limit: std::time::Duration,
) -> (Output, std::time::Duration) {
    use std::io::Read as _;
    let began = std::time::Instant::now();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .arg("lab")
        .args(args)
        .env("MINDRUNE_HOME", workspace.root().join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_LAB_CRASH_AT")
        .current_dir(workspace.root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Drained on threads so a full pipe cannot stall the child while we poll it.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        out.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        err.read_to_end(&mut bytes).unwrap();
        bytes
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if began.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("mindrune lab {args:?} still ran after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let elapsed = began.elapsed();
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (output, elapsed)
}

#[test]
fn a_module_looping_inside_a_builtin_fails_its_case_at_the_wall_limit_instead_of_hanging_the_lab() {
    let workspace = Workspace::new();
    let dir = add_spinning_package(&workspace);
    let target = "skills/builtin-spin";
    // Well behaved, the module passes through the worker.
    let tested = workspace.json(0, &["validate", "--target-dir", target]);
    assert_eq!(tested["verdict"], "tested", "{tested}");
    assert_eq!(tested["harness"]["status"], "passed", "{tested}");

    add_spin_fixture(&dir);
    let limit = std::time::Duration::from_secs(30);
    let (output, elapsed) = run_within(
        &workspace,
        &["validate", "--target-dir", target, "--json"],
        limit,
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    // One second of wall (the runner's timeout_seconds), one of worker start-up, and the rest
    // is the other case and process start-up.
    assert!(
        elapsed < std::time::Duration::from_secs(10),
        "took {elapsed:?}"
    );
    let validation: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(validation["verdict"], "validation_failed", "{validation}");
    let harness = &validation["harness"];
    assert_eq!(harness["case_count"], 2);
    // As Runx's report of a fixture file, the first mismatch only, after the fixture's path
    // and followed by what its receipt says; the failing fixture is not listed.
    let errors = harness["assertion_errors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(errors.len(), 1, "only the spinning case fails: {harness}");
    let error = errors[0].as_str().unwrap_or_default();
    let (head, tail) = error.split_once("; receipt=sha256:").unwrap_or_default();
    assert_eq!(
        head,
        format!(
            "{}: harness expectation mismatch at expect.status: expected sealed, actual \
             failure",
            dir.join("fixtures/spins.yaml").display()
        ),
        "{harness}"
    );
    assert!(
        tail.contains(
            "; disposition=Failed; reason=process_failed; summary=step spin completed; \
             skill_value=; skill_failure="
        ),
        "{harness}"
    );
    assert_eq!(harness["case_names"], json!(["doubles"]), "{harness}");
    assert!(
        crate::util::sealed_receipts(workspace.root())
            .contains("javascript builtin-spin.mjs#run: wall limit of 1000 ms reached"),
        "{harness}"
    );

    let (output, _) = run_within(&workspace, &["validate", "--target-dir", target], limit);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains(
            "fixtures/spins.yaml: harness expectation mismatch at expect.status: expected sealed, \
             actual failure; receipt="
        ),
        "{}",
        stdout(&output)
    );
}

#[test]
fn the_hidden_js_worker_answers_one_request_on_stdin() {
    use std::io::Write as _;
    let request = json!({
        "bundle": {"main.mjs": "export default (inputs, context) => ({ sum: inputs.a + inputs.b, region: context.environment.REGION ?? null });"},
        "entry": "main.mjs",
        "export": "default",
        "inputs": {"a": 2, "b": 3},
        "environment": {"REGION": "eu"},
        "limits": {"wall_ms": 2000, "heap_bytes": 67_108_864},
    });
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "js-worker"])
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer, json!({"ok": {"sum": 5, "region": "eu"}}));

    // It is internal: `mindrune lab --help` does not offer it.
    let help = std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .args(["lab", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success());
    assert!(!stdout(&help).contains("js-worker"), "{}", stdout(&help));
}

#[test]
fn an_agent_command_whose_decision_is_refused_is_asked_once_more_with_the_refusal() {
    let workspace = Workspace::new();
    let answers = test_data().join("checklist-gate");
    let asked = workspace.root().join("asked");
    // The first architecture answer is not a decision; asked again, the request carries the
    // refusal, and the agent answers right.
    let script = format!(
        "request=$(cat); echo \"$MINDRUNE_LAB_ACT\" >> '{asked}'; \
         if [ \"$MINDRUNE_LAB_ACT\" = skill-lab-architecture ] && ! printf '%s' \"$request\" | grep -q '\"refused\"'; then \
           echo '{{\"architecture_decision\": {{\"schema\": \"runx.skill.architecture_decision.v0\"}}}}'; \
         else cat '{answers}'/\"$MINDRUNE_LAB_ACT\".json; fi",
        asked = asked.display(),
        answers = answers.display()
    );
    let result = workspace.json(
        0,
        &[
            "build",
            "--target-dir",
            GATE,
            "--objective",
            GATE_OBJECTIVE,
            "--agent-cmd",
            &script,
        ],
    );
    assert_eq!(
        result["apply_result"]["verdict"], "validated_and_applied",
        "{result:#}"
    );
    let asked = fs::read_to_string(&asked).unwrap();
    assert_eq!(
        asked.lines().collect::<Vec<_>>(),
        [
            "skill-lab-architecture",
            "skill-lab-architecture",
            "skill-lab-author"
        ]
    );
}
