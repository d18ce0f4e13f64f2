//! A script's own page (`/dashboard/skills/{id}`): its runs newest first with their outcomes,
//! causes and outputs, its score over time with the version changes marked, its versions, and
//! a diff between any two of them (`/dashboard/skills/{id}/diff`); and its code as plain text
//! (`/dashboard/skills/{id}/code`).
//!
//! As on every owner page, the skill is looked up with the session's owner: another family's
//! id is "not found". Code and outputs are text, escaped and scrubbed, never run.

use std::fmt::Write as _;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_engine::avatars::wrapup::{UnmeasuredRuns, outcome_unknown_summary};
use mindrune_store::{Millis, SkillId, StoreError, UnmeasuredScope, UnrecordedReason};
use serde::Deserialize;

use crate::chart_range::{self, ChartRange};
use crate::charts::TimeAxis;
use crate::error::ApiError;
use crate::html::{self, Shown, count, points, when};
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

fn script_html(page: &ScriptPage, shown_text: &Shown) -> String {
    let skill = &page.skill;
    let version = &page.versions[page.shown];
    let bar = SharingBar::for_family(page.owner.eager_sharing);
    let file = file_name(skill);
    let mut body = String::new();
    match skill.agent {
        Some(agent) => {
            let _ = write!(
                body,
                "<p class=\"small\"><a href=\"/dashboard/avatars/{}\">← {}</a></p>",
                agent.0,
                shown_text.text(&skill.agent_name)
            );
        }
        None => body.push_str("<p class=\"small\"><a href=\"/dashboard\">← Your family</a></p>"),
    }
    let ok = page.runs.iter().filter(|r| r.outcome.ok).count();
    let _ = write!(
        body,
        "<h1 class=\"script-title\"><span class=\"file\">{file}</span> {tag}</h1>\
         <ul class=\"facts\"><li class=\"version\">v{number} · {versions}</li>\
         <li class=\"score\">score {score}</li><li class=\"runs\">{runs}</li>{rate}</ul>",
        file = shown_text.text(&file),
        tag = tag(skill, page.family).into_string(),
        number = version.number,
        versions = count(page.versions.len() as i64, "version", "versions"),
        score = points(version.score),
        runs = count(page.total_runs, "run", "runs"),
        rate = if page.runs.is_empty() {
            String::new()
        } else {
            format!(
                "<li class=\"success-rate\">{}% ok of the last {}</li>",
                (ok as f64 * 100.0 / page.runs.len() as f64).round(),
                count(page.runs.len() as i64, "run", "runs")
            )
        },
    );
    if let Some(gone) = skill.deleted_at {
        let _ = write!(
            body,
            "<p class=\"gone\">Its file is gone from <code>{path}</code> since {at} UTC: it is private now, \
             and its runs, scores and versions stay here. A file with the same code brings it back.</p>",
            path = shown_text.text(&skill.path),
            at = shown_text.text(&when(Some(gone))),
        );
    } else if let Some(line) = sharing_way(skill, version, page.family, bar) {
        let _ = write!(body, "<p class=\"progress\">{}</p>", shown_text.text(&line));
    }
    if let Some(goal) = skill
        .header
        .goal
        .as_deref()
        .filter(|g| !g.trim().is_empty())
    {
        let _ = write!(
            body,
            "<p class=\"goal\"><span class=\"muted\">Goal:</span> {}</p>",
            shown_text.text(goal)
        );
    }
    score_chart(&mut body, page, &file);
    runs_html(&mut body, page, shown_text);
    versions_html(&mut body, page, shown_text);
    body
}

/// The score over the chosen time, with the range picker; "all" starts at the oldest run read.
fn score_chart(out: &mut String, page: &ScriptPage, file: &str) {
    let mut history = score_history(&page.skill, &page.versions, &page.runs);
    let oldest = history.first().map(|p| p.at);
    let from = page.range.start(page.now, oldest);
    history.retain(|p| p.at >= from);
    let axis = TimeAxis::until_now(from, page.now);
    let _ = write!(
        out,
        "<section class=\"card\" aria-labelledby=\"score-title\"><h2 id=\"score-title\">Score over time</h2>{}",
        chart_range::picker(
            page.range,
            &format!("/dashboard/skills/{}", page.skill.id.0),
            "score-title"
        )
        .into_string()
    );
    out.push_str(&crate::charts::score_line(
        "score-chart",
        &format!(
            "{file}: score after each run (0–1000), {}",
            page.range.words()
        ),
        &history,
        1000.0,
        &axis,
    ));
    let _ = write!(
        out,
        "<p class=\"small muted\">Each point is the version's score replayed from its runs up to then, \
         without the family's peers; a version's last point is its score as the library keeps it. \
         A cross is a failed run; dashed lines mark a new version's first run.{}</p></section>",
        if page.total_runs > page.runs.len() as i64 {
            format!(" The chart reads the newest {} runs.", page.runs.len())
        } else {
            String::new()
        }
    );
}

