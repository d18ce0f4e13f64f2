//! A script's runs as the owner's pages show them: a run's duration, gains and damage in
//! words, and the runs list of a script's page, filtered by result, version and avatar and
//! paged 100 runs at a time through the store (`?result=failed&version=2&avatar=3&page=2`),
//! each row linking to the run's own page (`run_page`).

use mindrune_store::{Agent, AgentId, Millis, RunFilter, ScriptRun, SkillId, StoreError};
use serde::Deserialize;

use crate::html::{Markup, Shown, count, html, when};

/// `42 s`, `3 min 5 s`, `1 h 2 min`.
pub(crate) fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    match secs {
        0 if ms > 0 => format!("{ms} ms"),
        0..60 => format!("{secs} s"),
        60..3600 if secs.is_multiple_of(60) => format!("{} min", secs / 60),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

/// What a run gained: `Woodcutting +250 XP, Logs +12`; `–` when nothing.
pub(crate) fn gains(outcome: &mindrune_store::Outcome) -> String {
    let mut parts: Vec<String> = outcome
        .xp
        .iter()
        .filter(|(_, xp)| **xp != 0.0)
        .map(|(skill, xp)| format!("{skill} {xp:+} XP"))
        .collect();
    parts.extend(
        outcome
            .items
            .iter()
            .filter(|(_, n)| **n != 0.0)
            .map(|(item, n)| format!("{item} {n:+}")),
    );
    if outcome.goal_progress > 0.0 {
        parts.push(format!("goal {}%", (outcome.goal_progress * 100.0).round()));
    }
    // Unknown is not nothing: a run whose gains could not be measured says so, and why.
    if let Some(reason) = &outcome.unmeasured {
        parts.push(format!("not measured: {reason}"));
    }
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join(", ")
    }
}

/// What a run cost: `1 death, 3 items lost, stuck`; `–` when nothing.
pub(crate) fn damage(outcome: &mindrune_store::Outcome) -> String {
    let mut parts = Vec::new();
    if outcome.deaths > 0 {
        parts.push(count(outcome.deaths, "death", "deaths"));
    }
    if outcome.items_lost > 0 {
        parts.push(count(outcome.items_lost, "item lost", "items lost"));
    }
    if outcome.stuck {
        parts.push("stuck".into());
    }
    if parts.is_empty() {
        "–".into()
    } else {
        parts.join(", ")
    }
}

/// How many runs one page of a script's runs list shows.
pub(crate) const RUNS_PER_PAGE: usize = 100;
/// The last page an address may ask for (so the offset never overflows).
const LAST_PAGE: usize = 1_000_000;

/// The runs list's query: every field optional, an empty one the same as none (the filter
/// form's "any").
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RunsQuery {
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    avatar: Option<String>,
    #[serde(default)]
    page: Option<String>,
    /// The score chart's time (`chart_range`), kept apart from which runs the list shows.
    #[serde(default)]
    pub(crate) range: Option<String>,
}

/// Which runs a script's page lists, and which page of them (1 the newest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RunsWanted {
    pub(crate) filter: RunFilter,
    pub(crate) page: usize,
}

impl Default for RunsWanted {
    fn default() -> Self {
        RunsWanted {
            filter: RunFilter::default(),
            page: 1,
        }
    }
}

impl RunsQuery {
    /// The runs wanted, or what is wrong with the address, in words.
    pub(crate) fn wanted(&self) -> Result<RunsWanted, &'static str> {
        let given = |field: &Option<String>| {
            field
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty() && *t != "any")
                .map(str::to_owned)
        };
        let positive = |text: String| text.parse::<i64>().ok().filter(|n| *n > 0);
        let ok = match given(&self.result).as_deref() {
            None => None,
            Some("ok") => Some(true),
            Some("failed") => Some(false),
            Some(_) => return Err("`result` is ok or failed."),
        };
        let version = match given(&self.version) {
            None => None,
            Some(text) => Some(
                positive(text.trim_start_matches('v').to_owned())
                    .ok_or("`version` is a version number of the script (1, 2, …).")?,
            ),
        };
        let agent = match given(&self.avatar) {
            None => None,
            Some(text) => Some(AgentId(
                positive(text).ok_or("`avatar` is the id of one of your avatars.")?,
            )),
        };
        let page = match given(&self.page) {
            None => 1,
            Some(text) => positive(text)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n <= LAST_PAGE)
                .ok_or("`page` is a page number of the runs list (1, 2, …).")?,
        };
        Ok(RunsWanted {
            filter: RunFilter { ok, version, agent },
            page,
        })
    }
}

/// One page of a script's runs as its page lists them.
pub(crate) struct RunList {
    pub(crate) wanted: RunsWanted,
    /// Newest first, at most [`RUNS_PER_PAGE`].
    pub(crate) runs: Vec<ScriptRun>,
    /// Older runs pass the filter beyond this page.
    pub(crate) older: bool,
}

