//! Logging in with the owner's key, and out.

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use mindrune_engine::now_millis;
use serde::Deserialize;

use super::{LOGIN_GUARD, MAX_KEY_CHARS, MAX_NAME_CHARS};
use crate::auth::{OwnerSession, SESSION_COOKIE};
use crate::error::ApiError;
use crate::html::{self, Markup, Nav, Shown, html};
use crate::pages::{CsrfForm, checked_form, error_page, form_error};
use crate::secret::{matches_digest, new_secret, secret_digest};
use crate::state::AppState;

/// What an unknown name's login is compared against, so it costs what a wrong key costs: shaped
/// like a stored digest, but no key has it (SHA-256's hex never spells these letters).
const NO_SUCH_OWNER_DIGEST: &str =
    "sha256:no-such-owner-no-such-owner-no-such-owner-no-such-owner-0000";

#[derive(Debug, Default, Deserialize)]
pub(super) struct LoginForm {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) key: String,
    #[serde(default)]
    pub(super) csrf: String,
}

pub(super) fn login_body(token: &str, name: &str, problem: Option<&str>) -> Markup {
    html! {
        section class="card narrow" {
            h1 { "Log in to your dashboard" }
            p class="muted" { "Your avatars' scripts, skills and stats. Only you see them." }
            @if let Some(problem) = problem {
                p class="error" role="alert" { (problem) }
            }
            form method="post" action="/dashboard/login" {
                input type="hidden" name="csrf" value=(token);
                label for="name" { "Owner name" }
                input type="text" id="name" name="name" value=(name) autocomplete="username"
                    autocapitalize="none" spellcheck="false" required maxlength=(MAX_NAME_CHARS);
                label for="key" { "Owner key" }
                input type="password" id="key" name="key" autocomplete="current-password" required
                    maxlength=(MAX_KEY_CHARS);
                button type="submit" class="primary" { "Log in" }
            }
            p class="small muted" {
                "Your owner key was printed when the account was made ("
                code { "mindrune owner add" } ")."
            }
        }
    }
}

pub(super) fn login_response(
    status: StatusCode,
    headers: &HeaderMap,
    state: &AppState,
    name: &str,
    problem: Option<&str>,
) -> Response {
    let (token, set_cookie) = LOGIN_GUARD.token(
        state.pre_sessions(),
        headers,
        state.config().cookies_secure(),
    );
    let mut response = html::respond(
        status,
        html::page("Log in", Nav::None, login_body(&token, name, problem)),
    );
    html::set_cookies(&mut response, set_cookie);
    response
}

pub(super) async fn login_page(
    State(state): State<AppState>,
    session: Result<OwnerSession, ApiError>,
    headers: HeaderMap,
) -> Response {
    if session.is_ok() {
        return Redirect::to("/dashboard").into_response();
    }
    login_response(StatusCode::OK, &headers, &state, "", None)
}

pub(super) async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return form_error(&rejection),
    };
    if !LOGIN_GUARD.check(
        state.pre_sessions(),
        &headers,
        &form.csrf,
        state.config().cookies_secure(),
    ) {
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
        Some(owner) => matches_digest(&form.key, &owner.key_digest),
        None => {
            let _ = matches_digest(&form.key, NO_SUCH_OWNER_DIGEST);
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
        LOGIN_GUARD.clear(state.pre_sessions(), &headers, secure),
    ];
    html::set_cookies(&mut response, cookies);
    response
}

pub(super) async fn logout(
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
