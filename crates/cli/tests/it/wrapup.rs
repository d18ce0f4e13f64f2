//! `mindrune wrapup` and `mindrune instructions`: what an agent is told at a step's end and at
//! its start.

use serde_json::json;

use crate::util::{TestLibrary, script, stderr, stdout};

fn runs(lib: &TestLibrary, agent: &str, name: &str, ok: bool, times: usize) {
    let events: Vec<_> = (0..times)
        .map(|_| json!({"agent": agent, "kind": "shell", "command": format!("bun bots/{agent}/{name}.ts"), "cwd": "/work", "ok": ok, "duration_ms": 60000}))
        .collect();
    let output = lib.record(&events);
    assert!(output.status.success(), "{}", stderr(&output));
}

fn headed(name: &str, n: u32) -> String {
    format!(
        "/** @skill {name}\n * Goal: {name} near Lumbridge\n */\n{}",
        script(n)
    )
}

#[test]
fn the_wrap_up_tells_the_agent_where_its_scripts_stand() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.agent("pickles", "ada");
    lib.write_script("buzz", "chop", &headed("chop", 1));
    lib.write_script("buzz", "fight", &headed("fight", 2));
    lib.write_script("buzz", "fish", &script(3));
    runs(&lib, "buzz", "chop", true, 5);
    runs(&lib, "buzz", "fight", true, 3);
    runs(&lib, "buzz", "fish", true, 6);
    // pickles keeps an unchanged copy of buzz's shared skill.
    lib.ok(&["mirror", "pickles"]);
    let copy = std::fs::read_to_string(lib.workspace("pickles").join("family-skills/buzz/chop.ts"))
        .unwrap();
    lib.write_script("pickles", "chop", &copy);
    // Inline code run again and again with other numbers.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let snippets: Vec<_> = [3200, 3210, 3222]
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let at = time::OffsetDateTime::from_unix_timestamp(now - 300 + i as i64 * 60)
                .unwrap()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap();
            json!({"agent": "buzz", "at": at, "kind": "execute_code", "code": format!("await bot.walkTo({x}, 3220);\nawait bot.chopTree(sdk.findNearbyLoc(/^Oak$/));"), "ok": true})
        })
        .collect();
    assert!(lib.record(&snippets).status.success());

    let wrap = lib.ok(&["wrapup", "buzz"]);
    assert!(
        wrap.contains("Write one short lesson in bots/buzz/lab_log.md"),
        "{wrap}"
    );
    assert!(
        wrap.contains("👪 buzz/chop v1 is a family skill now"),
        "{wrap}"
    );
    assert!(wrap.contains("fight.ts: 3/5 runs, score"), "{wrap}");
    assert!(wrap.contains("— not shared yet"), "{wrap}");
    assert!(wrap.contains("fish.ts proved itself (6 runs"), "{wrap}");
    assert!(wrap.contains("/** @skill fish"), "{wrap}");
    assert!(
        wrap.contains("You've run this 3× with different numbers; save it as bots/buzz/"),
        "{wrap}"
    );
    assert!(
        wrap.contains("const arg1 = Number(process.argv[2] ?? 3222);")
            && wrap.contains("await runScript(async ({ bot, sdk }) => {")
            && wrap.contains("bot.walkTo(arg1, 3220)"),
        "the newest code is quoted inside runScript, its varying number an arg:\n{wrap}"
    );

    // The next wrap-up lists only what is new: chop was shared before it, and the snippet is
    // suggested again only at 6 runs.
    let again = lib.ok(&["wrapup", "buzz"]);
    assert!(!again.contains("is a family skill now"), "{again}");
    assert!(!again.contains("You've run this"), "{again}");

    let copies = lib.ok(&["wrapup", "pickles"]);
    assert!(
        copies.contains("chop.ts: an unchanged copy of buzz/chop, already a family skill"),
        "{copies}"
    );
}