/// Reads one page of a script's runs: one more than a page, to know whether older ones follow.
pub(crate) fn read_run_list(
    store: &dyn mindrune_store::Store,
    owner: mindrune_store::OwnerId,
    skill: SkillId,
    wanted: RunsWanted,
) -> Result<RunList, StoreError> {
    let offset = (wanted.page - 1) * RUNS_PER_PAGE;
    let mut runs =
        store.script_runs_where(owner, skill, &wanted.filter, RUNS_PER_PAGE + 1, offset)?;
    let older = runs.len() > RUNS_PER_PAGE;
    runs.truncate(RUNS_PER_PAGE);
    Ok(RunList {
        wanted,
        runs,
        older,
    })
}

/// The address of a page of a script's runs list (maud escapes its `&` in the attribute).
fn list_href(skill: SkillId, filter: &RunFilter, page: usize) -> String {
    let mut params = Vec::new();
    match filter.ok {
        Some(true) => params.push("result=ok".to_owned()),
        Some(false) => params.push("result=failed".to_owned()),
        None => {}
    }
    if let Some(version) = filter.version {
        params.push(format!("version={version}"));
    }
    if let Some(agent) = filter.agent {
        params.push(format!("avatar={}", agent.0));
    }
    if page > 1 {
        params.push(format!("page={page}"));
    }
    let query = if params.is_empty() {
        String::new()
    } else {
        format!("?{}", params.join("&"))
    };
    format!("/dashboard/skills/{}{query}#runs-title", skill.0)
}

/// An avatar's name among the family's, `a deleted avatar` when it is gone.
pub(crate) fn avatar_name(agents: &[Agent], agent: Option<AgentId>) -> Option<&str> {
    agent.and_then(|id| agents.iter().find(|a| a.id == id).map(|a| a.name.as_str()))
}

/// The filter form: plain GET, so it works without JavaScript.
fn filter_form(
    skill: SkillId,
    wanted: &RunsWanted,
    versions: &[i64],
    agents: &[Agent],
    shown: &Shown,
) -> Markup {
    let filter = &wanted.filter;
    let option = |value: &str, label: &str, selected: bool| {
        html! { option value=(value) selected[selected] { (label) } }
    };
    html! {
        form method="get" action={ "/dashboard/skills/" (skill.0) "#runs-title" } class="run-filter" {
            label for="runs-result" { "Show" } " "
            select id="runs-result" name="result" {
                (option("", "any result", filter.ok.is_none()))
                (option("ok", "ok", filter.ok == Some(true)))
                (option("failed", "failed", filter.ok == Some(false)))
            } " "
            label for="runs-version" { "of" } " "
            select id="runs-version" name="version" {
                (option("", "any version", filter.version.is_none()))
                @for n in versions {
                    (option(&n.to_string(), &format!("v{n}"), filter.version == Some(*n)))
                }
            } " "
            label for="runs-avatar" { "by" } " "
            select id="runs-avatar" name="avatar" {
                (option("", "any avatar", filter.agent.is_none()))
                @for agent in agents {
                    (option(&agent.id.0.to_string(), &shown.plain(&agent.name), filter.agent == Some(agent.id)))
                }
            } " "
            button type="submit" { "Filter" }
            @if *filter != RunFilter::default() {
                " " a href=(list_href(skill, &RunFilter::default(), 1)) { "all runs" }
            }
        }
    }
}

/// A script's runs list: the filter form, one page of runs (each linking to its own page)
/// and the links to newer and older pages.
pub(crate) fn runs_table(
    skill: SkillId,
    list: &RunList,
    versions: &[i64],
    agents: &[Agent],
    shown: &Shown,
) -> Markup {
    let page = list.wanted.page;
    let newer = (page > 1).then(|| list_href(skill, &list.wanted.filter, page - 1));
    let older = list
        .older
        .then(|| list_href(skill, &list.wanted.filter, page + 1));
    html! {
        (filter_form(skill, &list.wanted, versions, agents, shown))
        @if list.runs.is_empty() {
            p class="muted" id="runs-none" { "No runs match these filters on this page." }
        } @else {
            div class="table-scroll" { table class="runs stack" id="runs" {
                thead { tr {
                    th scope="col" { "When (UTC)" } th scope="col" { "Version" }
                    th scope="col" { "Avatar" } th scope="col" { "Result" }
                    th scope="col" class="num" { "Duration" } th scope="col" { "XP / items" }
                    th scope="col" { "Damage" } th scope="col" { "Cause and output" }
                } }
                tbody { @for run in &list.runs { (run_row(run, agents, shown)) } }
            } }
        }
        @if newer.is_some() || older.is_some() {
            p class="small run-pages" {
                "Page " (page)
                @if let Some(href) = &newer { " · " a href=(href) rel="prev" { "← newer runs" } }
                @if let Some(href) = &older { " · " a href=(href) rel="next" { "older runs →" } }
            }
        }
    }
}

