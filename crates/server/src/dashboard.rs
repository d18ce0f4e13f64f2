//! The owner's dashboard: server-rendered pages of one owner's family.
//!
//! `/dashboard` shows the family (each avatar with its script counts) with the sharing bar and
//! the Eager family sharing switch; `/dashboard/avatars/{id}` an avatar's scripts beside its
//! stats; `/dashboard/skills/{id}/code` a script's code as plain text; `/dashboard/inbox` the
//! playbook cards of the owner's assistants (the `inbox` module). An owner logs in with the
//! owner's key and gets a session cookie; every form carries the session's CSRF token.
//!
//! Architecture invariant: every store call passes the session's owner, so another family's
//! avatar or skill id is "not found" (404), never shown. Ids in a URL are only ever looked up
//! together with that owner.
//!
//! Scripts are text here: shown in `<pre><code>` after escaping, served as `text/plain` with
//! `nosniff`, never run.

use std::fmt::Write as _;

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use mindrune_core::avatars::sharing::SharingBar;
use mindrune_engine::avatars::ingest::now_millis;
use mindrune_store::{
    Agent, AgentId, DAY_MILLIS, HeaderState, Owner, SkillEntry, SkillId, Version,
};
use serde::Deserialize;

use crate::auth::{OwnerSession, SESSION_COOKIE, new_secret, same_secret, secret_digest};
use crate::error::ApiError;
use crate::html::{self, LoginGuard, Nav, Shown, count, escape, points, when};
use crate::pages::{
    CarriesCsrf, CsrfForm, FORM_LIMIT, checked_form, error_page, form_error, not_found, owner_nav,
    page_session, parse_id,
};
use crate::scripts::{
    day_label, file_name, grouped, progress_line, score_history, sharing_way, shown_index, tag,
};
use crate::state::AppState;
use crate::wire::AvatarStats;

/// The login form's CSRF cookie, sent only to the login page.
const LOGIN_GUARD: LoginGuard = LoginGuard {
    cookie_name: "mindrune_login",
    path: "/dashboard/login",
};

/// Owner names and keys longer than this are not ours; they are refused without a look-up.
const MAX_NAME_CHARS: usize = 200;
const MAX_KEY_CHARS: usize = 1024;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(root))
        .route("/dashboard", get(family_page))
        .route("/dashboard/login", get(login_page).post(login))
        .route("/dashboard/logout", post(logout))
        .route("/dashboard/eager", post(eager))
        .route("/dashboard/avatars/{agent_id}", get(avatar_page))
        .merge(html::static_routes())
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
}

async fn root() -> Redirect {
    Redirect::to("/dashboard")
}

// -------------------------------------------------------------------------------------------
// Errors as pages
// -------------------------------------------------------------------------------------------

// -------------------------------------------------------------------------------------------
// Login and logout
// -------------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct LoginForm {
    #[serde(default)]
    name: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    csrf: String,
}

fn login_body(token: &str, name: &str, problem: Option<&str>) -> String {
    let problem = problem
        .map(|p| format!("<p class=\"error\" role=\"alert\">{}</p>", escape(p)))
        .unwrap_or_default();
    format!(
        "<section class=\"card narrow\">\
         <h1>Log in to your dashboard</h1>\
         <p class=\"muted\">Your avatars' scripts, skills and stats. Only you see them.</p>\
         {problem}\
         <form method=\"post\" action=\"/dashboard/login\">\
         <input type=\"hidden\" name=\"csrf\" value=\"{token}\">\
         <label for=\"name\">Owner name</label>\
         <input type=\"text\" id=\"name\" name=\"name\" value=\"{name}\" autocomplete=\"username\" \
         autocapitalize=\"none\" spellcheck=\"false\" required maxlength=\"{MAX_NAME_CHARS}\">\
         <label for=\"key\">Owner key</label>\
         <input type=\"password\" id=\"key\" name=\"key\" autocomplete=\"current-password\" required \
         maxlength=\"{MAX_KEY_CHARS}\">\
         <button type=\"submit\" class=\"primary\">Log in</button>\
         </form>\
         <p class=\"small muted\">Your owner key was printed when the account was made \
         (<code>mindrune owner add</code>).</p>\
         </section>",
        token = escape(token),
        name = escape(name),
    )
}

fn login_response(
    status: StatusCode,
    headers: &HeaderMap,
    state: &AppState,
    name: &str,
    problem: Option<&str>,
) -> Response {
    let (token, set_cookie) = LOGIN_GUARD.token(headers, state.config().cookies_secure());
    let mut response = html::respond(
        status,
        html::page("Log in", Nav::None, &login_body(&token, name, problem)),
    );
    html::set_cookies(&mut response, set_cookie);
    response
}

async fn login_page(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    headers: HeaderMap,
) -> Response {
    if session.is_ok() {
        return Redirect::to("/dashboard").into_response();
    }
    login_response(StatusCode::OK, &headers, &state, "", None)
}

