//! Bad input at a turn boundary: binary and huge scripts, symlinks in and out of the workspace,
//! a header with 10,000 tags, a 1 MB `Share:` line, files turning into symlinks and lines
//! deleted, the mirror's read-only modes, and a library that cannot answer at start.
//!
//! Each bad-input test builds the same healthy family beside the bad file — `buzz` has a
//! proven script that gets its `@skill` header in this turn and a lab log with normal lessons,
//! `pickles` is its sibling — and checks that `turn-end` still succeeds, warns naming the file,
//! reads nothing from outside the workspace, and that the sibling still gets the skill and the
//! lessons within the mirror's size caps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{TestLibrary, contains, mode_of, stderr, stdout, visible_files};

/// The caps of the mirror's two summary files.
const INDEX_CAP: usize = 4096;
const LESSONS_CAP: usize = 8192;

/// What the outside file holds: must never reach the library or a mirror.
const OUTSIDE_MARK: &str = "OUTSIDE-SECRET-q7Zk4w";

struct Family {
    lib: TestLibrary,
}

impl Family {
    /// `buzz` and `pickles`, both of `ada`.
    fn new() -> Family {
        let lib = TestLibrary::new();
        lib.agent("buzz", "ada");
        lib.agent("pickles", "ada");
        Family { lib }
    }

    fn bot_file(&self, agent: &str, file: &str) -> PathBuf {
        self.lib
            .workspace(agent)
            .join("bots")
            .join(agent)
            .join(file)
    }

    fn write(&self, agent: &str, file: &str, bytes: impl AsRef<[u8]>) {
        std::fs::write(self.bot_file(agent, file), bytes).unwrap();
    }

    /// Records `times` runs of `bots/<agent>/<name>.ts`; returns the output.
    fn run(&self, agent: &str, name: &str, ok: bool, times: usize) -> std::process::Output {
        let events: Vec<_> = (0..times)
            .map(|_| {
                json!({"agent": agent, "kind": "shell", "command": format!("bun bots/{agent}/{name}.ts"),
                       "cwd": "/work", "ok": ok, "duration_ms": 60000})
            })
            .collect();
        self.lib.record(&events)
    }

    /// Records runs that must be recorded without a warning.
    fn run_clean(&self, agent: &str, name: &str, times: usize) {
        let output = self.run(agent, name, true, times);
        assert!(output.status.success(), "{}", stderr(&output));
        assert!(!stderr(&output).contains("warning"), "{}", stderr(&output));
    }

    /// `mindrune turn-end AGENT`, which must succeed; returns what it printed.
    fn turn_end(&self, agent: &str) -> String {
        let output = self.lib.run(&["turn-end", agent]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "turn-end {agent} failed:\n{}{}",
            stdout(&output),
            stderr(&output)
        );
        stdout(&output)
    }

    fn mirror_dir(&self, agent: &str) -> PathBuf {
        self.lib.workspace(agent).join("family-skills")
    }

    /// Refreshes an agent's mirror now; returns its visible files.
    fn mirror(&self, agent: &str) -> BTreeMap<String, Vec<u8>> {
        self.lib.ok(&["mirror", agent]);
        visible_files(&self.mirror_dir(agent))
    }
}

fn code(n: u32) -> String {
    format!(
        "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n  await bot.chop({n});\n}});\n"
    )
}

