//! The server's configuration: a TOML file, then flags on top.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mindrune_engine::{
    AlertFormat, DEFAULT_FAILING_STREAK, DEFAULT_QUIET_FACTOR, QuietHours, Thresholds,
};
use mindrune_store::{Store, StoreError};
use serde::Deserialize;

/// Where `mindrune serve` listens unless told otherwise.
pub(crate) const DEFAULT_ADDR: &str = "127.0.0.1:7878";

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Mark the dashboard's and the console's cookies `Secure` and send HSTS. Unset, they are
    /// `Secure` whenever the server listens beyond loopback (a TLS proxy must sit in front of
    /// it there, or a session would cross the network in clear); `false` turns that off for a
    /// private network on purpose.
    pub secure_cookies: Option<bool>,
    /// A connection whose request headers have not all arrived after this many seconds is
    /// closed, so a slow client cannot hold one of the server's connections.
    pub header_read_timeout_secs: u64,
    /// The most connections served at once; one more is answered 503 and closed at once.
    pub max_connections: usize,
    /// The most connections one address may hold at once; one more from it is answered 503
    /// and closed at once, so a single host cannot take every slot. Behind a reverse proxy on
    /// the same host every client is the proxy's address: raise it to `max_connections` there
    /// and let the proxy limit each client.
    pub max_connections_per_peer: usize,
    /// A request whose body has not all arrived this many seconds after its headers is
    /// answered 408 and its connection closed, so a slow upload cannot hold a connection.
    pub body_read_timeout_secs: u64,
    /// How long a dashboard login lasts, in hours.
    pub session_hours: u64,
    /// Requests taking longer than this are answered 408, in seconds.
    pub request_timeout_secs: u64,
    /// How long a shutdown waits for requests in flight, in seconds.
    pub shutdown_grace_secs: u64,
    /// The personal assistants' playbook workspaces, each shown in one owner's Inbox
    /// (`[[playbooks]]` tables).
    pub playbooks: Vec<PlaybookWorkspace>,
    /// The webhooks an owner's alerts go to (`[[alerts]]` tables).
    pub alerts: Vec<AlertRule>,
    /// How often the alert loop looks at the families and the outbox, in seconds.
    pub alerts_interval_secs: u64,
    /// A failed delivery is tried again after this many seconds, doubled per failure (at most
    /// an hour).
    pub alerts_retry_base_secs: u64,
}

/// Where an owner's alerts go and which alert: `[[alerts]]` with `owner = "ada"` and
/// `webhook = "https://…"`; everything else has a default (a script failing 3 runs in a row, an
/// avatar quiet for 3 of its usual gaps, no quiet hours, generic JSON).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertRule {
    /// The owner's name, as `mindrune owner list` shows it.
    pub owner: String,
    /// The address alerts are posted to (http or https).
    #[serde(deserialize_with = "webhook_url")]
    pub webhook: String,
    /// `json` (default), `slack` (`{"text"}`) or `discord` (`{"content"}`).
    #[serde(default)]
    pub format: AlertFormat,
    /// A script alerts once it failed this many runs in a row.
    #[serde(default = "default_failing_streak")]
    pub failing_streak: usize,
    /// Whether a quiet avatar alerts.
    #[serde(default = "default_true")]
    pub quiet: bool,
    /// An avatar is quiet when its last run is this many of its usual gaps ago (at least 3,
    /// as on the pages).
    #[serde(default = "default_quiet_factor")]
    pub quiet_factor: i64,
    /// `"22:00-07:00"` (UTC): alerts and resolves due then wait until the hours end.
    #[serde(default)]
    pub quiet_hours: Option<QuietHours>,
    /// The dashboard's public address (`https://mindrune.example`), so an alert links to its
    /// page; without it the link is the page's path.
    #[serde(default)]
    pub dashboard_url: Option<String>,
    /// Where the entry is written (`mindrune.toml:12`), for errors.
    #[serde(skip)]
    pub origin: String,
}

fn default_failing_streak() -> usize {
    DEFAULT_FAILING_STREAK
}

fn default_true() -> bool {
    true
}

fn default_quiet_factor() -> i64 {
    DEFAULT_QUIET_FACTOR
}

/// An http or https address with a host, refused at load otherwise (the error names the line).
fn webhook_url<'de, D: serde::Deserializer<'de>>(de: D) -> Result<String, D::Error> {
    let text = String::deserialize(de)?;
    let uri: axum::http::Uri = text
        .parse()
        .map_err(|err| serde::de::Error::custom(format!("webhook {text:?} is not a URL: {err}")))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none_or(str::is_empty) {
        return Err(serde::de::Error::custom(format!(
            "webhook {:?} must be an http:// or https:// address with a host",
            crate::html::shown_webhook(&text)
        )));
    }
    Ok(text)
}

