//! The server's configuration: a TOML file, then flags on top.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

/// Where `mindrune serve` listens unless told otherwise.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7878";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Mark the dashboard's cookie `Secure` (set it when a TLS proxy sits in front).
    pub secure_cookies: bool,
    /// How long a dashboard login lasts, in hours.
    pub session_hours: u64,
    /// Requests taking longer than this are answered 408, in seconds.
    pub request_timeout_secs: u64,
    /// How long a shutdown waits for requests in flight, in seconds.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: DEFAULT_ADDR.parse().expect("the default address parses"),
            secure_cookies: false,
            session_hours: 12,
            request_timeout_secs: 60,
            shutdown_grace_secs: 30,
        }
    }
}

impl ServerConfig {
    pub fn session_length(&self) -> Duration {
        Duration::from_secs(self.session_hours * 3600)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the configuration {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}:{line}:{column}: {message}\n\nhint: the keys are addr, secure_cookies, session_hours, request_timeout_secs and shutdown_grace_secs"
    )]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
}

/// Reads a configuration file (TOML). Unknown keys are an error naming the line.
pub fn load(path: &Path) -> Result<ServerConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&text, &path.display().to_string())
}

/// Parses a configuration's text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<ServerConfig, ConfigError> {
    toml::from_str(text).map_err(|err: toml::de::Error| {
        let (line, column) = err
            .span()
            .map(|span| line_column(text, span.start))
            .unwrap_or((1, 1));
        ConfigError::Invalid {
            path: origin.to_string(),
            line,
            column,
            message: err.message().to_string(),
        }
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    // A span that does not fall on a character boundary points at the whole text's end.
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_default() {
        assert_eq!(parse("", "x.toml").unwrap(), ServerConfig::default());
    }

    #[test]
    fn keys_override_the_default() {
        let config = parse("addr = \"0.0.0.0:9000\"\nsession_hours = 2\n", "x.toml").unwrap();
        assert_eq!(config.addr.port(), 9000);
        assert_eq!(config.session_hours, 2);
    }

    #[test]
    fn an_unknown_key_names_its_line_and_column() {
        let err = parse("addr = \"127.0.0.1:1\"\n  colour = 3\n", "mindrune.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("mindrune.toml:2:3: "), "{text}");
        assert!(text.contains("colour"), "{text}");
    }
}
