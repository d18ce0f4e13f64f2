//! Every table of the library as both schemas have it, and the SQL that reads and writes it.

use super::MAX_PARAMS;
use super::value::Value;

/// How a column's values are normalised: the same value reads alike from either side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// INTEGER in SQLite, BIGINT in PostgreSQL.
    Int,
    /// A flag: INTEGER 0/1 in SQLite, BOOLEAN in PostgreSQL; digested as 0/1.
    Flag,
    /// REAL in SQLite, DOUBLE PRECISION in PostgreSQL; digested by its bits.
    Real,
    /// TEXT on both sides; digested as its UTF-8 bytes.
    Text,
}

pub(super) use Kind::{Flag, Int, Real, Text};

/// One table as both schemas have it.
pub(super) struct Table {
    pub(super) name: &'static str,
    pub(super) columns: &'static [(&'static str, Kind)],
    /// PostgreSQL's primary key: both sides are read in this order (text by its bytes).
    pub(super) key: &'static [&'static str],
    /// The identity column whose sequence is moved past the copied ids.
    pub(super) identity: Option<&'static str>,
}

/// Every table of the library, parents before the tables that refer to them. PostgreSQL's
/// own bookkeeping (`mindrune_migrations`) is not copied: opening the destination wrote it.
pub(super) const TABLES: &[Table] = &[
    Table {
        name: "owners",
        columns: &[
            ("owner_id", Int),
            ("name", Text),
            ("key_digest", Text),
            ("eager_sharing", Flag),
            ("created_at", Int),
        ],
        key: &["owner_id"],
        identity: Some("owner_id"),
    },
    Table {
        name: "agents",
        columns: &[
            ("agent_id", Int),
            ("owner_id", Int),
            ("name", Text),
            ("workspace", Text),
            ("created_at", Int),
            ("mirror_refreshed_at", Int),
            ("last_turn_at", Int),
            ("last_wrapup_at", Int),
            ("mirror", Text),
        ],
        key: &["agent_id"],
        identity: Some("agent_id"),
    },
    Table {
        name: "skills",
        columns: &[
            ("owner_id", Int),
            ("skill_id", Int),
            ("agent_id", Int),
            ("agent_name", Text),
            ("name", Text),
            ("path", Text),
            ("kind", Text),
            ("current_version_id", Int),
            ("tags", Text),
            ("created_at", Int),
            ("deleted_at", Int),
            ("header", Text),
            ("goal", Text),
            ("preconditions", Text),
            ("params", Text),
            ("result", Text),
            ("from_skill", Text),
            ("topics", Text),
            ("file_digest", Text),
        ],
        key: &["owner_id", "skill_id"],
        identity: Some("skill_id"),
    },
    Table {
        name: "versions",
        columns: &[
            ("owner_id", Int),
            ("version_id", Int),
            ("skill_id", Int),
            ("number", Int),
            ("digest", Text),
            ("code", Text),
            ("parent_version_id", Int),
            ("lineage", Text),
            ("inherited", Real),
            ("uses", Int),
            ("ok", Int),
            ("score", Real),
            ("breakdown", Text),
            ("measure_key", Text),
            ("rate_per_minute", Real),
            ("peer_rate", Real),
            ("peer_checked_uses", Int),
            ("created_at", Int),
            ("last_used_at", Int),
            ("shared_at", Int),
        ],
        key: &["owner_id", "version_id"],
        identity: Some("version_id"),
    },
    Table {
        name: "skill_tags",
        columns: &[("owner_id", Int), ("skill_id", Int), ("tag", Text)],
        key: &["owner_id", "skill_id", "tag"],
        identity: None,
    },
    Table {
        name: "uses",
        columns: &[
            ("owner_id", Int),
            ("use_id", Int),
            ("version_id", Int),
            ("agent_id", Int),
            ("at", Int),
            ("ok", Flag),
            ("duration_ms", Int),
            ("xp", Text),
            ("items", Text),
            ("goal_progress", Real),
            ("deaths", Int),
            ("stuck", Flag),
            ("items_lost", Int),
            ("source", Text),
            ("call", Text),
            ("output", Text),
            ("event_id", Text),
            ("recorded_at", Int),
            ("failure", Text),
            ("unmeasured", Text),
        ],
        key: &["owner_id", "use_id"],
        identity: Some("use_id"),
    },
    Table {
        name: "snippets",
        columns: &[
            ("owner_id", Int),
            ("snippet_id", Int),
            ("agent_id", Int),
            ("digest", Text),
            ("code", Text),
            ("uses", Int),
            ("ok", Int),
            ("first_at", Int),
            ("last_used_at", Int),
        ],
        key: &["owner_id", "snippet_id"],
        identity: Some("snippet_id"),
    },
    Table {
        name: "snippet_uses",
        columns: &[
            ("owner_id", Int),
            ("use_id", Int),
            ("snippet_id", Int),
            ("agent_id", Int),
            ("at", Int),
            ("ok", Flag),
            ("duration_ms", Int),
            ("xp", Text),
            ("items", Text),
            ("goal_progress", Real),
            ("deaths", Int),
            ("stuck", Flag),
            ("items_lost", Int),
            ("output", Text),
            ("event_id", Text),
            ("recorded_at", Int),
            ("failure", Text),
            ("unmeasured", Text),
        ],
        key: &["owner_id", "use_id"],
        identity: Some("use_id"),
    },
    Table {
        name: "sharing_events",
        columns: &[
            ("owner_id", Int),
            ("sharing_event_id", Int),
            ("skill_id", Int),
            ("agent_id", Int),
            ("version_number", Int),
            ("kind", Text),
            ("reason", Text),
            ("at", Int),
        ],
        key: &["owner_id", "sharing_event_id"],
        identity: Some("sharing_event_id"),
    },
    Table {
        name: "lessons",
        columns: &[
            ("owner_id", Int),
            ("lesson_id", Int),
            ("agent_id", Int),
            ("digest", Text),
            ("text", Text),
            ("line", Int),
            ("first_seen_at", Int),
        ],
        key: &["owner_id", "lesson_id"],
        identity: Some("lesson_id"),
    },
    Table {
        name: "snippet_suggestions",
        columns: &[
            ("owner_id", Int),
            ("agent_id", Int),
            ("group_key", Text),
            ("suggested_at", Int),
            ("suggested_runs", Int),
        ],
        key: &["owner_id", "agent_id", "group_key"],
        identity: None,
    },
    Table {
        name: "unrecorded_calls",
        columns: &[
            ("owner_id", Int),
            ("agent_id", Int),
            ("event_id", Text),
            ("at", Int),
            ("reason", Text),
            ("detail", Text),
            ("output", Text),
        ],
        key: &["owner_id", "agent_id", "event_id"],
        identity: None,
    },
    Table {
        name: "vocabulary",
        columns: &[
            ("kind", Text),
            ("slug", Text),
            ("title", Text),
            ("source", Text),
            ("aliases", Text),
            ("added_at", Int),
        ],
        key: &["kind", "slug"],
        identity: None,
    },
    Table {
        name: "vocabulary_state",
        columns: &[
            ("id", Int),
            ("digest", Text),
            ("entries", Int),
            ("built_at", Int),
        ],
        key: &["id"],
        identity: None,
    },
    Table {
        name: "server_health",
        columns: &[("id", Int), ("saved_at", Int), ("body", Text)],
        key: &["id"],
        identity: None,
    },
    Table {
        name: "runner_tokens",
        columns: &[
            ("token_id", Int),
            ("owner_id", Int),
            ("agent_id", Int),
            ("token_hash", Text),
            ("created_at", Int),
            ("revoked_at", Int),
        ],
        key: &["token_id"],
        identity: Some("token_id"),
    },
    Table {
        name: "operator_tokens",
        columns: &[
            ("token_id", Int),
            ("token_hash", Text),
            ("created_at", Int),
            ("revoked_at", Int),
        ],
        key: &["token_id"],
        identity: Some("token_id"),
    },
    Table {
        name: "dashboard_sessions",
        columns: &[
            ("session_id", Int),
            ("owner_id", Int),
            ("session_hash", Text),
            ("csrf_token", Text),
            ("created_at", Int),
            ("expires_at", Int),
        ],
        key: &["session_id"],
        identity: Some("session_id"),
    },
    Table {
        name: "avatar_states",
        columns: &[
            ("owner_id", Int),
            ("agent_id", Int),
            ("state", Text),
            ("reported_at", Int),
        ],
        key: &["owner_id", "agent_id"],
        identity: None,
    },
    Table {
        name: "avatar_wealth",
        columns: &[
            ("owner_id", Int),
            ("agent_id", Int),
            ("hour", Int),
            ("coins", Int),
            ("reported_at", Int),
            ("total_xp", Int),
            ("total_level", Int),
        ],
        key: &["owner_id", "agent_id", "hour"],
        identity: None,
    },
    Table {
        name: "alerts",
        columns: &[
            ("owner_id", Int),
            ("alert_id", Text),
            ("kind", Text),
            ("subject", Text),
            ("body", Text),
            ("opened_at", Int),
            ("resolved_at", Int),
        ],
        key: &["owner_id", "alert_id"],
        identity: None,
    },
    Table {
        name: "alert_deliveries",
        columns: &[
            ("owner_id", Int),
            ("alert_id", Text),
            ("event", Text),
            ("webhook", Text),
            ("format", Text),
            ("attempts", Int),
            ("next_attempt_at", Int),
            ("last_status", Int),
            ("last_error", Text),
            ("delivered_at", Int),
        ],
        key: &["owner_id", "alert_id", "event", "webhook"],
        identity: None,
    },
];