impl AlertRule {
    pub fn new(owner: impl Into<String>, webhook: impl Into<String>) -> AlertRule {
        AlertRule {
            owner: owner.into(),
            webhook: webhook.into(),
            format: AlertFormat::Json,
            failing_streak: DEFAULT_FAILING_STREAK,
            quiet: true,
            quiet_factor: DEFAULT_QUIET_FACTOR,
            quiet_hours: None,
            dashboard_url: None,
            origin: String::new(),
        }
    }

    /// Which attention items this webhook hears of.
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            failing_streak: self.failing_streak,
            quiet: self.quiet,
            quiet_factor: self.quiet_factor,
        }
    }

    fn place(&self, index: usize) -> String {
        if self.origin.is_empty() {
            format!("the configuration's [[alerts]] entry {}", index + 1)
        } else {
            self.origin.clone()
        }
    }
}

/// A personal assistant's playbook workspace and the owner whose dashboard Inbox shows its
/// cards: `[[playbooks]]` with `owner = "ada"` and `workspace = "/home/ada/assistant"`. A
/// workspace belongs to one owner; no other owner's session ever sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlaybookWorkspace {
    /// The owner's name, as `mindrune owner list` shows it.
    pub owner: String,
    /// The workspace folder (the one `mindrune playbook --workspace DIR init` set up). A
    /// relative path is taken from the configuration file's folder.
    pub workspace: PathBuf,
    /// What the Inbox calls the workspace (`name = "home assistant"`); its folder's name when
    /// left out.
    #[serde(default)]
    pub name: Option<String>,
    /// Where the entry is written (`mindrune.toml:12`), for errors; empty when the entry was
    /// made in code.
    #[serde(skip)]
    pub origin: String,
}

impl PlaybookWorkspace {
    /// The workspace's name as the Inbox shows it: its `name`, else its folder's name.
    pub fn shown_name(&self) -> String {
        self.name
            .clone()
            .filter(|name| !name.trim().is_empty())
            .or_else(|| {
                self.workspace
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
            })
            .unwrap_or_else(|| self.workspace.display().to_string())
    }

    pub fn new(owner: impl Into<String>, workspace: impl Into<PathBuf>) -> PlaybookWorkspace {
        PlaybookWorkspace {
            name: None,
            owner: owner.into(),
            workspace: workspace.into(),
            origin: String::new(),
        }
    }

    /// `mindrune.toml:12`, or the entry's place in the list when it has no file.
    fn place(&self, index: usize) -> String {
        if self.origin.is_empty() {
            format!("the configuration's [[playbooks]] entry {}", index + 1)
        } else {
            self.origin.clone()
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            addr: DEFAULT_ADDR.parse().expect("the default address parses"),
            secure_cookies: None,
            header_read_timeout_secs: 10,
            max_connections: 512,
            max_connections_per_peer: 64,
            body_read_timeout_secs: 30,
            session_hours: 12,
            request_timeout_secs: 60,
            shutdown_grace_secs: 30,
            playbooks: Vec::new(),
            alerts: Vec::new(),
            alerts_interval_secs: 30,
            alerts_retry_base_secs: 30,
        }
    }
}

impl ServerConfig {
    /// Whether cookies are `Secure` (and HSTS is sent): as configured, else whenever the
    /// server listens on an address other than loopback.
    pub fn cookies_secure(&self) -> bool {
        self.secure_cookies
            .unwrap_or_else(|| !self.addr.ip().is_loopback())
    }

    pub fn session_length(&self) -> Duration {
        Duration::from_secs(self.session_hours * 3600)
    }

