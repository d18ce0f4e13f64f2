//! `mindrune bench mirror`: a turn boundary and a refresh of `family-skills/`.

use mindrune_core::secret_digest;
use mindrune_store::{Directory as _, FamilySharing as _, SkillRecords as _};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use mindrune_engine::Recorder;
use mindrune_store::{Recording as _, SqliteStore};
use serde_json::json;

use crate::measure::{median, micros, time_it};
use crate::report::{Print, Row};
use crate::workload::{SCRIPTS, event_line, script_source, setup_library};

/// Targets from the design brief for a turn boundary and a mirror refresh.
const TARGET_TURN: Duration = Duration::from_millis(50);
const TARGET_REFRESH: Duration = Duration::from_millis(50);
const TURN_SCRIPTS: usize = 200;
const FAMILY_AGENTS: usize = 20;
const SKILLS_PER_AGENT: usize = 100;
const USES_PER_SKILL: usize = 5;
const LESSONS_PER_AGENT: usize = 10;
/// Timed repetitions of each steady-state measurement; the median is reported.
const REPEATS: usize = 15;

/// Reads every regular file under a directory: the baseline "reading the same bytes".
fn read_tree(dir: &Path) -> std::io::Result<usize> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            total += read_tree(&entry.path())?;
        } else if kind.is_file() {
            total += std::fs::read(entry.path())?.len();
        }
    }
    Ok(total)
}

