//! Hostile and broken input at the command line: names that differ only in case, system
//! folders as workspaces, and event lines whose values have the wrong type.

use serde_json::json;

use crate::util::{TestLibrary, stderr};

#[test]
fn an_owner_or_agent_name_that_differs_only_in_case_is_refused_and_nothing_is_added() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let output = lib.run(&["owner", "add", "Ada"]);
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains("an owner named `ada` already exists") && err.contains("differ only in case"),
        "{err}"
    );
    let workspace = lib.dir.path().join("ws2");
    std::fs::create_dir_all(&workspace).unwrap();
    let output = lib.run(&[
        "agent",
        "add",
        "Buzz",
        "--owner",
        "ada",
        "--workspace",
        workspace.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("an agent named `buzz` already exists"),
        "{}",
        stderr(&output)
    );
    assert_eq!(lib.ok(&["owner", "list"]).lines().count(), 1);
    assert_eq!(lib.ok(&["agent", "list"]).lines().count(), 1);
}

#[test]
fn a_system_folder_is_refused_as_a_workspace() {
    let lib = TestLibrary::new();
    for folder in ["/etc", "/usr/lib", "/", "/tmp"] {
        let output = lib.run(&[
            "agent",
            "add",
            "buzz",
            "--owner",
            "ada",
            "--workspace",
            folder,
        ]);
        assert_eq!(output.status.code(), Some(1), "{folder}");
        let err = stderr(&output);
        assert!(
            err.contains(&format!("the workspace {folder} is a "))
                && err.contains("nothing was added"),
            "{folder}: {err}"
        );
    }
    // A symlink to one resolves to it first.
    let link = lib.dir.path().join("looks-harmless");
    std::os::unix::fs::symlink("/etc", &link).unwrap();
    let output = lib.run(&[
        "agent",
        "add",
        "buzz",
        "--owner",
        "ada",
        "--workspace",
        link.to_str().unwrap(),
    ]);
    assert!(
        stderr(&output).contains("/etc is a system folder"),
        "{}",
        stderr(&output)
    );
    assert!(lib.ok(&["agent", "list"]).is_empty());
}

#[test]
fn a_value_of_the_wrong_type_in_an_event_line_names_its_field() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let output = lib.record(&[
        json!({"agent": "buzz", "command": "bun bots/buzz/x.ts", "ok": "yes"}),
        json!({"agent": "buzz", "command": "bun bots/buzz/x.ts", "at": "99999-01-01T00:00:00Z"}),
        json!({"agent": "buzz", "command": "ls", "measures": {"xp": {"Mining": "lots"}}}),
    ]);
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines[0].contains(":1: error: field `ok`: invalid type"),
        "{err}"
    );
    assert!(lines[1].contains(":2: error: field `at`: "), "{err}");
    assert!(
        lines[2].contains(":3: error: field `measures.xp.Mining`: invalid type"),
        "{err}"
    );
}