async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return form_error(&rejection),
    };
    if !LOGIN_GUARD.check(&headers, &form.csrf) {
        return html::error_page(
            StatusCode::FORBIDDEN,
            "The login form's security token is missing or out of date. Nothing was changed; open the login page again and log in from there.",
            ("/dashboard/login", "Open the login page"),
        );
    }
    // One message for a wrong name and a wrong key: the page must not tell which was wrong.
    const WRONG: &str =
        "That owner name and key do not match an account. Check both and try again.";
    let name = form.name.trim().to_string();
    // The name is shown again on a failed login; a key pasted into it by mistake is not.
    let shown_name = Shown::new(&[form.key.as_str()]).plain(&name);
    if name.is_empty()
        || form.key.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || form.key.chars().count() > MAX_KEY_CHARS
    {
        return login_response(
            StatusCode::UNAUTHORIZED,
            &headers,
            &state,
            &shown_name,
            Some(WRONG),
        );
    }
    let store = state.store();
    let lookup = name.clone();
    let owner = match state
        .blocking(move || store.owner_by_name(&lookup))
        .await
        .and_then(|found| found.map_err(ApiError::from))
    {
        Ok(owner) => owner,
        Err(err) => return error_page(&err),
    };
    // The key is compared in constant time, and an unknown name costs the same comparison,
    // so neither the answer nor its timing tells an unknown name from a wrong key.
    let matched = match &owner {
        Some(owner) => same_secret(&form.key, &owner.api_key),
        None => {
            let _ = same_secret(&form.key, "mr_no_such_owner_key");
            false
        }
    };
    let Some(owner) = owner.filter(|_| matched) else {
        return login_response(
            StatusCode::UNAUTHORIZED,
            &headers,
            &state,
            &shown_name,
            Some(WRONG),
        );
    };
    let secret = new_secret("mr_session_");
    let csrf = new_secret("mr_csrf_");
    let length = state.config().session_length();
    let now = now_millis();
    let expires = now.saturating_add(i64::try_from(length.as_millis()).unwrap_or(i64::MAX));
    let digest = secret_digest(&secret);
    let created = state
        .blocking(move || store.create_session(owner.id, &digest, &csrf, now, expires))
        .await
        .and_then(|done| done.map_err(ApiError::from));
    if let Err(err) = created {
        return error_page(&err);
    }
    let secure = state.config().cookies_secure();
    let mut response = Redirect::to("/dashboard").into_response();
    let cookies = [
        html::cookie(SESSION_COOKIE, &secret, "/", length.as_secs(), secure),
        LOGIN_GUARD.clear(secure),
    ];
    html::set_cookies(&mut response, cookies);
    response
}

async fn logout(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let (session, _) = match checked_form(session, form) {
        Ok(checked) => checked,
        Err(response) => return *response,
    };
    let store = state.store();
    let (owner, digest) = (session.owner, session.session_digest.clone());
    let ended = state
        .blocking(move || store.end_session(owner, &digest))
        .await
        .and_then(|done| done.map_err(ApiError::from));
    if let Err(err) = ended {
        return error_page(&err);
    }
    let mut response = Redirect::to("/dashboard/login").into_response();
    html::set_cookies(
        &mut response,
        [html::cookie(
            SESSION_COOKIE,
            "",
            "/",
            0,
            state.config().cookies_secure(),
        )],
    );
    response
}

// -------------------------------------------------------------------------------------------
// Eager family sharing
// -------------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct EagerForm {
    #[serde(default)]
    csrf: String,
    /// `on` when the checkbox is ticked; a checkbox left unticked sends nothing.
    #[serde(default)]
    eager: Option<String>,
    /// The page the switch was on, to go back to.
    #[serde(default)]
    back: Option<String>,
}

/// Where the switch may send the owner back to: the family page or an avatar page, nothing
/// else (a form field must not become an open redirect).
fn back_to(back: Option<&str>) -> String {
    match back {
        Some(path)
            if path.strip_prefix("/dashboard/avatars/").is_some_and(|id| {
                !id.is_empty() && id.len() <= 18 && id.bytes().all(|b| b.is_ascii_digit())
            }) =>
        {
            path.to_string()
        }
        _ => "/dashboard".into(),
    }
}

impl CarriesCsrf for EagerForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

async fn eager(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    form: Result<Form<EagerForm>, FormRejection>,
) -> Response {
    let (session, form) = match checked_form(session, form) {
        Ok(checked) => checked,
        Err(response) => return *response,
    };
    let eager = match form.eager.as_deref() {
        None | Some("off") => false,
        Some("on") => true,
        Some(other) => {
            return html::error_page(
                StatusCode::BAD_REQUEST,
                &format!(
                    "`{other}` is not a setting of Eager family sharing (it is on or off). Nothing was changed."
                ),
                ("/dashboard", "Back to your family"),
            );
        }
    };
    let store = state.store();
    let owner = session.owner;
    let saved = state
        .blocking(move || store.set_eager_sharing(owner, eager))
        .await
        .and_then(|done| done.map_err(ApiError::from));
    if let Err(err) = saved {
        return error_page(&err);
    }
    Redirect::to(&back_to(form.back.as_deref())).into_response()
}

// -------------------------------------------------------------------------------------------
// What a script entry shows
// -------------------------------------------------------------------------------------------