fn runs_html(out: &mut String, page: &ScriptPage, shown_text: &Shown) {
    out.push_str(
        "<section class=\"card\" aria-labelledby=\"runs-title\"><h2 id=\"runs-title\">Runs</h2>",
    );
    if page.runs.is_empty() {
        out.push_str("<p class=\"muted\">No recorded runs yet.</p>");
        unmeasured_html(out, page, shown_text);
        out.push_str("</section>");
        return;
    }
    let _ = write!(
        out,
        "<p class=\"small muted\">{}, newest first, {RUNS_PER_PAGE} a page; each opens its own page.</p>",
        count(page.total_runs, "run", "runs"),
    );
    unmeasured_html(out, page, shown_text);
    let numbers: Vec<i64> = page.versions.iter().map(|v| v.number).collect();
    runs_table(
        out,
        page.skill.id,
        &page.list,
        &numbers,
        &page.agents,
        shown_text,
    );
    out.push_str("</section>");
}

/// What the owner should know of the runs' numbers: how many runs were not measured and why,
/// and how many had an outcome the output could not tell.
fn unmeasured_html(out: &mut String, page: &ScriptPage, shown_text: &Shown) {
    if page.unmeasured.is_empty() && page.outcome_unknown == 0 {
        return;
    }
    out.push_str("<ul class=\"small unmeasured\" id=\"unmeasured\">");
    for unmeasured in &page.unmeasured {
        let _ = write!(
            out,
            "<li>{}: what they gained is unknown, not zero.</li>",
            shown_text.text(&unmeasured.summary())
        );
    }
    if page.outcome_unknown > 0 {
        let _ = write!(
            out,
            "<li>{}.</li>",
            shown_text.text(&outcome_unknown_summary(page.outcome_unknown))
        );
    }
    out.push_str("</ul>");
}

