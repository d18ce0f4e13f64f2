//! Family sharing end to end: a family of three avatars (and another owner's avatar) through
//! runs, header edits, copies, renames, deletions, eager on and off, and restarts, asserting
//! the exact files each sibling sees in its `family-skills/`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use crate::util::{TestLibrary, stderr, stdout};

/// Every file under a mirror directory, relative path → content (the manifest left out).
fn mirror_files(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().into_string().unwrap();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            for (inner, content) in mirror_files(&path) {
                files.insert(format!("{name}/{inner}"), content);
            }
        } else {
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    files
}

fn file_names(dir: &Path) -> Vec<String> {
    mirror_files(dir).into_keys().collect()
}

struct Family {
    lib: TestLibrary,
}

impl Family {
    fn new() -> Family {
        let lib = TestLibrary::new();
        for agent in ["buzz", "pickles", "rnchk"] {
            lib.agent(agent, "ada");
        }
        lib.ok(&["owner", "add", "eve"]);
        lib.agent("mallory", "eve");
        Family { lib }
    }

    fn mirror_dir(&self, agent: &str) -> std::path::PathBuf {
        self.lib.workspace(agent).join("family-skills")
    }

    /// Refreshes an agent's mirror and returns its files.
    fn mirror(&self, agent: &str) -> BTreeMap<String, String> {
        self.lib.ok(&["mirror", agent]);
        mirror_files(&self.mirror_dir(agent))
    }

    fn names(&self, agent: &str) -> Vec<String> {
        self.lib.ok(&["mirror", agent]);
        file_names(&self.mirror_dir(agent))
    }

    fn run(&self, agent: &str, name: &str, ok: bool, times: usize) -> String {
        let events: Vec<_> = (0..times)
            .map(|_| {
                json!({"agent": agent, "kind": "shell", "command": format!("bun bots/{agent}/{name}.ts"),
                       "cwd": "/work", "ok": ok, "duration_ms": 60000})
            })
            .collect();
        let output = self.lib.record(&events);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    }

    fn turn_end(&self, agent: &str) -> String {
        self.lib.ok(&["turn-end", agent])
    }

    fn lab_log(&self, agent: &str, text: &str) {
        std::fs::write(
            self.lib
                .workspace(agent)
                .join("bots")
                .join(agent)
                .join("lab_log.md"),
            text,
        )
        .unwrap();
    }

    fn bot_file(&self, agent: &str, file: &str) -> std::path::PathBuf {
        self.lib
            .workspace(agent)
            .join("bots")
            .join(agent)
            .join(file)
    }
}

fn headed(name: &str, goal: &str, extra: &str, body: &str) -> String {
    format!("/** @skill {name}\n * Goal: {goal}\n{extra} */\n{body}")
}

fn code(n: u32) -> String {
    format!(
        "import {{ runScript }} from '../../sdk/runner';\n\nawait runScript(async ({{ bot }}) => {{\n  await bot.chop({n});\n}});\n"
    )
}

