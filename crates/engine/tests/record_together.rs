//! Recording event lines in write groups answers and stores exactly what recording them one at a
//! time does.
//!
//! A group knows the newest output each avatar stored in it and measures the next run against
//! it without reading it back (`Recorder::previous_state`), so every case mixes what could make
//! that knowledge wrong: the real rs-sdk outputs of `shared/data/rs-sdk/runs` (with and without
//! a state section), runs out of time order and at the same millisecond, events sent twice,
//! inline code beside scripts, two avatars, and groups cut anywhere. The server's path is held
//! to it too: batches recorded together with their outputs prepared before the group
//! (`Recorder::prepare`, on the request's thread there).
//!
//! Every case runs on both backends: SQLite, and PostgreSQL (the database at
//! `MINDRUNE_TEST_DATABASE_URL`, default `postgres://postgres@127.0.0.1:5432/test`, each library
//! in a schema of its own, dropped after), whose groups keep their uses and rescores waiting in
//! memory and look a batch's event ids and versions up together.

use mindrune_core::secret_digest;
use std::path::{Path, PathBuf};

use mindrune_core::{Event, parse_line};
use mindrune_engine::Recorder;
use mindrune_engine::{AgentFiles, LocalFiles};
use mindrune_engine::{GroupedEvent, PreparedOutput};
use mindrune_store::{PgStore, SqliteStore, Store};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

/// The real runs' outputs, and two that show no state.
fn outputs() -> Vec<String> {
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/rs-sdk/runs");
    let mut outputs: Vec<String> = std::fs::read_dir(&runs)
        .unwrap_or_else(|err| {
            panic!(
                "{}: {err} (CI keeps ../shared beside the checkout)",
                runs.display()
            )
        })
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "txt"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    outputs.sort();
    assert!(
        outputs.len() >= 5,
        "the real runs are missing from {}",
        runs.display()
    );
    outputs.push("grep: no match\n".into());
    outputs.push("── Result ──\n{ \"logs\": 2 }\n".into());
    outputs
}

#[derive(Debug, Clone)]
struct Line {
    agent: usize,
    snippet: bool,
    at_second: u32,
    id: Option<u32>,
    output: Option<usize>,
    ok: Option<bool>,
}

fn line() -> impl Strategy<Value = Line> {
    (
        0usize..2,
        prop::bool::weighted(0.2),
        // Few seconds, so runs share them and arrive out of order.
        0u32..6,
        prop::option::weighted(0.7, 0u32..12),
        prop::option::weighted(0.85, 0usize..10),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(agent, snippet, at_second, id, output, ok)| Line {
            agent,
            snippet,
            at_second,
            id,
            output,
            ok,
        })
}

const AGENTS: [&str; 2] = ["buzz", "woody"];

fn event_line(line: &Line, outputs: &[String]) -> String {
    let agent = AGENTS[line.agent];
    let mut event = if line.snippet {
        serde_json::json!({
            "agent": agent,
            "kind": "execute_code",
            "code": format!("await bot.chopTree(); // {agent}"),
        })
    } else {
        serde_json::json!({
            "agent": agent,
            "kind": "shell",
            "command": format!("bun bots/{agent}/chop.ts"),
        })
    };
    event["at"] = format!("2026-12-01T10:00:0{}Z", line.at_second).into();
    if let Some(id) = line.id {
        event["id"] = format!("{agent}-{id}").into();
    }
    if let Some(output) = line.output {
        event["output"] = outputs[output % outputs.len()].clone().into();
    }
    if let Some(ok) = line.ok {
        event["ok"] = ok.into();
    }
    event.to_string()
}

#[derive(Debug, Clone, Copy)]
enum Backend {
    Sqlite,
    Postgres,
}

/// A library of the case's family; a PostgreSQL one drops its schema when dropped.
enum Library {
    Sqlite(Box<SqliteStore>),
    Postgres(PgStore),
}

impl std::ops::Deref for Library {
    type Target = dyn Store;

    fn deref(&self) -> &(dyn Store + 'static) {
        match self {
            Library::Sqlite(store) => &**store,
            Library::Postgres(store) => store,
        }
    }
}

