//! Runs you can point at: one run's own page (`/dashboard/runs/{use_id}`, its permalink) with
//! its script and avatar, when, result, duration, gains, cause, output, the version it ran and
//! that version's diff against the one before it.
//!
//! As on every owner page, a run is read with the session's owner: another family's run id is
//! "not found". Outputs and causes are text, escaped and scrubbed, never run.

use std::fmt::Write as _;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::get;
use mindrune_store::{Agent, Millis, ScriptRun, StoreError};

use crate::error::ApiError;
use crate::html::{self, Shown, ago, when};
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
) -> String {
    let shown_text = Shown::new(&[]);
    let o = &run.outcome;
    let file = shown_text.text(&file_name(skill));
    let sid = skill.id.0;
    let avatar = match (run.agent, avatar_name(agents, run.agent)) {
        (Some(agent), Some(name)) => format!(
            "<a href=\"/dashboard/avatars/{}\">{}</a>",
            agent.0,
            shown_text.text(name)
        ),
        _ => "a deleted avatar".into(),
    };
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"small\"><a href=\"/dashboard/skills/{sid}#runs-title\">← {file}</a></p>\
         <h1 class=\"run-title\">Run of <span class=\"file\">{file}</span> {result}</h1>\
         <ul class=\"facts run-facts\">\
         <li>script <a href=\"/dashboard/skills/{sid}\">{file}</a></li><li>avatar {avatar}</li>\
         <li>at <time datetime=\"{iso}Z\" title=\"{at} UTC\">{at} UTC</time> ({ago})</li>\
         <li>took {duration}</li><li>gained {gains}</li><li>cost {damage}</li>\
         <li class=\"version\">ran v{version} · <a href=\"/dashboard/skills/{sid}/code?version={version}\">its code</a></li>\
         <li><a href=\"/dashboard/runs/{id}\" rel=\"bookmark\" class=\"permalink\">permalink</a></li></ul>",
        result = result_html(o.ok),
        iso = exact(o.at).replace(' ', "T"),
        at = exact(o.at),
        ago = ago(o.at, now),
        duration = duration(o.duration_ms),
        gains = shown_text.text(&gains(o)),
        damage = shown_text.text(&damage(o)),
        version = run.version,
    );
    if !o.ok {
        let _ = write!(
            body,
            "<section class=\"card\" aria-labelledby=\"cause-title\"><h2 id=\"cause-title\">Cause</h2>\
             <p class=\"cause\" id=\"cause\"><code>{}</code></p></section>",
            shown_text.text(o.failure.as_deref().unwrap_or("no cause recorded"))
        );
    }
    body.push_str(
        "<section class=\"card\" aria-labelledby=\"output-title\"><h2 id=\"output-title\">Output</h2>",
    );
    match run.output.as_deref().filter(|t| !t.trim().is_empty()) {
        Some(output) => {
            let _ = write!(
                body,
                "<p class=\"small muted\">The output's tail, as recorded.</p>\
                 <pre class=\"run-output\" id=\"output\"><code>{}</code></pre>",
                shown_text.text(output)
            );
        }
        None => body.push_str("<p class=\"muted\">No output was kept for this run.</p>"),
    }
    body.push_str("</section>");
    body.push_str("<section class=\"card\" aria-labelledby=\"change-title\" id=\"change\">");
    let ran = versions.iter().find(|v| v.number == run.version);
    let before = versions
        .iter()
        .filter(|v| v.number < run.version)
        .max_by_key(|v| v.number);
    match (before, ran) {
        (Some(old), Some(new)) => {
            let _ = write!(
                body,
                "<h2 id=\"change-title\">What changed in v{to}</h2>\
                 <p class=\"small\"><a href=\"/dashboard/skills/{sid}/diff?from={from}&amp;to={to}\">v{from} → v{to} on its own page</a></p>",
                from = old.number,
                to = new.number,
            );
            body.push_str(&version_diff_html(skill, old, new, &shown_text).into_string());
        }
        (None, Some(new)) => {
            let _ = write!(
                body,
                "<h2 id=\"change-title\">v{n}, the first version</h2>\
                 <p class=\"muted\">Nothing came before it to compare with.</p>\
                 <details class=\"code\"><summary>View code (v{n})</summary><pre><code>{code}</code></pre></details>",
                n = new.number,
                code = shown_text.text(&new.code),
            );
        }
        _ => body.push_str(
            "<h2 id=\"change-title\">The version</h2><p class=\"muted\">Its version is gone.</p>",
        ),
    }
    body.push_str("</section>");
    body
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
        .blocking(move || -> Result<Option<String>, ApiError> {
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
            let now = mindrune_engine::avatars::ingest::now_millis();
            let body = run_html(id, &skill, &run, &versions, &agents, now);
            let shown_text = Shown::new(&[]);
            Ok(Some(html::legacy_page(
                &format!(
                    "{} run {}",
                    shown_text.text(&file_name(&skill)),
                    shown_text.text(&when(Some(run.outcome.at)))
                ),
                owner_nav(&app, &owner, &csrf),
                &body,
            )))
        })
        .await
        .and_then(|page| page);
    page_or_not_found(page, "run")
}
