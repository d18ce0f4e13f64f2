//! Error answers: every failure is a status code and a JSON body that says what happened, where
//! (the request field) and what to do.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::wire::{ErrorBody, ErrorDetail};

/// The longest message an error answer carries: a message that quotes what a client sent (a
/// value of the wrong type, a path) must not send a hostile megabyte back.
pub(crate) const MAX_MESSAGE_CHARS: usize = 2_000;
/// The longest field path an error answer names.
pub(crate) const MAX_FIELD_CHARS: usize = 300;

/// `text` cut after `max` characters, saying how long it was.
fn cut(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((at, _)) => format!("{}… (cut; {} bytes in all)", &text[..at], text.len()),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: ErrorDetail,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            detail: ErrorDetail {
                code: code.into(),
                message: cut(message.into(), MAX_MESSAGE_CHARS),
                field: None,
            },
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn bad_field(field: impl Into<String>, message: impl Into<String>) -> Self {
        let mut error = Self::bad_request(message);
        error.detail.field = Some(cut(field.into(), MAX_FIELD_CHARS));
        error
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, "gone", message)
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!(
                "the request body is over the {limit}-byte limit of this endpoint (docs/openapi.json lists every bound); nothing was stored — send less at once (fewer events per batch)"
            ),
        )
    }

    /// A request that did not arrive in time (its body trickled past its deadline).
    pub fn request_timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, "request_timeout", message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
    }

    /// The library's disk is full: 507, with the reason, so a runner keeps its spool and
    /// tries again later and the operator reads what to free.
    pub fn insufficient_storage(reason: impl std::fmt::Display) -> Self {
        tracing::error!("the library's disk is full: {reason}");
        Self::new(
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage",
            format!(
                "the server's disk is full, so nothing was stored ({reason}); send it again later"
            ),
        )
    }

    /// A failure of the server itself. The details go to the log, not to the client.
    pub fn internal(context: &str, err: impl std::fmt::Display) -> Self {
        tracing::error!("{context}: {err}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            format!("{context}; nothing was stored — try again (the server log has the details)"),
        )
    }
}

impl From<mindrune_store::StoreError> for ApiError {
    fn from(err: mindrune_store::StoreError) -> Self {
        match err {
            mindrune_store::StoreError::NotFound(what) => {
                ApiError::not_found(format!("{what}; it may have been removed"))
            }
            mindrune_store::StoreError::DiskFull(reason) => ApiError::insufficient_storage(reason),
            other => ApiError::internal("the library could not be read or written", other),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: self.detail };
        (self.status, axum::Json(body)).into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_never_echoes_a_hostile_megabyte_back() {
        let huge = "a".repeat(10 * 1024 * 1024);
        let error = ApiError::bad_field(huge.clone(), format!("invalid type: string {huge:?}"));
        assert!(error.detail.message.chars().count() < MAX_MESSAGE_CHARS + 40);
        assert!(error.detail.message.ends_with("bytes in all)"));
        let field = error.detail.field.unwrap();
        assert!(
            field.chars().count() < MAX_FIELD_CHARS + 40,
            "{}",
            field.len()
        );
    }

    #[test]
    fn a_short_message_is_kept_whole() {
        let error = ApiError::bad_request("the body is not JSON");
        assert_eq!(error.detail.message, "the body is not JSON");
    }
}
