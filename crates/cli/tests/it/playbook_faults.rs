//! Fault injection for playbook skills: `mindrune card approve` (of a create, a retirement and a
//! revision) and `mindrune refine revise` (the fixer filing a revision, which unattended mode
//! also applies at once) are SIGKILLed at random moments, hundreds of times. Afterwards every
//! skill file is old or new, never partial, `history/` keeps the old text whole or nothing,
//! the ledger passes SQLite's integrity check, and the card's state agrees with the files (the
//! apply journal finishes an interrupted answer at the next open).
//!
//! Each round starts from a copy of a workspace prepared once, and each kill delay is drawn
//! below the time the same command took when it ran to the end, so nearly every kill lands
//! inside the process. The seed is printed; `MINDRUNE_FAULT_SEED` replays a run.

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mindrune_engine::FixerStart;
use mindrune_engine::Playbooks;
use mindrune_engine::Report;

use crate::util::Rng;

const SKILL: &str = "weekly-report";

const WEEKLY: &str = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report\n    tool: file_write\n---\nRead the notes, then write the report.\n";

/// The fixer's correction of [`WEEKLY`]: its second step says where the report goes.
const REVISED: &str = "---\ntrigger: the human asks for the weekly report\nuse_when: a week of notes exists\nsteps:\n  - do: Read this week's notes\n    tool: workspace_read\n  - do: Write the report and say in the reply where it was written\n    tool: file_write\n---\nRead the notes, then write the report and say where it is.\n";

/// The signal `Child::kill` sends.
const SIGKILL: i32 = 9;