#[test]
fn a_family_shares_exactly_what_each_avatar_chose_and_what_proved_itself() {
    let f = Family::new();
    let lib = &f.lib;
    let chop = headed(
        "chop-oaks",
        "chop oaks west of Draynor and bank the logs",
        " * Preconditions: an axe, Woodcutting 15\n * Tags: item:oak-logs\n",
        &code(1),
    );
    lib.write_script("buzz", "chop-oaks", &chop);
    lib.write_script(
        "pickles",
        "mine-iron",
        &headed("mine-iron", "mine iron in Varrock", "", &code(2)),
    );
    lib.write_script("rnchk", "fish", &code(3));
    // Another owner's avatar runs the very same code, with the very same header.
    lib.write_script("mallory", "chop-oaks", &chop);
    f.run("mallory", "chop-oaks", true, 6);

    // Four runs: headed but not proven, so nobody sees it.
    f.run("buzz", "chop-oaks", true, 4);
    let turn = f.turn_end("buzz");
    assert!(
        turn.contains("chop-oaks.ts: 4/5 runs, score"),
        "the turn report shows the way to the bar:\n{turn}"
    );
    assert_eq!(f.names("pickles"), ["INDEX.md", "LESSONS.md"]);

    // The fifth clean run makes it qualify: shared right after that run.
    let recorded = f.run("buzz", "chop-oaks", true, 1);
    assert!(
        recorded.contains("👪 buzz/chop-oaks v1 is a family skill now: cleared the bar (5 runs"),
        "{recorded}"
    );
    let pickles = f.mirror("pickles");
    assert_eq!(
        pickles.keys().collect::<Vec<_>>(),
        ["INDEX.md", "LESSONS.md", "buzz/chop-oaks.ts"]
    );
    let mirrored = &pickles["buzz/chop-oaks.ts"];
    assert!(mirrored.starts_with("/** @skill chop-oaks\n"), "{mirrored}");
    assert!(mirrored.contains(" * From: buzz/chop-oaks\n"), "{mirrored}");
    // The header's Tags: first, then what its goal names ("west of Draynor").
    assert!(
        mirrored.contains(" * Topics: item:oak-logs, place:draynor-village\n"),
        "{mirrored}"
    );
    assert!(
        mirrored.ends_with(&code(1)),
        "the proven code follows the header"
    );
    assert!(pickles["INDEX.md"].contains("item:oak-logs (1 skill, 0 lessons)"));
    assert!(pickles["INDEX.md"].contains("buzz/chop-oaks.ts — score 6"));
    // The author does not see its own skill as a sibling's, but sees how siblings use it.
    let buzz = f.mirror("buzz");
    assert_eq!(buzz.keys().collect::<Vec<_>>(), ["INDEX.md", "LESSONS.md"]);
    assert!(
        buzz["INDEX.md"].contains("## Your shared skills"),
        "{}",
        buzz["INDEX.md"]
    );
    assert!(buzz["INDEX.md"].contains("- chop-oaks v1: used by 0 siblings"));

    // A proven script without a header is only offered, never shared.
    f.run("rnchk", "fish", true, 6);
    let turn = f.turn_end("rnchk");
    assert!(
        turn.contains("fish.ts proved itself (6 runs, score"),
        "{turn}"
    );
    assert!(turn.contains("/** @skill fish"), "{turn}");
    assert!(!f.names("pickles").contains(&"rnchk/fish.ts".to_string()));

    // Lessons: only Share: lines leave a lab log; a tag naming a skill that is not shared is
    // plain words.
    f.lab_log(
        "buzz",
        "# lab log\nprivate musing: the bank is slow\nShare: [quest:restless-ghost] Father Aereck is in the church\n- Share: [skill:pickles/mine-iron] fails when the inventory is full, bank first\n",
    );
    f.turn_end("buzz");
    let lessons = &f.mirror("pickles")["LESSONS.md"];
    assert!(lessons.contains("[quest:restless-ghost] Father Aereck is in the church (buzz)"));
    assert!(lessons.contains("pickles/mine-iron fails when the inventory is full"));
    assert!(!lessons.contains("[skill:pickles/mine-iron]"));
    assert!(!lessons.contains("private musing"));

    // Once pickles's skill is shared, buzz's lesson is feedback, listed first for pickles.
    f.run("pickles", "mine-iron", true, 5);
    let pickles = f.mirror("pickles");
    let lessons = &pickles["LESSONS.md"];
    let feedback = lessons.find("## Feedback on your shared skills").unwrap();
    let entry = lessons
        .find("[skill:pickles/mine-iron] fails when")
        .unwrap();
    let rest = lessons.find("## Lessons").unwrap();
    assert!(feedback < entry && entry < rest, "{lessons}");
    assert!(pickles["INDEX.md"].contains("- mine-iron v1: used by 0 siblings, 0 failures in 7 days, 0 improved copies, 1 feedback lesson"), "{}", pickles["INDEX.md"]);

    // rnchk copies buzz's skill from its mirror: unchanged, its runs count for buzz's skill.
    let rnchk_mirror = f.mirror("rnchk");
    std::fs::write(
        f.bot_file("rnchk", "chop-oaks.ts"),
        &rnchk_mirror["buzz/chop-oaks.ts"],
    )
    .unwrap();
    let recorded = f.run("rnchk", "chop-oaks", false, 1);
    assert!(recorded.contains("1 run of 1 script"), "{recorded}");
    let skill = lib.skill_json("buzz/chop-oaks");
    assert_eq!(skill["versions"][0]["runs"], 6, "{skill}");
    let turn = f.turn_end("rnchk");
    assert!(
        turn.contains("chop-oaks.ts: an unchanged copy of buzz/chop-oaks, already a family skill"),
        "{turn}"
    );
    // Changing the copy makes it rnchk's own skill, built on buzz's.
    let adapted = rnchk_mirror["buzz/chop-oaks.ts"].replace("bot.chop(1)", "bot.chop(11)");
    std::fs::write(f.bot_file("rnchk", "chop-oaks.ts"), adapted).unwrap();
    f.run("rnchk", "chop-oaks", true, 1);
    let own = lib.skill_json("rnchk/chop-oaks");
    assert_eq!(
        own["versions"][0]["built_on"]["lineage"], "sibling",
        "{own}"
    );
    let index = &f.mirror("buzz")["INDEX.md"];
    assert!(
        index.contains("- chop-oaks v1: used by 1 sibling, 1 failure in 7 days, 1 improved copy (rnchk/chop-oaks v1), 0 feedback lessons"),
        "{index}"
    );

    // @private un-shares at the turn end; removing it shares again at once, history kept.
    lib.write_script(
        "buzz",
        "chop-oaks",
        &chop.replace(" * Tags:", " * @private\n * Tags:"),
    );
    let turn = f.turn_end("buzz");
    assert!(
        turn.contains("🔒 buzz/chop-oaks is private again: the header says @private"),
        "{turn}"
    );
    assert!(
        !f.names("pickles")
            .contains(&"buzz/chop-oaks.ts".to_string())
    );
    lib.write_script("buzz", "chop-oaks", &chop);
    let turn = f.turn_end("buzz");
    assert!(
        turn.contains("👪 buzz/chop-oaks v1 is a family skill now: shared again"),
        "{turn}"
    );
    assert!(
        f.names("pickles")
            .contains(&"buzz/chop-oaks.ts".to_string())
    );

    // A rename while the agent was stopped: the restart un-shares the old skill; the new file
    // starts its own history, built on it, and must prove itself.
    std::fs::rename(
        f.bot_file("buzz", "chop-oaks.ts"),
        f.bot_file("buzz", "oaks.ts"),
    )
    .unwrap();
    let start = lib.ok(&["start", "buzz"]);
    assert!(
        start.contains("🔒 buzz/chop-oaks is private again: the file was deleted or renamed"),
        "{start}"
    );
    assert!(start.contains("checked  oaks.ts: new"), "{start}");
    assert!(start.contains("oaks.ts: 0/5 runs"), "{start}");
    assert_eq!(f.names("pickles"), ["INDEX.md", "LESSONS.md"]);

    // Eager family sharing: three clean runs share; switching it off keeps what was shared.
    lib.write_script(
        "rnchk",
        "net",
        &headed("net", "net shrimp at Lumbridge", "", &code(4)),
    );
    f.run("rnchk", "net", true, 3);
    assert!(!f.names("pickles").contains(&"rnchk/net.ts".to_string()));
    lib.ok(&["owner", "eager", "ada", "on"]);
    let turn = f.turn_end("rnchk");
    assert!(
        turn.contains("👪 rnchk/net v1 is a family skill now"),
        "{turn}"
    );
    lib.ok(&["owner", "eager", "ada", "off"]);
    assert!(f.names("pickles").contains(&"rnchk/net.ts".to_string()));

    // The other owner's avatar sees nothing of this family, and this family nothing of it.
    let mallory = f.mirror("mallory");
    assert_eq!(
        mallory.keys().collect::<Vec<_>>(),
        ["INDEX.md", "LESSONS.md"]
    );
    for text in mallory.values() {
        for word in ["buzz", "pickles", "rnchk", "Aereck"] {
            assert!(
                !text.contains(word),
                "{word} leaked to another owner:\n{text}"
            );
        }
    }
    for agent in ["buzz", "pickles", "rnchk"] {
        for text in f.mirror(agent).values() {
            assert!(!text.contains("mallory"), "another owner leaked:\n{text}");
        }
    }
    let theirs = lib.skill_json("mallory/chop-oaks");
    assert_eq!(
        theirs["versions"][0]["runs"], 6,
        "same code counts only as their own"
    );

    // Deleting an avatar removes its scripts; its shared skills stay with the family.
    let removed = lib.ok(&["agent", "remove", "pickles"]);
    assert!(removed.contains("1 shared skill stay"), "{removed}");
    assert!(
        f.names("buzz")
            .contains(&"pickles/mine-iron.ts".to_string())
    );
}

