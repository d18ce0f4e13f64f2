//! The playbook spec (`spec/playbooks-and-fixes.txt`), one test per rule, on real workspaces in
//! temp folders.

use std::fs;
use std::path::{Path, PathBuf};

use mindrune_core::Permissions;
use mindrune_core::{Status, owed_fields, parse_skill_file};
use mindrune_engine::Report;
use mindrune_engine::{Attendance, Created, Proposal, Suggester};
use mindrune_engine::{CardKind, CardState, Playbooks, Rule};

const TOOLS: &str = r#"tools = ["shell", "web_search", "calendar_read"]"#;

struct Workspace {
    _home: tempfile::TempDir,
    dir: PathBuf,
    playbooks: Playbooks,
}

impl Workspace {
    fn new(unattended: bool) -> Workspace {
        Workspace::with_config(unattended, "")
    }

    fn with_config(unattended: bool, extra: &str) -> Workspace {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().canonicalize().unwrap();
        let dir = home_path.join("workspace");
        fs::create_dir_all(&dir).unwrap();
        // The fixer here only hands its report's token back (beside the workspace), so the tests
        // can file revisions as the fixer would.
        let fixer = "fixer = 'printf %s \"$MINDRUNE_FIXER_TOKEN\" > \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" && mv \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT.tmp\" \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT\"'";
        let fixer = if extra.contains("fixer") { "" } else { fixer };
        fs::write(
            dir.join("playbooks.toml"),
            format!(
                "{TOOLS}\nhome = {:?}\n{fixer}\n{extra}\n",
                home_path.display().to_string()
            ),
        )
        .unwrap();
        let permissions = if unattended {
            Permissions::unattended()
        } else {
            Permissions::shipped_default()
        };
        fs::write(dir.join("permissions.yaml"), permissions.render()).unwrap();
        let playbooks = Playbooks::open(&dir).unwrap();
        Workspace {
            _home: home,
            dir,
            playbooks,
        }
    }

    fn reopen(&mut self) {
        self.playbooks = Playbooks::open(&self.dir).unwrap();
    }

    fn skills(&self) -> PathBuf {
        self.dir.join("skills")
    }

    /// Creates and approves a skill; returns it live.
    fn live(&self, name: &str, text: &str) {
        match self
            .playbooks
            .create(&proposal(name, text), Attendance::Attended)
            .unwrap()
        {
            Created::Filed {
                card,
                answered: None,
            } => {
                assert_eq!(
                    self.playbooks.approve(card).unwrap().state,
                    CardState::Applied
                );
            }
            Created::Filed {
                answered: Some(_), ..
            } => {}
            other => panic!("{other:?}"),
        }
    }

    /// `skill_create` of a proposal made from a file's text.
    fn create(
        &self,
        name: &str,
        text: &str,
        attendance: Attendance,
    ) -> Result<Created, mindrune_engine::PlaybookError> {
        self.playbooks.create(&proposal(name, text), attendance)
    }

    fn live_text(&self, name: &str) -> String {
        fs::read_to_string(self.skills().join(name).join("SKILL.md")).unwrap()
    }

    fn fingerprint(&self, name: &str) -> String {
        mindrune_core::sha256(self.live_text(name).as_bytes())
    }

