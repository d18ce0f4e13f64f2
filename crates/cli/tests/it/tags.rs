//! Topic tags end to end: a wiki tree generated from rs-sdk's real page listing, `tags build`,
//! `tags map`, a rebuild after an rs-sdk update, bad wiki input, and tags reaching a mirrored
//! skill's header and a shared lesson.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::{TestLibrary, stderr, stdout};

/// rs-sdk's wiki pages, one `kind:slug` a line (1,350 of them), from the project's shared data:
/// `$MINDRUNE_SHARED` when set, else `../shared` beside the checkout (where CI has it).
fn wiki_pages_path() -> std::path::PathBuf {
    let shared = std::env::var_os("MINDRUNE_SHARED").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        std::path::PathBuf::from,
    );
    shared.join("data/rs-sdk/wiki-pages.txt")
}

/// The folder a page of this kind lives in.
fn folder(kind: &str) -> &'static str {
    match kind {
        "quest" => "quests",
        "skill" => "skills",
        "item" => "items",
        "npc" => "npcs",
        "shop" => "shops",
        other => panic!("no wiki folder for {other}"),
    }
}

/// `cooks-assistant` → `Cooks Assistant`, as a generated page's heading.
fn title(slug: &str) -> String {
    slug.split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Writes one page as rs-sdk's generators write them: a `# Title` heading, then a table.
fn write_page(wiki: &Path, tag: &str, heading: &str) {
    let (kind, slug) = tag.split_once(':').unwrap();
    let dir = wiki.join(folder(kind));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(format!("{slug}.md")),
        format!("# {heading}\n\n| Detail | Value |\n|---|---|\n| Members | No |\n"),
    )
    .unwrap();
}

/// A wiki tree of every page in rs-sdk's listing, in `<dir>/rs-sdk/wiki`.
pub(crate) fn generate_wiki(dir: &Path) -> PathBuf {
    let path = wiki_pages_path();
    let listing = std::fs::read_to_string(&path).unwrap_or_else(|err| {
        panic!(
            "cannot read {}: {err} (set MINDRUNE_SHARED to the shared folder)",
            path.display()
        )
    });
    let wiki = dir.join("rs-sdk").join("wiki");
    let mut pages = 0;
    for tag in listing.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let slug = tag.split_once(':').unwrap().1;
        write_page(&wiki, tag, &title(slug));
        pages += 1;
    }
    assert_eq!(pages, 1_350);
    wiki
}

