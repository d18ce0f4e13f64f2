//! `web.fetch` and `http.read` answered from a fixture's `caller.http_responses`.
//!
//! Runx's harness replaces only the transport: the capability's own admission, allowlist,
//! redirect, byte-limit and extraction code still runs over the fixture's bytes. We do the same,
//! and there is no transport behind it at all, so a URL the fixture did not supply is a provider
//! error and no replay can ever reach the network.

use serde_json::{Map, Value, json};

/// Runx's ceiling on `max_bytes` (`STANDARD_HTTP_RESPONSE_BYTES`, 8 MiB).
pub(crate) const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// Runx stops following redirects after this many hops.
const MAX_REDIRECTS: usize = 10;

/// One supplied response.
struct Response {
    status: u16,
    headers: Map<String, Value>,
    body: Vec<u8>,
}

fn supplied(responses: &Map<String, Value>, url: &str) -> Option<Response> {
    let entry = responses.get(url)?.as_object()?;
    let status = entry
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(200);
    let headers = entry
        .get("headers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let body = match entry.get("body") {
        Some(Value::String(text)) => text.as_bytes().to_vec(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => other.to_string().into_bytes(),
    };
    Some(Response {
        status,
        headers,
        body,
    })
}

fn header<'a>(response: &'a Response, name: &str) -> Option<&'a str> {
    response
        .headers
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .and_then(|(_, value)| value.as_str())
}

/// The parts of an absolute http(s) URL the allowlist and redirect code need, parsed as a
/// browser (WHATWG) parses it, so the host checked is the host a real fetch would reach:
/// `https://evil.example\\@allowed.example/` is `evil.example`.
struct ParsedUrl {
    url: url::Url,
    host: String,
}

fn parse_url(raw: &str) -> Result<ParsedUrl, String> {
    let url = url::Url::parse(raw).map_err(|err| format!("url {raw:?} is not absolute: {err}"))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(format!(
            "url scheme {:?} is not http or https",
            url.scheme()
        ));
    }
    let host = url
        .host_str()
        .filter(|host| !host.is_empty())
        .ok_or_else(|| format!("url {raw:?} has no host"))?
        .to_owned();
    Ok(ParsedUrl { url, host })
}

/// The host Runx records as `attempted_host` even when the URL does not parse.
fn safe_host(raw: &str) -> String {
    parse_url(raw).map(|url| url.host).unwrap_or_default()
}

/// Exact hosts, `*` for any public host, and leading wildcards such as `*.example.com` (which
/// match subdomains only, as the input's description says).
pub(crate) fn host_allowed(host: &str, allowlist: &[String]) -> bool {
    allowlist.iter().any(|entry| {
        if entry == "*" {
            return is_public_host(host);
        }
        match entry.strip_prefix("*.") {
            Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
            None => host == entry,
        }
    })
}

/// Whether `*` may reach `host`: not `localhost`, and not a loopback, private, link-local,
/// shared, documentation or unspecified address (cloud metadata lives at 169.254.169.254).
fn is_public_host(host: &str) -> bool {
    use std::net::IpAddr;
    if host == "localhost" || host.ends_with(".localhost") {
        return false;
    }
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => {
            let [a, b, ..] = ip.octets();
            !(ip.is_loopback()
                || ip.is_private()
                || ip.is_link_local()
                || ip.is_unspecified()
                || ip.is_broadcast()
                || ip.is_documentation()
                || (a == 100 && (64..128).contains(&b)))
        }
        Ok(IpAddr::V6(ip)) => {
            let first = ip.segments()[0];
            !(ip.is_loopback()
                || ip.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || ip.to_ipv4_mapped().is_some())
        }
        Err(_) => true,
    }
}

