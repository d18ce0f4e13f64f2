//! What needs the owner's attention in a family, most harmful first: scripts failing now (with
//! the version change that likely broke them) and avatars quiet for longer than usual. Every
//! face shows this one list: the family page at its top, `mindrune attention`, an avatar's page
//! for its own.

use std::collections::BTreeMap;

use mindrune_store::{AgentId, Millis, OwnerId, ScriptRun, SkillId, Store, StoreError};
use serde::Serialize;

/// The cause of a failure that recorded none.
const NO_CAUSE: &str = "no cause recorded";

/// How many of a script's latest runs are read to find its failing streak and the last run
/// that went well.
const RUNS_READ: usize = 100;
/// An avatar is quiet when its last run is this many times its usual gap ago …
const QUIET_FACTOR: i64 = 3;
/// … and at least this long ago (a family running every minute is not quiet after three).
pub(crate) const QUIET_AT_LEAST: Millis = 6 * 3_600_000;
/// A running runner asks the server for the family's view at least once a minute; one whose
/// last request is this much older has stopped.
const RUNNER_SILENT_AFTER: Millis = 5 * 60_000;
/// The window an avatar's usual gap is measured over.
const USUAL_GAP_WINDOW: Millis = 30 * 86_400_000;

/// One thing that needs attention.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// A script whose latest runs failed.
    Failing(Failing),
    /// An avatar that has not run anything for longer than it usually pauses.
    Quiet(Quiet),
    /// A runner that stopped with its avatar's events still waiting in its spool.
    RunnerStopped(RunnerStopped),
}

impl Item {
    /// How much harm it does, for the order: a failing family skill hurts every sibling that
    /// runs it, a long streak more than one failure, a quiet avatar less than a broken script.
    pub(crate) fn harm(&self) -> i64 {
        match self {
            Item::Failing(f) => {
                let siblings = if f.family {
                    1 + f.failing_for.len() as i64
                } else {
                    1
                };
                1_000 + f.streak as i64 * 10 * siblings
            }
            Item::Quiet(q) => (q.quiet_for / 3_600_000).min(999),
            // Nothing of that avatar is recorded until it runs again: above any quiet avatar,
            // below a failing script (which costs every run).
            Item::RunnerStopped(_) => 1_000,
        }
    }

    /// What to do next, in a sentence.
    pub fn next_step(&self) -> String {
        match self {
            Item::Failing(f) => match &f.suspect {
                Some(s) => format!(
                    "v{} likely broke it (v{} ran well before): compare the two, or go back to v{}'s code",
                    s.version, s.last_good, s.last_good
                ),
                None => format!(
                    "the same code ran well before: look at the cause ({}) and at what changed in the game",
                    f.cause
                ),
            },
            Item::Quiet(q) => format!(
                "check that {}'s Claude Code and its runner are running; it usually runs again within {}",
                q.agent_name,
                hours(q.usual_gap)
            ),
            Item::RunnerStopped(r) => format!(
                "start {}'s runner again (`mindrune runner`, as `mindrune setup` printed it): its spool keeps the {} waiting, and nothing is lost",
                r.agent_name,
                if r.backlog == 1 {
                    "event".to_owned()
                } else {
                    format!("{} events", r.backlog)
                }
            ),
        }
    }
}

/// A script failing now: its newest runs failed, `streak` of them in a row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failing {
    pub skill: SkillId,
    /// `<avatar>/<name>.ts`.
    pub label: String,
    /// The avatar whose script it is.
    pub(crate) agent: Option<AgentId>,
    /// A family skill (its siblings run it too).
    pub family: bool,
    pub streak: usize,
    /// The newest failure's cause (its parsed error line).
    pub cause: String,
    /// How many runs of the streak failed with that cause.
    pub cause_count: usize,
    /// When the streak began and its newest failure.
    pub first_seen: Millis,
    pub last_seen: Millis,
    /// The newest failure's use id (its run page).
    pub last_failure: i64,
    /// The streak's first failure's use id, as far as the runs read reach.
    pub(crate) first_failure: i64,
    /// The use id of the newest run that went well, before the streak (0 when none ever did):
    /// with the skill, what names the streak, however long it grows past the runs read (an
    /// alert's stable id).
    pub(crate) streak_after: i64,
    /// The siblings whose runs of it are in the streak.
    pub failing_for: Vec<AgentId>,
    /// The version change before the streak, when there is one.
    pub suspect: Option<Suspect>,
}

/// The version a failing streak began on, and the last version that ran well before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Suspect {
    pub version: i64,
    pub last_good: i64,
}

