//! The store's story, told against every backend: each story below is one body, run as
//! `sqlite::<story>` on a SQLite file and as `postgres::<story>` in a PostgreSQL schema of its
//! own (see `support`). Every test opens its own library.
//!
//! Run one half with `cargo test -p mindrune-store --test store_story sqlite::` (or
//! `postgres::`; the database is `MINDRUNE_TEST_DATABASE_URL`, by default
//! `postgres://postgres@127.0.0.1:5432/test`, and these tests fail when it cannot be reached).

mod support;

use mindrune_core::secret_digest;
use mindrune_store::{
    AgentId, HeaderState, Lineage, NewLesson, NewSnippetUse, NewUse, OperatorRevoke, OperatorToken,
    OperatorTokenKey, Outcome, OwnerId, RunFilter, RunTotals, ScriptSnapshot, SharingKind,
    SkillHeader, Standing, Store, StoreError, UnrecordedCall, UnrecordedReason, VersionId,
};
use support::{Backend, Library};

support::on_every_backend! {
    // Skills and their versions.
    a_new_file_is_v1_and_the_same_code_matches_it_again,
    an_edit_is_the_next_version_built_on_the_current_one_at_ninety_percent,
    going_back_to_old_code_is_the_old_version_again,
    five_clean_runs_score_about_620_and_every_use_is_counted,
    a_retried_event_id_is_not_counted_twice,
    the_audit_agrees_with_recorded_runs_and_names_a_lost_use_or_a_stale_score,
    another_owner_never_sees_a_family_s_skills_or_versions,
    a_copy_starts_its_own_history_built_on_the_original,
    skills_show_one_entry_per_skill_at_its_current_version,
    tags_are_kept_and_peers_sharing_one_feed_the_effectiveness,
    snippets_keep_their_own_history_per_agent,
    a_failed_run_keeps_its_cause_and_the_latest_outputs_come_newest_first,
    a_script_s_runs_come_newest_first_with_their_outcomes_and_the_days_count_them,
    a_script_s_runs_filter_by_result_version_and_avatar_and_page_and_one_is_read_by_its_id,
    // The library itself.
    two_handles_on_one_file_never_lose_a_use_or_serve_a_stale_window,
    two_handles_write_groups_in_turn_each_see_the_other_s_uses,
    uses_recorded_in_write_groups_score_and_share_exactly_as_one_at_a_time,
    a_refused_write_leaves_its_group_and_a_failed_group_stores_nothing,
    the_store_used_directly_inside_a_group_s_work_panics_instead_of_waiting_for_ever,
    a_group_reads_its_own_uses_and_knows_their_event_ids_before_they_are_written,
    another_thread_never_sees_a_group_s_writes_before_its_commit,
    a_library_from_a_newer_mindrune_is_refused_with_a_clear_error,
    the_server_s_health_is_kept_across_handles_the_last_save_winning,
    // Family sharing.
    a_headed_script_is_shared_right_after_the_run_that_makes_it_qualify,
    a_script_without_a_header_is_never_shared_and_the_header_shares_it_at_once,
    private_or_a_removed_header_un_shares_and_the_header_back_shares_again,
    eager_sharing_lowers_the_bar_and_switching_it_off_keeps_what_was_shared,
    one_failure_in_three_does_not_clear_the_eager_bar,
    the_bar_lowered_later_shares_qualified_scripts_at_the_turn_end,
    a_deleted_file_un_shares_its_skill_and_keeps_its_history,
    an_unproven_new_version_does_not_replace_the_shared_one,
    sibling_use_counts_siblings_runs_of_any_version_and_of_copies,
    lessons_follow_the_lab_log_and_keep_their_first_seen_time,
    deleting_an_agent_removes_its_scripts_and_leaves_its_shared_skills_to_the_family,
    snippet_runs_since_count_only_the_window_and_only_the_agents_own_snippets,
    the_vocabulary_is_replaced_as_a_whole_and_a_rebuild_adds_new_pages_as_new_tags,
    // The server's identities and reports.
    a_runner_token_names_its_agent_until_it_is_revoked,
    a_token_cannot_be_issued_for_another_owner_s_agent,
    operator_tokens_are_known_by_their_digest,
    an_operator_token_is_revoked_by_its_digest_or_its_id_and_listed_with_its_times,
    run_totals_count_a_family_s_ok_and_failed_runs_and_no_other_family_s,
    a_session_lasts_until_it_expires_or_ends,
    the_newest_avatar_state_is_kept_and_an_older_one_changes_nothing,
    wealth_is_kept_per_hour_the_newest_report_winning_for_ninety_days,
    family_reuse_counts_runs_of_a_sibling_s_skill_and_the_skills_reused,
    // What a host saw but could not count.
    an_unrecorded_call_is_kept_once_per_event_and_only_for_its_own_family,
    a_look_s_state_is_among_the_latest_outputs_and_other_unrecorded_calls_are_not,
    an_agent_s_mirror_folder_is_kept_and_an_unknown_agent_is_not_found,
    // Names.
    owner_and_agent_names_that_differ_only_in_case_are_refused,
    // The owner's key.
    an_owner_s_key_is_kept_only_as_its_digest_and_a_new_key_replaces_it,
    an_old_library_s_plain_owner_key_is_turned_into_its_digest_when_opened,
}

/// Ada's family: her avatars buzz and pickles, in a library of their own.
struct Family {
    store: Library,
    owner: OwnerId,
    buzz: AgentId,
    pickles: AgentId,
}

fn family(backend: Backend) -> Family {
    let store = backend.open();
    let owner = store
        .create_owner("ada", &secret_digest("mrk_ada_key"), 0)
        .unwrap();
    let buzz = store.create_agent(owner.id, "buzz", "/ws/buzz", 0).unwrap();
    let pickles = store
        .create_agent(owner.id, "pickles", "/ws/pickles", 0)
        .unwrap();
    Family {
        store,
        owner: owner.id,
        buzz: buzz.id,
        pickles: pickles.id,
    }
}

fn snapshot(agent: AgentId, bot: &str, name: &str, code: &str) -> ScriptSnapshot {
    ScriptSnapshot {
        agent,
        path: format!("bots/{bot}/{name}.ts"),
        name: name.into(),
        digest: mindrune_core::sha256(code.as_bytes()),
        code: code.into(),
        tags: vec![],
        header: SkillHeader::default(),
        file_digest: None,
        origin: None,
    }
}

/// The same file with an `@skill` header in the given state.
fn headed(mut snapshot: ScriptSnapshot, state: HeaderState) -> ScriptSnapshot {
    snapshot.header = SkillHeader {
        state,
        goal: Some(format!("do {}", snapshot.name)),
        ..SkillHeader::default()
    };
    snapshot
}

fn clean_run(version: VersionId, agent: AgentId, at_s: i64) -> NewUse {
    NewUse {
        version,
        agent,
        outcome: Outcome {
            at: at_s * 1000,
            ok: true,
            duration_ms: 60_000,
            ..Outcome::default()
        },
        source: "shell".into(),
        call: None,
        output: None,
        event_id: None,
        recorded_at: at_s * 1000,
    }
}

fn a_new_file_is_v1_and_the_same_code_matches_it_again(backend: Backend) {
    let f = family(backend);
    let first = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap();
    assert!(first.new_skill && first.new_version);
    assert_eq!(first.version.number, 1);
    let again = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 2)
        .unwrap();
    assert!(!again.new_skill && !again.new_version);
    assert_eq!(again.version.id, first.version.id);
}

fn an_edit_is_the_next_version_built_on_the_current_one_at_ninety_percent(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    for i in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(v1.id, f.buzz, 100 + i))
            .unwrap();
    }
    let v1 = f.store.version(f.owner, v1.id).unwrap();
    let v2 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "b();"), 2)
        .unwrap()
        .version;
    assert_eq!(v2.number, 2);
    assert_eq!(v2.parent, Some(v1.id));
    assert_eq!(v2.lineage, Some(Lineage::Edit));
    assert!(
        (v2.score - 0.9 * v1.score).abs() < 1e-9,
        "{} vs {}",
        v2.score,
        v1.score
    );
}

fn going_back_to_old_code_is_the_old_version_again(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    f.store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "b();"), 2)
        .unwrap();
    let back = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 3)
        .unwrap();
    assert_eq!(back.version.id, v1.id);
    assert_eq!(f.store.versions(f.owner, back.skill.id).unwrap().len(), 2);
    assert_eq!(back.skill.current_version, Some(v1.id));
}

fn five_clean_runs_score_about_620_and_every_use_is_counted(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    let mut last = None;
    for i in 0..5 {
        last = Some(
            f.store
                .record_use(f.owner, &clean_run(v1.id, f.buzz, 100 + i * 60))
                .unwrap(),
        );
    }
    let version = last.unwrap().version;
    assert_eq!(version.uses, 5);
    assert_eq!(version.ok, 5);
    f.store.assert_integrity_ok();
    assert!(
        (version.score - 620.0).abs() < 10.0,
        "score {}",
        version.score
    );
}

fn the_audit_agrees_with_recorded_runs_and_names_a_lost_use_or_a_stale_score(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    for i in 0..4 {
        f.store
            .record_use(f.owner, &clean_run(v1.id, f.buzz, 100 + i * 60))
            .unwrap();
    }
    f.store.assert_integrity_ok();

    // A use that vanished behind the store's back, and a score nobody computed.
    f.store
        .tamper("DELETE FROM uses WHERE use_id = (SELECT MAX(use_id) FROM uses)");
    let problems = f.store.audit(f.owner).unwrap();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].contains("buzz/chop")
            && problems[0].contains("counts 4 runs (4 ok) but 3 runs (3 ok)"),
        "{problems:?}"
    );
    assert!(problems[1].contains("the stored score is"), "{problems:?}");
    f.store.tamper("UPDATE versions SET uses = 3, ok = 3");
    let problems = f.store.audit(f.owner).unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
}

fn a_retried_event_id_is_not_counted_twice(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    let mut run = clean_run(v1.id, f.buzz, 100);
    run.event_id = Some("toolu_1".into());
    assert!(f.store.record_use(f.owner, &run).unwrap().added);
    let again = f.store.record_use(f.owner, &run).unwrap();
    assert!(!again.added);
    assert_eq!(again.version.uses, 1);
}