fn normalize_allowlist(value: Option<&Value>) -> Result<Vec<String>, String> {
    let Some(value) = value else {
        return Ok(vec!["*".to_owned()]);
    };
    let items = value
        .as_array()
        .ok_or_else(|| "allowlist must be an array of hosts".to_owned())?;
    let mut hosts = Vec::new();
    for item in items {
        let host = item
            .as_str()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty() && h.len() <= 253)
            .ok_or_else(|| "allowlist entries must be non-empty host strings".to_owned())?;
        if !hosts.contains(&host) {
            hosts.push(host);
        }
    }
    if hosts.len() > 64 {
        return Err("allowlist holds more than 64 hosts".to_owned());
    }
    Ok(hosts)
}

fn join_location(current: &ParsedUrl, location: &str) -> String {
    current
        .url
        .join(location)
        .map_or_else(|_| location.to_owned(), String::from)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    Metadata,
    Links,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Metadata => "metadata",
            Self::Links => "links",
        }
    }

    fn empty(self) -> Value {
        match self {
            Self::Text => json!(""),
            Self::Metadata => json!({}),
            Self::Links => json!([]),
        }
    }
}

fn failed(
    decision: &str,
    host: &str,
    allowlist: &[String],
    mode: Mode,
    message: &str,
    fetched_at: &str,
) -> Value {
    json!({
        "decision": decision,
        "final_url": "",
        "status": 0,
        "content_digest": "",
        "extract_mode": mode.name(),
        "extracted": mode.empty(),
        "provenance": {"fetched_at": fetched_at, "redirects": [], "bytes": 0, "truncated": false},
        "policy": {
            "allowlist_decision": if decision == "policy_denied" { "denied" } else { "allowed" },
            "attempted_host": host,
            "allowlist_checked": allowlist,
        },
        "blocker": message,
    })
}