    /// The playbook workspaces of the owner named `owner`, in the file's order.
    pub fn playbooks_of<'a>(
        &'a self,
        owner: &'a str,
    ) -> impl Iterator<Item = &'a PlaybookWorkspace> + 'a {
        self.playbooks
            .iter()
            .filter(move |entry| entry.owner == owner)
    }

    /// Checks every `[[playbooks]]` entry against the library and the disk: its owner exists,
    /// its workspace is a folder, and no workspace is listed twice (a workspace belongs to one
    /// owner). `mindrune serve` runs it before it listens; the error names the entry's line and
    /// field.
    pub fn check_playbooks(&self, store: &dyn Store) -> Result<(), ConfigError> {
        let mut seen: Vec<(PathBuf, usize)> = Vec::new();
        for (index, entry) in self.playbooks.iter().enumerate() {
            let refuse =
                |field: &'static str, value: String, message: String| ConfigError::Playbook {
                    place: entry.place(index),
                    field,
                    value,
                    message,
                };
            if store.owner_by_name(&entry.owner)?.is_none() {
                return Err(refuse(
                    "owner",
                    entry.owner.clone(),
                    format!(
                        "there is no owner named {:?}; `mindrune owner list` shows the owners, `mindrune owner add NAME` makes one",
                        entry.owner
                    ),
                ));
            }
            let shown = entry.workspace.display().to_string();
            if !entry.workspace.is_dir() {
                return Err(refuse(
                    "workspace",
                    shown,
                    "is not a folder; give the assistant's workspace (make one with `mindrune playbook --workspace DIR init`)".into(),
                ));
            }
            let resolved = entry
                .workspace
                .canonicalize()
                .unwrap_or_else(|_| entry.workspace.clone());
            if let Some((_, first)) = seen.iter().find(|(path, _)| *path == resolved) {
                return Err(refuse(
                    "workspace",
                    shown,
                    format!(
                        "is listed already ({}); a workspace belongs to one owner, so list it once",
                        self.playbooks[*first].place(*first)
                    ),
                ));
            }
            seen.push((resolved, index));
        }
        Ok(())
    }

    /// Checks every `[[alerts]]` entry's owner against the library; `mindrune serve` runs it
    /// before it listens.
    pub fn check_alerts(&self, store: &dyn Store) -> Result<(), ConfigError> {
        for (index, rule) in self.alerts.iter().enumerate() {
            if store.owner_by_name(&rule.owner)?.is_none() {
                return Err(ConfigError::Alert {
                    place: rule.place(index),
                    field: "owner",
                    value: rule.owner.clone(),
                    message: format!(
                        "there is no owner named {:?}; `mindrune owner list` shows the owners",
                        rule.owner
                    ),
                });
            }
        }
        Ok(())
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
        "{path}:{line}:{column}: {message}\n\nhint: the keys are addr, secure_cookies, header_read_timeout_secs, body_read_timeout_secs, max_connections, max_connections_per_peer, session_hours, request_timeout_secs, shutdown_grace_secs, alerts_interval_secs, alerts_retry_base_secs, [[playbooks]] tables (owner, workspace) and [[alerts]] tables (owner, webhook, format, failing_streak, quiet, quiet_factor, quiet_hours, dashboard_url)"
    )]
    Invalid {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{place}: [[playbooks]] {field} = {value:?}: {message}")]
    Playbook {
        place: String,
        field: &'static str,
        value: String,
        message: String,
    },
    #[error("{place}: [[alerts]] {field} = {value:?}: {message}")]
    Alert {
        place: String,
        field: &'static str,
        value: String,
        message: String,
    },
    #[error("cannot check the configuration's playbook owners: {0}")]
    Store(#[from] StoreError),
}

/// Reads a configuration file (TOML). Unknown keys are an error naming the line.
pub fn load(path: &Path) -> Result<ServerConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let mut config = parse(&text, &path.display().to_string())?;
    // A relative workspace is taken from the configuration file's folder, not from wherever
    // the server happens to be started.
    let folder = path.parent().unwrap_or_else(|| Path::new(""));
    for entry in &mut config.playbooks {
        if entry.workspace.is_relative() {
            entry.workspace = folder.join(&entry.workspace);
        }
    }
    Ok(config)
}