impl Drop for Library {
    fn drop(&mut self) {
        if let Library::Postgres(store) = self
            && let Err(err) = store.drop_schema()
        {
            eprintln!("could not drop a test schema: {err}");
        }
    }
}

fn open(backend: Backend, dir: &Path, name: &str) -> Library {
    match backend {
        Backend::Sqlite => Library::Sqlite(Box::new(SqliteStore::open(&dir.join(name)).unwrap())),
        Backend::Postgres => {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let url = std::env::var("MINDRUNE_TEST_DATABASE_URL")
                .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
            let schema = format!(
                "record_together_{}_{}",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            );
            Library::Postgres(
                PgStore::open_in_schema(&url, &schema).unwrap_or_else(|err| {
                    panic!(
                        "this test needs PostgreSQL at {url} (trust auth, or set \
                     MINDRUNE_TEST_DATABASE_URL): {err}"
                    )
                }),
            )
        }
    }
}

fn library(backend: Backend, dir: &Path, name: &str, workspace: &Path) -> Library {
    let store = open(backend, dir, name);
    let owner = store
        .create_owner("family", &secret_digest("mr_test_key_0123456789"), 0)
        .unwrap();
    for agent in AGENTS {
        store
            .create_agent(owner.id, agent, workspace.to_str().unwrap(), 0)
            .unwrap();
    }
    store
}

fn workspace(dir: &Path) -> PathBuf {
    let workspace = dir.join("rs-sdk");
    for agent in AGENTS {
        let bot = workspace.join("bots").join(agent);
        std::fs::create_dir_all(&bot).unwrap();
        std::fs::write(
            bot.join("chop.ts"),
            format!(
                "/** @skill chop\n * Goal: chop trees\n */\nawait bot.chopTree(); // {agent}\n"
            ),
        )
        .unwrap();
    }
    workspace
}

/// What a library holds for the comparison: each avatar's outputs newest first, and every
/// version's runs and score.
fn held(store: &dyn Store) -> Vec<String> {
    let owner = store.owner_by_name("family").unwrap().unwrap();
    let mut held = Vec::new();
    for agent in store.agents(owner.id).unwrap() {
        held.push(format!(
            "{}: {:?}",
            agent.name,
            store
                .recent_outputs(owner.id, agent.id, i64::MAX, 1_000)
                .unwrap()
        ));
        held.push(format!(
            "{} snippets: {:?}",
            agent.name,
            store.snippets(owner.id, agent.id).unwrap()
        ));
        // The World State a run printed becomes the avatar's state, whatever group it is in.
        held.push(format!(
            "{} state: {:?}, wealth {:?}",
            agent.name,
            store.avatar_state(owner.id, agent.id).unwrap(),
            store.wealth_history(owner.id, agent.id, 0).unwrap()
        ));
    }
    for entry in store.skills(owner.id, None).unwrap() {
        for version in store.versions(owner.id, entry.skill.id).unwrap() {
            held.push(format!(
                "{} v{}: {} runs, {} ok, score {:?}, {:?}, measured by {:?} at {:?}/min, last used {:?}",
                entry.skill.name,
                version.number,
                version.uses,
                version.ok,
                version.score.to_bits(),
                version.breakdown,
                version.measure_key,
                version.rate_per_minute.to_bits(),
                version.last_used_at,
            ));
        }
    }
    held.extend(store.audit(owner.id).unwrap());
    held
}

