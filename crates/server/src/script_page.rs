//! A script's own page (`/dashboard/skills/{id}`): its runs newest first with their outcomes,
//! causes and outputs, its score over time with the version changes marked, its versions, and
//! a diff between any two of them (`/dashboard/skills/{id}/diff`); and its code as plain text
//! (`/dashboard/skills/{id}/code`).
//!
//! As on every owner page, the skill is looked up with the session's owner: another family's
//! id is "not found". Code and outputs are text, escaped and scrubbed, never run.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mindrune_core::SharingBar;
use mindrune_engine::{UnmeasuredRuns, outcome_unknown_summary};
use mindrune_store::{Millis, SkillId, StoreError, UnmeasuredScope, UnrecordedReason};
use serde::Deserialize;

use crate::chart_range::{self, ChartRange};
use crate::charts::TimeAxis;
use crate::error::ApiError;
use crate::html::{self, Markup, Shown, count, html, points, when};
use crate::pages::{OwnerPage, error_page, not_found, owner_nav, page_or_not_found, parse_id};
/// A run's duration in words; the console's "last contact" reads it too.
pub(crate) use crate::runs::duration;
use crate::runs::{RUNS_PER_PAGE, RunList, RunsQuery, RunsWanted, read_run_list, runs_table};
use crate::scripts::{
    file_name, is_family, score_history, sharing_way, shown_index, tag, version_diff_html,
};
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/dashboard/skills/{skill_id}", get(script_page))
        .route("/dashboard/skills/{skill_id}/diff", get(diff_page))
        .route("/dashboard/skills/{skill_id}/code", get(code))
}

/// How many of a script's latest runs its page lists and charts.
const RUNS_SHOWN: usize = 200;

/// Everything a script's page shows.
struct ScriptPage {
    owner: mindrune_store::Owner,
    skill: mindrune_store::Skill,
    /// Newest first.
    versions: Vec<mindrune_store::Version>,
    shown: usize,
    family: bool,
    /// Newest first, at most [`RUNS_SHOWN`]: the chart's and the success rate's.
    runs: Vec<mindrune_store::ScriptRun>,
    /// The page of the runs list asked for, through its filters.
    list: RunList,
    /// The family's avatars, to name who ran each run.
    agents: Vec<mindrune_store::Agent>,
    total_runs: i64,
    /// Of all its runs, how many were not measured, by reason, most first.
    unmeasured: Vec<UnmeasuredRuns>,
    /// Its avatar's runs of this file whose outcome the output could not tell (not in
    /// `total_runs`: kept out of the score).
    outcome_unknown: i64,
    /// The time the score chart covers, and the clock the page was read at.
    range: ChartRange,
    now: Millis,
}

fn script_html(page: &ScriptPage, shown: &Shown) -> Markup {
    let skill = &page.skill;
    let version = &page.versions[page.shown];
    let bar = SharingBar::for_family(page.owner.eager_sharing);
    let file = file_name(skill);
    let ok = page.runs.iter().filter(|r| r.outcome.ok).count();
    let goal = skill
        .header
        .goal
        .as_deref()
        .filter(|g| !g.trim().is_empty());
    html! {
        @match skill.agent {
            Some(agent) => p class="small" {
                a href={ "/dashboard/avatars/" (agent.0) } { "← " (shown.plain(&skill.agent_name)) }
            },
            None => p class="small" { a href="/dashboard" { "← Your family" } },
        }
        h1 class="script-title" { span class="file" { (shown.plain(&file)) } " " (tag(skill, page.family)) }
        ul class="facts" {
            li class="version" { "v" (version.number) " · " (count(page.versions.len() as i64, "version", "versions")) }
            li class="score" { "score " (points(version.score)) }
            li class="runs" { (count(page.total_runs, "run", "runs")) }
            @if !page.runs.is_empty() {
                li class="success-rate" {
                    ((ok as f64 * 100.0 / page.runs.len() as f64).round()) "% ok of the last "
                    (count(page.runs.len() as i64, "run", "runs"))
                }
            }
        }
        @if let Some(gone) = skill.deleted_at {
            p class="gone" {
                "Its file is gone from " code { (shown.plain(&skill.path)) } " since "
                (shown.plain(&when(Some(gone)))) " UTC: it is private now, and its runs, scores and \
                versions stay here. A file with the same code brings it back."
            }
        } @else if let Some(line) = sharing_way(skill, version, page.family, bar) {
            p class="progress" { (shown.plain(&line)) }
        }
        @if let Some(goal) = goal {
            p class="goal" { span class="muted" { "Goal:" } " " (shown.plain(goal)) }
        }
        (score_chart(page, &file))
        (runs_html(page, shown))
        (versions_html(page, shown))
    }
}

