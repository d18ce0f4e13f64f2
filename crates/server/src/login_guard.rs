//! The sign-in forms' CSRF guard: a pre-session the server itself handed out.
//!
//! Before a login there is no session to hold a CSRF token, so the login page opens a
//! *pre-session*: a random id in a cookie and, kept on the server beside that id's digest, the
//! form's token. A login POST is accepted only with a cookie naming a pre-session this server
//! opened, still live, whose token the form carries. A cookie an attacker managed to plant (from
//! a sibling subdomain, or over plain HTTP) names no pre-session and is refused; and when
//! cookies are `Secure` every cookie is `__Host-` prefixed, which a browser accepts only from
//! this very origin over TLS, so such a cookie cannot be planted at all.
//!
//! Pre-sessions live in memory: at most [`MAX_PRE_SESSIONS`], each for an hour. A restart, or a
//! login form served by another server of a shared library, asks the visitor to open the login
//! page again; nothing else is lost.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::http::HeaderMap;

use crate::html::{cookie, cookie_value};
use crate::secret::{new_secret, same_secret, secret_digest};

/// How long a login page's pre-session stays valid.
pub(crate) const PRE_SESSION_LIFETIME: Duration = Duration::from_secs(3600);
/// The most pre-sessions kept at once: a flood of login pages costs a bounded table; past it
/// the oldest are forgotten (their visitors open the login page again).
pub(crate) const MAX_PRE_SESSIONS: usize = 10_000;

/// The pre-sessions this server opened: the digest of each cookie's id → the form's token.
#[derive(Debug, Default)]
pub struct PreSessions {
    open: Mutex<HashMap<String, PreSession>>,
}

#[derive(Debug)]
struct PreSession {
    token: String,
    opened: Instant,
}

impl PreSessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, PreSession>> {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Opens a pre-session: its cookie id and its form token.
    fn open(&self) -> (String, String) {
        let id = new_secret("mr_login_");
        let token = new_secret("mr_csrf_");
        let mut open = self.lock();
        if open.len() >= MAX_PRE_SESSIONS {
            open.retain(|_, pre| pre.opened.elapsed() < PRE_SESSION_LIFETIME);
        }
        if open.len() >= MAX_PRE_SESSIONS
            && let Some(oldest) = open
                .iter()
                .min_by_key(|(_, pre)| pre.opened)
                .map(|(digest, _)| digest.clone())
        {
            open.remove(&oldest);
        }
        open.insert(
            secret_digest(&id),
            PreSession {
                token: token.clone(),
                opened: Instant::now(),
            },
        );
        (id, token)
    }

    /// The form token of the live pre-session `id` names, if this server opened one.
    fn token_of(&self, id: &str) -> Option<String> {
        let open = self.lock();
        open.get(&secret_digest(id))
            .filter(|pre| pre.opened.elapsed() < PRE_SESSION_LIFETIME)
            .map(|pre| pre.token.clone())
    }

    fn close(&self, id: &str) {
        self.lock().remove(&secret_digest(id));
    }

    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One sign-in form's guard: the cookie's name and the path it is sent to.
pub(crate) struct LoginGuard {
    pub cookie_name: &'static str,
    pub path: &'static str,
}

impl LoginGuard {
    /// The form token for a login page: the one of the browser's live pre-session (so two open
    /// login tabs both work), else a new pre-session's, with the `Set-Cookie` that holds it.
    pub(crate) fn token(
        &self,
        pre_sessions: &PreSessions,
        headers: &HeaderMap,
        secure: bool,
    ) -> (String, Option<String>) {
        if let Some(token) = cookie_value(headers, self.cookie_name, secure)
            .and_then(|id| pre_sessions.token_of(&id))
        {
            return (token, None);
        }
        let (id, token) = pre_sessions.open();
        let set = cookie(
            self.cookie_name,
            &id,
            self.path,
            PRE_SESSION_LIFETIME.as_secs(),
            secure,
        );
        (token, Some(set))
    }