/// An avatar quiet for longer than its usual gap between runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Quiet {
    pub agent: AgentId,
    pub agent_name: String,
    pub last_run: Millis,
    pub(crate) quiet_for: Millis,
    /// The 90th percentile of the gaps between its runs over the last 30 days: session
    /// breaks count, the minutes between runs of one session do not make it small.
    pub(crate) usual_gap: Millis,
}

/// A runner's last request to the server, as the server saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunnerSeen {
    pub agent: AgentId,
    pub at: Millis,
    /// Items its spool still held then (`None`: a runner too old to say).
    pub backlog: Option<u64>,
}

/// A runner that stopped asking the server while events waited in its spool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunnerStopped {
    pub agent: AgentId,
    pub agent_name: String,
    pub last_contact: Millis,
    pub backlog: u64,
}

/// Whether a runner last seen as `seen` has stopped with events undelivered at `now`: its last
/// request is more than five heartbeats old and its spool held something then. A runner that
/// ends with its spool delivered (a session's end) is no alarm: the quiet avatar rule covers
/// an avatar that stops for longer than usual.
pub(crate) fn runner_stopped(seen: &RunnerSeen, now: Millis) -> bool {
    now - seen.at > RUNNER_SILENT_AFTER && seen.backlog.is_some_and(|n| n > 0)
}

/// A failing streak in a script's runs (newest first), if its newest run failed.
pub(crate) fn failing_streak(runs: &[ScriptRun]) -> Option<(usize, Option<Suspect>)> {
    let streak = runs.iter().take_while(|r| !r.outcome.ok).count();
    if streak == 0 {
        return None;
    }
    let began_on = runs[streak - 1].version;
    let last_good = runs[streak..]
        .iter()
        .find(|r| r.outcome.ok)
        .map(|r| r.version);
    let suspect = last_good
        .filter(|good| *good != began_on)
        .map(|last_good| Suspect {
            version: began_on,
            last_good,
        });
    Some((streak, suspect))
}

/// A streak's cause, the newest failure's first line, and how many of the streak (`runs`,
/// newest first) failed with it; a failure that recorded no cause counts under "no cause
/// recorded".
pub(crate) fn streak_cause(runs: &[ScriptRun]) -> (String, usize) {
    let cause_of = |run: &ScriptRun| {
        run.outcome
            .failure
            .as_deref()
            .and_then(|f| f.lines().next())
            .unwrap_or(NO_CAUSE)
            .to_owned()
    };
    let Some(newest) = runs.first() else {
        return (NO_CAUSE.to_owned(), 0);
    };
    let cause = cause_of(newest);
    let count = runs.iter().filter(|r| cause_of(r) == cause).count();
    (cause, count)
}

/// The 90th percentile of the gaps between `times` (any order); `None` with fewer than three
/// runs, where nothing is usual yet.
pub(crate) fn usual_gap(times: &mut [Millis]) -> Option<Millis> {
    if times.len() < 3 {
        return None;
    }
    times.sort_unstable();
    let mut gaps: Vec<Millis> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let at = (gaps.len() * 9).div_ceil(10).saturating_sub(1);
    Some(gaps[at.min(gaps.len() - 1)])
}

