//! The runner's side of the runner protocol: blocking HTTP, one request at a time, every
//! answer sorted into what the runner should do next.

use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::wire::ErrorBody;

/// How long connecting may take before the server counts as away.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one request may take in all. A turn carries every script of the avatar; the server
/// answers 408 after its own (shorter) request timeout, so this only catches a server that went
/// silent.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest answer read: a mirror answer carries every sibling's shared skill file.
const MAX_ANSWER_BYTES: u64 = 256 * 1024 * 1024;

/// Why a request did not go through, sorted by what the runner does about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The server could not be reached, or answered 5xx, 408 or 429: try again later.
    Away(String),
    /// The server refused the runner's token (401): nothing will go through until the runner
    /// gets a new one.
    Unauthorized(String),
    /// Any other 4xx: this request is wrong and sending it again would not help.
    Refused {
        status: u16,
        message: String,
        /// The request field at fault, when the server named one (`events[3].event.kind`).
        field: Option<String>,
    },
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Away(message) | Failure::Unauthorized(message) => f.write_str(message),
            Failure::Refused {
                status,
                message,
                field: Some(field),
            } => write!(f, "{status}: {field}: {message}"),
            Failure::Refused {
                status,
                message,
                field: None,
            } => write!(f, "{status}: {message}"),
        }
    }
}

/// A runner's connection to its server.
pub(crate) struct Client {
    http: ureq::Agent,
    base: String,
    bearer: String,
    /// What the spool holds, sent with every request (the console shows each runner's).
    backlog: std::sync::atomic::AtomicU64,
    /// The hook's failures in the last day, sent with every request.
    hook_failures: std::sync::atomic::AtomicU64,
}

impl Client {
    /// A client for the server at `base` (`http://host:port`, no trailing path) with a runner
    /// token.
    pub(crate) fn new(base: &str, token: &str) -> Client {
        let http: ureq::Agent = ureq::Agent::config_builder()
            // Every status comes back as an answer, so 4xx and 5xx can be told apart.
            .http_status_as_error(false)
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_global(Some(REQUEST_TIMEOUT))
            .user_agent(concat!("mindrune-runner/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Client {
            http,
            base: base.trim_end_matches('/').to_string(),
            bearer: format!("Bearer {token}"),
            backlog: std::sync::atomic::AtomicU64::new(0),
            hook_failures: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// Sets the spool backlog the next requests report.
    pub(crate) fn note_backlog(&self, items: usize) {
        self.backlog.store(
            u64::try_from(items).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Sets the hook failures the next requests report.
    pub(crate) fn note_hook_failures(&self, failures: usize) {
        self.hook_failures.store(
            u64::try_from(failures).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    fn hook_failures(&self) -> String {
        self.hook_failures
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string()
    }

    fn backlog(&self) -> String {
        self.backlog
            .load(std::sync::atomic::Ordering::Relaxed)
            .to_string()
    }

    /// `GET path`, its JSON answer decoded.
    pub(crate) fn get<A: DeserializeOwned>(&self, path: &str) -> Result<A, Failure> {
        let url = format!("{}{path}", self.base);
        let answer = self
            .http
            .get(&url)
            .header("Authorization", &self.bearer)
            .header(crate::wire::SPOOL_HEADER, &self.backlog())
            .header(crate::wire::HOOK_FAILURES_HEADER, &self.hook_failures())
            .call();
        decode(path, self.answer(path, answer)?)
    }

    /// `POST path` with a JSON body, its JSON answer decoded.
    pub(crate) fn post<A: DeserializeOwned>(&self, path: &str, body: &[u8]) -> Result<A, Failure> {
        decode(path, self.post_raw(path, body)?)
    }

    /// `POST path` with a JSON body, for an endpoint that answers without content.
    pub(crate) fn post_empty(&self, path: &str, body: &[u8]) -> Result<(), Failure> {
        self.post_raw(path, body).map(|_| ())
    }

    fn post_raw(&self, path: &str, body: &[u8]) -> Result<Vec<u8>, Failure> {
        let url = format!("{}{path}", self.base);
        let answer = self
            .http
            .post(&url)
            .header("Authorization", &self.bearer)
            .header(crate::wire::SPOOL_HEADER, &self.backlog())
            .header(crate::wire::HOOK_FAILURES_HEADER, &self.hook_failures())
            .content_type("application/json")
            .send(body);
        self.answer(path, answer)
    }

    /// Sorts an answer: the body of a 2xx, or the failure.
    fn answer(
        &self,
        path: &str,
        answer: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Vec<u8>, Failure> {
        let mut response = answer.map_err(|err| {
            Failure::Away(format!(
                "{} could not be reached for {path}: {err}",
                self.base
            ))
        })?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec();
        if (200..300).contains(&status) {
            // A 2xx whose body was cut off is treated as no answer: what it did is not known,
            // and everything the runner sends is safe to send again.
            return body.map_err(|err| {
                Failure::Away(format!("the answer of {path} could not be read: {err}"))
            });
        }
        let body = body.unwrap_or_default();
        let detail = serde_json::from_slice::<ErrorBody>(&body)
            .ok()
            .map(|b| b.error);
        let message = detail.as_ref().map_or_else(
            || {
                let text = String::from_utf8_lossy(&body);
                let text = text.trim();
                if text.is_empty() {
                    format!("HTTP {status} from {path}")
                } else {
                    format!(
                        "HTTP {status} from {path}: {}",
                        text.chars().take(500).collect::<String>()
                    )
                }
            },
            |d| d.message.clone(),
        );
        match status {
            401 => Err(Failure::Unauthorized(message)),
            408 | 429 | 500..=599 => Err(Failure::Away(format!(
                "HTTP {status} from {path}: {message}"
            ))),
            400..=499 => Err(Failure::Refused {
                status,
                message,
                field: detail.and_then(|d| d.field),
            }),
            // A redirect or an informational answer is no answer from a MindRune server; it
            // may be a proxy in between that settles down.
            _ => Err(Failure::Away(format!(
                "HTTP {status} from {path}: {message}"
            ))),
        }
    }
}

fn decode<A: DeserializeOwned>(path: &str, body: Vec<u8>) -> Result<A, Failure> {
    serde_json::from_slice(&body).map_err(|err| {
        Failure::Away(format!(
            "the answer of {path} is not what this runner expects ({err}); is the server a MindRune server of the same version?"
        ))
    })
}