#[test]
fn a_verbatim_copy_of_a_skill_whose_code_held_a_secret_counts_for_the_sibling() {
    let f = Family::new();
    let lib = &f.lib;
    // buzz's code holds its bot's password (from bot.env): the family gets it redacted.
    let body = "import { runScript } from '../../sdk/runner';\n\nconst login = 'pw-buzz-s3cret77';\nawait runScript(async ({ bot }) => {\n  await bot.chop(login);\n});\n";
    lib.write_script("buzz", "oaks", &headed("oaks", "chop oaks", "", body));
    f.run("buzz", "oaks", true, 5);
    let mirrored = f.mirror("pickles")["buzz/oaks.ts"].clone();
    assert!(!mirrored.contains("pw-buzz-s3cret77"), "{mirrored}");
    assert!(mirrored.contains("From: buzz/oaks"), "{mirrored}");

    lib.write_script("pickles", "oaks", &mirrored);
    f.run("pickles", "oaks", true, 1);
    assert_eq!(lib.skill_json("buzz/oaks")["versions"][0]["runs"], 6);
    assert!(
        !lib.run(&["skill", "show", "pickles/oaks"]).status.success(),
        "the copy is not pickles' own new skill"
    );
    let turn = f.turn_end("pickles");
    assert!(
        turn.contains("oaks.ts: an unchanged copy of buzz/oaks, already a family skill"),
        "{turn}"
    );
}