/// An answer with the times its sharing changes were noted at (the clock's, not the events')
/// left out: two libraries recording the same lines note them a few milliseconds apart.
fn without_clock(answer: String) -> String {
    const NOTED: &str = "\", at: ";
    let mut out = String::with_capacity(answer.len());
    let mut rest = answer.as_str();
    while let Some(found) = rest.find(NOTED) {
        let (head, tail) = rest.split_at(found + NOTED.len());
        out.push_str(head);
        out.push_str("<clock>");
        rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

fn check(lines: &[Line], cuts: &[usize], outputs: &[String]) -> Result<(), TestCaseError> {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        check_on(backend, lines, cuts, outputs)?;
    }
    Ok(())
}

fn check_on(
    backend: Backend,
    lines: &[Line],
    cuts: &[usize],
    outputs: &[String],
) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace(dir.path());
    let texts: Vec<String> = lines.iter().map(|l| event_line(l, outputs)).collect();

    let alone = library(backend, dir.path(), "alone.db", &workspace);
    let recorder = Recorder::new(&*alone);
    let answers_alone: Vec<String> = texts
        .iter()
        .map(|text| without_clock(format!("{:?}", recorder.record_line(text))))
        .collect();

    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (texts.len() + 1)).collect();
    cuts.push(texts.len());
    cuts.sort_unstable();
    let mut groups = Vec::new();
    let mut start = 0;
    for end in cuts {
        if end > start {
            groups.push(start..end);
            start = end;
        }
    }

    let together = library(backend, dir.path(), "together.db", &workspace);
    let recorder = Recorder::new(&*together);
    let mut answers_together = Vec::new();
    for group in &groups {
        let lines: Vec<&str> = texts[group.clone()].iter().map(String::as_str).collect();
        answers_together.extend(
            recorder
                .record_lines_together(&lines)
                .iter()
                .map(|answer| without_clock(format!("{answer:?}"))),
        );
    }
    prop_assert_eq!(&answers_together, &answers_alone, "on {:?}", backend);
    prop_assert_eq!(held(&*together), held(&*alone), "on {:?}", backend);

    // As the server records: each event its own batch, its output prepared before the group.
    let prepared_store = library(backend, dir.path(), "prepared.db", &workspace);
    let recorder = Recorder::new(&*prepared_store);
    let owner = prepared_store.owner_by_name("family").unwrap().unwrap();
    let files = LocalFiles(&workspace);
    let mut answers_prepared = Vec::new();
    for group in &groups {
        let events: Vec<Event> = texts[group.clone()]
            .iter()
            .map(|text| parse_line(text).unwrap())
            .collect();
        let prepared: Vec<Option<PreparedOutput>> = events
            .iter()
            .map(|event| {
                let agent = prepared_store.agent_by_name(&event.agent).unwrap().unwrap();
                Some(recorder.prepare(&agent, event, &files).unwrap())
            })
            .collect();
        let batches: Vec<Vec<GroupedEvent<'_>>> = events
            .iter()
            .zip(&prepared)
            .map(|(event, prepared)| vec![(event, &files as &dyn AgentFiles, prepared.as_ref())])
            .collect();
        for answer in recorder.record_together(&[owner.id], &batches) {
            let mut answer = answer.unwrap();
            prop_assert_eq!(answer.len(), 1);
            answers_prepared.push(without_clock(format!("{:?}", answer.remove(0))));
        }
    }
    prop_assert_eq!(answers_prepared, answers_alone, "on {:?}", backend);
    prop_assert_eq!(held(&*prepared_store), held(&*alone), "on {:?}", backend);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn lines_recorded_in_groups_answer_and_store_what_one_at_a_time_does(
        lines in prop::collection::vec(line(), 1..28),
        cuts in prop::collection::vec(any::<usize>(), 0..4),
    ) {
        let outputs = outputs();
        check(&lines, &cuts, &outputs)?;
    }
}

#[test]
fn five_runs_at_one_millisecond_in_one_group_share_the_script_as_one_at_a_time_does() {
    let outputs = outputs();
    let run = |output: Option<usize>, ok: Option<bool>| Line {
        agent: 0,
        snippet: false,
        at_second: 0,
        id: None,
        output,
        ok,
    };
    let lines = [
        run(Some(2), None),
        run(None, Some(true)),
        run(Some(2), None),
        run(Some(2), None),
        run(Some(2), None),
    ];
    check(&lines, &[], &outputs).unwrap();
}