fn headed(name: &str, goal: &str, body: &str) -> String {
    format!("/** @skill {name}\n * Goal: {goal}\n */\n{body}")
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

const LESSON_BEFORE: &str = "[place:lumbridge] the bank is upstairs";
const LESSON_AFTER: &str = "[item:bronze-axe] buy the axe before the quest";

/// The healthy part of every bad-input test: `chop-oaks.ts` proved itself without a header
/// and gets one now (so this very turn end shares it), and the lab log has two normal lessons
/// around `middle` (lines of the log, e.g. a 1 MB `Share:` line; empty for none).
fn healthy(f: &Family, middle: &str) {
    f.write("buzz", "chop-oaks.ts", code(1));
    f.run_clean("buzz", "chop-oaks", 5);
    f.write(
        "buzz",
        "chop-oaks.ts",
        headed("chop-oaks", "chop oaks west of Draynor", &code(1)),
    );
    f.write(
        "buzz",
        "lab_log.md",
        format!(
            "# lab log\nprivate: the bank is slow today\nShare: {LESSON_BEFORE}\n{middle}- Share: {LESSON_AFTER}\n"
        ),
    );
}

/// What a healthy turn end shares still reaches the sibling, within the caps, and nothing of
/// `never` (strings that must not have been read) reached the library or any mirror.
fn assert_healthy(f: &Family, turn: &str, never: &[&str]) {
    assert!(
        turn.contains("👪 buzz/chop-oaks v1 is a family skill now: cleared the bar (5 runs"),
        "the good script is shared in the same turn end:\n{turn}"
    );
    let pickles = f.mirror("pickles");
    let skill = text(
        pickles
            .get("buzz/chop-oaks.ts")
            .unwrap_or_else(|| panic!("pickles lacks buzz/chop-oaks.ts: {:?}", pickles.keys())),
    );
    assert!(skill.contains(" * From: buzz/chop-oaks\n"), "{skill}");
    assert!(skill.ends_with(&code(1)), "{skill}");
    let lessons = text(&pickles["LESSONS.md"]);
    assert!(lessons.contains("the bank is upstairs (buzz)"), "{lessons}");
    assert!(
        lessons.contains("buy the axe before the quest (buzz)"),
        "{lessons}"
    );
    assert!(!lessons.contains("private"), "{lessons}");
    let buzz = f.mirror("buzz");
    for (who, files) in [("pickles", &pickles), ("buzz", &buzz)] {
        assert!(
            files["INDEX.md"].len() <= INDEX_CAP,
            "{who}'s INDEX.md is {} bytes",
            files["INDEX.md"].len()
        );
        assert!(
            files["LESSONS.md"].len() <= LESSONS_CAP,
            "{who}'s LESSONS.md is {} bytes",
            files["LESSONS.md"].len()
        );
        for (path, bytes) in files {
            for mark in never {
                assert!(!contains(bytes, mark), "{mark} reached {who}'s {path}");
            }
        }
    }
    let stored = f.lib.stored_bytes();
    for mark in never {
        assert!(!contains(&stored, mark), "{mark} reached the library");
    }
}

/// The `warning:` line of a turn report that names `place` (`file` or `file:line`).
fn warning_about<'a>(turn: &'a str, place: &str) -> &'a str {
    turn.lines()
        .find(|line| {
            line.trim_start()
                .strip_prefix("warning: ")
                .is_some_and(|rest| rest.starts_with(&format!("{place}:")))
        })
        .unwrap_or_else(|| panic!("no warning naming {place}:\n{turn}"))
}

#[test]
fn a_binary_script_is_skipped_with_a_warning_and_the_rest_is_shared() {
    let f = Family::new();
    healthy(&f, "");
    let mut blob = b"\x7fELF\x02\x01\x01\0\0\xff\xfe BINARY-MARK-3k9 \0\xc3\x28".to_vec();
    blob.extend((0..4096u32).map(|n| (n * 7 % 256) as u8));
    f.write("buzz", "blob.ts", &blob);
    // A run of it is not recorded either.
    let recorded = f.run("buzz", "blob", true, 1);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert!(
        stderr(&recorded).contains("`bots/buzz/blob.ts` is not UTF-8 text"),
        "{}",
        stderr(&recorded)
    );

    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/blob.ts");
    assert!(warning.contains("not UTF-8 text"), "{warning}");
    assert_healthy(&f, &turn, &["BINARY-MARK-3k9"]);
    assert!(!f.mirror("pickles").contains_key("buzz/blob.ts"));
}