fn map(lib: &TestLibrary, text: &str) -> Vec<String> {
    lib.ok(&["tags", "map", text])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn tags_build_writes_every_page_place_and_losthq_page_and_a_rebuild_adds_new_pages() {
    let lib = TestLibrary::new();
    let wiki = generate_wiki(lib.dir.path());
    // An rs-sdk checkout is read through its wiki/ folder.
    let checkout = wiki.parent().unwrap();
    let out = lib.ok(&["tags", "build", "--wiki", checkout.to_str().unwrap()]);
    assert!(
        out.starts_with(&format!("Read 1,350 pages from {}.\n", wiki.display())),
        "{out}"
    );
    assert!(
        out.contains(
            "The vocabulary has 1,481 tags (1,350 wiki pages, 58 LostHQ pages, 73 places):\n  quest      76\n  skill      18\n  item      454\n  npc       741\n  shop      119\n  place      73\n"
        ),
        "{out}"
    );
    assert!(out.contains("Added 1,481 tags: item:"), "{out}");
    assert!(
        out.contains(", and 1,461 more\nRemoved no tags.\n"),
        "{out}"
    );
    assert!(!out.contains("Skipped"), "{out}");

    // Names map to tags; everyday words do not; exact tags always do.
    assert_eq!(
        map(&lib, "Finish Cook's Assistant, then fight in lumby"),
        ["quest:cooks-assistant", "place:lumbridge"]
    );
    assert!(map(&lib, "attack the goblin").is_empty());
    assert_eq!(
        map(&lib, "Tags: quest:restless-ghost, npc:goblin"),
        ["quest:restless-ghost", "npc:goblin"]
    );
    assert!(map(&lib, "Recipe for Disaster").is_empty());

    // rs-sdk is updated: a new quest page, a page gone, a LostHQ page the wiki now has.
    write_page(&wiki, "quest:recipe-for-disaster", "Recipe for Disaster");
    write_page(&wiki, "item:rune-essence", "Rune essence");
    std::fs::remove_file(wiki.join("npcs").join("zeke.md")).unwrap();
    let out = lib.ok(&["tags", "build", "--wiki", wiki.to_str().unwrap()]);
    assert!(out.starts_with("Read 1,351 pages from"), "{out}");
    assert!(
        out.contains(
            "Added 1 tag: quest:recipe-for-disaster\nRemoved 1 tag: npc:zeke\nKept 1,480 tags.\n"
        ),
        "{out}"
    );
    assert_eq!(
        map(&lib, "Recipe for Disaster needs rune essence"),
        ["quest:recipe-for-disaster", "item:rune-essence"]
    );

    // The same wiki again changes nothing; --json says the same in figures.
    let json: serde_json::Value = serde_json::from_str(&lib.ok(&[
        "tags",
        "build",
        "--wiki",
        wiki.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    assert_eq!(json["pages"], 1_351);
    assert_eq!(json["tags"], 1_481);
    assert_eq!(
        json["sources"],
        json!({"wiki": 1_351, "losthq": 57, "places": 73})
    );
    assert_eq!(json["added"], json!([]));
    assert_eq!(json["removed"], json!([]));
    assert_eq!(json["kept"], 1_481);
}

#[test]
fn tags_build_skips_bad_pages_naming_each_and_exits_with_2() {
    let lib = TestLibrary::new();
    let wiki = lib.dir.path().join("wiki");
    write_page(&wiki, "quest:cooks-assistant", "Cook's Assistant");
    write_page(&wiki, "npc:father-aereck", "Father Aereck");
    let npcs = wiki.join("npcs");
    std::fs::write(npcs.join("Father-Aereck.md"), "# Father Aereck again\n").unwrap();
    std::fs::write(npcs.join("Sir Amik.md"), "# Sir Amik Varze\n").unwrap();
    std::fs::write(npcs.join("empty.md"), "").unwrap();
    std::fs::write(npcs.join("blob.md"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    std::os::unix::fs::symlink(npcs.join("father-aereck.md"), npcs.join("alias.md")).unwrap();

    let output = lib.run(&["tags", "build", "--wiki", wiki.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let out = stdout(&output);
    assert!(out.starts_with("Read 2 pages from"), "{out}");
    let at = |name: &str| npcs.join(name).display().to_string();
    for note in [
        format!(
            "{}: the same slug `father-aereck` as Father-Aereck.md; skipped",
            at("father-aereck.md")
        ),
        format!("{}: the name is not a slug", at("Sir Amik.md")),
        format!("{}: an empty page; skipped", at("empty.md")),
        format!("{}: a binary file, not a page; skipped", at("blob.md")),
        format!(
            "{}: a symlink; pages must be plain files; skipped",
            at("alias.md")
        ),
    ] {
        assert!(
            out.contains(&format!("  {note}")),
            "missing {note:?} in:\n{out}"
        );
    }
    assert!(
        out.contains("The wiki has no skills/ folder, so no skill: tags come from it.\n"),
        "{out}"
    );
    // What could be read was written.
    assert_eq!(
        map(&lib, "Cook's Assistant: ask Father Aereck"),
        ["quest:cooks-assistant", "npc:father-aereck"]
    );
}

#[test]
fn tags_build_refuses_what_is_no_wiki_and_changes_nothing() {
    let lib = TestLibrary::new();
    let wiki = lib.dir.path().join("wiki");
    write_page(&wiki, "quest:cooks-assistant", "Cook's Assistant");
    lib.ok(&["tags", "build", "--wiki", wiki.to_str().unwrap()]);

    let not_a_wiki = lib.dir.path().join("photos");
    std::fs::create_dir_all(&not_a_wiki).unwrap();
    let output = lib.run(&["tags", "build", "--wiki", not_a_wiki.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("is not an rs-sdk wiki folder"),
        "{}",
        stderr(&output)
    );

    // A wiki whose every page is bad would remove every wiki tag: refused.
    let broken = lib.dir.path().join("broken");
    std::fs::create_dir_all(broken.join("quests")).unwrap();
    std::fs::write(broken.join("quests").join("empty.md"), "\n").unwrap();
    let output = lib.run(&["tags", "build", "--wiki", broken.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("not a single page could be read"),
        "{}",
        stderr(&output)
    );
    assert_eq!(map(&lib, "Cook's Assistant"), ["quest:cooks-assistant"]);
}

#[test]
fn tags_map_reads_standard_input_and_maps_places_and_exact_tags_before_any_build() {
    let lib = TestLibrary::new();
    let output = lib
        .cmd()
        .args(["tags", "map", "-"])
        .write_stdin("- Share: [quest:restless-ghost] the ghost haunts\nthe church in Lumby; Cook's Assistant starts in fally\n")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    // Without a wiki vocabulary the quest's name is not known, but places and exact tags are.
    assert_eq!(
        stdout(&output),
        "quest:restless-ghost\nplace:lumbridge\nplace:falador\n"
    );
    // No library at all: the built-in vocabulary, and a note saying so.
    let output = lib
        .cmd()
        .env("MINDRUNE_HOME", lib.dir.path().join("nowhere"))
        .args(["tags", "map", "walk", "to", "Varrock"])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(stdout(&output), "place:varrock\n");
    assert!(
        stderr(&output).contains("no MindRune library"),
        "{}",
        stderr(&output)
    );
}

/// The spec's promise: MindRune reads the agent's own words, so a goal that says "lumby"
/// lets `grep -r 'place:lumbridge' family-skills/` find the skill, and a lesson about a quest
/// carries the quest's tag.
#[test]
fn a_header_goal_fight_in_lumby_gives_the_mirrored_skill_topics_place_lumbridge() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    let wiki = generate_wiki(lib.dir.path());
    lib.ok(&["tags", "build", "--wiki", wiki.to_str().unwrap()]);

    lib.write_script(
        "buzz",
        "cows",
        &format!(
            "/** @skill cows\n * Goal: fight in lumby\n * Tags: cowhide\n */\n{}",
            crate::util::script(1)
        ),
    );
    let runs: Vec<_> = (0..5)
        .map(|_| crate::util::shell("buzz", "bun bots/buzz/cows.ts", true))
        .collect();
    let output = lib.record(&runs);
    assert!(output.status.success(), "{}", stderr(&output));
    std::fs::write(
        lib.workspace("buzz").join("bots/buzz/lab_log.md"),
        "# buzz\nShare: Father Aereck is in the church for The Restless Ghost\n",
    )
    .unwrap();
    lib.ok(&["turn-end", "buzz"]);

    lib.ok(&["mirror", "pickles"]);
    let mirror = lib.workspace("pickles").join("family-skills");
    let skill = std::fs::read_to_string(mirror.join("buzz/cows.ts")).unwrap();
    assert!(
        skill.contains(" * Topics: item:cowhide, place:lumbridge\n"),
        "{skill}"
    );
    let lessons = std::fs::read_to_string(mirror.join("LESSONS.md")).unwrap();
    assert!(
        lessons.contains(
            "- [npc:father-aereck] [quest:restless-ghost] Father Aereck is in the church for The Restless Ghost (buzz)"
        ),
        "{lessons}"
    );
    let index = std::fs::read_to_string(mirror.join("INDEX.md")).unwrap();
    assert!(index.contains("place:lumbridge (1 skill"), "{index}");
}
