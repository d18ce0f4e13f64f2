//! Recording in write groups is an optimisation, not a different behaviour: for any runs, in any
//! grouping, every answer and every stored row is what recording them one at a time gives, on
//! both backends (each keeps versions' windows and rows for a group's length; SQLite also keeps
//! their rescores until the row is next needed).

// The support module serves `store_story.rs` too; this file uses only its libraries.
#[allow(dead_code, unused_macros, unused_imports)]
mod support;

use mindrune_core::secret_digest;
use mindrune_store::{
    AgentId, HeaderState, NewUse, Outcome, OwnerId, RecordedUse, Recording, ScriptSnapshot,
    SkillHeader, VersionId,
};
use proptest::prelude::*;
use support::Backend;

#[derive(Debug, Clone)]
struct Run {
    script: usize,
    ok: bool,
    /// Seconds after the first run; runs may arrive out of order.
    at_s: i64,
    duration_s: u64,
    xp: u16,
    /// Sent again with an earlier run's event id (a retry).
    retry_of: Option<usize>,
}

fn runs() -> impl Strategy<Value = Vec<Run>> {
    prop::collection::vec(
        (
            0..3usize,
            prop::bool::weighted(0.8),
            0..400i64,
            5..120u64,
            0..600u16,
            prop::option::weighted(0.1, 0..40usize),
        )
            .prop_map(|(script, ok, at_s, duration_s, xp, retry_of)| Run {
                script,
                ok,
                at_s,
                duration_s,
                xp,
                retry_of,
            }),
        1..60,
    )
}

struct Library {
    store: support::Library,
    owner: OwnerId,
    agent: AgentId,
    versions: Vec<VersionId>,
}

/// A family with three scripts: one headed (shared once it clears the bar), two tagged alike
/// (each the other's peer), on a file of its own.
fn library(backend: Backend) -> Library {
    let store = backend.open();
    let owner = store
        .create_owner("ada", &secret_digest("k"), 0)
        .unwrap()
        .id;
    let agent = store.create_agent(owner, "buzz", "/ws", 0).unwrap().id;
    let versions = ["chop", "mine", "fish"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let code = format!("{name}();");
            let snapshot = ScriptSnapshot {
                agent,
                path: format!("bots/buzz/{name}.ts"),
                name: name.to_string(),
                digest: mindrune_core::sha256(code.as_bytes()),
                code,
                tags: if i == 0 {
                    vec![]
                } else {
                    vec!["skill:woodcutting".into()]
                },
                header: SkillHeader {
                    state: if i == 0 {
                        HeaderState::Skill
                    } else {
                        HeaderState::None
                    },
                    ..SkillHeader::default()
                },
                file_digest: None,
                origin: None,
            };
            store.match_script(owner, &snapshot, 1).unwrap().version.id
        })
        .collect();
    Library {
        store,
        owner,
        agent,
        versions,
    }
}

fn new_use(library: &Library, runs: &[Run], index: usize) -> NewUse {
    let run = &runs[index];
    let event = run.retry_of.filter(|&of| of < index).unwrap_or(index);
    NewUse {
        version: library.versions[run.script],
        agent: library.agent,
        outcome: Outcome {
            at: (1_000 + run.at_s) * 1000,
            ok: run.ok,
            duration_ms: run.duration_s * 1000,
            xp: [("Woodcutting".to_string(), f64::from(run.xp))].into(),
            ..Outcome::default()
        },
        source: "shell".into(),
        call: None,
        output: None,
        event_id: Some(format!("e{event}")),
        recorded_at: (2_000 + index as i64) * 1000,
    }
}

/// What a recorded use answers: added, runs, ok runs, the score's bits, and a sharing change's
/// reason and version.
type Answer = (bool, i64, i64, u64, Option<(String, Option<i64>)>);

