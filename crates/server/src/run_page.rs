//! Runs you can point at: one run's own page (`/dashboard/runs/{use_id}`, its permalink) with
//! its script and avatar, when, result, duration, gains, cause, output, the version it ran and
//! that version's diff against the one before it.
//!
//! As on every owner page, a run is read with the session's owner: another family's run id is
//! "not found". Outputs and causes are text, escaped and scrubbed, never run.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use mindrune_store::{Agent, Millis, ScriptRun, StoreError};

use crate::error::ApiError;
use crate::html::{self, Markup, Shown, ago, html, when};
use crate::pages::{OwnerPage, not_found, owner_nav, page_or_not_found, parse_id};
use crate::runs::{avatar_name, damage, duration, exact, gains, result_html};
use crate::scripts::{file_name, version_diff_html};
use crate::state::AppState;

pub(crate) fn routes() -> Router<AppState> {
    Router::new().route("/dashboard/runs/{use_id}", get(run_page))
}

fn run_html(
    id: i64,
    skill: &mindrune_store::Skill,
    run: &ScriptRun,
    versions: &[mindrune_store::Version],
    agents: &[Agent],
    now: Millis,
) -> Markup {
    let shown = Shown::new(&[]);
    let o = &run.outcome;
    let file = shown.plain(&file_name(skill));
    let sid = skill.id.0;
    let at = exact(o.at);
    html! {
        p class="small" { a href={ "/dashboard/skills/" (sid) "#runs-title" } { "← " (file) } }
        h1 class="run-title" { "Run of " span class="file" { (file) } " " (result_html(o.ok)) }
        ul class="facts run-facts" {
            li { "script " a href={ "/dashboard/skills/" (sid) } { (file) } }
            li { "avatar "
                @match (run.agent, avatar_name(agents, run.agent)) {
                    (Some(agent), Some(name)) => a href={ "/dashboard/avatars/" (agent.0) } { (shown.plain(name)) },
                    _ => "a deleted avatar",
                }
            }
            li { "at " time datetime={ (at.replace(' ', "T")) "Z" } title={ (at) " UTC" } { (at) " UTC" }
                " (" (ago(o.at, now)) ")" }
            li { "took " (duration(o.duration_ms)) }
            li { "gained " (shown.plain(&gains(o))) }
            li { "cost " (shown.plain(&damage(o))) }
            li class="version" { "ran v" (run.version) " · "
                a href={ "/dashboard/skills/" (sid) "/code?version=" (run.version) } { "its code" } }
            li { a href={ "/dashboard/runs/" (id) } rel="bookmark" class="permalink" { "permalink" } }
        }
        @if !o.ok {
            section class="card" aria-labelledby="cause-title" {
                h2 id="cause-title" { "Cause" }
                p class="cause" id="cause" {
                    code { (shown.plain(o.failure.as_deref().unwrap_or("no cause recorded"))) }
                }
            }
        }
        section class="card" aria-labelledby="output-title" {
            h2 id="output-title" { "Output" }
            @match run.output.as_deref().filter(|t| !t.trim().is_empty()) {
                Some(output) => {
                    p class="small muted" { "The output's tail, as recorded." }
                    pre class="run-output" id="output" { code { (shown.plain(output)) } }
                }
                None => p class="muted" { "No output was kept for this run." },
            }
        }
        section class="card" aria-labelledby="change-title" id="change" {
            (change_html(skill, run, versions, &shown))
        }
    }
}

/// What changed in the version the run ran: its diff against the one before it, or its code
/// when it was the first.
fn change_html(
    skill: &mindrune_store::Skill,
    run: &ScriptRun,
    versions: &[mindrune_store::Version],
    shown: &Shown,
) -> Markup {
    let sid = skill.id.0;
    let ran = versions.iter().find(|v| v.number == run.version);
    let before = versions
        .iter()
        .filter(|v| v.number < run.version)
        .max_by_key(|v| v.number);
    match (before, ran) {
        (Some(old), Some(new)) => html! {
            h2 id="change-title" { "What changed in v" (new.number) }
            p class="small" {
                a href={ "/dashboard/skills/" (sid) "/diff?from=" (old.number) "&to=" (new.number) } {
                    "v" (old.number) " → v" (new.number) " on its own page"
                }
            }
            (version_diff_html(skill, old, new, shown))
        },
        (None, Some(new)) => html! {
            h2 id="change-title" { "v" (new.number) ", the first version" }
            p class="muted" { "Nothing came before it to compare with." }
            details class="code" {
                summary { "View code (v" (new.number) ")" }
                pre { code { (shown.plain(&new.code)) } }
            }
        },
        _ => html! {
            h2 id="change-title" { "The version" }
            p class="muted" { "Its version is gone." }
        },
    }
}

async fn run_page(
    State(state): State<AppState>,
    OwnerPage(session): OwnerPage,
    Path(raw): Path<String>,
) -> Response {
    let Some(id) = parse_id(&raw) else {
        return not_found("run");
    };
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let page = state
        .blocking(move || -> Result<Option<Markup>, ApiError> {
            // Read with the session's owner: another family's run is not found.
            let Some((skill_id, run)) = store.script_run(owner_id, id)? else {
                return Ok(None);
            };
            let owner = store.owner(owner_id)?;
            let skill = match store.skill(owner_id, skill_id) {
                Ok(skill) => skill,
                Err(StoreError::NotFound(_)) => return Ok(None),
                Err(err) => return Err(err.into()),
            };
            let versions = store.versions(owner_id, skill.id)?;
            let agents = store.agents(owner_id)?;
            let now = mindrune_engine::now_millis();
            let body = run_html(id, &skill, &run, &versions, &agents, now);
            let shown = Shown::new(&[]);
            Ok(Some(html::page(
                &shown.plain(&format!(
                    "{} run {}",
                    file_name(&skill),
                    when(Some(run.outcome.at))
                )),
                owner_nav(&app, &owner, &csrf),
                body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "run")
}
