//! The real Runx's refusal texts (`shared/data/runx/oracle/`), reproduced by the Lab.
//!
//! The oracle files hold what Runx 0.8.2 printed for bad packages, plans, binds and applies,
//! measured beside MindRune. Each test here builds a bad input of the kind the oracle names
//! and checks that MindRune's refusal starts with Runx's line; where MindRune keeps its own
//! `file:line` it is the second line. The differences that remain are named in docs/lab.md.

use std::fs;
use std::path::{Path, PathBuf};

use mindrune_core::{
    Mode, assert_allowed_write_path, normalize_package_file, reject_secret_material,
};
use mindrune_engine::HarnessOptions;
use mindrune_engine::throwaway_sealer;
use mindrune_engine::{LabTools, validate_package};
use serde_json::Value;

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared")),
        PathBuf::from,
    )
}

fn oracle(name: &str) -> String {
    let path = shared().join("data/runx/oracle").join(name);
    fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED)",
            path.display()
        )
    })
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::write(&target, fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

/// A real package (plus our module, when it declares one) in a fresh folder.
fn package(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(name);
    copy_tree(&shared().join("data/runx/packages").join(name), &root);
    let modules = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/runx-modules")
        .join(name);
    if modules.is_dir() {
        copy_tree(&modules, &root);
    }
    (dir, root)
}

/// X.yaml with `line` inserted so that it becomes line `at` (1-based).
fn insert_line(root: &Path, file: &str, at: usize, line: &str) {
    let path = root.join(file);
    let text = fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(at - 1, line);
    fs::write(&path, lines.join("\n") + "\n").unwrap();
}

/// X.yaml with line `at` (1-based) rewritten by `edit`.
fn edit_line(root: &Path, file: &str, at: usize, edit: impl Fn(&str) -> String) {
    let path = root.join(file);
    let text = fs::read_to_string(&path).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(index, line)| {
            if index + 1 == at {
                edit(line)
            } else {
                line.to_owned()
            }
        })
        .collect();
    fs::write(&path, lines.join("\n") + "\n").unwrap();
}

/// What `lab validate` says of the package: the inspection's error.
fn refusal(root: &Path) -> String {
    let sealers = throwaway_sealer;
    let options = HarnessOptions::default();
    let mut tools = LabTools::new(&sealers, &options);
    let report: Value =
        validate_package(root, "pkg", "pkg", false, &mut tools, &sealers, &options).unwrap();
    assert_eq!(report["verdict"], "validation_failed", "{report}");
    report["inspect"]["error"].as_str().unwrap().to_owned()
}

#[test]
fn every_package_refusal_in_the_oracle_is_runx_text_word_for_word() {
    let expected: Vec<String> = oracle("package-refusals.txt")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect();
    assert_eq!(expected.len(), 10);

    let mut produced = Vec::new();
    let mut case = |name: &str, bad: &dyn Fn(&Path)| {
        let (_dir, root) = package(name);
        bad(&root);
        produced.push(refusal(&root));
    };
    case("web-fetch", &|root| {
        std::os::unix::fs::symlink("SKILL.md", root.join("LINK.md")).unwrap();
    });
    case("web-fetch", &|root| {
        fs::write(root.join("SKILL.md"), "# Web fetch\n\nNo frontmatter.\n").unwrap();
    });
    case("web-fetch", &|root| {
        insert_line(root, "X.yaml", 3, "bogus_field: true");
    });
    for at in [5, 6, 8] {
        case("web-fetch", &|root| {
            edit_line(root, "X.yaml", at, |line| {
                line.replacen(": ", ": &anchor ", 1)
            });
        });
    }
    case("skill-lab", &|root| insert_line(root, "X.yaml", 51, "---"));
    case("web-fetch", &|root| {
        insert_line(root, "X.yaml", 9, "  <<: {kind: graph}")
    });
    case("web-fetch", &|root| {
        insert_line(root, "X.yaml", 3, "version: \"0.4.1\"");
    });
    case("hello-world", &|root| {
        let text = fs::read_to_string(root.join("X.yaml")).unwrap();
        let at = text.lines().position(|line| line == "  default:").unwrap() + 2;
        insert_line(root, "X.yaml", at, "    bogus_runner_field: 1");
    });

    for (runx, ours) in expected.iter().zip(&produced) {
        let first = ours.lines().next().unwrap();
        // Two oracle lines were cut short when they were captured (they end in `\` and in
        // the middle of the field list): those match as prefixes.
        let truncated = runx.ends_with('\\') || runx.ends_with(", ");
        if truncated {
            let runx = runx.trim_end_matches('\\');
            assert!(first.starts_with(runx), "Runx: {runx}\nours: {ours}");
        } else {
            assert_eq!(first, runx, "\nours: {ours}");
        }
    }
    // The duplicate key, whose oracle line is cut, in full as the reference quotes it.
    assert!(
        produced[8].starts_with(
            "skill package validation failed: X.yaml: runner_manifest: YAML parse failed: duplicate mapping key \"version\" in X.yaml at line 3; keep profile keys unique.\n  at X.yaml:3:1: "
        ),
        "{}",
        produced[8]
    );
}