/// Parses a configuration's text; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<ServerConfig, ConfigError> {
    let invalid = |err: toml::de::Error| {
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
    };
    let mut config: ServerConfig = toml::from_str(text).map_err(invalid)?;
    for (key, value) in [
        ("header_read_timeout_secs", config.header_read_timeout_secs),
        ("max_connections", config.max_connections as u64),
        (
            "max_connections_per_peer",
            config.max_connections_per_peer as u64,
        ),
        ("body_read_timeout_secs", config.body_read_timeout_secs),
        ("alerts_interval_secs", config.alerts_interval_secs),
        ("alerts_retry_base_secs", config.alerts_retry_base_secs),
    ] {
        if value == 0 {
            // The key's own line: `max_connections` must not be found in
            // `max_connections_per_peer`.
            let offset = text
                .match_indices(key)
                .find(|(at, _)| {
                    text[at + key.len()..]
                        .trim_start_matches([' ', '\t'])
                        .starts_with('=')
                })
                .map_or(0, |(at, _)| at);
            let (line, column) = line_column(text, offset);
            return Err(ConfigError::Invalid {
                path: origin.to_string(),
                line,
                column,
                message: format!("{key} is 0; it must be at least 1"),
            });
        }
    }
    // Where each `[[playbooks]]` entry is, so a later check can name its line.
    let spans: PlaybookSpans = toml::from_str(text).map_err(invalid)?;
    for (entry, span) in config.playbooks.iter_mut().zip(&spans.playbooks) {
        entry.origin = format!("{origin}:{}", line_column(text, span.span().start).0);
    }
    for (index, (rule, span)) in config.alerts.iter_mut().zip(&spans.alerts).enumerate() {
        rule.origin = format!("{origin}:{}", line_column(text, span.span().start).0);
        let refuse = |field: &'static str, value: String, message: &str| ConfigError::Alert {
            place: rule.place(index),
            field,
            value,
            message: message.to_string(),
        };
        if rule.failing_streak == 0 {
            return Err(refuse(
                "failing_streak",
                "0".into(),
                "must be at least 1 (3 when left out)",
            ));
        }
        if rule.quiet_factor < DEFAULT_QUIET_FACTOR {
            return Err(refuse(
                "quiet_factor",
                rule.quiet_factor.to_string(),
                "must be at least 3 (an avatar is not quiet before; set quiet = false to hear nothing of quiet avatars)",
            ));
        }
        if let Some(url) = &rule.dashboard_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(refuse(
                "dashboard_url",
                url.clone(),
                "must be an http:// or https:// address",
            ));
        }
    }
    Ok(config)
}

/// Only the places of the `[[playbooks]]` and `[[alerts]]` entries (everything else is read by `ServerConfig`).
#[derive(Deserialize)]
struct PlaybookSpans {
    #[serde(default)]
    playbooks: Vec<toml::Spanned<toml::Table>>,
    #[serde(default)]
    alerts: Vec<toml::Spanned<toml::Table>>,
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
    use mindrune_core::secret_digest;
    use mindrune_store::Directory as _;

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
    fn cookies_are_secure_beyond_loopback_unless_configured_otherwise() {
        assert!(!ServerConfig::default().cookies_secure());
        let wide = parse("addr = \"0.0.0.0:9000\"\n", "x.toml").unwrap();
        assert!(wide.cookies_secure());
        let v6 = parse("addr = \"[::1]:9000\"\n", "x.toml").unwrap();
        assert!(!v6.cookies_secure());
        let lan = parse(
            "addr = \"192.168.1.5:9000\"\nsecure_cookies = false\n",
            "x.toml",
        )
        .unwrap();
        assert!(!lan.cookies_secure());
        let proxied = parse("secure_cookies = true\n", "x.toml").unwrap();
        assert!(proxied.cookies_secure());
    }

