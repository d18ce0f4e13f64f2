//! The store's story, told against the SQLite backend. Every test opens its own library.

use mindrune_store::{
    AgentId, Lineage, NewSnippetUse, NewUse, Outcome, OwnerId, ScriptSnapshot, SqliteStore, Store,
    VersionId,
};

struct Family {
    store: SqliteStore,
    owner: OwnerId,
    buzz: AgentId,
    pickles: AgentId,
}

fn family() -> Family {
    let store = SqliteStore::open_in_memory().unwrap();
    let owner = store.create_owner("ada", "mrk_ada_key", 0).unwrap();
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
        digest: mindrune_core::digest::sha256(code.as_bytes()),
        code: code.into(),
        tags: vec![],
        origin: None,
    }
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
    }
}

#[test]
fn a_new_file_is_v1_and_the_same_code_matches_it_again() {
    let f = family();
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

#[test]
fn an_edit_is_the_next_version_built_on_the_current_one_at_ninety_percent() {
    let f = family();
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

#[test]
fn going_back_to_old_code_is_the_old_version_again() {
    let f = family();
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

#[test]
fn five_clean_runs_score_about_620_and_every_use_is_counted() {
    let f = family();
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
    assert!(
        (version.score - 620.0).abs() < 10.0,
        "score {}",
        version.score
    );
}

#[test]
fn a_retried_event_id_is_not_counted_twice() {
    let f = family();
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

#[test]
fn another_owner_never_sees_a_family_s_skills_or_versions() {
    let f = family();
    let v1 = f
        .store
        .match_script(f.owner, &snapshot(f.buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    let other = f.store.create_owner("eve", "mrk_eve", 0).unwrap();
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

#[test]
fn a_copy_starts_its_own_history_built_on_the_original() {
    let f = family();
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

#[test]
fn skills_show_one_entry_per_skill_at_its_current_version() {
    let f = family();
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

#[test]
fn tags_are_kept_and_peers_sharing_one_feed_the_effectiveness() {
    let f = family();
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
        mindrune_core::score::Measure::Xp(vec!["mining".into()]).key()
    );
}

#[test]
fn snippets_keep_their_own_history_per_agent() {
    let f = family();
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

#[test]
fn two_handles_on_one_file_never_lose_a_use_or_serve_a_stale_window() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("library.db");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    let owner = a.create_owner("ada", "k", 0).unwrap().id;
    let buzz = a.create_agent(owner, "buzz", "/ws", 0).unwrap().id;
    let v1 = a
        .match_script(owner, &snapshot(buzz, "buzz", "chop", "a();"), 1)
        .unwrap()
        .version;
    // Interleave writers: each must see the other's uses in its window (the cache is checked
    // against the version's use count inside the transaction).
    for i in 0..10 {
        let (store, ok) = if i % 2 == 0 { (&a, true) } else { (&b, false) };
        let mut run = clean_run(v1.id, buzz, 100 + i);
        run.outcome.ok = ok;
        store.record_use(owner, &run).unwrap();
    }
    let version = a.version(owner, v1.id).unwrap();
    assert_eq!((version.uses, version.ok), (10, 5));
    // The same uses recorded through one handle must give exactly the same score.
    let single = SqliteStore::open_in_memory().unwrap();
    let owner2 = single.create_owner("ada", "k", 0).unwrap().id;
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
    assert_eq!(a.integrity_check().unwrap(), "ok");
}

#[test]
fn a_library_from_a_newer_mindrune_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("library.db");
    drop(SqliteStore::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(err.contains("newer MindRune"), "{err}");
}
