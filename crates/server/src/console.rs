//! The operator's console: read-only tables across every family, behind an operator token.
//!
//! Family skill reuse (per family, the last 30 days: runs, runs started from a family skill and
//! their share, skills reused by a sibling) and Family skills (one row per shared skill, its
//! versions behind "Versions"). The console has no form but its login: it changes nothing.
//!
//! The operator logs in with a token from `mindrune token operator` (kept in an HttpOnly,
//! SameSite=Strict cookie for `/console`), or sends it as `Authorization: Bearer` (curl).

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use mindrune_engine::now_millis;
use mindrune_store::{DAY_MILLIS, FamilyReuse, Millis, Owner, SharedSkill, Store, StoreError};
use serde::Deserialize;

use crate::auth::{OPERATOR_COOKIE, Operator};
use crate::charts::Bar;
use crate::error::ApiError;
use crate::health::HealthView;
use crate::html::{self, Markup, Nav, Shown, count, html, points, when};
use crate::login_guard::LoginGuard;
use crate::scripts::day_label;
use crate::secret::secret_digest;
use crate::state::AppState;

/// The window of the reuse table.
const REUSE_DAYS: i64 = 30;

/// The largest console form body.
const FORM_LIMIT: usize = 16 * 1024;

const LOGIN_GUARD: LoginGuard = LoginGuard {
    cookie_name: "mindrune_console_login",
    path: "/console/login",
};

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/console", get(console))
        .route("/console/login", get(login_page).post(login))
        .route("/console/logout", post(logout))
        .layer(DefaultBodyLimit::max(FORM_LIMIT))
}

fn error_page(err: &ApiError) -> Response {
    html::error_page(
        err.status,
        &err.detail.message,
        ("/console", "Back to the console"),
    )
}

// -------------------------------------------------------------------------------------------
// Login
// -------------------------------------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
struct LoginForm {
    #[serde(default)]
    token: String,
    #[serde(default)]
    csrf: String,
}

fn login_response(
    status: StatusCode,
    headers: &HeaderMap,
    state: &AppState,
    problem: Option<&str>,
) -> Response {
    let (token, set_cookie) = LOGIN_GUARD.token(
        state.pre_sessions(),
        headers,
        state.config().cookies_secure(),
    );
    let body = html! {
        section class="card narrow" {
            h1 { "Operator console" }
            p class="muted" { "Read-only: how families reuse their skills." }
            @if let Some(problem) = problem {
                p class="error" role="alert" { (problem) }
            }
            form method="post" action="/console/login" {
                input type="hidden" name="csrf" value=(token);
                label for="token" { "Operator token" }
                input type="password" id="token" name="token" autocomplete="off" required maxlength="200";
                button type="submit" class="primary" { "Open the console" }
            }
            p class="small muted" { "Issue a token with " code { "mindrune token operator" } "." }
        }
    };
    let mut response = html::respond(status, html::page("Console login", Nav::None, body));
    html::set_cookies(&mut response, set_cookie);
    response
}

async fn login_page(
    State(state): State<AppState>,
    operator: Result<Operator, ApiError>,
    headers: HeaderMap,
) -> Response {
    if operator.is_ok() {
        return Redirect::to("/console").into_response();
    }
    login_response(StatusCode::OK, &headers, &state, None)
}