#[test]
fn a_declared_module_that_is_absent_is_invalid_in_runx_words() {
    let (_dir, root) = package("weather-forecast");
    fs::remove_file(root.join("weather-forecast.mjs")).unwrap();
    let text = refusal(&root);
    assert_eq!(
        text.lines().next(),
        Some(
            "skill package validation failed: weather-forecast.mjs: declared JavaScript module is missing"
        ),
        "{text}"
    );
    let (_dir, root) = package("hello-world");
    fs::remove_file(root.join("run.mjs")).unwrap();
    let text = refusal(&root);
    assert_eq!(
        text.lines().next(),
        Some(
            "skill package validation failed: run.mjs: declared execution sidecar is missing from the skill package"
        ),
        "{text}"
    );
}

/// The `runx:` lines of `apply-refusals.txt` (after Runx's `skill 'apply' failed: skill
/// 'runx.skill.apply' failed: ` wrapper) that admission decides, with the write that caused
/// each: MindRune's refusal leads with the same words, except `gh-token`, which Runx writes
/// and MindRune refuses (and says that it is stricter).
#[test]
fn apply_path_aux_and_secret_refusals_lead_with_runx_words() {
    let text = oracle("apply-refusals.txt");
    let runx_of = |case: &str| -> String {
        let mut lines = text
            .lines()
            .skip_while(|line| *line != format!("### {case}"));
        lines.next();
        let runx = lines.next().unwrap().trim_start();
        let runx = runx.strip_prefix("runx: ").unwrap();
        let (_, message) = runx.split_once("REFUSED ").unwrap_or(("", runx));
        message
            .trim_start_matches("skill 'apply' failed: ")
            .trim_start_matches("skill 'bind' failed: ")
            .trim_start_matches("skill 'runx.skill.apply' failed: ")
            .to_owned()
    };
    let admit = |path: &str, contents: &str| -> String {
        normalize_package_file(path)
            .and_then(|relative| {
                assert_allowed_write_path(&relative, false, Mode::Build)?;
                reject_secret_material(&relative, contents)?;
                Ok(relative)
            })
            .unwrap_err()
            .0
    };
    let key = ["-----BEGIN ", "OPENSSH PRIVATE KEY-----\nabc\n"].concat();
    for (case, path, contents) in [
        ("absolute-path", "/abs.md", "x"),
        ("backslash", "a\\b.md", "x"),
        ("dotdot-inside", "a/../b.md", "x"),
        ("path-escape", "../escape.md", "x"),
        ("readme-write", "README.md", "x"),
        ("changelog-write", "CHANGELOG.md", "x"),
        ("secret-in-skill-md", "SKILL.md", "token nskey_live_abc"),
        ("secret-private-key", "notes/key.pem", key.as_str()),
        ("nitrosend-key", "notes/provider.md", "nskey_test_abc"),
    ] {
        let ours = admit(path, contents);
        assert_eq!(
            ours.lines().next(),
            Some(runx_of(case).as_str()),
            "{case}: {ours}"
        );
    }
    // Runx applies a package file holding a GitHub token; MindRune refuses it and says why.
    assert!(text.contains("### gh-token\n  runx: rc=0 validated_and_applied"));
    let token = format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A");
    let ours = admit("notes/token.md", &token);
    assert!(
        ours.starts_with("refusing secret-like material in notes/token.md\n")
            && ours.contains("MindRune is stricter"),
        "{ours}"
    );
}