fn run_row(run: &ScriptRun, agents: &[Agent], shown: &Shown) -> Markup {
    let o = &run.outcome;
    let output = run.output.as_deref().filter(|t| !t.trim().is_empty());
    html! {
        tr class={ "run " (if o.ok { "ok" } else { "failed" }) } {
            td data-label="When" { a href={ "/dashboard/runs/" (run.id) } { (shown.plain(&when(Some(o.at)))) } }
            td data-label="Version" { "v" (run.version) }
            td data-label="Avatar" { (shown.plain(avatar_name(agents, run.agent).unwrap_or("a deleted avatar"))) }
            td data-label="Result" { (result_html(o.ok)) }
            td data-label="Duration" class="num" { (duration(o.duration_ms)) }
            td data-label="XP / items" { (shown.plain(&gains(o))) }
            td data-label="Damage" { (shown.plain(&damage(o))) }
            td data-label="Cause" class="cause" {
                @if !o.ok { (shown.plain(o.failure.as_deref().unwrap_or("no cause recorded"))) }
                @if let Some(output) = output {
                    details class="run-output" { summary { "Output" } pre { code { (shown.plain(output)) } } }
                }
                @if o.ok && output.is_none() { "–" }
            }
        }
    }
}

pub(crate) fn result_html(ok: bool) -> Markup {
    if ok {
        html! { span class="run-ok" { "ok" } }
    } else {
        html! { span class="run-failed" { "failed" } }
    }
}

/// A run's time to the second: `2025-06-01 14:02:09` (UTC).
pub(crate) fn exact(at: Millis) -> String {
    let Ok(time) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
    else {
        return "?".into();
    };
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    time.format(&format).unwrap_or_else(|_| "?".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(0), "0 s");
        assert_eq!(duration(450), "450 ms");
        assert_eq!(duration(42_000), "42 s");
        assert_eq!(duration(180_000), "3 min");
        assert_eq!(duration(185_000), "3 min 5 s");
        assert_eq!(duration(3_720_000), "1 h 2 min");
    }

    #[test]
    fn a_run_s_gains_and_damage_in_words() {
        let mut outcome = mindrune_store::Outcome::default();
        assert_eq!(gains(&outcome), "–");
        assert_eq!(damage(&outcome), "–");
        outcome.xp.insert("Woodcutting".into(), 250.0);
        outcome.items.insert("Logs".into(), 12.0);
        outcome.deaths = 1;
        outcome.items_lost = 3;
        outcome.stuck = true;
        assert_eq!(gains(&outcome), "Woodcutting +250 XP, Logs +12");
        assert_eq!(damage(&outcome), "1 death, 3 items lost, stuck");
    }

    fn query(result: &str, version: &str, avatar: &str, page: &str) -> RunsQuery {
        let some = |t: &str| (!t.is_empty()).then(|| t.to_owned());
        RunsQuery {
            result: some(result),
            version: some(version),
            avatar: some(avatar),
            page: some(page),
            range: None,
        }
    }

    #[test]
    fn the_runs_query_reads_filters_and_a_page_and_refuses_nonsense() {
        assert_eq!(query("", "", "", "").wanted(), Ok(RunsWanted::default()));
        let wanted = query("failed", "v2", "3", "2").wanted().unwrap();
        assert_eq!(
            wanted.filter,
            RunFilter {
                ok: Some(false),
                version: Some(2),
                agent: Some(AgentId(3))
            }
        );
        assert_eq!(wanted.page, 2);
        assert_eq!(
            query("ok", "", "", "").wanted().unwrap().filter.ok,
            Some(true)
        );
        assert!(query("maybe", "", "", "").wanted().is_err());
        assert!(query("", "0", "", "").wanted().is_err());
        assert!(query("", "", "x", "").wanted().is_err());
        assert!(query("", "", "", "0").wanted().is_err());
        assert!(query("", "", "", "99999999999").wanted().is_err());
    }

    #[test]
    fn list_links_keep_the_filters() {
        let filter = RunFilter {
            ok: Some(false),
            version: Some(2),
            agent: Some(AgentId(3)),
        };
        assert_eq!(
            list_href(SkillId(7), &filter, 2),
            "/dashboard/skills/7?result=failed&version=2&avatar=3&page=2#runs-title"
        );
        assert_eq!(
            list_href(SkillId(7), &RunFilter::default(), 1),
            "/dashboard/skills/7#runs-title"
        );
    }
}