/// The score over the chosen time, with the range picker; "all" starts at the oldest run read.
fn score_chart(page: &ScriptPage, file: &str) -> Markup {
    let mut history = score_history(&page.skill, &page.versions, &page.runs);
    let oldest = history.first().map(|p| p.at);
    let from = page.range.start(page.now, oldest);
    history.retain(|p| p.at >= from);
    let axis = TimeAxis::until_now(from, page.now);
    html! {
        section class="card" aria-labelledby="score-title" {
            h2 id="score-title" { "Score over time" }
            (chart_range::picker(
                page.range,
                &format!("/dashboard/skills/{}", page.skill.id.0),
                "score-title"
            ))
            (crate::charts::score_line(
                "score-chart",
                &format!(
                    "{file}: score after each run (0–1000), {}",
                    page.range.words()
                ),
                &history,
                1000.0,
                &axis,
            ))
            p class="small muted" {
                "Each point is the version's score replayed from its runs up to then, without the \
                family's peers; a version's last point is its score as the library keeps it. A cross \
                is a failed run; dashed lines mark a new version's first run."
                @if page.total_runs > page.runs.len() as i64 {
                    " The chart reads the newest " (page.runs.len()) " runs."
                }
            }
        }
    }
}

fn runs_html(page: &ScriptPage, shown: &Shown) -> Markup {
    let numbers: Vec<i64> = page.versions.iter().map(|v| v.number).collect();
    html! {
        section class="card" aria-labelledby="runs-title" {
            h2 id="runs-title" { "Runs" }
            @if page.runs.is_empty() {
                p class="muted" { "No recorded runs yet." }
                (unmeasured_html(page, shown))
            } @else {
                p class="small muted" {
                    (count(page.total_runs, "run", "runs")) ", newest first, " (RUNS_PER_PAGE)
                    " a page; each opens its own page."
                }
                (unmeasured_html(page, shown))
                (runs_table(page.skill.id, &page.list, &numbers, &page.agents, shown))
            }
        }
    }
}

/// What the owner should know of the runs' numbers: how many runs were not measured and why,
/// and how many had an outcome the output could not tell.
fn unmeasured_html(page: &ScriptPage, shown: &Shown) -> Markup {
    html! {
        @if !page.unmeasured.is_empty() || page.outcome_unknown > 0 {
            ul class="small unmeasured" id="unmeasured" {
                @for unmeasured in &page.unmeasured {
                    li { (shown.plain(&unmeasured.summary())) ": what they gained is unknown, not zero." }
                }
                @if page.outcome_unknown > 0 {
                    li { (shown.plain(&outcome_unknown_summary(page.outcome_unknown))) "." }
                }
            }
        }
    }
}

fn versions_html(page: &ScriptPage, shown_text: &Shown) -> Markup {
    let skill = &page.skill;
    let shown = &page.versions[page.shown];
    let id = skill.id.0;
    html! {
        section class="card" aria-labelledby="versions-title" id="versions" {
            h2 id="versions-title" { "Versions" }
            @if let Some(best) = mindrune_engine::best_other(&page.versions, shown) {
                p class="best" { "best: v" (best.number) ", " (points(best.score)) }
            }
            div class="table-scroll" { table class="stack" {
                thead { tr {
                    th scope="col" { "Version" } th scope="col" class="num" { "Runs" }
                    th scope="col" class="num" { "OK" } th scope="col" class="num" { "Score" }
                    th scope="col" { "Made (UTC)" } th scope="col" { "Last used (UTC)" }
                    th scope="col" { "Shared" } th scope="col" { "Code" }
                } }
                tbody { @for v in &page.versions { (version_row(page, v, shown_text)) } }
            } }
            @if page.versions.len() > 1 {
                (diff_form(page))
            }
            details class="code" {
                summary { "View code (v" (shown.number) ")" }
                pre { code id={ "code-" (id) } { (shown_text.plain(&shown.code)) } }
            }
        }
    }
}