    fn refusal(
        &self,
        result: Result<impl std::fmt::Debug, mindrune_engine::PlaybookError>,
    ) -> (Rule, String) {
        match result {
            Err(mindrune_engine::PlaybookError::Refused { rule, message }) => (rule, message),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

/// Every file under a folder, with its bytes: to show a refusal changed nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                files.push((path.clone(), Vec::new()));
                stack.push(path);
            } else {
                files.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn skill_text(steps: &str) -> String {
    format!(
        "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nnot_when: a single day's summary\npreconditions:\n  - notes/ holds this week's files\nsteps:\n{steps}forbidden-tools:\n  - shell\nexpected_result: reports/weekly.md exists\nfailure_modes:\n  - last week's notes get included\nevidence:\n  - the 2026-11-20 report\n---\nRead the notes, then write the report.\n"
    )
}

const READ_WRITE: &str = "  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report to reports/weekly.md\n    tool: file_write\n";
const READ_SEARCH: &str = "  - do: Read the question\n    tool: workspace_read\n  - do: Look it up\n    tool: web_search\n";

fn proposal(name: &str, text: &str) -> Proposal {
    let (skill, _) = parse_skill_file(text).unwrap();
    Proposal {
        name: name.to_string(),
        skill,
        suggested_by: Suggester::Assistant,
        accepted_as_done: false,
    }
}

// --- The door, in order -------------------------------------------------------------------

#[test]
fn a_name_taken_by_a_live_skill_is_refused() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let (rule, message) = ws.refusal(ws.create(
        "weekly-report",
        &skill_text(READ_SEARCH),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::NameTaken);
    assert!(message.contains("already exists (active, v1)"), "{message}");
}

#[test]
fn a_name_waiting_for_approval_is_refused_naming_its_card() {
    let ws = Workspace::new(false);
    ws.create(
        "weekly-report",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    )
    .unwrap();
    let (rule, message) = ws.refusal(ws.create(
        "weekly-report",
        &skill_text(READ_SEARCH),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::NameTaken);
    assert!(
        message.contains("waiting for your human's approval (card #1)"),
        "{message}"
    );
}

#[test]
fn a_name_the_human_turned_down_is_refused_repeating_their_reason() {
    let ws = Workspace::new(false);
    ws.create(
        "weekly-report",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    )
    .unwrap();
    ws.playbooks
        .reject(1, "I write that report myself")
        .unwrap();
    assert!(ws.skills().join("rejected/weekly-report/SKILL.md").exists());
    assert!(
        ws.skills()
            .join("rejected/weekly-report/REASON.md")
            .exists()
    );
    let (rule, message) = ws.refusal(ws.create(
        "weekly-report",
        &skill_text(READ_SEARCH),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::NameTaken);
    assert!(
        message.contains("\"I write that report myself\""),
        "{message}"
    );
}

#[test]
fn the_same_sequence_of_tools_is_refused_naming_the_existing_skill() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let (rule, message) = ws.refusal(ws.create(
        "friday-summary",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::SameTools);
    assert!(message.contains("weekly-report"), "{message}");
    assert!(message.contains("workspace_read → file_write"), "{message}");
}

#[test]
fn the_same_sequence_as_a_waiting_draft_is_refused_too() {
    let ws = Workspace::new(false);
    ws.create(
        "weekly-report",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    )
    .unwrap();
    let (rule, message) = ws.refusal(ws.create(
        "friday-summary",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::SameTools);
    assert!(message.contains("waiting for approval"), "{message}");
}

#[test]
fn a_second_success_of_a_task_accepted_as_done_adds_evidence_instead_of_a_refusal() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let before = snapshot(&ws.skills());
    let mut again = proposal("friday-summary", &skill_text(READ_WRITE));
    again.accepted_as_done = true;
    let created = ws.playbooks.create(&again, Attendance::Attended).unwrap();
    assert_eq!(
        created,
        Created::EvidenceAdded {
            skill: "weekly-report".into()
        }
    );
    assert_eq!(
        ws.playbooks
            .ledger()
            .evidence("weekly-report")
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        snapshot(&ws.skills()),
        before,
        "evidence is not a new skill"
    );
}

#[test]
fn too_many_drafts_waiting_stops_an_unattended_call_but_not_an_attended_one() {
    let ws = Workspace::with_config(false, "max_waiting_drafts = 2");
    let steps = [
        "  - do: a\n    tool: shell\n",
        "  - do: b\n    tool: web_search\n",
        "  - do: c\n    tool: calendar_read\n",
    ];
    // forbidden-tools lists shell in skill_text; use texts without it here.
    let text = |steps: &str| skill_text(steps).replace("forbidden-tools:\n  - shell\n", "");
    ws.create("one", &text(steps[0]), Attendance::Unattended)
        .unwrap();
    ws.create("two", &text(steps[1]), Attendance::Unattended)
        .unwrap();
    let before = snapshot(&ws.skills());
    let (rule, message) = ws.refusal(ws.create("three", &text(steps[2]), Attendance::Unattended));
    assert_eq!(rule, Rule::TooManyDrafts);
    assert!(
        message.contains("2 drafts are already waiting"),
        "{message}"
    );
    assert_eq!(snapshot(&ws.skills()), before);
    ws.create("three", &text(steps[2]), Attendance::Attended)
        .unwrap();
}

#[test]
fn the_door_asks_its_questions_in_the_specs_order() {
    let ws = Workspace::with_config(false, "max_waiting_drafts = 1");
    ws.live("weekly-report", &skill_text(READ_WRITE));
    ws.create("other", &skill_text(READ_SEARCH), Attendance::Attended)
        .unwrap();
    // Name taken and same tools: the name is asked first.
    let (rule, _) = ws.refusal(ws.create(
        "weekly-report",
        &skill_text(READ_WRITE),
        Attendance::Unattended,
    ));
    assert_eq!(rule, Rule::NameTaken);
    // Same tools, too many drafts, and a blocking problem: the tools are asked next.
    let blocked_same = skill_text(READ_WRITE).replace("Read the notes", "Read /etc/passwd");
    let (rule, _) = ws.refusal(ws.create("new-one", &blocked_same, Attendance::Unattended));
    assert_eq!(rule, Rule::SameTools);
    // Too many drafts and a blocking problem: the drafts are asked before the file is checked.
    let blocked = skill_text("  - do: a\n    tool: calendar_read\n")
        .replace("Read the notes", "Read /etc/passwd");
    let (rule, _) = ws.refusal(ws.create("new-one", &blocked, Attendance::Unattended));
    assert_eq!(rule, Rule::TooManyDrafts);
    let (rule, _) = ws.refusal(ws.create("new-one", &blocked, Attendance::Attended));
    assert_eq!(rule, Rule::Blocked);
}

#[test]
fn each_blocking_check_refuses_and_leaves_nothing_on_disk() {
    let ws = Workspace::new(false);
    let cases = [
        (
            "unknown-tool",
            skill_text("  - do: Send it\n    tool: email_send\n"),
            "does not have",
        ),
        (
            "forbidden-tool",
            skill_text("  - do: Run it\n    tool: shell\n"),
            "shell",
        ),
        (
            "step-key",
            skill_text("  - do: Send it\n    tools: web_search\n"),
            "tools",
        ),
        (
            "empty-steps",
            skill_text("").replace("steps:\n", "steps: []\n"),
            "lists no step",
        ),
        (
            "credential",
            skill_text(READ_SEARCH).replace("Read the notes", "Use key AKIAIOSFODNN7QWERTYU"),
            "credential",
        ),
        (
            "path-outside",
            skill_text(READ_SEARCH).replace("Read the notes", "Read /etc/passwd"),
            "/etc/passwd",
        ),
        (
            "path-tilde",
            skill_text(READ_SEARCH).replace("Read the notes", "Read ~/notes"),
            "~/notes",
        ),
        (
            "path-variable",
            skill_text(READ_SEARCH).replace("Read the notes", "Read $HOME/notes"),
            "$HOME/notes",
        ),
        (
            "path-share",
            skill_text(READ_SEARCH).replace("Read the notes", "Read \\\\server\\share\\x"),
            "server",
        ),
        (
            "path-drive",
            skill_text(READ_SEARCH).replace("Read the notes", "Read C:notes.txt"),
            "C:notes.txt",
        ),
    ];
    for (name, text, needle) in cases {
        let before = snapshot(&ws.skills());
        let (rule, message) = ws.refusal(ws.create(name, &text, Attendance::Attended));
        assert_eq!(rule, Rule::Blocked, "{name}: {message}");
        assert!(message.contains(needle), "{name}: {message}");
        assert_eq!(
            snapshot(&ws.skills()),
            before,
            "{name} left something on disk"
        );
        assert!(
            !message.contains("AKIAIOSFODNN7QWERTYU"),
            "the refusal repeats the credential"
        );
    }
    assert!(ws.playbooks.ledger().cards(false).unwrap().is_empty());
}

#[test]
fn a_skill_that_leaves_fields_out_still_enters_and_owes_them() {
    let ws = Workspace::new(false);
    let text = "---\nsteps:\n  - do: Look it up\n    tool: web_search\n---\nLook it up.\n";
    ws.live("lookup", text);
    let (skill, _) = parse_skill_file(&ws.live_text("lookup")).unwrap();
    let owed = owed_fields(&skill);
    assert!(
        owed.contains(&"trigger") && owed.contains(&"evidence"),
        "{owed:?}"
    );
}

#[test]
fn names_that_are_paths_are_refused_before_anything_else() {
    let ws = Workspace::new(false);
    for name in ["../escape", "a/b", "..", "Weekly"] {
        let (rule, _) = ws.refusal(ws.create(name, &skill_text(READ_WRITE), Attendance::Attended));
        assert_eq!(rule, Rule::BadName, "{name}");
    }
    assert!(!ws.dir.join("escape").exists());
}

// --- Going live -----------------------------------------------------------------------------

#[test]
fn approving_a_draft_moves_it_live_marks_it_active_and_carries_it() {
    let ws = Workspace::new(false);
    let created = ws
        .playbooks
        .create(
            &proposal("weekly-report", &skill_text(READ_WRITE)),
            Attendance::Attended,
        )
        .unwrap();
    assert_eq!(
        created,
        Created::Filed {
            card: 1,
            answered: None
        }
    );
    assert!(ws.skills().join("pending/weekly-report/SKILL.md").exists());
    assert!(!ws.skills().join("weekly-report").exists());
    let answered = ws.playbooks.approve(1).unwrap();
    assert_eq!(answered.state, CardState::Applied);
    assert!(!ws.skills().join("pending/weekly-report").exists());
    let (skill, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(
        (skill.status, skill.version),
        (Some(Status::Active), Some(1))
    );
    assert_eq!(
        mindrune_engine::carried(&ws.dir).unwrap(),
        ["weekly-report"]
    );
}

#[test]
fn a_skill_approved_on_its_own_ends_exactly_like_one_approved_by_hand() {
    let by_hand = Workspace::new(false);
    by_hand.live("weekly-report", &skill_text(READ_WRITE));
    let on_its_own = Workspace::new(true);
    let created = on_its_own
        .playbooks
        .create(
            &proposal("weekly-report", &skill_text(READ_WRITE)),
            Attendance::Unattended,
        )
        .unwrap();
    let Created::Filed {
        answered: Some(answered),
        ..
    } = created
    else {
        panic!("{created:?}")
    };
    assert_eq!(answered.state, CardState::Applied);
    assert_eq!(
        by_hand.live_text("weekly-report"),
        on_its_own.live_text("weekly-report")
    );
    assert_eq!(
        fs::read_to_string(by_hand.skills().join("carried.txt")).unwrap(),
        fs::read_to_string(on_its_own.skills().join("carried.txt")).unwrap()
    );
    let card = on_its_own.playbooks.ledger().card(1).unwrap().unwrap();
    assert_eq!(
        (card.state, card.answered_by.as_deref()),
        (CardState::Applied, Some("auto")),
        "filed already answered"
    );
}

#[test]
fn a_card_answered_twice_is_refused_and_changes_nothing() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let before = snapshot(&ws.skills());
    let (rule, message) = ws.refusal(ws.playbooks.approve(1));
    assert_eq!(rule, Rule::AlreadyAnswered);
    assert!(
        message.contains("card #1 was already answered (applied by human"),
        "{message}"
    );
    let (rule, _) = ws.refusal(ws.playbooks.reject(1, "too late"));
    assert_eq!(rule, Rule::AlreadyAnswered);
    assert_eq!(snapshot(&ws.skills()), before);
}

// --- Refining ---------------------------------------------------------------------------------

fn report(ws: &Workspace, step: u32) -> i64 {
    ws.playbooks
        .report(&Report {
            skill: "weekly-report".into(),
            revision: 1,
            step,
            turn: None,
        })
        .unwrap()
        .report
}

/// The token the fixer of a report was handed (the test fixer writes it beside the workspace).
fn token(ws: &Workspace, report: i64) -> String {
    let path = ws.dir.parent().unwrap().join(format!("token-{report}"));
    for _ in 0..200 {
        // The shell makes the file before it writes the token into it: an empty file is not
        // the token yet.
        if let Ok(token) = fs::read_to_string(&path)
            && !token.is_empty()
        {
            return token;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("the fixer of report #{report} never wrote its token");
}

/// Files a revision as the report's fixer would.
fn revise(
    ws: &Workspace,
    report: i64,
    text: &str,
    fingerprint: &str,
) -> Result<mindrune_engine::Filed, mindrune_engine::PlaybookError> {
    ws.playbooks
        .revise(report, text, fingerprint, &token(ws, report), "fixer")
}

fn revised_text(ws: &Workspace) -> String {
    ws.live_text("weekly-report").replace(
        "Write the report to reports/weekly.md",
        "Write the report to reports/weekly.md, newest week first",
    )
}

#[test]
fn a_report_records_a_correction_against_the_revision() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    let usage = ws.playbooks.ledger().usage(Some("weekly-report")).unwrap();
    let line = usage.iter().find(|line| line.id == id).unwrap();
    assert_eq!(
        (line.kind.as_str(), line.revision, line.step),
        ("correction", Some(1), Some(2))
    );
    let (rule, _) = ws.refusal(ws.playbooks.report(&Report {
        skill: "weekly-report".into(),
        revision: 7,
        step: 1,
        turn: None,
    }));
    assert_eq!(rule, Rule::NotFound);
    let (rule, _) = ws.refusal(ws.playbooks.report(&Report {
        skill: "weekly-report".into(),
        revision: 1,
        step: 9,
        turn: None,
    }));
    assert_eq!(rule, Rule::Invalid);
}

#[test]
fn the_fixer_gets_pointers_only() {
    let mut ws = Workspace::new(false);
    let out = ws.dir.join("fixer-env.txt");
    fs::write(
        ws.dir.join("playbooks.toml"),
        format!(
            "{TOOLS}\nhome = {:?}\nfixer = \"env | grep ^MINDRUNE_ | sort > {}\"\n",
            ws.dir.parent().unwrap().display().to_string(),
            out.display()
        ),
    )
    .unwrap();
    ws.reopen();
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let turn = ws.dir.parent().unwrap().join("turns/42.txt");
    let reported = ws
        .playbooks
        .report(&Report {
            skill: "weekly-report".into(),
            revision: 1,
            step: 2,
            turn: Some(turn.display().to_string()),
        })
        .unwrap();
    let mut env = String::new();
    for _ in 0..100 {
        env = fs::read_to_string(&out).unwrap_or_default();
        if env.contains("MINDRUNE_WORKSPACE") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        env.contains(&format!(
            "MINDRUNE_SKILL_DIR={}",
            ws.skills().join("weekly-report").display()
        )),
        "{env}"
    );
    assert!(env.contains("MINDRUNE_REVISION=1\n"), "{env}");
    assert!(env.contains("MINDRUNE_STEP=2\n"), "{env}");
    assert!(
        env.contains(&format!("MINDRUNE_TURN_RECORD={}", turn.display())),
        "{env}"
    );
    assert!(
        env.contains(&format!("MINDRUNE_REPORT={}\n", reported.report)),
        "{env}"
    );
}

#[test]
fn a_revision_goes_live_as_the_next_version_and_keeps_the_old_one_in_history() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let v1 = ws.live_text("weekly-report");
    let id = report(&ws, 2);
    let filed = ws
        .playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap();
    assert_eq!(
        filed.answered, None,
        "the shipped default waits on the card"
    );
    assert_eq!(ws.live_text("weekly-report"), v1);
    let answered = ws.playbooks.approve(filed.card).unwrap();
    assert_eq!(answered.state, CardState::Applied, "{}", answered.outcome);
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(live.version, Some(2));
    assert!(ws.live_text("weekly-report").contains("newest week first"));
    assert_eq!(
        fs::read_to_string(ws.skills().join("weekly-report/history/1/SKILL.md")).unwrap(),
        v1
    );
}

#[test]
fn a_revision_against_a_file_that_changed_is_refused_at_apply_and_the_card_says_so() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    let filed = ws
        .playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap();
    // The human edits the skill by hand meanwhile.
    let edited = ws
        .live_text("weekly-report")
        .replace("Read the notes", "Read the notes carefully");
    fs::write(ws.skills().join("weekly-report/SKILL.md"), &edited).unwrap();
    let before = snapshot(&ws.skills());
    let answered = ws.playbooks.approve(filed.card).unwrap();
    assert_eq!(answered.state, CardState::Refused);
    assert!(
        answered
            .outcome
            .contains("changed since this revise was written"),
        "{}",
        answered.outcome
    );
    assert_eq!(snapshot(&ws.skills()), before);
    let card = ws.playbooks.ledger().card(filed.card).unwrap().unwrap();
    assert_eq!(card.state, CardState::Refused);
    assert_eq!(card.outcome.as_deref(), Some(answered.outcome.as_str()));
}

#[test]
fn a_revision_that_fails_a_blocking_check_is_refused() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    let bad = ws
        .live_text("weekly-report")
        .replace("tool: file_write", "tool: shell");
    let (rule, _) = ws.refusal(ws.playbooks.revise(
        id,
        &bad,
        &ws.fingerprint("weekly-report"),
        &token(&ws, id),
        "fixer",
    ));
    assert_eq!(rule, Rule::Blocked);
    assert!(ws.playbooks.ledger().cards(true).unwrap().is_empty());
}

#[test]
fn a_report_gets_at_most_one_revision() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    ws.playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap();
    let (rule, message) = ws.refusal(ws.playbooks.revise(
        id,
        &revised_text(&ws),
        &ws.fingerprint("weekly-report"),
        &token(&ws, id),
        "fixer",
    ));
    assert_eq!(rule, Rule::OneRevisionPerReport);
    assert!(message.contains("card #2"), "{message}");
}

#[test]
fn two_revisions_of_one_skill_applied_at_once_land_one_after_the_other() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let fingerprint = ws.fingerprint("weekly-report");
    let first = report(&ws, 1);
    let second = report(&ws, 2);
    let a = ws
        .playbooks
        .revise(
            first,
            &revised_text(&ws),
            &fingerprint,
            &token(&ws, first),
            "fixer",
        )
        .unwrap()
        .card;
    let b_text = ws.live_text("weekly-report").replace(
        "Read this week's notes",
        "Read this week's notes, oldest first",
    );
    let b = ws
        .playbooks
        .revise(second, &b_text, &fingerprint, &token(&ws, second), "fixer")
        .unwrap()
        .card;
    // Two processes answer at the same moment: each opens the workspace on its own.
    let dir = ws.dir.clone();
    let results: Vec<_> = [a, b]
        .into_iter()
        .map(|card| {
            let dir = dir.clone();
            std::thread::spawn(move || Playbooks::open(&dir).unwrap().approve(card).unwrap())
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|handle| handle.join().unwrap())
        .collect();
    let states: Vec<CardState> = results.iter().map(|answered| answered.state).collect();
    assert!(
        states.contains(&CardState::Applied) && states.contains(&CardState::Refused),
        "{results:?}"
    );
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(live.version, Some(2));
}

#[test]
fn a_revert_makes_a_kept_version_live_again_as_a_new_version_number() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let v1 = ws.live_text("weekly-report");
    let id = report(&ws, 2);
    let card = ws
        .playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap()
        .card;
    ws.playbooks.approve(card).unwrap();
    let v2 = ws.live_text("weekly-report");
    let filed = ws.playbooks.revert("weekly-report", 1, "human").unwrap();
    assert_eq!(filed.answered, None);
    let answered = ws.playbooks.approve(filed.card).unwrap();
    assert_eq!(answered.state, CardState::Applied, "{}", answered.outcome);
    assert!(
        answered.outcome.contains("v1 is live again as v3"),
        "{}",
        answered.outcome
    );
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    let (old, _) = parse_skill_file(&v1).unwrap();
    assert_eq!(live.version, Some(3));
    assert_eq!(live.steps, old.steps);
    assert_eq!(
        fs::read_to_string(ws.skills().join("weekly-report/history/2/SKILL.md")).unwrap(),
        v2
    );
    let (rule, _) = ws.refusal(ws.playbooks.revert("weekly-report", 9, "human"));
    assert_eq!(rule, Rule::NotFound);
}

#[test]
fn retiring_is_held_for_the_human_even_in_unattended_mode() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let filed = ws
        .playbooks
        .retire("weekly-report", Some("superseded"), "assistant")
        .unwrap();
    assert_eq!(filed.answered, None);
    assert_eq!(
        ws.playbooks
            .ledger()
            .card(filed.card)
            .unwrap()
            .unwrap()
            .state,
        CardState::Waiting
    );
    let answered = ws.playbooks.approve(filed.card).unwrap();
    assert_eq!(answered.state, CardState::Applied);
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(live.status, Some(Status::Retired));
    assert!(mindrune_engine::carried(&ws.dir).unwrap().is_empty());
}

