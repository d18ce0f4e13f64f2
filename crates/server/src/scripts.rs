//! What every page says about a script: whether it is a family skill, which version it shows,
//! its file's name, how far it is from the sharing bar, its score over its runs, and the diff
//! of two of its versions.

use mindrune_core::{Measure, ScoreInput, UseSample, score};
use mindrune_core::{SharingBar, VersionStanding, version_for_siblings};
use mindrune_store::{DAY_MILLIS, HeaderState, ScriptRun, Skill, Version};

use crate::charts::Point;
use crate::html::{self, Markup, Shown, count, html, points, when};
use crate::icons;

/// `2025-06-01`: a day of [`DayRuns`](mindrune_store::DayRuns) as the charts label it.
pub(crate) fn day_label(day: i64) -> String {
    let at = when(Some(day.saturating_mul(DAY_MILLIS)));
    at.split(' ').next().unwrap_or(&at).to_string()
}

/// Whether a skill is a family skill: its file carries the `@skill` header, is there, and a
/// version was shared (as the store's entries count it).
pub(crate) fn is_family(skill: &Skill, versions: &[Version]) -> bool {
    skill.header.state == HeaderState::Skill
        && skill.deleted_at.is_none()
        && versions.iter().any(|v| v.shared_at.is_some())
}

/// The version a script's entry shows: for a family skill the version siblings get (a newer
/// private draft does not replace it until it is shared too); otherwise the file's current
/// version. An index into `versions`.
pub(crate) fn shown_index(
    skill: &Skill,
    versions: &[Version],
    family: bool,
    bar: SharingBar,
) -> Option<usize> {
    if family {
        let standings: Vec<VersionStanding> = versions.iter().map(Into::into).collect();
        if let Some(index) = version_for_siblings(&standings, bar) {
            return Some(index);
        }
    }
    versions
        .iter()
        .position(|v| Some(v.id) == skill.current_version)
        .or(if versions.is_empty() { None } else { Some(0) })
}

/// `chop-oaks.ts`: the file's name as the avatar wrote it (the path below its `bots/<bot>/`).
pub(crate) fn file_name(skill: &Skill) -> String {
    skill
        .path
        .strip_prefix(&format!("bots/{}/", skill.agent_name))
        .filter(|name| !name.is_empty())
        .map_or_else(|| format!("{}.ts", skill.name), str::to_string)
}

/// Where a private headed script stands against the family's bar, as the wrap-up says it
/// (`x.ts: 3/5 runs, score 540/600 — not shared yet`). A script that clears the bar now (the
/// owner just lowered it) is shared at its next run or turn end, and the line says so.
pub(crate) fn progress_line(file: &str, runs: i64, score: f64, bar: SharingBar) -> String {
    if bar.cleared_by(runs, score) {
        format!(
            "{file}: {}/{} runs, score {}/{} — clears the bar; shared at its next run or turn end",
            runs.min(bar.runs),
            bar.runs,
            points(score),
            points(bar.score)
        )
    } else {
        bar.progress(file, runs, score)
    }
}

/// The script's tag: a file that is gone is private, whatever its header said.
pub(crate) fn tag(skill: &Skill, family: bool) -> Markup {
    let (class, icon, words) = if skill.deleted_at.is_some() {
        ("private", icons::lock(), "Private")
    } else {
        match (family, skill.header.state) {
            (true, _) => ("family", icons::family(), "Family"),
            (false, HeaderState::Skill) => ("private", icons::lock(), "Not shared yet"),
            (false, _) => ("private", icons::lock(), "Private"),
        }
    };
    html! { span class={ "tag " (class) } { (icon) (words) } }
}

/// How a script that is not a family skill gets there, in the wrap-up's words; `None` when it
/// is one, is private by choice, or has not proven itself without a header.
pub(crate) fn sharing_way(
    skill: &Skill,
    version: &Version,
    family: bool,
    bar: SharingBar,
) -> Option<String> {
    let file = file_name(skill);
    match (family, skill.header.state) {
        (true, _) | (false, HeaderState::Private) => None,
        (false, HeaderState::Skill) => Some(progress_line(&file, version.uses, version.score, bar)),
        (false, HeaderState::None) if bar.cleared_by(version.uses, version.score) => Some(format!(
            "add the @skill header: {}, {} ≥ {}",
            count(version.uses, "run", "runs"),
            points(version.score),
            points(bar.score)
        )),
        (false, HeaderState::None) => None,
    }
}