fn another_owner_never_sees_a_family_s_skills_or_versions(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    let other = f
        .store
        .create_owner("eve", &secret_digest("mrk_eve"), 0)
        .unwrap();
    let mallory = f
        .store
        .create_agent(other.id, "mallory", "/ws/m", 0)
        .unwrap();
    assert!(f.store.skills(other.id, None).unwrap().is_empty());
    assert!(f.store.version(other.id, v1.id).is_err());
    assert!(
        f.store
            .versions_with_digest(other.id, &v1.digest)
            .unwrap()
            .is_empty()
    );
    // Recording into another family's version, or as another family's agent, finds nothing.
    assert!(
        f.store
            .record_use(other.id, &clean_run(v1.id, mallory.id, 5))
            .is_err()
    );
    assert!(
        f.store
            .record_use(f.owner, &clean_run(v1.id, mallory.id, 5))
            .is_err()
    );
    assert_eq!(f.store.use_count(f.owner).unwrap(), 0);
    // The same code in the other family is its own skill.
    let theirs = f
        .store
        .match_script(
            other.id,
            &snapshot(mallory.id, "mallory", "chop", "a();"),
            1,
        )
        .unwrap();
    assert!(theirs.new_skill);
    assert_eq!(theirs.version.parent, None);
}

fn a_copy_starts_its_own_history_built_on_the_original(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    f.store
        .record_use(f.owner, &clean_run(v1.id, f.buzz, 100))
        .unwrap();
    let mut copy = snapshot(f.buzz, "buzz", "chop2", "a();");
    copy.origin = Some((v1.id, Lineage::Copy));
    let copied = f.store.match_script(f.owner, &copy, 2).unwrap();
    assert!(copied.new_skill);
    assert_ne!(copied.version.id, v1.id);
    assert_eq!(copied.version.parent, Some(v1.id));
    assert_eq!(copied.version.uses, 0);
    assert_eq!(
        f.store.version(f.owner, v1.id).unwrap().uses,
        1,
        "a copy never adds runs to the original"
    );
}

fn skills_show_one_entry_per_skill_at_its_current_version(backend: Backend) {
    let f = family(backend);
    f.store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap();
    f.store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "b();"), 2)
        .unwrap();
    f.store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "c();"), 3)
        .unwrap();
    f.store
        .match_script(f.owner, &snapshot(f.pickles, "pickles", "mine", "m();"), 4)
        .unwrap();
    let entries = f.store.skills(f.owner, None).unwrap();
    assert_eq!(entries.len(), 2);
    let chop = entries.iter().find(|e| e.skill.name == "chop").unwrap();
    assert_eq!((chop.version.number, chop.version_count), (3, 3));
    assert_eq!(f.store.skills(f.owner, Some(f.pickles)).unwrap().len(), 1);
}

fn tags_are_kept_and_peers_sharing_one_feed_the_effectiveness(backend: Backend) {
    let f = family(backend);
    let mut mine = snapshot(f.buzz, "buzz", "mine", "m1();");
    mine.tags = vec!["skill:mining".into()];
    let mine = f.store.match_script(f.owner, &mine, 1).unwrap().version;
    let mut peer = snapshot(f.pickles, "pickles", "mine", "m2();");
    peer.tags = vec!["skill:mining".into()];
    let peer = f.store.match_script(f.owner, &peer, 1).unwrap().version;
    let xp_run = |version, agent, xp: f64, at| {
        let mut run = clean_run(version, agent, at);
        run.outcome.xp.insert("Mining".into(), xp);
        let recorded = f.store.record_use(f.owner, &run).unwrap().version;
        f.store.version(f.owner, recorded.id).unwrap()
    };
    for i in 0..3 {
        xp_run(peer.id, f.pickles, 100.0, i);
    }
    // Twice the peer's rate: the full effectiveness.
    let scored = xp_run(mine.id, f.buzz, 200.0, 10);
    let breakdown = scored.breakdown.unwrap();
    assert!(
        (breakdown.effectiveness - 250.0).abs() < 1e-6,
        "{breakdown:?}"
    );
    assert_eq!(
        scored.measure_key,
        mindrune_core::Measure::Xp(vec!["mining".into()]).key()
    );
}

fn snippets_keep_their_own_history_per_agent(backend: Backend) {
    let f = family(backend);
    let snippet = |at| NewSnippetUse {
        agent: f.buzz,
        digest: "sha256:s".into(),
        code: "await bot.chopTree()".into(),
        outcome: Outcome {
            at,
            ok: true,
            ..Outcome::default()
        },
        output: None,
        event_id: None,
    };
    f.store.record_snippet_use(f.owner, &snippet(1)).unwrap();
    let second = f.store.record_snippet_use(f.owner, &snippet(2)).unwrap();
    assert_eq!(second.snippet.uses, 2);
    assert!(
        f.store.skills(f.owner, None).unwrap().is_empty(),
        "a snippet never becomes a skill"
    );
    assert_eq!(f.store.snippets(f.owner, f.buzz).unwrap().len(), 1);
}

fn a_failed_run_keeps_its_cause_and_the_latest_outputs_come_newest_first(backend: Backend) {
    let f = family(backend);
    let v = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop()"), 0)
        .unwrap()
        .version
        .id;
    let run = |at_s: i64, ok: bool, failure: Option<&str>, output: &str| NewUse {
        outcome: Outcome {
            ok,
            failure: failure.map(str::to_owned),
            ..clean_run(v, f.buzz, at_s).outcome
        },
        output: Some(output.to_owned()),
        ..clean_run(v, f.buzz, at_s)
    };
    f.store
        .record_use(f.owner, &run(1, true, None, "first"))
        .unwrap();
    f.store
        .record_use(
            f.owner,
            &run(
                3,
                false,
                Some("Error: Script timeout after 60000ms"),
                "third",
            ),
        )
        .unwrap();
    f.store
        .record_use(f.owner, &run(2, false, None, "second"))
        .unwrap();
    f.store
        .record_snippet_use(
            f.owner,
            &NewSnippetUse {
                agent: f.buzz,
                digest: "sha256:s".into(),
                code: "await bot.chopTree()".into(),
                outcome: Outcome {
                    at: 2_500,
                    ok: false,
                    failure: Some("TypeError: x".into()),
                    ..Outcome::default()
                },
                output: Some("inline".into()),
                event_id: None,
            },
        )
        .unwrap();
    let skill = f
        .store
        .skill_at_path(f.owner, f.buzz, "bots/buzz/chop.ts")
        .unwrap()
        .unwrap();
    let failures = f.store.recent_failures(f.owner, skill.id, 10).unwrap();
    assert_eq!(failures.len(), 2);
    assert_eq!(failures[0].at, 3_000);
    assert_eq!(failures[0].version, 1);
    assert_eq!(
        failures[0].failure.as_deref(),
        Some("Error: Script timeout after 60000ms")
    );
    assert_eq!(failures[1].failure, None);
    assert_eq!(
        f.store.recent_failures(f.owner, skill.id, 1).unwrap().len(),
        1
    );
    // Scripts and inline code alike, strictly before the time asked about.
    assert_eq!(
        f.store.recent_outputs(f.owner, f.buzz, 3_000, 10).unwrap(),
        ["inline", "second", "first"]
    );
    assert_eq!(
        f.store.recent_outputs(f.owner, f.buzz, 9_000, 1).unwrap(),
        ["third"]
    );
    assert!(
        f.store
            .recent_outputs(f.owner, f.pickles, 9_000, 10)
            .unwrap()
            .is_empty()
    );
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(
        f.store
            .recent_outputs(other.id, f.buzz, 9_000, 10)
            .unwrap()
            .is_empty()
    );
    assert!(
        f.store
            .recent_failures(other.id, skill.id, 10)
            .unwrap()
            .is_empty()
    );
}

