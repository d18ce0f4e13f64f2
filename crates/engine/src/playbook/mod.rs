//! Playbook skills: the personal assistant's procedures under `workspace/skills/`, the one door
//! they enter by (`skill_create`), the one way they change (`skill_refine`), the cards that carry
//! every change to the human, the usage log and the record.
//!
//! The spec is `spec/playbooks-and-fixes.txt`; each submodule is one of its concepts:
//!
//! - [`layout`]: where everything lives in the workspace, skill names, atomic writes, the
//!   carried list.
//! - [`ledger`]: the workspace's own SQLite file (`.mindrune/playbooks.sqlite3`): cards, the
//!   usage log, evidence, suggestions and the search index. Its write transaction is also the
//!   workspace lock, so two processes (the MCP server and the human's `mindrune card`) never
//!   change `skills/` at the same time.
//! - [`door`]: `skill_create` and its checks, in the spec's order.
//! - [`cards`]: answering a card. One function moves a draft live, for manual and automatic
//!   approval alike.
//! - [`refine`]: `skill_refine` report, revise, revert and retire.
//! - [`fixer`]: starting the human's fixer program with pointers only.
//! - [`file_tools`]: `workspace_read` (which writes the usage log) and the ordinary file tools,
//!   whose path rule refuses `skills/` in every mode.
//! - [`record`]: `playbook_record`, Fisher's exact test on corrections per read.
//! - [`search`]: `playbook_search`, SQLite FTS5 ranked by BM25.
//! - [`suggest`]: the observer's suggestion and the "what carries over" rule.
//!
//! Architecture invariant: nothing under `workspace/skills/` is written except by [`door`] and
//! [`cards`], and both do it inside [`ledger::Ledger::locked`], after the blocking checks of
//! `mindrune_core::playbook::skill_file`.

mod cards;
mod config;
mod cost;
mod door;
mod file_tools;
mod fixer;
mod fixer_agent;
mod host;
mod journal;
mod layout;
mod ledger;
mod record;
mod refine;
mod report;
mod search;
mod suggest;

// What the crate root's `pub use` list takes from these files.
pub use cards::{Answered, preview as preview_card};
pub use config::{CONFIG_FILE, PERMISSIONS_FILE};
pub use cost::parse as parse_turn_cost;
pub use door::{Attendance, Created, Proposal, Suggester};
pub use file_tools::MAX_WRITE_BYTES;
pub use fixer::{FixerStart, run_command_masked};
pub use fixer_agent::{Fixed, FixerError};
pub(crate) use host::HostHook;
pub(crate) use layout::SKILLS;
pub use layout::{
    carried, live_dir, read_skill_text, skills_dir, write_atomic as write_playbook_atomic,
};
pub use record::{SkillRecord, render as render_records};
pub use refine::Filed;
pub use report::Report;
pub use search::{MAX_QUERY_BYTES, MAX_QUERY_WORDS};
pub use suggest::DoneTask;

use std::path::{Path, PathBuf};

use mindrune_core::Permissions;
use mindrune_core::Scrubber;

pub(crate) use config::PlaybookConfig;
pub(crate) use ledger::Ledger;
pub use ledger::{Card, CardKind, CardState};

/// The tools MindRune's own MCP server offers; every runtime that talks to it has them.
pub const MCP_TOOLS: [&str; 8] = [
    "workspace_read",
    "file_write",
    "file_copy",
    "file_move",
    "skill_create",
    "skill_refine",
    "playbook_search",
    "playbook_record",
];

/// Why a playbook call did not do what was asked. `Refused` is a rule saying no, with a message
/// written for the assistant and its human; the others are the machine failing.
#[derive(Debug, thiserror::Error)]
pub enum PlaybookError {
    #[error("{message}")]
    Refused { rule: Rule, message: String },
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the playbook ledger {}: {source}", path.display())]
    Ledger {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{}: {message}", path.display())]
    Config { path: PathBuf, message: String },
}

/// Which rule refused a call: what the tests pin and what an MCP client may branch on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// A skill name with `/`, `..`, capitals, a reserved word, or too long.
    BadName,
    /// The name belongs to a live skill, a pending one, or one the human turned down.
    NameTaken,
    /// Another skill uses exactly the same sequence of tools.
    SameTools,
    /// Nobody attends the call and too many drafts already wait.
    TooManyDrafts,
    /// The rendered file does not read back cleanly.
    Unreadable,
    /// A blocking check of the skill file failed.
    Blocked,
    /// The path rule: `skills/` refuses the ordinary file tools.
    SkillsPath,
    /// A path outside the workspace, through a symlink, or not a plain file.
    BadPath,
    /// No such skill, version, card or report.
    NotFound,
    /// The card was answered before.
    AlreadyAnswered,
    /// The live file no longer matches the fingerprint the change was written against.
    StaleFingerprint,
    /// A report already has its one revision.
    OneRevisionPerReport,
    /// The human said no when asked.
    Declined,
    /// The call itself is malformed (a missing argument, a skill in the wrong state).
    Invalid,
}