#[test]
fn reverting_a_retired_skill_brings_it_back_active_and_carried() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    let card = ws
        .playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap()
        .card;
    ws.playbooks.approve(card).unwrap();
    let retire = ws.playbooks.retire("weekly-report", None, "human").unwrap();
    ws.playbooks.approve(retire.card).unwrap();
    let revert = ws.playbooks.revert("weekly-report", 1, "human").unwrap();
    let answered = ws.playbooks.approve(revert.card).unwrap();
    assert_eq!(answered.state, CardState::Applied, "{}", answered.outcome);
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(live.status, Some(Status::Active));
    assert_eq!(
        mindrune_engine::carried(&ws.dir).unwrap(),
        ["weekly-report"]
    );
}

// --- Who can do what ------------------------------------------------------------------------

#[test]
fn every_row_of_the_permissions_table_in_both_modes() {
    for unattended in [false, true] {
        let ws = Workspace::new(unattended);
        // Create: the default waits on the card; unattended goes live on its own.
        let created = ws
            .playbooks
            .create(
                &proposal("weekly-report", &skill_text(READ_WRITE)),
                Attendance::Unattended,
            )
            .unwrap();
        let Created::Filed { card, answered } = created else {
            panic!()
        };
        assert_eq!(
            answered.is_some(),
            unattended,
            "create, unattended={unattended}"
        );
        if !unattended {
            ws.playbooks.approve(card).unwrap();
        }
        // Report: recorded in both (asking first is the MCP server's part).
        let id = report(&ws, 2);
        // Revise: the default waits; unattended is applied on its own, filed as answered.
        let filed = ws
            .playbooks
            .revise(
                id,
                &revised_text(&ws),
                &ws.fingerprint("weekly-report"),
                &token(&ws, id),
                "fixer",
            )
            .unwrap();
        assert_eq!(
            filed.answered.as_ref().map(|a| a.state),
            unattended.then_some(CardState::Applied),
            "revise"
        );
        if !unattended {
            ws.playbooks.approve(filed.card).unwrap();
        }
        // Revert: the same.
        let filed = ws.playbooks.revert("weekly-report", 1, "human").unwrap();
        assert_eq!(
            filed.answered.as_ref().map(|a| a.state),
            unattended.then_some(CardState::Applied),
            "revert"
        );
        // Retire: waits on the card in both.
        let filed = ws
            .playbooks
            .retire("weekly-report", None, "assistant")
            .unwrap();
        assert_eq!(filed.answered, None, "retire, unattended={unattended}");
        // Writing a skill file directly: refused in both.
        let (rule, _) = ws.refusal(
            ws.playbooks
                .file_write("skills/weekly-report/SKILL.md", "---\n---\n"),
        );
        assert_eq!(rule, Rule::SkillsPath);
        let cards = ws.playbooks.ledger().cards(false).unwrap();
        assert!(
            cards
                .iter()
                .all(|card| card.kind != CardKind::Retire || card.state == CardState::Waiting)
        );
    }
}

