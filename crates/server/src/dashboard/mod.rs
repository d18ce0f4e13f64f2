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

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use crate::auth::OwnerSession;
use crate::error::ApiError;
use crate::html;
use crate::login_guard::LoginGuard;
use crate::pages::{CarriesCsrf, FORM_LIMIT, checked_form, error_page};
use crate::state::AppState;

mod avatar;
mod family;
mod login;
mod script;

use avatar::avatar_page;
use family::family_page;
use login::{login, login_page, logout};

/// The login form's CSRF cookie, sent only to the login page.
const LOGIN_GUARD: LoginGuard = LoginGuard {
    cookie_name: "mindrune_login",
    path: "/dashboard/login",
};

/// Owner names and keys longer than this are not ours; they are refused without a look-up.
const MAX_NAME_CHARS: usize = 200;
const MAX_KEY_CHARS: usize = 1024;

pub(crate) fn routes() -> Router<AppState> {
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