/// Whether a text can be an operator token at all (`mr_operator_` and hex): anything else is
/// refused before a look-up, and only such a text is ever put in a cookie.
fn token_shaped(token: &str) -> bool {
    token.len() <= 200
        && token.starts_with("mr_operator_")
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => {
            return html::error_page(
                rejection.status(),
                &format!(
                    "The form could not be read ({}). Open the login page again.",
                    rejection.body_text()
                ),
                ("/console/login", "Open the login page"),
            );
        }
    };
    if !LOGIN_GUARD.check(
        state.pre_sessions(),
        &headers,
        &form.csrf,
        state.config().cookies_secure(),
    ) {
        return html::error_page(
            StatusCode::FORBIDDEN,
            "The login form's security token is missing or out of date. Open the login page again and log in from there.",
            ("/console/login", "Open the login page"),
        );
    }
    const WRONG: &str = "This operator token is unknown or revoked. Issue a new one with `mindrune token operator`.";
    let token = form.token.trim().to_string();
    if !token_shaped(&token) {
        return login_response(StatusCode::UNAUTHORIZED, &headers, &state, Some(WRONG));
    }
    let store = state.store();
    let digest = secret_digest(&token);
    let valid = state
        .blocking(move || store.operator_token_valid(&digest))
        .await
        .and_then(|valid| valid.map_err(ApiError::from));
    match valid {
        Ok(true) => {}
        Ok(false) => {
            return login_response(StatusCode::UNAUTHORIZED, &headers, &state, Some(WRONG));
        }
        Err(err) => return error_page(&err),
    }
    let secure = state.config().cookies_secure();
    let mut response = Redirect::to("/console").into_response();
    let cookies = [
        html::cookie(
            OPERATOR_COOKIE,
            &token,
            "/console",
            state.config().session_length().as_secs(),
            secure,
        ),
        LOGIN_GUARD.clear(state.pre_sessions(), &headers, secure),
    ];
    html::set_cookies(&mut response, cookies);
    response
}

/// Forgets the operator token in this browser (the token itself stays valid: it is revoked
/// on the command line). Nothing on the server changes, so the form needs no CSRF token, and
/// the cookie is SameSite=Strict: another site cannot log the console out.
async fn logout(State(state): State<AppState>) -> Response {
    let mut response = Redirect::to("/console/login").into_response();
    html::set_cookies(
        &mut response,
        [html::cookie(
            OPERATOR_COOKIE,
            "",
            "/console",
            0,
            state.config().cookies_secure(),
        )],
    );
    response
}

// -------------------------------------------------------------------------------------------
// Server health
// -------------------------------------------------------------------------------------------

/// `1.2 MB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit < UNITS.len() - 1 {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// What the health section shows besides the process's counters.
struct Library {
    size: Option<u64>,
    disk: Option<mindrune_store::DiskSpace>,
}

fn health_html(health: &HealthView, library: &Library, now: i64, shown: &Shown) -> Markup {
    let bars: Vec<Bar> = health
        .minutes
        .iter()
        .map(|m| Bar {
            label: when(Some(m.minute * 60_000))
                .rsplit(' ')
                .next()
                .unwrap_or_default()
                .to_string(),
            ok: m.events,
            failed: m.errors,
        })
        .collect();
    html! {
        section class="card" aria-labelledby="health-title" id="health" {
            h2 id="health-title" { "Server health" }
            p class="small muted" {
                "Counted since " (shown.plain(&when(Some(health.counting_since))))
                " UTC and kept in the library, so a restart goes on from them; this server started "
                (shown.plain(&when(Some(health.started_at)))) " UTC."
            }
            dl class="tile-facts health-facts" {
                div class="events-rate" { dt { "Events per second, last hour" } dd { (format!("{:.3}", health.events_per_second())) } }
                div class="errors" { dt { "Errors, last hour" } dd { (health.errors()) } }
                div class="database-size" { dt { "Database size" } dd { (library.size.map_or("unknown".into(), bytes)) } }
                div class="disk-free" { dt { "Free on its disk" } dd {
                    (library.disk.as_ref().map_or("not visible from here".into(), |d| bytes(d.available)))
                } }
            }
            (crate::charts::stacked_bars(
                "health-minutes",
                "Events and errors per minute, last hour (UTC)",
                &bars,
                ["events", "errors"],
            ))
            h3 { "Runners" }
            @if health.runners.is_empty() {
                p class="muted" { "No runner has called since this server started." }
            } @else {
                div class="table-scroll" { table class="stack" id="runners" {
                    thead { tr {
                        th scope="col" { "Avatar" } th scope="col" { "Last contact (UTC)" }
                        th scope="col" class="num" { "Ago" } th scope="col" class="num" { "Spool backlog" }
                        th scope="col" class="num" { "Hook failures (24 h)" }
                    } }
                    tbody { @for (_, contact) in &health.runners { (runner_row(contact, now, shown)) } }
                } }
            }
            h3 { "Requests refused" }
            @if health.refused.is_empty() {
                p class="muted" { "None since this server started." }
            } @else {
                div class="table-scroll" { table class="stack" id="refused" {
                    thead { tr { th scope="col" { "Why" } th scope="col" class="num" { "Requests" } } }
                    tbody { @for (reason, n) in &health.refused {
                        tr { td data-label="Why" { (shown.plain(reason)) } td data-label="Requests" class="num" { (n) } }
                    } }
                } }
            }
        }
    }
}