fn version_row(page: &ScriptPage, v: &mindrune_store::Version, shown_text: &Shown) -> Markup {
    let skill = &page.skill;
    let id = skill.id.0;
    let mut notes = Vec::new();
    if Some(v.id) == skill.current_version && skill.deleted_at.is_none() {
        notes.push("the file now");
    }
    if v.id == page.versions[page.shown].id && page.family {
        notes.push("siblings get it");
    }
    // `shared_at` is history, never cleared: a version siblings no longer get since the agent
    // un-shared the skill says so rather than "yes".
    let shared = match (v.shared_at, page.family) {
        (Some(_), true) => "yes",
        (Some(_), false) => "before (un-shared)",
        (None, _) => "–",
    };
    html! {
        tr {
            td data-label="Version" { "v" (v.number)
                @if !notes.is_empty() { " " span class="muted small" { "(" (notes.join(", ")) ")" } } }
            td data-label="Runs" class="num" { (v.uses) }
            td data-label="OK" class="num" { (v.ok) }
            td data-label="Score" class="num" { (points(v.score)) }
            td data-label="Made" { (shown_text.plain(&when(Some(v.created_at)))) }
            td data-label="Last used" { (shown_text.plain(&when(v.last_used_at))) }
            td data-label="Shared" { (shared) }
            td data-label="Code" {
                a href={ "/dashboard/skills/" (id) "/code?version=" (v.number) } { "view" } " · "
                a href={ "/dashboard/skills/" (id) "/code?version=" (v.number) "&download=1" } download { "download" }
            }
        }
    }
}

/// The form that opens the diff of two versions, the newest against the one before it chosen.
fn diff_form(page: &ScriptPage) -> Markup {
    let newest = page.versions[0].number;
    let before = page.versions[1].number;
    let options = |selected: i64| {
        html! {
            @for v in &page.versions {
                option value=(v.number) selected[v.number == selected] { "v" (v.number) }
            }
        }
    };
    html! {
        form method="get" action={ "/dashboard/skills/" (page.skill.id.0) "/diff" } class="diff-form" {
            label for="diff-from" { "Compare" } " "
            select id="diff-from" name="from" { (options(before)) } " "
            label for="diff-to" { "with" } " "
            select id="diff-to" name="to" { (options(newest)) } " "
            button type="submit" { "Show the diff" }
        }
    }
}

fn read_page(
    store: &dyn mindrune_store::Store,
    owner_id: mindrune_store::OwnerId,
    id: i64,
    wanted: RunsWanted,
    range: ChartRange,
) -> Result<Option<ScriptPage>, ApiError> {
    let owner = store.owner(owner_id)?;
    let skill = match store.skill(owner_id, SkillId(id)) {
        Ok(skill) => skill,
        Err(StoreError::NotFound(_)) => return Ok(None),
        Err(err) => return Err(err.into()),
    };
    let mut versions = store.versions(owner_id, skill.id)?;
    let family = is_family(&skill, &versions);
    let bar = SharingBar::for_family(owner.eager_sharing);
    let Some(shown) = shown_index(&skill, &versions, family, bar) else {
        return Ok(None);
    };
    let total_runs = versions.iter().map(|v| v.uses).sum();
    // Scores as of now (chosen above on their stored standing), as the avatar page shows them.
    let now = mindrune_engine::now_millis();
    for version in &mut versions {
        version.score = version.score_at(now);
    }
    let runs = store.script_runs(owner_id, skill.id, RUNS_SHOWN)?;
    let list = read_run_list(store, owner_id, skill.id, wanted)?;
    let agents = store.agents(owner_id)?;
    let unmeasured = store
        .unmeasured_runs(owner_id, UnmeasuredScope::Skill(skill.id))?
        .into_iter()
        .map(|(reason, runs)| UnmeasuredRuns { reason, runs })
        .collect();
    // A run of unknown outcome is no use of the skill; it is kept as its avatar's call, named
    // by the file it ran (`bots/<bot>/<name>.ts: <the command>`).
    let outcome_unknown = match skill.agent {
        Some(agent) => {
            let prefix = format!("{}: ", skill.path);
            store
                .unrecorded_since(owner_id, agent, Millis::MIN)?
                .iter()
                .filter(|call| {
                    call.reason == UnrecordedReason::OutcomeUnknown
                        && call.detail.starts_with(&prefix)
                })
                .count() as i64
        }
        None => 0,
    };
    Ok(Some(ScriptPage {
        owner,
        skill,
        versions,
        shown,
        family,
        runs,
        list,
        agents,
        total_runs,
        unmeasured,
        outcome_unknown,
        range,
        now,
    }))
}