impl PlaybookError {
    pub(crate) fn refused(rule: Rule, message: impl Into<String>) -> Self {
        PlaybookError::Refused {
            rule,
            message: message.into(),
        }
    }

    /// The rule that refused, when a rule did.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            PlaybookError::Refused { rule, .. } => Some(*rule),
            _ => None,
        }
    }
}

pub(crate) fn io_error(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(std::io::Error) -> PlaybookError {
    let path = path.to_path_buf();
    move |source| PlaybookError::Io {
        action,
        path,
        source,
    }
}

/// Whether `skills/pending/` holds anything (a draft may have lost its card to a crash).
fn has_drafts(workspace: &Path) -> bool {
    std::fs::read_dir(layout::skills_dir(workspace).join(layout::PENDING))
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false)
}

/// One assistant's workspace, opened: its configuration, the human's permissions and the ledger.
pub struct Playbooks {
    workspace: PathBuf,
    config: PlaybookConfig,
    permissions: Permissions,
    ledger: Ledger,
    scrubber: Scrubber,
}

impl Playbooks {
    /// Opens an existing workspace, making `skills/` and the ledger when they are missing. Reads
    /// `playbooks.toml` and `permissions.yaml` from the workspace (each optional: without one,
    /// the defaults; a bad one is an error naming its line, never silently the default).
    pub fn open(workspace: &Path) -> Result<Playbooks, PlaybookError> {
        // A mistyped workspace is an error, not a new empty folder (`playbook init` makes one).
        if !workspace.is_dir() {
            return Err(PlaybookError::Config {
                path: workspace.to_path_buf(),
                message: "is not a folder; give the assistant's workspace, or make one with `mindrune playbook --workspace DIR init`".to_string(),
            });
        }
        let workspace = workspace
            .canonicalize()
            .map_err(io_error("resolve", workspace))?;
        let config = PlaybookConfig::load(&workspace)?;
        if !workspace.starts_with(&config.home) {
            return Err(PlaybookError::Config {
                path: workspace.join(config::CONFIG_FILE),
                message: format!(
                    "the workspace is outside the home tree {}, so every path a skill names would be refused; set home = \"…\" to a folder that holds the workspace",
                    config.home.display()
                ),
            });
        }
        let permissions = config::load_permissions(&workspace)?;
        layout::prepare(&workspace)?;
        let ledger = Ledger::open(&layout::ledger_path(&workspace))?;
        let playbooks = Playbooks {
            workspace,
            config,
            permissions,
            ledger,
            scrubber: Scrubber::new(&[]),
        };
        // Whatever a crash interrupted is finished before anyone reads the inbox. Only then is
        // the write lock taken: an open with no journal and no draft has nothing to finish.
        if journal::pending(&playbooks.workspace) || has_drafts(&playbooks.workspace) {
            playbooks.changing(|_| Ok(()))?;
        }
        Ok(playbooks)
    }

    /// Opens a workspace that exists already, and makes nothing in a folder that is none (no
    /// `skills/`, no ledger, no `playbooks.toml` or `permissions.yaml`): a command that reads
    /// or acts on a workspace never turns a mistyped folder into a new, empty one.
    pub fn open_existing(workspace: &Path) -> Result<Playbooks, PlaybookError> {
        let marks = [
            layout::skills_dir(workspace),
            layout::ledger_path(workspace),
            workspace.join(config::CONFIG_FILE),
            workspace.join(config::PERMISSIONS_FILE),
        ];
        if workspace.is_dir() && !marks.iter().any(|mark| mark.exists()) {
            return Err(PlaybookError::Config {
                path: workspace.to_path_buf(),
                message: "is no playbook workspace (it has no skills/ and no .mindrune/ ledger); give the assistant's workspace, or make one with `mindrune playbook --workspace DIR init`".to_string(),
            });
        }
        Self::open(workspace)
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    pub fn config(&self) -> &PlaybookConfig {
        &self.config
    }

    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Runs a change of `skills/` under the workspace lock: first it finishes whatever a crash
    /// interrupted (the apply journal, drafts without their card), then `work`; the journal is
    /// removed once the ledger has committed.
    pub(crate) fn changing<T>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, PlaybookError>,
    ) -> Result<T, PlaybookError> {
        let value = self.ledger.locked(|tx| {
            journal::recover(&self.workspace, tx)?;
            door::set_aside_orphan_drafts(self, tx)?;
            work(tx)
        })?;
        journal::clear(&self.workspace)?;
        Ok(value)
    }

    /// The tools this runtime has: the configured ones and MindRune's own MCP tools.
    pub(crate) fn runtime_tools(&self) -> Vec<String> {
        let mut tools: Vec<String> = self.config.tools.clone();
        for tool in MCP_TOOLS {
            if !tools.iter().any(|known| known == tool) {
                tools.push(tool.to_string());
            }
        }
        tools
    }
}
