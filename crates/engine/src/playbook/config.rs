//! The workspace's `playbooks.toml` (the human's settings for the playbook face) and its
//! `permissions.yaml` (who can do what).

use std::path::{Path, PathBuf};

use mindrune_core::Permissions;
use serde::Deserialize;

use super::PlaybookError;

pub const CONFIG_FILE: &str = "playbooks.toml";
pub const PERMISSIONS_FILE: &str = "permissions.yaml";

/// The default for `max_waiting_drafts`: enough for a day's suggestions, few enough to read.
pub(crate) const DEFAULT_MAX_WAITING_DRAFTS: usize = 5;
/// The default for `carry_over_tool_calls`: a task closed as done after this many tool calls
/// was worth writing down.
pub(crate) const DEFAULT_CARRY_OVER_TOOL_CALLS: u32 = 8;

/// The default for `fixer_budget_usd`: a few reads of a skill and a transcript, and one answer.
pub(crate) const DEFAULT_FIXER_BUDGET_USD: f64 = 1.0;
/// The default for `fixer_timeout_secs`.
pub(crate) const DEFAULT_FIXER_TIMEOUT_SECS: u64 = 600;

/// Which fixer a report starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fixer {
    /// MindRune's own fixer on Claude Code (`mindrune refine fix`): read-only tools, one
    /// schema-checked answer that MindRune files.
    Claude,
    /// The human's own command line, run with `sh -c`.
    Command(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlaybookConfig {
    /// The tools the assistant's runtime has besides MindRune's own MCP tools.
    pub(crate) tools: Vec<String>,
    /// The home tree: every path a skill names must be inside it.
    pub(crate) home: PathBuf,
    /// The fixer started in the background for each report: MindRune's own on Claude Code
    /// (`fixer = "claude"`, the default when `claude` is on PATH), or a shell command. `None`
    /// (`fixer = "none"`, or no Claude Code): the correction is recorded only.
    pub(crate) fixer: Option<Fixer>,
    /// What one run of MindRune's own fixer may cost (US dollars, Claude Code's count).
    pub(crate) fixer_budget_usd: f64,
    /// How long one run of MindRune's own fixer may take.
    pub(crate) fixer_timeout_secs: u64,
    /// When nobody attends a `skill_create` call, it stops once this many drafts wait.
    pub(crate) max_waiting_drafts: usize,
    /// A task its checks closed as done that took at least this many tool calls suggests a skill.
    pub carry_over_tool_calls: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    tools: Vec<String>,
    home: Option<PathBuf>,
    fixer: Option<String>,
    fixer_budget_usd: Option<f64>,
    fixer_timeout_secs: Option<u64>,
    max_waiting_drafts: Option<usize>,
    carry_over_tool_calls: Option<u32>,
}

impl PlaybookConfig {
    /// Reads `<workspace>/playbooks.toml`, or the defaults when there is none. The home tree
    /// defaults to `$HOME`, and to the workspace's parent when `$HOME` is unset.
    pub(crate) fn load(workspace: &Path) -> Result<PlaybookConfig, PlaybookError> {
        let path = workspace.join(CONFIG_FILE);
        let raw = match std::fs::read_to_string(&path) {
            Ok(text) => {
                toml::from_str::<RawConfig>(&text).map_err(|err| PlaybookError::Config {
                    path: path.clone(),
                    message: err.to_string().trim_end().to_string(),
                })?
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => RawConfig {
                tools: Vec::new(),
                home: None,
                fixer: None,
                fixer_budget_usd: None,
                fixer_timeout_secs: None,
                max_waiting_drafts: None,
                carry_over_tool_calls: None,
            },
            Err(err) => return Err(super::io_error("read", &path)(err)),
        };
        let home = match raw.home {
            Some(home) => home,
            None => std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .or_else(|| workspace.parent().map(Path::to_path_buf))
                .unwrap_or_else(|| workspace.to_path_buf()),
        };
        if !home.is_absolute() {
            return Err(PlaybookError::Config {
                path,
                message: format!(
                    "home = {:?} is not an absolute path; write the full path of the home tree",
                    home.display().to_string()
                ),
            });
        }
        // The home tree as the filesystem names it, so that a workspace reached through a
        // symlinked home is still seen inside it.
        let home = home.canonicalize().unwrap_or(home);
        if let Some(tool) = raw.tools.iter().find(|tool| tool.trim().is_empty()) {
            return Err(PlaybookError::Config {
                path,
                message: format!("tools lists an empty name ({tool:?}); remove it"),
            });
        }
        let fixer = match raw.fixer.as_deref().map(str::trim) {
            None => crate::agent::find_on_path("claude").map(|_| Fixer::Claude),
            Some("" | "none") => None,
            Some("claude") => Some(Fixer::Claude),
            Some(_) => raw.fixer.clone().map(Fixer::Command),
        };
        let fixer_budget_usd = raw.fixer_budget_usd.unwrap_or(DEFAULT_FIXER_BUDGET_USD);
        if !(fixer_budget_usd.is_finite() && fixer_budget_usd > 0.0) {
            return Err(PlaybookError::Config {
                path,
                message: format!(
                    "fixer_budget_usd = {fixer_budget_usd} is not a positive amount of dollars; write e.g. fixer_budget_usd = 0.5"
                ),
            });
        }
        let fixer_timeout_secs = raw.fixer_timeout_secs.unwrap_or(DEFAULT_FIXER_TIMEOUT_SECS);
        if fixer_timeout_secs == 0 {
            return Err(PlaybookError::Config {
                path,
                message: "fixer_timeout_secs = 0 leaves the fixer no time; write e.g. fixer_timeout_secs = 600".to_string(),
            });
        }
        Ok(PlaybookConfig {
            tools: raw.tools,
            home,
            fixer,
            fixer_budget_usd,
            fixer_timeout_secs,
            max_waiting_drafts: raw.max_waiting_drafts.unwrap_or(DEFAULT_MAX_WAITING_DRAFTS),
            carry_over_tool_calls: raw
                .carry_over_tool_calls
                .unwrap_or(DEFAULT_CARRY_OVER_TOOL_CALLS),
        })
    }
}

/// Reads `<workspace>/permissions.yaml`, or the shipped default when there is none.
pub(crate) fn load_permissions(workspace: &Path) -> Result<Permissions, PlaybookError> {
    let path = workspace.join(PERMISSIONS_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Permissions::parse(&text).map_err(|err| PlaybookError::Config {
            path,
            message: format!("line {}: {}", err.line, err.message),
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            Ok(Permissions::shipped_default())
        }
        Err(err) => Err(super::io_error("read", &path)(err)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<PlaybookConfig, PlaybookError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), text).unwrap();
        PlaybookConfig::load(dir.path())
    }

    #[test]
    fn the_fixer_setting_names_mindrune_s_own_none_or_a_command() {
        let home = "home = \"/\"\n";
        assert_eq!(
            load(&format!("{home}fixer = \"claude\"")).unwrap().fixer,
            Some(Fixer::Claude)
        );
        assert_eq!(
            load(&format!("{home}fixer = \"none\"")).unwrap().fixer,
            None
        );
        assert_eq!(load(&format!("{home}fixer = \"\"")).unwrap().fixer, None);
        assert_eq!(
            load(&format!("{home}fixer = \"./fix.sh --quiet\""))
                .unwrap()
                .fixer,
            Some(Fixer::Command("./fix.sh --quiet".into()))
        );
        let config = load(home).unwrap();
        assert_eq!(config.fixer_budget_usd, DEFAULT_FIXER_BUDGET_USD);
        assert_eq!(config.fixer_timeout_secs, DEFAULT_FIXER_TIMEOUT_SECS);
    }

    #[test]
    fn a_fixer_budget_that_is_no_amount_is_refused_naming_it() {
        let err = load("home = \"/\"\nfixer_budget_usd = -1.0").unwrap_err();
        assert!(err.to_string().contains("fixer_budget_usd"), "{err}");
        let err = load("home = \"/\"\nfixer_timeout_secs = 0").unwrap_err();
        assert!(err.to_string().contains("fixer_timeout_secs"), "{err}");
    }
}