async fn script_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path(raw): Path<String>,
    query: Result<Query<RunsQuery>, QueryRejection>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return not_found("script");
    };
    let back = format!("/dashboard/skills/{id}");
    let wanted = match query.as_ref().map(|Query(q)| {
        q.wanted().and_then(|wanted| {
            ChartRange::parse(q.range.as_deref(), ChartRange::All).map(|range| (wanted, range))
        })
    }) {
        Ok(Ok(wanted)) => wanted,
        Ok(Err(problem)) => {
            return html::error_page(
                StatusCode::BAD_REQUEST,
                problem,
                (&back, "All the script's runs"),
            );
        }
        Err(_) => {
            return html::error_page(
                StatusCode::BAD_REQUEST,
                "The address's query could not be read; pick the runs with the form on the script's page.",
                (&back, "All the script's runs"),
            );
        }
    };
    let (wanted, range) = wanted;
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let page = state
        .blocking(move || -> Result<Option<Markup>, ApiError> {
            let Some(page) = read_page(store, owner_id, id, wanted, range)? else {
                return Ok(None);
            };
            let shown = Shown::new(&[]);
            let body = script_html(&page, &shown);
            Ok(Some(html::page(
                &shown.plain(&file_name(&page.skill)),
                owner_nav(&app, &page.owner, &csrf),
                body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "script")
}

#[derive(Debug, Default, Deserialize)]
struct DiffQuery {
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

async fn diff_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path(raw): Path<String>,
    query: Result<Query<DiffQuery>, QueryRejection>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return not_found("script");
    };
    let back = format!("/dashboard/skills/{id}");
    let number = |text: Option<&str>| text.and_then(|t| t.parse::<i64>().ok()).filter(|n| *n > 0);
    let (from, to) = match query {
        Ok(Query(q)) => match (number(q.from.as_deref()), number(q.to.as_deref())) {
            (Some(from), Some(to)) => (from, to),
            _ => {
                return html::error_page(
                    StatusCode::BAD_REQUEST,
                    "A diff compares two versions: `from` and `to` are version numbers of the script (1, 2, …).",
                    (&back, "Back to the script"),
                );
            }
        },
        Err(_) => {
            return html::error_page(
                StatusCode::BAD_REQUEST,
                "The address's query could not be read; pick the two versions on the script's page.",
                (&back, "Back to the script"),
            );
        }
    };
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let page = state
        .blocking(move || -> Result<Option<Markup>, ApiError> {
            let owner = store.owner(owner_id)?;
            let skill = match store.skill(owner_id, SkillId(id)) {
                Ok(skill) => skill,
                Err(StoreError::NotFound(_)) => return Ok(None),
                Err(err) => return Err(err.into()),
            };
            let versions = store.versions(owner_id, skill.id)?;
            let (Some(old), Some(new)) = (
                versions.iter().find(|v| v.number == from),
                versions.iter().find(|v| v.number == to),
            ) else {
                return Ok(None);
            };
            let shown = Shown::new(&[]);
            let file = shown.plain(&file_name(&skill));
            let now = mindrune_engine::now_millis();
            let body = html! {
                p class="small" { a href={ "/dashboard/skills/" (id) } { "← " (file) } }
                h1 { "v" (from) " → v" (to) }
                p class="lead" {
                    "score " (points(old.score_at(now))) " → " (points(new.score_at(now))) " · "
                    (count(old.uses, "run", "runs")) " → " (count(new.uses, "run", "runs"))
                }
                (version_diff_html(&skill, old, new, &shown))
            };
            Ok(Some(html::page(
                &format!("{file} v{from} → v{to}"),
                owner_nav(&app, &owner, &csrf),
                body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "script or version")
}

// -------------------------------------------------------------------------------------------
// A script's code, as text
// -------------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct CodeQuery {
    #[serde(default)]
    download: Option<String>,
    /// `1`: the code as plain text (what a script reads); else a page to read it on.
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    version: Option<String>,
}

/// A file name that is safe in a `Content-Disposition` header: letters, digits, `.`, `-` and
/// `_` kept, anything else a `_`.
fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let trimmed = cleaned.trim_start_matches('.');
    if trimmed.is_empty() {
        "script".into()
    } else {
        trimmed.chars().take(100).collect()
    }
}

async fn code(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path(raw): Path<String>,
    query: Result<Query<CodeQuery>, QueryRejection>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return not_found("script");
    };
    let Ok(Query(query)) = query else {
        return html::error_page(
            StatusCode::BAD_REQUEST,
            "The address's query could not be read; use the View or Download link of the script.",
            ("/dashboard", "Back to your family"),
        );
    };
    let (Some(download), Some(raw)) = (flag(query.download.as_deref()), flag(query.raw.as_deref()))
    else {
        return html::error_page(
            StatusCode::BAD_REQUEST,
            "`download` is 1 (a file to save) or 0, and `raw` is 1 (plain text) or 0 (a page to read).",
            ("/dashboard", "Back to your family"),
        );
    };
    let wanted = match query.version.as_deref().map(str::parse::<i64>) {
        None => None,
        Some(Ok(number)) if number > 0 => Some(number),
        Some(_) => {
            return html::error_page(
                StatusCode::BAD_REQUEST,
                "`version` is a version number of the script (1, 2, …).",
                ("/dashboard", "Back to your family"),
            );
        }
    };
    let store = state.store();
    let owner_id = session.owner;
    let found = state
        .blocking(move || -> Result<Option<(String, i64, String)>, ApiError> {
            let owner = store.owner(owner_id)?;
            // The skill is looked up with the session's owner: another family's id is not
            // found.
            let skill = match store.skill(owner_id, SkillId(id)) {
                Ok(skill) => skill,
                Err(StoreError::NotFound(_)) => return Ok(None),
                Err(err) => return Err(err.into()),
            };
            let versions = store.versions(owner_id, skill.id)?;
            let index = match wanted {
                Some(number) => versions.iter().position(|v| v.number == number),
                None => {
                    let bar = SharingBar::for_family(owner.eager_sharing);
                    shown_index(&skill, &versions, is_family(&skill, &versions), bar)
                }
            };
            let Some(index) = index else {
                return Ok(None);
            };
            let version = &versions[index];
            let shown_text = Shown::new(&[]);
            let stem = skill.name.clone();
            Ok(Some((
                shown_text.plain(&version.code),
                version.number,
                stem,
            )))
        })
        .await
        .and_then(|found| found);
    let (code, number, stem) = match found {
        Ok(Some(found)) => found,
        Ok(None) => return not_found("script or version"),
        Err(err) => return error_page(&err),
    };
    if !download && !raw {
        return html::respond(StatusCode::OK, code_page(id, number, &stem, &code));
    }
    let mut response = (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        code,
    )
        .into_response();
    if download {
        let name = if wanted.is_some() {
            format!("{}-v{number}.ts", safe_file_name(&stem))
        } else {
            format!("{}.ts", safe_file_name(&stem))
        };
        if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
            response
                .headers_mut()
                .insert(header::CONTENT_DISPOSITION, value);
        }
    }
    response
}

/// A yes/no query value: absent, `0` or `false` is no; `1`, `true` or empty is yes; anything
/// else is not one (`None`).
fn flag(value: Option<&str>) -> Option<bool> {
    match value {
        None | Some("0") | Some("false") => Some(false),
        Some("1") | Some("true") | Some("") => Some(true),
        Some(_) => None,
    }
}

/// A version's code as a page: its name and version as the title, a way back to the script,
/// the code as escaped text that wraps (a phone reads it without scrolling sideways), and the
/// file to download.
fn code_page(id: i64, number: i64, stem: &str, code: &str) -> Markup {
    let file = format!("{stem}.ts");
    let body = html! {
        p class="small" { a href={ "/dashboard/skills/" (id) } { "← Back to " (file) } }
        h1 class="script-title" { span class="file" { (file) } " v" (number) }
        p {
            a href={ "/dashboard/skills/" (id) "/code?version=" (number) "&download=1" } download { "Download" }
            " · "
            a href={ "/dashboard/skills/" (id) "/code?version=" (number) "&raw=1" } { "Plain text" }
        }
        pre class="code-view" { code { (code) } }
    };
    html::page(&format!("{file} v{number}"), html::Nav::None, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn download_names_are_header_safe() {
        assert_eq!(safe_file_name("chop-oaks"), "chop-oaks");
        assert_eq!(safe_file_name("a\"b\r\nc"), "a_b__c");
        assert_eq!(safe_file_name("..."), "script");
        assert_eq!(safe_file_name("<script>"), "_script_");
    }
}