#[test]
fn a_50_mb_script_is_skipped_unread_with_a_warning_naming_its_size() {
    let f = Family::new();
    healthy(&f, "");
    let path = f.bot_file("buzz", "big.ts");
    {
        use std::io::Write as _;
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(headed("big", "BIG-MARK-5t2x", "").as_bytes())
            .unwrap();
        // Sparse: 50 MB on paper, a few bytes on disk.
        file.set_len(50 * 1024 * 1024).unwrap();
    }
    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/big.ts");
    assert!(
        warning.contains("52428800 bytes, over the 1 MiB"),
        "{warning}"
    );
    assert_healthy(&f, &turn, &["BIG-MARK-5t2x"]);
    assert!(!f.mirror("pickles").contains_key("buzz/big.ts"));
}

#[test]
fn symlinked_scripts_out_of_or_inside_the_workspace_are_skipped_and_never_read() {
    let f = Family::new();
    healthy(&f, "");
    // A headed, "proven" script outside the workspace, and one inside it but outside bots/.
    let outside = f.lib.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let outside_file = outside.join("secret.ts");
    std::fs::write(
        &outside_file,
        headed(
            "evil",
            OUTSIDE_MARK,
            &format!("// {OUTSIDE_MARK}\n{}", code(9)),
        ),
    )
    .unwrap();
    let notes = f.lib.workspace("buzz").join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    std::fs::write(
        notes.join("inside.ts"),
        headed("inside", "INSIDE-MARK-8w1p", &code(8)),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside_file, f.bot_file("buzz", "evil.ts")).unwrap();
    std::os::unix::fs::symlink("../../notes/inside.ts", f.bot_file("buzz", "inside.ts")).unwrap();

    // Runs of them are not recorded: the recorder does not follow the links either.
    for name in ["evil", "inside"] {
        let recorded = f.run("buzz", name, true, 5);
        assert!(recorded.status.success(), "{}", stderr(&recorded));
        assert!(
            stderr(&recorded).contains(&format!("`bots/buzz/{name}.ts` goes through a symlink")),
            "{}",
            stderr(&recorded)
        );
    }

    let turn = f.turn_end("buzz");
    for file in ["bots/buzz/evil.ts", "bots/buzz/inside.ts"] {
        assert!(warning_about(&turn, file).contains("a symlink"), "{turn}");
    }
    assert!(!turn.contains(OUTSIDE_MARK), "{turn}");
    assert_healthy(&f, &turn, &[OUTSIDE_MARK, "INSIDE-MARK-8w1p"]);
    let pickles = f.mirror("pickles");
    assert_eq!(
        pickles.keys().collect::<Vec<_>>(),
        ["INDEX.md", "LESSONS.md", "buzz/chop-oaks.ts"]
    );
    let skills = f.lib.ok(&["skills", "--agent", "buzz"]);
    assert!(
        !skills.contains("evil") && !skills.contains("inside"),
        "{skills}"
    );
    // The targets are untouched.
    assert!(
        std::fs::read_to_string(&outside_file)
            .unwrap()
            .contains(OUTSIDE_MARK)
    );
}

#[test]
fn a_lab_log_that_is_a_symlink_out_of_the_workspace_shares_nothing_from_it() {
    let f = Family::new();
    healthy(&f, "");
    f.turn_end("buzz");
    let outside = f.lib.dir.path().join("outside_log.md");
    std::fs::write(&outside, format!("Share: {OUTSIDE_MARK} the gate code\n")).unwrap();
    let log = f.bot_file("buzz", "lab_log.md");
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&outside, &log).unwrap();

    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/lab_log.md");
    assert!(
        warning.contains("its Share: lines are not shared until it can be read"),
        "{warning}"
    );
    assert!(turn.contains("lessons: 0 shared, 2 un-shared"), "{turn}");
    let pickles = f.mirror("pickles");
    let lessons = text(&pickles["LESSONS.md"]);
    assert!(!lessons.contains("the bank is upstairs"), "{lessons}");
    for (path, bytes) in &pickles {
        assert!(!contains(bytes, OUTSIDE_MARK), "reached pickles's {path}");
    }
    assert!(!contains(&f.lib.stored_bytes(), OUTSIDE_MARK));
}