/// One entry of an avatar's page, with everything it shows.
struct ScriptView {
    entry: SkillEntry,
    /// Newest first.
    versions: Vec<Version>,
    shown: usize,
    /// The latest failed run, when the script has one: its version, time and cause.
    last_failure: Option<mindrune_store::FailedRun>,
    /// Its latest runs, newest first (at most [`SPARK_RUNS`]), for its sparkline and success
    /// rate.
    recent: Vec<mindrune_store::ScriptRun>,
}

/// How many of a script's latest runs its sparkline and success rate on the avatar page cover.
const SPARK_RUNS: usize = 30;

impl ScriptView {
    fn shown(&self) -> &Version {
        &self.versions[self.shown]
    }
}

fn script_html(out: &mut String, view: &ScriptView, bar: SharingBar, shown_text: &Shown) {
    let skill = &view.entry.skill;
    let version = view.shown();
    let id = skill.id.0;
    let file = file_name(skill);
    // A headed script that has not cleared the bar is "not shared yet", the spec's words and
    // the CLI's (`mindrune skills`, `skill show`, the wrap-up); a file that is gone is private.
    let tag = tag(skill, view.entry.family);
    let _ = write!(
        out,
        "<li class=\"card script{gone}\" id=\"skill-{id}\"><h3><a class=\"open-script\" href=\"/dashboard/skills/{id}\"><span class=\"file\">{file}</span></a>{tag}</h3>\
         <ul class=\"facts\"><li class=\"version\">v{number} · {versions}</li>\
         <li class=\"score\">score {score}</li><li class=\"runs\">{runs}</li>",
        gone = if skill.deleted_at.is_some() {
            " gone"
        } else {
            ""
        },
        file = shown_text.text(&file),
        number = version.number,
        versions = count(view.versions.len() as i64, "version", "versions"),
        score = points(version.score),
        runs = count(version.uses, "run", "runs"),
    );
    if view.entry.total_runs > version.uses {
        let _ = write!(
            out,
            "<li>{} in all versions</li>",
            count(view.entry.total_runs, "run", "runs")
        );
    }
    if !view.recent.is_empty() {
        let ok = view.recent.iter().filter(|r| r.outcome.ok).count();
        let history = score_history(skill, &view.versions, &view.recent);
        let values: Vec<f64> = history.iter().map(|p| p.value).collect();
        let _ = write!(
            out,
            "<li class=\"trend\">{spark}</li><li class=\"success-rate\">{rate}% ok of the last {n}</li>",
            spark = crate::charts::sparkline(&format!("{file}: score"), &values, 1000.0),
            rate = (ok as f64 * 100.0 / view.recent.len() as f64).round(),
            n = count(view.recent.len() as i64, "run", "runs"),
        );
    }
    out.push_str("</ul>");
    if let Some(gone) = skill.deleted_at {
        let _ = write!(
            out,
            "<p class=\"gone small\">Its file is gone since {} UTC: private now; its history stays.</p>",
            shown_text.text(&when(Some(gone)))
        );
    }
    match (view.entry.family, skill.header.state) {
        (true, _) => {
            // A newer draft of a shared skill is not what siblings get until it is shared too.
            if let Some(current) = view
                .versions
                .iter()
                .find(|v| Some(v.id) == skill.current_version)
                .filter(|v| v.number > version.number && v.shared_at.is_none())
            {
                let _ = write!(
                    out,
                    "<p class=\"progress\">Newer draft v{}, {}</p>",
                    current.number,
                    shown_text.text(&progress_line(&file, current.uses, current.score, bar))
                );
            }
        }
        (false, HeaderState::Skill) if skill.deleted_at.is_some() => {}
        (false, HeaderState::Skill) => {
            let _ = write!(
                out,
                "<p class=\"progress\">{}</p>",
                shown_text.text(&progress_line(&file, version.uses, version.score, bar))
            );
        }
        (false, HeaderState::Private) => {
            out.push_str(
                "<p class=\"small muted\">Private: <code>@private</code> in its header.</p>",
            );
        }
        (false, HeaderState::None) => {
            // A proven script without a header: the one step to sharing it.
            if let Some(way) =
                sharing_way(skill, version, false, bar).filter(|_| skill.deleted_at.is_none())
            {
                let _ = write!(out, "<p class=\"share-hint\">{}</p>", shown_text.text(&way));
            }
        }
    }
    if let Some(goal) = skill
        .header
        .goal
        .as_deref()
        .filter(|g| !g.trim().is_empty())
    {
        let _ = write!(
            out,
            "<p class=\"goal\"><span class=\"muted\">Goal:</span> {}</p>",
            shown_text.text(goal)
        );
    }
    if let Some(failed) = &view.last_failure {
        let _ = write!(
            out,
            "<p class=\"failure small\"><span class=\"muted\">Last failure (v{number}, {when}):</span> {cause}</p>",
            number = failed.version,
            when = shown_text.text(&when(Some(failed.at))),
            cause = shown_text.text(failed.failure.as_deref().unwrap_or("no cause recorded")),
        );
    }
    // View (a disclosure: it works without JS), Copy (needs JS, so hidden until the script
    // shows it) and Download, in one row; opened, the code takes the row's whole width and
    // Copy and Download move below it.
    let _ = write!(
        out,
        "<div class=\"actions\">\
         <details class=\"code\"><summary>View code</summary>\
         <p class=\"small muted\">v{number}, as recorded (without its <code>@skill</code> header).</p>\
         <pre><code id=\"code-{id}\">{code}</code></pre></details>\
         <button type=\"button\" class=\"copy\" data-copy=\"code-{id}\" hidden>Copy</button>\
         <a class=\"button download\" href=\"/dashboard/skills/{id}/code?download=1\" download>Download</a>\
         <a class=\"button open\" href=\"/dashboard/skills/{id}\">Runs and versions</a>\
         </div>",
        number = version.number,
        code = shown_text.text(&version.code),
    );
    versions_html(out, view, shown_text);
    out.push_str("</li>");
}