fn versions_html(out: &mut String, page: &ScriptPage, shown_text: &Shown) {
    let skill = &page.skill;
    let shown = &page.versions[page.shown];
    let id = skill.id.0;
    out.push_str(
        "<section class=\"card\" aria-labelledby=\"versions-title\" id=\"versions\"><h2 id=\"versions-title\">Versions</h2>",
    );
    if let Some(best) = mindrune_engine::display::best_other(&page.versions, shown) {
        let _ = write!(
            out,
            "<p class=\"best\">best: v{}, {}</p>",
            best.number,
            points(best.score)
        );
    }
    out.push_str(
        "<div class=\"table-scroll\"><table class=\"stack\"><thead><tr><th scope=\"col\">Version</th>\
         <th scope=\"col\" class=\"num\">Runs</th><th scope=\"col\" class=\"num\">OK</th>\
         <th scope=\"col\" class=\"num\">Score</th><th scope=\"col\">Made (UTC)</th>\
         <th scope=\"col\">Last used (UTC)</th><th scope=\"col\">Shared</th><th scope=\"col\">Code</th></tr></thead><tbody>",
    );
    for v in &page.versions {
        let mut notes = Vec::new();
        if Some(v.id) == skill.current_version && skill.deleted_at.is_none() {
            notes.push("the file now");
        }
        if v.id == shown.id && page.family {
            notes.push("siblings get it");
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"muted small\">({})</span>", notes.join(", "))
        };
        let _ = write!(
            out,
            "<tr><td data-label=\"Version\">v{number}{notes}</td><td data-label=\"Runs\" class=\"num\">{runs}</td>\
             <td data-label=\"OK\" class=\"num\">{ok}</td><td data-label=\"Score\" class=\"num\">{score}</td>\
             <td data-label=\"Made\">{made}</td><td data-label=\"Last used\">{last}</td>\
             <td data-label=\"Shared\">{shared}</td>\
             <td data-label=\"Code\"><a href=\"/dashboard/skills/{id}/code?version={number}\">view</a> · \
             <a href=\"/dashboard/skills/{id}/code?version={number}&amp;download=1\" download>download</a></td></tr>",
            number = v.number,
            runs = v.uses,
            ok = v.ok,
            score = points(v.score),
            made = shown_text.text(&when(Some(v.created_at))),
            last = shown_text.text(&when(v.last_used_at)),
            // `shared_at` is history, never cleared: a version siblings no longer get since
            // the agent un-shared the skill says so rather than "yes".
            shared = match (v.shared_at, page.family) {
                (Some(_), true) => "yes",
                (Some(_), false) => "before (un-shared)",
                (None, _) => "–",
            },
        );
    }
    out.push_str("</tbody></table></div>");
    if page.versions.len() > 1 {
        let newest = page.versions[0].number;
        let before = page.versions[1].number;
        let options = |selected: i64| {
            page.versions
                .iter()
                .map(|v| {
                    format!(
                        "<option value=\"{n}\"{sel}>v{n}</option>",
                        n = v.number,
                        sel = if v.number == selected {
                            " selected"
                        } else {
                            ""
                        }
                    )
                })
                .collect::<String>()
        };
        let _ = write!(
            out,
            "<form method=\"get\" action=\"/dashboard/skills/{id}/diff\" class=\"diff-form\">\
             <label for=\"diff-from\">Compare</label> <select id=\"diff-from\" name=\"from\">{from}</select> \
             <label for=\"diff-to\">with</label> <select id=\"diff-to\" name=\"to\">{to}</select> \
             <button type=\"submit\">Show the diff</button></form>",
            from = options(before),
            to = options(newest),
        );
    }
    let _ = write!(
        out,
        "<details class=\"code\"><summary>View code (v{number})</summary><pre><code id=\"code-{id}\">{code}</code></pre></details>\
         </section>",
        number = shown.number,
        code = shown_text.text(&shown.code),
    );
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
    let now = mindrune_engine::avatars::ingest::now_millis();
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
        .blocking(move || -> Result<Option<String>, ApiError> {
            let Some(page) = read_page(store, owner_id, id, wanted, range)? else {
                return Ok(None);
            };
            let shown_text = Shown::new(&[]);
            let body = script_html(&page, &shown_text);
            Ok(Some(html::legacy_page(
                &shown_text.text(&file_name(&page.skill)),
                owner_nav(&app, &page.owner, &csrf),
                &body,
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
        .blocking(move || -> Result<Option<String>, ApiError> {
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
            let shown_text = Shown::new(&[]);
            let file = file_name(&skill);
            let now = mindrune_engine::avatars::ingest::now_millis();
            let mut body = String::new();
            let _ = write!(
                body,
                "<p class=\"small\"><a href=\"/dashboard/skills/{id}\">← {file}</a></p>\
                 <h1>v{from} → v{to}</h1><p class=\"lead\">score {old_score} → {new_score} · \
                 {old_runs} → {new_runs}</p>",
                file = shown_text.text(&file),
                old_score = points(old.score_at(now)),
                new_score = points(new.score_at(now)),
                old_runs = count(old.uses, "run", "runs"),
                new_runs = count(new.uses, "run", "runs"),
            );
            body.push_str(&version_diff_html(&skill, old, new, &shown_text).into_string());
            Ok(Some(html::legacy_page(
                &format!("{} v{from} → v{to}", shown_text.text(&file)),
                owner_nav(&app, &owner, &csrf),
                &body,
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
fn code_page(id: i64, number: i64, stem: &str, code: &str) -> String {
    let title = format!("{stem}.ts v{number}");
    let body = format!(
        "<p class=\"small\"><a href=\"/dashboard/skills/{id}\">← Back to {file}</a></p>\
         <h1 class=\"script-title\"><span class=\"file\">{file}</span> v{number}</h1>\
         <p><a href=\"/dashboard/skills/{id}/code?version={number}&amp;download=1\" download>Download</a> · \
         <a href=\"/dashboard/skills/{id}/code?version={number}&amp;raw=1\">Plain text</a></p>\
         <pre class=\"code-view\"><code>{code}</code></pre>",
        file = html::escape(&format!("{stem}.ts")),
        code = html::escape(code),
    );
    html::legacy_page(&title, html::Nav::None, &body)
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