/// `shared/data/rs-sdk/runs/NAME.txt`.
fn real_output(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/rs-sdk/runs")
        .join(format!("{name}.txt"));
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// woody's shell run of `chop.ts` at `at`, printing `output`.
fn woody_run(at: &str, output: &str) -> String {
    serde_json::json!({
        "agent": "woody",
        "kind": "shell",
        "command": "bun bots/woody/chop.ts",
        "at": at,
        "output": output,
    })
    .to_string()
}

fn state_json(store: &dyn Store) -> (serde_json::Value, i64) {
    let owner = store.owner_by_name("family").unwrap().unwrap();
    let woody = store.agent_by_name("woody").unwrap().unwrap();
    let state = store.avatar_state(owner.id, woody.id).unwrap().unwrap();
    (
        serde_json::from_str(&state.state).unwrap(),
        state.reported_at,
    )
}

#[test]
fn a_run_s_printed_world_state_is_the_avatar_s_state_but_never_over_a_newer_state_file_s() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let dir = tempfile::tempdir().unwrap();
        let workspace = workspace(dir.path());
        let store = library(backend, dir.path(), "state.db", &workspace);
        let owner = store.owner_by_name("family").unwrap().unwrap();
        let woody = store.agent_by_name("woody").unwrap().unwrap();
        let recorder = Recorder::new(&*store);

        // A fork run prints the full World State: its levels, XP and inventory are the state.
        recorder
            .record_line(&woody_run(
                "2026-12-01T10:00:00Z",
                &real_output("fork-chop-trees"),
            ))
            .unwrap();
        let (state, at) = state_json(&*store);
        assert_eq!(state["levels"]["Woodcutting"], 20, "{backend:?}");
        assert_eq!(state["xp"]["Woodcutting"], 3125);
        assert_eq!(state["levels"].as_object().unwrap().len(), 21);
        assert_eq!(state["gear"], serde_json::json!([]));
        assert_eq!(state["wealth"], 0);
        assert_eq!(state["printed"], true);
        let ten = 1_796_119_200_000;
        assert_eq!(at, ten);
        let hours = |store: &dyn Store| {
            store
                .wealth_history(owner.id, woody.id, 0)
                .unwrap()
                .iter()
                .map(|p| (p.hour, p.coins))
                .collect::<Vec<_>>()
        };
        assert_eq!(hours(&*store), [(ten, 0)], "the state file's wealth point");

        // The runner's state file reports later, with the bank and the quests.
        let file = r#"{"levels":{"Woodcutting":21},"quests":["Cook's Assistant"],"wealth":700,"gear":["Bronze axe"],"bank":{"Coins":500,"Logs":9}}"#;
        store
            .save_avatar_state(
                owner.id,
                woody.id,
                file,
                Some(mindrune_store::Standing::coins(700)),
                ten + 60_000,
            )
            .unwrap();
        // A run printed before it (its event arriving late) changes nothing.
        recorder
            .record_line(&woody_run(
                "2026-12-01T10:00:30Z",
                &real_output("live/live-bank-stuck"),
            ))
            .unwrap();
        let (state, at) = state_json(&*store);
        assert_eq!(at, ten + 60_000, "{backend:?}");
        assert_eq!(state["levels"]["Woodcutting"], 21);
        assert_eq!(state.get("printed"), None);
        assert_eq!(hours(&*store), [(ten, 700)]);

        // A run after it is the state; the bank and quests it does not print stay as reported,
        // and the banked coins still count.
        recorder
            .record_line(&woody_run(
                "2026-12-01T11:00:00Z",
                &real_output("live/live-bank-stuck"),
            ))
            .unwrap();
        let (state, at) = state_json(&*store);
        assert_eq!(at, ten + 3_600_000, "{backend:?}");
        assert_eq!(state["levels"]["Woodcutting"], 40);
        assert_eq!(state["quests"], serde_json::json!(["Cook's Assistant"]));
        assert_eq!(state["bank"], serde_json::json!({"Coins": 500, "Logs": 9}));
        assert_eq!(state["gear"], serde_json::json!([]));
        assert_eq!(state["wealth"], 500);
        assert_eq!(state["printed"], true);
        assert_eq!(hours(&*store), [(ten, 700), (ten + 3_600_000, 500)]);

        // A run piped through tail prints no whole state: nothing changes.
        let cut = serde_json::json!({
            "agent": "woody",
            "kind": "shell",
            "command": "bun bots/woody/chop.ts 2>&1 | tail -20",
            "at": "2026-12-01T12:00:00Z",
            "output": real_output("live/live-chop-tail20"),
            "ok": true,
        });
        recorder.record_line(&cut.to_string()).unwrap();
        assert_eq!(state_json(&*store).1, ten + 3_600_000);
    }
}
