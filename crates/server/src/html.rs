//! The pieces every HTML page of the dashboard and the console shares: the page layout, error
//! pages, text scrubbed on its way to a page, cookies and the static assets.
//!
//! Pages are built with maud's `html!`: every value it interpolates is escaped, so a script's
//! name or goal cannot become markup whatever a handler forgets. Text still passes through
//! [`Shown::plain`] first, which scrubs the secrets it may hold. `PreEscaped`, the one way
//! around the escaping, is used only where the line before says `// Unescaped because:` and why
//! (a test holds every file of the crate to that). The
//! Content-Security-Policy forbids inline scripts and styles as a second line of defence, so
//! pages carry neither: behaviour lives in `static/app.js`, looks in `static/app.css`.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
pub(crate) use maud::{Markup, html};
use mindrune_core::Scrubber;

use crate::state::AppState;

/// Text on its way to a page: scrubbed of the secrets it may hold (the owner's key and
/// credential shapes); maud escapes it where a page interpolates it. What the store returns
/// was scrubbed when it was saved; scrubbing again is cheap and keeps a page safe even if a
/// row slipped through.
pub(crate) struct Shown {
    scrubber: Scrubber,
}

impl Shown {
    /// Scrubs the given exact secrets (a login form's typed key) besides every credential shape
    /// (owners' keys among them: `mrk_` and 48 hex digits).
    pub(crate) fn new(known: &[&str]) -> Shown {
        Shown {
            scrubber: Scrubber::new(known),
        }
    }

    /// The text, scrubbed: what a page interpolates (maud escapes it there) and what a
    /// plain-text answer carries.
    pub(crate) fn plain(&self, text: &str) -> String {
        self.scrubber.scrub(text).text.into_owned()
    }
}

/// `1 script`, `2 scripts`.
pub(crate) fn count(n: impl Into<i64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `12,345`.
pub(crate) fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 { format!("-{out}") } else { out }
}

/// Times and scores as the command line shows them (one implementation for both faces).
pub(crate) use mindrune_engine::{ago, points, when};

/// A time shown as how long ago it was, with the exact time (UTC) on hover and for machines:
/// `<time datetime="2026-12-07T06:47:00Z" title="2026-12-07 06:47 UTC">8 d ago</time>`.
pub(crate) fn time_ago(at: Option<i64>, now: i64) -> Markup {
    let Some(at) = at else {
        return html! { "never" };
    };
    let iso = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default();
    html! {
        time datetime=(iso) title={ (when(Some(at))) " UTC" } { (ago(at, now)) }
    }
}

/// A unified diff as HTML: scrubbed as a whole, then each line marked as added, removed, a
/// hunk or a file header (the colours live in `app.css`).
pub(crate) fn diff_html(diff: &str, shown: &Shown) -> Markup {
    let diff = shown.plain(diff);
    let class = |line: &str| {
        if line.starts_with("+++") || line.starts_with("---") {
            "meta"
        } else if line.starts_with("@@") {
            "hunk"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else {
            ""
        }
    };
    html! {
        pre.diff { code {
            @for line in diff.split_inclusive('\n') {
                @match class(line) {
                    "" => (line),
                    class => span class=(class) { (line) },
                }
            }
        } }
    }
}

/// What the page header offers besides the brand.
pub(crate) enum Nav<'a> {
    /// The login pages: nothing to go to yet.
    None,
    /// An owner's pages: the family, the Inbox of playbook cards with the number waiting
    /// when the owner has playbook workspaces (`inbox`), and a logout form (which needs the
    /// session's CSRF token).
    Owner {
        owner: &'a str,
        csrf: &'a str,
        inbox: Option<usize>,
    },
    /// The operator's console.
    Operator,
}

/// A whole page: the shared head (viewport, stylesheet, script), the header and `main`.
pub(crate) fn page(title: &str, nav: Nav<'_>, body: Markup) -> Markup {
    page_shell(title, nav, body)
}

fn page_shell(title: impl maud::Render, nav: Nav<'_>, body: impl maud::Render) -> Markup {
    html! {
        (maud::DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="referrer" content="no-referrer";
                title { (title) " · MindRune" }
                link rel="icon" href="data:,";
                link rel="stylesheet" href=(CSS.url);
                script src=(JS.url) defer {}
            }
            body {
                header.top { div.top-inner { (nav_html(nav)) } }
                main { (body) }
            }
        }
    }
}