#[test]
fn the_instructions_name_the_family_s_bar_and_the_eager_line() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    let standard = lib.ok(&["instructions", "buzz"]);
    assert!(standard.contains("at least 5 recorded runs and a score of at least 600"));
    assert!(!standard.contains("Your owner wants proven routines shared"));
    lib.ok(&["owner", "eager", "ada", "on"]);
    let eager = lib.ok(&["instructions", "buzz"]);
    assert!(eager.contains("at least 3 recorded runs and a score of at least 500"));
    assert!(eager.contains("Your owner wants proven routines shared: when a script of yours works reliably, give it the @skill header so your siblings can use it."));
    let output = lib.run(&["instructions", "nobody"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("no agent named `nobody`"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn became_family_skills_lists_each_skill_once_and_only_while_still_shared() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &headed("chop", 1));
    lib.write_script("buzz", "fight", &headed("fight", 2));
    runs(&lib, "buzz", "chop", true, 5);
    runs(&lib, "buzz", "fight", true, 5);
    // chop is un-shared and shared again; fight is un-shared and stays so.
    lib.write_script("buzz", "chop", &script(1));
    lib.write_script("buzz", "fight", &script(2));
    lib.ok(&["turn-end", "buzz"]);
    lib.write_script("buzz", "chop", &headed("chop", 1));
    lib.ok(&["turn-end", "buzz"]);

    let wrap = lib.ok(&["wrapup", "buzz"]);
    assert_eq!(
        wrap.matches("buzz/chop v1 is a family skill now").count(),
        1,
        "{wrap}"
    );
    assert!(
        !wrap.contains("buzz/fight v1 is a family skill now"),
        "{wrap}"
    );
}

#[test]
fn start_reports_a_header_removed_while_stopped_as_removed() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &headed("chop", 1));
    runs(&lib, "buzz", "chop", true, 5);
    lib.ok(&["turn-end", "buzz"]);
    // The agent is stopped; its header goes.
    lib.write_script("buzz", "chop", &script(1));
    let start = lib.ok(&["start", "buzz"]);
    assert!(
        start.contains("chop.ts: header removed while stopped, un-shared"),
        "{start}"
    );
    assert!(!start.contains("shared as it is"), "{start}");
    assert!(start.contains("🔒 buzz/chop is private again"), "{start}");
}

#[test]
fn a_written_out_tag_the_vocabulary_lacks_is_flagged_at_the_turn_boundary() {
    let lib = TestLibrary::new();
    let bots = lib.agent("buzz", "ada");
    let wiki = crate::tags::generate_wiki(lib.dir.path());
    lib.ok(&["tags", "build", "--wiki", wiki.to_str().unwrap()]);
    lib.write_script(
        "buzz",
        "ghost",
        &format!(
            "/** @skill ghost\n * Goal: lay the ghost to rest\n * Tags: quest:restles-ghost, place:lumbridge\n */\n{}",
            script(1)
        ),
    );
    std::fs::write(
        bots.join("lab_log.md"),
        "# buzz\n- Share: [place:lumbrige] the church is east of the castle\n",
    )
    .unwrap();
    let turn = lib.ok(&["turn-end", "buzz"]);
    assert!(
        turn.contains("bots/buzz/ghost.ts: tag `quest:restles-ghost` is not in the vocabulary; did you mean `quest:restless-ghost`?"),
        "{turn}"
    );
    assert!(
        turn.contains("bots/buzz/lab_log.md:2: tag `place:lumbrige` is not in the vocabulary; did you mean `place:lumbridge`?"),
        "{turn}"
    );
    assert!(!turn.contains("`place:lumbridge` is not"), "{turn}");
    // Still said at the next boundary while the typo lasts.
    let again = lib.ok(&["turn-end", "buzz"]);
    assert!(
        again.contains("`quest:restles-ghost` is not in the vocabulary"),
        "{again}"
    );
}