    /// Whether a login POST comes from a pre-session this server opened and carries its token
    /// (compared in constant time).
    pub(crate) fn check(
        &self,
        pre_sessions: &PreSessions,
        headers: &HeaderMap,
        sent: &str,
        secure: bool,
    ) -> bool {
        cookie_value(headers, self.cookie_name, secure)
            .and_then(|id| pre_sessions.token_of(&id))
            .is_some_and(|token| !sent.is_empty() && same_secret(&token, sent))
    }

    /// Closes the browser's pre-session once it served its login, and the `Set-Cookie` that
    /// removes its cookie.
    pub(crate) fn clear(
        &self,
        pre_sessions: &PreSessions,
        headers: &HeaderMap,
        secure: bool,
    ) -> String {
        if let Some(id) = cookie_value(headers, self.cookie_name, secure) {
            pre_sessions.close(&id);
        }
        cookie(self.cookie_name, "", self.path, 0, secure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::header;

    const GUARD: LoginGuard = LoginGuard {
        cookie_name: "mindrune_login",
        path: "/dashboard/login",
    };

    fn with_cookie(pair: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, pair.parse().unwrap());
        headers
    }

    /// The `name=value` part of a `Set-Cookie`.
    fn pair(set_cookie: &str) -> &str {
        set_cookie.split(';').next().unwrap()
    }

    #[test]
    fn a_login_page_s_token_passes_only_with_the_cookie_of_its_own_pre_session() {
        let pre = PreSessions::default();
        let (token, set) = GUARD.token(&pre, &HeaderMap::new(), false);
        let set = set.expect("a new pre-session sets its cookie");
        let headers = with_cookie(pair(&set));
        assert!(GUARD.check(&pre, &headers, &token, false));
        assert!(!GUARD.check(&pre, &headers, "mr_csrf_other", false));
        assert!(!GUARD.check(&pre, &HeaderMap::new(), &token, false));
        // Opening the page again in that browser keeps its token (two tabs both work).
        let (again, none) = GUARD.token(&pre, &headers, false);
        assert_eq!((again.as_str(), none), (token.as_str(), None));
    }

    #[test]
    fn a_planted_well_formed_cookie_is_not_a_pre_session() {
        let pre = PreSessions::default();
        let planted = format!("mr_login_{}", "a".repeat(64));
        // Before: any well-formed cookie with the same value in the form passed.
        let headers = with_cookie(&format!("mindrune_login={planted}"));
        assert!(!GUARD.check(&pre, &headers, &planted, false));
    }

    #[test]
    fn a_pre_session_serves_one_login_then_is_closed() {
        let pre = PreSessions::default();
        let (token, set) = GUARD.token(&pre, &HeaderMap::new(), false);
        let headers = with_cookie(pair(&set.unwrap()));
        let removal = GUARD.clear(&pre, &headers, false);
        assert!(removal.contains("Max-Age=0"), "{removal}");
        assert!(!GUARD.check(&pre, &headers, &token, false));
        assert!(pre.is_empty());
    }

    #[test]
    fn when_secure_the_cookie_is_host_prefixed_and_a_plain_one_is_not_read() {
        let pre = PreSessions::default();
        let (token, set) = GUARD.token(&pre, &HeaderMap::new(), true);
        let set = set.unwrap();
        assert!(set.starts_with("__Host-mindrune_login=mr_login_"), "{set}");
        assert!(
            set.contains("; Path=/;") && set.contains("; Secure"),
            "{set}"
        );
        let id = pair(&set).split_once('=').unwrap().1;
        assert!(GUARD.check(&pre, &with_cookie(pair(&set)), &token, true));
        // The same id under the plain name (which a sibling subdomain could set) is refused.
        let plain = with_cookie(&format!("mindrune_login={id}"));
        assert!(!GUARD.check(&pre, &plain, &token, true));
    }

    #[test]
    fn a_flood_of_login_pages_keeps_a_bounded_table() {
        let pre = PreSessions::default();
        for _ in 0..MAX_PRE_SESSIONS + 50 {
            let _ = GUARD.token(&pre, &HeaderMap::new(), false);
        }
        assert_eq!(pre.len(), MAX_PRE_SESSIONS);
    }
}