fn versions_html(out: &mut String, view: &ScriptView, shown_text: &Shown) {
    let skill = &view.entry.skill;
    let shown = view.shown();
    let _ = write!(
        out,
        "<details class=\"versions\"><summary>Versions ({})</summary>",
        view.versions.len()
    );
    if let Some(best) = mindrune_engine::display::best_other(&view.versions, shown) {
        let (number, score) = (best.number, best.score);
        let _ = write!(
            out,
            "<p class=\"best\">best: v{number}, {}</p>",
            points(score)
        );
    }
    out.push_str(
        "<div class=\"table-scroll\"><table><thead><tr><th scope=\"col\">Version</th>\
         <th scope=\"col\" class=\"num\">Runs</th><th scope=\"col\" class=\"num\">OK</th>\
         <th scope=\"col\" class=\"num\">Score</th><th scope=\"col\">Last used (UTC)</th>\
         <th scope=\"col\">Shared</th><th scope=\"col\">Code</th></tr></thead><tbody>",
    );
    for v in &view.versions {
        let mut notes = Vec::new();
        if Some(v.id) == skill.current_version {
            notes.push("the file now");
        }
        if v.id == shown.id && view.entry.family {
            notes.push("siblings get it");
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"muted small\">({})</span>", notes.join(", "))
        };
        let _ = write!(
            out,
            "<tr><td>v{number}{notes}</td><td class=\"num\">{runs}</td><td class=\"num\">{ok}</td>\
             <td class=\"num\">{score}</td><td>{last}</td><td>{shared}</td>\
             <td><a href=\"/dashboard/skills/{id}/code?version={number}\">view</a></td></tr>",
            number = v.number,
            runs = v.uses,
            ok = v.ok,
            score = points(v.score),
            last = shown_text.text(&when(v.last_used_at)),
            shared = if v.shared_at.is_some() { "yes" } else { "–" },
            id = skill.id.0,
        );
    }
    out.push_str("</tbody></table></div></details>");
}

/// The sharing bar and the Eager family sharing switch, together, in one compact line at the
/// foot of the family and avatar pages: flipping the switch moves the bar and every progress
/// line of the page at once.
fn sharing_html(out: &mut String, owner: &Owner, csrf: &str, back: &str) {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let sentence = if owner.eager_sharing {
        format!(
            "Eager family sharing is on: a script with an <code>@skill</code> header is shared after {} of its current version and a score of {}.",
            count(bar.runs, "run", "runs"),
            points(bar.score)
        )
    } else {
        format!(
            "A script with an <code>@skill</code> header is shared after {} of its current version and a score of {}.",
            count(bar.runs, "run", "runs"),
            points(bar.score)
        )
    };
    let _ = write!(
        out,
        "<aside class=\"sharing-line\" aria-label=\"Sharing bar\">\
         <p class=\"bar\" id=\"sharing-bar\"><strong>Sharing bar:</strong> {sentence}</p>\
         <form method=\"post\" action=\"/dashboard/eager\" class=\"switch\" data-autosubmit>\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
         <input type=\"hidden\" name=\"back\" value=\"{back}\">\
         <label title=\"{help}\"><input type=\"checkbox\" name=\"eager\" value=\"on\" id=\"eager\"{checked}> Eager family sharing</label>\
         <button type=\"submit\" class=\"save\">Save</button></form></aside>",
        csrf = escape(csrf),
        back = escape(back),
        checked = if owner.eager_sharing { " checked" } else { "" },
        help = if owner.eager_sharing {
            "Switched off, the bar is 5 runs and a score of 600 again; what is shared stays shared."
        } else {
            "Eager family sharing lowers the bar to 3 runs and a score of 500. Sharing stays each avatar's choice: only scripts with the header are shared."
        },
    );
}

// -------------------------------------------------------------------------------------------
// The family page
// -------------------------------------------------------------------------------------------

/// The cookie that remembers when the owner last looked at the family page, so the next visit
/// can say what changed since (a time in milliseconds; nothing secret).
const SEEN_COOKIE: &str = "mindrune_seen";

/// How far back the family's runs chart reaches.
const CHART_DAYS: i64 = 30;

/// What one avatar's tile shows.
struct Tile<'a> {
    agent: &'a Agent,
    stats: Option<AvatarStats>,
    runs_today: i64,
    failed_today: i64,
    /// Its best-scoring script (file name, points) and its newest (file name).
    best: Option<(String, i64)>,
    newest: Option<String>,
    last_ran: Option<i64>,
    scripts: usize,
    family: usize,
}