#[test]
fn the_file_tools_refuse_skills_through_dotdot_symlinks_and_case_tricks() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    fs::create_dir_all(ws.dir.join("notes")).unwrap();
    fs::write(ws.dir.join("notes/a.md"), "a").unwrap();
    std::os::unix::fs::symlink(ws.skills(), ws.dir.join("shortcut")).unwrap();
    let before = snapshot(&ws.skills());
    for path in [
        "skills/weekly-report/SKILL.md",
        "skills/new/SKILL.md",
        "notes/../skills/new/SKILL.md",
        "./skills/x",
        "Skills/new/SKILL.md",
        "SKILLS/new/SKILL.md",
        "shortcut/new/SKILL.md",
    ] {
        let absolute = ws.dir.join(path).display().to_string();
        for target in [path.to_string(), absolute] {
            assert!(
                ws.playbooks.file_write(&target, "x").is_err(),
                "file_write {target}"
            );
            assert!(
                ws.playbooks.file_copy("notes/a.md", &target).is_err(),
                "file_copy {target}"
            );
            assert!(
                ws.playbooks.file_move("notes/a.md", &target).is_err(),
                "file_move {target}"
            );
        }
    }
    let (rule, _) = ws.refusal(
        ws.playbooks
            .file_move("skills/weekly-report/SKILL.md", "notes/stolen.md"),
    );
    assert_eq!(rule, Rule::SkillsPath);
    assert_eq!(snapshot(&ws.skills()), before);
    // Elsewhere they work, and copying a skill out to read it is fine.
    ws.playbooks.file_write("notes/b.md", "b").unwrap();
    ws.playbooks
        .file_copy("skills/weekly-report/SKILL.md", "notes/copy.md")
        .unwrap();
    ws.playbooks.file_move("notes/b.md", "notes/c.md").unwrap();
    assert!(ws.dir.join("notes/c.md").exists());
}