/// Which URL of a fetch is about to be requested; they differ only in how a refusal reads.
#[derive(Clone, Copy)]
enum Hop<'a> {
    /// The input URL: one that does not parse is the caller's to fix (`needs_agent`), reported
    /// against the host it seems to name.
    First { attempted: &'a str },
    /// A redirect's target: one that does not parse is the provider's fault
    /// (`provider_error`), reported against the fetch's first host.
    Redirect { initial_host: &'a str },
}

/// Parses the URL of `hop` and checks its host against the allowlist; a refusal is the
/// failed claim to return (`policy_denied` for a host off the allowlist, reported against
/// that host).
fn admit(
    raw: &str,
    hop: Hop<'_>,
    allowlist: &[String],
    mode: Mode,
    fetched_at: &str,
) -> Result<ParsedUrl, Value> {
    let (unparsable, reported_host, which) = match hop {
        Hop::First { attempted } => ("needs_agent", attempted, "host"),
        Hop::Redirect { initial_host } => ("provider_error", initial_host, "redirect host"),
    };
    let url = parse_url(raw).map_err(|message| {
        failed(
            unparsable,
            reported_host,
            allowlist,
            mode,
            &message,
            fetched_at,
        )
    })?;
    if !host_allowed(&url.host, allowlist) {
        let message = format!("{which} {:?} is not allowlisted", url.host);
        return Err(failed(
            "policy_denied",
            &url.host,
            allowlist,
            mode,
            &message,
            fetched_at,
        ));
    }
    Ok(url)
}

/// Run `web.fetch` against the supplied responses and return its claim `{fetch_result: ...}`.
pub(crate) fn web_fetch(inputs: &Value, responses: &Map<String, Value>, fetched_at: &str) -> Value {
    let result = fetch_result(inputs, responses, fetched_at);
    json!({ "fetch_result": result })
}

fn fetch_result(inputs: &Value, responses: &Map<String, Value>, fetched_at: &str) -> Value {
    let raw_url = inputs
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let attempted = safe_host(raw_url);
    let mode = match inputs
        .get("extract")
        .and_then(Value::as_str)
        .unwrap_or("text")
        .trim()
    {
        "text" => Mode::Text,
        "metadata" => Mode::Metadata,
        "links" => Mode::Links,
        _ => {
            return failed(
                "needs_agent",
                &attempted,
                &[],
                Mode::Text,
                "extract must be text, metadata, or links",
                fetched_at,
            );
        }
    };
    let allowlist = match normalize_allowlist(inputs.get("allowlist")) {
        Ok(list) => list,
        Err(message) => return failed("needs_agent", &attempted, &[], mode, &message, fetched_at),
    };
    if raw_url.is_empty() || allowlist.is_empty() {
        return failed(
            "needs_agent",
            &attempted,
            &allowlist,
            mode,
            "missing required input",
            fetched_at,
        );
    }
    let max_bytes = match inputs.get("max_bytes") {
        None => MAX_BYTES,
        Some(value) => match value.as_f64() {
            Some(n) if n.fract() == 0.0 && n >= 1.0 && n <= MAX_BYTES as f64 => n as u64,
            _ => {
                return failed(
                    "needs_agent",
                    &attempted,
                    &allowlist,
                    mode,
                    "max_bytes must be a positive integer no greater than 8388608",
                    fetched_at,
                );
            }
        },
    };
    let first = Hop::First {
        attempted: &attempted,
    };
    let mut current = match admit(raw_url, first, &allowlist, mode, fetched_at) {
        Ok(url) => url,
        Err(claim) => return claim,
    };
    let initial_host = current.host.clone();
    let mut current_url = raw_url.to_owned();
    let mut redirects = Vec::new();
    for hop in 0..=MAX_REDIRECTS {
        let Some(response) = supplied(responses, &current_url) else {
            let message = format!("no fixture response for {current_url}");
            return failed(
                "provider_error",
                &initial_host,
                &allowlist,
                mode,
                &message,
                fetched_at,
            );
        };
        if !(300..400).contains(&response.status) {
            return success(
                &initial_host,
                &allowlist,
                mode,
                &current_url,
                &response,
                redirects,
                max_bytes,
                fetched_at,
            );
        }
        let Some(location) = header(&response, "location") else {
            let message = format!(
                "provider returned redirect HTTP {} without a location",
                response.status
            );
            return failed(
                "provider_error",
                &initial_host,
                &allowlist,
                mode,
                &message,
                fetched_at,
            );
        };
        if hop == MAX_REDIRECTS {
            let message = format!("provider exceeded {MAX_REDIRECTS} redirects");
            return failed(
                "provider_error",
                &initial_host,
                &allowlist,
                mode,
                &message,
                fetched_at,
            );
        }
        let next_url = join_location(&current, location);
        let redirect = Hop::Redirect {
            initial_host: &initial_host,
        };
        let next = match admit(&next_url, redirect, &allowlist, mode, fetched_at) {
            Ok(url) => url,
            Err(claim) => return claim,
        };
        redirects.push(json!({"status": response.status, "from": current_url, "to": next_url}));
        current = next;
        current_url = next_url;
    }
    failed(
        "provider_error",
        &initial_host,
        &allowlist,
        mode,
        "redirect loop did not terminate",
        fetched_at,
    )
}

#[allow(clippy::too_many_arguments)]
fn success(
    initial_host: &str,
    allowlist: &[String],
    mode: Mode,
    final_url: &str,
    response: &Response,
    redirects: Vec<Value>,
    max_bytes: u64,
    fetched_at: &str,
) -> Value {
    let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let truncated = response.body.len() > limit;
    let body = &response.body[..response.body.len().min(limit)];
    let text = String::from_utf8_lossy(body);
    let content_type = header(response, "content-type").unwrap_or("").to_owned();
    let extracted = match mode {
        Mode::Text => Value::String(readable_text(&text, &content_type)),
        Mode::Metadata => metadata(&text, &content_type),
        Mode::Links => Value::Array(
            links(&text, final_url)
                .into_iter()
                .map(Value::String)
                .collect(),
        ),
    };
    json!({
        "decision": "ready",
        "final_url": final_url,
        "status": response.status,
        "content_digest": mindrune_core::sha256(body),
        "extract_mode": mode.name(),
        "extracted": extracted,
        "provenance": {
            "fetched_at": fetched_at,
            "redirects": redirects,
            "bytes": body.len(),
            "truncated": truncated,
        },
        "policy": {
            "allowlist_decision": "allowed",
            "attempted_host": initial_host,
            "allowlist_checked": allowlist,
        },
    })
}

/// `http.read`: the supplied response for one exact URL, as `{http_response: ...}`.
pub(crate) fn http_read(inputs: &Value, responses: &Map<String, Value>) -> Result<Value, String> {
    let url = inputs
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| "http.read needs a url input".to_owned())?;
    parse_url(url)?;
    let response =
        supplied(responses, url).ok_or_else(|| format!("no fixture response for {url}"))?;
    let text = String::from_utf8_lossy(&response.body).into_owned();
    let body = serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text));
    Ok(json!({
        "http_response": {
            "url": url,
            "status": response.status,
            "headers": response.headers,
            "body": body,
            "content_digest": mindrune_core::sha256(&response.body),
        }
    }))
}