#[test]
fn index_md_and_the_cli_read_a_skill_s_score_as_of_now_so_an_unused_one_drifts_to_the_middle() {
    let f = Family::new();
    let lib = &f.lib;
    lib.write_script("buzz", "oaks", &headed("oaks", "chop oaks", "", &code(7)));
    // Five clean runs, sixty days ago: shared then, at the score they earned then.
    let long_ago = time::OffsetDateTime::now_utc() - time::Duration::days(60);
    let events: Vec<_> = (0..5)
        .map(|i| {
            let at = (long_ago + time::Duration::minutes(i))
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap();
            json!({"agent": "buzz", "kind": "shell", "command": "bun bots/buzz/oaks.ts",
                   "cwd": "/work", "ok": true, "duration_ms": 60000, "at": at})
        })
        .collect();
    assert!(lib.record(&events).status.success());
    // The score as of its last use, as the library keeps it (what sharing decided on).
    let conn = rusqlite::Connection::open(lib.home().join("library.db")).unwrap();
    let stored: f64 = conn
        .query_row("SELECT max(score) FROM versions", [], |row| row.get(0))
        .unwrap();
    let stored = stored.round() as i64;
    assert!(stored >= 600, "shared at {stored}");
    let cli = lib.skill_json("buzz/oaks")["score"]
        .as_f64()
        .unwrap()
        .round() as i64;
    let index = &f.mirror("pickles")["INDEX.md"];
    let line = index
        .lines()
        .find(|l| l.starts_with("- buzz/oaks.ts — score "))
        .unwrap_or_else(|| panic!("{index}"));
    let shown: i64 = line["- buzz/oaks.ts — score ".len()..]
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Its freshness was near 100 points; sixty days later it is back near the neutral 50.
    assert!(
        shown < stored - 20 && shown > stored - 60,
        "{stored} → {line}"
    );
    // One number: the command line shows what INDEX.md shows.
    assert_eq!(cli, shown, "{line}");
}

#[test]
fn attention_names_a_script_failing_since_its_last_edit_and_what_to_do() {
    let f = Family::new();
    let lib = &f.lib;
    lib.write_script("buzz", "oaks", &headed("oaks", "chop oaks", "", &code(1)));
    f.run("buzz", "oaks", true, 3);
    // The edit, then three failures with one cause.
    lib.write_script("buzz", "oaks", &headed("oaks", "chop oaks", "", &code(2)));
    let failures: Vec<_> = (0..3)
        .map(|_| {
            json!({"agent": "buzz", "kind": "shell", "command": "bun bots/buzz/oaks.ts",
                   "cwd": "/work", "ok": false, "duration_ms": 1000,
                   "output": "Error: no axe in the inventory\n    at main (oaks.ts:4)\n"})
        })
        .collect();
    assert!(lib.record(&failures).status.success());
    let items: serde_json::Value =
        serde_json::from_str(&lib.ok(&["attention", "--owner", "ada", "--json"])).unwrap();
    let item = &items[0];
    assert_eq!(item["kind"], "failing", "{items}");
    assert_eq!(item["label"], "buzz/oaks.ts");
    assert_eq!(item["streak"], 3);
    assert_eq!(item["cause_count"], 3);
    assert_eq!(item["suspect"], json!({"version": 2, "last_good": 1}));
    assert!(item["cause"].as_str().unwrap().contains("no axe"), "{item}");
    let text = lib.ok(&["attention", "--agent", "buzz"]);
    assert!(
        text.contains("✗ buzz/oaks.ts failing: 3 in a row"),
        "{text}"
    );
    assert!(text.contains("next: v2 likely broke it"), "{text}");
    // pickles has nothing of its own failing.
    let quiet = lib.ok(&["attention", "--agent", "pickles"]);
    assert!(quiet.starts_with("Nothing needs attention"), "{quiet}");
}