/// `mindrune bench mirror`: a turn boundary for an agent with 200 scripts, and a refresh of
/// `family-skills/` for a family of 20 agents × 100 shared skills × 10,000 uses.
#[expect(
    clippy::too_many_lines,
    reason = "a benchmark script: set up, time, check and report each step in order, read top to bottom"
)]
pub fn mirror(print: Print) -> anyhow::Result<Vec<Row>> {
    use mindrune_engine::{Boundary, MirrorPolicy, turn_boundary};
    use mindrune_engine::{MirrorOutcome, refresh_mirror};
    use mindrune_store::{HeaderState, NewLesson, NewUse, Outcome, ScriptSnapshot, SkillHeader};

    let dir = tempfile::tempdir().context("cannot make a temporary folder")?;

    // Part 1: one agent with 200 headed scripts, each run enough to be shared.
    let store = setup_library(dir.path(), "turn.db")?;
    let bots = dir.path().join("workspace/bots/bench");
    std::fs::create_dir_all(&bots)?;
    for k in 0..TURN_SCRIPTS {
        std::fs::write(bots.join(format!("chop-{k}.ts")), script_source(k))?;
    }
    std::fs::write(
        bots.join("lab_log.md"),
        (0..50)
            .map(|i| format!("- Share: [skill:woodcutting] lesson number {i} about trees\n"))
            .collect::<String>(),
    )?;
    let recorder = Recorder::new(&store);
    let start = 1_790_000_000;
    for i in 0..TURN_SCRIPTS * USES_PER_SKILL {
        let line = event_line(i, start).replace(
            &format!("chop-{}.ts", i % SCRIPTS),
            &format!("chop-{}.ts", i % TURN_SCRIPTS),
        );
        recorder.record_line(&line)?;
    }
    // One turn boundary as the benchmark times it: the scan alone (the mirror is part 2).
    let turn_end = || turn_boundary(&store, "bench", Boundary::TurnEnd, MirrorPolicy::Skip, None);
    let (first_turn, first) = time_it(|| Ok(turn_end()?))?;
    anyhow::ensure!(
        first.checked == TURN_SCRIPTS,
        "the turn saw {} scripts",
        first.checked
    );
    let mut steady = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..REPEATS {
        steady.push(time_it(|| Ok(turn_end()?))?.0);
        baseline.push(time_it(|| Ok(read_tree(&bots)?))?.0);
    }
    let turn_steady = median(steady);
    let turn_baseline = median(baseline);
    // Ten edited scripts: ten new versions in one turn.
    for k in 0..10 {
        std::fs::write(
            bots.join(format!("chop-{k}.ts")),
            script_source(k).replace("break;", "break; // edited"),
        )?;
    }
    let (turn_edits, _) = time_it(|| Ok(turn_end()?))?;
    drop(recorder);
    drop(store);

    // Part 2: a family of 20 agents × 100 shared skills, 10,000 uses, 200 lessons.
    let store = SqliteStore::open(&dir.path().join("family.db"))?;
    let owner = store.create_owner(
        "bench-family",
        &secret_digest("mrk_family_0123456789abcdef0123456789"),
        0,
    )?;
    let mut agents = Vec::new();
    for a in 0..FAMILY_AGENTS {
        let workspace = dir.path().join(format!("family/agent{a}"));
        std::fs::create_dir_all(&workspace)?;
        agents.push(store.create_agent(
            owner.id,
            &format!("agent{a}"),
            workspace.to_str().context("temp path is not UTF-8")?,
            0,
        )?);
    }
    let topics = [
        "skill:woodcutting",
        "skill:mining",
        "item:iron-ore",
        "place:lumbridge",
    ];
    for (a, agent) in agents.iter().enumerate() {
        for k in 0..SKILLS_PER_AGENT {
            let code = script_source(a * SKILLS_PER_AGENT + k);
            let code = mindrune_core::code_without_header(&code);
            let matched = store.match_script(
                owner.id,
                &ScriptSnapshot {
                    agent: agent.id,
                    path: format!("bots/{}/skill-{k}.ts", agent.name),
                    name: format!("skill-{k}"),
                    digest: mindrune_core::sha256(code.as_bytes()),
                    code,
                    tags: vec![topics[k % topics.len()].to_string()],
                    header: SkillHeader {
                        state: HeaderState::Skill,
                        goal: Some(format!("gather resource {k} near spot {a}")),
                        preconditions: Some("a tool and an empty backpack".into()),
                        topics: vec![topics[k % topics.len()].to_string()],
                        ..SkillHeader::default()
                    },
                    file_digest: None,
                    origin: None,
                },
                0,
            )?;
            for u in 0..USES_PER_SKILL {
                // Every third use is a sibling's, so "used by" has something to count.
                let runner = if u % 3 == 2 {
                    agents[(a + 1) % FAMILY_AGENTS].id
                } else {
                    agent.id
                };
                store.record_use(
                    owner.id,
                    &NewUse {
                        version: matched.version.id,
                        agent: runner,
                        outcome: Outcome {
                            at: (start + (k * USES_PER_SKILL + u) as i64) * 1000,
                            ok: true,
                            duration_ms: 60_000,
                            ..Outcome::default()
                        },
                        source: "shell".into(),
                        call: None,
                        output: None,
                        event_id: None,
                        recorded_at: start * 1000,
                    },
                )?;
            }
        }
        let lessons: Vec<NewLesson> = (0..LESSONS_PER_AGENT)
            .map(|i| NewLesson {
                line: i + 1,
                text: format!(
                    "[{}] lesson {i} of agent {a}: bank before the trip",
                    topics[i % topics.len()]
                ),
            })
            .collect();
        store.replace_lessons(owner.id, agent.id, &lessons, start * 1000)?;
    }
    let uses = store.use_count(owner.id)?;
    let reader = &agents[0];
    let out_dir = dir.path().join("family/agent0/family-skills");
    let (refresh_first, first) = time_it(|| Ok(refresh_mirror(&store, reader, Some(&out_dir))?))?;
    let written = match &first {
        MirrorOutcome::Refreshed { written, .. } => written.len(),
        MirrorOutcome::Skipped { .. } => 0,
    };
    let mut steady = Vec::new();
    let mut baseline = Vec::new();
    let mut bytes = 0;
    for _ in 0..REPEATS {
        steady.push(time_it(|| Ok(refresh_mirror(&store, reader, Some(&out_dir))?))?.0);
        let (took, read) = time_it(|| Ok(read_tree(&out_dir)?))?;
        bytes = read;
        baseline.push(took);
    }
    let refresh_steady = median(steady);
    let refresh_baseline = median(baseline);

    let checks = [
        (
            "turn boundary, 200 scripts",
            turn_steady < TARGET_TURN,
            turn_steady,
        ),
        (
            "mirror refresh, 20 × 100",
            refresh_steady < TARGET_REFRESH,
            refresh_steady,
        ),
    ];
    let mut out = std::io::stdout().lock();
    if print == Print::Json {
        serde_json::to_writer_pretty(
            &mut out,
            &json!({
                "benchmark": "mirror",
                "turn": {
                    "scripts": TURN_SCRIPTS,
                    "first_ms": first_turn.as_secs_f64() * 1e3,
                    "steady_ms": turn_steady.as_secs_f64() * 1e3,
                    "ten_edits_ms": turn_edits.as_secs_f64() * 1e3,
                    "baseline_read_files_ms": turn_baseline.as_secs_f64() * 1e3,
                    "ratio": turn_steady.as_secs_f64() / turn_baseline.as_secs_f64(),
                    "target_ms": TARGET_TURN.as_secs_f64() * 1e3,
                    "pass": turn_steady < TARGET_TURN,
                },
                "refresh": {
                    "agents": FAMILY_AGENTS,
                    "shared_skills": FAMILY_AGENTS * SKILLS_PER_AGENT,
                    "uses": uses,
                    "files_first_written": written,
                    "mirror_bytes": bytes,
                    "first_ms": refresh_first.as_secs_f64() * 1e3,
                    "steady_ms": refresh_steady.as_secs_f64() * 1e3,
                    "baseline_read_mirror_ms": refresh_baseline.as_secs_f64() * 1e3,
                    "ratio": refresh_steady.as_secs_f64() / refresh_baseline.as_secs_f64(),
                    "target_ms": TARGET_REFRESH.as_secs_f64() * 1e3,
                    "pass": refresh_steady < TARGET_REFRESH,
                },
            }),
        )?;
        writeln!(out)?;
    } else if print == Print::Text {
        writeln!(
            out,
            "mindrune bench mirror: medians of {REPEATS} runs, SQLite WAL\n"
        )?;
        writeln!(
            out,
            "turn boundary, one agent with {TURN_SCRIPTS} headed scripts (all shared):"
        )?;
        writeln!(
            out,
            "  first turn end after 1,000 runs    {:>10}",
            micros(first_turn)
        )?;
        writeln!(
            out,
            "  unchanged files                    {:>10}",
            micros(turn_steady)
        )?;
        writeln!(
            out,
            "  ten files edited                   {:>10}",
            micros(turn_edits)
        )?;
        writeln!(
            out,
            "  baseline: read the 200 files       {:>10}",
            micros(turn_baseline)
        )?;
        writeln!(
            out,
            "  ratio (unchanged / baseline)       {:>9.1}×\n",
            turn_steady.as_secs_f64() / turn_baseline.as_secs_f64()
        )?;
        writeln!(
            out,
            "family-skills/ refresh for agent0, family of {FAMILY_AGENTS} agents × {SKILLS_PER_AGENT} shared skills, {uses} uses, {} lessons:",
            FAMILY_AGENTS * LESSONS_PER_AGENT
        )?;
        writeln!(
            out,
            "  first refresh ({written} files written)  {:>10}",
            micros(refresh_first)
        )?;
        writeln!(
            out,
            "  refresh, nothing changed           {:>10}",
            micros(refresh_steady)
        )?;
        writeln!(
            out,
            "  baseline: read the mirror ({} KB)  {:>10}",
            bytes / 1024,
            micros(refresh_baseline)
        )?;
        writeln!(
            out,
            "  ratio (refresh / baseline)         {:>9.1}×\n",
            refresh_steady.as_secs_f64() / refresh_baseline.as_secs_f64()
        )?;
        for (name, pass, took) in &checks {
            writeln!(
                out,
                "  {name:<28} {:>9}  target < 50 ms  {}",
                micros(*took),
                if *pass { "pass" } else { "FAIL" }
            )?;
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let turn_size = format!("1 agent, {TURN_SCRIPTS} scripts");
    let family_size = format!("{FAMILY_AGENTS} agents × {SKILLS_PER_AGENT} skills, {uses} uses");
    Ok(vec![
        Row::new("mirror", "turn boundary, files unchanged", &turn_size)
            .figure(ms(turn_steady), "ms")
            .baseline("read the same files", ms(turn_baseline), "ms")
            .target("< 50 ms", checks[0].1),
        Row::new("mirror", "turn boundary, ten files edited", &turn_size)
            .figure(ms(turn_edits), "ms")
            .baseline("read the same files", ms(turn_baseline), "ms"),
        Row::new("mirror", "family-skills/ refresh, unchanged", &family_size)
            .figure(ms(refresh_steady), "ms")
            .baseline("read the mirror's bytes", ms(refresh_baseline), "ms")
            .target("< 50 ms", checks[1].1),
        Row::new("mirror", "family-skills/ first refresh", &family_size)
            .figure(ms(refresh_first), "ms")
            .baseline("read the mirror's bytes", ms(refresh_baseline), "ms"),
    ])
}