fn nav_html(nav: Nav<'_>) -> Markup {
    match nav {
        Nav::None => html! { span.brand { "MindRune" } },
        Nav::Owner { owner, csrf, inbox } => html! {
            a.brand href="/dashboard" { "MindRune" }
            nav aria-label="Account" {
                @match inbox {
                    None => {},
                    Some(0) => a href="/dashboard/inbox" { "Inbox" },
                    Some(n) => a href="/dashboard/inbox" {
                        "Inbox " span.count aria-label={ (n) " waiting" } { (n) }
                    },
                }
                span.who { (owner) }
                form method="post" action="/dashboard/logout" class="inline" {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" class="link" { "Log out" }
                }
            }
        },
        Nav::Operator => html! {
            a.brand href="/console" { "MindRune" }
            nav aria-label="Console" {
                span.who { "Operator console · read-only" }
                form method="post" action="/console/logout" class="inline" {
                    button type="submit" class="link" { "Log out" }
                }
            }
        },
    }
}

/// An HTML answer. Pages hold a family's private data, so no cache keeps them.
pub(crate) fn respond(status: StatusCode, html: Markup) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/html; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        html.into_string(),
    )
        .into_response()
}

/// A small error page: what happened, in words, and where to go next.
pub(crate) fn error_page(status: StatusCode, message: &str, back: (&str, &str)) -> Response {
    let title = status.canonical_reason().unwrap_or("Error");
    let body = html! {
        section.card.narrow {
            h1 { (title) }
            p { (message) }
            p { a href=(back.0) { (back.1) } }
        }
    };
    respond(status, page(title, Nav::None, body))
}

/// A `Set-Cookie` value: HttpOnly and SameSite=Strict always, `Secure` when the server sits
/// behind TLS. `max_age` 0 deletes the cookie.
///
/// When `secure`, the cookie is named `__Host-<name>` with `Path=/`: a browser takes such a
/// cookie only from this very origin over TLS, so neither a sibling subdomain nor a page over
/// plain HTTP can plant one (the prefix demands `Secure`, no `Domain` and `Path=/`).
pub(crate) fn cookie(
    name: &str,
    value: &str,
    path: &str,
    max_age_secs: u64,
    secure: bool,
) -> String {
    if secure {
        format!(
            "__Host-{name}={value}; Path=/; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict; Secure"
        )
    } else {
        format!("{name}={value}; Path={path}; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict")
    }
}

/// Adds `Set-Cookie` headers to an answer (a cookie that is not a valid header value, which
/// `cookie` never makes, is left out).
pub(crate) fn set_cookies(
    response: &mut axum::response::Response,
    cookies: impl IntoIterator<Item = String>,
) {
    for cookie in cookies {
        if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
            response.headers_mut().append(header::SET_COOKIE, value);
        }
    }
}

/// The value of a cookie of the request, by the name [`cookie`] gave it: `__Host-<name>` when
/// `secure` (a plain `<name>` is then not read: anyone could have set it).
pub(crate) fn cookie_value(headers: &HeaderMap, name: &str, secure: bool) -> Option<String> {
    let name = if secure {
        format!("__Host-{name}")
    } else {
        name.to_string()
    };
    let name = name.as_str();
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_string())
}

/// A static file served with a content-derived version in its URL, so browsers may keep it
/// for a year and still see a new release's file at once.
pub(crate) struct Asset {
    pub url: String,
    body: &'static str,
    content_type: &'static str,
}

impl Asset {
    fn new(path: &str, body: &'static str, content_type: &'static str) -> Asset {
        let digest = mindrune_core::sha256(body.as_bytes());
        let short = digest.trim_start_matches("sha256:");
        Asset {
            url: format!("{path}?v={}", &short[..12.min(short.len())]),
            body,
            content_type,
        }
    }

    fn response(&self) -> Response {
        (
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(self.content_type),
                ),
                (
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=31536000, immutable"),
                ),
            ],
            self.body,
        )
            .into_response()
    }
}

static CSS: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "/static/app.css",
        include_str!("../static/app.css"),
        "text/css; charset=utf-8",
    )
});

static JS: LazyLock<Asset> = LazyLock::new(|| {
    Asset::new(
        "/static/app.js",
        include_str!("../static/app.js"),
        "text/javascript; charset=utf-8",
    )
});

/// `/static/app.css` and `/static/app.js`.
pub(crate) fn static_routes() -> Router<AppState> {
    Router::new()
        .route("/static/app.css", get(|| async { CSS.response() }))
        .route("/static/app.js", get(|| async { JS.response() }))
}

