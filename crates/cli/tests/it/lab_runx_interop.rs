//! `mindrune lab` against Runx's answers where the oracle cases hold only a decision: receipts
//! read without a verifier key both ways, and refusals said once.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::util::{stderr, stdout};

fn shared() -> PathBuf {
    std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    )
}

fn lab(root: &Path, args: &[&str]) -> Output {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("mindrune"))
        .arg("lab")
        .args(args)
        .env("MINDRUNE_HOME", root.join(".home"))
        .env_remove("MINDRUNE_LOG")
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_LAB_CRASH_AT")
        .env_remove("MINDRUNE_LAB_SIGNING_KEY")
        .current_dir(root)
        .output()
        .unwrap()
}

/// `lab verify --allow-local-development-signatures --json` of `receipt` (copied into a fresh
/// workspace with no key), its exit code and answer; the workspace must still have no key.
fn verify_without_key(receipt: &[u8]) -> (i32, Value) {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("receipt.json");
    fs::write(&path, receipt).unwrap();
    let repo_root = root.path().to_str().unwrap();
    let output = lab(
        root.path(),
        &[
            "verify",
            path.to_str().unwrap(),
            "--repo-root",
            repo_root,
            "--allow-local-development-signatures",
            "--json",
        ],
    );
    let value: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}{}", stdout(&output), stderr(&output)));
    assert!(
        !root.path().join(".runx/keys").exists(),
        "verifying made a key"
    );
    (output.status.code().unwrap(), value)
}

fn runx_receipt() -> Vec<u8> {
    fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/data/runx-receipt-success.json"),
    )
    .unwrap()
}

/// A receipt Runx wrote in local-development mode (`sig:<digest>`), read without a key: Runx
/// calls it valid in local-development mode and `unverified` in its history; the Lab checks
/// the same three things without needing a MindRune key, and says `unverified`.
#[test]
fn a_runx_receipt_without_a_key_reads_unverified_and_needs_no_mindrune_key() {
    let (code, answer) = verify_without_key(&runx_receipt());
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer["verdict"], "unverified", "{answer}");
    assert_eq!(answer["signature_mode"], "local-development");
    assert_eq!(answer["runx_without_verifier"], "unverified");
    assert_eq!(answer["kid"], "fixture-key");
    assert!(
        answer["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains("pseudo-signature")),
        "{answer}"
    );
    assert!(answer.get("public_key_base64").is_none(), "{answer}");

    // One byte changed: the digest no longer holds, key or not.
    let text = String::from_utf8(runx_receipt()).unwrap();
    let tampered = text.replacen(
        "cli-tool exited successfully",
        "cli-tool exited successfullX",
        1,
    );
    let (code, answer) = verify_without_key(tampered.as_bytes());
    assert_eq!(code, 1, "{answer}");
    assert_eq!(answer["verdict"], "invalid");
    assert_eq!(answer["runx_without_verifier"], "invalid");
}

/// Without the flag and without a key the Lab refuses, as `runx verify` does without a verifier
/// (oracle case `receipt-no-verifier`), and names the flag.
#[test]
fn a_receipt_without_a_key_or_the_flag_is_refused_naming_the_flag() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("receipt.json");
    fs::write(&path, runx_receipt()).unwrap();
    let output = lab(
        root.path(),
        &[
            "verify",
            path.to_str().unwrap(),
            "--repo-root",
            root.path().to_str().unwrap(),
            "--json",
        ],
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("--allow-local-development-signatures"),
        "{}",
        stderr(&output)
    );
}

/// A receipt the Lab sealed (Ed25519, issuer `hosted`), read without its key: Runx's
/// local-development check accepts only `sig:` and marks it `invalid` (`signature_malformed`);
/// the Lab gives the same verdict and says why.
#[test]
fn a_lab_receipt_without_its_key_reads_invalid_as_in_runx() {
    let receipt =
        fs::read(shared().join("data/runx/oracle/cases/receipt-no-verifier/receipt.json"))
            .unwrap_or_else(|err| panic!("{err} (set MINDRUNE_SHARED)"));
    let (code, answer) = verify_without_key(&receipt);
    assert_eq!(code, 1, "{answer}");
    assert_eq!(answer["verdict"], "invalid");
    assert_eq!(answer["signature_mode"], "local-development");
    assert_eq!(answer["runx_without_verifier"], "invalid");
    assert!(
        answer["error"]
            .as_str()
            .is_some_and(|error| error.starts_with("signature_malformed: ")),
        "{answer}"
    );
}

/// A symlinked file in a package is refused once: in `lab inspect`'s error and in
/// `lab validate`'s answer the refusal appears a single time, not again as its own cause.
#[test]
fn a_symlink_refusal_is_printed_once() {
    let root = tempfile::tempdir().unwrap();
    let package = root.path().join("skills/linked");
    fs::create_dir_all(&package).unwrap();
    fs::write(
        package.join("SKILL.md"),
        "---\nname: linked\n---\nA package.\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("SKILL.md", package.join("link.md")).unwrap();
    let repo_root = root.path().to_str().unwrap();
    let refusal = "link.md: symbolic links are not valid skill package sources";
    for (args, code) in [
        (
            vec![
                "inspect",
                "--repo-root",
                repo_root,
                "--target-dir",
                "skills/linked",
            ],
            1,
        ),
        (
            vec![
                "validate",
                "--repo-root",
                repo_root,
                "--target-dir",
                "skills/linked",
            ],
            1,
        ),
    ] {
        let output = lab(root.path(), &args);
        let all = format!("{}{}", stdout(&output), stderr(&output));
        assert_eq!(output.status.code(), Some(code), "{args:?}: {all}");
        assert_eq!(all.matches(refusal).count(), 1, "{args:?}: {all}");
    }
}

/// A cause the error's message already quotes (`cannot read X: Not a directory`) is printed
/// once, not again as the error's cause.
#[test]
fn a_read_error_names_its_cause_once() {
    let root = tempfile::tempdir().unwrap();
    fs::create_dir_all(root.path().join("skills")).unwrap();
    fs::write(root.path().join("skills/file"), "not a folder\n").unwrap();
    let output = lab(
        root.path(),
        &[
            "inspect",
            "--repo-root",
            root.path().to_str().unwrap(),
            "--target-dir",
            "skills/file/sub",
        ],
    );
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.starts_with("error: cannot read "), "{text}");
    assert_eq!(text.matches("Not a directory").count(), 1, "{text}");
}