/// Everything that needs attention in `owner`'s family (or one avatar's part of it) at `now`,
/// most harmful first; `runners` are the runners' last requests as the server saw them (empty
/// where no server's counts are at hand).
pub fn needs_attention(
    store: &dyn Store,
    owner: OwnerId,
    agent: Option<AgentId>,
    now: Millis,
    runners: &[RunnerSeen],
) -> Result<Vec<Item>, StoreError> {
    let agents = store.agents(owner)?;
    let mut items = Vec::new();
    let mut times: BTreeMap<AgentId, Vec<Millis>> = BTreeMap::new();
    for entry in store.skills(owner, None)? {
        let runs = store.script_runs(owner, entry.skill.id, RUNS_READ)?;
        for run in &runs {
            if let Some(by) = run.agent
                && run.outcome.at >= now - USUAL_GAP_WINDOW
            {
                times.entry(by).or_default().push(run.outcome.at);
            }
        }
        let Some((streak, suspect)) = failing_streak(&runs) else {
            continue;
        };
        let own = entry.skill.agent;
        let failing_for: Vec<AgentId> = {
            let mut others: Vec<AgentId> = runs[..streak]
                .iter()
                .filter_map(|r| r.agent)
                .filter(|a| Some(*a) != own)
                .collect();
            others.sort_unstable_by_key(|a| a.0);
            others.dedup();
            others
        };
        if agent.is_some_and(|a| own != Some(a) && !failing_for.contains(&a)) {
            continue;
        }
        let (cause, cause_count) = streak_cause(&runs[..streak]);
        // The run before the streak: in the window, or past it when the whole window failed.
        let streak_after = match runs.get(streak) {
            Some(good) => good.id,
            None => store
                .script_runs_where(
                    owner,
                    entry.skill.id,
                    &mindrune_store::RunFilter {
                        ok: Some(true),
                        ..Default::default()
                    },
                    1,
                    0,
                )?
                .first()
                .map_or(0, |good| good.id),
        };
        items.push(Item::Failing(Failing {
            skill: entry.skill.id,
            label: format!("{}/{}.ts", entry.skill.agent_name, entry.skill.name),
            agent: own,
            family: entry.family,
            streak,
            cause,
            cause_count,
            first_seen: runs[streak - 1].outcome.at,
            last_seen: runs[0].outcome.at,
            last_failure: runs[0].id,
            first_failure: runs[streak - 1].id,
            streak_after,
            failing_for,
            suspect,
        }));
    }
    for a in agents
        .iter()
        .filter(|a| agent.is_none_or(|only| only == a.id))
    {
        let Some(mut seen) = times.remove(&a.id) else {
            continue;
        };
        let last_run = seen.iter().copied().max().unwrap_or(0);
        let Some(usual) = usual_gap(&mut seen) else {
            continue;
        };
        let quiet_for = now - last_run;
        if quiet_for > (usual * QUIET_FACTOR).max(QUIET_AT_LEAST) {
            items.push(Item::Quiet(Quiet {
                agent: a.id,
                agent_name: a.name.clone(),
                last_run,
                quiet_for,
                usual_gap: usual,
            }));
        }
    }
    for a in agents
        .iter()
        .filter(|a| agent.is_none_or(|only| only == a.id))
    {
        let Some(seen) = runners
            .iter()
            .filter(|r| r.agent == a.id)
            .max_by_key(|r| r.at)
        else {
            continue;
        };
        if runner_stopped(seen, now) {
            items.push(Item::RunnerStopped(RunnerStopped {
                agent: a.id,
                agent_name: a.name.clone(),
                last_contact: seen.at,
                backlog: seen.backlog.unwrap_or(0),
            }));
        }
    }
    items.sort_by_key(|item| std::cmp::Reverse(item.harm()));
    Ok(items)
}