/// What changed in the family since the owner's last visit.
#[derive(Default)]
struct Changes {
    shared: Vec<mindrune_store::SharingChange>,
    unshared: Vec<mindrune_store::SharingChange>,
    /// Scripts whose latest run failed since then: (skill, `<avatar>/<file>`, cause).
    failing: Vec<(SkillId, String, Option<String>)>,
}

/// Everything the family page shows.
struct FamilyView<'a> {
    owner: &'a Owner,
    tiles: Vec<Tile<'a>>,
    entries: &'a [SkillEntry],
    days: Vec<crate::charts::Bar>,
    /// `None` on a first visit (no cookie yet).
    since: Option<i64>,
    changes: Changes,
}

fn family_html(view: &FamilyView<'_>, csrf: &str, shown_text: &Shown) -> String {
    let mut body = String::new();
    let family_total = view.entries.iter().filter(|e| e.family).count();
    let _ = write!(
        body,
        "<h1>Your family</h1><p class=\"lead\">{} · {} · {}</p>",
        count(view.tiles.len() as i64, "avatar", "avatars"),
        count(view.entries.len() as i64, "script", "scripts"),
        count(family_total as i64, "family skill", "family skills"),
    );
    if view.tiles.is_empty() {
        body.push_str(
            "<section class=\"card\"><h2>No avatars yet</h2><p>Add one with \
             <code>mindrune agent add NAME --owner OWNER --workspace DIR</code>, or set up an \
             rs-sdk checkout with <code>mindrune setup</code>. Its scripts show here after their \
             first recorded run.</p></section>",
        );
    } else {
        changes_html(&mut body, view, shown_text);
        body.push_str("<h2>Avatars</h2><ul class=\"avatars\">");
        for tile in &view.tiles {
            tile_html(&mut body, tile, shown_text);
        }
        body.push_str("</ul>");
        body.push_str("<section class=\"card\" aria-labelledby=\"runs-title\"><h2 id=\"runs-title\">Runs per day</h2>");
        body.push_str(&crate::charts::runs_bars(
            "family-runs",
            &format!("The family's runs per day, last {CHART_DAYS} days (UTC)"),
            &view.days,
        ));
        body.push_str("</section>");
    }
    let orphans = view
        .entries
        .iter()
        .filter(|e| e.skill.agent.is_none())
        .count();
    if orphans > 0 {
        let _ = write!(
            body,
            "<p class=\"small muted\">{} of deleted avatars stay with the family.</p>",
            count(orphans as i64, "skill", "skills")
        );
    }
    sharing_html(&mut body, view.owner, csrf, "/dashboard");
    body
}

fn tile_html(out: &mut String, tile: &Tile<'_>, shown_text: &Shown) {
    let _ = write!(
        out,
        "<li><a class=\"card tile\" href=\"/dashboard/avatars/{id}\" data-avatar=\"{name}\">\
         <span class=\"name\">{name}</span><dl class=\"tile-facts\">",
        id = tile.agent.id.0,
        name = shown_text.text(&tile.agent.name),
    );
    let mut fact = |label: &str, value: String, class: &str| {
        let _ = write!(
            out,
            "<div class=\"{class}\"><dt>{label}</dt><dd>{value}</dd></div>"
        );
    };
    let stats = tile.stats.as_ref();
    fact(
        "Total level",
        stats
            .filter(|s| !s.levels.is_empty())
            .map_or("–".into(), |s| {
                grouped(s.levels.values().map(|l| i64::from(*l)).sum())
            }),
        "total-level",
    );
    fact(
        "Wealth",
        stats
            .and_then(|s| s.wealth)
            .map_or("–".into(), |coins| format!("{} coins", grouped(coins))),
        "wealth",
    );
    fact(
        "Today",
        format!(
            "{}{}",
            count(tile.runs_today, "run", "runs"),
            if tile.failed_today > 0 {
                format!(
                    ", <span class=\"failed-count\">{} failed</span>",
                    tile.failed_today
                )
            } else {
                String::new()
            }
        ),
        "today",
    );
    fact(
        "Best",
        tile.best.as_ref().map_or("–".into(), |(file, score)| {
            format!(
                "<span class=\"file\">{}</span> ({score})",
                shown_text.text(file)
            )
        }),
        "best",
    );
    fact(
        "Newest",
        tile.newest.as_ref().map_or("–".into(), |file| {
            format!("<span class=\"file\">{}</span>", shown_text.text(file))
        }),
        "newest",
    );
    fact(
        "Last ran",
        shown_text.text(&when(tile.last_ran)),
        "last-ran",
    );
    let _ = write!(
        out,
        "</dl><p class=\"counts small muted\">{} · {} family</p></a></li>",
        count(tile.scripts as i64, "script", "scripts"),
        tile.family,
    );
}