/// The script's score after each of `runs` (newest first, as the store gives them), oldest
/// first: each version's score replayed from its runs up to then, as the library scored them
/// (the same window, measure and inherited start), except that the family's peers are left
/// out; each version's last point is its score as stored, peers included. `runs` may be only
/// the latest of a long history: then a version's early points are replayed from fewer runs.
pub(crate) fn score_history(skill: &Skill, versions: &[Version], runs: &[ScriptRun]) -> Vec<Point> {
    let mut windows: std::collections::HashMap<i64, Vec<UseSample>> = Default::default();
    let mut history = Vec::with_capacity(runs.len());
    for run in runs.iter().rev() {
        let Some(version) = versions.iter().find(|v| v.number == run.version) else {
            continue;
        };
        let window = windows.entry(run.version).or_default();
        window.insert(0, sample(run));
        let measure = Measure::choose(&skill.tags, window);
        let replayed = score(&ScoreInput {
            window,
            measure: &measure,
            peer_median_rate: None,
            inherited: version.inherited,
        });
        history.push(Point {
            at: run.outcome.at,
            label: when(Some(run.outcome.at)),
            value: replayed.total,
            version: run.version,
            failed: !run.outcome.ok,
        });
    }
    // Each version's last point: the score the library keeps for it.
    for version in versions {
        if let Some(last) = history
            .iter_mut()
            .rev()
            .find(|p| p.version == version.number)
        {
            last.value = version.score;
        }
    }
    history
}

fn sample(run: &ScriptRun) -> UseSample {
    UseSample {
        at: run.outcome.at.div_euclid(1000),
        ok: run.outcome.ok,
        agent: run.agent.map_or(0, |a| a.0),
        duration_ms: run.outcome.duration_ms,
        xp: run.outcome.xp.clone(),
        items: run.outcome.items.clone(),
        goal_progress: run.outcome.goal_progress,
        deaths: run.outcome.deaths,
        stuck: run.outcome.stuck,
        items_lost: run.outcome.items_lost,
    }
}

/// Two versions' code as a unified diff in HTML (the diff page's, and a run page's change),
/// or a line saying they are the same.
pub(crate) fn version_diff_html(
    skill: &mindrune_store::Skill,
    old: &mindrune_store::Version,
    new: &mindrune_store::Version,
    shown_text: &Shown,
) -> Markup {
    let file = file_name(skill);
    let diff = similar::TextDiff::from_lines(old.code.as_str(), new.code.as_str())
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{file} v{}", old.number),
            &format!("{file} v{}", new.number),
        )
        .to_string();
    if diff.is_empty() {
        html! { p.muted { "The two versions' code is the same." } }
    } else {
        html::diff_html(&diff, shown_text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(version: i64, at_s: i64, ok: bool) -> ScriptRun {
        ScriptRun {
            id: 0,
            version,
            agent: Some(mindrune_store::AgentId(1)),
            outcome: mindrune_store::Outcome {
                at: at_s * 1000,
                ok,
                duration_ms: 60_000,
                ..Default::default()
            },
            output: None,
        }
    }

    #[test]
    fn the_score_history_replays_each_version_and_ends_on_its_stored_score() {
        let skill: Skill = serde_json::from_value(serde_json::json!({
            "id": 1, "owner": 1, "agent": 1, "agent_name": "buzz", "name": "chop",
            "path": "bots/buzz/chop.ts", "kind": "script", "current_version": 2,
            "created_at": 0, "deleted_at": null, "tags": [], "file_digest": null,
            "header": {"state": "none", "goal": null, "preconditions": null, "params": null,
                       "result": null, "from": null, "topics": []}
        }))
        .unwrap();
        let version = |id: i64, score: f64| -> Version {
            serde_json::from_value(serde_json::json!({
                "id": id, "owner": 1, "skill": 1, "number": id, "digest": "", "code": "",
                "parent": null, "lineage": null, "inherited": null, "uses": 0, "ok": 0,
                "score": score, "breakdown": null, "measure_key": "none",
                "rate_per_minute": 0.0, "created_at": 0, "last_used_at": null, "shared_at": null
            }))
            .unwrap()
        };
        let versions = [version(2, 111.0), version(1, 777.0)];
        // Newest first, as the store gives them.
        let runs = [
            run(2, 40, false),
            run(1, 30, true),
            run(1, 20, true),
            run(1, 10, true),
        ];
        let history = score_history(&skill, &versions, &runs);
        let numbers: Vec<i64> = history.iter().map(|p| p.version).collect();
        assert_eq!(numbers, [1, 1, 1, 2]);
        let first = score(&ScoreInput {
            window: &[sample(&runs[3])],
            measure: &Measure::choose(&[], &[sample(&runs[3])]),
            peer_median_rate: None,
            inherited: None,
        });
        assert_eq!(history[0].value, first.total);
        assert!(
            history[1].value > history[0].value,
            "a second clean run scores higher"
        );
        assert_eq!(
            history[2].value, 777.0,
            "v1's last point is its stored score"
        );
        assert_eq!(history[3].value, 111.0);
        assert_eq!(history[0].label, "1970-01-01 00:00");
        assert!(score_history(&skill, &versions, &[]).is_empty());
    }

    #[test]
    fn a_script_that_clears_a_lowered_bar_says_when_it_is_shared() {
        let line = progress_line("x.ts", 3, 550.0, SharingBar::EAGER);
        assert!(line.starts_with("x.ts: 3/3 runs, score 550/500"), "{line}");
        assert!(line.contains("next run or turn end"), "{line}");
        assert_eq!(
            progress_line("x.ts", 3, 540.0, SharingBar::STANDARD),
            "x.ts: 3/5 runs, score 540/600 — not shared yet"
        );
    }
}
