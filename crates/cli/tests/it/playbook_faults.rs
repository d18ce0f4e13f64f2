//! Fault injection for playbook skills: `mindrune card approve` is SIGKILLed at random moments,
//! and afterwards every skill file is old or new, the ledger passes SQLite's integrity check,
//! and the card's state agrees with the files (the apply journal finishes an interrupted
//! answer at the next open). The seed is printed; `MINDRUNE_FAULT_SEED` replays a run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::Rng;

const WEEKLY: &str = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report\n    tool: file_write\n---\nRead the notes, then write the report.\n";

fn mindrune(workspace: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mindrune"));
    cmd.env("MINDRUNE_WORKSPACE", workspace)
        .env("HOME", home)
        .env_remove("MINDRUNE_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn ok(cmd: &mut Command) {
    let status = cmd.status().unwrap();
    assert!(status.success(), "{cmd:?} failed");
}

fn seed() -> u64 {
    let seed = std::env::var("MINDRUNE_FAULT_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    eprintln!("playbook faults: seed {seed} (set MINDRUNE_FAULT_SEED={seed} to repeat)");
    seed
}

/// The card's state as `mindrune inbox --all --json` reports it (which opens the workspace, and
/// so finishes an interrupted answer first).
fn card_state(workspace: &Path, home: &Path, card: i64) -> String {
    let output = mindrune(workspace, home)
        .args(["inbox", "--all", "--json"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success());
    let cards: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    cards
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["id"] == card)
        .map(|row| row["state"].as_str().unwrap().to_string())
        .unwrap()
}

fn integrity(workspace: &Path) -> String {
    let conn = rusqlite::Connection::open_with_flags(
        workspace.join(".mindrune/playbooks.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap()
}

fn read(path: PathBuf) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[test]
fn answering_a_card_killed_at_any_moment_leaves_files_and_card_agreeing() {
    let mut rng = Rng(seed());
    let (mut interrupted, mut finished_later) = (0, 0);
    for round in 0..60 {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let workspace = home.join("ws");
        ok(mindrune(&workspace, &home).args(["playbook", "init"]));
        let file = home.join("weekly.md");
        std::fs::write(&file, WEEKLY).unwrap();
        ok(mindrune(&workspace, &home).args([
            "playbook",
            "propose",
            "weekly-report",
            "--file",
            file.to_str().unwrap(),
        ]));
        // Half the rounds kill the approval of the draft; the other half the retirement of the
        // live skill (a rewrite of SKILL.md and of carried.txt).
        let retire = round % 2 == 1;
        let card = if retire {
            ok(mindrune(&workspace, &home).args(["card", "approve", "1"]));
            ok(mindrune(&workspace, &home).args(["refine", "retire", "weekly-report"]));
            2
        } else {
            1
        };
        let live = workspace.join("skills/weekly-report/SKILL.md");
        let old_live = read(live.clone());
        let mut child = mindrune(&workspace, &home)
            .args(["card", "approve", &card.to_string()])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rng.below(25_000)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        if !status.success() {
            interrupted += 1;
        }
        assert_eq!(integrity(&workspace), "ok", "round {round}");
        let state = card_state(&workspace, &home, card);
        let pending = workspace.join("skills/pending/weekly-report/SKILL.md");
        let carried = read(workspace.join("skills/carried.txt")).unwrap_or_default();
        let on_list = carried.lines().any(|line| line == "weekly-report");
        match state.as_str() {
            "applied" => {
                let text = read(live.clone()).expect("an applied card has its live file");
                let wanted = if retire {
                    "status: retired"
                } else {
                    "status: active"
                };
                assert!(text.contains(wanted), "round {round}: {text}");
                assert_eq!(on_list, !retire, "round {round}: carried.txt {carried:?}");
                assert!(!pending.exists(), "round {round}");
                if status.success() {
                    continue;
                }
                finished_later += 1;
            }
            "waiting" => {
                // Nothing changed: the old files are all there, and approving again works.
                assert_eq!(read(live.clone()), old_live, "round {round}");
                assert_eq!(pending.exists(), !retire, "round {round}");
                ok(mindrune(&workspace, &home).args(["card", "approve", &card.to_string()]));
                assert_eq!(card_state(&workspace, &home, card), "applied");
            }
            other => panic!("round {round}: card #{card} is {other}"),
        }
        assert!(
            !workspace.join(".mindrune/applying.json").exists(),
            "round {round}"
        );
    }
    eprintln!(
        "playbook faults: {interrupted} approvals killed, {finished_later} finished by the next open"
    );
}