fn runner_row(contact: &crate::health::RunnerContact, now: i64, shown: &Shown) -> Markup {
    let backlog = contact.backlog.map_or("not reported".into(), |n| {
        count(i64::try_from(n).unwrap_or(i64::MAX), "item", "items")
    });
    let failures = contact
        .hook_failures
        .map_or("not reported".into(), |n| n.to_string());
    html! {
        tr {
            td data-label="Avatar" { (shown.plain(&contact.agent)) }
            td data-label="Last contact" { (shown.plain(&when(Some(contact.at)))) }
            td data-label="Ago" class="num" {
                (crate::script_page::duration(u64::try_from(now - contact.at).unwrap_or(0)))
            }
            td data-label="Spool backlog" class="num" { (backlog) }
            td data-label="Hook failures (24 h)" class="num" { (failures) }
        }
    }
}

// -------------------------------------------------------------------------------------------
// The tables
// -------------------------------------------------------------------------------------------

/// One family's rows.
struct FamilyRows {
    owner: Owner,
    avatars: usize,
    reuse: FamilyReuse,
    shared: Vec<SharedSkill>,
}

/// `23 %` of runs, or a dash without runs.
fn share(part: i64, whole: i64) -> String {
    if whole <= 0 {
        "–".into()
    } else {
        format!("{} %", (part as f64 * 100.0 / whole as f64).round() as i64)
    }
}

struct ConsoleView {
    families: Vec<FamilyRows>,
    health: HealthView,
    library: Library,
    /// The families' runs per day, all together: from a family skill, and the others.
    reuse_days: Vec<Bar>,
    /// Webhooks whose last attempt failed, per owner (`alerts`).
    failing_webhooks: Vec<FailingWebhook>,
    now: i64,
}

fn console_html(view: &ConsoleView, shown: &Shown) -> Markup {
    let families = &view.families;
    html! {
        h1 { "Avatars & world" }
        p class="lead" { (count(families.len() as i64, "family", "families")) " · read-only" }
        (health_html(&view.health, &view.library, view.now, shown))
        (alerts_html(&view.failing_webhooks, view.now))
        (reuse_html(view, shown))
        (family_skills_html(families, shown))
    }
}

/// Family skill reuse: a row per family, then the runs per day of all of them.
fn reuse_html(view: &ConsoleView, shown: &Shown) -> Markup {
    html! {
        section class="card" aria-labelledby="reuse-title" {
            h2 id="reuse-title" { "Family skill reuse" }
            p class="small muted" {
                "Per family, the last " (REUSE_DAYS) " days. A run from a family skill ran a \
                sibling's skill or the avatar's own copy built on one."
            }
            @if view.families.is_empty() {
                p class="muted" { "No families yet." }
            } @else {
                div class="table-scroll" { table class="stack" id="reuse" {
                    thead { tr {
                        th scope="col" { "Family (owner)" } th scope="col" class="num" { "Avatars" }
                        th scope="col" class="num" { "Runs" } th scope="col" class="num" { "From a family skill" }
                        th scope="col" class="num" { "Share" } th scope="col" class="num" { "Skills reused by a sibling" }
                    } }
                    tbody { @for family in &view.families {
                        tr {
                            td data-label="Family" { (shown.plain(&family.owner.name)) }
                            td data-label="Avatars" class="num" { (family.avatars) }
                            td data-label="Runs" class="num" { (family.reuse.runs) }
                            td data-label="From a family skill" class="num" { (family.reuse.runs_from_family) }
                            td data-label="Share" class="num" { (share(family.reuse.runs_from_family, family.reuse.runs)) }
                            td data-label="Reused by a sibling" class="num" { (family.reuse.skills_reused) }
                        }
                    } }
                } }
            }
            (crate::charts::stacked_bars(
                "reuse-chart",
                &format!("Runs per day of every family, last {REUSE_DAYS} days (UTC)"),
                &view.reuse_days,
                ["from a family skill", "other runs"],
            ))
        }
    }
}