// --- Usage log, record, search --------------------------------------------------------------

#[test]
fn every_read_of_a_skill_writes_one_usage_line() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    ws.playbooks
        .workspace_read("skills/weekly-report/SKILL.md", Some("turns/1.txt"))
        .unwrap();
    ws.playbooks
        .workspace_read("skills/weekly-report", None)
        .unwrap();
    assert!(
        ws.playbooks
            .workspace_read("skills/missing/SKILL.md", None)
            .is_err()
    );
    ws.playbooks.workspace_read("playbooks.toml", None).unwrap();
    let usage = ws.playbooks.ledger().usage(None).unwrap();
    let reads: Vec<_> = usage
        .iter()
        .map(|line| (line.skill.as_str(), line.revision, line.ok))
        .collect();
    assert_eq!(
        reads,
        [
            ("weekly-report", Some(1), true),
            ("weekly-report", Some(1), true),
            ("missing", None, false)
        ]
    );
    assert_eq!(usage[0].turn.as_deref(), Some("turns/1.txt"));
}

#[test]
fn the_record_says_whether_the_live_revision_did_better_than_the_one_it_replaced() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let read = || {
        ws.playbooks
            .workspace_read("skills/weekly-report/SKILL.md", None)
            .unwrap()
    };
    // v1: 10 reads, 8 of them corrected.
    for step in 0..10 {
        read();
        if step < 8 {
            report(&ws, 1);
        }
    }
    let id = report(&ws, 2);
    ws.playbooks
        .revise(
            id,
            &revised_text(&ws),
            &ws.fingerprint("weekly-report"),
            &token(&ws, id),
            "fixer",
        )
        .unwrap();
    let records = ws.playbooks.record(Some("weekly-report")).unwrap();
    assert_eq!(
        records[0].comparison.map(|c| c.verdict),
        Some(mindrune_core::Verdict::TooEarly)
    );
    // v2: 10 reads, none corrected.
    for _ in 0..10 {
        read();
    }
    let before = snapshot(&ws.dir);
    let records = ws.playbooks.record(Some("weekly-report")).unwrap();
    assert_eq!(
        snapshot(&ws.dir).len(),
        before.len(),
        "the record writes nothing"
    );
    let record = &records[0];
    assert_eq!(
        (record.live_version, record.previous_version),
        (Some(2), Some(1))
    );
    assert_eq!(
        record.comparison.map(|c| c.verdict),
        Some(mindrune_core::Verdict::Better)
    );
    let text = mindrune_engine::render_records(&records);
    assert!(
        text.contains("v2 did better than v1, the one it replaced (Fisher's exact test"),
        "{text}"
    );
}