fn changes_html(out: &mut String, view: &FamilyView<'_>, shown_text: &Shown) {
    out.push_str(
        "<section class=\"card changes\" aria-labelledby=\"changes-title\"><h2 id=\"changes-title\">Since your last visit</h2>",
    );
    let Some(since) = view.since else {
        out.push_str(
            "<p class=\"muted\">Welcome. From your next visit on, this says what your avatars \
             newly shared, what newly fails and what stopped being shared.</p></section>",
        );
        return;
    };
    let _ = write!(
        out,
        "<p class=\"small muted\">Since {} UTC.</p>",
        shown_text.text(&when(Some(since)))
    );
    let c = &view.changes;
    if c.shared.is_empty() && c.unshared.is_empty() && c.failing.is_empty() {
        out.push_str("<p class=\"muted\">Nothing new: no script was shared, un-shared or started failing.</p></section>");
        return;
    }
    out.push_str("<ul class=\"change-list\">");
    for change in &c.shared {
        let _ = write!(
            out,
            "<li class=\"newly-shared\"><span class=\"badge\" aria-hidden=\"true\">👪</span> \
             <a href=\"/dashboard/skills/{id}\">{label}</a>{version} is a family skill now: {reason}</li>",
            id = change.skill.0,
            label = shown_text.text(&change.label),
            version = change.version.map(|v| format!(" v{v}")).unwrap_or_default(),
            reason = shown_text.text(&change.reason),
        );
    }
    for (skill, label, cause) in &c.failing {
        let _ = write!(
            out,
            "<li class=\"newly-failing\"><span class=\"badge\" aria-hidden=\"true\">⚠️</span> \
             <a href=\"/dashboard/skills/{id}\">{label}</a> failed on its latest run: {cause}</li>",
            id = skill.0,
            label = shown_text.text(label),
            cause = shown_text.text(cause.as_deref().unwrap_or("no cause recorded")),
        );
    }
    for change in &c.unshared {
        let _ = write!(
            out,
            "<li class=\"un-shared\"><span class=\"badge\" aria-hidden=\"true\">🔒</span> \
             <a href=\"/dashboard/skills/{id}\">{label}</a> is no longer shared: {reason}</li>",
            id = change.skill.0,
            label = shown_text.text(&change.label),
            reason = shown_text.text(&change.reason),
        );
    }
    out.push_str("</ul></section>");
}

/// Reads everything the family page shows; `since` is the owner's last visit.
fn family_view<'a>(
    store: &dyn mindrune_store::Store,
    owner: &'a Owner,
    agents: &'a [Agent],
    entries: &'a [SkillEntry],
    since: Option<i64>,
    now: i64,
) -> Result<FamilyView<'a>, ApiError> {
    let today = now.div_euclid(DAY_MILLIS);
    let first_day = today - (CHART_DAYS - 1);
    let per_day = store.runs_per_day(owner.id, first_day * DAY_MILLIS)?;
    let days = (first_day..=today)
        .map(|day| {
            let (ok, failed) = per_day
                .iter()
                .filter(|d| d.day == day)
                .fold((0, 0), |(ok, failed), d| (ok + d.ok, failed + d.failed));
            crate::charts::Bar {
                label: day_label(day),
                ok: u64::try_from(ok).unwrap_or(0),
                failed: u64::try_from(failed).unwrap_or(0),
            }
        })
        .collect();
    let mut changes = Changes::default();
    let mut tiles = Vec::with_capacity(agents.len());
    for agent in agents {
        let own: Vec<&SkillEntry> = entries
            .iter()
            .filter(|e| e.skill.agent == Some(agent.id))
            .collect();
        let (runs_today, failed_today) = per_day
            .iter()
            .filter(|d| d.day == today && d.agent == Some(agent.id))
            .fold((0, 0), |(all, failed), d| {
                (all + d.ok + d.failed, failed + d.failed)
            });
        let mut last_ran = None;
        for entry in &own {
            let Some(latest) = store
                .script_runs(owner.id, entry.skill.id, 1)?
                .into_iter()
                .next()
            else {
                continue;
            };
            last_ran = last_ran.max(Some(latest.outcome.at));
            if let Some(since) = since
                && !latest.outcome.ok
                && latest.outcome.at >= since
            {
                changes.failing.push((
                    entry.skill.id,
                    format!("{}/{}", agent.name, file_name(&entry.skill)),
                    latest.outcome.failure,
                ));
            }
        }
        if let Some(since) = since {
            for change in store.sharing_changes(owner.id, agent.id, since)? {
                match change.kind {
                    mindrune_store::SharingKind::Shared => changes.shared.push(change),
                    mindrune_store::SharingKind::Unshared => changes.unshared.push(change),
                }
            }
        }
        let stats = store
            .avatar_state(owner.id, agent.id)?
            .and_then(|state| serde_json::from_str::<AvatarStats>(&state.state).ok());
        tiles.push(Tile {
            agent,
            stats,
            runs_today,
            failed_today,
            // Entries come best score first.
            best: own
                .first()
                .map(|e| (file_name(&e.skill), points(e.version.score))),
            newest: own
                .iter()
                .max_by_key(|e| (e.skill.created_at, e.skill.id.0))
                .map(|e| file_name(&e.skill)),
            last_ran,
            scripts: own.len(),
            family: own.iter().filter(|e| e.family).count(),
        });
    }
    Ok(FamilyView {
        owner,
        tiles,
        entries,
        days,
        since,
        changes,
    })
}