/// Family skills: one row per skill, at its latest shared version, its versions behind a
/// disclosure.
fn family_skills_html(families: &[FamilyRows], shown: &Shown) -> Markup {
    let total: usize = families.iter().map(|f| f.shared.len()).sum();
    html! {
        section class="card" aria-labelledby="skills-title" {
            h2 id="skills-title" { "Family skills" }
            p class="small muted" {
                (count(total as i64, "shared skill", "shared skills")) ": one row per skill, at its latest shared version."
            }
            @if total == 0 {
                p class="muted" { "No skill is shared yet." }
            } @else {
                div class="table-scroll" { table class="stack" id="family-skills" {
                    thead { tr {
                        th scope="col" { "Owner" } th scope="col" { "Avatar" } th scope="col" { "Skill" }
                        th scope="col" { "Version" } th scope="col" class="num" { "Runs" }
                        th scope="col" class="num" { "Score" } th scope="col" { "Versions" }
                    } }
                    tbody { @for family in families { @for shared in &family.shared {
                        (shared_row(&family.owner, shared, shown))
                    } } }
                } }
            }
        }
    }
}

fn shared_row(owner: &Owner, shared: &SharedSkill, shown: &Shown) -> Markup {
    let latest = shared
        .versions
        .iter()
        .filter(|v| v.shared_at.is_some())
        .max_by_key(|v| v.number);
    let Some(latest) = latest else {
        return html! {};
    };
    html! {
        tr {
            td data-label="Owner" { (shown.plain(&owner.name)) }
            td data-label="Avatar" {
                (shown.plain(&shared.skill.agent_name))
                @if shared.skill.agent.is_none() { " " span class="muted small" { "(deleted)" } }
            }
            td data-label="Skill" { (shown.plain(&shared.skill.name)) }
            td data-label="Version" { "v" (latest.number) }
            td data-label="Runs" class="num" { (latest.uses) }
            td data-label="Score" class="num" { (points(latest.score)) }
            td { details {
                summary { "Versions (" (shared.versions.len()) ")" }
                table class="stack" {
                    thead { tr {
                        th scope="col" { "Version" } th scope="col" class="num" { "Runs" }
                        th scope="col" class="num" { "OK" } th scope="col" class="num" { "Score" }
                        th scope="col" { "Shared" }
                    } }
                    tbody { @for v in &shared.versions {
                        tr {
                            td data-label="Version" { "v" (v.number) }
                            td data-label="Runs" class="num" { (v.uses) }
                            td data-label="OK" class="num" { (v.ok) }
                            td data-label="Score" class="num" { (points(v.score)) }
                            td data-label="Shared" { @if v.shared_at.is_some() { "yes" } @else { "–" } }
                        }
                    } }
                }
            } }
        }
    }
}