#[test]
fn a_header_with_10000_tags_keeps_64_and_warns_naming_its_line() {
    let f = Family::new();
    healthy(&f, "");
    let tags: Vec<String> = (0..10_000).map(|n| format!("item:thing-{n}")).collect();
    let source = format!(
        "/** @skill many-tags\n * Goal: tag everything\n * Tags: {}\n */\n{}",
        tags.join(", "),
        code(2)
    );
    f.write("buzz", "many-tags.ts", &source);
    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/many-tags.ts:3");
    assert!(
        warning.contains("more than 64 tags; 9936 were dropped"),
        "{warning}"
    );
    assert_healthy(&f, &turn, &["item:thing-64", "item:thing-9999"]);

    // Once it proved itself it is shared with at most 64 tags, and INDEX.md, listing every
    // topic in use, stays within its cap.
    f.run_clean("buzz", "many-tags", 5);
    let pickles = f.mirror("pickles");
    let mirrored = text(&pickles["buzz/many-tags.ts"]);
    let tag_line = mirrored
        .lines()
        .find(|line| line.starts_with(" * Tags: "))
        .unwrap_or_else(|| panic!("{mirrored}"));
    let kept: Vec<u32> = tag_line[" * Tags: ".len()..]
        .split(", ")
        .map(|tag| tag.strip_prefix("item:thing-").unwrap().parse().unwrap())
        .collect();
    assert_eq!(kept.len(), 64, "{tag_line}");
    assert!(
        kept.iter().all(|&n| n < 64),
        "the first 64 are kept: {tag_line}"
    );
    assert!(mirrored.ends_with(&code(2)));
    let index = &pickles["INDEX.md"];
    assert!(
        index.len() <= INDEX_CAP,
        "INDEX.md is {} bytes",
        index.len()
    );
    assert!(
        text(index).contains("item:thing-0 (1 skill"),
        "{}",
        text(index)
    );
    assert!(pickles.contains_key("buzz/chop-oaks.ts"));
    assert!(pickles["LESSONS.md"].len() <= LESSONS_CAP);
}

#[test]
fn a_header_problem_is_warned_even_when_a_run_read_the_file_first() {
    // The usual order: the agent writes a script, runs it, and then its turn ends.
    let f = Family::new();
    healthy(&f, "");
    let tags: Vec<String> = (0..100).map(|n| format!("item:thing-{n}")).collect();
    f.write(
        "buzz",
        "many-tags.ts",
        format!(
            "/** @skill many-tags\n * Goal: tag everything\n * Tags: {}\n */\n{}",
            tags.join(", "),
            code(2)
        ),
    );
    f.run_clean("buzz", "many-tags", 1);
    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/many-tags.ts:3");
    assert!(
        warning.contains("more than 64 tags; 36 were dropped"),
        "{warning}"
    );
    assert_healthy(&f, &turn, &[]);
}

#[test]
fn a_1_mb_share_line_is_cut_and_the_lessons_around_it_are_shared() {
    let f = Family::new();
    let huge = "abcdefghij".repeat(100_000);
    // Lines: 1 title, 2 private, 3 the lesson before, 4 the huge one, 5 the lesson after.
    healthy(&f, &format!("Share: HUGE-START {huge} HUGE-END\n"));
    let turn = f.turn_end("buzz");
    let warning = warning_about(&turn, "bots/buzz/lab_log.md:4");
    assert!(
        warning.contains("longer than 500 characters and was cut"),
        "{warning}"
    );
    assert!(turn.contains("lessons: 3 shared, 0 un-shared"), "{turn}");
    assert_healthy(&f, &turn, &["HUGE-END"]);
    let lessons = text(&f.mirror("pickles")["LESSONS.md"]).to_string();
    let cut = lessons
        .lines()
        .find(|line| line.contains("HUGE-START"))
        .unwrap_or_else(|| panic!("{lessons}"));
    assert!(cut.chars().count() < 600, "{} chars", cut.chars().count());
    assert!(cut.contains("…"), "{cut}");
}

