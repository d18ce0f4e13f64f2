//! Who is asking: a runner (its token names one avatar, and from it the owner), an owner on the
//! dashboard (a session cookie from logging in with the owner's key), or the operator (an
//! operator token, read-only console).
//!
//! Architecture invariant: the server takes the avatar and the owner from the credential, never
//! from the request. Handlers get an [`Runner`], an [`OwnerSession`] or an [`Operator`] from
//! these extractors and pass its owner to every store call.
//!
//! Secrets the server issues (runner and operator tokens, session cookies) are random 256-bit
//! values; only their SHA-256 digests are stored, and a look-up goes by digest, so a stolen
//! database holds no usable credential and timing reveals nothing an attacker could steer. The
//! owner's key is compared in constant time.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use mindrune_store::{Agent, OwnerId};
use subtle::ConstantTimeEq as _;

use crate::error::ApiError;
use crate::secret::secret_digest;
use crate::state::AppState;

/// The dashboard's session cookie.
pub(crate) const SESSION_COOKIE: &str = "mindrune_session";

fn bearer(parts: &Parts) -> Option<&str> {
    let value = parts.headers.get(AUTHORIZATION)?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?.trim();
    (!token.is_empty()).then_some(token)
}

/// A runner, by its token: the avatar it was started for.
#[derive(Debug, Clone)]
pub(crate) struct Runner {
    pub agent: Agent,
}

impl Runner {
    pub(crate) fn owner(&self) -> OwnerId {
        self.agent.owner
    }
}

impl FromRequestParts<AppState> for Runner {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(token) = bearer(parts) else {
            return Err(ApiError::unauthorized(
                "no runner token: send `Authorization: Bearer <token>` (issue one with `mindrune token issue AGENT`)",
            ));
        };
        let digest = secret_digest(token);
        let store = state.store();
        let agent = state
            .blocking(move || store.agent_by_runner_token(&digest))
            .await??;
        match agent {
            Some(agent) => {
                let number = |header: &str| {
                    parts
                        .headers
                        .get(header)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                };
                let backlog = number(crate::wire::SPOOL_HEADER);
                let hook_failures = number(crate::wire::HOOK_FAILURES_HEADER);
                state.health().note_runner(
                    agent.id,
                    crate::health::RunnerContact {
                        owner: agent.owner,
                        agent: agent.name.clone(),
                        at: mindrune_engine::now_millis(),
                        backlog,
                        hook_failures,
                    },
                );
                Ok(Runner { agent })
            }
            None => Err(ApiError::unauthorized(
                "this runner token is unknown or revoked; issue a new one with `mindrune token issue AGENT`",
            )),
        }
    }
}

/// The operator, by an operator token: reads the console, nothing else.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Operator;

impl FromRequestParts<AppState> for Operator {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer(parts)
            .map(str::to_string)
            .or_else(|| cookie(parts, OPERATOR_COOKIE, state));
        let Some(token) = token else {
            return Err(ApiError::unauthorized(
                "no operator token: send `Authorization: Bearer <token>` or log in at /console/login (issue one with `mindrune token operator`)",
            ));
        };
        let digest = secret_digest(&token);
        let store = state.store();
        if state
            .blocking(move || store.operator_token_valid(&digest))
            .await??
        {
            Ok(Operator)
        } else {
            Err(ApiError::unauthorized(
                "this operator token is unknown or revoked",
            ))
        }
    }
}

/// The console's cookie: the operator token itself, set by the console's login form.
pub(crate) const OPERATOR_COOKIE: &str = "mindrune_operator";

/// The value of a cookie of the request.
pub(crate) fn cookie(parts: &Parts, name: &str, state: &AppState) -> Option<String> {
    crate::html::cookie_value(&parts.headers, name, state.config().cookies_secure())
}

/// An owner logged in to the dashboard.
#[derive(Debug, Clone)]
pub(crate) struct OwnerSession {
    pub owner: OwnerId,
    /// The session's CSRF token: every form carries it, and a POST without it changes nothing.
    pub csrf_token: String,
    /// The digest of the cookie's secret (to end the session).
    pub session_digest: String,
}

impl OwnerSession {
    /// Checks a form's CSRF token, in constant time.
    pub(crate) fn check_csrf(&self, sent: &str) -> Result<(), ApiError> {
        if bool::from(sent.as_bytes().ct_eq(self.csrf_token.as_bytes())) {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "the form's security token does not match this login; reload the page and try again",
            ))
        }
    }
}

impl FromRequestParts<AppState> for OwnerSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Some(secret) = cookie(parts, SESSION_COOKIE, state) else {
            return Err(ApiError::unauthorized(
                "not logged in: log in at /dashboard/login with your owner key",
            ));
        };
        let digest = secret_digest(&secret);
        let store = state.store();
        let lookup = digest.clone();
        let now = mindrune_engine::now_millis();
        let session = state
            .blocking(move || store.session(&lookup, now))
            .await??;
        match session {
            Some(session) => Ok(OwnerSession {
                owner: session.owner,
                csrf_token: session.csrf_token,
                session_digest: digest,
            }),
            None => Err(ApiError::unauthorized(
                "your login has expired: log in again at /dashboard/login",
            )),
        }
    }
}