/// The tables compared with the source before anything is written: the directory a family is
/// found by, small, and enough to tell another library from a partial copy of this one.
pub(super) const CHECKED_FIRST: &[&str] = &["owners", "agents"];

impl Table {
    pub(super) fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub(super) fn kind_of(&self, column: &str) -> Kind {
        self.columns
            .iter()
            .find(|(name, _)| *name == column)
            .map(|(_, kind)| *kind)
            .unwrap_or(Int)
    }

    /// The positions of the key's columns in a row.
    pub(super) fn key_positions(&self) -> Vec<usize> {
        self.key
            .iter()
            .map(|key| {
                self.columns
                    .iter()
                    .position(|(name, _)| name == key)
                    .unwrap_or(0)
            })
            .collect()
    }

    /// `SELECT` of every column in key order. SQLite compares text byte by byte already;
    /// PostgreSQL is told to (`COLLATE "C"`), whatever the database's collation.
    pub(super) fn select(&self, postgres: bool) -> String {
        let order = self
            .key
            .iter()
            .map(|key| {
                if postgres && self.kind_of(key) == Text {
                    format!("{key} COLLATE \"C\"")
                } else {
                    (*key).to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "SELECT {} FROM {} ORDER BY {order}",
            self.column_list(),
            self.name
        )
    }

    /// A multi-row insert of `rows` rows that leaves every row already there as it is.
    pub(super) fn insert(&self, rows: usize) -> String {
        let width = self.columns.len();
        let mut sql = format!("INSERT INTO {} ({}) VALUES ", self.name, self.column_list());
        for row in 0..rows {
            if row > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for column in 0..width {
                if column > 0 {
                    sql.push_str(", ");
                }
                sql.push('$');
                sql.push_str(&(row * width + column + 1).to_string());
            }
            sql.push(')');
        }
        sql.push_str(" ON CONFLICT DO NOTHING");
        sql
    }

    /// Rows per batch: [`BATCH_ROWS`], fewer for a table so wide that the parameters would not
    /// fit in one statement.
    pub(super) fn batch_rows(&self, wanted: usize) -> usize {
        wanted.clamp(1, MAX_PARAMS / self.columns.len())
    }

    pub(super) fn describe_key(&self, row: &[Value]) -> String {
        let parts: Vec<String> = self
            .key
            .iter()
            .zip(self.key_positions())
            .map(|(name, at)| format!("{name}={}", row[at]))
            .collect();
        if parts.len() == 1 {
            parts.into_iter().next().unwrap_or_default()
        } else {
            format!("({})", parts.join(", "))
        }
    }
}