async fn family_page(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    headers: HeaderMap,
) -> Response {
    let session = match page_session(session) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    let since = html::cookie_value(&headers, SEEN_COOKIE).and_then(|v| v.parse::<i64>().ok());
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let now = now_millis();
    let page = state
        .blocking(move || -> Result<String, ApiError> {
            let owner = store.owner(owner_id)?;
            let agents = store.agents(owner_id)?;
            let entries = store.skills(owner_id, None)?;
            let view = family_view(store, &owner, &agents, &entries, since, now)?;
            let shown_text = Shown::new(&[owner.api_key.as_str()]);
            let body = family_html(&view, &csrf, &shown_text);
            Ok(html::page(
                "Your family",
                owner_nav(&app, &owner, &csrf),
                &body,
            ))
        })
        .await
        .and_then(|page| page);
    match page {
        Ok(page) => {
            let mut response = html::respond(StatusCode::OK, page);
            // A year: the next visit, however late, still knows what it has not seen.
            html::set_cookies(
                &mut response,
                [html::cookie(
                    SEEN_COOKIE,
                    &now.to_string(),
                    "/dashboard",
                    365 * 24 * 3600,
                    state.config().cookies_secure(),
                )],
            );
            response
        }
        Err(err) => error_page(&err),
    }
}

// -------------------------------------------------------------------------------------------
// An avatar's page
// -------------------------------------------------------------------------------------------

fn stats_html(out: &mut String, state: Option<&mindrune_store::AvatarState>, shown_text: &Shown) {
    out.push_str(
        "<aside class=\"card stats\" aria-labelledby=\"stats-title\"><h2 id=\"stats-title\">Stats</h2>",
    );
    let Some(state) = state else {
        out.push_str(
            "<p class=\"muted\">No state reported yet: its runner sends the avatar's levels, \
             quests, wealth, gear and bank as it plays.</p></aside>",
        );
        return;
    };
    let stats: AvatarStats = match serde_json::from_str(&state.state) {
        Ok(stats) => stats,
        Err(_) => {
            out.push_str(
                "<p class=\"muted\">The last reported state could not be read; the runner's next report replaces it.</p></aside>",
            );
            return;
        }
    };
    let _ = write!(
        out,
        "<p class=\"small muted\">As its runner last reported it, {} UTC.</p>",
        shown_text.text(&when(Some(state.reported_at)))
    );
    // Levels, as the game's skills panel shows them.
    if stats.levels.is_empty() {
        out.push_str("<h3>Skills</h3><p class=\"muted\">None reported.</p>");
    } else {
        let total: u64 = stats.levels.values().map(|l| u64::from(*l)).sum();
        let _ = write!(
            out,
            "<h3>Skills <span class=\"muted small\">Total level {total}</span></h3><ul class=\"skills-grid\" aria-label=\"Levels\">"
        );
        for (skill, level) in &stats.levels {
            let _ = write!(
                out,
                "<li><span class=\"skill-name\">{}</span><span class=\"level\">{level}</span></li>",
                shown_text.text(skill)
            );
        }
        out.push_str("</ul>");
    }
    // Quests.
    let _ = write!(out, "<h3>Quests ({})</h3>", stats.quests.len());
    if stats.quests.is_empty() {
        out.push_str("<p class=\"muted\">None done yet.</p>");
    } else {
        out.push_str("<ul class=\"quests\">");
        for quest in &stats.quests {
            let _ = write!(out, "<li>{}</li>", shown_text.text(quest));
        }
        out.push_str("</ul>");
    }
    // Wealth.
    out.push_str("<h3>Wealth</h3>");
    match stats.wealth {
        Some(coins) => {
            let _ = write!(
                out,
                "<p class=\"wealth\">{} coins <span class=\"muted small\">(carried and banked)</span></p>",
                grouped(coins)
            );
        }
        None => out.push_str("<p class=\"muted\">Not reported.</p>"),
    }
    // Gear.
    out.push_str("<h3>Gear</h3>");
    if stats.gear.is_empty() {
        out.push_str("<p class=\"muted\">Nothing equipped.</p>");
    } else {
        out.push_str("<ul class=\"gear\">");
        for item in &stats.gear {
            let _ = write!(out, "<li>{}</li>", shown_text.text(item));
        }
        out.push_str("</ul>");
    }
    // Bank.
    out.push_str("<h3>Bank</h3>");
    if stats.bank.is_empty() {
        out.push_str("<p class=\"muted\">Empty, or not seen yet.</p>");
    } else {
        out.push_str(
            "<div class=\"table-scroll\"><table class=\"bank\"><thead><tr><th scope=\"col\">Item</th>\
             <th scope=\"col\" class=\"num\">Count</th></tr></thead><tbody>",
        );
        for (item, n) in &stats.bank {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td></tr>",
                shown_text.text(item),
                grouped(*n)
            );
        }
        out.push_str("</tbody></table></div>");
    }
    out.push_str("</aside>");
}