async fn console(
    State(state): State<AppState>,
    operator: Result<Operator, ApiError>,
    headers: HeaderMap,
) -> Response {
    if let Err(err) = operator {
        // A browser without a token goes to the login page; a script that sent a wrong token
        // (or a browser whose cookie was revoked) hears why.
        let sent_token = headers.contains_key(header::AUTHORIZATION)
            || html::cookie_value(&headers, OPERATOR_COOKIE, state.config().cookies_secure())
                .is_some();
        return if err.status == StatusCode::UNAUTHORIZED && !sent_token {
            Redirect::to("/console/login").into_response()
        } else if err.status == StatusCode::UNAUTHORIZED {
            html::error_page(
                StatusCode::UNAUTHORIZED,
                &err.detail.message,
                ("/console/login", "Log in with another token"),
            )
        } else {
            error_page(&err)
        };
    }
    let store = state.store();
    let now = now_millis();
    let since = now - REUSE_DAYS * 24 * 3600 * 1000;
    let health = state.health().view(now);
    let page = state
        .blocking(move || -> Result<Markup, ApiError> {
            let owners = store.owners()?;
            let today = now.div_euclid(DAY_MILLIS);
            let first_day = today - (REUSE_DAYS - 1);
            let mut from_family = vec![0i64; REUSE_DAYS as usize];
            let mut runs = vec![0i64; REUSE_DAYS as usize];
            let mut families = Vec::with_capacity(owners.len());
            let failing_webhooks = failing_webhooks(store, &owners)?;
            for owner in owners {
                for day in store.runs_per_day(owner.id, first_day * DAY_MILLIS)? {
                    if let Some(slot) = usize::try_from(day.day - first_day)
                        .ok()
                        .and_then(|i| runs.get_mut(i))
                    {
                        *slot += day.ok + day.failed;
                    }
                }
                // A day's runs from a family skill: those since its start less those since
                // the next day's.
                let mut later = 0;
                for i in (0..REUSE_DAYS as usize).rev() {
                    let day = first_day + i as i64;
                    let since_day = store
                        .family_reuse(owner.id, day * DAY_MILLIS)?
                        .runs_from_family;
                    from_family[i] += since_day - later;
                    later = since_day;
                }
                families.push(FamilyRows {
                    avatars: store.agents(owner.id)?.len(),
                    reuse: store.family_reuse(owner.id, since)?,
                    // Scores as every view shows them: at the page's clock.
                    shared: store
                        .shared_skills(owner.id)?
                        .into_iter()
                        .map(|mut shared| {
                            shared.versions =
                                shared.versions.into_iter().map(|v| v.as_of(now)).collect();
                            shared
                        })
                        .collect(),
                    owner,
                });
            }
            let reuse_days = (first_day..=today)
                .enumerate()
                .map(|(i, day)| Bar {
                    label: day_label(day),
                    ok: u64::try_from(from_family[i]).unwrap_or(0),
                    failed: u64::try_from(runs[i] - from_family[i]).unwrap_or(0),
                })
                .collect();
            let library = Library {
                size: store.database_size()?,
                disk: store.disk_space(),
            };
            // Every owner's key is scrubbed from every row by its shape (the library keeps only
            // digests): the console sees all families.
            let shown_text = Shown::new(&[]);
            let view = ConsoleView {
                families,
                health,
                library,
                reuse_days,
                failing_webhooks,
                now,
            };
            Ok(html::page(
                "Console",
                Nav::Operator,
                console_html(&view, &shown_text),
            ))
        })
        .await
        .and_then(|page| page);
    match page {
        Ok(page) => html::respond(StatusCode::OK, page),
        Err(err) => error_page(&err),
    }
}

/// A webhook whose last attempt failed, as the console lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FailingWebhook {
    owner: String,
    /// Its shown address (no user, password, query or token path).
    webhook: String,
    last_status: Option<i64>,
    last_error: Option<String>,
    /// The most attempts of its deliveries waiting.
    attempts: i64,
    /// Its next try (the soonest of its deliveries waiting).
    next_attempt_at: Millis,
    /// How many deliveries wait for it.
    waiting: usize,
}

