//! The human's side of playbook skills, through the real binary: proposing, the inbox, answering
//! cards, and bad input that changes nothing.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

use crate::util::{stderr, stdout, visible_files};

/// A workspace in a temp home, set up with `playbook init`.
struct Assistant {
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

impl Assistant {
    fn new(unattended: bool) -> Assistant {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let workspace = home.join("assistant");
        let assistant = Assistant {
            _dir: dir,
            home,
            workspace,
        };
        let mut args = vec!["playbook", "init"];
        if unattended {
            args.push("--unattended");
        }
        assistant.ok(&args);
        assistant
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("mindrune").unwrap();
        cmd.env("MINDRUNE_WORKSPACE", &self.workspace)
            .env("HOME", &self.home)
            .env_remove("MINDRUNE_DATABASE_URL");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            output.status.success(),
            "{args:?} failed: {}",
            stderr(&output)
        );
        stdout(&output)
    }

    fn fails(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(
            !output.status.success(),
            "{args:?} succeeded: {}",
            stdout(&output)
        );
        stderr(&output)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.home.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    fn propose(&self, name: &str, text: &str) -> Output {
        let file = self.write(&format!("{name}.md").replace('/', "_"), text);
        self.run(&[
            "playbook",
            "propose",
            name,
            "--file",
            file.to_str().unwrap(),
        ])
    }

    /// Output with the temp folder and times made stable, for snapshots.
    fn stable(&self, text: &str) -> String {
        let text = text.replace(&self.workspace.display().to_string(), "[workspace]");
        let mut out = String::new();
        let bytes = text.as_bytes();
        let mut index = 0;
        while index < bytes.len() {
            if is_timestamp(&bytes[index..]) {
                out.push_str("[time]");
                index += 20;
            } else {
                let ch = text[index..].chars().next().unwrap();
                out.push(ch);
                index += ch.len_utf8();
            }
        }
        out
    }
}

/// `2026-11-30T04:25:59Z` at the start of the bytes.
fn is_timestamp(bytes: &[u8]) -> bool {
    const SHAPE: &[u8] = b"0000-00-00T00:00:00Z";
    bytes.len() >= SHAPE.len()
        && SHAPE.iter().zip(bytes).all(|(shape, byte)| match shape {
            b'0' => byte.is_ascii_digit(),
            other => other == byte,
        })
}

const WEEKLY: &str = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists under notes/\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\nexpected_result: reports/weekly.md exists\n---\nRead the notes, then write the report.\n";

fn files(path: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    visible_files(path)
}

#[test]
fn a_proposed_skill_waits_in_the_inbox_until_approved() {
    let assistant = Assistant::new(false);
    let output = assistant.propose("weekly-report", WEEKLY);
    assert!(output.status.success(), "{}", stderr(&output));
    insta::assert_snapshot!("propose", stdout(&output));
    insta::assert_snapshot!("inbox_waiting", assistant.stable(&assistant.ok(&["inbox"])));
    insta::assert_snapshot!(
        "card_show_create",
        assistant.stable(&assistant.ok(&["card", "show", "1"]))
    );
    insta::assert_snapshot!("card_approve", assistant.ok(&["card", "approve", "1"]));
    assert_eq!(assistant.ok(&["inbox"]), "Nothing waits for you.\n");
    let carried = assistant.ok(&["playbook", "carried"]);
    assert_eq!(
        carried,
        "weekly-report: a week of notes exists under notes/\n"
    );
    let search = assistant.ok(&["playbook", "search", "reports"]);
    assert_eq!(
        search,
        "weekly-report — a week of notes exists under notes/ (carried)\n"
    );
}

#[test]
fn a_card_answered_twice_says_how_it_was_answered_and_changes_nothing() {
    let assistant = Assistant::new(false);
    assistant.propose("weekly-report", WEEKLY);
    assistant.ok(&["card", "approve", "1"]);
    let before = files(&assistant.workspace);
    let message = assistant.fails(&["card", "approve", "1"]);
    assert!(
        message.contains("card #1 was already answered (applied by human at "),
        "{message}"
    );
    let message = assistant.fails(&["card", "reject", "1", "--reason", "no"]);
    assert!(message.contains("already answered"), "{message}");
    assert_eq!(files(&assistant.workspace), before);
    let message = assistant.fails(&["card", "approve", "9"]);
    assert_eq!(message, "error: there is no card #9\n");
}

#[test]
fn a_turned_down_draft_keeps_the_reason_beside_it_and_the_door_repeats_it() {
    let assistant = Assistant::new(false);
    assistant.propose("weekly-report", WEEKLY);
    let message = assistant.fails(&["card", "reject", "1", "--reason", "  "]);
    assert!(message.contains("say why you turn it down"), "{message}");
    assistant.ok(&[
        "card",
        "reject",
        "1",
        "--reason",
        "I write that report myself",
    ]);
    let reason = std::fs::read_to_string(
        assistant
            .workspace
            .join("skills/rejected/weekly-report/REASON.md"),
    )
    .unwrap();
    assert!(reason.contains("I write that report myself"), "{reason}");
    let again = assistant.propose("weekly-report", WEEKLY);
    assert!(!again.status.success());
    insta::assert_snapshot!("proposed_again_after_rejection", stderr(&again));
}

#[test]
fn bad_skill_files_are_refused_with_their_line_and_leave_the_workspace_as_it_was() {
    let assistant = Assistant::new(false);
    let before = files(&assistant.workspace);
    let bomb = "---\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n---\n";
    let huge = format!("---\ntrigger: t\n---\n{}", "x".repeat(10 * 1024 * 1024));
    let cases: [(&str, String, &str); 6] = [
        (
            "not-yaml",
            "---\ntrigger: [unclosed\n---\nbody\n".into(),
            "line",
        ),
        ("alias-bomb", bomb.into(), "line 2"),
        (
            "duplicate",
            "---\ntrigger: a\ntrigger: b\n---\n".into(),
            "trigger",
        ),
        ("huge", huge, "262144"),
        ("a/b", WEEKLY.into(), "is a path, not a name"),
        ("..", WEEKLY.into(), "is a path, not a name"),
    ];
    for (name, text, needle) in cases {
        let output = assistant.propose(name, &text);
        assert!(!output.status.success(), "{name} was accepted");
        let message = stderr(&output);
        assert!(message.contains(needle), "{name}: {message}");
        assert!(message.lines().count() <= 3, "{name}: {message}");
    }
    // The proposal files were written beside the workspace, not in it.
    assert_eq!(files(&assistant.workspace), before);
    assert!(!assistant.home.join("b").exists());
}

#[test]
fn a_bad_permissions_line_is_an_error_naming_the_file_and_line() {
    let assistant = Assistant::new(false);
    let permissions = assistant.workspace.join("permissions.yaml");
    let text = std::fs::read_to_string(&permissions)
        .unwrap()
        .replace("retire: ask", "retire: auto");
    std::fs::write(&permissions, text).unwrap();
    let message = assistant.fails(&["inbox"]);
    assert!(message.contains("permissions.yaml"), "{message}");
    assert!(message.contains("line 20"), "{message}");
    assert!(message.contains("grading its own homework"), "{message}");
}

#[test]
fn unattended_mode_applies_on_its_own_but_holds_a_retirement_for_the_human() {
    let assistant = Assistant::new(true);
    let output = assistant.propose("weekly-report", WEEKLY);
    assert!(
        stdout(&output).contains("applied: weekly-report is live as v1"),
        "{}",
        stdout(&output)
    );
    let retire = assistant.ok(&["refine", "retire", "weekly-report", "--why", "superseded"]);
    assert_eq!(retire, "card #2 filed; it waits in the inbox\n");
    assert!(assistant.ok(&["inbox"]).contains("retire  weekly-report"));
    assistant.ok(&["card", "approve", "2"]);
    let live =
        std::fs::read_to_string(assistant.workspace.join("skills/weekly-report/SKILL.md")).unwrap();
    assert!(live.contains("status: retired"), "{live}");
    assert_eq!(assistant.ok(&["playbook", "carried"]), "");
    // Reverting the retired skill brings it back, on its own in this mode.
    let back = assistant.ok(&["refine", "revert", "weekly-report", "--version", "1"]);
    assert!(back.contains("v1 is live again as v2"), "{back}");
    assert!(back.contains("active and carried again"), "{back}");
    assert_eq!(
        assistant.ok(&["playbook", "carried"]),
        "weekly-report: a week of notes exists under notes/\n"
    );
}

#[test]
fn a_mistyped_workspace_is_an_error_and_not_a_new_folder() {
    let assistant = Assistant::new(false);
    let missing = assistant.home.join("assitant");
    let output = assistant
        .cmd()
        .args(["inbox", "--workspace", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is not a folder"),
        "{}",
        stderr(&output)
    );
    assert!(!missing.exists());
}

#[test]
fn card_show_and_playbook_record_answer_in_json_with_their_documented_fields() {
    let assistant = Assistant::new(false);
    let output = assistant.propose("weekly-report", WEEKLY);
    assert!(output.status.success(), "{}", stderr(&output));
    let card: serde_json::Value =
        serde_json::from_str(&assistant.ok(&["card", "show", "1", "--json"])).unwrap();
    assert_eq!(card["id"], 1);
    assert_eq!(card["kind"], "create");
    assert_eq!(card["skill"], "weekly-report");
    assert_eq!(card["state"], "waiting");
    assert!(card["owes"].is_array(), "{card}");
    assert!(
        card["diff"].is_null(),
        "a draft has no live file to differ from"
    );
    assert!(
        card["proposal"]
            .as_str()
            .unwrap()
            .contains("trigger: the human asks for the weekly report"),
        "{card}"
    );
    // The same fields as the inbox's rows, plus the card's own.
    let inbox: serde_json::Value =
        serde_json::from_str(&assistant.ok(&["inbox", "--json"])).unwrap();
    for (field, value) in inbox[0].as_object().unwrap() {
        assert_eq!(&card[field], value, "{field}");
    }
    assert_eq!(
        stderr(&assistant.run(&["card", "show", "9", "--json"])),
        "error: there is no card #9; `mindrune inbox --all` lists them\n"
    );

    assistant.ok(&["card", "approve", "1"]);
    let records: serde_json::Value =
        serde_json::from_str(&assistant.ok(&["playbook", "record", "--json"])).unwrap();
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 1, "{records:?}");
    let record = &records[0];
    assert_eq!(record["name"], "weekly-report");
    assert_eq!(record["status"], "active");
    assert_eq!(record["live_version"], 1);
    assert_eq!(record["reads"], 0);
    assert_eq!(record["corrections"], 0);
    assert_eq!(record["revisions"], serde_json::json!([]), "no reads yet");
    assert_eq!(record["cost"]["reported"], 0);
    let one: serde_json::Value =
        serde_json::from_str(&assistant.ok(&["playbook", "record", "weekly-report", "--json"]))
            .unwrap();
    assert_eq!(one, serde_json::Value::Array(records.clone()));
}