/// A webhook's address as the console and the log show it: without its user, password and
/// query (where tokens live); Slack's and Discord's paths hold theirs, so only the path's
/// first part is kept.
pub(crate) fn shown_webhook(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let first = path.split('/').next().unwrap_or("");
    let more = if path.len() > first.len() { "/…" } else { "" };
    let scheme = if scheme.is_empty() {
        String::new()
    } else {
        format!("{scheme}://")
    };
    format!("{scheme}{host}/{first}{more}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// maud escapes every interpolated value; `PreEscaped` is the way around it, so each use
    /// must say why on the line before.
    #[test]
    fn every_unescaped_insertion_says_why() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        // Put together so that this test's own text is not a use.
        let needle = ["Pre", "Escaped("].concat();
        let mut unexplained = Vec::new();
        let mut dirs = vec![src];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let lines: Vec<&str> = text.lines().collect();
                for (i, line) in lines.iter().enumerate() {
                    let code = line.split("//").next().unwrap_or("");
                    if code.contains(&needle)
                        && !(i > 0 && lines[i - 1].contains("// Unescaped because: "))
                    {
                        unexplained.push(format!("{}:{}", path.display(), i + 1));
                    }
                }
            }
        }
        assert!(
            unexplained.is_empty(),
            "PreEscaped without a reason: {unexplained:?}"
        );
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(-1234567), "-1,234,567");
    }

    #[test]
    fn a_shown_webhook_keeps_no_secret() {
        assert_eq!(
            shown_webhook("https://user:pw@hooks.example.com/services/T0/B0/secret?token=abc"),
            "https://hooks.example.com/services/…"
        );
        assert_eq!(
            shown_webhook("http://127.0.0.1:9000/hook"),
            "http://127.0.0.1:9000/hook"
        );
        assert_eq!(shown_webhook("http://h"), "http://h/");
    }

    #[test]
    fn shown_text_is_scrubbed_and_then_escaped_where_a_page_puts_it() {
        let shown = Shown::new(&["mrk_secret_owner_key_123"]);
        let text = shown.plain("<b>key mrk_secret_owner_key_123</b>");
        assert!(!text.contains("mrk_secret_owner_key_123"), "{text}");
        let page = html! { p { (text) } }.into_string();
        assert!(page.starts_with("<p>&lt;b&gt;key "), "{page}");
        assert!(page.ends_with("&lt;/b&gt;</p>"), "{page}");
    }

    #[test]
    fn a_page_escapes_its_title_and_the_owner_s_name() {
        let page = page(
            "<i>x</i>",
            Nav::Owner {
                owner: "a\"<b>",
                csrf: "t",
                inbox: Some(2),
            },
            html! { p { "body" } },
        )
        .into_string();
        assert!(
            page.contains("<title>&lt;i&gt;x&lt;/i&gt; · MindRune</title>"),
            "{page}"
        );
        assert!(
            page.contains("<span class=\"who\">a&quot;&lt;b&gt;</span>"),
            "{page}"
        );
        assert!(page.contains("aria-label=\"2 waiting\">2</span>"), "{page}");
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    }

    #[test]
    fn asset_urls_carry_a_content_version() {
        assert!(CSS.url.starts_with("/static/app.css?v="));
        assert!(JS.url.starts_with("/static/app.js?v="));
    }

    #[test]
    fn cookies_are_http_only_and_strict_and_host_prefixed_when_secure() {
        let c = cookie("a", "b", "/console", 60, true);
        assert_eq!(
            c,
            "__Host-a=b; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
        );
        assert_eq!(
            cookie("a", "b", "/console", 60, false),
            "a=b; Path=/console; Max-Age=60; HttpOnly; SameSite=Strict"
        );
    }

    #[test]
    fn a_secure_server_reads_only_the_host_prefixed_cookie() {
        let mut headers = HeaderMap::new();
        headers.insert(header::COOKIE, "a=planted; __Host-a=mine".parse().unwrap());
        assert_eq!(cookie_value(&headers, "a", true).as_deref(), Some("mine"));
        assert_eq!(
            cookie_value(&headers, "a", false).as_deref(),
            Some("planted")
        );
        headers.insert(header::COOKIE, "a=planted".parse().unwrap());
        assert_eq!(cookie_value(&headers, "a", true), None);
    }
}