#[test]
fn a_shared_skill_whose_file_becomes_a_symlink_is_unshared_at_the_next_turn_end() {
    let f = Family::new();
    healthy(&f, "");
    assert_healthy(&f, &f.turn_end("buzz"), &[]);

    // The same bytes, but now through a link to a copy elsewhere in the workspace.
    let file = f.bot_file("buzz", "chop-oaks.ts");
    let copy = f.lib.workspace("buzz").join("chop-oaks-copy.ts");
    std::fs::copy(&file, &copy).unwrap();
    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink("../../chop-oaks-copy.ts", &file).unwrap();

    let turn = f.turn_end("buzz");
    assert!(
        warning_about(&turn, "bots/buzz/chop-oaks.ts").contains("a symlink"),
        "{turn}"
    );
    assert!(
        turn.contains("🔒 buzz/chop-oaks is private again"),
        "{turn}"
    );
    let pickles = f.mirror("pickles");
    assert!(!pickles.contains_key("buzz/chop-oaks.ts"), "{pickles:?}");
    assert!(
        !text(&pickles["INDEX.md"]).contains("chop-oaks"),
        "{}",
        text(&pickles["INDEX.md"])
    );
    // History stays.
    let skill = f.lib.skill_json("buzz/chop-oaks");
    assert_eq!(skill["versions"][0]["runs"], 5, "{skill}");

    // A plain file again shares it again at once.
    std::fs::remove_file(&file).unwrap();
    std::fs::copy(&copy, &file).unwrap();
    let turn = f.turn_end("buzz");
    assert!(turn.contains("shared again"), "{turn}");
    assert!(f.mirror("pickles").contains_key("buzz/chop-oaks.ts"));
}

#[test]
fn a_deleted_share_line_is_unshared_at_the_next_turn_end() {
    let f = Family::new();
    healthy(&f, "Share: [npc:hans] Hans walks around the castle\n");
    let turn = f.turn_end("buzz");
    assert!(turn.contains("lessons: 3 shared"), "{turn}");
    assert!(text(&f.mirror("pickles")["LESSONS.md"]).contains("Hans walks around the castle"));

    let log = f.bot_file("buzz", "lab_log.md");
    let without: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|line| !line.contains("Hans"))
        .map(|line| format!("{line}\n"))
        .collect();
    std::fs::write(&log, without).unwrap();
    let turn = f.turn_end("buzz");
    assert!(
        turn.contains("lessons: 0 shared, 1 un-shared, 2 as before"),
        "{turn}"
    );
    let pickles = f.mirror("pickles");
    let lessons = text(&pickles["LESSONS.md"]);
    assert!(!lessons.contains("Hans"), "{lessons}");
    assert!(!lessons.contains("npc:hans"), "{lessons}");
    assert!(
        !text(&pickles["INDEX.md"]).contains("npc:hans"),
        "the topic count goes with it"
    );
    assert!(lessons.contains("the bank is upstairs (buzz)"), "{lessons}");
    assert!(lessons.contains("buy the axe before the quest (buzz)"));

    // Dropping `Share:` from a line un-shares it the same way.
    let text_now = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text_now.replace("- Share: ", "- ")).unwrap();
    let turn = f.turn_end("buzz");
    assert!(turn.contains("lessons: 0 shared, 1 un-shared"), "{turn}");
    let lessons = text(&f.mirror("pickles")["LESSONS.md"]).to_string();
    assert!(!lessons.contains("buy the axe"), "{lessons}");
}