/// The webhooks of `owners` whose deliveries wait after a failed attempt, read from the store
/// (so they survive a restart).
fn failing_webhooks(
    store: &dyn Store,
    owners: &[mindrune_store::Owner],
) -> Result<Vec<FailingWebhook>, StoreError> {
    let mut out: Vec<FailingWebhook> = Vec::new();
    for owner in owners {
        for d in store.alert_deliveries(owner.id, true)? {
            if d.attempts == 0 {
                continue;
            }
            let shown = html::shown_webhook(&d.webhook);
            match out
                .iter_mut()
                .find(|f| f.owner == owner.name && f.webhook == shown)
            {
                Some(known) => {
                    known.waiting += 1;
                    if d.attempts > known.attempts {
                        known.attempts = d.attempts;
                        known.last_status = d.last_status;
                        known.last_error = d.last_error.clone();
                    }
                    known.next_attempt_at = known.next_attempt_at.min(d.next_attempt_at);
                }
                None => out.push(FailingWebhook {
                    owner: owner.name.clone(),
                    webhook: shown,
                    last_status: d.last_status,
                    last_error: d.last_error,
                    attempts: d.attempts,
                    next_attempt_at: d.next_attempt_at,
                    waiting: 1,
                }),
            }
        }
    }
    Ok(out)
}

/// The console's "Alerts" section: every webhook that answers badly, with why and when it is
/// tried again; a line saying all is well otherwise.
fn alerts_html(failing: &[FailingWebhook], now: Millis) -> Markup {
    let answer = |f: &FailingWebhook| match (&f.last_status, &f.last_error) {
        (_, Some(error)) => error.clone(),
        (Some(status), None) => status.to_string(),
        (None, None) => "no answer".into(),
    };
    let next = |f: &FailingWebhook| {
        if f.next_attempt_at <= now {
            "now".to_string()
        } else {
            let seconds = (f.next_attempt_at - now) / 1000;
            match seconds {
                0..60 => format!("in {} s", seconds.max(1)),
                60..3_600 => format!("in {} min", seconds / 60),
                _ => format!("in {} h", seconds / 3_600),
            }
        }
    };
    html! {
        section class="card" aria-labelledby="alerts-title" id="alerts" {
            h2 id="alerts-title" { "Alerts" }
            @if failing.is_empty() {
                p class="small muted" { "Every webhook took its alerts." }
            } @else {
                table {
                    thead { tr {
                        th { "Owner" } th { "Webhook" } th { "Last answer" } th { "Attempts" }
                        th { "Waiting" } th { "Next try" }
                    } }
                    tbody { @for f in failing {
                        tr class="failing-webhook" {
                            td { (f.owner) } td { code { (f.webhook) } } td { (answer(f)) }
                            td { (f.attempts) } td { (f.waiting) } td { (next(f)) }
                        }
                    } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_whole_percents() {
        assert_eq!(share(1, 3), "33 %");
        assert_eq!(share(0, 0), "–");
        assert_eq!(share(5, 5), "100 %");
    }

    #[test]
    fn only_operator_shaped_tokens_are_looked_up() {
        assert!(token_shaped("mr_operator_0123abcd"));
        assert!(!token_shaped("mr_operator_x; Path=/"));
        assert!(!token_shaped("mr_session_0123"));
    }

    #[test]
    fn the_console_lists_a_failing_webhook_escaped() {
        let out = alerts_html(&[], 0).into_string();
        assert!(out.contains("Every webhook took its alerts."));
        let failing = FailingWebhook {
            owner: "ada<b>".into(),
            webhook: html::shown_webhook("https://u:p@hooks.example.com/x/<y>?token=abc"),
            last_status: Some(500),
            last_error: Some("the webhook answered 500 <Internal>".into()),
            attempts: 2,
            next_attempt_at: 90_000,
            waiting: 1,
        };
        let out = alerts_html(&[failing], 30_000).into_string();
        assert!(out.contains("ada&lt;b&gt;"), "{out}");
        assert!(out.contains("https://hooks.example.com/x/…"), "{out}");
        assert!(!out.contains("token") && !out.contains("u:p"), "{out}");
        assert!(out.contains("answered 500 &lt;Internal&gt;"), "{out}");
        assert!(out.contains("in 1 min"), "{out}");
    }
}