fn is_html(text: &str, content_type: &str) -> bool {
    content_type.to_ascii_lowercase().contains("html")
        || text
            .trim_start()
            .to_ascii_lowercase()
            .starts_with("<!doctype html")
        || text.trim_start().to_ascii_lowercase().starts_with("<html")
}

/// Visible text of an HTML document (scripts and styles dropped, tags removed, whitespace
/// collapsed); any other content type is returned as it came, trimmed.
fn readable_text(text: &str, content_type: &str) -> String {
    if !is_html(text, content_type) {
        return text.trim().to_owned();
    }
    let mut out = String::new();
    let lower = text.to_ascii_lowercase();
    let mut i = 0;
    while i < text.len() {
        if text[i..].starts_with('<') {
            let mut from = i;
            if let Some(close) = ["script", "style"]
                .iter()
                .find(|tag| lower[i + 1..].starts_with(**tag))
                .map(|tag| format!("</{tag}>"))
            {
                // An unclosed script runs to the end of the document: stop here rather than
                // search again from every later `<` (which made a page of `<script>`s
                // quadratic).
                match lower[i..].find(&close) {
                    Some(end) => from = i + end,
                    None => break,
                }
            }
            match text[from..].find('>') {
                Some(end) => {
                    out.push(' ');
                    i = from + end + 1;
                }
                None => break,
            }
        } else {
            let next = text[i..].find('<').map_or(text.len(), |n| i + n);
            out.push_str(&decode_entities(&text[i..next]));
            i = next;
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn decode_entities(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", " ")
        .replace("&amp;", "&")
}

/// Every tag in the document as its lowercase name plus its attributes.
fn tags(text: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('>') else { break };
        let inner = &after[..end];
        rest = &after[end + 1..];
        if inner.starts_with('/') || inner.starts_with('!') {
            continue;
        }
        let name_end = inner
            .find(|c: char| c.is_whitespace() || c == '/')
            .unwrap_or(inner.len());
        let name = inner[..name_end].to_ascii_lowercase();
        found.push((name, attributes(&inner[name_end..])));
    }
    found
}

fn attributes(text: &str) -> Vec<(String, String)> {
    let mut attrs = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let name_end = rest
            .find(|c: char| c == '=' || c.is_whitespace() || c == '/')
            .unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        let mut value = String::new();
        if let Some(after_eq) = rest.strip_prefix('=') {
            let after_eq = after_eq.trim_start();
            if let Some(quote) = after_eq.chars().next().filter(|c| *c == '"' || *c == '\'') {
                let body = &after_eq[1..];
                let close = body.find(quote).unwrap_or(body.len());
                value = decode_entities(&body[..close]);
                rest = body.get(close + 1..).unwrap_or("");
            } else {
                let close = after_eq.find(char::is_whitespace).unwrap_or(after_eq.len());
                value = decode_entities(&after_eq[..close]);
                rest = &after_eq[close..];
            }
        } else if name.is_empty() {
            rest = rest.get(1..).unwrap_or("");
        }
        if !name.is_empty() {
            attrs.push((name, value));
        }
        rest = rest.trim_start();
    }
    attrs
}

fn attr<'a>(attrs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

/// `title`, `description`, `canonical`, `declared_language` and `content_type`, each present
/// only when the document declares it (the content type whenever the response carried one).
fn metadata(text: &str, content_type: &str) -> Value {
    let mut out = Map::new();
    if is_html(text, content_type) {
        let lower = text.to_ascii_lowercase();
        if let Some(open) = lower.find("<title") {
            let body_start = lower[open..].find('>').map(|n| open + n + 1);
            if let Some(start) = body_start
                && let Some(end) = lower[start..].find("</title>")
            {
                let title = decode_entities(text[start..start + end].trim());
                out.insert("title".to_owned(), Value::String(title));
            }
        }
        for (name, attrs) in tags(text) {
            match name.as_str() {
                "html" => {
                    if let Some(lang) = attr(&attrs, "lang") {
                        out.insert("declared_language".to_owned(), json!(lang));
                    }
                }
                "meta"
                    if attr(&attrs, "name")
                        .is_some_and(|n| n.eq_ignore_ascii_case("description")) =>
                {
                    if let Some(content) = attr(&attrs, "content") {
                        out.insert("description".to_owned(), json!(content));
                    }
                }
                "link"
                    if attr(&attrs, "rel").is_some_and(|r| r.eq_ignore_ascii_case("canonical")) =>
                {
                    if let Some(href) = attr(&attrs, "href") {
                        out.insert("canonical".to_owned(), json!(href));
                    }
                }
                _ => {}
            }
        }
    }
    if !content_type.is_empty() {
        out.insert("content_type".to_owned(), json!(content_type));
    }
    Value::Object(out)
}

/// Absolute hrefs of `<a>` tags, resolved against the final URL, in document order, deduplicated.
fn links(text: &str, final_url: &str) -> Vec<String> {
    let Ok(base) = parse_url(final_url) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (name, attrs) in tags(text) {
        if name != "a" {
            continue;
        }
        let Some(href) = attr(&attrs, "href").map(str::trim) else {
            continue;
        };
        if href.is_empty() || href.starts_with('#') {
            continue;
        }
        let absolute = join_location(&base, href);
        if parse_url(&absolute).is_ok() && seen.insert(absolute.clone()) {
            out.push(absolute);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn responses() -> Map<String, Value> {
        json!({
            "https://a.test/doc": {"status": 200, "headers": {"content-type": "text/html"},
                "body": "<html lang=\"fr\"><head><title>T</title><script>x()</script></head><body><p>Hello <b>world</b></p><a href=\"/next\">n</a><a href=\"https://b.test/x\">b</a></body></html>"},
            "https://a.test/moved": {"status": 301, "headers": {"Location": "https://evil.test/"}, "body": ""},
        })
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn text_links_and_truncation() {
        let text = web_fetch(&json!({"url": "https://a.test/doc"}), &responses(), "t");
        assert_eq!(
            text["fetch_result"]["extracted"],
            json!("T Hello world n b")
        );
        let links = web_fetch(
            &json!({"url": "https://a.test/doc", "extract": "links"}),
            &responses(),
            "t",
        );
        assert_eq!(
            links["fetch_result"]["extracted"],
            json!(["https://a.test/next", "https://b.test/x"])
        );
        let clipped = web_fetch(
            &json!({"url": "https://a.test/doc", "max_bytes": 10}),
            &responses(),
            "t",
        );
        assert_eq!(
            clipped["fetch_result"]["provenance"]["truncated"],
            json!(true)
        );
        assert_eq!(clipped["fetch_result"]["provenance"]["bytes"], json!(10));
    }

    #[test]
    fn allowlist_denies_before_and_after_redirects() {
        let denied = web_fetch(
            &json!({"url": "https://a.test/doc", "allowlist": ["b.test"]}),
            &responses(),
            "t",
        );
        assert_eq!(denied["fetch_result"]["decision"], json!("policy_denied"));
        let redirected = web_fetch(
            &json!({"url": "https://a.test/moved", "allowlist": ["a.test"]}),
            &responses(),
            "t",
        );
        assert_eq!(
            redirected["fetch_result"]["decision"],
            json!("policy_denied")
        );
        assert_eq!(
            redirected["fetch_result"]["policy"]["attempted_host"],
            json!("evil.test")
        );
        assert!(host_allowed("x.example.com", &["*.example.com".to_owned()]));
        assert!(!host_allowed("example.com", &["*.example.com".to_owned()]));
    }

    #[test]
    fn a_refused_first_url_and_a_refused_redirect_keep_their_own_decision_host_and_message() {
        let responses = json!({
            "https://a.test/to-ftp": {"status": 302, "headers": {"location": "ftp://c.test/x"}},
            "https://a.test/to-c": {"status": 302, "headers": {"location": "https://c.test/x"}},
        });
        let responses = responses.as_object().unwrap();
        let refusal = |url: &str| {
            let claim = web_fetch(
                &json!({"url": url, "allowlist": ["a.test"], "extract": "links"}),
                responses,
                "t",
            );
            let result = &claim["fetch_result"];
            assert_eq!(result["final_url"], "", "{url}");
            assert_eq!(result["extracted"], json!([]), "{url}");
            assert_eq!(result["provenance"]["redirects"], json!([]), "{url}");
            assert_eq!(result["policy"]["allowlist_checked"], json!(["a.test"]));
            (
                result["decision"].as_str().unwrap().to_owned(),
                result["policy"]["allowlist_decision"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                result["policy"]["attempted_host"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                result["blocker"].as_str().unwrap().to_owned(),
            )
        };
        let owned = |parts: [&str; 4]| -> (String, String, String, String) {
            parts.map(str::to_owned).into()
        };
        assert_eq!(
            refusal("ftp://a.test/x"),
            owned([
                "needs_agent",
                "allowed",
                "",
                "url scheme \"ftp\" is not http or https"
            ])
        );
        assert_eq!(
            refusal("https://c.test/x"),
            owned([
                "policy_denied",
                "denied",
                "c.test",
                "host \"c.test\" is not allowlisted"
            ])
        );
        assert_eq!(
            refusal("https://a.test/to-ftp"),
            owned([
                "provider_error",
                "allowed",
                "a.test",
                "url scheme \"ftp\" is not http or https"
            ])
        );
        assert_eq!(
            refusal("https://a.test/to-c"),
            owned([
                "policy_denied",
                "denied",
                "c.test",
                "redirect host \"c.test\" is not allowlisted"
            ])
        );
    }

    #[test]
    fn unknown_url_is_a_provider_error_not_a_network_call() {
        let missing = web_fetch(&json!({"url": "https://nowhere.test/"}), &responses(), "t");
        assert_eq!(missing["fetch_result"]["decision"], json!("provider_error"));
        assert!(http_read(&json!({"url": "https://nowhere.test/"}), &responses()).is_err());
    }

    #[test]
    fn the_allowlist_checks_the_host_a_browser_would_reach() {
        let url = parse_url("https://evil.example\\@allowed.example/x").unwrap();
        assert_eq!(url.host, "evil.example");
        assert!(!host_allowed(&url.host, &["allowed.example".to_owned()]));
        assert_eq!(
            parse_url("HTTPS://Allowed.EXAMPLE:8443/").unwrap().host,
            "allowed.example"
        );
    }

    #[test]
    fn any_public_host_leaves_out_private_and_metadata_addresses() {
        let any = ["*".to_owned()];
        for host in [
            "169.254.169.254",
            "127.0.0.1",
            "10.1.2.3",
            "localhost",
            "[::1]",
            "100.64.0.1",
        ] {
            assert!(!host_allowed(host, &any), "{host}");
        }
        assert!(host_allowed("example.com", &any));
        assert!(host_allowed("93.184.216.34", &any));
    }

    #[test]
    fn an_unclosed_script_ends_the_text_instead_of_rescanning() {
        let page = "<p>kept</p>".to_owned() + &"<script>".repeat(50_000);
        assert_eq!(readable_text(&page, "text/html"), "kept");
    }
}