/// Every entry under `dir` (hidden ones too) with its mode, never following a symlink.
fn modes(dir: &Path) -> Vec<(PathBuf, u32, bool)> {
    let mut found = vec![(dir.to_path_buf(), mode_of(dir), true)];
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        assert!(!kind.is_symlink(), "a symlink in the mirror: {entry:?}");
        if kind.is_dir() {
            found.extend(modes(&entry.path()));
        } else {
            found.push((entry.path(), mode_of(&entry.path()), false));
        }
    }
    found
}

fn assert_read_only(dir: &Path) {
    let found = modes(dir);
    assert!(found.len() >= 4, "{found:?}");
    for (path, mode, is_dir) in found {
        let want = if is_dir { 0o555 } else { 0o644 };
        assert_eq!(mode, want, "{} is {mode:o}, not {want:o}", path.display());
    }
}

#[test]
fn the_mirror_s_folders_are_0555_and_its_files_0644() {
    let f = Family::new();
    healthy(&f, "");
    f.turn_end("buzz");
    f.mirror("pickles");
    let dir = f.mirror_dir("pickles");
    assert!(dir.join(".manifest").exists());
    assert!(dir.join("buzz/chop-oaks.ts").exists());
    assert_read_only(&dir);
    // The author's own mirror, written by its turn end.
    assert_read_only(&f.mirror_dir("buzz"));

    // A refresh that changes files, adds and removes a sibling folder seals everything again.
    f.write(
        "buzz",
        "lab_log.md",
        "Share: [place:varrock] the east bank is quieter\n",
    );
    f.write("pickles", "mine.ts", headed("mine", "mine iron", &code(3)));
    f.run_clean("pickles", "mine", 5);
    f.turn_end("buzz");
    f.mirror("buzz");
    assert!(f.mirror_dir("buzz").join("pickles/mine.ts").exists());
    assert_read_only(&f.mirror_dir("buzz"));
    f.write("buzz", "chop-oaks.ts", code(1));
    f.turn_end("buzz");
    let pickles = f.mirror("pickles");
    assert!(!pickles.contains_key("buzz/chop-oaks.ts"));
    assert!(!dir.join("buzz").exists(), "an emptied sibling folder goes");
    assert_read_only(&dir);
}

#[test]
fn a_copy_from_family_skills_is_the_agent_s_own_to_edit_as_a_normal_user_and_the_mirror_is_not() {
    use std::os::unix::fs::PermissionsExt as _;
    let f = Family::new();
    healthy(&f, "");
    f.turn_end("buzz");
    f.mirror("pickles");
    let mirror = f.mirror_dir("pickles");
    let source = mirror.join("buzz/chop-oaks.ts");
    assert!(source.exists());
    let bot = f.bot_file("pickles", "");
    // As the agent does it, as a user who is not root (nobody, when the suite runs as root).
    let as_agent = |line: &str| {
        let root = running_as_root();
        let mut command = if root {
            let mut c = std::process::Command::new("setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "sh",
                "-c",
                line,
            ]);
            c
        } else {
            let mut c = std::process::Command::new("sh");
            c.args(["-c", line]);
            c
        };
        command.current_dir(&bot).output().unwrap()
    };
    if running_as_root() {
        // nobody must reach the folders and write in its own bot folder.
        let mut dir = bot.clone();
        while dir.starts_with(f.lib.dir.path()) {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode | 0o755)).unwrap();
            if !dir.pop() {
                break;
            }
        }
        std::fs::set_permissions(&bot, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let copied = as_agent(&format!(
        "cp '{}' . && echo '// adapted' >> chop-oaks.ts",
        source.display()
    ));
    assert!(copied.status.success(), "{}", stderr(&copied));
    let copy = std::fs::read_to_string(bot.join("chop-oaks.ts")).unwrap();
    assert!(copy.ends_with("// adapted\n"), "{copy}");
    // The mirror itself: no new file in it, and (as another user than its writer) no change.
    let into_mirror = as_agent(&format!("touch '{}'", mirror.join("buzz/new.ts").display()));
    assert!(!into_mirror.status.success());
    if running_as_root() {
        let changed = as_agent(&format!("echo x >> '{}'", source.display()));
        assert!(!changed.status.success());
    }
    assert!(
        !std::fs::read_to_string(&source)
            .unwrap()
            .contains("adapted")
    );
}