#[test]
fn search_finds_skills_by_words_with_when_to_use_each() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    ws.live(
        "trip-planning",
        &skill_text(READ_SEARCH)
            .replace("a week of notes exists", "the human plans travel")
            .replace(
                "the human asks for the weekly report",
                "a trip is coming up",
            )
            .replace(
                "Read the notes, then write the report.",
                "Find flights and hotels.",
            )
            .replace("reports/weekly.md exists", "the trip is booked"),
    );
    let hits = ws.playbooks.search("reports", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].name, "weekly-report");
    assert_eq!(hits[0].when, "a week of notes exists");
    assert!(hits[0].carried);
    let hits = ws.playbooks.search("travel plans", 10).unwrap();
    assert_eq!(hits[0].name, "trip-planning");
    // A retired skill is not found.
    let retire = ws.playbooks.retire("trip-planning", None, "human").unwrap();
    ws.playbooks.approve(retire.card).unwrap();
    assert!(ws.playbooks.search("travel", 10).unwrap().is_empty());
}

#[test]
fn search_follows_hand_edits_and_removals_without_rereading_unchanged_skills() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    assert_eq!(ws.playbooks.search("reports", 10).unwrap().len(), 1);
    // A hand edit (new words, new length and times) is seen by the next search.
    let file = ws.dir.join("skills/weekly-report/SKILL.md");
    let edited = std::fs::read_to_string(&file)
        .unwrap()
        .replace("a week of notes exists", "a fortnight of notes exists");
    std::fs::write(&file, edited).unwrap();
    let hits = ws.playbooks.search("fortnight", 10).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].when, "a fortnight of notes exists");
    // An unchanged library answers again from the index alone.
    assert_eq!(ws.playbooks.search("fortnight", 10).unwrap().len(), 1);
    // A folder removed by hand drops out.
    std::fs::remove_dir_all(ws.dir.join("skills/weekly-report")).unwrap();
    assert!(ws.playbooks.search("fortnight", 10).unwrap().is_empty());
}

#[test]
fn a_task_closed_as_done_after_enough_tool_calls_suggests_a_skill() {
    use mindrune_engine::DoneTask;
    let ws = Workspace::with_config(false, "carry_over_tool_calls = 5");
    let done = |calls, passed| DoneTask {
        task: "set up the CI".into(),
        tool_calls: calls,
        checks_passed: passed,
    };
    assert_eq!(ws.playbooks.task_done(&done(4, true)).unwrap(), None);
    assert_eq!(ws.playbooks.task_done(&done(9, false)).unwrap(), None);
    assert!(ws.playbooks.task_done(&done(5, true)).unwrap().is_some());
    ws.playbooks
        .observer_suggests("the weekly report is rebuilt by hand every Friday")
        .unwrap();
    let shown = ws.playbooks.take_suggestions().unwrap();
    assert_eq!(shown.len(), 2);
    assert!(shown[0].contains("took 5 tool calls"));
    assert!(
        ws.playbooks.take_suggestions().unwrap().is_empty(),
        "each is shown once"
    );
}

// --- What only the runtime may do -----------------------------------------------------------

#[test]
fn a_revision_without_the_fixers_token_is_refused() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    let fingerprint = ws.fingerprint("weekly-report");
    for wrong in ["", "0000", "not the token"] {
        let (rule, message) =
            ws.refusal(
                ws.playbooks
                    .revise(id, &revised_text(&ws), &fingerprint, wrong, "fixer"),
            );
        assert_eq!(rule, Rule::Invalid);
        assert!(
            message.contains("only the fixer started for report"),
            "{message}"
        );
    }
    assert!(!ws.skills().join("weekly-report/history").exists());
}

#[test]
fn a_turn_record_inside_the_workspace_is_refused() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    for turn in [
        "notes/turn.txt",
        &ws.dir.join("notes/turn.txt").display().to_string(),
        "../ws/notes/t.txt",
    ] {
        let turn = turn.replace(
            "../ws/",
            &format!("../{}/", ws.dir.file_name().unwrap().to_string_lossy()),
        );
        let (rule, message) = ws.refusal(ws.playbooks.report(&Report {
            skill: "weekly-report".into(),
            revision: 1,
            step: 1,
            turn: Some(turn.clone()),
        }));
        assert_eq!(rule, Rule::Invalid, "{turn}");
        assert!(message.contains("inside the workspace"), "{message}");
    }
    assert!(ws.playbooks.ledger().usage(None).unwrap().is_empty());
}

#[test]
fn reverting_a_retired_skill_that_was_never_revised_brings_it_back() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let retire = ws.playbooks.retire("weekly-report", None, "human").unwrap();
    ws.playbooks.approve(retire.card).unwrap();
    let revert = ws.playbooks.revert("weekly-report", 1, "human").unwrap();
    let answered = ws.playbooks.approve(revert.card).unwrap();
    assert_eq!(answered.state, CardState::Applied, "{}", answered.outcome);
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!((live.status, live.version), (Some(Status::Active), Some(2)));
    assert_eq!(
        mindrune_engine::carried(&ws.dir).unwrap(),
        ["weekly-report"]
    );
}