/// `90 min` as a person says it: `2 h`, `3 d`.
pub(crate) fn hours(millis: Millis) -> String {
    let minutes = millis / 60_000;
    match minutes {
        0..120 => format!("{} min", minutes.max(1)),
        120..2_880 => format!("{} h", minutes / 60),
        _ => format!("{} d", minutes / 1_440),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mindrune_store::{Directory as _, Outcome, Recording as _, RunViews as _};

    fn run(version: i64, ok: bool, at: Millis, failure: Option<&str>) -> ScriptRun {
        ScriptRun {
            id: at,
            version,
            agent: Some(AgentId(1)),
            outcome: Outcome {
                at,
                ok,
                failure: failure.map(str::to_string),
                ..Outcome::default()
            },
            output: None,
        }
    }

    #[test]
    fn a_streak_after_a_version_change_names_the_change_as_the_suspect() {
        // Newest first: v3 failed three times; v2 ran well before it.
        let runs = [
            run(3, false, 50, Some("Error: no axe")),
            run(3, false, 40, Some("Error: no axe")),
            run(3, false, 30, Some("Error: no axe")),
            run(2, true, 20, None),
            run(2, true, 10, None),
        ];
        assert_eq!(
            failing_streak(&runs),
            Some((
                3,
                Some(Suspect {
                    version: 3,
                    last_good: 2
                })
            ))
        );
    }

    #[test]
    fn a_streak_on_code_that_ran_well_before_has_no_suspect() {
        let runs = [run(2, false, 30, Some("x")), run(2, true, 20, None)];
        assert_eq!(failing_streak(&runs), Some((1, None)));
        assert_eq!(failing_streak(&[run(2, true, 20, None)]), None);
        assert_eq!(failing_streak(&[]), None);
    }

    #[test]
    fn a_streak_s_cause_is_its_newest_failure_s_first_line_counted_over_the_streak() {
        let runs = [
            run(2, false, 30, Some("Error: no axe\n  at chop")),
            run(2, false, 20, Some("Error: no axe")),
            run(2, false, 10, Some("Error: stuck")),
        ];
        assert_eq!(streak_cause(&runs), ("Error: no axe".to_owned(), 2));
        // Failures that recorded nothing share "no cause recorded".
        let silent = [run(2, false, 30, None), run(2, false, 20, None)];
        assert_eq!(streak_cause(&silent), ("no cause recorded".to_owned(), 2));
    }

    #[test]
    fn a_streak_longer_than_the_runs_read_keeps_its_name_the_run_before_it() {
        use mindrune_core::sha256;
        use mindrune_store::{NewUse, ScriptSnapshot, SkillHeader, SqliteStore};
        let store = SqliteStore::open_in_memory().unwrap();
        let owner = store.create_owner("ada", &sha256(b"k"), 0).unwrap().id;
        let buzz = store.create_agent(owner, "buzz", "/ws", 0).unwrap().id;
        let code = "await bot.chop();";
        let version = store
            .match_script(
                owner,
                &ScriptSnapshot {
                    agent: buzz,
                    path: "bots/buzz/chop.ts".into(),
                    name: "chop".into(),
                    digest: sha256(code.as_bytes()),
                    code: code.into(),
                    tags: vec![],
                    header: SkillHeader::default(),
                    file_digest: None,
                    origin: None,
                },
                1,
            )
            .unwrap()
            .version
            .id;
        let record = |at: Millis, ok: bool| {
            store
                .record_use(
                    owner,
                    &NewUse {
                        version,
                        agent: buzz,
                        outcome: Outcome {
                            at,
                            ok,
                            ..Outcome::default()
                        },
                        source: "shell".into(),
                        call: None,
                        output: None,
                        event_id: None,
                        recorded_at: at,
                    },
                )
                .unwrap();
        };
        record(1_000, true);
        let good = store
            .script_runs(owner, version_skill(&store, owner), 1)
            .unwrap()[0]
            .id;
        let streak_after = |now| match &needs_attention(&store, owner, None, now, &[]).unwrap()[..]
        {
            [Item::Failing(f)] => (f.streak, f.streak_after),
            other => panic!("{other:?}"),
        };
        for i in 0..RUNS_READ as i64 + 5 {
            record(2_000 + i, false);
        }
        assert_eq!(streak_after(10_000), (RUNS_READ, good));
        record(9_000, false);
        assert_eq!(
            streak_after(10_000),
            (RUNS_READ, good),
            "the same streak, the same name"
        );
    }

    fn version_skill(store: &dyn Store, owner: OwnerId) -> SkillId {
        store.skills(owner, None).unwrap()[0].skill.id
    }

    #[test]
    fn a_runner_has_stopped_when_it_left_events_and_went_silent_past_five_heartbeats() {
        let seen = |at, backlog| RunnerSeen {
            agent: AgentId(1),
            at,
            backlog,
        };
        let now = 10 * 60_000;
        assert!(runner_stopped(&seen(0, Some(3)), now));
        // Asked four minutes ago: still running.
        assert!(!runner_stopped(&seen(6 * 60_000, Some(3)), now));
        // Ended with its spool delivered, or too old to say: no alarm.
        assert!(!runner_stopped(&seen(0, Some(0)), now));
        assert!(!runner_stopped(&seen(0, None), now));
    }

    #[test]
    fn the_usual_gap_is_the_90th_percentile_so_session_breaks_count() {
        // Nine runs a minute apart, then a 6-hour break, then one more: the usual gap is
        // the break's order, not a minute.
        let minute = 60_000;
        let mut times: Vec<Millis> = (0..9).map(|i| i * minute).collect();
        times.push(8 * minute + 6 * 3_600_000);
        assert_eq!(usual_gap(&mut times), Some(6 * 3_600_000));
        assert_eq!(usual_gap(&mut [1, 2]), None);
    }

    #[test]
    fn a_failing_family_skill_comes_before_a_quiet_avatar() {
        let failing = Item::Failing(Failing {
            skill: SkillId(1),
            label: "buzz/chop.ts".into(),
            agent: Some(AgentId(1)),
            family: true,
            streak: 3,
            cause: "Error: no axe".into(),
            cause_count: 3,
            first_seen: 0,
            last_seen: 0,
            last_failure: 0,
            first_failure: 0,
            streak_after: 0,
            failing_for: vec![AgentId(2)],
            suspect: None,
        });
        let quiet = Item::Quiet(Quiet {
            agent: AgentId(3),
            agent_name: "pickles".into(),
            last_run: 0,
            quiet_for: 8 * 86_400_000,
            usual_gap: 3_600_000,
        });
        assert!(failing.harm() > quiet.harm());
        assert!(
            quiet.next_step().contains("within 60 min"),
            "{}",
            quiet.next_step()
        );
    }
}