/// Whether the suite runs as root (then the agent's part is played by `nobody`).
fn running_as_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0")
}

#[test]
fn start_with_a_corrupt_library_empties_the_mirror_and_fails_clearly() {
    let f = Family::new();
    f.write("pickles", "mine.ts", headed("mine", "mine iron", &code(3)));
    f.run_clean("pickles", "mine", 5);
    let out = f.lib.dir.path().join("sandbox-mirror");
    f.lib.ok(&["start", "buzz", "--out", out.to_str().unwrap()]);
    assert!(out.join("pickles/mine.ts").exists());
    // A stale file of someone else's beside the mirror's own.
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(out.join("stale.md"), "stale").unwrap();
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o555)).unwrap();

    let home = f.lib.home();
    for side in ["library.db-wal", "library.db-shm"] {
        let _ = std::fs::remove_file(home.join(side));
    }
    let garbage: Vec<u8> = (0..64 * 1024u32).map(|n| (n * 31 % 251) as u8).collect();
    std::fs::write(home.join("library.db"), garbage).unwrap();

    let output = f
        .lib
        .run(&["start", "buzz", "--out", out.to_str().unwrap()]);
    assert!(!output.status.success(), "{}", stdout(&output));
    let message = stderr(&output);
    assert!(
        message.starts_with(&format!(
            "error: the library cannot answer, so {} was emptied",
            out.display()
        )),
        "{message}"
    );
    assert!(message.contains("cannot open the library at"), "{message}");
    assert!(message.contains("library.db"), "{message}");
    assert_eq!(
        std::fs::read_dir(&out).unwrap().count(),
        0,
        "emptied, manifest and strays too"
    );
    assert_eq!(mode_of(&out), 0o555);
}

#[test]
fn start_empties_the_mirror_when_the_library_opens_but_cannot_answer() {
    let f = Family::new();
    f.write("pickles", "mine.ts", headed("mine", "mine iron", &code(3)));
    f.run_clean("pickles", "mine", 5);
    let out = f.lib.dir.path().join("sandbox-mirror");
    f.lib.ok(&["start", "buzz", "--out", out.to_str().unwrap()]);
    assert!(out.join("pickles/mine.ts").exists());

    // The library opens (its schema version is right) but a table it needs is gone, as after
    // a corrupt page: it cannot answer.
    let conn = rusqlite::Connection::open(f.lib.home().join("library.db")).unwrap();
    conn.execute_batch("DROP TABLE lessons;").unwrap();
    drop(conn);

    let output = f
        .lib
        .run(&["start", "buzz", "--out", out.to_str().unwrap()]);
    assert!(!output.status.success(), "{}", stdout(&output));
    assert!(
        stderr(&output).contains("no such table"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        visible_files(&out).keys().collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "the library could not answer, so the mirror must not stay stale: {}",
        stderr(&output)
    );
}

#[test]
fn the_turn_end_report_reads_well() {
    let f = Family::new();
    healthy(&f, "Share:\n");
    f.write(
        "buzz",
        "mine-iron.ts",
        headed("mine-iron", "mine iron in Varrock", &code(2)),
    );
    f.run_clean("buzz", "mine-iron", 2);
    f.write("buzz", "fish.ts", code(3));
    f.run_clean("buzz", "fish", 6);
    f.write("buzz", "blob.ts", b"\xff\xfe\0binary");
    let turn = f.turn_end("buzz");

    let tmp = f.lib.dir.path();
    let mut filtered = turn.replace(tmp.to_str().unwrap(), "[TMP]");
    if let Ok(real) = tmp.canonicalize() {
        filtered = filtered.replace(real.to_str().unwrap(), "[TMP]");
    }
    insta::assert_snapshot!(filtered);
}