#[test]
fn the_file_tools_refuse_mindrunes_own_files_under_any_spelling() {
    let ws = Workspace::new(false);
    fs::create_dir_all(ws.dir.join("notes")).unwrap();
    fs::write(ws.dir.join("notes/a.md"), "a").unwrap();
    let before = snapshot(&ws.dir.join(".mindrune"));
    let settings = fs::read(ws.dir.join("playbooks.toml")).unwrap();
    for path in [
        ".mindrune/applying.json",
        ".mindrune/playbooks.sqlite3",
        ".MINDRUNE/x",
        "notes/../.mindrune/x",
        "playbooks.toml",
        "Permissions.YAML",
        "permissions.yaml",
    ] {
        let (rule, message) = ws.refusal(ws.playbooks.file_write(path, "x"));
        assert_eq!(rule, Rule::SkillsPath, "{path}");
        assert!(message.contains("MindRune's own"), "{message}");
        assert!(
            ws.playbooks.file_copy("notes/a.md", path).is_err(),
            "{path}"
        );
        assert!(
            ws.playbooks.file_move(path, "notes/b.md").is_err(),
            "{path}"
        );
    }
    // A hard link to the settings is the same file by any name.
    fs::hard_link(
        ws.dir.join("playbooks.toml"),
        ws.dir.join("notes/settings.toml"),
    )
    .unwrap();
    let (rule, _) = ws.refusal(
        ws.playbooks
            .file_write("notes/settings.toml", "fixer = 'x'"),
    );
    assert_eq!(rule, Rule::SkillsPath);
    assert_eq!(fs::read(ws.dir.join("playbooks.toml")).unwrap(), settings);
    assert_eq!(snapshot(&ws.dir.join(".mindrune")).len(), before.len());
}

#[test]
fn a_forged_apply_journal_cannot_write_outside_skills() {
    let ws = Workspace::new(false);
    let outside = ws.dir.parent().unwrap().join("bashrc");
    let journal = serde_json::json!({
        "card": 99, "state": "applied", "answered_by": "auto", "reason": null, "outcome": "x",
        "steps": [{"op": "write", "path": outside.display().to_string(), "text": "evil"}]
    });
    fs::write(ws.dir.join(".mindrune/applying.json"), journal.to_string()).unwrap();
    let err = Playbooks::open(&ws.dir)
        .err()
        .expect("a forged journal is refused");
    assert!(err.to_string().contains("not under skills/"), "{err}");
    assert!(!outside.exists());
}

#[test]
fn an_unattended_create_leaves_no_journal_behind() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    assert!(!ws.dir.join(".mindrune/applying.json").exists());
    // So removing the skill by hand, as the human may, breaks nothing.
    fs::remove_dir_all(ws.skills().join("weekly-report")).unwrap();
    Playbooks::open(&ws.dir).unwrap();
}

#[test]
fn a_hand_lowered_version_never_overwrites_history() {
    let ws = Workspace::new(true);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let id = report(&ws, 2);
    revise(
        &ws,
        id,
        &revised_text(&ws),
        &ws.fingerprint("weekly-report"),
    )
    .unwrap();
    let kept_v1 = fs::read_to_string(ws.skills().join("weekly-report/history/1/SKILL.md")).unwrap();
    // The human edits the live v2 by hand and writes version: 1.
    let edited = ws
        .live_text("weekly-report")
        .replace("version: 2", "version: 1")
        .replace("newest week first", "newest first");
    fs::write(ws.skills().join("weekly-report/SKILL.md"), &edited).unwrap();
    let id = report(&ws, 1);
    let filed = revise(
        &ws,
        id,
        &edited.replace("Read this week's notes", "Read the notes"),
        &ws.fingerprint("weekly-report"),
    )
    .unwrap();
    assert_eq!(filed.answered.map(|a| a.state), Some(CardState::Applied));
    assert_eq!(
        fs::read_to_string(ws.skills().join("weekly-report/history/1/SKILL.md")).unwrap(),
        kept_v1
    );
    assert_eq!(
        fs::read_to_string(ws.skills().join("weekly-report/history/2/SKILL.md")).unwrap(),
        edited
    );
    let (live, _) = parse_skill_file(&ws.live_text("weekly-report")).unwrap();
    assert_eq!(live.version, Some(3));
}

// --- What the audit of issue 19 found ---------------------------------------------------------

#[test]
fn a_duplicate_of_a_retired_skills_tools_is_answered_with_the_retired_skills_name() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let filed = ws
        .playbooks
        .retire("weekly-report", None, "assistant")
        .unwrap();
    ws.playbooks.approve(filed.card).unwrap();
    let before = snapshot(&ws.skills());
    let (rule, message) = ws.refusal(ws.create(
        "friday-report",
        &skill_text(READ_WRITE),
        Attendance::Attended,
    ));
    assert_eq!(rule, Rule::SameTools);
    assert!(
        message.contains("skill weekly-report (retired, v1)"),
        "{message}"
    );
    assert!(
        message.contains("skill_refine revert brings weekly-report back"),
        "{message}"
    );
    assert_eq!(snapshot(&ws.skills()), before, "nothing on disk");
}