fn answer(recorded: &RecordedUse) -> Answer {
    (
        recorded.added,
        recorded.version.uses,
        recorded.version.ok,
        recorded.version.score.to_bits(),
        recorded
            .shared
            .as_ref()
            .map(|change| (change.reason.clone(), change.version)),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn uses_recorded_in_any_grouping_answer_and_store_what_one_at_a_time_does(
        runs in runs(),
        group_sizes in prop::collection::vec(1..9usize, 1..12),
        expecting in prop::collection::vec(any::<bool>(), 1..12),
    ) {
        for backend in [Backend::Sqlite, Backend::Postgres] {
            check_grouping(backend, &runs, &group_sizes, &expecting)?;
        }
    }
}

/// `expecting[k]`: whether the k-th group (cycling) first tells the store its event ids and
/// versions, as a runner's batch does (`Store::expect_uses`).
fn check_grouping(
    backend: Backend,
    runs: &[Run],
    group_sizes: &[usize],
    expecting: &[bool],
) -> Result<(), proptest::test_runner::TestCaseError> {
    let one = library(backend);
    let expected: Vec<_> = (0..runs.len())
        .map(|i| {
            answer(
                &one.store
                    .record_use(one.owner, &new_use(&one, runs, i))
                    .unwrap(),
            )
        })
        .collect();

    let grouped = library(backend);
    let mut answers = Vec::new();
    let mut next = 0;
    let mut sizes = group_sizes.iter().cycle();
    let mut expects = expecting.iter().cycle();
    while next < runs.len() {
        let end = (next + sizes.next().unwrap()).min(runs.len());
        let expect = *expects.next().unwrap();
        grouped
            .store
            .write_group(&[grouped.owner], &mut |group| {
                if expect {
                    let ids: Vec<String> = (next..end)
                        .filter_map(|i| new_use(&grouped, runs, i).event_id)
                        .collect();
                    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                    let versions: Vec<VersionId> = (next..end)
                        .map(|i| grouped.versions[runs[i].script])
                        .collect();
                    group.expect_uses(grouped.owner, &ids, &versions)?;
                }
                for i in next..end {
                    answers.push(answer(
                        &group.record_use(grouped.owner, &new_use(&grouped, runs, i))?,
                    ));
                }
                Ok(())
            })
            .unwrap();
        next = end;
    }
    prop_assert_eq!(&answers, &expected, "on {:?}", backend);
    for (a, b) in grouped.versions.iter().zip(&one.versions) {
        let a = grouped.store.version(grouped.owner, *a).unwrap();
        let b = one.store.version(one.owner, *b).unwrap();
        prop_assert_eq!(
            (
                a.uses,
                a.ok,
                a.score.to_bits(),
                a.shared_at,
                &a.breakdown,
                a.rate_per_minute.to_bits()
            ),
            (
                b.uses,
                b.ok,
                b.score.to_bits(),
                b.shared_at,
                &b.breakdown,
                b.rate_per_minute.to_bits()
            )
        );
    }
    prop_assert!(grouped.store.audit(grouped.owner).unwrap().is_empty());
    Ok(())
}

/// "mine" (the second script) as its file now says: with or without the `@skill` header.
fn mine_with_header(library: &Library, state: HeaderState) -> ScriptSnapshot {
    let code = "mine();".to_string();
    ScriptSnapshot {
        agent: library.agent,
        path: "bots/buzz/mine.ts".into(),
        name: "mine".into(),
        digest: mindrune_core::sha256(code.as_bytes()),
        code,
        tags: vec!["skill:woodcutting".into()],
        header: SkillHeader {
            state,
            ..SkillHeader::default()
        },
        file_digest: None,
        origin: None,
    }
}

/// A group keeps a version's row between its uses; a header written in between (the same code,
/// so the same version) must still be seen by the next use, which shares the script as the one
/// at a time path does.
#[test]
fn a_header_written_inside_a_group_is_seen_by_the_next_use_of_the_same_version() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        a_header_written_inside_a_group_is_seen_on(backend);
    }
}