    #[test]
    fn a_zero_connection_cap_or_header_timeout_is_refused_naming_its_line() {
        let err = parse("addr = \"127.0.0.1:1\"\nmax_connections = 0\n", "m.toml").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("m.toml:2:1: max_connections is 0"),
            "{err}"
        );
        assert!(parse("header_read_timeout_secs = 0\n", "m.toml").is_err());
        let err = parse("max_connections_per_peer = 0\n", "m.toml").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("m.toml:1:1: max_connections_per_peer is 0")
        );
        let err = parse(
            "max_connections_per_peer = 9\nmax_connections = 0\n",
            "m.toml",
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("m.toml:2:1: max_connections is 0")
        );
        let err = parse("\nbody_read_timeout_secs = 0\n", "m.toml").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("m.toml:2:1: body_read_timeout_secs is 0")
        );
    }

    #[test]
    fn a_workspace_is_named_by_its_name_or_else_its_folder() {
        let named = parse(
            "[[playbooks]]\nowner = \"ada\"\nworkspace = \"/home/ada/assistant\"\nname = \"Ada's assistant\"\n",
            "m.toml",
        )
        .unwrap();
        assert_eq!(named.playbooks[0].shown_name(), "Ada's assistant");
        assert_eq!(
            PlaybookWorkspace::new("ada", "/home/ada/assistant").shown_name(),
            "assistant"
        );
    }

    #[test]
    fn alert_tables_take_defaults_and_name_their_line_when_wrong() {
        let text = "[[alerts]]\nowner = \"ada\"\nwebhook = \"https://hooks.example.com/x\"\n\n[[alerts]]\nowner = \"ada\"\nwebhook = \"http://127.0.0.1:9/h\"\nformat = \"slack\"\nfailing_streak = 5\nquiet_hours = \"22:00-07:00\"\n";
        let config = parse(text, "mindrune.toml").unwrap();
        let (plain, tuned) = (&config.alerts[0], &config.alerts[1]);
        assert_eq!(plain.thresholds(), Thresholds::default());
        assert_eq!(plain.format, AlertFormat::Json);
        assert_eq!(tuned.format, AlertFormat::Slack);
        assert_eq!(tuned.failing_streak, 5);
        assert_eq!(tuned.quiet_hours.unwrap().to_string(), "22:00-07:00");
        assert_eq!(tuned.origin, "mindrune.toml:5");
        let bad_url = parse(
            "[[alerts]]\nowner = \"ada\"\nwebhook = \"ftp://x/y\"\n",
            "mindrune.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(bad_url.starts_with("mindrune.toml:3:"), "{bad_url}");
        assert!(bad_url.contains("http:// or https://"), "{bad_url}");
        let bad_hours = parse(
            "[[alerts]]\nowner = \"ada\"\nwebhook = \"http://h/\"\nquiet_hours = \"late\"\n",
            "mindrune.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(bad_hours.starts_with("mindrune.toml:4:"), "{bad_hours}");
        let zero = parse(
            "\n[[alerts]]\nowner = \"ada\"\nwebhook = \"http://h/\"\nfailing_streak = 0\n",
            "mindrune.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            zero.starts_with("mindrune.toml:2: [[alerts]] failing_streak"),
            "{zero}"
        );
        let unknown = parse(
            "[[alerts]]\nowner = \"ada\"\nwebhook = \"http://h/\"\nsecret = 1\n",
            "mindrune.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(unknown.contains("unknown field `secret`"), "{unknown}");
    }

    #[test]
    fn an_unknown_key_names_its_line_and_column() {
        let err = parse("addr = \"127.0.0.1:1\"\n  colour = 3\n", "mindrune.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("mindrune.toml:2:3: "), "{text}");
        assert!(text.contains("colour"), "{text}");
    }

    #[test]
    fn playbook_workspaces_name_their_line() {
        let text = "addr = \"127.0.0.1:1\"\n\n[[playbooks]]\nowner = \"ada\"\nworkspace = \"/a\"\n\n[[playbooks]]\nowner = \"bob\"\nworkspace = \"/b\"\n";
        let config = parse(text, "mindrune.toml").unwrap();
        assert_eq!(config.playbooks.len(), 2);
        assert_eq!(config.playbooks[1].owner, "bob");
        assert_eq!(config.playbooks[1].workspace, PathBuf::from("/b"));
        assert_eq!(config.playbooks[0].origin, "mindrune.toml:3");
        assert_eq!(config.playbooks[1].origin, "mindrune.toml:7");
        assert_eq!(config.playbooks_of("ada").count(), 1);
        assert_eq!(config.playbooks_of("carol").count(), 0);
    }

    #[test]
    fn a_playbook_entry_without_its_workspace_is_refused() {
        let err = parse("[[playbooks]]\nowner = \"ada\"\n", "mindrune.toml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("mindrune.toml:1:"), "{text}");
        assert!(text.contains("workspace"), "{text}");
        let err = parse(
            "[[playbooks]]\nowner = \"ada\"\nworkspace = \"/a\"\npath = 1\n",
            "mindrune.toml",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("mindrune.toml:4:"), "{err}");
    }

    #[test]
    fn the_check_names_an_unknown_owner_and_a_missing_folder() {
        let store = mindrune_store::SqliteStore::open_in_memory().unwrap();
        store
            .create_owner("ada", &secret_digest("mrk_ada_key"), 1)
            .unwrap();
        let folder = std::env::temp_dir();
        let text = format!(
            "[[playbooks]]\nowner = \"ada\"\nworkspace = {:?}\n\n[[playbooks]]\nowner = \"adda\"\nworkspace = {:?}\n",
            folder.display().to_string(),
            folder.display().to_string()
        );
        let config = parse(&text, "mindrune.toml").unwrap();
        let err = config.check_playbooks(&store).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "mindrune.toml:5: [[playbooks]] owner = \"adda\": there is no owner named"
            ),
            "{err}"
        );
        let mut config = parse(&text.replace("adda", "ada"), "mindrune.toml").unwrap();
        let err = config.check_playbooks(&store).unwrap_err().to_string();
        assert!(
            err.contains("mindrune.toml:5: [[playbooks]] workspace"),
            "{err}"
        );
        assert!(err.contains("is listed already (mindrune.toml:1)"), "{err}");
        config.playbooks.truncate(1);
        config.check_playbooks(&store).unwrap();
        config.playbooks[0].workspace = folder.join("mindrune-no-such-folder-here");
        let err = config.check_playbooks(&store).unwrap_err().to_string();
        assert!(
            err.contains("workspace = ") && err.contains("is not a folder"),
            "{err}"
        );
    }
}