#[test]
fn a_draft_whose_approval_the_blocking_checks_refuse_stays_waiting_and_its_card_says_why() {
    let mut ws = Workspace::new(false);
    let Created::Filed { card, .. } = ws
        .create(
            "weekly-report",
            &skill_text(READ_WRITE),
            Attendance::Attended,
        )
        .unwrap()
    else {
        panic!("a draft");
    };
    // The human edits the draft while it waits, and a credential slips in.
    let draft = ws.skills().join("pending/weekly-report/SKILL.md");
    let text = fs::read_to_string(&draft).unwrap();
    fs::write(
        &draft,
        text.replace(
            "Read the notes",
            "Log in with the password Tr0ub4dor&3, read the notes",
        ),
    )
    .unwrap();
    let answered = ws.playbooks.approve(card).unwrap();
    assert_eq!(answered.state, CardState::Waiting, "{}", answered.outcome);
    assert!(
        answered.outcome.contains("could not go live"),
        "{}",
        answered.outcome
    );
    assert!(
        answered.outcome.contains("credential"),
        "{}",
        answered.outcome
    );
    assert!(
        answered.outcome.contains("fix the draft there"),
        "{}",
        answered.outcome
    );

    // The next command (a fresh open runs the interrupted-draft sweep) leaves it where it is.
    ws.reopen();
    ws.create("research", &skill_text(READ_SEARCH), Attendance::Attended)
        .unwrap();
    assert!(draft.is_file(), "the draft stays in skills/pending/");
    assert!(!ws.dir.join(".mindrune/interrupted").exists());
    let shown = ws.playbooks.ledger().card(card).unwrap().unwrap();
    assert_eq!(shown.state, CardState::Waiting);
    assert!(
        shown
            .outcome
            .as_deref()
            .unwrap_or_default()
            .contains("could not go live")
    );

    // Mended, it goes live through the same card.
    fs::write(&draft, text).unwrap();
    assert_eq!(
        ws.playbooks.approve(card).unwrap().state,
        CardState::Applied
    );
}

#[test]
fn the_fixers_log_masks_its_token_and_workspace_read_does_not_read_it() {
    let fixer = "fixer = 'printf %s \"$MINDRUNE_FIXER_TOKEN\" > \"$MINDRUNE_WORKSPACE/../token-$MINDRUNE_REPORT\"; echo \"my token is $MINDRUNE_FIXER_TOKEN\"; env | grep FIXER_TOKEN >&2'";
    let ws = Workspace::with_config(false, fixer);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let report = report(&ws, 1);
    let token = token(&ws, report);
    let log = ws.dir.join(format!(".mindrune/fixer/report-{report}.log"));
    let mut text = String::new();
    for _ in 0..200 {
        text = fs::read_to_string(&log).unwrap_or_default();
        if text.contains("MINDRUNE_FIXER_TOKEN=") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    assert!(!token.is_empty());
    assert!(!text.contains(&token), "the token is in the log: {text}");
    assert!(
        text.contains("my token is [MINDRUNE_FIXER_TOKEN]"),
        "{text}"
    );
    assert!(
        text.contains("MINDRUNE_FIXER_TOKEN=[MINDRUNE_FIXER_TOKEN]"),
        "{text}"
    );

    for path in [
        format!(".mindrune/fixer/report-{report}.log"),
        format!(".Mindrune/fixer/report-{report}.log"),
        format!("notes/../.mindrune/fixer/report-{report}.log"),
        ".mindrune/playbooks.sqlite3".to_string(),
    ] {
        let (rule, message) = ws.refusal(ws.playbooks.workspace_read(&path, None));
        assert_eq!(rule, Rule::SkillsPath, "{path}: {message}");
        assert!(message.contains("MindRune's own"), "{path}: {message}");
        let (_, message) = ws.refusal(ws.playbooks.file_copy(&path, "notes/log.txt"));
        assert!(message.contains("MindRune's own"), "{path}: {message}");
    }
    // The settings stay readable: they are the human's, only not the assistant's to write.
    ws.playbooks.workspace_read("playbooks.toml", None).unwrap();
}

#[test]
fn the_record_shows_what_the_turns_that_used_a_skill_cost_when_the_host_reports_it() {
    let ws = Workspace::new(false);
    ws.live("weekly-report", &skill_text(READ_WRITE));
    let turns = ws.dir.parent().unwrap().join("transcripts");
    fs::create_dir_all(&turns).unwrap();
    // Two turns as Claude Code records them, one a host's summary, one with no cost in it.
    let message = |id: &str, tool: &str, input: u64, output: u64| {
        format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"{id}\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"{tool}\",\"name\":\"Write\",\"input\":{{}}}}],\"usage\":{{\"input_tokens\":{input},\"output_tokens\":{output}}}}}}}\n"
        )
    };
    fs::write(
        turns.join("a.jsonl"),
        message("m1", "t1", 1000, 200) + &message("m2", "t2", 300, 100),
    )
    .unwrap();
    fs::write(turns.join("b.json"), r#"{"tokens": 600, "tool_calls": 4}"#).unwrap();
    fs::write(turns.join("c.txt"), "followed: 1 2\n").unwrap();
    for name in ["a.jsonl", "b.json", "c.txt"] {
        let turn = turns.join(name).display().to_string();
        ws.playbooks
            .workspace_read("skills/weekly-report/SKILL.md", Some(&turn))
            .unwrap();
    }
    let records = ws.playbooks.record(Some("weekly-report")).unwrap();
    let cost = records[0].cost;
    assert_eq!((cost.reported, cost.tokens, cost.tool_calls), (2, 2200, 6));
    let rendered = mindrune_engine::render_records(&records);
    assert!(
        rendered.contains("cost: 2 of 3 turns reported by the host: 2200 tokens (1100 a turn), 6 tool calls (3.0 a turn)"),
        "{rendered}"
    );
}

#[test]
fn a_hand_written_skills_owed_fields_are_reported_wherever_it_is_read() {
    let ws = Workspace::new(false);
    let dir = ws.skills().join("hand-made");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("SKILL.md"),
        "---\nname: hand-made\ntrigger: the human asks for the hand-made report\nuse_when: a hand-made report is due\nsteps:\n  - do: Read the notes\n    tool: workspace_read\nversion: 1\nstatus: active\n---\nRead, then write.\n",
    )
    .unwrap();
    let owed = [
        "not_when",
        "preconditions",
        "forbidden-tools",
        "expected_result",
        "failure_modes",
        "evidence",
    ];
    let read = ws
        .playbooks
        .workspace_read_noting("skills/hand-made/SKILL.md", None)
        .unwrap();
    assert_eq!(read.owed, owed);
    let hits = ws.playbooks.search("hand-made report", 10).unwrap();
    assert_eq!(hits[0].name, "hand-made");
    assert_eq!(hits[0].owed, owed);
    let records = ws.playbooks.record(Some("hand-made")).unwrap();
    assert_eq!(records[0].owed, owed);
    let rendered = mindrune_engine::render_records(&records);
    assert!(
        rendered.contains("  owes: not_when, preconditions, forbidden-tools, expected_result, failure_modes, evidence (left out; the skill still loads)"),
        "{rendered}"
    );
}