/// On SQLite two handles on one file; on PostgreSQL two handles (two pools) on one schema.
fn two_handles_on_one_file_never_lose_a_use_or_serve_a_stale_window(backend: Backend) {
    let library = backend.open();
    let other_handle = library.open_again().unwrap();
    let (a, b): (&dyn Store, &dyn Store) = (&*library, &*other_handle);
    let owner = a.create_owner("ada", &secret_digest("k"), 0).unwrap().id;
    let buzz = a.create_agent(owner, "buzz", "/ws", 0).unwrap().id;
    let v1 = a
        .match_script(owner, &snapshot(buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    // Interleave writers: each must see the other's uses in its window (the cache is checked
    // against the version's use count inside the transaction).
    for i in 0..10 {
        let (store, ok) = if i % 2 == 0 { (a, true) } else { (b, false) };
        let mut run = clean_run(v1.id, buzz, 100 + i);
        run.outcome.ok = ok;
        store.record_use(owner, &run).unwrap();
    }
    let version = a.version(owner, v1.id).unwrap();
    assert_eq!((version.uses, version.ok), (10, 5));
    // The same uses recorded through one handle must give exactly the same score.
    let single = backend.open();
    let owner2 = single
        .create_owner("ada", &secret_digest("k"), 0)
        .unwrap()
        .id;
    let buzz2 = single.create_agent(owner2, "buzz", "/ws", 0).unwrap().id;
    let w1 = single
        .match_script(owner2, &snapshot(buzz2, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    for i in 0..10 {
        let mut run = clean_run(w1.id, buzz2, 100 + i);
        run.outcome.ok = i % 2 == 0;
        single.record_use(owner2, &run).unwrap();
    }
    assert_eq!(single.version(owner2, w1.id).unwrap().score, version.score);
    library.assert_integrity_ok();
}

/// A write group keeps the versions' rows its uses left for the next group of its handle; a
/// group of another handle in between must make the next one read them again.
fn two_handles_write_groups_in_turn_each_see_the_other_s_uses(backend: Backend) {
    let library = backend.open();
    let other_handle = library.open_again().unwrap();
    let (a, b): (&dyn Store, &dyn Store) = (&*library, &*other_handle);
    let owner = a.create_owner("ada", &secret_digest("k"), 0).unwrap().id;
    let buzz = a.create_agent(owner, "buzz", "/ws", 0).unwrap().id;
    let v1 = a
        .match_script(owner, &snapshot(buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    let single = backend.open();
    let owner2 = single
        .create_owner("ada", &secret_digest("k"), 0)
        .unwrap()
        .id;
    let buzz2 = single.create_agent(owner2, "buzz", "/ws", 0).unwrap().id;
    let w1 = single
        .match_script(owner2, &snapshot(buzz2, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    // a, a, b, a, b, b, a: each handle's group follows its own group and the other's.
    for (group, store) in [a, a, b, a, b, b, a].into_iter().enumerate() {
        let mut answers = Vec::new();
        store
            .write_group(&[owner], &mut |handle| {
                for i in 0..3 {
                    let mut run = clean_run(v1.id, buzz, 100 + (group * 3 + i) as i64);
                    run.outcome.ok = (group + i) % 3 != 0;
                    answers.push(handle.record_use(owner, &run)?);
                }
                Ok(())
            })
            .unwrap();
        for (i, answer) in answers.iter().enumerate() {
            let mut run = clean_run(w1.id, buzz2, 100 + (group * 3 + i) as i64);
            run.outcome.ok = (group + i) % 3 != 0;
            let expected = single.record_use(owner2, &run).unwrap();
            assert_eq!(
                (answer.version.uses, answer.version.ok),
                (expected.version.uses, expected.version.ok),
                "group {group}, use {i}"
            );
            assert_eq!(
                answer.version.score.to_bits(),
                expected.version.score.to_bits(),
                "group {group}, use {i}"
            );
        }
    }
    let (version, expected) = (
        b.version(owner, v1.id).unwrap(),
        single.version(owner2, w1.id).unwrap(),
    );
    assert_eq!((version.uses, version.ok), (expected.uses, expected.ok));
    assert_eq!(version.score.to_bits(), expected.score.to_bits());
    library.assert_integrity_ok();
}

/// Runs of two scripts (one headed, so it is shared mid-way) with mixed outcomes and a retried
/// event among them, recorded in groups of seven (and across two families in one group) must
/// answer and store exactly what recording them one at a time does.
fn uses_recorded_in_write_groups_score_and_share_exactly_as_one_at_a_time(backend: Backend) {
    struct Run {
        script: usize,
        ok: bool,
        at_s: i64,
        event: String,
    }
    let runs: Vec<Run> = (0..60)
        .map(|i| Run {
            script: (i * 7 % 3) as usize % 2,
            ok: i % 5 != 3,
            at_s: 100 + i * 13 % 41 + i,
            // Every tenth event is sent twice: the retry is not counted.
            event: format!("e{}", if i % 10 == 9 { i - 1 } else { i }),
        })
        .collect();
    let scripts = |f: &Family| {
        let chop = headed(
            snapshot(f.buzz, "buzz", "chop", "chop();"),
            HeaderState::Skill,
        );
        let mine = snapshot(f.buzz, "buzz", "mine", "mine();");
        [chop, mine].map(|s| f.store.match_script(f.owner, &s, 1).unwrap().version.id)
    };
    let new_use = |f: &Family, versions: &[VersionId; 2], run: &Run| {
        let mut new_use = clean_run(versions[run.script], f.buzz, run.at_s);
        new_use.outcome.ok = run.ok;
        new_use.outcome.duration_ms = 30_000 + (run.at_s as u64 % 7) * 1_000;
        new_use.event_id = Some(run.event.clone());
        new_use
    };
    let one = family(backend);
    let one_versions = scripts(&one);
    let one_at_a_time: Vec<_> = runs
        .iter()
        .map(|run| {
            one.store
                .record_use(one.owner, &new_use(&one, &one_versions, run))
                .unwrap()
        })
        .collect();

    let grouped = family(backend);
    let versions = scripts(&grouped);
    // A second family in the same library, written in the same groups.
    let other_owner = grouped
        .store
        .create_owner("bea", &secret_digest("k2"), 0)
        .unwrap()
        .id;
    let other_agent = grouped
        .store
        .create_agent(other_owner, "rex", "/ws/rex", 0)
        .unwrap()
        .id;
    let other_version = grouped
        .store
        .match_script(
            other_owner,
            &snapshot(other_agent, "rex", "fish", "fish();"),
            1,
        )
        .unwrap()
        .version
        .id;
    let mut in_groups = Vec::new();
    for chunk in runs.chunks(7) {
        grouped
            .store
            .write_group(&[grouped.owner, other_owner], &mut |group| {
                for run in chunk {
                    in_groups
                        .push(group.record_use(grouped.owner, &new_use(&grouped, &versions, run))?);
                    group.record_use(
                        other_owner,
                        &clean_run(other_version, other_agent, run.at_s),
                    )?;
                }
                Ok(())
            })
            .unwrap();
    }
    assert_eq!(in_groups.len(), one_at_a_time.len());
    for (grouped_use, single) in in_groups.iter().zip(&one_at_a_time) {
        assert_eq!(grouped_use.added, single.added);
        assert_eq!(
            (grouped_use.version.uses, grouped_use.version.ok),
            (single.version.uses, single.version.ok)
        );
        // To the last digit.
        assert_eq!(
            grouped_use.version.score.to_bits(),
            single.version.score.to_bits()
        );
        assert_eq!(
            grouped_use
                .shared
                .as_ref()
                .map(|c| (&c.kind, c.version, &c.reason, c.at)),
            single
                .shared
                .as_ref()
                .map(|c| (&c.kind, c.version, &c.reason, c.at))
        );
    }
    assert!(
        one_at_a_time.iter().any(|u| u.shared.is_some()),
        "the story shares a script"
    );
    for (a, b) in versions.iter().zip(&one_versions) {
        let (a, b) = (
            grouped.store.version(grouped.owner, *a).unwrap(),
            one.store.version(one.owner, *b).unwrap(),
        );
        assert_eq!(
            (a.uses, a.ok, a.score.to_bits(), a.shared_at),
            (b.uses, b.ok, b.score.to_bits(), b.shared_at)
        );
        assert_eq!(a.breakdown, b.breakdown);
    }
    assert_eq!(
        grouped
            .store
            .version(other_owner, other_version)
            .unwrap()
            .uses,
        60
    );
    assert!(grouped.store.audit(grouped.owner).unwrap().is_empty());
    assert!(grouped.store.audit(other_owner).unwrap().is_empty());
    grouped.store.assert_integrity_ok();
}

/// Inside a write group's work only the group's handle may be used: the store itself would
/// wait for the very group its caller runs (SQLite's connection, PostgreSQL's family lock). It
/// says so at once instead of hanging, and the group stores nothing.
fn the_store_used_directly_inside_a_group_s_work_panics_instead_of_waiting_for_ever(
    backend: Backend,
) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version
        .id;
    let store: &dyn Store = &*f.store;
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        store.write_group(&[f.owner], &mut |group| {
            group.record_use(f.owner, &clean_run(v1, f.buzz, 100))?;
            store.record_use(f.owner, &clean_run(v1, f.buzz, 101))?;
            Ok(())
        })
    }));
    let panic = outcome.expect_err("a direct use inside the group must not go through");
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(
        message.contains("do the work through the group's handle"),
        "{message}"
    );
    // The group rolled back, and the store works as before.
    assert_eq!(f.store.version(f.owner, v1).unwrap().uses, 0);
    f.store
        .record_use(f.owner, &clean_run(v1, f.buzz, 102))
        .unwrap();
    assert_eq!(f.store.version(f.owner, v1).unwrap().uses, 1);
}

fn a_refused_write_leaves_its_group_and_a_failed_group_stores_nothing(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version
        .id;
    f.store
        .write_group(&[f.owner], &mut |group| {
            group.record_use(f.owner, &clean_run(v1, f.buzz, 100))?;
            let refused = group.record_use(f.owner, &clean_run(VersionId(v1.0 + 999), f.buzz, 101));
            assert!(
                matches!(refused, Err(StoreError::NotFound(_))),
                "{refused:?}"
            );
            // The group goes on after the refusal, and its handle reads its own writes.
            let second = group.record_use(f.owner, &clean_run(v1, f.buzz, 102))?;
            assert_eq!(second.version.uses, 2);
            let skill = group.skill_at_path(f.owner, f.buzz, "bots/buzz/chop.ts")?;
            let versions = group.versions(f.owner, skill.expect("chop is a skill").id)?;
            assert_eq!(versions[0].uses, 2);
            Ok(())
        })
        .unwrap();
    assert_eq!(f.store.version(f.owner, v1).unwrap().uses, 2);

    // A group whose work fails stores none of its writes, and what it kept in memory of them
    // (the score window) is forgotten with them.
    let failed = f.store.write_group(&[f.owner], &mut |group| {
        group.record_use(f.owner, &clean_run(v1, f.buzz, 103))?;
        group.record_use(f.owner, &clean_run(v1, f.buzz, 104))?;
        Err(StoreError::Database("the batch was cut off".into()))
    });
    assert!(matches!(failed, Err(StoreError::Database(_))), "{failed:?}");
    let version = f.store.version(f.owner, v1).unwrap();
    assert_eq!(version.uses, 2);
    let mut failing = clean_run(v1, f.buzz, 105);
    failing.outcome.ok = false;
    let after = f.store.record_use(f.owner, &failing).unwrap();
    assert_eq!((after.version.uses, after.version.ok), (3, 2));
    assert!(f.store.audit(f.owner).unwrap().is_empty());
    f.store.assert_integrity_ok();
}

/// A group's uses may wait in memory until something needs them (see the backends'
/// `group_writes`): whatever the group's own thread reads of uses meanwhile must hold them.
fn a_group_reads_its_own_uses_and_knows_their_event_ids_before_they_are_written(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version
        .id;
    let with_output = |at_s: i64, event: &str| {
        let mut run = clean_run(v1, f.buzz, at_s);
        run.output = Some(format!("output at {at_s}"));
        run.event_id = Some(event.into());
        run
    };
    f.store
        .write_group(&[f.owner], &mut |group| {
            let first = group.record_use(f.owner, &with_output(100, "e1"))?;
            assert!(first.added);
            assert_eq!(
                group.newest_output_at(f.owner, f.buzz)?,
                Some(100_000),
                "the newest output is the group's own"
            );
            let second = group.record_use(f.owner, &with_output(110, "e2"))?;
            // The same event again, and again after the uses were written for a read.
            let retried = group.record_use(f.owner, &with_output(110, "e2"))?;
            assert!(second.added && !retried.added);
            assert_eq!(retried.version.uses, 2);
            assert_eq!(
                group.recent_outputs_since(f.owner, f.buzz, None, 200_000, 5)?,
                ["output at 110", "output at 100"]
            );
            assert!(!group.record_use(f.owner, &with_output(100, "e1"))?.added);
            Ok(())
        })
        .unwrap();
    let version = f.store.version(f.owner, v1).unwrap();
    assert_eq!((version.uses, version.ok), (2, 2));
    assert_eq!(f.store.use_count(f.owner).unwrap(), 2);
    assert!(f.store.audit(f.owner).unwrap().is_empty());
    f.store.assert_integrity_ok();
}

fn another_thread_never_sees_a_group_s_writes_before_its_commit(backend: Backend) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version
        .id;
    let before_commit = AtomicBool::new(true);
    let store: &dyn Store = &*f.store;
    let (uses_seen, seen_before_commit) = std::thread::scope(|scope| {
        let mut reader = None;
        store
            .write_group(&[f.owner], &mut |group| {
                group.record_use(f.owner, &clean_run(v1, f.buzz, 100))?;
                reader = Some(scope.spawn(|| {
                    let uses = store.version(f.owner, v1).unwrap().uses;
                    (uses, before_commit.load(Ordering::SeqCst))
                }));
                // Time for the reader to read (PostgreSQL) or to wait for the group (SQLite).
                std::thread::sleep(std::time::Duration::from_millis(100));
                before_commit.store(false, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        reader.unwrap().join().unwrap()
    });
    // What the reader saw was the state before the group or after its commit, never between.
    assert!(
        uses_seen == 0 || !seen_before_commit,
        "the other thread saw {uses_seen} uses before the group committed"
    );
    assert_eq!(f.store.version(f.owner, v1).unwrap().uses, 1);
}

/// On SQLite the file's `user_version`; on PostgreSQL a row in the schema's
/// `mindrune_migrations`.
fn a_library_from_a_newer_mindrune_is_refused_with_a_clear_error(backend: Backend) {
    let library = backend.open();
    library.stamp_schema_version(99);
    let err = library
        .open_again()
        .err()
        .expect("a library from a newer MindRune is refused");
    assert!(
        matches!(err, StoreError::TooNew { found: 99, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("newer MindRune"), "{err}");
}

fn the_server_s_health_is_kept_across_handles_the_last_save_winning(backend: Backend) {
    let library = backend.open();
    let store: &dyn Store = &*library;
    assert_eq!(store.server_health().unwrap(), None);
    store
        .save_server_health(1_000, r#"{"minutes":[]}"#)
        .unwrap();
    store
        .save_server_health(2_000, r#"{"minutes":[{"minute":1}]}"#)
        .unwrap();
    // Another handle, as a restarted server opens it, reads the last save.
    let again = library.open_again().unwrap();
    assert_eq!(
        again.server_health().unwrap(),
        Some((2_000, r#"{"minutes":[{"minute":1}]}"#.to_owned()))
    );
}

fn failed_run(version: VersionId, agent: AgentId, at_s: i64) -> NewUse {
    let mut run = clean_run(version, agent, at_s);
    run.outcome.ok = false;
    run
}

fn a_headed_script_is_shared_right_after_the_run_that_makes_it_qualify(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    assert_eq!(v1.sharing, None);
    for run in 0..4 {
        let used = f
            .store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
        assert_eq!(used.shared, None, "run {run} must not share yet");
    }
    assert!(f.store.shared_skills(f.owner).unwrap().is_empty());
    let fifth = f
        .store
        .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 20))
        .unwrap();
    let shared = fifth.shared.expect("the fifth clean run clears the bar");
    assert_eq!(shared.kind, SharingKind::Shared);
    assert_eq!(shared.label, "buzz/chop");
    assert_eq!(shared.version, Some(1));
    assert!(
        shared
            .reason
            .starts_with("cleared the bar (5 runs, score 6"),
        "{}",
        shared.reason
    );
    let family_skills = f.store.shared_skills(f.owner).unwrap();
    assert_eq!(family_skills.len(), 1);
    assert_eq!(family_skills[0].versions[0].number, 1);
    assert!(family_skills[0].versions[0].shared_at.is_some());
}

fn a_script_without_a_header_is_never_shared_and_the_header_shares_it_at_once(backend: Backend) {
    let f = family(backend);
    let bare = snapshot(f.buzz, "buzz", "chop", "chop();");
    let v1 = f.store.match_script(f.owner, &bare, 1).unwrap();
    for run in 0..6 {
        let used = f
            .store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
        assert_eq!(used.shared, None);
    }
    assert!(f.store.shared_skills(f.owner).unwrap().is_empty());
    let now_headed = f
        .store
        .match_script(f.owner, &headed(bare.clone(), HeaderState::Skill), 100)
        .unwrap();
    assert!(!now_headed.new_version, "a header is not a new version");
    let change = now_headed
        .sharing
        .expect("the header shares a proven script at once");
    assert_eq!(change.kind, SharingKind::Shared);
    assert_eq!(f.store.shared_skills(f.owner).unwrap().len(), 1);
}

fn private_or_a_removed_header_un_shares_and_the_header_back_shares_again(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    for run in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    let private = f
        .store
        .match_script(f.owner, &headed(file.clone(), HeaderState::Private), 50_000)
        .unwrap();
    let change = private.sharing.unwrap();
    assert_eq!(change.kind, SharingKind::Unshared);
    assert_eq!(change.reason, "the header says @private");
    assert!(f.store.shared_skills(f.owner).unwrap().is_empty());
    let removed = f
        .store
        .match_script(
            f.owner,
            &snapshot(f.buzz, "buzz", "chop", "chop();"),
            51_000,
        )
        .unwrap();
    assert_eq!(removed.sharing, None, "already un-shared");
    let back = f.store.match_script(f.owner, &file, 52_000).unwrap();
    assert_eq!(back.sharing.unwrap().kind, SharingKind::Shared);
    // History is kept throughout.
    assert_eq!(f.store.version(f.owner, v1.version.id).unwrap().uses, 5);
    let log = f.store.sharing_changes(f.owner, f.buzz, 0).unwrap();
    let kinds: Vec<_> = log.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            SharingKind::Shared,
            SharingKind::Unshared,
            SharingKind::Shared
        ]
    );
}

fn eager_sharing_lowers_the_bar_and_switching_it_off_keeps_what_was_shared(backend: Backend) {
    let f = family(backend);
    f.store.set_eager_sharing(f.owner, true).unwrap();
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    let mut shared = None;
    for run in 0..3 {
        shared = f
            .store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap()
            .shared;
    }
    assert!(shared.is_some(), "three clean runs clear the eager bar");
    f.store.set_eager_sharing(f.owner, false).unwrap();
    assert_eq!(f.store.shared_skills(f.owner).unwrap().len(), 1);
    assert!(!f.store.owner(f.owner).unwrap().eager_sharing);
}

fn one_failure_in_three_does_not_clear_the_eager_bar(backend: Backend) {
    let f = family(backend);
    f.store.set_eager_sharing(f.owner, true).unwrap();
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    f.store
        .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10))
        .unwrap();
    f.store
        .record_use(f.owner, &failed_run(v1.version.id, f.buzz, 11))
        .unwrap();
    let third = f
        .store
        .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 12))
        .unwrap();
    assert_eq!(third.shared, None, "score {}", third.version.score);
}

fn the_bar_lowered_later_shares_qualified_scripts_at_the_turn_end(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    for run in 0..3 {
        f.store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    assert!(
        f.store
            .share_qualified(f.owner, f.buzz, 20)
            .unwrap()
            .is_empty()
    );
    f.store.set_eager_sharing(f.owner, true).unwrap();
    let changes = f.store.share_qualified(f.owner, f.buzz, 21).unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].label, "buzz/chop");
}

fn a_deleted_file_un_shares_its_skill_and_keeps_its_history(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    for run in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    let gone = f
        .store
        .mark_file_gone(f.owner, v1.skill.id, 30)
        .unwrap()
        .unwrap();
    assert_eq!(gone.kind, SharingKind::Unshared);
    assert_eq!(gone.reason, "the file was deleted or renamed");
    assert!(f.store.shared_skills(f.owner).unwrap().is_empty());
    assert_eq!(
        f.store.mark_file_gone(f.owner, v1.skill.id, 31).unwrap(),
        None
    );
    // The file comes back: shared again at once, with its runs.
    let back = f.store.match_script(f.owner, &file, 40).unwrap();
    assert_eq!(back.sharing.unwrap().kind, SharingKind::Shared);
    assert_eq!(back.version.uses, 5);
}

fn an_unproven_new_version_does_not_replace_the_shared_one(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    for run in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    let edit = headed(
        snapshot(f.buzz, "buzz", "chop", "chop(2);"),
        HeaderState::Skill,
    );
    let v2 = f.store.match_script(f.owner, &edit, 50).unwrap();
    assert_eq!(v2.sharing, None);
    f.store
        .record_use(f.owner, &clean_run(v2.version.id, f.buzz, 60))
        .unwrap();
    let shared = f.store.shared_skills(f.owner).unwrap();
    let standing: Vec<_> = shared[0]
        .versions
        .iter()
        .map(|v| (v.number, v.shared_at.is_some()))
        .collect();
    assert_eq!(standing, [(2, false), (1, true)]);
}

fn sibling_use_counts_siblings_runs_of_any_version_and_of_copies(backend: Backend) {
    let f = family(backend);
    let file = headed(
        snapshot(f.buzz, "buzz", "mine", "mine();"),
        HeaderState::Skill,
    );
    let v1 = f.store.match_script(f.owner, &file, 1).unwrap();
    for run in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(v1.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    // pickles runs an unchanged copy (counts for buzz's skill) and fails once.
    f.store
        .record_use(f.owner, &failed_run(v1.version.id, f.pickles, 100))
        .unwrap();
    // pickles adapts a copy: its own skill built on buzz's.
    let mut adapted = snapshot(f.pickles, "pickles", "mine", "mine(2);");
    adapted.origin = Some((v1.version.id, Lineage::Sibling));
    let copy = f.store.match_script(f.owner, &adapted, 110).unwrap();
    f.store
        .record_use(f.owner, &clean_run(copy.version.id, f.pickles, 120))
        .unwrap();
    let usage = f.store.sibling_use(f.owner, v1.skill.id, 50_000).unwrap();
    assert_eq!(usage.used_by, 1);
    assert_eq!(usage.runs, 2);
    assert_eq!(usage.failures_since, 1);
    assert_eq!(usage.copies, [("pickles/mine".to_string(), 1)]);
    let later = f.store.sibling_use(f.owner, v1.skill.id, 200_000).unwrap();
    assert_eq!(
        later.failures_since, 0,
        "failures older than the window do not count"
    );
}

fn lessons_follow_the_lab_log_and_keep_their_first_seen_time(backend: Backend) {
    let f = family(backend);
    let lesson = |line: usize, text: &str| NewLesson {
        line,
        text: text.into(),
    };
    let first = f
        .store
        .replace_lessons(
            f.owner,
            f.buzz,
            &[lesson(3, "oaks west of Draynor"), lesson(9, "bank first")],
            10,
        )
        .unwrap();
    assert_eq!(first.added.len(), 2);
    let second = f
        .store
        .replace_lessons(
            f.owner,
            f.buzz,
            &[lesson(4, "bank first"), lesson(12, "new one")],
            20,
        )
        .unwrap();
    assert_eq!(second.added, ["new one"]);
    assert_eq!(second.removed, ["oaks west of Draynor"]);
    assert_eq!(second.kept, 1);
    let all = f.store.lessons(f.owner).unwrap();
    let seen: Vec<_> = all
        .iter()
        .map(|l| (l.text.as_str(), l.first_seen_at))
        .collect();
    assert_eq!(seen, [("new one", 20), ("bank first", 10)]);
    let other = f
        .store
        .create_owner("eve", &secret_digest("mrk_eve"), 0)
        .unwrap();
    assert!(f.store.lessons(other.id).unwrap().is_empty());
    assert!(f.store.replace_lessons(other.id, f.buzz, &[], 30).is_err());
}

fn deleting_an_agent_removes_its_scripts_and_leaves_its_shared_skills_to_the_family(
    backend: Backend,
) {
    let f = family(backend);
    let shared_file = headed(
        snapshot(f.buzz, "buzz", "chop", "chop();"),
        HeaderState::Skill,
    );
    let shared = f.store.match_script(f.owner, &shared_file, 1).unwrap();
    for run in 0..5 {
        f.store
            .record_use(f.owner, &clean_run(shared.version.id, f.buzz, 10 + run))
            .unwrap();
    }
    let private = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "secret", "s();"), 2)
        .unwrap();
    f.store
        .record_use(f.owner, &clean_run(private.version.id, f.buzz, 30))
        .unwrap();
    f.store
        .replace_lessons(
            f.owner,
            f.buzz,
            &[NewLesson {
                line: 1,
                text: "x".into(),
            }],
            3,
        )
        .unwrap();
    let deleted = f.store.delete_agent(f.owner, f.buzz).unwrap();
    assert_eq!(deleted.scripts_removed, 1);
    assert_eq!(deleted.skills_kept, 1);
    assert!(f.store.agent_by_name("buzz").unwrap().is_none());
    let family_skills = f.store.shared_skills(f.owner).unwrap();
    assert_eq!(family_skills.len(), 1);
    assert_eq!(family_skills[0].skill.agent, None);
    assert_eq!(family_skills[0].skill.agent_name, "buzz");
    assert!(f.store.skill(f.owner, private.skill.id).is_err());
    assert!(f.store.lessons(f.owner).unwrap().is_empty());
    assert_eq!(f.store.use_count(f.owner).unwrap(), 5);
    f.store.assert_integrity_ok();
}

fn snippet_runs_since_count_only_the_window_and_only_the_agents_own_snippets(backend: Backend) {
    let f = family(backend);
    let day: i64 = 24 * 60 * 60 * 1000;
    let now = 30 * day;
    let since = now - mindrune_core::NEAR_REPEAT_WINDOW_MS;
    let run = |store: &dyn Store, owner, agent, code: &str, at: i64, ok: bool| {
        store
            .record_snippet_use(
                owner,
                &NewSnippetUse {
                    agent,
                    digest: mindrune_core::snippet_digest(code),
                    code: code.into(),
                    outcome: Outcome {
                        at,
                        ok,
                        ..Outcome::default()
                    },
                    output: None,
                    event_id: None,
                },
            )
            .unwrap();
    };
    let west = "await bot.walkTo(3200, 3210); await bot.chopTree('oak');";
    let east = "await bot.walkTo(3105, 3210); await bot.chopTree('oak');";
    let old = "await bot.openBank();";
    // Two runs of `west` before the window do not count; three in it do, one of them failed.
    for at in [since - 2 * day, since - 1, since, since + day, now] {
        run(&*f.store, f.owner, f.buzz, west, at, at != since + day);
    }
    run(&*f.store, f.owner, f.buzz, east, now - day, true);
    run(&*f.store, f.owner, f.buzz, old, since - day, true);
    // A sibling's snippet and another family's are not this agent's history.
    run(&*f.store, f.owner, f.pickles, west, now, true);
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap()
        .id;
    let bobs = f.store.create_agent(other, "rex", "/ws/rex", 0).unwrap().id;
    run(&*f.store, other, bobs, west, now, true);

    let runs = f.store.snippet_runs_since(f.owner, f.buzz, since).unwrap();
    let summary: Vec<(&str, i64, i64, i64)> = runs
        .iter()
        .map(|r| (r.code.as_str(), r.ok, r.runs, r.last_run_at))
        .collect();
    assert_eq!(
        summary,
        [(west, 2, 3, now), (east, 1, 1, now - day)],
        "most recently run first, counted in the window only"
    );
    assert_eq!(runs[0].digest, mindrune_core::snippet_digest(west));
    assert!(
        f.store
            .snippet_runs_since(other, f.buzz, since)
            .unwrap()
            .is_empty(),
        "another family's owner id finds nothing"
    );

    // Mapped to the core's input, the window gives one near-repeat group of 3 successful runs.
    let recent: Vec<mindrune_core::RecentSnippet> = runs.into_iter().map(Into::into).collect();
    let suggestions = mindrune_core::suggestions("buzz", &recent, &Default::default());
    assert_eq!(suggestions.len(), 1);
    assert!(suggestions[0].near_repeat);
    assert_eq!(suggestions[0].count, 3);
    assert_eq!(suggestions[0].args, ["3200"]);
}

/// The topic-tag vocabulary is global reference data: one per library, written as a whole by
/// `tags build`, read by every family alike.
fn the_vocabulary_is_replaced_as_a_whole_and_a_rebuild_adds_new_pages_as_new_tags(
    backend: Backend,
) {
    use mindrune_store::{VocabularyEntry, VocabularySource};

    let store = backend.open();
    assert_eq!(store.vocabulary_digest().unwrap(), None, "never built");
    assert!(store.vocabulary().unwrap().is_empty());

    let entry = |kind: &str, slug: &str, title: &str, source| {
        let mut entry = VocabularyEntry::new(kind, slug, title, source);
        if slug == "lumbridge" {
            entry.aliases = vec!["Lumby".into(), "a\nsplit".into()];
        }
        entry
    };
    let first = vec![
        entry(
            "quest",
            "cooks-assistant",
            "Cook's Assistant",
            VocabularySource::Wiki,
        ),
        entry(
            "item",
            "bronze-pickaxe",
            "Bronze pickaxe",
            VocabularySource::Wiki,
        ),
        entry("place", "lumbridge", "Lumbridge", VocabularySource::Places),
    ];
    let change = store.replace_vocabulary(&first, 10).unwrap();
    assert_eq!(
        change.added,
        [
            "item:bronze-pickaxe",
            "place:lumbridge",
            "quest:cooks-assistant"
        ]
    );
    assert!(change.removed.is_empty());
    assert_eq!(change.kept, 0);
    let digest = store.vocabulary_digest().unwrap().expect("built");

    // Entries come back by kind and slug, with their source and aliases (one a line).
    let stored = store.vocabulary().unwrap();
    let tags: Vec<String> = stored.iter().map(VocabularyEntry::tag).collect();
    assert_eq!(
        tags,
        [
            "item:bronze-pickaxe",
            "place:lumbridge",
            "quest:cooks-assistant"
        ]
    );
    assert_eq!(stored[1].source, VocabularySource::Places);
    assert_eq!(stored[1].aliases, ["Lumby", "a split"]);
    assert_eq!(stored[2].title, "Cook's Assistant");

    // The same entries in another order change nothing, not even the digest.
    let mut same = first.clone();
    same.reverse();
    let change = store.replace_vocabulary(&same, 20).unwrap();
    assert!(change.added.is_empty() && change.removed.is_empty());
    assert_eq!(change.kept, 3);
    assert_eq!(
        store.vocabulary_digest().unwrap().as_deref(),
        Some(digest.as_str())
    );

    // An rs-sdk update: a new page becomes a new tag, a page gone is removed, a retitled page
    // is kept under its new title.
    let second = vec![
        entry(
            "quest",
            "cooks-assistant",
            "Cook's Assistant (quest)",
            VocabularySource::Wiki,
        ),
        entry("place", "lumbridge", "Lumbridge", VocabularySource::Places),
        entry("quest", "regicide", "Regicide", VocabularySource::Wiki),
    ];
    let change = store.replace_vocabulary(&second, 30).unwrap();
    assert_eq!(change.added, ["quest:regicide"]);
    assert_eq!(change.removed, ["item:bronze-pickaxe"]);
    assert_eq!(change.kept, 2);
    assert_ne!(
        store.vocabulary_digest().unwrap().as_deref(),
        Some(digest.as_str())
    );
    let stored = store.vocabulary().unwrap();
    assert_eq!(stored.len(), 3);
    assert_eq!(stored[1].title, "Cook's Assistant (quest)");

    // Something that is not a tag is refused and nothing changes.
    let bad = vec![entry("monster", "goblin", "Goblin", VocabularySource::Wiki)];
    let err = store.replace_vocabulary(&bad, 40).unwrap_err();
    assert!(
        err.to_string().contains("`monster:goblin` is not a tag"),
        "{err}"
    );
    assert_eq!(store.vocabulary().unwrap().len(), 3);

    // The vocabulary is the same for every family: it lives beside them, not in one.
    let f = family(backend);
    f.store.replace_vocabulary(&second, 50).unwrap();
    f.store
        .create_owner("eve", &secret_digest("mrk_eve_key"), 60)
        .unwrap();
    assert_eq!(f.store.vocabulary().unwrap().len(), 3);
    f.store.assert_integrity_ok();
}

fn a_runner_token_names_its_agent_until_it_is_revoked(backend: Backend) {
    let f = family(backend);
    f.store
        .issue_runner_token(f.owner, f.buzz, "sha256:token-of-buzz", 1)
        .unwrap();
    let agent = f
        .store
        .agent_by_runner_token("sha256:token-of-buzz")
        .unwrap()
        .unwrap();
    assert_eq!(agent.id, f.buzz);
    assert_eq!(agent.owner, f.owner);
    assert!(
        f.store
            .agent_by_runner_token("sha256:unknown")
            .unwrap()
            .is_none()
    );
    assert_eq!(f.store.revoke_runner_tokens(f.owner, f.buzz, 2).unwrap(), 1);
    assert!(
        f.store
            .agent_by_runner_token("sha256:token-of-buzz")
            .unwrap()
            .is_none()
    );
}

fn a_token_cannot_be_issued_for_another_owner_s_agent(backend: Backend) {
    let f = family(backend);
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(
        f.store
            .issue_runner_token(other.id, f.buzz, "sha256:stolen", 1)
            .is_err()
    );
    assert!(
        f.store
            .agent_by_runner_token("sha256:stolen")
            .unwrap()
            .is_none()
    );
    // Revoking through another owner touches nothing.
    f.store
        .issue_runner_token(f.owner, f.buzz, "sha256:mine", 1)
        .unwrap();
    assert_eq!(
        f.store.revoke_runner_tokens(other.id, f.buzz, 2).unwrap(),
        0
    );
    assert!(
        f.store
            .agent_by_runner_token("sha256:mine")
            .unwrap()
            .is_some()
    );
}

fn operator_tokens_are_known_by_their_digest(backend: Backend) {
    let f = family(backend);
    assert!(!f.store.operator_token_valid("sha256:op").unwrap());
    f.store.issue_operator_token("sha256:op", 1).unwrap();
    assert!(f.store.operator_token_valid("sha256:op").unwrap());
}

fn an_operator_token_is_revoked_by_its_digest_or_its_id_and_listed_with_its_times(
    backend: Backend,
) {
    let f = family(backend);
    assert!(f.store.operator_tokens().unwrap().is_empty());
    let first = f.store.issue_operator_token("sha256:op-1", 10).unwrap();
    let second = f.store.issue_operator_token("sha256:op-2", 20).unwrap();
    assert_ne!(first, second);
    let live = |id, created_at| OperatorToken {
        id,
        created_at,
        revoked_at: None,
    };
    assert_eq!(
        f.store.operator_tokens().unwrap(),
        [live(first, 10), live(second, 20)]
    );

    // By the token's digest.
    let revoked = OperatorToken {
        revoked_at: Some(30),
        ..live(first, 10)
    };
    assert_eq!(
        f.store
            .revoke_operator_token(OperatorTokenKey::Digest("sha256:op-1"), 30)
            .unwrap(),
        OperatorRevoke::Revoked(revoked.clone())
    );
    assert!(!f.store.operator_token_valid("sha256:op-1").unwrap());
    assert!(f.store.operator_token_valid("sha256:op-2").unwrap());
    // Again: the first revocation's time stands.
    assert_eq!(
        f.store
            .revoke_operator_token(OperatorTokenKey::Id(first), 40)
            .unwrap(),
        OperatorRevoke::AlreadyRevoked(revoked.clone())
    );

    // By its id.
    assert!(matches!(
        f.store
            .revoke_operator_token(OperatorTokenKey::Id(second), 50)
            .unwrap(),
        OperatorRevoke::Revoked(OperatorToken {
            revoked_at: Some(50),
            ..
        })
    ));
    assert!(!f.store.operator_token_valid("sha256:op-2").unwrap());
    assert_eq!(
        f.store.operator_tokens().unwrap(),
        [
            revoked,
            OperatorToken {
                revoked_at: Some(50),
                ..live(second, 20)
            }
        ]
    );

    for unknown in [
        OperatorTokenKey::Digest("sha256:never-issued"),
        OperatorTokenKey::Id(second + 100),
    ] {
        assert_eq!(
            f.store.revoke_operator_token(unknown, 60).unwrap(),
            OperatorRevoke::Unknown
        );
    }
}

fn run_totals_count_a_family_s_ok_and_failed_runs_and_no_other_family_s(backend: Backend) {
    let f = family(backend);
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert_eq!(f.store.run_totals(f.owner).unwrap(), RunTotals::default());
    let version = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop();"), 1)
        .unwrap()
        .version
        .id;
    for (i, ok) in [true, true, false].into_iter().enumerate() {
        let run = if ok {
            clean_run(version, f.buzz, i as i64)
        } else {
            failed_run(version, f.buzz, i as i64)
        };
        f.store.record_use(f.owner, &run).unwrap();
    }
    assert_eq!(
        f.store.run_totals(f.owner).unwrap(),
        RunTotals { ok: 2, failed: 1 }
    );
    assert_eq!(f.store.run_totals(other.id).unwrap(), RunTotals::default());
}

fn a_session_lasts_until_it_expires_or_ends(backend: Backend) {
    let f = family(backend);
    f.store
        .create_session(f.owner, "sha256:cookie", "csrf-1", 1_000, 5_000)
        .unwrap();
    let session = f.store.session("sha256:cookie", 2_000).unwrap().unwrap();
    assert_eq!(session.owner, f.owner);
    assert_eq!(session.csrf_token, "csrf-1");
    assert!(f.store.session("sha256:cookie", 5_000).unwrap().is_none());
    f.store.end_session(f.owner, "sha256:cookie").unwrap();
    assert!(f.store.session("sha256:cookie", 2_000).unwrap().is_none());
}

fn the_newest_avatar_state_is_kept_and_an_older_one_changes_nothing(backend: Backend) {
    let f = family(backend);
    assert!(f.store.avatar_state(f.owner, f.buzz).unwrap().is_none());
    f.store
        .save_avatar_state(
            f.owner,
            f.buzz,
            r#"{"wealth":10}"#,
            Some(Standing::coins(10)),
            2_000,
        )
        .unwrap();
    f.store
        .save_avatar_state(
            f.owner,
            f.buzz,
            r#"{"wealth":5}"#,
            Some(Standing::coins(5)),
            1_000,
        )
        .unwrap();
    let state = f.store.avatar_state(f.owner, f.buzz).unwrap().unwrap();
    assert_eq!(state.state, r#"{"wealth":10}"#);
    assert_eq!(state.reported_at, 2_000);
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(f.store.avatar_state(other.id, f.buzz).unwrap().is_none());
    assert!(
        f.store
            .save_avatar_state(other.id, f.buzz, "{}", Some(Standing::coins(1)), 3_000)
            .is_err()
    );
}

const HOUR: i64 = 3_600_000;

/// The avatar's wealth history as `(hour index, coins)`, hours counted from the epoch.
fn wealth_of(f: &Family, owner: OwnerId, agent: AgentId) -> Vec<(i64, i64)> {
    f.store
        .wealth_history(owner, agent, 0)
        .unwrap()
        .into_iter()
        .map(|p| (p.hour / HOUR, p.coins))
        .collect()
}

fn wealth_is_kept_per_hour_the_newest_report_winning_for_ninety_days(backend: Backend) {
    let f = family(backend);
    let save = |agent: AgentId, coins: Option<i64>, at: i64| {
        f.store
            .save_avatar_state(f.owner, agent, "{}", coins.map(Standing::coins), at)
            .unwrap();
    };
    let day0 = 1_000 * HOUR;
    // Two reports in hour 1000: the later one is the hour's point.
    save(f.buzz, Some(100), day0 + 60_000);
    save(f.buzz, Some(150), day0 + 30 * 60_000);
    // One in hour 1001, then a late one of hour 1000 that is older than its point: it changes
    // nothing, though a late report of an hour without a point still fills it.
    save(f.buzz, Some(400), day0 + HOUR + 1);
    save(f.buzz, Some(999), day0 + 10 * 60_000);
    save(f.buzz, Some(50), day0 - HOUR);
    // A report without wealth keeps the state and adds no point.
    save(f.buzz, None, day0 + 2 * HOUR);
    assert_eq!(
        wealth_of(&f, f.owner, f.buzz),
        [(999, 50), (1000, 150), (1001, 400)]
    );
    let points = f.store.wealth_history(f.owner, f.buzz, day0).unwrap();
    assert_eq!(points.len(), 2, "since the hour's start: {points:?}");
    assert_eq!(points[0].reported_at, day0 + 30 * 60_000);
    assert!(
        f.store
            .wealth_history(f.owner, f.buzz, day0 + 1)
            .unwrap()
            .iter()
            .all(|p| p.hour > day0),
        "an hour that started before `since` is left out"
    );
    // Pickles' points are its own.
    save(f.pickles, Some(7), day0);
    assert_eq!(wealth_of(&f, f.owner, f.pickles), [(1000, 7)]);
    // A report's total XP and level are kept with its hour's coins.
    f.store
        .save_avatar_state(
            f.owner,
            f.pickles,
            "{}",
            Some(Standing {
                coins: 9,
                total_xp: Some(12_345),
                total_level: Some(63),
            }),
            day0 + 1,
        )
        .unwrap();
    let point = f.store.wealth_history(f.owner, f.pickles, 0).unwrap();
    assert_eq!(
        (point[0].coins, point[0].total_xp, point[0].total_level),
        (9, Some(12_345), Some(63))
    );
    // Ninety days on, the points more than ninety days older than the newest are dropped; a
    // report from before that is dropped as it comes.
    let later = day0 + 90 * 24 * HOUR + HOUR;
    save(f.buzz, Some(5_000), later);
    assert_eq!(
        wealth_of(&f, f.owner, f.buzz),
        [(1001, 400), (later / HOUR, 5_000)]
    );
    save(f.buzz, Some(1), day0 - 5 * HOUR);
    assert_eq!(wealth_of(&f, f.owner, f.buzz).len(), 2);
    assert_eq!(wealth_of(&f, f.owner, f.pickles), [(1000, 9)], "not pruned");
    // Another owner neither sees nor writes the family's history.
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(
        f.store
            .wealth_history(other.id, f.buzz, 0)
            .unwrap()
            .is_empty()
    );
    assert!(
        f.store
            .save_avatar_state(
                other.id,
                f.buzz,
                "{}",
                Some(Standing::coins(1)),
                later + HOUR
            )
            .is_err()
    );
    assert_eq!(wealth_of(&f, f.owner, f.buzz).len(), 2);
    // Deleting the avatar deletes its history.
    f.store.delete_agent(f.owner, f.buzz).unwrap();
    assert!(wealth_of(&f, f.owner, f.buzz).is_empty());
    assert_eq!(wealth_of(&f, f.owner, f.pickles), [(1000, 9)]);
}

fn family_reuse_counts_runs_of_a_sibling_s_skill_and_the_skills_reused(backend: Backend) {
    let f = family(backend);
    let chop = f
        .store
        .match_script(
            f.owner,
            &headed(
                snapshot(f.buzz, "buzz", "chop", "chop();"),
                HeaderState::Skill,
            ),
            0,
        )
        .unwrap();
    for at in 1..=3 {
        f.store
            .record_use(f.owner, &clean_run(chop.version.id, f.buzz, at))
            .unwrap();
    }
    // Pickles runs buzz's unchanged copy (the sibling's own version) twice…
    for at in 4..=5 {
        f.store
            .record_use(f.owner, &clean_run(chop.version.id, f.pickles, at))
            .unwrap();
    }
    // …and a changed copy of it, built on it, once.
    let mut copy = snapshot(f.pickles, "pickles", "chop", "chop(); bank();");
    copy.origin = Some((chop.version.id, Lineage::Sibling));
    let copy = f.store.match_script(f.owner, &copy, 6).unwrap();
    f.store
        .record_use(f.owner, &clean_run(copy.version.id, f.pickles, 7))
        .unwrap();
    let reuse = f.store.family_reuse(f.owner, 0).unwrap();
    assert_eq!(reuse.runs, 6);
    assert_eq!(reuse.runs_from_family, 3);
    assert_eq!(reuse.skills_reused, 1);
    // A window that starts after the sibling's runs counts only what is in it.
    let late = f.store.family_reuse(f.owner, 7_000).unwrap();
    assert_eq!(
        (late.runs, late.runs_from_family, late.skills_reused),
        (1, 1, 1)
    );
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert_eq!(
        f.store.family_reuse(other.id, 0).unwrap(),
        Default::default()
    );
}

fn a_look_s_state_is_among_the_latest_outputs_and_other_unrecorded_calls_are_not(backend: Backend) {
    let f = family(backend);
    let matched = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop()"), 0)
        .unwrap();
    let run = |at: i64, output: &str| NewUse {
        version: matched.version.id,
        agent: f.buzz,
        outcome: Outcome {
            at,
            ok: true,
            ..Outcome::default()
        },
        source: "shell".into(),
        call: None,
        output: Some(output.into()),
        event_id: Some(format!("run-{at}")),
        recorded_at: at,
    };
    let look = |event: &str, at: i64, reason, output: Option<&str>| UnrecordedCall {
        agent: f.buzz,
        event_id: event.into(),
        at,
        reason,
        detail: "bun sdk/cli.ts buzz".into(),
        output: output.map(str::to_owned),
    };
    f.store.record_use(f.owner, &run(1_000, "run 1")).unwrap();
    for call in [
        look("l1", 2_000, UnrecordedReason::Look, Some("look 2")),
        look("bg", 2_500, UnrecordedReason::Background, None),
        look("l2", 3_500, UnrecordedReason::Look, Some("look 3.5")),
    ] {
        assert!(f.store.note_unrecorded(f.owner, &call).unwrap());
    }
    f.store.record_use(f.owner, &run(3_000, "run 3")).unwrap();
    // The newest state before a time is a look's when a look came last.
    assert_eq!(
        f.store.recent_outputs(f.owner, f.buzz, 9_000, 10).unwrap(),
        ["look 3.5", "run 3", "look 2", "run 1"]
    );
    assert_eq!(
        f.store
            .recent_outputs_since(f.owner, f.buzz, Some(1_000), 3_000, 1)
            .unwrap(),
        ["look 2"]
    );
    assert_eq!(
        f.store.newest_output_at(f.owner, f.buzz).unwrap(),
        Some(3_500)
    );
    assert!(
        f.store
            .recent_outputs(f.owner, f.pickles, 9_000, 10)
            .unwrap()
            .is_empty()
    );
    // The look comes back with its state; a look is kept once per event like any call.
    let kept = f.store.unrecorded_since(f.owner, f.buzz, 3_000).unwrap();
    assert_eq!(kept[0].output.as_deref(), Some("look 3.5"));
    assert!(
        !f.store
            .note_unrecorded(
                f.owner,
                &look("l2", 3_500, UnrecordedReason::Look, Some("x"))
            )
            .unwrap()
    );
}

fn an_unrecorded_call_is_kept_once_per_event_and_only_for_its_own_family(backend: Backend) {
    let f = family(backend);
    let call = |event: &str, at, reason| UnrecordedCall {
        agent: f.buzz,
        event_id: event.into(),
        at,
        reason,
        detail: format!("bun bots/buzz/chop.ts ({event})"),
        output: None,
    };
    assert!(
        f.store
            .note_unrecorded(f.owner, &call("e1", 10, UnrecordedReason::Background))
            .unwrap()
    );
    // The same hook call delivered twice is kept once.
    assert!(
        !f.store
            .note_unrecorded(f.owner, &call("e1", 10, UnrecordedReason::Background))
            .unwrap()
    );
    assert!(
        f.store
            .note_unrecorded(f.owner, &call("e2", 20, UnrecordedReason::NoScript))
            .unwrap()
    );
    let all = f.store.unrecorded_since(f.owner, f.buzz, 0).unwrap();
    assert_eq!(
        all.iter()
            .map(|c| (c.event_id.as_str(), c.reason))
            .collect::<Vec<_>>(),
        [
            ("e1", UnrecordedReason::Background),
            ("e2", UnrecordedReason::NoScript)
        ]
    );
    assert_eq!(
        f.store.unrecorded_since(f.owner, f.buzz, 15).unwrap().len(),
        1
    );
    assert!(
        f.store
            .unrecorded_since(f.owner, f.pickles, 0)
            .unwrap()
            .is_empty()
    );
    // Another owner's id for the same agent keeps nothing and sees nothing.
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(
        !f.store
            .note_unrecorded(other.id, &call("e3", 30, UnrecordedReason::Background))
            .unwrap()
    );
    assert!(
        f.store
            .unrecorded_since(other.id, f.buzz, 0)
            .unwrap()
            .is_empty()
    );
    // Deleting the agent deletes what was kept of it.
    f.store.delete_agent(f.owner, f.buzz).unwrap();
    assert!(
        f.store
            .unrecorded_since(f.owner, f.buzz, 0)
            .unwrap()
            .is_empty()
    );
}

fn an_agent_s_mirror_folder_is_kept_and_an_unknown_agent_is_not_found(backend: Backend) {
    let f = family(backend);
    let mirror = |agent: AgentId| {
        f.store
            .agents(f.owner)
            .unwrap()
            .into_iter()
            .find(|a| a.id == agent)
            .unwrap()
            .mirror
    };
    assert_eq!(mirror(f.buzz), None);
    f.store
        .set_agent_mirror(f.owner, f.buzz, Some("bots/buzz/family-skills"))
        .unwrap();
    let buzz = f.store.agent_by_name("buzz").unwrap().unwrap();
    assert_eq!(buzz.mirror.as_deref(), Some("bots/buzz/family-skills"));
    assert_eq!(mirror(f.pickles), None);
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(matches!(
        f.store.set_agent_mirror(other.id, f.buzz, None),
        Err(StoreError::NotFound(_))
    ));
    f.store.set_agent_mirror(f.owner, f.buzz, None).unwrap();
    assert_eq!(mirror(f.buzz), None);
}

fn owner_and_agent_names_that_differ_only_in_case_are_refused(backend: Backend) {
    let f = family(backend);
    let taken = |err: StoreError| match err {
        StoreError::Conflict(message) => message,
        other => panic!("not a conflict: {other:?}"),
    };
    let message = taken(
        f.store
            .create_owner("Ada", &secret_digest("mrk_other"), 1)
            .unwrap_err(),
    );
    assert!(
        message.contains("an owner named `ada` already exists")
            && message.contains("differ only in case"),
        "{message}"
    );
    let message = taken(
        f.store
            .create_agent(f.owner, "BUZZ", "/ws/b", 1)
            .unwrap_err(),
    );
    assert!(
        message.contains("an agent named `buzz` already exists"),
        "{message}"
    );
    // Another owner cannot take the name in another case either: agent names are one
    // namespace, as avatar names are in the game.
    let bob = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(f.store.create_agent(bob.id, "Pickles", "/ws/p", 1).is_err());
    // Nothing was added, and the names as written still find their accounts.
    assert_eq!(f.store.owners().unwrap().len(), 2);
    assert_eq!(f.store.agents(f.owner).unwrap().len(), 2);
    assert!(f.store.agents(bob.id).unwrap().is_empty());
    assert!(f.store.owner_by_name("Ada").unwrap().is_none());
    assert!(f.store.agent_by_name("buzz").unwrap().is_some());
}

fn a_script_s_runs_come_newest_first_with_their_outcomes_and_the_days_count_them(backend: Backend) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop()"), 0)
        .unwrap()
        .version
        .id;
    let day = 86_400;
    let mut gained = clean_run(v1, f.buzz, 10);
    gained.outcome.xp.insert("Woodcutting".into(), 250.0);
    gained.outcome.items.insert("Logs".into(), 12.0);
    gained.output = Some("chopped 12 logs".into());
    f.store.record_use(f.owner, &gained).unwrap();
    let mut died = failed_run(v1, f.pickles, day + 5);
    died.outcome.deaths = 1;
    died.outcome.items_lost = 3;
    died.outcome.failure = Some("Error: died to a goblin".into());
    f.store.record_use(f.owner, &died).unwrap();
    let v2 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop(2)"), 0)
        .unwrap()
        .version
        .id;
    f.store
        .record_use(f.owner, &clean_run(v2, f.buzz, day + 20))
        .unwrap();
    let skill = f
        .store
        .skill_at_path(f.owner, f.buzz, "bots/buzz/chop.ts")
        .unwrap()
        .unwrap();
    let runs = f.store.script_runs(f.owner, skill.id, 10).unwrap();
    let seen: Vec<(i64, i64, bool)> = runs
        .iter()
        .map(|r| (r.version, r.outcome.at, r.outcome.ok))
        .collect();
    assert_eq!(
        seen,
        [
            (2, (day + 20) * 1000, true),
            (1, (day + 5) * 1000, false),
            (1, 10_000, true)
        ]
    );
    assert_eq!(runs[1].agent, Some(f.pickles));
    assert_eq!(runs[1].outcome.deaths, 1);
    assert_eq!(runs[1].outcome.items_lost, 3);
    assert_eq!(
        runs[1].outcome.failure.as_deref(),
        Some("Error: died to a goblin")
    );
    assert_eq!(runs[2].outcome.xp["Woodcutting"], 250.0);
    assert_eq!(runs[2].outcome.items["Logs"], 12.0);
    assert_eq!(runs[2].outcome.duration_ms, 60_000);
    assert_eq!(runs[2].output.as_deref(), Some("chopped 12 logs"));
    assert_eq!(f.store.script_runs(f.owner, skill.id, 1).unwrap().len(), 1);

    let days = f.store.runs_per_day(f.owner, 0).unwrap();
    let counted: Vec<(i64, Option<AgentId>, i64, i64)> = days
        .iter()
        .map(|d| (d.day, d.agent, d.ok, d.failed))
        .collect();
    assert_eq!(
        counted,
        [
            (0, Some(f.buzz), 1, 0),
            (1, Some(f.buzz), 1, 0),
            (1, Some(f.pickles), 0, 1)
        ]
    );
    // Only runs at or after `since` count.
    assert_eq!(f.store.runs_per_day(f.owner, day * 1000).unwrap().len(), 2);
    // A period's runs per avatar: `from` counts, `to` does not.
    let period = |from: i64, to: i64| -> Vec<(Option<AgentId>, i64, i64)> {
        f.store
            .runs_between(f.owner, from, to)
            .unwrap()
            .iter()
            .map(|p| (p.agent, p.ok, p.failed))
            .collect()
    };
    assert_eq!(
        period(0, i64::MAX),
        [(Some(f.buzz), 2, 0), (Some(f.pickles), 0, 1)]
    );
    assert_eq!(period(10_000, (day + 5) * 1000), [(Some(f.buzz), 1, 0)]);
    assert_eq!(
        period((day + 5) * 1000, (day + 20) * 1000),
        [(Some(f.pickles), 0, 1)]
    );
    assert!(period(0, 10_000).is_empty());
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert!(
        f.store
            .script_runs(other.id, skill.id, 10)
            .unwrap()
            .is_empty()
    );
    assert!(f.store.runs_per_day(other.id, 0).unwrap().is_empty());
    assert!(
        f.store
            .runs_between(other.id, 0, i64::MAX)
            .unwrap()
            .is_empty()
    );

    // A file that is gone keeps its runs, and is listed among the agent's gone skills.
    assert!(f.store.gone_skills(f.owner, f.buzz).unwrap().is_empty());
    f.store.mark_file_gone(f.owner, skill.id, 99_000).unwrap();
    assert_eq!(f.store.gone_skills(f.owner, f.buzz).unwrap(), [skill.id]);
    assert!(f.store.gone_skills(f.owner, f.pickles).unwrap().is_empty());
    assert!(f.store.gone_skills(other.id, f.buzz).unwrap().is_empty());
    assert_eq!(f.store.script_runs(f.owner, skill.id, 10).unwrap().len(), 3);
    // The library's size is known on both backends, and is more than nothing.
    assert!(
        f.store
            .database_size()
            .unwrap()
            .is_some_and(|bytes| bytes > 0)
    );
}

const ADA_KEY: &str = "mrk_0123456789abcdef0123456789abcdef0123456789abcdef";
const ADA_NEW_KEY: &str = "mrk_fedcba9876543210fedcba9876543210fedcba9876543210";

fn an_owner_s_key_is_kept_only_as_its_digest_and_a_new_key_replaces_it(backend: Backend) {
    let library = backend.open();
    let ada = library
        .create_owner("ada", &secret_digest(ADA_KEY), 0)
        .unwrap();
    // The owner found by name carries the key's digest, which is what a login checks against.
    let found = library.owner_by_name("ada").unwrap().unwrap();
    assert_eq!(found.key_digest, secret_digest(ADA_KEY));
    assert_ne!(found.key_digest, ADA_KEY);
    assert!(!found.key_digest.contains(&ADA_KEY[4..]));
    // The key itself is refused, so no caller stores it by mistake.
    match library.create_owner("bob", ADA_KEY, 0) {
        Err(StoreError::Conflict(message)) => {
            assert!(message.contains("only as its digest"), "{message}")
        }
        other => panic!("a plain key must be refused: {other:?}"),
    }
    assert!(library.owner_by_name("bob").unwrap().is_none());
    assert!(matches!(
        library.replace_owner_key(ada.id, ADA_NEW_KEY),
        Err(StoreError::Conflict(_))
    ));
    // A new key replaces the old one: only the new key's digest is kept.
    library
        .replace_owner_key(ada.id, &secret_digest(ADA_NEW_KEY))
        .unwrap();
    let ada_now = library.owner(ada.id).unwrap();
    assert_eq!(ada_now.key_digest, secret_digest(ADA_NEW_KEY));
    assert_ne!(ada_now.key_digest, secret_digest(ADA_KEY));
    assert!(matches!(
        library.replace_owner_key(OwnerId(ada.id.0 + 1000), &secret_digest(ADA_NEW_KEY)),
        Err(StoreError::NotFound(_))
    ));
}

fn an_old_library_s_plain_owner_key_is_turned_into_its_digest_when_opened(backend: Backend) {
    let library = backend.open();
    let ada = library
        .create_owner("ada", &secret_digest(ADA_KEY), 0)
        .unwrap();
    let bob = library
        .create_owner("bob", &secret_digest(ADA_NEW_KEY), 0)
        .unwrap();
    // As a library written before keys were digested: the column is `api_key` and Ada's key is
    // in it in clear (Bob's value already a digest, which must not be digested again).
    library.tamper(&format!(
        "ALTER TABLE owners RENAME COLUMN key_digest TO api_key; \
         UPDATE owners SET api_key = '{ADA_KEY}' WHERE owner_id = {}",
        ada.id.0
    ));
    // Nor has it the tables of the migrations after that one.
    library.tamper(
        "DROP TABLE alert_deliveries; DROP TABLE alerts; DROP TABLE server_health; \
         ALTER TABLE avatar_wealth DROP COLUMN total_xp; \
         ALTER TABLE avatar_wealth DROP COLUMN total_level",
    );
    library.rewind_schema(12, 8);
    let opened = library.open_again().unwrap();
    assert_eq!(
        opened.owner(ada.id).unwrap().key_digest,
        secret_digest(ADA_KEY)
    );
    assert_eq!(
        opened.owner(bob.id).unwrap().key_digest,
        secret_digest(ADA_NEW_KEY)
    );
    drop(opened);
    // Nor is the key left behind in the file's free space or its log.
    if let Some(bytes) = library.file_bytes() {
        let hex = &ADA_KEY.as_bytes()[4..];
        assert!(
            !bytes.windows(hex.len()).any(|w| w == hex),
            "the old key is still in the library's files"
        );
    }
    // Opening again changes nothing: the rewrite ran once, with its migration.
    let again = library.open_again().unwrap();
    assert_eq!(
        again.owner(ada.id).unwrap().key_digest,
        secret_digest(ADA_KEY)
    );
    assert_eq!(
        again.owner(bob.id).unwrap().key_digest,
        secret_digest(ADA_NEW_KEY)
    );
}

fn a_script_s_runs_filter_by_result_version_and_avatar_and_page_and_one_is_read_by_its_id(
    backend: Backend,
) {
    let f = family(backend);
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop()"), 0)
        .unwrap()
        .version
        .id;
    // v1: buzz ok at 1..=3 s, pickles failed at 4 s; v2: buzz failed at 5 s, ok at 6 s.
    for at in 1..=3 {
        f.store
            .record_use(f.owner, &clean_run(v1, f.buzz, at))
            .unwrap();
    }
    let mut died = failed_run(v1, f.pickles, 4);
    died.outcome.failure = Some("Error: died to a goblin".into());
    died.output = Some("<b>goblin</b> hits 12".into());
    f.store.record_use(f.owner, &died).unwrap();
    let v2 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "chop(2)"), 0)
        .unwrap()
        .version
        .id;
    f.store
        .record_use(f.owner, &failed_run(v2, f.buzz, 5))
        .unwrap();
    f.store
        .record_use(f.owner, &clean_run(v2, f.buzz, 6))
        .unwrap();
    let skill = f
        .store
        .skill_at_path(f.owner, f.buzz, "bots/buzz/chop.ts")
        .unwrap()
        .unwrap();
    let seconds = |filter: RunFilter, limit: usize, offset: usize| -> Vec<i64> {
        f.store
            .script_runs_where(f.owner, skill.id, &filter, limit, offset)
            .unwrap()
            .iter()
            .map(|r| r.outcome.at / 1000)
            .collect()
    };
    let all = RunFilter::default();
    assert_eq!(seconds(all, 10, 0), [6, 5, 4, 3, 2, 1]);
    // Pages: newest first, the next page starting where the last ended.
    assert_eq!(seconds(all, 4, 0), [6, 5, 4, 3]);
    assert_eq!(seconds(all, 4, 4), [2, 1]);
    assert!(seconds(all, 4, 8).is_empty());
    let failed = RunFilter {
        ok: Some(false),
        ..all
    };
    assert_eq!(seconds(failed, 10, 0), [5, 4]);
    let ok = RunFilter {
        ok: Some(true),
        ..all
    };
    assert_eq!(seconds(ok, 10, 0), [6, 3, 2, 1]);
    let v1_only = RunFilter {
        version: Some(1),
        ..all
    };
    assert_eq!(seconds(v1_only, 10, 0), [4, 3, 2, 1]);
    let pickles = RunFilter {
        agent: Some(f.pickles),
        ..all
    };
    assert_eq!(seconds(pickles, 10, 0), [4]);
    let v2_failed_by_buzz = RunFilter {
        ok: Some(false),
        version: Some(2),
        agent: Some(f.buzz),
    };
    assert_eq!(seconds(v2_failed_by_buzz, 10, 0), [5]);
    assert!(
        seconds(
            RunFilter {
                version: Some(9),
                ..all
            },
            10,
            0
        )
        .is_empty()
    );

    // One run by its id: the same run the list shows, with the skill it ran.
    let listed = f
        .store
        .script_runs_where(f.owner, skill.id, &pickles, 1, 0)
        .unwrap()
        .remove(0);
    let (of, run) = f.store.script_run(f.owner, listed.id).unwrap().unwrap();
    assert_eq!(of, skill.id);
    assert_eq!(run, listed);
    assert_eq!(run.version, 1);
    assert_eq!(run.agent, Some(f.pickles));
    assert_eq!(
        run.outcome.failure.as_deref(),
        Some("Error: died to a goblin")
    );
    assert_eq!(run.output.as_deref(), Some("<b>goblin</b> hits 12"));
    // Another family never reads it, nor any of the script's runs.
    let other = f
        .store
        .create_owner("bob", &secret_digest("mrk_bob_key"), 0)
        .unwrap();
    assert_eq!(f.store.script_run(other.id, listed.id).unwrap(), None);
    assert!(
        f.store
            .script_runs_where(other.id, skill.id, &all, 10, 0)
            .unwrap()
            .is_empty()
    );
    assert_eq!(f.store.script_run(f.owner, listed.id + 1000).unwrap(), None);
}