fn mindrune(workspace: &Path, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mindrune"));
    cmd.env("MINDRUNE_WORKSPACE", workspace)
        .env("HOME", home)
        .env_remove("MINDRUNE_DATABASE_URL")
        .env_remove("MINDRUNE_FIXER_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

fn ok(cmd: &mut Command) {
    let status = cmd.status().unwrap();
    assert!(status.success(), "{cmd:?} failed");
}

/// Runs `cmd` to the end and says how long it took: the range the kill delays are drawn from.
fn timed(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    ok(cmd);
    start.elapsed()
}

/// Starts `cmd` and SIGKILLs it after `delay`. Whether the kill landed, that is whether the
/// process was still running; one that had finished must have succeeded.
fn kill_after(cmd: &mut Command, delay: Duration) -> bool {
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(delay);
    let _ = child.kill();
    let status = child.wait().unwrap();
    let killed = status.signal() == Some(SIGKILL);
    assert!(killed || status.success(), "{cmd:?} failed: {status}");
    killed
}

/// A delay within the first nine tenths of `full` (how long the command took run to the end),
/// drawn from the seeded generator: nearly every kill lands while the process still runs.
fn delay_below(rng: &mut Rng, full: Duration) -> Duration {
    Duration::from_micros(rng.below(full.as_micros() as u64 * 9 / 10))
}

/// Every card as `mindrune inbox --all --json` reports them (which opens the workspace, and so
/// finishes an interrupted answer first).
fn cards(workspace: &Path, home: &Path) -> Vec<serde_json::Value> {
    let output = mindrune(workspace, home)
        .args(["inbox", "--all", "--json"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    assert!(output.status.success());
    let cards: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    cards.as_array().unwrap().clone()
}

fn card_state(workspace: &Path, home: &Path, card: i64) -> String {
    cards(workspace, home)
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

/// What interrupted writes left under `skills/`: temp files (`.NAME.tmp-PID`) that finishing
/// the apply journal did not clear.
fn temps(workspace: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![workspace.join("skills")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().contains(".tmp-") {
                found.push(path);
            }
        }
    }
    found
}

/// Copies a folder recursively (a prepared workspace, its ledger closed).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A home tree holding every workspace of one test: the prepared ones and a copy per round
/// (the workspace must be inside the home tree its playbooks.toml names).
struct Home {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Home {
    fn new() -> Home {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        Home { _dir: dir, path }
    }

    fn cmd(&self, workspace: &Path) -> Command {
        mindrune(workspace, &self.path)
    }

    fn ok(&self, workspace: &Path, args: &[&str]) {
        ok(self.cmd(workspace).args(args));
    }

    /// A fresh workspace `name` with `weekly-report` proposed as card #1.
    fn proposed(&self, name: &str, unattended: bool) -> PathBuf {
        let workspace = self.path.join(name);
        let mut init = vec!["playbook", "init"];
        if unattended {
            init.push("--unattended");
        }
        self.ok(&workspace, &init);
        let file = self.path.join("weekly.md");
        std::fs::write(&file, WEEKLY).unwrap();
        self.ok(
            &workspace,
            &[
                "playbook",
                "propose",
                SKILL,
                "--file",
                file.to_str().unwrap(),
            ],
        );
        workspace
    }

    /// A copy of a prepared workspace for one round.
    fn copy(&self, from: &Path, name: &str) -> PathBuf {
        let to = self.path.join(name);
        copy_dir(from, &to);
        to
    }
}

#[test]
fn answering_a_card_killed_at_any_moment_leaves_files_and_card_agreeing() {
    let mut rng = Rng(crate::util::fault_seed("playbook faults (approve)"));
    let home = Home::new();
    // Prepared once: a draft waiting as card #1, and a live skill whose retirement waits as
    // card #2.
    let draft = home.proposed("draft", false);
    let retiring = home.proposed("retiring", false);
    home.ok(&retiring, &["card", "approve", "1"]);
    home.ok(&retiring, &["refine", "retire", SKILL]);
    // How long each approval takes when nothing stops it.
    let full_create = timed(
        home.cmd(&home.copy(&draft, "timing-create"))
            .args(["card", "approve", "1"]),
    );
    let full_retire = timed(
        home.cmd(&home.copy(&retiring, "timing-retire"))
            .args(["card", "approve", "2"]),
    );
    let rounds = 100;
    let (mut interrupted, mut finished_later) = (0, 0);
    for round in 0..rounds {
        // Half the rounds kill the approval of the draft; the other half the retirement of the
        // live skill (a rewrite of SKILL.md and of carried.txt).
        let retire = round % 2 == 1;
        let (template, card, full) = if retire {
            (&retiring, 2, full_retire)
        } else {
            (&draft, 1, full_create)
        };
        let workspace = home.copy(template, &format!("round-{round}"));
        let live = workspace.join("skills/weekly-report/SKILL.md");
        let old_live = read(live.clone());
        let killed = kill_after(
            home.cmd(&workspace)
                .args(["card", "approve", &card.to_string()]),
            delay_below(&mut rng, full),
        );
        if killed {
            interrupted += 1;
        }
        assert_eq!(integrity(&workspace), "ok", "round {round}");
        let state = card_state(&workspace, &home.path, card);
        let pending = workspace.join("skills/pending/weekly-report/SKILL.md");
        let carried = read(workspace.join("skills/carried.txt")).unwrap_or_default();
        let on_list = carried.lines().any(|line| line == SKILL);
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
                if killed {
                    finished_later += 1;
                }
            }
            "waiting" => {
                // Nothing changed: the old files are all there, and approving again works.
                assert!(
                    killed,
                    "round {round}: the approval finished, the card waits"
                );
                assert_eq!(read(live.clone()), old_live, "round {round}");
                assert_eq!(pending.exists(), !retire, "round {round}");
                assert_eq!(on_list, retire, "round {round}: carried.txt {carried:?}");
                home.ok(&workspace, &["card", "approve", &card.to_string()]);
                assert!(!pending.exists(), "round {round}");
            }
            other => panic!("round {round}: card #{card} is {other}"),
        }
        assert!(
            !workspace.join(".mindrune/applying.json").exists(),
            "round {round}"
        );
        assert_eq!(temps(&workspace), Vec::<PathBuf>::new(), "round {round}");
        std::fs::remove_dir_all(&workspace).unwrap();
    }
    eprintln!(
        "playbook faults (approve): {interrupted} of {rounds} approvals killed, {finished_later} finished by the next open"
    );
    assert!(
        interrupted >= rounds / 4,
        "only {interrupted} of {rounds} kills landed inside the process"
    );
}

/// A workspace whose live `weekly-report` v1 was reported, and what its fixer needs to file
/// the revision: the report, the token MindRune handed it, and the fingerprint of v1.
struct Reported {
    workspace: PathBuf,
    report: i64,
    token: String,
    fingerprint: String,
}

/// Prepares a workspace with a live skill and a report on it. The report goes through the
/// engine's `skill_refine report`, as the MCP server files it; the fixer configured for it
/// only writes down the token it was handed, which the test then files the revision with.
fn reported(home: &Home, name: &str, unattended: bool) -> Reported {
    let workspace = home.proposed(name, unattended);
    if !unattended {
        home.ok(&workspace, &["card", "approve", "1"]);
    }
    let token_file = home.path.join(format!("{name}.token"));
    let part = home.path.join(format!("{name}.token.part"));
    let config = workspace.join("playbooks.toml");
    let original = std::fs::read_to_string(&config).unwrap();
    let fixer = format!(
        "printf %s \"$MINDRUNE_FIXER_TOKEN\" > '{}' && mv '{}' '{}'",
        part.display(),
        part.display(),
        token_file.display()
    );
    std::fs::write(&config, format!("{original}\nfixer = {fixer:?}\n")).unwrap();
    let report = {
        let playbooks = Playbooks::open(&workspace).unwrap();
        let reported = playbooks
            .report(&Report {
                skill: SKILL.to_string(),
                revision: 1,
                step: 2,
                turn: None,
            })
            .unwrap();
        assert!(
            matches!(reported.fixer, FixerStart::Started { .. }),
            "{:?}",
            reported.fixer
        );
        reported.report
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let token = loop {
        if let Some(token) = read(token_file.clone()) {
            break token;
        }
        assert!(Instant::now() < deadline, "the fixer never wrote its token");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(token.len(), 64, "{token:?}");
    std::fs::write(&config, original).unwrap();
    let live = std::fs::read(workspace.join("skills/weekly-report/SKILL.md")).unwrap();
    Reported {
        workspace,
        report,
        token,
        fingerprint: mindrune_core::sha256(&live),
    }
}

/// What a fixer runs: `mindrune refine revise` with the report's token in its environment.
fn revise(home: &Home, reported: &Reported, workspace: &Path, file: &Path) -> Command {
    let mut cmd = home.cmd(workspace);
    cmd.env("MINDRUNE_FIXER_TOKEN", &reported.token).args([
        "refine",
        "revise",
        "--report",
        &reported.report.to_string(),
        "--file",
        file.to_str().unwrap(),
        "--fingerprint",
        &reported.fingerprint,
    ]);
    cmd
}

/// The files a revision touches: the live SKILL.md and the kept copy of v1.
struct Skill {
    live: PathBuf,
    history: PathBuf,
}

impl Skill {
    fn of(workspace: &Path) -> Skill {
        let dir = workspace.join("skills").join(SKILL);
        Skill {
            live: dir.join("SKILL.md"),
            history: dir.join("history"),
        }
    }

    /// What `history/` holds: each kept version and its text.
    fn kept(&self) -> Vec<(String, Option<String>)> {
        let Ok(entries) = std::fs::read_dir(&self.history) else {
            return Vec::new();
        };
        let mut kept: Vec<(String, Option<String>)> = entries
            .map(|entry| {
                let entry = entry.unwrap();
                let name = entry.file_name().to_string_lossy().into_owned();
                (name, read(entry.path().join("SKILL.md")))
            })
            .collect();
        kept.sort();
        kept
    }

    /// The skill as it was: v1 live, nothing kept.
    fn is_old(&self, old: &str) -> bool {
        read(self.live.clone()).as_deref() == Some(old) && self.kept().is_empty()
    }

    /// The skill revised: v2 live, v1 kept whole in `history/1/`.
    fn is_new(&self, old: &str, new: &str) -> bool {
        read(self.live.clone()).as_deref() == Some(new)
            && self.kept() == [("1".to_string(), Some(old.to_string()))]
    }
}

#[test]
fn a_revision_killed_at_any_moment_leaves_the_old_skill_or_the_new_one() {
    let mut rng = Rng(crate::util::fault_seed("playbook faults (revise)"));
    let home = Home::new();
    let revision = home.path.join("revision.md");
    std::fs::write(&revision, REVISED).unwrap();
    // Prepared once: a reported skill with the default permissions (the revision waits on a
    // card), the same with the revision filed as card #2, and a reported skill in unattended
    // mode (the revision is filed and applied in one go).
    let attended = reported(&home, "attended", false);
    let unattended = reported(&home, "unattended", true);
    let filed = home.copy(&attended.workspace, "filed");
    let full_file = timed(&mut revise(&home, &attended, &filed, &revision));
    let old = read(Skill::of(&filed).live).unwrap();
    assert_eq!(card_state(&filed, &home.path, 2), "waiting");
    // The revision as it lands, approved and applied on its own, run to the end.
    let approved = home.copy(&filed, "timing-approve");
    let full_approve = timed(home.cmd(&approved).args(["card", "approve", "2"]));
    let new = read(Skill::of(&approved).live).unwrap();
    assert!(Skill::of(&approved).is_new(&old, &new), "{new}");
    assert!(
        new.contains("say in the reply where it was written"),
        "{new}"
    );
    assert!(new.contains("version: 2"), "{new}");
    let applied = home.copy(&unattended.workspace, "timing-auto");
    let full_auto = timed(&mut revise(&home, &unattended, &applied, &revision));
    assert_eq!(card_state(&applied, &home.path, 2), "applied");
    assert_eq!(read(Skill::of(&applied).live).unwrap(), new);
    assert!(Skill::of(&applied).is_new(&old, &new));

    let rounds = 180;
    let mut killed_by_case = [0; 3];
    let mut finished_later = 0;
    for round in 0..rounds {
        // Round by round: the fixer filing its revision; the human approving it; the fixer
        // filing it in unattended mode, where filing applies it.
        let case = round % 3;
        let workspace = home.path.join(format!("round-{round}"));
        let (reported, mut cmd, full) = match case {
            0 => {
                home.copy(&attended.workspace, &format!("round-{round}"));
                let cmd = revise(&home, &attended, &workspace, &revision);
                (&attended, cmd, full_file)
            }
            1 => {
                home.copy(&filed, &format!("round-{round}"));
                let mut cmd = home.cmd(&workspace);
                cmd.args(["card", "approve", "2"]);
                (&attended, cmd, full_approve)
            }
            _ => {
                home.copy(&unattended.workspace, &format!("round-{round}"));
                let cmd = revise(&home, &unattended, &workspace, &revision);
                (&unattended, cmd, full_auto)
            }
        };
        let killed = kill_after(&mut cmd, delay_below(&mut rng, full));
        if killed {
            killed_by_case[case] += 1;
        }
        // Before anything opens the workspace again: the files are old or new, never partial
        // and never a mix (the journal is written before the first of them changes).
        let skill = Skill::of(&workspace);
        let live = read(skill.live.clone());
        assert!(
            live.as_deref() == Some(old.as_str()) || live.as_deref() == Some(new.as_str()),
            "round {round}: a partial SKILL.md: {live:?}"
        );
        // `history/1/` may be made and its file not yet renamed into place; never anything else.
        for (version, text) in skill.kept() {
            assert_eq!(version, "1", "round {round}");
            assert!(
                text.is_none() || text.as_deref() == Some(old.as_str()),
                "round {round}: a partial history/1/SKILL.md: {text:?}"
            );
        }
        if skill.is_new(&old, &new) {
            // The live file changes last: kept v1 before it goes.
        } else {
            assert_eq!(
                live.as_deref(),
                Some(old.as_str()),
                "round {round}: v2 is live but v1 is not kept"
            );
        }
        assert_eq!(integrity(&workspace), "ok", "round {round}");
        let revise_card = cards(&workspace, &home.path)
            .into_iter()
            .find(|card| card["kind"] == "revise");
        assert!(
            !workspace.join(".mindrune/applying.json").exists(),
            "round {round}: the next open left the journal"
        );
        assert_eq!(temps(&workspace), Vec::<PathBuf>::new(), "round {round}");
        let state = revise_card
            .as_ref()
            .map(|card| card["state"].as_str().unwrap().to_string());
        match state.as_deref() {
            None => {
                // The revision was never filed: nothing changed, and the fixer can file it.
                assert!(killed, "round {round}: revise finished but filed no card");
                assert_ne!(case, 1, "round {round}: the filed card is gone");
                assert!(skill.is_old(&old), "round {round}: changed without a card");
                ok(&mut revise(&home, reported, &workspace, &revision));
                if case == 0 {
                    home.ok(&workspace, &["card", "approve", "2"]);
                }
                assert!(skill.is_new(&old, &new), "round {round}");
            }
            Some("waiting") => {
                // Filed and not applied: the old skill, and approving it works.
                assert_ne!(case, 2, "round {round}: an unattended revision waits");
                assert!(killed || case == 0, "round {round}: the approval finished");
                assert!(skill.is_old(&old), "round {round}: changed while waiting");
                home.ok(&workspace, &["card", "approve", "2"]);
                assert!(skill.is_new(&old, &new), "round {round}");
            }
            Some("applied") => {
                assert_ne!(case, 0, "round {round}: applied without an approval");
                assert!(
                    skill.is_new(&old, &new),
                    "round {round}: applied, files old"
                );
                if killed {
                    finished_later += 1;
                }
            }
            Some(other) => panic!("round {round}: the revise card is {other}"),
        }
        std::fs::remove_dir_all(&workspace).unwrap();
    }
    let interrupted: usize = killed_by_case.iter().sum();
    eprintln!(
        "playbook faults (revise): {interrupted} of {rounds} killed ({} filing, {} approving, {} filing unattended), {finished_later} finished by the next open",
        killed_by_case[0], killed_by_case[1], killed_by_case[2]
    );
    assert!(
        interrupted >= rounds / 4,
        "only {interrupted} of {rounds} kills landed inside the process"
    );
}