fn a_header_written_inside_a_group_is_seen_on(backend: Backend) {
    let runs: Vec<Run> = (0..14)
        .map(|i| Run {
            script: 1,
            ok: true,
            at_s: i * 10,
            duration_s: 30,
            xp: 400,
            retry_of: None,
        })
        .collect();
    let record = |library: &Library,
                  store: &dyn Recording,
                  answers: &mut Vec<Answer>,
                  range: std::ops::Range<usize>| {
        for i in range {
            let recorded = store.record_use(library.owner, &new_use(library, &runs, i))?;
            answers.push(answer(&recorded));
        }
        Ok::<_, mindrune_store::StoreError>(())
    };
    let one = library(backend);
    let mut expected = Vec::new();
    record(&one, &*one.store, &mut expected, 0..4).unwrap();
    one.store
        .match_script(one.owner, &mine_with_header(&one, HeaderState::Skill), 5)
        .unwrap();
    record(&one, &*one.store, &mut expected, 4..runs.len()).unwrap();

    let grouped = library(backend);
    let mut answers = Vec::new();
    grouped
        .store
        .write_group(&[grouped.owner], &mut |group| {
            record(&grouped, group, &mut answers, 0..4)?;
            group.match_script(
                grouped.owner,
                &mine_with_header(&grouped, HeaderState::Skill),
                5,
            )?;
            record(&grouped, group, &mut answers, 4..runs.len())
        })
        .unwrap();
    assert!(
        expected.iter().any(|a| a.4.is_some()),
        "the story must share the script once it has its header: {expected:?}"
    );
    assert_eq!(answers, expected);
    let a = grouped
        .store
        .version(grouped.owner, grouped.versions[1])
        .unwrap();
    let b = one.store.version(one.owner, one.versions[1]).unwrap();
    assert_eq!((a.uses, a.shared_at), (b.uses, b.shared_at));
}

/// A group remembers which event ids and agents it has seen, so its uses need not ask the
/// table again; nothing of it outlives the group: an avatar removed after one group (nothing can
/// remove it during one: its family's writes wait for the group) is not the family's for the
/// next group's uses, which are answered as one at a time answers them. The avatar runs a
/// sibling's script, whose version outlives it.
#[test]
fn an_agent_removed_after_a_group_is_no_longer_its_familys_for_the_next_group_s_uses() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let runs: Vec<Run> = (0..3)
            .map(|i| Run {
                script: 0,
                ok: true,
                at_s: 10 * i as i64,
                duration_s: 30,
                xp: 100,
                retry_of: None,
            })
            .collect();
        let siblings_version = |library: &Library| {
            let bee = library
                .store
                .create_agent(library.owner, "bee", "/ws", 0)
                .unwrap()
                .id;
            let code = "row();".to_string();
            let snapshot = ScriptSnapshot {
                agent: bee,
                path: "bots/bee/row.ts".into(),
                name: "row".into(),
                digest: mindrune_core::sha256(code.as_bytes()),
                code,
                tags: vec![],
                header: SkillHeader::default(),
                file_digest: None,
                origin: None,
            };
            library
                .store
                .match_script(library.owner, &snapshot, 1)
                .unwrap()
                .version
                .id
        };
        // Two uses by buzz of bee's script, buzz removed, then a third use and a retry.
        let record = |library: &Library, store: &dyn Recording, version: VersionId, i: usize| {
            let new_use = NewUse {
                version,
                ..new_use(library, &runs, i)
            };
            format!(
                "{:?}",
                store
                    .record_use(library.owner, &new_use)
                    .map(|r| answer(&r))
            )
        };
        let one = library(backend);
        let version = siblings_version(&one);
        let mut expected = vec![
            record(&one, &*one.store, version, 0),
            record(&one, &*one.store, version, 1),
        ];
        one.store.delete_agent(one.owner, one.agent).unwrap();
        expected.push(record(&one, &*one.store, version, 2));
        expected.push(record(&one, &*one.store, version, 0));
        assert!(
            expected[2].starts_with("Err"),
            "a removed avatar's use is refused: {expected:?}"
        );
        let grouped = library(backend);
        let version = siblings_version(&grouped);
        let mut answers = Vec::new();
        let in_group = |uses: &[usize], answers: &mut Vec<String>| {
            grouped
                .store
                .write_group(&[grouped.owner], &mut |group| {
                    group.expect_uses(grouped.owner, &["e0", "e1", "e2"], &[version])?;
                    for i in uses {
                        answers.push(record(&grouped, group, version, *i));
                    }
                    Ok(())
                })
                .unwrap();
        };
        in_group(&[0, 1], &mut answers);
        grouped
            .store
            .delete_agent(grouped.owner, grouped.agent)
            .unwrap();
        in_group(&[2, 0], &mut answers);
        assert_eq!(answers, expected, "on {backend:?}");
        assert_eq!(
            grouped.store.use_count(grouped.owner).unwrap(),
            one.store.use_count(one.owner).unwrap(),
            "on {backend:?}"
        );
        assert!(grouped.store.audit(grouped.owner).unwrap().is_empty());
    }
}