fn avatar_html(
    owner: &Owner,
    agent: &Agent,
    scripts: &[ScriptView],
    state: Option<&mindrune_store::AvatarState>,
    csrf: &str,
    shown_text: &Shown,
) -> String {
    let bar = SharingBar::for_family(owner.eager_sharing);
    let family = scripts.iter().filter(|s| s.entry.family).count();
    let mut body = String::new();
    let _ = write!(
        body,
        "<p class=\"small\"><a href=\"/dashboard\">← Your family</a></p>\
         <h1>{name}</h1><p class=\"lead\">{scripts} · {family} family</p>",
        name = shown_text.text(&agent.name),
        scripts = count(scripts.len() as i64, "script", "scripts"),
    );
    body.push_str("<div class=\"avatar-layout\"><section aria-labelledby=\"scripts-title\"><h2 id=\"scripts-title\">Scripts</h2>");
    if scripts.is_empty() {
        let _ = write!(
            body,
            "<p class=\"card muted\">No scripts yet. A script in <code>bots/{}/</code> shows here after its first recorded run.</p>",
            shown_text.text(&agent.name)
        );
    } else {
        body.push_str("<ul class=\"scripts\">");
        for view in scripts {
            script_html(&mut body, view, bar, shown_text);
        }
        body.push_str("</ul>");
    }
    body.push_str("</section>");
    stats_html(&mut body, state, shown_text);
    body.push_str("</div>");
    sharing_html(
        &mut body,
        owner,
        csrf,
        &format!("/dashboard/avatars/{}", agent.id.0),
    );
    body
}

async fn avatar_page(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    Path(raw): Path<String>,
) -> Response {
    let session = match page_session(session) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    let Some(id) = parse_id(&raw) else {
        return not_found("avatar");
    };
    let store = state.store();
    let owner_id = session.owner;
    let csrf = session.csrf_token.clone();
    let app = state.clone();
    let page = state
        .blocking(move || -> Result<Option<String>, ApiError> {
            let owner = store.owner(owner_id)?;
            // The avatar is looked for among the session owner's own: another family's id is
            // simply not there.
            let Some(agent) = store
                .agents(owner_id)?
                .into_iter()
                .find(|a| a.id == AgentId(id))
            else {
                return Ok(None);
            };
            let bar = SharingBar::for_family(owner.eager_sharing);
            let mut scripts = Vec::new();
            let mut entries = store.skills(owner_id, Some(agent.id))?;
            entries.sort_by(|a, b| {
                b.family
                    .cmp(&a.family)
                    .then_with(|| a.skill.name.cmp(&b.skill.name))
            });
            let now = mindrune_engine::avatars::ingest::now_millis();
            for entry in entries {
                let mut versions = store.versions(owner_id, entry.skill.id)?;
                let Some(shown) = shown_index(&entry.skill, &versions, entry.family, bar) else {
                    continue;
                };
                // Scores as of now (chosen above on their stored standing): freshness ages
                // with the clock, so a script left unused drifts back to the middle.
                for version in &mut versions {
                    version.score = version.score_at(now);
                }
                let last_failure = store
                    .recent_failures(owner_id, entry.skill.id, 1)?
                    .into_iter()
                    .next();
                let recent = store.script_runs(owner_id, entry.skill.id, SPARK_RUNS)?;
                scripts.push(ScriptView {
                    entry,
                    versions,
                    shown,
                    last_failure,
                    recent,
                });
            }
            // Scripts whose file is gone: private now, listed last with their history.
            for id in store.gone_skills(owner_id, agent.id)? {
                let skill = store.skill(owner_id, id)?;
                let mut versions = store.versions(owner_id, id)?;
                let Some(shown) = shown_index(&skill, &versions, false, bar) else {
                    continue;
                };
                for version in &mut versions {
                    version.score = version.score_at(now);
                }
                let last_failure = store.recent_failures(owner_id, id, 1)?.into_iter().next();
                let recent = store.script_runs(owner_id, id, SPARK_RUNS)?;
                let entry = SkillEntry {
                    version: versions[shown].clone(),
                    version_count: versions.len() as i64,
                    total_runs: versions.iter().map(|v| v.uses).sum(),
                    best: None,
                    family: false,
                    skill,
                };
                scripts.push(ScriptView {
                    entry,
                    versions,
                    shown,
                    last_failure,
                    recent,
                });
            }
            let avatar_state = store.avatar_state(owner_id, agent.id)?;
            let shown_text = Shown::new(&[owner.api_key.as_str()]);
            let body = avatar_html(
                &owner,
                &agent,
                &scripts,
                avatar_state.as_ref(),
                &csrf,
                &shown_text,
            );
            Ok(Some(html::page(
                &shown_text.text(&agent.name),
                owner_nav(&app, &owner, &csrf),
                &body,
            )))
        })
        .await
        .and_then(|page| page);
    match page {
        Ok(Some(page)) => html::respond(StatusCode::OK, page),
        Ok(None) => not_found("avatar"),
        Err(err) => error_page(&err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_goes_back_only_to_dashboard_pages() {
        assert_eq!(
            back_to(Some("/dashboard/avatars/12")),
            "/dashboard/avatars/12"
        );
        assert_eq!(back_to(None), "/dashboard");
        assert_eq!(back_to(Some("https://evil.example/")), "/dashboard");
        assert_eq!(back_to(Some("//evil.example")), "/dashboard");
        assert_eq!(back_to(Some("/dashboard/avatars/1/../../x")), "/dashboard");
        assert_eq!(back_to(Some("/dashboard/avatars/")), "/dashboard");
    }
}