#[test]
fn a_skill_the_agent_un_shared_is_not_offered_back_until_it_changes() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &headed("chop", 1));
    runs(&lib, "buzz", "chop", true, 5);
    lib.ok(&["turn-end", "buzz"]);
    let skill: serde_json::Value =
        serde_json::from_str(&lib.ok(&["skill", "show", "buzz/chop", "--json"])).unwrap();
    assert!(
        skill["sharing"].as_str().unwrap().contains("family skill"),
        "{skill:#}"
    );
    // The agent removes the header: un-shared, and not offered back.
    lib.write_script("buzz", "chop", &script(1));
    lib.ok(&["turn-end", "buzz"]);
    let wrap: serde_json::Value =
        serde_json::from_str(&lib.ok(&["wrapup", "buzz", "--json"])).unwrap();
    assert_eq!(wrap["offers"], json!([]), "{wrap:#}");
    // An edit is a new version: once it proves itself, it may be offered again.
    lib.write_script("buzz", "chop", &script(2));
    runs(&lib, "buzz", "chop", true, 10);
    let wrap: serde_json::Value =
        serde_json::from_str(&lib.ok(&["wrapup", "buzz", "--json"])).unwrap();
    assert_eq!(wrap["offers"].as_array().unwrap().len(), 1, "{wrap:#}");
}

/// A fork runner's output: its Result and a World State with the given Woodcutting total.
fn fork_output(woodcutting: u32) -> String {
    format!(
        "── Result ──\n{{\"chopped\": 1}}\n\n── World State ──\n# World State\n## Skills\nWoodcutting: 1 ({woodcutting} xp)\n\n## Inventory (27 empty slots)\n- Bronze axe x1\n"
    )
}

#[test]
fn the_wrap_up_says_how_many_runs_were_not_measured_and_why_and_which_had_no_outcome() {
    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    // Dated 100 ms apart, after the agent was added: a run is measured only along the calls
    // before it.
    let n = std::cell::Cell::new(0);
    let event = |id: &str, command: &str, output: &str| {
        n.set(n.get() + 1);
        let at = (time::OffsetDateTime::now_utc() + time::Duration::milliseconds(100 * n.get()))
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap();
        json!({"id": id, "agent": "buzz", "kind": "shell", "command": command, "cwd": "/work",
               "ok": true, "duration_ms": 60000, "output": output, "at": at})
    };
    let output = lib.record(&[
        // Nothing before the first run printed the bot's state.
        event("first", "bun bots/buzz/chop.ts", &fork_output(0)),
        // Measured against the first.
        event("second", "bun bots/buzz/chop.ts", &fork_output(625)),
        // Cut by `| tail` before its Result: outcome unknown.
        event(
            "cut",
            "bun bots/buzz/chop.ts 2>&1 | tail -3",
            "## Recent Messages\n- You get some logs.\n",
        ),
        // After the cut, nothing before it again.
        event("third", "bun bots/buzz/chop.ts", &fork_output(1250)),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    // The wrap-up comes after every call, as it does in a session.
    std::thread::sleep(std::time::Duration::from_millis(100 * n.get() as u64 + 50));

    let wrap: serde_json::Value =
        serde_json::from_str(&lib.ok(&["wrapup", "buzz", "--json"])).unwrap();
    assert_eq!(
        wrap["unmeasured"],
        json!([{"reason": "no state printed before it", "runs": 2}]),
        "{wrap:#}"
    );
    assert_eq!(wrap["outcome_unknown"], 1, "{wrap:#}");
    // Said once: the next wrap-up starts from here.
    let again = lib.ok(&["wrapup", "buzz"]);
    assert!(!again.contains("not measured"), "{again}");

    let lib = TestLibrary::new();
    lib.agent("buzz", "ada");
    lib.write_script("buzz", "chop", &script(1));
    n.set(0);
    let output = lib.record(&[
        event("first", "bun bots/buzz/chop.ts", &fork_output(0)),
        event(
            "cut",
            "bun bots/buzz/chop.ts 2>&1 | tail -3",
            "## Recent Messages\n- You get some logs.\n",
        ),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    std::thread::sleep(std::time::Duration::from_millis(100 * n.get() as u64 + 50));
    let text = lib.ok(&["wrapup", "buzz"]);
    assert!(
        text.contains("1 run not measured: no state printed before it since the last wrap-up")
            && text.contains("look first with `bun sdk/cli.ts buzz`")
            && text.contains("1 run of unknown outcome, kept out of the score")
            && text.contains("run the file without `| tail` to see how it ends"),
        "{text}"
    );
}
