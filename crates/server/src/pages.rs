//! What every page of a logged-in owner shares: the session a page or a form needs, errors as
//! pages, ids read from a URL and the navigation. The family pages, a script's page and the
//! Inbox all build on it; it builds on none of them.

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use mindrune_store::Owner;
use serde::Deserialize;

use crate::auth::OwnerSession;
use crate::error::ApiError;
use crate::html::{self, Markup, Nav};
use crate::state::AppState;

/// The largest dashboard form body: a name, a key and a token fit many times over.
pub(crate) const FORM_LIMIT: usize = 16 * 1024;

/// An error of a logged-in page, as a small HTML page with the error's status.
pub(crate) fn error_page(err: &ApiError) -> Response {
    html::error_page(
        err.status,
        &err.detail.message,
        ("/dashboard", "Back to your family"),
    )
}

/// The answer for an owner's page built on a blocking thread: the page, "not found" naming
/// `what` (another family's id is simply not there), or the error's page.
pub(crate) fn page_or_not_found(page: Result<Option<Markup>, ApiError>, what: &str) -> Response {
    match page {
        Ok(Some(page)) => html::respond(StatusCode::OK, page),
        Ok(None) => not_found(what),
        Err(err) => error_page(&err),
    }
}

pub(crate) fn not_found(what: &str) -> Response {
    html::error_page(
        StatusCode::NOT_FOUND,
        &format!("There is no such {what} in your family. It may have been removed."),
        ("/dashboard", "Back to your family"),
    )
}

pub(crate) fn form_error(rejection: &FormRejection) -> Response {
    if let Some(deadline) = crate::fairness::BodyDeadline::in_error(rejection) {
        return html::error_page(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "The form did not arrive in time ({deadline}). Nothing was changed; reload the page and try again."
            ),
            ("/dashboard", "Back to your family"),
        );
    }
    html::error_page(
        rejection.status(),
        &format!(
            "The form could not be read ({}). Nothing was changed; reload the page and try again.",
            rejection.body_text()
        ),
        ("/dashboard", "Back to your family"),
    )
}

/// An owner's page request, as an extractor: its handler runs only with a live session. A
/// visitor without one is sent to the login page; a failure of the library is an error page.
/// Every page an owner reads (the family and avatar pages, a script's page, its diff and code,
/// the Inbox and a card) takes it, so none repeats the check.
pub(crate) struct OwnerPage(pub(crate) OwnerSession);

impl axum::extract::FromRequestParts<AppState> for OwnerPage {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Response> {
        match OwnerSession::from_request_parts(parts, state).await {
            Ok(session) => Ok(OwnerPage(session)),
            Err(err) if err.status == StatusCode::UNAUTHORIZED => {
                Err(Redirect::to("/dashboard/login").into_response())
            }
            Err(err) => Err(error_page(&err)),
        }
    }
}

/// The session of a form POST: without one nothing is changed and the answer says so.
pub(crate) fn form_session(
    session: Result<OwnerSession, ApiError>,
) -> Result<OwnerSession, Box<Response>> {
    match session {
        Ok(session) => Ok(session),
        Err(err) if err.status == StatusCode::UNAUTHORIZED => Err(Box::new(html::error_page(
            StatusCode::UNAUTHORIZED,
            "You are not logged in, or your login has expired. Nothing was changed; log in and try again.",
            ("/dashboard/login", "Log in"),
        ))),
        Err(err) => Err(Box::new(error_page(&err))),
    }
}

/// A dashboard form that may change something: a live session, a readable form, and the
/// session's CSRF token in it — else the page that says which of these failed.
pub(crate) fn checked_form<F: CarriesCsrf>(
    session: Result<OwnerSession, ApiError>,
    form: Result<Form<F>, FormRejection>,
) -> Result<(OwnerSession, F), Box<Response>> {
    let session = form_session(session)?;
    let form = match form {
        Ok(Form(form)) => form,
        Err(rejection) => return Err(Box::new(form_error(&rejection))),
    };
    if let Err(err) = session.check_csrf(form.csrf()) {
        return Err(Box::new(csrf_error(&err)));
    }
    Ok((session, form))
}

/// A form that carries the session's CSRF token.
pub(crate) trait CarriesCsrf {
    fn csrf(&self) -> &str;
}

impl CarriesCsrf for CsrfForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

pub(crate) fn csrf_error(err: &ApiError) -> Response {
    html::error_page(
        err.status,
        &format!("{}. Nothing was changed.", err.detail.message),
        ("/dashboard", "Back to your family"),
    )
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct CsrfForm {
    #[serde(default)]
    pub(crate) csrf: String,
}

/// Parses an id from a URL; anything but a positive number is "not found".
pub(crate) fn parse_id(raw: &str) -> Option<i64> {
    raw.parse::<i64>().ok().filter(|id| *id > 0)
}

/// The navigation of an owner's page.
pub(crate) fn owner_nav<'a>(app: &AppState, owner: &'a Owner, csrf: &'a str) -> Nav<'a> {
    Nav::Owner {
        owner: &owner.name,
        csrf,
        inbox: inbox_waiting(
            app.config()
                .playbooks_of(&owner.name)
                .map(|entry| entry.workspace.as_path()),
        ),
    }
}

/// How many cards wait in the owner's playbook workspaces, for the navigation's Inbox link;
/// `None` when the owner has no workspace (no Inbox). A workspace that cannot be read counts
/// nothing here: the Inbox page itself says why.
pub(crate) fn inbox_waiting<'a>(
    workspaces: impl Iterator<Item = &'a std::path::Path>,
) -> Option<usize> {
    let mut any = false;
    let mut waiting = 0;
    for path in workspaces {
        any = true;
        if let Ok(cards) = mindrune_engine::Playbooks::open(path)
            .and_then(|playbooks| playbooks.ledger().cards(false))
        {
            waiting += cards
                .iter()
                .filter(|card| card.state == mindrune_engine::CardState::Waiting)
                .count();
        }
    }
    any.then_some(waiting)
}
